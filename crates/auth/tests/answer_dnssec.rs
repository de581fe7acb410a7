//! Answers with the DO bit from signed zones (RFC 4035 §3.1, RFC 5155 §7.2):
//! signatures beside each authoritative RRset, and the NSEC or NSEC3 proofs
//! of each denial, wildcard expansion and delegation. The zones are the
//! fixtures in tests/data/signed (diff.zone signed three ways, see sign.sh).
//! Proofs are checked as a validator would: a "covering" record must really
//! cover the name (RFC 4034 §4.1.1, RFC 5155 §3.1.7), a "matching" one own it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use bulwark_auth::{AnswerConfig, Transport};
use bulwark_proto::Name;
use bulwark_zone::{Zone, ZoneSet};
use common::*;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{Record, RecordType};
use hickory_proto::serialize::binary::BinEncodable;

const NSEC_ZONE: &str = include_str!("data/signed/diff-nsec.zone");
const NSEC3_ZONE: &str = include_str!("data/signed/diff-nsec3.zone");
const OPT_OUT_ZONE: &str = include_str!("data/signed/diff-optout.zone");
const UNSIGNED_ZONE: &str = include_str!("../../bulwark/tests/data/diff.zone");

const ORIGIN: &str = "diff.test.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Nsec,
    Nsec3,
    OptOut,
}

const ALL: [Kind; 3] = [Kind::Nsec, Kind::Nsec3, Kind::OptOut];

fn signed(kind: Kind) -> ZoneSet {
    let text = match kind {
        Kind::Nsec => NSEC_ZONE,
        Kind::Nsec3 => NSEC3_ZONE,
        Kind::OptOut => OPT_OUT_ZONE,
    };
    zoneset(&[zone(ORIGIN, text)])
}

fn abs(rel: &str) -> String {
    if rel.is_empty() {
        ORIGIN.to_string()
    } else {
        format!("{rel}.{ORIGIN}")
    }
}

fn query_do(name: &str, qtype: RecordType, payload: u16, dnssec_ok: bool) -> Vec<u8> {
    with_edns(query(name, qtype), payload, dnssec_ok)
        .to_vec()
        .unwrap()
}

fn ask_wire(zones: &ZoneSet, wire: &[u8]) -> Vec<u8> {
    answer_with(AnswerConfig::default(), zones, Transport::Udp, wire).wire
}

/// Asks `rel` (relative to diff.test.) with DO=1 and room for everything.
fn ask_do(kind: Kind, rel: &str, qtype: RecordType) -> Message {
    let wire = ask_wire(&signed(kind), &query_do(&abs(rel), qtype, 4096, true));
    Message::from_vec(&wire).unwrap()
}

fn rdata(r: &Record) -> Vec<u8> {
    r.data().unwrap().to_bytes().unwrap()
}

/// hickory 0.24 has no name for DNAME (RFC 6672).
fn type_name(t: RecordType) -> String {
    match u16::from(t) {
        39 => "DNAME".to_string(),
        _ => t.to_string(),
    }
}

/// A record as "owner TYPE", an RRSIG as "owner RRSIG(COVERED)".
fn show(r: &Record) -> String {
    let owner = r.name().to_ascii().to_lowercase();
    if r.record_type() == RecordType::RRSIG {
        let rd = rdata(r);
        let covered = RecordType::from(u16::from_be_bytes([rd[0], rd[1]]));
        format!("{owner} RRSIG({})", type_name(covered))
    } else {
        format!("{owner} {}", type_name(r.record_type()))
    }
}

fn shown(records: &[Record]) -> Vec<String> {
    records.iter().map(show).collect()
}

fn wire_name(name: &str) -> Vec<u8> {
    Name::from_presentation(name.as_bytes(), None)
        .unwrap()
        .to_lowercase()
        .as_wire()
        .to_vec()
}

fn base32hex(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuv";
    let (mut out, mut buffer, mut bits) = (String::new(), 0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// RFC 5155 §5 with the fixtures' parameters: no salt, no extra iterations.
fn hash(name: &str) -> [u8; 20] {
    bulwark_crypto::nsec3_hash(&wire_name(name), &[], 0)
}

/// The NSEC3 owner name of `name`.
fn hashed(name: &str) -> String {
    format!("{}.{ORIGIN}", base32hex(&hash(name)))
}

fn nsec3_records(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.record_type() == RecordType::NSEC3)
        .collect()
}

fn nsec_records(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.record_type() == RecordType::NSEC)
        .collect()
}

/// The owner hash and next hash of an NSEC3 (RFC 5155 §3.2).
fn nsec3_span(r: &Record) -> (Vec<u8>, Vec<u8>) {
    let rd = rdata(r);
    let salt_len = rd[4] as usize;
    let hash_len = rd[5 + salt_len] as usize;
    let next = rd[6 + salt_len..6 + salt_len + hash_len].to_vec();
    let label = r.name().to_ascii().to_lowercase();
    let label = label.split('.').next().unwrap().to_string();
    (decode_base32hex(&label), next)
}

fn decode_base32hex(text: &str) -> Vec<u8> {
    let (mut out, mut buffer, mut bits) = (Vec::new(), 0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            _ => c - b'a' + 10,
        };
        buffer = (buffer << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    out
}

fn nsec3_opt_out(r: &Record) -> bool {
    rdata(r)[1] & 1 == 1
}

/// Whether an NSEC3 in `records` covers (strictly) the hash of `name`.
fn nsec3_covering<'r>(records: &[&'r Record], name: &str) -> Option<&'r Record> {
    let h = hash(name).to_vec();
    records.iter().copied().find(|r| {
        let (owner, next) = nsec3_span(r);
        if owner < next {
            owner < h && h < next
        } else {
            h > owner || h < next
        }
    })
}

fn nsec3_matching<'r>(records: &[&'r Record], name: &str) -> Option<&'r Record> {
    let owner = hashed(name);
    records
        .iter()
        .copied()
        .find(|r| r.name().to_ascii().to_lowercase() == owner)
}

fn n(s: &str) -> Name {
    Name::from_presentation(s.as_bytes(), None).unwrap()
}

/// Whether an NSEC in `records` covers `name` (owner < name < next, the last
/// NSEC's next being the apex), RFC 4034 §4.1.1.
fn nsec_covering<'r>(records: &[&'r Record], name: &str) -> Option<&'r Record> {
    let q = n(name);
    records.iter().copied().find(|r| {
        let owner = n(&r.name().to_ascii());
        // The Next Domain Name opens the rdata, uncompressed (RFC 4034 §4.1.1).
        let rd = rdata(r);
        let mut len = 0;
        while rd[len] != 0 {
            len += rd[len] as usize + 1;
        }
        let next = Name::from_wire(&rd[..=len]).unwrap();
        if owner < next {
            owner < q && q < next
        } else {
            q > owner
        }
    })
}

fn rrsig_follows_each(records: &[Record], owner_types: &[(&str, RecordType)]) {
    let got = shown(records);
    for (owner, t) in owner_types {
        let rr = format!("{owner} {t}");
        let sig = format!("{owner} RRSIG({t})");
        let at = got
            .iter()
            .position(|g| *g == rr)
            .unwrap_or_else(|| panic!("{rr} missing in {got:?}"));
        assert_eq!(got.get(at + 1), Some(&sig), "{got:?}");
    }
}

#[test]
fn positive_answer_carries_its_rrsig_with_the_rrset_ttl() {
    for kind in ALL {
        let m = ask_do(kind, "www", RecordType::TXT);
        assert!(m.authoritative());
        assert_eq!(
            shown(m.answers()),
            vec!["www.diff.test. TXT", "www.diff.test. RRSIG(TXT)"],
            "{kind:?}"
        );
        // RFC 4034 §3: the RRSIG has the TTL of the RRset (300, not the 3600 of
        // the other RRsets at www).
        assert_eq!(m.answers()[1].ttl(), 300);
        assert!(m.name_servers().is_empty());
    }
}

#[test]
fn without_do_a_signed_zone_answers_like_the_unsigned_one() {
    let unsigned = zoneset(&[zone(ORIGIN, UNSIGNED_ZONE)]);
    for kind in ALL {
        let zs = signed(kind);
        for (rel, t) in [
            ("www", RecordType::A),
            ("nonexistent", RecordType::A),
            ("foo.wild", RecordType::TXT),
            ("www.sub", RecordType::A),
            ("c1", RecordType::A),
            ("host.dn-in", RecordType::A),
            ("y.ent", RecordType::A),
            ("", RecordType::MX),
        ] {
            for edns in [false, true] {
                let q = if edns {
                    query_do(&abs(rel), t, 4096, false)
                } else {
                    query(&abs(rel), t).to_vec().unwrap()
                };
                assert_eq!(
                    ask_wire(&zs, &q),
                    ask_wire(&unsigned, &q),
                    "{kind:?} {rel} {t}"
                );
            }
        }
    }
}

#[test]
fn unsigned_zone_gets_no_dnssec_records_with_do() {
    let unsigned = zoneset(&[zone(ORIGIN, UNSIGNED_ZONE)]);
    let wire = ask_wire(
        &unsigned,
        &query_do(&abs("nonexistent"), RecordType::A, 4096, true),
    );
    let m = Message::from_vec(&wire).unwrap();
    assert_eq!(shown(m.name_servers()), vec!["diff.test. SOA"]);
}

#[test]
fn cname_chain_signs_each_cname() {
    for kind in ALL {
        let m = ask_do(kind, "c1", RecordType::A);
        assert_eq!(
            shown(m.answers()),
            vec![
                "c1.diff.test. CNAME",
                "c1.diff.test. RRSIG(CNAME)",
                "c2.diff.test. CNAME",
                "c2.diff.test. RRSIG(CNAME)",
                "c3.diff.test. CNAME",
                "c3.diff.test. RRSIG(CNAME)",
                "www.diff.test. A",
                "www.diff.test. RRSIG(A)",
            ],
            "{kind:?}"
        );
    }
}

#[test]
fn dname_is_signed_and_the_synthesized_cname_is_not() {
    for kind in ALL {
        let m = ask_do(kind, "host.dn-in", RecordType::A);
        assert_eq!(
            shown(m.answers()),
            vec![
                "dn-in.diff.test. DNAME",
                "dn-in.diff.test. RRSIG(DNAME)",
                "host.dn-in.diff.test. CNAME",
                "host.inside.diff.test. A",
                "host.inside.diff.test. RRSIG(A)",
            ],
            "{kind:?}"
        );
    }
}

#[test]
fn nxdomain_with_nsec_proves_the_name_and_the_wildcard_absent() {
    let m = ask_do(Kind::Nsec, "nonexistent", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    let auth = m.name_servers();
    rrsig_follows_each(auth, &[("diff.test.", RecordType::SOA)]);
    let nsecs = nsec_records(auth);
    assert!(nsec_covering(&nsecs, "nonexistent.diff.test.").is_some());
    assert!(nsec_covering(&nsecs, "*.diff.test.").is_some());
    // Here one NSEC covers both: it is sent once.
    let covering = shown(auth)
        .into_iter()
        .filter(|s| s.ends_with(" NSEC"))
        .count();
    assert_eq!(covering, nsecs.len());
    assert!(nsecs.len() <= 2);
    for r in nsecs {
        let owner = r.name().to_ascii().to_lowercase();
        rrsig_follows_each(auth, &[(&owner, RecordType::NSEC)]);
    }
}

#[test]
fn nxdomain_with_nsec_sends_a_shared_nsec_once() {
    // The apex NSEC (next: _sip._tcp) covers both 0.diff.test. and the
    // wildcard *.diff.test.: it is sent once.
    let m = ask_do(Kind::Nsec, "0", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    assert_eq!(
        shown(m.name_servers()),
        vec![
            "diff.test. SOA",
            "diff.test. RRSIG(SOA)",
            "diff.test. NSEC",
            "diff.test. RRSIG(NSEC)",
        ]
    );
}

#[test]
fn nxdomain_with_nsec3_sends_the_closest_encloser_proof_and_the_wildcard() {
    for kind in [Kind::Nsec3, Kind::OptOut] {
        let m = ask_do(kind, "a.b.nonexistent", RecordType::A);
        assert_eq!(m.response_code(), ResponseCode::NXDomain);
        let auth = m.name_servers();
        rrsig_follows_each(auth, &[("diff.test.", RecordType::SOA)]);
        let nsec3s = nsec3_records(auth);
        // Closest encloser diff.test., next closer nonexistent.diff.test.
        assert!(nsec3_matching(&nsec3s, "diff.test.").is_some(), "{kind:?}");
        assert!(nsec3_covering(&nsec3s, "nonexistent.diff.test.").is_some());
        assert!(nsec3_covering(&nsec3s, "*.diff.test.").is_some());
        assert!(nsec3s.len() <= 3);
        for r in &nsec3s {
            let owner = r.name().to_ascii().to_lowercase();
            rrsig_follows_each(auth, &[(&owner, RecordType::NSEC3)]);
        }
        assert!(nsec_records(auth).is_empty());
    }
}

#[test]
fn nodata_carries_the_nsec_or_nsec3_of_the_name() {
    let m = ask_do(Kind::Nsec, "www", RecordType::MX);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(
        shown(m.name_servers()),
        vec![
            "diff.test. SOA",
            "diff.test. RRSIG(SOA)",
            "www.diff.test. NSEC",
            "www.diff.test. RRSIG(NSEC)",
        ]
    );
    for kind in [Kind::Nsec3, Kind::OptOut] {
        let m = ask_do(kind, "www", RecordType::MX);
        let h = hashed("www.diff.test.");
        assert_eq!(
            shown(m.name_servers()),
            vec![
                "diff.test. SOA".to_string(),
                "diff.test. RRSIG(SOA)".to_string(),
                format!("{h} NSEC3"),
                format!("{h} RRSIG(NSEC3)"),
            ],
            "{kind:?}"
        );
    }
}

#[test]
fn empty_nonterminal_nodata_uses_the_covering_nsec_or_the_matching_nsec3() {
    let m = ask_do(Kind::Nsec, "y.ent", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    let nsecs = nsec_records(m.name_servers());
    assert_eq!(nsecs.len(), 1);
    assert!(nsec_covering(&nsecs, "y.ent.diff.test.").is_some());
    for kind in [Kind::Nsec3, Kind::OptOut] {
        let m = ask_do(kind, "y.ent", RecordType::A);
        let nsec3s = nsec3_records(m.name_servers());
        assert_eq!(nsec3s.len(), 1, "{kind:?}");
        assert!(nsec3_matching(&nsec3s, "y.ent.diff.test.").is_some());
    }
}

#[test]
fn ds_nodata_at_an_opt_out_delegation_sends_the_closest_provable_encloser_proof() {
    // noglue has no DS, so under Opt-Out it has no NSEC3 of its own.
    let m = ask_do(Kind::OptOut, "noglue", RecordType::DS);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.authoritative());
    let nsec3s = nsec3_records(m.name_servers());
    assert!(nsec3_matching(&nsec3s, "noglue.diff.test.").is_none());
    assert!(nsec3_matching(&nsec3s, "diff.test.").is_some());
    let covering = nsec3_covering(&nsec3s, "noglue.diff.test.").unwrap();
    assert!(nsec3_opt_out(covering), "RFC 5155 §7.2.4: Opt-Out set");
    // In a zone without Opt-Out the delegation has its NSEC3.
    let m = ask_do(Kind::Nsec3, "noglue", RecordType::DS);
    let nsec3s = nsec3_records(m.name_servers());
    assert_eq!(nsec3s.len(), 1);
    assert!(nsec3_matching(&nsec3s, "noglue.diff.test.").is_some());
}

#[test]
fn wildcard_answer_is_signed_for_the_query_name_with_proof_the_name_does_not_exist() {
    for kind in ALL {
        let m = ask_do(kind, "foo.wild", RecordType::A);
        assert_eq!(
            shown(m.answers()),
            vec!["foo.wild.diff.test. A", "foo.wild.diff.test. RRSIG(A)"]
        );
        // RFC 4035 §5.3.4: the RRSIG's Labels field (3, for *.wild.diff.test.)
        // is below the owner's 4 labels: it tells of the expansion.
        assert_eq!(rdata(&m.answers()[1])[3], 3);
        let auth = m.name_servers();
        match kind {
            Kind::Nsec => {
                let nsecs = nsec_records(auth);
                assert_eq!(nsecs.len(), 1);
                assert!(nsec_covering(&nsecs, "foo.wild.diff.test.").is_some());
            }
            _ => {
                let nsec3s = nsec3_records(auth);
                assert_eq!(nsec3s.len(), 1, "{kind:?}");
                // The next closer name to the closest encloser wild.diff.test.
                assert!(nsec3_covering(&nsec3s, "foo.wild.diff.test.").is_some());
            }
        }
        assert_eq!(auth.len(), 2, "{kind:?} {:?}", shown(auth));
    }
}

#[test]
fn wildcard_cname_answer_also_proves_the_name_absent() {
    for kind in ALL {
        let m = ask_do(kind, "foo.wc", RecordType::A);
        rrsig_follows_each(
            m.answers(),
            &[
                ("foo.wc.diff.test.", RecordType::CNAME),
                ("www.diff.test.", RecordType::A),
            ],
        );
        assert_eq!(m.name_servers().len(), 2, "{kind:?}");
    }
}

#[test]
fn wildcard_nodata_proves_the_name_absent_and_the_type_absent_at_the_wildcard() {
    let m = ask_do(Kind::Nsec, "foo.wild", RecordType::AAAA);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    let auth = m.name_servers();
    let nsecs = nsec_records(auth);
    assert!(nsec_covering(&nsecs, "foo.wild.diff.test.").is_some());
    assert!(shown(auth).contains(&"*.wild.diff.test. NSEC".to_string()));
    for kind in [Kind::Nsec3, Kind::OptOut] {
        let m = ask_do(kind, "foo.wild", RecordType::AAAA);
        let nsec3s = nsec3_records(m.name_servers());
        assert!(nsec3_matching(&nsec3s, "wild.diff.test.").is_some());
        assert!(nsec3_covering(&nsec3s, "foo.wild.diff.test.").is_some());
        assert!(nsec3_matching(&nsec3s, "*.wild.diff.test.").is_some());
        assert_eq!(nsec3s.len(), 3, "{kind:?}");
    }
}

#[test]
fn referral_with_ds_carries_the_signed_ds_and_unsigned_ns_and_glue() {
    for kind in ALL {
        let m = ask_do(kind, "www.sub", RecordType::A);
        assert!(!m.authoritative());
        assert!(m.answers().is_empty());
        assert_eq!(
            shown(m.name_servers()),
            vec![
                "sub.diff.test. NS",
                "sub.diff.test. NS",
                "sub.diff.test. DS",
                "sub.diff.test. RRSIG(DS)",
            ],
            "{kind:?}"
        );
        let additional: Vec<String> = shown(m.additionals())
            .into_iter()
            .filter(|s| !s.ends_with("OPT"))
            .collect();
        assert_eq!(
            additional,
            vec!["ns1.sub.diff.test. A", "ns2.sub.diff.test. AAAA"]
        );
    }
}

#[test]
fn referral_without_ds_proves_it_insecure() {
    let m = ask_do(Kind::Nsec, "x.noglue", RecordType::A);
    assert_eq!(
        shown(m.name_servers()),
        vec![
            "noglue.diff.test. NS",
            "noglue.diff.test. NSEC",
            "noglue.diff.test. RRSIG(NSEC)",
        ]
    );
    let m = ask_do(Kind::Nsec3, "x.noglue", RecordType::A);
    let h = hashed("noglue.diff.test.");
    assert_eq!(
        shown(m.name_servers()),
        vec![
            "noglue.diff.test. NS".to_string(),
            format!("{h} NSEC3"),
            format!("{h} RRSIG(NSEC3)"),
        ]
    );
    let m = ask_do(Kind::OptOut, "x.noglue", RecordType::A);
    let nsec3s = nsec3_records(m.name_servers());
    assert!(nsec3_matching(&nsec3s, "diff.test.").is_some());
    assert!(nsec3_opt_out(
        nsec3_covering(&nsec3s, "noglue.diff.test.").unwrap()
    ));
}

#[test]
fn ds_at_a_cut_is_answered_authoritatively_from_the_parent_and_signed() {
    for kind in ALL {
        let m = ask_do(kind, "sub", RecordType::DS);
        assert!(m.authoritative());
        assert_eq!(
            shown(m.answers()),
            vec!["sub.diff.test. DS", "sub.diff.test. RRSIG(DS)"]
        );
        assert!(m.name_servers().is_empty());
    }
}

#[test]
fn dnskey_at_the_apex_is_signed_by_every_key() {
    for kind in ALL {
        let m = ask_do(kind, "", RecordType::DNSKEY);
        assert_eq!(
            shown(m.answers()),
            vec![
                "diff.test. DNSKEY",
                "diff.test. DNSKEY",
                "diff.test. RRSIG(DNSKEY)",
                "diff.test. RRSIG(DNSKEY)",
            ]
        );
    }
}

#[test]
fn minimal_any_carries_the_chosen_rrsets_rrsig() {
    for kind in ALL {
        let m = ask_do(kind, "www", RecordType::ANY);
        assert_eq!(
            shown(m.answers()),
            vec!["www.diff.test. A", "www.diff.test. RRSIG(A)"]
        );
    }
}

#[test]
fn rrsig_query_gets_the_signatures_of_the_lowest_signed_type_like_knot() {
    let m = ask_do(Kind::Nsec, "www", RecordType::RRSIG);
    assert_eq!(shown(m.answers()), vec!["www.diff.test. RRSIG(A)"]);
}

#[test]
fn additional_addresses_carry_their_rrsigs() {
    for kind in ALL {
        let m = ask_do(kind, "", RecordType::MX);
        let additional: Vec<String> = shown(m.additionals())
            .into_iter()
            .filter(|s| !s.ends_with("OPT"))
            .collect();
        assert_eq!(
            additional,
            vec!["mail.diff.test. A", "mail.diff.test. RRSIG(A)"]
        );
    }
}

#[test]
fn hashed_owner_names_do_not_exist() {
    for kind in [Kind::Nsec3, Kind::OptOut] {
        let h = hashed("www.diff.test.");
        for t in [RecordType::NSEC3, RecordType::A, RecordType::RRSIG] {
            let wire = ask_wire(&signed(kind), &query_do(&h, t, 4096, true));
            let m = Message::from_vec(&wire).unwrap();
            assert_eq!(m.response_code(), ResponseCode::NXDomain, "{h} {t}");
            assert!(m.answers().is_empty());
        }
    }
}

#[test]
fn proofs_that_do_not_fit_set_tc() {
    for kind in ALL {
        let zs = signed(kind);
        let q = query_do(&abs("a.b.nonexistent"), RecordType::A, 512, true);
        let m = Message::from_vec(&ask_wire(&zs, &q)).unwrap();
        if kind != Kind::Nsec {
            // SOA, three NSEC3 and four RRSIGs pass 512 octets.
            assert!(m.truncated(), "{kind:?}");
        }
        // Without DO the same answer fits.
        let q = query_do(&abs("a.b.nonexistent"), RecordType::A, 512, false);
        let m = Message::from_vec(&ask_wire(&zs, &q)).unwrap();
        assert!(!m.truncated());
    }
}

/// A zone that counts as signed (DNSKEY, RRSIG and NSEC at the apex) with
/// stand-in signatures: bulwark copies signatures, it does not check them.
fn fake_signed_zone() -> ZoneSet {
    let sig = "A".repeat(86) + "==";
    let rrsig = |covered: &str, labels: u8| {
        format!("RRSIG {covered} 13 {labels} 300 20360101000000 20240101000000 1 fake.test. {sig}")
    };
    let mut text = format!(
        "$ORIGIN fake.test.\n$TTL 300\n\
         @ SOA ns1 h 1 2 3 4 300\n@ {}\n@ NS ns1\n@ {}\n\
         @ DNSKEY 256 3 13 {sig}\n@ {}\n\
         @ NSEC mail.fake.test. NS SOA MX RRSIG NSEC DNSKEY\n@ {}\n@ {}\n\
         mail A 192.0.2.1\nmail {}\nmail NSEC ns1.fake.test. A RRSIG NSEC\n\
         ns1 A 192.0.2.53\nns1 NSEC fake.test. A RRSIG NSEC\n",
        rrsig("SOA", 2),
        rrsig("NS", 2),
        rrsig("DNSKEY", 2),
        rrsig("NSEC", 2),
        rrsig("MX", 2),
        rrsig("A", 3),
    );
    for pref in 0..24 {
        text.push_str(&format!("@ MX {pref} mail\n"));
    }
    zoneset(&[zone("fake.test.", &text)])
}

#[test]
fn an_additional_rrsig_that_does_not_fit_is_left_out_without_tc() {
    // Given exactly one octet too few for the last record (the RRSIG of the
    // additional address), the answer is not truncated: RFC 4035 §3.1.1
    // makes only answer and authority signatures required.
    let zs = fake_signed_zone();
    let name = "fake.test.";
    let full = ask_wire(&zs, &query_do(name, RecordType::MX, 4096, true));
    let m = Message::from_vec(&full).unwrap();
    assert_eq!(
        shown(m.additionals()),
        vec!["mail.fake.test. A", "mail.fake.test. RRSIG(A)"]
    );
    assert!(full.len() > 512, "the test needs an answer over 512 octets");
    let limit = u16::try_from(full.len() - 1).unwrap();
    let cut = ask_wire(&zs, &query_do(name, RecordType::MX, limit, true));
    let m = Message::from_vec(&cut).unwrap();
    assert!(!m.truncated());
    assert_eq!(m.answers().len(), 25);
    assert_eq!(shown(m.additionals()), vec!["mail.fake.test. A"]);
}

#[test]
fn a_required_rrsig_that_does_not_fit_sets_tc() {
    // Room for the 24 MX records but not their RRSIG: TC (RFC 2181 §9).
    let zs = fake_signed_zone();
    let plain = ask_wire(&zs, &query_do("fake.test.", RecordType::MX, 4096, false));
    let m = Message::from_vec(&plain).unwrap();
    assert_eq!(m.answers().len(), 24);
    // The plain answer plus its additional A fits; an RRSIG (about 110
    // octets) more does not.
    let limit = u16::try_from(plain.len() + 20).unwrap();
    let signed = ask_wire(&zs, &query_do("fake.test.", RecordType::MX, limit, true));
    let m = Message::from_vec(&signed).unwrap();
    assert!(m.truncated());
}

#[test]
fn nsec3_hashes_use_the_zones_salt_and_iterations() {
    // Signed with salt AB12CD34 and 5 extra iterations (RFC 5155 §5).
    let zs = zoneset(&[zone(
        ORIGIN,
        include_str!("data/signed/diff-nsec3-salted.zone"),
    )]);
    let salted = |name: &str| {
        let h = bulwark_crypto::nsec3_hash(&wire_name(name), &[0xab, 0x12, 0xcd, 0x34], 5);
        format!("{}.{ORIGIN}", base32hex(&h))
    };
    let wire = ask_wire(&zs, &query_do(&abs("www"), RecordType::MX, 4096, true));
    let m = Message::from_vec(&wire).unwrap();
    let h = salted("www.diff.test.");
    assert_eq!(
        shown(m.name_servers()),
        vec![
            "diff.test. SOA".to_string(),
            "diff.test. RRSIG(SOA)".to_string(),
            format!("{h} NSEC3"),
            format!("{h} RRSIG(NSEC3)"),
        ]
    );
}

#[test]
fn zones_loaded_from_the_fixtures_are_signed() {
    for kind in ALL {
        let text = match kind {
            Kind::Nsec => NSEC_ZONE,
            Kind::Nsec3 => NSEC3_ZONE,
            Kind::OptOut => OPT_OUT_ZONE,
        };
        let z: Arc<Zone> = zone(ORIGIN, text);
        assert!(z.denial().is_some(), "{kind:?}");
    }
}
