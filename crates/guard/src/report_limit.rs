//! How many log lines one kind of per-packet event may write: a few per
//! second, the rest counted and summed up later. Anyone on the internet can
//! send a packet that earns a diagnostic (a bad TSIG, a refused transfer), so
//! a log line per packet would let any sender fill the disk; counts in the
//! metrics keep the full picture instead.
//!
//! Shared by every thread that answers, so the state is atomics; time comes
//! in as whole seconds, like the rest of this crate.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Log lines a kind may write in one second unless configured otherwise:
/// enough to see who is at it, too few to matter on disk (5 per second is
/// under 500,000 lines a day at worst, per kind).
pub const DEFAULT_LINES_PER_SECOND: u32 = 5;

/// The rate limit of one kind of event's log lines.
#[derive(Debug)]
pub struct ReportLimit {
    lines_per_second: u32,
    /// The second the `lines` count belongs to.
    second: AtomicU64,
    lines: AtomicU32,
    /// Events seen, logged or not.
    events: AtomicU64,
    /// Events not logged since the last [`ReportLimit::take_suppressed`].
    suppressed: AtomicU64,
    suppressed_total: AtomicU64,
}

impl ReportLimit {
    /// A limit of `lines_per_second` lines in each whole second.
    pub const fn new(lines_per_second: u32) -> ReportLimit {
        ReportLimit {
            lines_per_second,
            second: AtomicU64::new(0),
            lines: AtomicU32::new(0),
            events: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            suppressed_total: AtomicU64::new(0),
        }
    }

    /// Counts one event at `now` (Unix seconds) and says whether its line
    /// may be written.
    pub fn admit(&self, now: u64) -> bool {
        self.events.fetch_add(1, Ordering::Relaxed);
        let second = self.second.load(Ordering::Relaxed);
        if now != second
            && self
                .second
                .compare_exchange(second, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // A new second: this event is its first line. Threads racing on
            // the turn of a second may let a line or two more through; the
            // bound stays a small multiple of the limit.
            self.lines.store(1, Ordering::Relaxed);
            return self.lines_per_second > 0 || self.suppress();
        }
        let used = self.lines.fetch_add(1, Ordering::Relaxed);
        if used < self.lines_per_second {
            return true;
        }
        self.suppress()
    }

    fn suppress(&self) -> bool {
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        self.suppressed_total.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Events left out of the log since the last call (for a summary line).
    pub fn take_suppressed(&self) -> u64 {
        self.suppressed.swap(0, Ordering::Relaxed)
    }

    /// Every event counted, logged or not.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Every event left out of the log.
    pub fn suppressed_total(&self) -> u64 {
        self.suppressed_total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing
    )]
    use super::*;

    #[test]
    fn at_most_the_limit_is_logged_each_second_and_everything_is_counted() {
        let limit = ReportLimit::new(3);
        let logged: Vec<bool> = (0..10).map(|_| limit.admit(100)).collect();
        assert_eq!(logged.iter().filter(|l| **l).count(), 3);
        assert!(logged[..3].iter().all(|l| *l), "the first three");
        assert_eq!(limit.events(), 10);
        assert_eq!(limit.take_suppressed(), 7);
        assert_eq!(limit.take_suppressed(), 0, "taken once");
        // The next second starts afresh.
        let next = (0..10).filter(|_| limit.admit(101)).count();
        assert_eq!(next, 3);
        assert_eq!(limit.events(), 20);
        assert_eq!(limit.suppressed_total(), 14);
    }

    #[test]
    fn a_second_going_back_also_starts_afresh() {
        // The clock may step back; a changed second is a new window either way.
        let limit = ReportLimit::new(1);
        assert!(limit.admit(200));
        assert!(!limit.admit(200));
        assert!(limit.admit(199));
    }

    #[test]
    fn a_limit_of_zero_logs_nothing_but_counts_everything() {
        let limit = ReportLimit::new(0);
        assert!((0..5).all(|i| !limit.admit(i)));
        assert_eq!(limit.events(), 5);
        assert_eq!(limit.take_suppressed(), 5);
    }

    #[test]
    fn many_threads_at_once_stay_near_the_limit() {
        let limit = std::sync::Arc::new(ReportLimit::new(5));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = std::sync::Arc::clone(&limit);
                std::thread::spawn(move || (0..10_000).filter(|_| l.admit(7)).count())
            })
            .collect();
        let logged: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!((1..=5 + 4).contains(&logged), "{logged}");
        assert_eq!(limit.events(), 40_000);
        assert_eq!(limit.suppressed_total(), 40_000 - logged as u64);
    }
}
