//! Building never panics, whatever the records, and a built zone keeps its contract.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_zone::build::canonical_rdata;
use bulwark_zone::{Zone, ZoneBuilder};
use proptest::prelude::*;

const LABELS: [&str; 6] = ["a", "B", "*", "ns", "sub", "x"];
const TYPES: [Rtype; 12] = [
    Rtype::A,
    Rtype::AAAA,
    Rtype::NS,
    Rtype::SOA,
    Rtype::CNAME,
    Rtype::DNAME,
    Rtype::MX,
    Rtype::SRV,
    Rtype::TXT,
    Rtype::RRSIG,
    Rtype::OPT,
    Rtype(65_280),
];

fn owner() -> impl Strategy<Value = Name> {
    (prop::collection::vec(0..LABELS.len(), 0..4), any::<bool>()).prop_map(|(labels, inside)| {
        let mut text: Vec<&str> = labels.iter().map(|&i| LABELS[i]).collect();
        text.push(if inside { "example" } else { "other" });
        format!("{}.", text.join(".")).parse().unwrap()
    })
}

fn rdata() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40),
        owner().prop_map(|n| n.as_wire().to_vec()),
        owner().prop_map(|n| {
            let mut w = vec![0, 10];
            w.extend_from_slice(n.as_wire());
            w
        }),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (owner(), 0..TYPES.len(), any::<u32>(), rdata(), 0u16..3).prop_map(
        |(owner, t, ttl, data, class)| Record {
            owner,
            class: Class(class),
            ttl,
            rdata: Rdata::Unknown {
                rtype: TYPES[t],
                data,
            },
        },
    )
}

fn valid_base() -> Vec<Record> {
    let mut soa = Name::root().as_wire().to_vec();
    soa.extend_from_slice(Name::root().as_wire());
    soa.extend_from_slice(&[0; 20]);
    let apex: Name = "example.".parse().unwrap();
    let ns: Name = "ns.other.".parse().unwrap();
    vec![
        Record {
            owner: apex.clone(),
            class: Class::IN,
            ttl: 60,
            rdata: Rdata::Unknown {
                rtype: Rtype::SOA,
                data: soa,
            },
        },
        Record {
            owner: apex,
            class: Class::IN,
            ttl: 60,
            rdata: Rdata::Unknown {
                rtype: Rtype::NS,
                data: ns.as_wire().to_vec(),
            },
        },
    ]
}

proptest! {
    #[test]
    fn build_never_panics(records in prop::collection::vec(record(), 0..30)) {
        let apex: Name = "example.".parse().unwrap();
        if let Ok((zone, warnings)) = Zone::build(apex, records) {
            prop_assert!(warnings.iter().all(|w| !w.is_error()));
            prop_assert_eq!(zone.soa().map(|s| s.len()), Some(1));
        }
    }

    #[test]
    fn a_built_zone_keeps_the_lookup_contract(records in prop::collection::vec(record(), 0..30)) {
        let apex: Name = "example.".parse().unwrap();
        let mut builder = ZoneBuilder::new(&apex);
        for r in valid_base().into_iter().chain(records) {
            builder.add(&r);
        }
        let (zone, _) = builder.finish();
        {
            // Canonical order without repeats; an empty non-terminal is followed
            // by a descendant (it exists only because of one), and the last node has data.
            let all: Vec<(Name, bool)> = zone
                .nodes_canonical()
                .map(|(o, n)| (o, n.is_empty_nonterminal()))
                .collect();
            for w in all.windows(2) {
                prop_assert!(w[0].0 < w[1].0, "{} !< {}", w[0].0, w[1].0);
                if w[0].1 {
                    prop_assert!(w[1].0.is_below(&w[0].0), "stray ENT {}", w[0].0);
                }
            }
            prop_assert!(all.last().is_some_and(|l| !l.1));
            for (owner, node) in zone.nodes_canonical() {
                prop_assert!(owner.ends_with(&apex));
                // Every ancestor up to the apex exists.
                if let Some(parent) = owner.parent().filter(|p| p.ends_with(&apex)) {
                    prop_assert!(zone.node(&parent).is_some(), "{} has no parent node", owner);
                }
                for set in node.rrsets() {
                    let all: Vec<&[u8]> = set.rdatas().collect();
                    prop_assert!(!all.is_empty());
                    prop_assert!(set.ttl() <= 0x7fff_ffff);
                    prop_assert_eq!(all.len(), set.len());
                    // Canonical order, no duplicates (RFC 4034 §6.3, RFC 2181 §5).
                    for w in all.windows(2) {
                        prop_assert!(canonical_rdata(set.rtype(), w[0]) < canonical_rdata(set.rtype(), w[1]));
                    }
                }
            }
            let _ = zone.records().count();
        }
    }
}
