//! Building from records in any order, in one builder or appended parts, gives
//! the zone the records sorted (stably) by owner give: whether the builder
//! merges the ordered runs it saw or sorts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_zone::{Zone, ZoneBuilder};
use proptest::prelude::*;

const OWNERS: &[&str] = &[
    "example.",
    "a.example.",
    "A.example.",
    "b.a.example.",
    "ns1.example.",
    "z.example.",
    "\\000.example.",
    "*.example.",
    "mail.z.example.",
    "zz.example.",
];

fn record(owner: usize, rtype: bool, ttl: bool, data: u8) -> Record {
    Record {
        owner: OWNERS[owner % OWNERS.len()].parse().unwrap(),
        class: Class::IN,
        ttl: if ttl { 300 } else { 60 },
        rdata: if rtype {
            Rdata::Unknown {
                rtype: Rtype::A,
                data: vec![192, 0, 2, data % 4],
            }
        } else {
            Rdata::Unknown {
                rtype: Rtype::TXT,
                data: vec![1, b'a' + data % 3],
            }
        },
    }
}

/// Builds from `records`, cut into parts at `cuts` (each part its own
/// builder, appended in order as a split parse does).
fn build(records: &[Record], cuts: &[usize]) -> (Zone, Vec<String>) {
    let apex: Name = "example.".parse().unwrap();
    let mut first = ZoneBuilder::new(&apex);
    let mut parts: Vec<ZoneBuilder> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if cuts.contains(&i) {
            parts.push(first.fork());
        }
        match parts.last_mut() {
            Some(part) => part.add(r),
            None => first.add(r),
        }
    }
    for part in parts {
        first.append(part);
    }
    let (zone, problems) = first.finish();
    (zone, problems.iter().map(ToString::to_string).collect())
}

fn check(records: Vec<Record>, cuts: Vec<usize>) -> Result<(), TestCaseError> {
    let mut sorted = records.clone();
    sorted.sort_by(|a, b| a.owner.canonical_cmp(&b.owner));
    let (expected, expected_problems) = build(&sorted, &[]);
    let (zone, problems) = build(&records, &cuts);
    prop_assert!(zone.records().eq(expected.records()));
    prop_assert_eq!(zone.node_count(), expected.node_count());
    prop_assert_eq!(problems, expected_problems);
    // Every record is found at its owner: no owner's records were split
    // over two nodes (which the zone built from sorted records would share).
    for r in &records {
        let mut data = Vec::new();
        r.rdata.write_wire(&mut data);
        let set = zone.node(&r.owner).and_then(|n| n.rrset(r.rtype()));
        prop_assert!(
            set.is_some_and(|s| s.rdatas().any(|d| d == data.as_slice())),
            "{}",
            r.owner
        );
    }
    Ok(())
}

proptest! {
    /// Few long runs (the merge) and many short ones (the sort).
    #[test]
    fn any_order_builds_the_zone_sorted_records_build(
        picks in proptest::collection::vec((0usize..10, any::<bool>(), any::<bool>(), any::<u8>()), 0..60),
        cuts in proptest::collection::vec(0usize..60, 0..4),
        runs in 1usize..24,
    ) {
        let mut records: Vec<Record> = picks.iter().map(|&(o, t, l, d)| record(o, t, l, d)).collect();
        // Sort each of `runs` stretches, so the list is that many ordered runs
        // (or fewer, where neighbours happen to continue in order).
        let stretch = records.len().div_ceil(runs).max(1);
        for chunk in records.chunks_mut(stretch) {
            chunk.sort_by(|a, b| a.owner.canonical_cmp(&b.owner));
        }
        check(records, cuts)?;
    }
}

#[test]
fn apex_and_name_servers_first_then_names_in_order() {
    // The shape of most zone files, and of bench/memory.sh's: two runs.
    let mut records = vec![
        record(0, true, true, 1),
        record(4, true, true, 2),
        record(4, true, false, 3),
    ];
    for i in [1, 3, 2, 5, 8, 9] {
        records.push(record(i, i % 2 == 0, true, 0));
    }
    records.push(record(0, false, true, 0));
    check(records.clone(), vec![]).unwrap();
    for cut in 0..records.len() {
        check(records.clone(), vec![cut]).unwrap();
    }
}
