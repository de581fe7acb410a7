//! Crash safety: a child process commits in a loop and is killed with
//! SIGKILL at a random moment. Every commit it reported as returned must be
//! in the store when it is opened again, whole, with the journal chain intact.
//!
//! The child is this test binary run again with [`CHILD_ENV`] set, running
//! only [`crash_child`]. It prints `committed N` after each `commit` returns
//! and flushes; the parent reads those lines (no sleeps) and kills it after a
//! random number of them, then reads what was printed before the signal.
//!
//! SIGKILL ends the process, not the machine: what this proves is that a
//! commit is complete when it returns and that a torn one is rolled back on
//! open. That the data also reached the disk rests on redb's `fsync` before
//! `commit` returns.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

mod common;

use std::hash::BuildHasher;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use bulwark_proto::Name;
use bulwark_store::{Commit, JournalKind, JournalLimit, Snapshot, Store, ZoneTimers};
use common::*;

const CHILD_ENV: &str = "BULWARK_STORE_CRASH_CHILD";
const FIRST_SERIAL: u32 = 1000;
/// The child stops by itself after this many commits if never killed.
const CHILD_MAX_COMMITS: u32 = 10_000;
const ROUNDS: usize = 5;
const MAX_COMMITS_BEFORE_KILL: u64 = 60;

fn zone() -> Name {
    name("example.")
}

fn timers_at(serial: u32) -> ZoneTimers {
    ZoneTimers {
        last_refresh: u64::from(serial),
        next_refresh: u64::from(serial) + 3600,
        expire_at: u64::from(serial) + 1_209_600,
        last_serial: Some(serial),
        primary: Some("192.0.2.1".into()),
    }
}

/// The body of the child process; returns at once in a normal test run.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let zone = zone();
    let store = Store::open(&path).unwrap();
    let mut end = store
        .journal_bounds(&zone, JournalKind::Served)
        .unwrap()
        .map_or(FIRST_SERIAL, |b| b.last_serial);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for _ in 0..CHILD_MAX_COMMITS {
        let next = end + 1;
        let mut commit = Commit::new();
        // Every 8th version also compacts, so snapshots are rewritten and
        // the limit trims the history before them.
        if end % 8 == 0 {
            commit = commit.snapshot(
                JournalKind::Served,
                Snapshot::compaction(zone_at(&zone, end)),
            );
        }
        commit = commit
            .append(JournalKind::Served, [step(&zone, end)])
            .append(JournalKind::Unsigned, [step(&zone, end)])
            .limit(
                JournalKind::Served,
                JournalLimit {
                    max_bytes: 2000,
                    keep_from: None,
                },
            )
            .set_timers(timers_at(next))
            .put_meta("serial", next.to_be_bytes());
        store.commit(&zone, commit).unwrap();
        writeln!(out, "committed {next}").unwrap();
        out.flush().unwrap();
        end = next;
    }
}

/// Checks the store holds every version up to `reported` (and at most one
/// more: a commit that returned before its line was printed), whole.
fn check_store(path: &Path, reported: u32) -> u32 {
    let zone = zone();
    let store = Store::open(path).unwrap();
    let served = store
        .journal_bounds(&zone, JournalKind::Served)
        .unwrap()
        .unwrap();
    let last = served.last_serial;
    assert!(
        last == reported || last == reported + 1,
        "the store ends at {last}, the child reported {reported}"
    );
    // One transaction: the other journal, the timers and the metadata are
    // at the same version.
    let unsigned = store
        .journal_bounds(&zone, JournalKind::Unsigned)
        .unwrap()
        .unwrap();
    assert_eq!(unsigned.last_serial, last);
    assert_eq!(store.timers(&zone).unwrap(), Some(timers_at(last)));
    assert_eq!(
        store.get_meta(&zone, "serial").unwrap(),
        Some(last.to_be_bytes().to_vec())
    );

    // The served journal: a snapshot every 8 versions, diffs trimmed before it.
    let journal = store.load(&zone, JournalKind::Served).unwrap().unwrap();
    let first = served.first_serial;
    assert_eq!(journal.diffs, chain(&zone, first, last));
    if let Some(s) = journal.snapshot_serial {
        assert_eq!(journal.snapshot, Some(zone_at(&zone, s)));
        assert_eq!(
            journal.diffs[journal.replay_from..],
            chain(&zone, s, last)[..],
            "the diffs after the snapshot at {s}"
        );
    }
    assert_eq!(
        store
            .diffs_since(&zone, JournalKind::Served, first)
            .unwrap(),
        Some(chain(&zone, first, last))
    );
    // The unsigned journal has no limit: every version since the start.
    let journal = store.load(&zone, JournalKind::Unsigned).unwrap().unwrap();
    assert_eq!(journal.diffs, chain(&zone, FIRST_SERIAL, last));
    last
}

#[test]
fn every_commit_that_returned_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bulwark.redb");
    let exe = std::env::current_exe().unwrap();
    let random = std::collections::hash_map::RandomState::new();
    let mut end = FIRST_SERIAL;
    for round in 0..ROUNDS {
        let kill_after = 1 + random.hash_one(round) % MAX_COMMITS_BEFORE_KILL;
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut reported = end;
        let mut seen = 0u64;
        let mut killed = false;
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            // libtest may print its own words before the first line.
            let Some((_, serial)) = line.split_once("committed ") else {
                continue;
            };
            let serial: u32 = serial.parse().unwrap();
            assert_eq!(
                serial,
                reported + 1,
                "the child commits one version at a time"
            );
            reported = serial;
            seen += 1;
            if seen == kill_after && !killed {
                // SIGKILL: no destructor, no flush, the commit under way torn.
                child.kill().unwrap();
                killed = true;
            }
            // Reading on after the kill collects what was printed before it.
        }
        let status = child.wait().unwrap();
        assert!(
            killed,
            "round {round}: the child ended after {seen} commits: {status}"
        );
        assert!(!status.success(), "round {round}: {status}");
        end = check_store(&path, reported);
        eprintln!(
            "round {round}: killed after {kill_after} reported commits; {seen} reported in all, the store ends at {end}"
        );
    }
}
