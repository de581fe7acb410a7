//! The stored format seen from outside: records are DNS wire form (read back
//! by an independent implementation), and damaged values are errors naming
//! the zone, never panics. These tests open the file with redb directly, so
//! they name the store's tables and keys.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::Path;

use bulwark_proto::Name;
use bulwark_store::{Commit, DecodeError, JournalKind, Snapshot, Store, StoreError};
use common::*;

type Bytes = redb::TableDefinition<'static, &'static [u8], &'static [u8]>;

const SERVED: u8 = 1;

fn journal_key(zone: &Name, kind: u8) -> Vec<u8> {
    let mut k = zone.to_lowercase().as_wire().to_vec();
    k.push(kind);
    k
}

fn diff_key(zone: &Name, seq: u64) -> Vec<u8> {
    let mut k = journal_key(zone, SERVED);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

fn chunk_key(prefix: &[u8], chunk: u32) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&chunk.to_be_bytes());
    k
}

fn raw_get(path: &Path, table: &'static str, key: &[u8]) -> Option<Vec<u8>> {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(Bytes::new(table)).unwrap();
    let value = t.get(key).unwrap().map(|v| v.value().to_vec());
    value
}

/// Sets (or with `None` removes) one raw value.
fn raw_set(path: &Path, table: &'static str, key: &[u8], value: Option<&[u8]>) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn.open_table(Bytes::new(table)).unwrap();
        match value {
            Some(v) => {
                t.insert(key, v).unwrap();
            }
            None => {
                t.remove(key).unwrap();
            }
        }
    }
    txn.commit().unwrap();
}

/// A store with a snapshot of many types at 1 and diffs 1 → 4 for `example.`.
fn written_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    let zone = name("example.");
    let store = Store::open(&path).unwrap();
    let mut base = vec![soa(&zone, 1)];
    base.extend(many_types(&zone));
    store
        .commit(
            &zone,
            Commit::new()
                .snapshot(JournalKind::Served, Snapshot::replacement(base))
                .append(JournalKind::Served, chain(&zone, 1, 4)),
        )
        .unwrap();
    (dir, path)
}

#[test]
fn stored_records_are_dns_wire_form_as_hickory_reads_them() {
    use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
    let (_dir, path) = written_store();
    let zone = name("example.");
    let mut base = vec![soa(&zone, 1)];
    base.extend(many_types(&zone));

    let chunk = raw_get(
        &path,
        "journal_snapshot_chunks",
        &chunk_key(&journal_key(&zone, SERVED), 0),
    )
    .expect("snapshot chunk 0");
    assert_eq!(chunk[0], 1, "format version octet");
    let mut decoder = BinDecoder::new(&chunk[1..]);
    let mut read = Vec::new();
    while !decoder.is_empty() {
        read.push(hickory_proto::rr::Record::read(&mut decoder).unwrap());
    }
    assert_eq!(read.len(), base.len());
    for (ours, theirs) in base.iter().zip(&read) {
        let labels: Vec<&[u8]> = theirs.name().iter().collect();
        let our_labels: Vec<&[u8]> = ours.owner.labels().collect();
        assert_eq!(labels, our_labels, "{ours}");
        assert_eq!(u16::from(theirs.record_type()), ours.rtype().0, "{ours}");
        assert_eq!(u16::from(theirs.dns_class()), ours.class.0, "{ours}");
        assert_eq!(theirs.ttl(), ours.ttl, "{ours}");
    }
}

#[test]
fn damaged_values_are_errors_naming_the_zone() {
    let zone = name("example.");
    let head = journal_key(&zone, SERVED);
    let snapshot0 = chunk_key(&head, 0);
    let diff1 = diff_key(&zone, 1);
    let diff1_chunk = chunk_key(&diff1, 0);
    struct Damage {
        table: &'static str,
        key: Vec<u8>,
        value: Option<Vec<u8>>,
        what: &'static str,
    }
    let cases = [
        Damage {
            table: "journal_heads",
            key: head.clone(),
            value: Some(vec![]),
            what: "empty head",
        },
        Damage {
            table: "journal_heads",
            key: head.clone(),
            value: Some(vec![1, 2, 3]),
            what: "short head",
        },
        Damage {
            table: "journal_heads",
            key: head.clone(),
            value: Some(vec![9; 80]),
            what: "newer head",
        },
        Damage {
            table: "journal_snapshot_chunks",
            key: snapshot0.clone(),
            value: None,
            what: "missing snapshot chunk",
        },
        Damage {
            table: "journal_snapshot_chunks",
            key: snapshot0.clone(),
            value: Some(vec![1, 3, b'a', b'b']),
            what: "truncated owner",
        },
        Damage {
            table: "journal_snapshot_chunks",
            key: snapshot0.clone(),
            value: Some(vec![1, 0xc0, 0x0c, 0, 1]),
            what: "compressed owner",
        },
        Damage {
            table: "journal_diff_index",
            key: diff1.clone(),
            value: Some(vec![1, 0, 0]),
            what: "short index entry",
        },
        Damage {
            table: "journal_diff_index",
            key: diff1.clone(),
            value: None,
            what: "missing index entry",
        },
        Damage {
            table: "journal_diff_chunks",
            key: diff1_chunk.clone(),
            value: None,
            what: "missing diff chunk",
        },
        Damage {
            table: "journal_diff_chunks",
            key: diff1_chunk.clone(),
            value: Some(vec![1]),
            what: "diff without records",
        },
    ];
    for case in cases {
        let (_dir, path) = written_store();
        raw_set(&path, case.table, &case.key, case.value.as_deref());
        let store = Store::open(&path).unwrap();
        let err = store.load(&zone, JournalKind::Served).unwrap_err();
        match &err {
            StoreError::Corrupt { zone: z, .. } => assert_eq!(z, "example.", "{}", case.what),
            other => panic!("{}: {other:?}", case.what),
        }
        assert!(err.to_string().contains("example."), "{}: {err}", case.what);
    }
}

#[test]
fn rdata_that_does_not_parse_reads_back_as_opaque_data() {
    let (_dir, path) = written_store();
    let zone = name("example.");
    let key = chunk_key(&journal_key(&zone, SERVED), 0);
    let mut chunk = vec![1u8];
    // The SOA, then an A record of 3 octets and an MX whose name runs off.
    let soa = raw_get(&path, "journal_snapshot_chunks", &key).unwrap();
    let soa_len = {
        // owner (example.) + fixed 10 octets + RDLENGTH octets
        let owner = zone.as_wire().len();
        let rdlen = u16::from_be_bytes([soa[1 + owner + 8], soa[1 + owner + 9]]);
        owner + 10 + usize::from(rdlen)
    };
    chunk.extend_from_slice(&soa[1..1 + soa_len]);
    chunk.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 3, 192, 0, 2]);
    chunk.extend_from_slice(&[0, 0, 15, 0, 1, 0, 0, 0, 60, 0, 4, 0, 10, 5, b'a']);
    raw_set(&path, "journal_snapshot_chunks", &key, Some(&chunk));
    // The head still counts the records first written; make it count three.
    let head = raw_get(&path, "journal_heads", &journal_key(&zone, SERVED)).unwrap();
    let mut head = head;
    // Layout: version, flags, end, first, first_seq, next_seq, diff_bytes,
    // then snapshot serial, chunks, records (u64 at offset 1+1+4+4+8+8+8+4+4).
    let records_at = 1 + 1 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
    head[records_at..records_at + 8].copy_from_slice(&3u64.to_be_bytes());
    raw_set(
        &path,
        "journal_heads",
        &journal_key(&zone, SERVED),
        Some(&head),
    );

    let store = Store::open(&path).unwrap();
    let snapshot = store.snapshot(&zone, JournalKind::Served).unwrap().unwrap();
    assert_eq!(snapshot.len(), 3);
    assert_eq!(
        snapshot[1].rdata,
        bulwark_proto::Rdata::Unknown {
            rtype: bulwark_proto::Rtype::A,
            data: vec![192, 0, 2]
        }
    );
    assert_eq!(
        snapshot[2].rdata,
        bulwark_proto::Rdata::Unknown {
            rtype: bulwark_proto::Rtype::MX,
            data: vec![0, 10, 5, b'a']
        }
    );
}

#[test]
fn a_record_count_that_disagrees_with_the_head_is_an_error() {
    let (_dir, path) = written_store();
    let zone = name("example.");
    let key = journal_key(&zone, SERVED);
    let mut head = raw_get(&path, "journal_heads", &key).unwrap();
    let records_at = 1 + 1 + 4 + 4 + 8 + 8 + 8 + 4 + 4;
    head[records_at..records_at + 8].copy_from_slice(&1u64.to_be_bytes());
    raw_set(&path, "journal_heads", &key, Some(&head));
    let store = Store::open(&path).unwrap();
    let err = store.snapshot(&zone, JournalKind::Served).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Corrupt {
                source: DecodeError::RecordCount { expected: 1, .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn diffs_since_decodes_only_the_diffs_it_returns() {
    // With the oldest diff damaged, reading from a later serial still works:
    // the damaged diff is never read.
    let (_dir, path) = written_store();
    let zone = name("example.");
    raw_set(
        &path,
        "journal_diff_chunks",
        &chunk_key(&diff_key(&zone, 0), 0),
        Some(&[1, 0xff]),
    );
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.diffs_since(&zone, JournalKind::Served, 2).unwrap(),
        Some(chain(&zone, 2, 4))
    );
    assert_eq!(
        store.diffs_since(&zone, JournalKind::Served, 4).unwrap(),
        Some(vec![])
    );
    assert!(matches!(
        store.diffs_since(&zone, JournalKind::Served, 1),
        Err(StoreError::Corrupt { .. })
    ));
    assert!(matches!(
        store.load(&zone, JournalKind::Served),
        Err(StoreError::Corrupt { .. })
    ));
}
