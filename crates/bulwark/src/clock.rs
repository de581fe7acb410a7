//! A coarse wall clock for the query path: Unix seconds in one atomic, advanced
//! by a background task, so a query pays a relaxed load instead of a clock read.
//! Cookies (RFC 9018 timestamps) and rate limiting need only whole seconds;
//! the resolver reads milliseconds ([`CoarseClock::now_ms`]), off the hot path.
//!
//! For scenario tests the clock can run ahead of the real one: started at a
//! given time (`serve --test-clock`) and moved forward by the control socket
//! (`ctl test-clock advance`), so TTLs expire without waiting. The offset is
//! zero otherwise.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bulwark_net::Shutdown;

/// How often the clock is advanced: well under the one-second resolution used.
const TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct CoarseClock {
    seconds: Arc<AtomicU64>,
    /// Milliseconds added to the real time (test clocks only).
    offset_ms: Arc<AtomicI64>,
}

fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl CoarseClock {
    /// A clock set to the current time (it stays there until [`CoarseClock::run`]).
    pub fn new() -> CoarseClock {
        let clock = CoarseClock {
            seconds: Arc::new(AtomicU64::new(0)),
            offset_ms: Arc::new(AtomicI64::new(0)),
        };
        clock.tick();
        clock
    }

    /// A clock that reads `start` (Unix seconds) now and runs on from there.
    pub fn starting_at(start: u64) -> CoarseClock {
        let clock = CoarseClock::new();
        let start_ms = i128::from(start).saturating_mul(1000);
        let offset = start_ms.saturating_sub(i128::from(unix_now_ms()));
        clock
            .offset_ms
            .store(i64::try_from(offset).unwrap_or(0), Ordering::Relaxed);
        clock.tick();
        clock
    }

    /// Moves the clock `seconds` forward.
    pub fn advance(&self, seconds: u64) {
        let ms = i64::try_from(seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
        self.tick();
    }

    /// Unix seconds, at most one tick old.
    pub fn now(&self) -> u64 {
        self.seconds.load(Ordering::Relaxed)
    }

    /// Unix milliseconds, read now.
    pub fn now_ms(&self) -> u64 {
        let real = i128::from(unix_now_ms());
        let t = real.saturating_add(i128::from(self.offset_ms.load(Ordering::Relaxed)));
        u64::try_from(t.max(0)).unwrap_or(u64::MAX)
    }

    fn tick(&self) {
        self.seconds.store(self.now_ms() / 1000, Ordering::Relaxed);
    }

    /// Advances the clock until shutdown.
    pub async fn run(self, shutdown: Shutdown) {
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                _ = ticks.tick() => self.tick(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_clock_reads_the_current_time() {
        let before = unix_now_ms() / 1000;
        let clock = CoarseClock::new();
        assert!(clock.now() >= before && clock.now() <= unix_now_ms() / 1000);
    }

    #[test]
    fn a_test_clock_starts_where_told_and_moves_when_advanced() {
        let clock = CoarseClock::starting_at(1_000_000);
        assert!((1_000_000..1_000_002).contains(&clock.now()));
        clock.advance(3600);
        assert!((1_003_600..1_003_602).contains(&clock.now()));
        assert!(clock.now_ms() / 1000 >= 1_003_600);
        // Clones share the offset: the control socket advances the server's.
        let other = clock.clone();
        other.advance(10);
        assert!(clock.now() >= 1_003_610);
    }
}
