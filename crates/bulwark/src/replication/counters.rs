//! Replication totals since start, for `ctl stats` and Prometheus (see
//! docs/metrics.md). Transfers, NOTIFYs and updates are rare next to
//! queries, so shared atomics cost nothing that matters.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct ReplicationCounters {
    pub axfr_out: AtomicU64,
    pub ixfr_out: AtomicU64,
    /// Transfers refused by ACL or key.
    pub transfers_refused: AtomicU64,
    pub axfr_in: AtomicU64,
    pub ixfr_in: AtomicU64,
    /// Refresh attempts from one primary that failed.
    pub refresh_failures: AtomicU64,
    pub notify_received: AtomicU64,
    pub notify_refused: AtomicU64,
    pub notify_acknowledged: AtomicU64,
    /// NOTIFYs never acknowledged after every retry.
    pub notify_unanswered: AtomicU64,
    pub updates_applied: AtomicU64,
    /// Refused by ACL or key, or for want of storage.
    pub updates_refused: AtomicU64,
    /// Answered with an error rcode (prerequisites, FORMERR, SERVFAIL...).
    pub updates_failed: AtomicU64,
}

pub static COUNTERS: ReplicationCounters = ReplicationCounters {
    axfr_out: AtomicU64::new(0),
    ixfr_out: AtomicU64::new(0),
    transfers_refused: AtomicU64::new(0),
    axfr_in: AtomicU64::new(0),
    ixfr_in: AtomicU64::new(0),
    refresh_failures: AtomicU64::new(0),
    notify_received: AtomicU64::new(0),
    notify_refused: AtomicU64::new(0),
    notify_acknowledged: AtomicU64::new(0),
    notify_unanswered: AtomicU64::new(0),
    updates_applied: AtomicU64::new(0),
    updates_refused: AtomicU64::new(0),
    updates_failed: AtomicU64::new(0),
};

/// Adds one to `counter`.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
