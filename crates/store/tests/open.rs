//! Opening the store: what survives a reopen, and the errors a wrong file gives.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use bulwark_store::{Commit, JournalKind, JournalLimit, Snapshot, Store, StoreError, ZoneTimers};
use common::*;

#[test]
fn reopened_store_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    let zone = name("example.");
    let timers = ZoneTimers {
        last_refresh: 10,
        next_refresh: 20,
        expire_at: 30,
        last_serial: Some(5),
        primary: Some("192.0.2.1".into()),
    };
    let limit = JournalLimit {
        max_bytes: 1 << 20,
        keep_from: Some(3),
    };
    let (served, unsigned, bounds) = {
        let store = Store::open(&path).unwrap();
        store
            .commit(
                &zone,
                Commit::new()
                    .snapshot(
                        JournalKind::Served,
                        Snapshot::replacement(zone_at(&zone, 1)),
                    )
                    .append(JournalKind::Served, chain(&zone, 1, 5))
                    .limit(JournalKind::Served, limit)
                    .append(JournalKind::Unsigned, chain(&zone, 40, 41))
                    .set_timers(timers.clone())
                    .put_meta("k", b"v".to_vec()),
            )
            .unwrap();
        (
            store.load(&zone, JournalKind::Served).unwrap(),
            store.load(&zone, JournalKind::Unsigned).unwrap(),
            store.journal_bounds(&zone, JournalKind::Served).unwrap(),
        )
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(store.load(&zone, JournalKind::Served).unwrap(), served);
    assert_eq!(store.load(&zone, JournalKind::Unsigned).unwrap(), unsigned);
    let reopened = store.journal_bounds(&zone, JournalKind::Served).unwrap();
    assert_eq!(reopened, bounds);
    assert_eq!(reopened.unwrap().limit, Some(limit));
    assert_eq!(store.timers(&zone).unwrap(), Some(timers));
    assert_eq!(store.get_meta(&zone, "k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(store.zones().unwrap(), vec![zone.clone()]);
    // And goes on from where it was.
    store
        .commit(
            &zone,
            Commit::new().append(JournalKind::Served, chain(&zone, 5, 6)),
        )
        .unwrap();
}

#[test]
fn second_open_while_open_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    let first = Store::open(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    match &err {
        StoreError::Locked { path: p } => assert_eq!(p, &path),
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("already open"), "{text}");
    drop(first);
    Store::open(&path).unwrap();
}

#[test]
fn a_file_that_is_not_a_store_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zone.txt");
    std::fs::write(&path, "example. 3600 IN SOA ns hostmaster 1 2 3 4 5\n").unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("not a bulwark store"), "{text}");
    // The file is left as it was.
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("example."));
}

#[test]
fn an_empty_file_becomes_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    std::fs::write(&path, "").unwrap();
    let store = Store::open(&path).unwrap();
    assert!(store.zones().unwrap().is_empty());
}

#[test]
fn a_store_in_a_missing_directory_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("bulwark.redb");
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn a_store_of_a_newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    drop(Store::open(&path).unwrap());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("layout");
            let mut table = txn.open_table(def).unwrap();
            table
                .insert(b"layout".as_slice(), [2u8].as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::UnsupportedLayout {
                version: 2,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_store_is_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Store>();
    let (_dir, store) = temp_store();
    let zone = name("example.");
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let store = &store;
            let zone = name(&format!("z{t}.example."));
            s.spawn(move || {
                store
                    .commit(
                        &zone,
                        Commit::new().append(JournalKind::Served, chain(&zone, 1, 20)),
                    )
                    .unwrap();
            });
        }
    });
    assert_eq!(store.zones().unwrap().len(), 2);
    assert_eq!(store.load(&zone, JournalKind::Served).unwrap(), None);
}

#[test]
fn an_empty_change_leaves_nothing_behind() {
    let (_dir, store) = temp_store();
    let zone = name("example.");
    store
        .commit(
            &zone,
            Commit::new().journal(JournalKind::Served, Default::default()),
        )
        .unwrap();
    assert!(store.zones().unwrap().is_empty());
    // A limit alone is kept, though the journal holds nothing to read.
    let limit = JournalLimit {
        max_bytes: 10,
        keep_from: None,
    };
    store
        .commit(&zone, Commit::new().limit(JournalKind::Served, limit))
        .unwrap();
    assert_eq!(store.load(&zone, JournalKind::Served).unwrap(), None);
    assert_eq!(
        store.journal_bounds(&zone, JournalKind::Served).unwrap(),
        None
    );
    let outcome = store
        .commit(
            &zone,
            Commit::new().append(JournalKind::Served, chain(&zone, 1, 4)),
        )
        .unwrap();
    // No snapshot, no keep_from: nothing may go.
    assert!(outcome.over_limit(JournalKind::Served));
    assert_eq!(outcome.served.unwrap().bounds.unwrap().limit, Some(limit));
}
