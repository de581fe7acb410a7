//! Signed zones: the NSEC3 chain kept out of the namespace, the covering NSEC
//! of a name, and how a zone's denial of existence is recognised.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::{Name, Record, Rtype};
use bulwark_zone::nsec3::{Denial, Nsec3Lookup};
use bulwark_zone::Zone;

const NSEC_ZONE: &str = include_str!("../../auth/tests/data/signed/diff-nsec.zone");
const NSEC3_ZONE: &str = include_str!("../../auth/tests/data/signed/diff-nsec3.zone");
const UNSIGNED_ZONE: &str = include_str!("../../bulwark/tests/data/diff.zone");

fn n(s: &str) -> Name {
    Name::from_presentation(s.as_bytes(), None).unwrap()
}

fn records(text: &str) -> Vec<Record> {
    bulwark_zone::parse_str(text, &n("diff.test."), "t").unwrap()
}

fn zone(text: &str) -> Zone {
    Zone::build(n("diff.test."), records(text)).unwrap().0
}

fn decode_base32hex(text: &str) -> Vec<u8> {
    let (mut out, mut buffer, mut bits) = (Vec::new(), 0u32, 0u32);
    for c in text.to_ascii_lowercase().bytes() {
        let v = if c.is_ascii_digit() {
            c - b'0'
        } else {
            c - b'a' + 10
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

fn nsec3_owners(text: &str) -> Vec<Name> {
    let mut owners: Vec<Name> = records(text)
        .into_iter()
        .filter(|r| r.rtype() == Rtype::NSEC3)
        .map(|r| r.owner.to_lowercase())
        .collect();
    owners.sort();
    owners
}

#[test]
fn denial_is_read_from_the_apex() {
    assert_eq!(zone(NSEC_ZONE).denial(), Some(&Denial::Nsec));
    assert_eq!(
        zone(NSEC3_ZONE).denial(),
        Some(&Denial::Nsec3 {
            salt: Box::default(),
            iterations: 0
        })
    );
    assert_eq!(zone(UNSIGNED_ZONE).denial(), None);
    // NSEC records without DNSKEY and RRSIG at the apex: not signed.
    let text = "@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n\
                @ NSEC ns.diff.test. SOA NS NSEC\n";
    assert_eq!(zone(text).denial(), None);
}

#[test]
fn nsec3_owners_are_not_names_of_the_zone_but_stay_in_its_records() {
    let z = zone(NSEC3_ZONE);
    let owners = nsec3_owners(NSEC3_ZONE);
    assert!(owners.len() > 10);
    for owner in &owners {
        assert!(z.node(owner).is_none(), "{owner} is reachable");
    }
    // Printing and transfers still see every record, in canonical order.
    assert_eq!(z.records().count(), records(NSEC3_ZONE).len());
    let listed: Vec<Name> = z.nodes_canonical().map(|(o, _)| o).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
    assert!(owners.iter().all(|o| listed.contains(o)));
}

#[test]
fn nsec3_lookup_finds_the_matching_or_the_covering_record() {
    let z = zone(NSEC3_ZONE);
    let owners = nsec3_owners(NSEC3_ZONE);
    let first_label = |o: &Name| {
        let text = o.to_string();
        text.split('.').next().unwrap().to_string()
    };
    let hash = decode_base32hex(&first_label(&owners[3]));
    match z.nsec3(&hash).unwrap() {
        Nsec3Lookup::Matching(r) => {
            assert_eq!(Name::from_wire(r.owner).unwrap(), owners[3]);
            assert!(r.node.rrset(Rtype::NSEC3).is_some());
            assert!(r.node.rrsigs_covering(Rtype::NSEC3).next().is_some());
            assert!(!r.opt_out());
        }
        other => panic!("{other:?}"),
    }
    let mut after = hash.clone();
    after[19] = after[19].wrapping_add(1);
    match z.nsec3(&after).unwrap() {
        Nsec3Lookup::Covering(r) => assert_eq!(Name::from_wire(r.owner).unwrap(), owners[3]),
        other => panic!("{other:?}"),
    }
    // Below the first hash, the last NSEC3 wraps around.
    match z.nsec3(&[0u8; 20]).unwrap() {
        Nsec3Lookup::Covering(r) => {
            assert_eq!(Name::from_wire(r.owner).unwrap(), *owners.last().unwrap())
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn nsec_covering_is_the_nsec_at_or_before_the_name() {
    let z = zone(NSEC_ZONE);
    let owner_of = |name: &str| {
        let lower = n(name).to_lowercase();
        let (owner, node) = z.nsec_covering(lower.as_wire()).unwrap();
        assert!(node.has(Rtype::NSEC));
        Name::from_wire(owner).unwrap()
    };
    // An existing name has its own NSEC.
    assert_eq!(owner_of("www.diff.test."), n("www.diff.test."));
    // A missing name: the name before it.
    assert_eq!(owner_of("wwx.diff.test."), n("www.diff.test."));
    // An empty non-terminal has no NSEC: the one before covers it.
    let ent = owner_of("y.ent.diff.test.");
    assert!(ent < n("y.ent.diff.test."));
    // Glue below a cut has none either: the cut's NSEC covers it.
    assert_eq!(owner_of("ns1.sub.diff.test."), n("sub.diff.test."));
}
