//! A coarse wall clock for the query path: Unix seconds in one atomic, advanced
//! by a background task, so a query pays a relaxed load instead of a clock read.
//! Cookies (RFC 9018 timestamps) and rate limiting need only whole seconds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bulwark_net::Shutdown;

/// How often the clock is advanced: well under the one-second resolution used.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct CoarseClock(Arc<AtomicU64>);

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl CoarseClock {
    /// A clock set to the current time (it stays there until [`CoarseClock::run`]).
    pub fn new() -> CoarseClock {
        CoarseClock(Arc::new(AtomicU64::new(unix_now())))
    }

    /// Unix seconds, at most one tick old.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Advances the clock until shutdown.
    pub async fn run(self, shutdown: Shutdown) {
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                _ = ticks.tick() => self.0.store(unix_now(), Ordering::Relaxed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_clock_reads_the_current_time() {
        let before = unix_now();
        let clock = CoarseClock::new();
        assert!(clock.now() >= before && clock.now() <= unix_now());
    }
}
