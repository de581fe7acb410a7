//! A snapshot of a million records (a hundred thousand in debug builds) is
//! written in one commit and read back whole. The times are printed, not
//! checked: `cargo test --release -p bulwark-store --test large -- --nocapture`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use bulwark_proto::{Class, Name, Rdata, Record};
use bulwark_store::{Commit, JournalKind, Snapshot, Store};
use common::*;

fn big_zone(zone: &Name, n: u32) -> Vec<Record> {
    let mut out = Vec::with_capacity(n as usize);
    out.push(soa(zone, 1));
    let mx = name("mail.example.");
    for i in 1..n {
        let owner = zone.prepend_label(format!("host{i}").as_bytes()).unwrap();
        let rdata = match i % 4 {
            0 => Rdata::A(Ipv4Addr::from(i)),
            1 => Rdata::Aaaa(Ipv6Addr::from(u128::from(i) | (0x2001_0db8 << 96))),
            2 => Rdata::Txt(vec![format!("record {i}").into_bytes()]),
            _ => Rdata::Mx {
                preference: (i % 100) as u16,
                exchange: mx.clone(),
            },
        };
        out.push(Record {
            owner,
            class: Class::IN,
            ttl: 3600,
            rdata,
        });
    }
    out
}

#[test]
fn a_million_record_snapshot_is_written_and_read_back() {
    let n: u32 = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    let zone = name("example.");
    let records = big_zone(&zone, n);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    let store = Store::open(&path).unwrap();

    let start = Instant::now();
    store
        .commit(
            &zone,
            Commit::new().snapshot(JournalKind::Served, Snapshot::replacement(records.clone())),
        )
        .unwrap();
    let write = start.elapsed();
    let bounds = store
        .journal_bounds(&zone, JournalKind::Served)
        .unwrap()
        .unwrap();
    assert_eq!(bounds.snapshot_records, u64::from(n));

    let start = Instant::now();
    let read = store.snapshot(&zone, JournalKind::Served).unwrap().unwrap();
    let read_time = start.elapsed();
    assert!(read == records, "the snapshot read back differs");
    drop(read);

    // A diff on top of the big snapshot: reads of the journal's diffs do not
    // touch the snapshot.
    let start = Instant::now();
    store
        .commit(
            &zone,
            Commit::new().append(JournalKind::Served, chain(&zone, 1, 2)),
        )
        .unwrap();
    let append = start.elapsed();
    let start = Instant::now();
    let diffs = store
        .diffs_since(&zone, JournalKind::Served, 1)
        .unwrap()
        .unwrap();
    let since = start.elapsed();
    assert_eq!(diffs, chain(&zone, 1, 2));

    // A compaction rewrites it whole.
    let mut next = records;
    next[0] = soa(&zone, 2);
    let start = Instant::now();
    store
        .commit(
            &zone,
            Commit::new().snapshot(JournalKind::Served, Snapshot::compaction(next)),
        )
        .unwrap();
    let rewrite = start.elapsed();
    drop(store);

    let start = Instant::now();
    let store = Store::open(&path).unwrap();
    let reopen = start.elapsed();
    let file = std::fs::metadata(&path).unwrap().len();
    let bounds = store
        .journal_bounds(&zone, JournalKind::Served)
        .unwrap()
        .unwrap();
    eprintln!(
        "{n} records, {} octets stored ({} per record), file {file} octets: \
         write {write:?}, read {read_time:?}, append a diff {append:?}, diffs_since {since:?}, \
         rewrite {rewrite:?}, reopen {reopen:?}",
        bounds.snapshot_bytes,
        bounds.snapshot_bytes / u64::from(n),
    );
}
