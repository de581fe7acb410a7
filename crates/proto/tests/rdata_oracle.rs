//! Differential checks against an independent implementation, hickory-proto:
//! it must decode our wire bytes and re-encode them identically, its text must
//! parse with ours to the same value, and on arbitrary bytes that both accept,
//! both must re-encode the same.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use bulwark_proto::rdata::Rdata;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rtype};
use hickory_proto::rr::{RData as HRData, RecordType};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, BinEncoder, Restrict};
use proptest::prelude::*;

fn hickory_read(rtype: Rtype, wire: &[u8]) -> Option<HRData> {
    let mut d = BinDecoder::new(wire);
    let rd = HRData::read(
        &mut d,
        RecordType::from(rtype.0),
        Restrict::new(u16::try_from(wire.len()).ok()?),
    )
    .ok()?;
    // hickory must have consumed everything for the comparison to mean anything.
    (d.index() == wire.len()).then_some(rd)
}

fn hickory_wire(rd: &HRData) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = BinEncoder::new(&mut out);
    e.set_canonical_names(true);
    rd.emit(&mut e).unwrap();
    out
}

fn ours(rtype: Rtype, text: &str) -> Rdata {
    Rdata::from_text(rtype, text, &Name::root()).unwrap_or_else(|e| panic!("{rtype} {text:?}: {e}"))
}

/// Types hickory 0.24 implements, with lowercase names (hickory's canonical
/// emission may lowercase).
const CASES: &[(Rtype, &str)] = &[
    (Rtype::A, "192.0.2.1"),
    (Rtype::AAAA, "2001:db8::53:1"),
    (Rtype::NS, "ns1.example.com."),
    (Rtype::CNAME, "www.example.net."),
    (Rtype::PTR, "host.example."),
    (Rtype::SOA, "ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 1209600 300"),
    (Rtype::MX, "10 mail.example.com."),
    (Rtype::TXT, r#""hello world" "second" """#),
    (Rtype::HINFO, r#""PC" "Linux""#),
    (Rtype::SRV, "0 5 5060 sip.example.com."),
    (Rtype::NAPTR, r#"100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" ."#),
    (Rtype::DS, "60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118"),
    (Rtype::CDS, "60485 8 2 2BB183AF5F22588179A53B0A98631FAD1A29211800112233445566778899AABB"),
    (Rtype::DNSKEY, "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="),
    (Rtype::CDNSKEY, "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="),
    (Rtype::RRSIG, "A 13 2 3600 20300101000000 20200101000000 12345 example.com. AAECAwQFBgcICQ=="),
    (Rtype::NSEC, "host.example.com. A MX RRSIG NSEC TYPE1234"),
    (Rtype::NSEC3, "1 1 12 AABBCCDD 2t7b4g4vsa5smi47k61mv5bv1a22bojr NS SOA MX RRSIG DNSKEY NSEC3PARAM"),
    (Rtype::NSEC3, "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
    (Rtype::NSEC3PARAM, "1 0 10 AABB"),
    (Rtype::NSEC3PARAM, "1 0 0 -"),
    (Rtype::TLSA, "3 1 1 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B56664C5D3D6"),
    (Rtype::SSHFP, "2 1 123456789ABCDEF67890123456789ABCDEF67890"),
    (Rtype::CAA, r#"0 issue "letsencrypt.org""#),
    (Rtype::CAA, r#"128 iodef "mailto:security@example.com""#),
    (Rtype::SVCB, "1 foo.example.com. port=53"),
    (Rtype::SVCB, "16 foo.example.org. mandatory=alpn,ipv4hint alpn=h2,h3-19 ipv4hint=192.0.2.1"),
    (Rtype::HTTPS, "1 . alpn=h2 no-default-alpn ipv6hint=2001:db8::1,2001:db8::53:1"),
    (Rtype::HTTPS, "0 foo.example.com."),
    // Not `key667=hello`: hickory 0.24 re-encodes unknown SvcParam values with
    // an extra length octet; RFC 9460 Appendix D.2's bytes (rdata_wire.rs) side with us.
];

#[test]
fn hickory_decodes_our_wire_and_reencodes_it_identically() {
    for &(rtype, text) in CASES {
        let rd = ours(rtype, text);
        let wire = rd.to_wire();
        let h = hickory_read(rtype, &wire)
            .unwrap_or_else(|| panic!("hickory rejects our {rtype} {text}: {wire:02x?}"));
        assert_eq!(hickory_wire(&h), wire, "{rtype} {text} (hickory: {h})");
    }
}

#[test]
fn hickory_text_parses_with_ours_to_the_same_value() {
    // Presentation quirks of hickory 0.24 we do not copy, checked elsewhere:
    // SVCB (prints `alpn="h2","h3"` style lists), CAA (prints the value
    // structured), TXT/HINFO/NAPTR (strings unquoted or differently escaped).
    let skip = [
        Rtype::SVCB,
        Rtype::HTTPS,
        Rtype::CAA,
        Rtype::TXT,
        Rtype::HINFO,
        Rtype::NAPTR,
        Rtype::NSEC3,
    ];
    let mut compared = 0;
    for &(rtype, text) in CASES {
        // hickory prints unknown types in bitmaps as "Unknown".
        if skip.contains(&rtype) || text.contains("TYPE") {
            continue;
        }
        let rd = ours(rtype, text);
        let h = hickory_read(rtype, &rd.to_wire()).unwrap();
        let h_text = h.to_string();
        let back = Rdata::from_text(rtype, &h_text, &Name::root())
            .unwrap_or_else(|e| panic!("{rtype}: hickory's {h_text:?} rejected: {e}"));
        assert_eq!(back, rd, "{rtype}: hickory {h_text:?} vs ours {rd}");
        compared += 1;
    }
    assert!(compared >= 15);
}

const FUZZ_TYPES: &[Rtype] = &[
    Rtype::A,
    Rtype::AAAA,
    Rtype::NS,
    Rtype::CNAME,
    Rtype::SOA,
    Rtype::MX,
    Rtype::TXT,
    Rtype::SRV,
    Rtype::DS,
    // Not DNSKEY: hickory 0.24 keeps only the flag bits it models (zone, SEP,
    // revoke) and re-encodes any other bit as 0.
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::NSEC3,
    Rtype::NSEC3PARAM,
    Rtype::TLSA,
    Rtype::SSHFP,
    // Not CAA: hickory 0.24 keeps only the critical flag bit.
    Rtype::SVCB,
];

/// Fuzzed types with names in their data (besides those `target_name` reports).
const NAMED: &[Rtype] = &[
    Rtype::SOA,
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::NS,
    Rtype::CNAME,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whenever both implementations accept the same bytes, they agree on them.
    #[test]
    fn accepted_arbitrary_bytes_reencode_the_same_in_both(
        ti in 0..FUZZ_TYPES.len(),
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let rtype = FUZZ_TYPES[ti];
        let mine = Rdata::read(rtype, &mut Reader::new(&bytes), bytes.len());
        if let (Ok(mine), Some(h)) = (mine, hickory_read(rtype, &bytes)) {
            let (theirs, ours) = (hickory_wire(&h), mine.to_wire());
            // hickory's canonical emission lowercases every name; types
            // without names must match octet for octet.
            if mine.target_name().is_some() || NAMED.contains(&rtype) {
                prop_assert!(theirs.eq_ignore_ascii_case(&ours), "{} {:02x?}", rtype, bytes);
            } else {
                prop_assert_eq!(theirs, ours, "{} {:02x?}", rtype, bytes);
            }
        }
    }
}
