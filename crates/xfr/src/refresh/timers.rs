//! A secondary's SOA timers (RFC 1034 §4.3.5; RFC 1912 §2.2 on their
//! values): when to ask again, when to give up on a copy, bounded against
//! values a primary may get wrong.

use bulwark_proto::rdata::Soa;

/// Retries of a zone never transferred start here and double up to
/// [`MAX_FIRST_RETRY`]: a new secondary should not wait a whole SOA RETRY
/// for a primary that was merely starting.
pub const FIRST_RETRY: u64 = 1;
pub const MAX_FIRST_RETRY: u64 = 60;
/// Bounds on the SOA timers a primary may set, as Knot's
/// `refresh-min-interval`/`refresh-max-interval` do: a REFRESH of 0 must not
/// make a busy loop, one of years must not leave a zone stale for years.
pub const MIN_INTERVAL: u64 = 2;
pub const MAX_INTERVAL: u64 = 86_400;

/// Where a secondary zone stands with its primaries (Unix seconds), kept
/// by the server so a restart goes on where it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timers {
    /// When the copy was last confirmed current with a primary.
    pub last_refresh: u64,
    /// When to check the primary's serial next (SOA REFRESH or RETRY on).
    pub next_refresh: u64,
    /// RFC 1034 §4.3.5: when the zone stops being served unless refreshed
    /// (SOA EXPIRE after the last successful refresh); 0: never set.
    pub expire_at: u64,
    /// The serial of the copy held, once one was transferred.
    pub last_serial: Option<u32>,
    /// The primary the copy came from (its address).
    pub primary: Option<String>,
}

/// An SOA timer in seconds, within [`MIN_INTERVAL`] and [`MAX_INTERVAL`].
pub fn clamp(seconds: u32) -> u64 {
    u64::from(seconds).clamp(MIN_INTERVAL, MAX_INTERVAL)
}

impl Timers {
    /// A refresh at `now` confirmed the copy whose SOA is `soa`, from
    /// `primary`: next check after its REFRESH, expiry after its EXPIRE
    /// (never before the next check).
    pub fn refreshed(&mut self, soa: &Soa, now: u64, primary: String) {
        self.last_refresh = now;
        self.next_refresh = now.saturating_add(clamp(soa.refresh));
        self.expire_at = now.saturating_add(clamp(soa.expire).max(clamp(soa.refresh)));
        self.last_serial = Some(soa.serial);
        self.primary = Some(primary);
    }

    /// Whether the copy has expired at `now` (RFC 1034 §4.3.5).
    pub fn expired(&self, now: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now
    }
}

/// `seconds` plus up to a quarter more, from `random`: zones that failed
/// together must not all retry together. Without randomness, no jitter.
pub fn jittered(seconds: u64, random: Option<u16>) -> u64 {
    let spread = seconds / 4;
    if spread == 0 {
        return seconds;
    }
    let r = random.map_or(0, u64::from);
    seconds.saturating_add(r.checked_rem(spread.saturating_add(1)).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_are_clamped() {
        assert_eq!(clamp(0), MIN_INTERVAL);
        assert_eq!(clamp(300), 300);
        assert_eq!(clamp(u32::MAX), MAX_INTERVAL);
    }

    #[test]
    fn jitter_adds_at_most_a_quarter() {
        assert_eq!(jittered(3, Some(u16::MAX)), 3);
        assert_eq!(jittered(100, None), 100);
        for r in [0, 1, 24, 25, 26, 1000, u16::MAX] {
            let j = jittered(100, Some(r));
            assert!((100..=125).contains(&j), "{r}: {j}");
        }
        assert_eq!(jittered(100, Some(25)), 125);
        assert_eq!(jittered(100, Some(26)), 100);
    }
}
