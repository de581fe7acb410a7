//! Journals: what goes in comes back, chains stay chains, limits trim only
//! what may go.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

mod common;

use bulwark_proto::{Rdata, Rtype};
use bulwark_store::{
    Commit, JournalChange, JournalKind, JournalLimit, Snapshot, StoreError, ZoneTimers,
};
use bulwark_zone::ZoneDiff;
use common::*;

const SERVED: JournalKind = JournalKind::Served;
const UNSIGNED: JournalKind = JournalKind::Unsigned;

#[test]
fn many_types_parse_into_many_records() {
    // Guards the fixture the round trips rely on.
    let recs = many_types(&name("example."));
    assert!(recs.len() >= 25, "{}", recs.len());
    let types: std::collections::BTreeSet<u16> = recs.iter().map(|r| r.rtype().0).collect();
    assert!(types.len() >= 20, "{types:?}");
}

#[test]
fn snapshot_and_diffs_read_back_as_written() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let mut base = vec![soa(&zone, 1)];
    base.extend(many_types(&zone));
    let big = ZoneDiff {
        old_soa: soa(&zone, 1),
        new_soa: soa(&zone, 2),
        removed: many_types(&zone),
        added: many_types(&name("other.example.")),
    };
    let empty = ZoneDiff {
        old_soa: soa(&zone, 2),
        new_soa: soa(&zone, 3),
        removed: vec![],
        added: vec![],
    };
    let only_added = ZoneDiff {
        old_soa: soa(&zone, 3),
        new_soa: soa(&zone, 4),
        removed: vec![],
        added: vec![record_of(&zone, 4)],
    };
    let diffs = vec![big, empty, only_added];
    let outcome = store
        .commit(
            &zone,
            Commit::new()
                .snapshot(SERVED, Snapshot::replacement(base.clone()))
                .append(SERVED, diffs.clone()),
        )
        .unwrap();
    let bounds = outcome.served.unwrap().bounds.unwrap();
    assert_eq!((bounds.first_serial, bounds.last_serial), (1, 4));
    assert_eq!(bounds.snapshot_serial, Some(1));
    assert_eq!(bounds.diff_count, 3);
    assert_eq!(bounds.snapshot_records, base.len() as u64);

    let stored = store.load(&zone, SERVED).unwrap().unwrap();
    assert_eq!(stored.snapshot.as_ref(), Some(&base));
    assert_eq!(stored.snapshot_serial, Some(1));
    assert_eq!(stored.diffs, diffs);
    assert_eq!(stored.replay_from, 0);
    assert_eq!(store.snapshot(&zone, SERVED).unwrap(), Some(base));
    assert_eq!(store.journal_bounds(&zone, SERVED).unwrap(), Some(bounds));
    // The other kind holds nothing.
    assert_eq!(store.load(&zone, UNSIGNED).unwrap(), None);
}

#[test]
fn zone_names_are_keys_whatever_their_case() {
    let (_dir, store) = temp_store();
    store
        .commit(
            &name("ExAmPle."),
            Commit::new().append(SERVED, chain(&name("example."), 1, 3)),
        )
        .unwrap();
    let bounds = store
        .journal_bounds(&name("EXAMPLE."), SERVED)
        .unwrap()
        .unwrap();
    assert_eq!(bounds.last_serial, 3);
    assert_eq!(store.zones().unwrap(), vec![name("example.")]);
}

#[test]
fn discontinuous_append_is_refused_and_nothing_of_the_commit_is_written() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 1, 3)))
        .unwrap();
    let before = store.load(&zone, SERVED).unwrap();

    // A valid diff followed by one that skips a version, with timers and
    // metadata and the other journal in the same commit.
    let mut diffs = chain(&zone, 3, 4);
    diffs.push(step(&zone, 5));
    let err = store
        .commit(
            &zone,
            Commit::new()
                .append(UNSIGNED, chain(&zone, 1, 2))
                .append(SERVED, diffs)
                .set_timers(ZoneTimers::default())
                .put_meta("k", b"v".to_vec()),
        )
        .unwrap_err();
    match &err {
        StoreError::Discontinuous {
            zone: z,
            kind,
            journal_end,
            change_start,
        } => {
            assert_eq!(
                (z.as_str(), *kind, *journal_end, *change_start),
                ("example.", SERVED, 4, 5)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("example."), "{err}");

    assert_eq!(store.load(&zone, SERVED).unwrap(), before);
    assert_eq!(store.load(&zone, UNSIGNED).unwrap(), None);
    assert_eq!(store.timers(&zone).unwrap(), None);
    assert_eq!(store.get_meta(&zone, "k").unwrap(), None);

    // The first diff of a batch must continue the journal too.
    let err = store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 2, 4)))
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Discontinuous {
                journal_end: 3,
                change_start: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(store.load(&zone, SERVED).unwrap(), before);
}

#[test]
fn first_diff_of_an_empty_journal_may_start_anywhere_and_then_fixes_the_chain() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(
            &zone,
            Commit::new().append(SERVED, chain(&zone, 4_000_000_000, 4_000_000_002)),
        )
        .unwrap();
    let err = store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 1, 2)))
        .unwrap_err();
    assert!(matches!(err, StoreError::Discontinuous { .. }), "{err:?}");
}

#[test]
fn compaction_snapshot_must_be_the_version_the_journal_ends_at() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 1, 5)))
        .unwrap();
    let err = store
        .commit(
            &zone,
            Commit::new().snapshot(SERVED, Snapshot::compaction(zone_at(&zone, 4))),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Discontinuous {
                journal_end: 5,
                change_start: 4,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(store.snapshot(&zone, SERVED).unwrap(), None);

    store
        .commit(
            &zone,
            Commit::new().snapshot(SERVED, Snapshot::compaction(zone_at(&zone, 5))),
        )
        .unwrap();
    let stored = store.load(&zone, SERVED).unwrap().unwrap();
    assert_eq!(stored.snapshot_serial, Some(5));
    assert_eq!(stored.diffs, chain(&zone, 1, 5));
    // Every diff is history before the snapshot: none is replayed onto it.
    assert_eq!(stored.replay_from, 4);
    // History stays for IXFR.
    assert_eq!(
        store.diffs_since(&zone, SERVED, 2).unwrap(),
        Some(chain(&zone, 2, 5))
    );
}

#[test]
fn replacement_snapshot_drops_the_history_it_does_not_follow() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 1, 5)))
        .unwrap();
    store
        .commit(
            &zone,
            Commit::new()
                .snapshot(SERVED, Snapshot::replacement(zone_at(&zone, 90)))
                .append(SERVED, chain(&zone, 90, 92)),
        )
        .unwrap();
    let stored = store.load(&zone, SERVED).unwrap().unwrap();
    assert_eq!(stored.snapshot, Some(zone_at(&zone, 90)));
    assert_eq!(stored.diffs, chain(&zone, 90, 92));
    assert_eq!(stored.replay_from, 0);
    assert_eq!(store.diffs_since(&zone, SERVED, 1).unwrap(), None);
    let bounds = store.journal_bounds(&zone, SERVED).unwrap().unwrap();
    assert_eq!((bounds.first_serial, bounds.last_serial), (90, 92));
}

#[test]
fn snapshot_and_diff_without_a_serial_are_refused() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let no_soa = many_types(&zone);
    let err = store
        .commit(
            &zone,
            Commit::new().snapshot(SERVED, Snapshot::replacement(no_soa)),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NoSerial {
                what: "snapshot",
                ..
            }
        ),
        "{err:?}"
    );
    let mut two_soas = zone_at(&zone, 1);
    two_soas.push(soa(&zone, 2));
    let err = store
        .commit(
            &zone,
            Commit::new().snapshot(SERVED, Snapshot::replacement(two_soas)),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NoSerial {
                what: "snapshot",
                ..
            }
        ),
        "{err:?}"
    );
    let mut diff = step(&zone, 1);
    diff.new_soa = record_of(&zone, 2);
    let err = store
        .commit(&zone, Commit::new().append(SERVED, [diff]))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::NoSerial { what: "diff", .. }),
        "{err:?}"
    );
    assert!(store.zones().unwrap().is_empty());
}

#[test]
fn rdata_longer_than_rdlength_allows_is_refused() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let mut diff = step(&zone, 1);
    diff.added[0].rdata = Rdata::Unknown {
        rtype: Rtype(65280),
        data: vec![0; 65536],
    };
    let err = store
        .commit(&zone, Commit::new().append(SERVED, [diff.clone()]))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::RdataTooLong { len: 65536, .. }),
        "{err:?}"
    );
    // 65535 octets is the most RDLENGTH says, and fits.
    diff.added[0].rdata = Rdata::Unknown {
        rtype: Rtype(65280),
        data: vec![7; 65535],
    };
    store
        .commit(&zone, Commit::new().append(SERVED, [diff.clone()]))
        .unwrap();
    assert_eq!(
        store.diffs_since(&zone, SERVED, 1).unwrap(),
        Some(vec![diff])
    );
}

#[test]
fn diffs_since_returns_the_chain_from_every_stored_serial() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let all = chain(&zone, 10, 30);
    // Appended in batches of different sizes.
    for batch in [&all[0..1], &all[1..8], &all[8..20]] {
        store
            .commit(&zone, Commit::new().append(SERVED, batch.to_vec()))
            .unwrap();
    }
    for serial in 10..=30u32 {
        let got = store.diffs_since(&zone, SERVED, serial).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(&all[(serial - 10) as usize..]),
            "from {serial}"
        );
    }
    for serial in [0, 9, 31, 1000, u32::MAX] {
        assert_eq!(
            store.diffs_since(&zone, SERVED, serial).unwrap(),
            None,
            "from {serial}"
        );
    }
    assert_eq!(store.diffs_since(&zone, UNSIGNED, 10).unwrap(), None);
    assert_eq!(
        store.diffs_since(&name("other."), SERVED, 10).unwrap(),
        None
    );
}

#[test]
fn diffs_since_follows_serials_across_the_wrap() {
    // RFC 1982: serials wrap from 2^32-1 to 0.
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let start = u32::MAX - 2;
    let diffs: Vec<ZoneDiff> = (0..5u32)
        .map(|i| step(&zone, start.wrapping_add(i)))
        .collect();
    store
        .commit(&zone, Commit::new().append(SERVED, diffs.clone()))
        .unwrap();
    assert_eq!(
        store.diffs_since(&zone, SERVED, 0).unwrap().as_deref(),
        Some(&diffs[3..])
    );
    assert_eq!(
        store.diffs_since(&zone, SERVED, start).unwrap(),
        Some(diffs)
    );
}

/// The stored size of each diff of `chain(zone, from, to)`, appended one by one.
fn sizes(store: &bulwark_store::Store, zone: &bulwark_proto::Name, from: u32, to: u32) -> Vec<u64> {
    let mut out = Vec::new();
    let mut total = 0;
    for s in from..to {
        let outcome = store
            .commit(zone, Commit::new().append(SERVED, [step(zone, s)]))
            .unwrap();
        let now = outcome.served.unwrap().bounds.unwrap().diff_bytes;
        out.push(now - total);
        total = now;
    }
    out
}

#[test]
fn size_limit_drops_only_diffs_before_the_snapshot_when_nothing_else_may_go() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let size = sizes(&store, &zone, 100, 110);
    let max_bytes = size[7] + size[8] + size[9];
    let limit = JournalLimit {
        max_bytes,
        keep_from: None,
    };
    // No snapshot: every diff is the only copy of its change.
    let outcome = store
        .commit(&zone, Commit::new().limit(SERVED, limit))
        .unwrap();
    let status = outcome.served.unwrap();
    assert_eq!(status.trimmed, 0);
    assert!(status.over_limit);
    assert!(outcome.over_limit(SERVED));
    assert_eq!(status.bounds.unwrap().diff_count, 10);

    // The caller compacts: a snapshot at 110, then two more diffs.
    let outcome = store
        .commit(
            &zone,
            Commit::new()
                .snapshot(SERVED, Snapshot::compaction(zone_at(&zone, 110)))
                .append(SERVED, chain(&zone, 110, 112)),
        )
        .unwrap();
    let status = outcome.served.unwrap();
    let bounds = status.bounds.unwrap();
    // The diffs are all of one size: with two after the snapshot, one diff
    // before it fits.
    assert_eq!(status.trimmed, 9);
    assert!(!status.over_limit);
    assert_eq!((bounds.first_serial, bounds.last_serial), (109, 112));
    assert!(bounds.diff_bytes <= max_bytes);
    assert_eq!(store.diffs_since(&zone, SERVED, 108).unwrap(), None);
    assert_eq!(
        store.diffs_since(&zone, SERVED, 109).unwrap(),
        Some(chain(&zone, 109, 112))
    );

    // Diffs after the snapshot stay whatever the limit.
    let outcome = store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 112, 119)))
        .unwrap();
    let status = outcome.served.unwrap();
    assert_eq!(status.trimmed, 1);
    assert!(status.over_limit);
    let stored = store.load(&zone, SERVED).unwrap().unwrap();
    assert_eq!(stored.diffs, chain(&zone, 110, 119));
    assert_eq!(stored.replay_from, 0);
}

#[test]
fn size_limit_keeps_every_diff_after_keep_from() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    // Diffs 100→101 … 109→110.
    let size = sizes(&store, &zone, 100, 110);
    let max_bytes = size[7] + size[8] + size[9];
    // Version 105 is in the zone file: diffs up to it may go, later ones not.
    let outcome = store
        .commit(
            &zone,
            Commit::new().limit(
                SERVED,
                JournalLimit {
                    max_bytes,
                    keep_from: Some(105),
                },
            ),
        )
        .unwrap();
    let status = outcome.served.unwrap();
    assert_eq!(status.trimmed, 5);
    assert!(status.over_limit);
    let bounds = status.bounds.unwrap();
    assert_eq!(
        (bounds.first_serial, bounds.last_serial, bounds.diff_count),
        (105, 110, 5)
    );

    // The zone file is written at 110: now the limit can be met.
    let outcome = store
        .commit(
            &zone,
            Commit::new().limit(
                SERVED,
                JournalLimit {
                    max_bytes,
                    keep_from: Some(110),
                },
            ),
        )
        .unwrap();
    let status = outcome.served.unwrap();
    assert_eq!(status.trimmed, 2);
    assert!(!status.over_limit);
    assert_eq!(status.bounds.unwrap().first_serial, 107);
    assert_eq!(
        store.diffs_since(&zone, SERVED, 107).unwrap(),
        Some(chain(&zone, 107, 110))
    );

    // The limit stays: a later append trims without being told again.
    let outcome = store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 110, 111)))
        .unwrap();
    let status = outcome.served.unwrap();
    assert_eq!(status.trimmed, 1);
    assert_eq!(status.bounds.unwrap().first_serial, 108);
    // 111 is not in the zone file yet.
    assert!(!status.over_limit);
}

#[test]
fn a_journal_trimmed_to_nothing_still_knows_where_it_ends() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(
            &zone,
            Commit::new().append(SERVED, chain(&zone, 1, 4)).limit(
                SERVED,
                JournalLimit {
                    max_bytes: 0,
                    keep_from: Some(4),
                },
            ),
        )
        .unwrap();
    let bounds = store.journal_bounds(&zone, SERVED).unwrap().unwrap();
    assert_eq!(
        (
            bounds.first_serial,
            bounds.last_serial,
            bounds.diff_count,
            bounds.diff_bytes
        ),
        (4, 4, 0, 0)
    );
    assert_eq!(store.diffs_since(&zone, SERVED, 4).unwrap(), Some(vec![]));
    assert_eq!(store.diffs_since(&zone, SERVED, 3).unwrap(), None);
    let err = store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 7, 8)))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Discontinuous { journal_end: 4, .. }),
        "{err:?}"
    );
    store
        .commit(&zone, Commit::new().append(SERVED, chain(&zone, 4, 5)))
        .unwrap();
    // 5 is not written out: it stays though the limit is 0.
    assert_eq!(
        store.diffs_since(&zone, SERVED, 4).unwrap(),
        Some(chain(&zone, 4, 5))
    );
}

#[test]
fn journal_kinds_are_separate_chains() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(
            &zone,
            Commit::new()
                .journal(
                    UNSIGNED,
                    JournalChange {
                        snapshot: Some(Snapshot::replacement(zone_at(&zone, 7))),
                        diffs: chain(&zone, 7, 9),
                        limit: None,
                    },
                )
                .append(SERVED, chain(&zone, 1000, 1003)),
        )
        .unwrap();
    assert_eq!(
        store.diffs_since(&zone, SERVED, 1000).unwrap(),
        Some(chain(&zone, 1000, 1003))
    );
    assert_eq!(
        store.diffs_since(&zone, UNSIGNED, 7).unwrap(),
        Some(chain(&zone, 7, 9))
    );
    assert_eq!(store.snapshot(&zone, SERVED).unwrap(), None);
    store.clear_journal(&zone, UNSIGNED).unwrap();
    assert_eq!(store.load(&zone, UNSIGNED).unwrap(), None);
    assert_eq!(
        store.diffs_since(&zone, SERVED, 1000).unwrap(),
        Some(chain(&zone, 1000, 1003))
    );
    // A cleared journal starts afresh.
    store
        .commit(&zone, Commit::new().append(UNSIGNED, chain(&zone, 1, 2)))
        .unwrap();
    assert_eq!(
        store.load(&zone, UNSIGNED).unwrap().unwrap().diffs,
        chain(&zone, 1, 2)
    );
}

#[test]
fn timers_and_metadata_read_back_and_go_on_request() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    let timers = ZoneTimers {
        last_refresh: 1_700_000_000,
        next_refresh: 1_700_003_600,
        expire_at: 1_701_209_600,
        last_serial: Some(2024010101),
        primary: Some("192.0.2.1:53".into()),
    };
    store
        .commit(
            &zone,
            Commit::new()
                .set_timers(timers.clone())
                .put_meta("signed-serial", 7u32.to_be_bytes())
                .put_meta("catalog", b"catalog.invalid.".to_vec())
                .put_meta("empty", Vec::new()),
        )
        .unwrap();
    assert_eq!(store.timers(&zone).unwrap(), Some(timers));
    assert_eq!(
        store.get_meta(&zone, "signed-serial").unwrap(),
        Some(vec![0, 0, 0, 7])
    );
    assert_eq!(store.get_meta(&zone, "empty").unwrap(), Some(vec![]));
    assert_eq!(store.get_meta(&zone, "absent").unwrap(), None);
    assert_eq!(
        store.meta(&zone).unwrap(),
        vec![
            ("catalog".to_string(), b"catalog.invalid.".to_vec()),
            ("empty".to_string(), vec![]),
            ("signed-serial".to_string(), vec![0, 0, 0, 7]),
        ]
    );
    store.put_meta(&zone, "catalog", b"other.").unwrap();
    store.delete_meta(&zone, "empty").unwrap();
    assert_eq!(
        store.get_meta(&zone, "catalog").unwrap(),
        Some(b"other.".to_vec())
    );
    assert_eq!(store.get_meta(&zone, "empty").unwrap(), None);
    store.commit(&zone, Commit::new().clear_timers()).unwrap();
    assert_eq!(store.timers(&zone).unwrap(), None);
    // Another zone's metadata is its own.
    assert!(store.meta(&name("sub.example.")).unwrap().is_empty());
}

#[test]
fn zones_lists_every_zone_and_remove_zone_takes_one_whole() {
    let (_dir, store) = temp_store();
    let a = name("example.");
    let child = name("sub.example.");
    let other = name("example.net.");
    let root = name(".");
    store
        .commit(
            &a,
            Commit::new()
                .snapshot(SERVED, Snapshot::replacement(zone_at(&a, 1)))
                .append(SERVED, chain(&a, 1, 3))
                .append(UNSIGNED, chain(&a, 1, 2))
                .set_timers(ZoneTimers::default())
                .put_meta("k", b"v".to_vec()),
        )
        .unwrap();
    store
        .commit(&child, Commit::new().append(SERVED, chain(&child, 1, 3)))
        .unwrap();
    store.put_meta(&other, "k", b"v").unwrap();
    store.put_timers(&root, ZoneTimers::default()).unwrap();
    assert_eq!(
        store.zones().unwrap(),
        vec![root.clone(), a.clone(), child.clone(), other.clone()]
    );

    store.remove_zone(&a).unwrap();
    assert_eq!(
        store.zones().unwrap(),
        vec![root, child.clone(), other.clone()]
    );
    assert_eq!(store.load(&a, SERVED).unwrap(), None);
    assert_eq!(store.load(&a, UNSIGNED).unwrap(), None);
    assert_eq!(store.timers(&a).unwrap(), None);
    assert!(store.meta(&a).unwrap().is_empty());
    assert_eq!(
        store.diffs_since(&child, SERVED, 1).unwrap(),
        Some(chain(&child, 1, 3))
    );
    assert_eq!(store.get_meta(&other, "k").unwrap(), Some(b"v".to_vec()));
    // Removing a zone with nothing stored is no error.
    store.remove_zone(&name("absent.")).unwrap();
}
