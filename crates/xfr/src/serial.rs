//! SOA serial numbers: RFC 1982 arithmetic (serials wrap around 2^32, so
//! "newer" is a comparison on a circle) and the policies a server uses to pick
//! the next serial after a change.

use core::cmp::Ordering;

/// RFC 1982 §3.2: `a` compared with `b` in serial number arithmetic. Two
/// serials exactly 2^31 apart are not ordered (`None`).
pub fn serial_cmp(a: u32, b: u32) -> Option<Ordering> {
    if a == b {
        return Some(Ordering::Equal);
    }
    let diff = a.wrapping_sub(b);
    match diff.cmp(&0x8000_0000) {
        Ordering::Less => Some(Ordering::Greater),
        Ordering::Greater => Some(Ordering::Less),
        Ordering::Equal => None,
    }
}

/// Whether `a` is newer than `b` (RFC 1982 §3.2).
pub fn serial_gt(a: u32, b: u32) -> bool {
    serial_cmp(a, b) == Some(Ordering::Greater)
}

/// How a server picks the serial of the next version of a zone it changes
/// (after a dynamic update, or when it re-signs), as Knot's `serial-policy`
/// and BIND's `serial-update-method` name them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SerialPolicy {
    /// The old serial plus one.
    #[default]
    Increment,
    /// Seconds since the Unix epoch, or the old serial plus one if that is
    /// not newer.
    UnixTime,
    /// `YYYYMMDDnn` of the current UTC date, or the old serial plus one if
    /// that is not newer (the date's 100 changes are used up).
    DateSerial,
}

impl SerialPolicy {
    /// The policy named `increment`, `unixtime` or `dateserial`.
    pub fn from_name(name: &str) -> Option<SerialPolicy> {
        match name {
            "increment" => Some(SerialPolicy::Increment),
            "unixtime" => Some(SerialPolicy::UnixTime),
            "dateserial" => Some(SerialPolicy::DateSerial),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SerialPolicy::Increment => "increment",
            SerialPolicy::UnixTime => "unixtime",
            SerialPolicy::DateSerial => "dateserial",
        }
    }

    /// The serial after `old`, at Unix time `now`; always newer than `old`
    /// (RFC 1982 §3.1: adding one is always allowed, and 0 is skipped as
    /// some secondaries treat it as "no zone").
    pub fn next(self, old: u32, now: u64) -> u32 {
        let plus_one = match old.wrapping_add(1) {
            0 => 1,
            n => n,
        };
        let candidate = match self {
            SerialPolicy::Increment => return plus_one,
            SerialPolicy::UnixTime => u32::try_from(now).unwrap_or(u32::MAX),
            SerialPolicy::DateSerial => date_serial(now),
        };
        if serial_gt(candidate, old) {
            candidate
        } else {
            plus_one
        }
    }
}

/// `YYYYMMDD00` for the UTC day of `now` (civil-from-days, proleptic
/// Gregorian), saturating past the year 4294.
fn date_serial(now: u64) -> u32 {
    let days = now / 86_400;
    let (y, m, d) = civil_from_days(days);
    let v = y
        .saturating_mul(1_000_000)
        .saturating_add(m.saturating_mul(10_000))
        .saturating_add(d.saturating_mul(100));
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Howard Hinnant's days-to-civil algorithm for days since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days.saturating_add(719_468);
    let era = z / 146_097;
    let doe = z.saturating_sub(era.saturating_mul(146_097));
    let yoe = doe
        .saturating_sub(doe / 1460)
        .saturating_add(doe / 36_524)
        .saturating_sub(doe / 146_096)
        / 365;
    let y = yoe.saturating_add(era.saturating_mul(400));
    let doy = doe.saturating_sub(
        yoe.saturating_mul(365)
            .saturating_add(yoe / 4)
            .saturating_sub(yoe / 100),
    );
    let mp = doy.saturating_mul(5).saturating_add(2) / 153;
    let d = doy
        .saturating_sub(mp.saturating_mul(153).saturating_add(2) / 5)
        .saturating_add(1);
    let m = if mp < 10 {
        mp.saturating_add(3)
    } else {
        mp.saturating_sub(9)
    };
    let y = if m <= 2 { y.saturating_add(1) } else { y };
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_comparison_wraps_around() {
        assert!(serial_gt(2, 1));
        assert!(serial_gt(0, u32::MAX));
        assert!(serial_gt(5, 0xffff_fff0));
        assert!(!serial_gt(1, 2));
        assert_eq!(serial_cmp(0, 0x8000_0000), None);
        assert_eq!(serial_cmp(7, 7), Some(Ordering::Equal));
    }

    #[test]
    fn increment_skips_zero() {
        assert_eq!(SerialPolicy::Increment.next(41, 0), 42);
        assert_eq!(SerialPolicy::Increment.next(u32::MAX, 0), 1);
    }

    #[test]
    fn unixtime_uses_the_clock_unless_the_serial_is_ahead() {
        assert_eq!(SerialPolicy::UnixTime.next(5, 1_700_000_000), 1_700_000_000);
        assert_eq!(
            SerialPolicy::UnixTime.next(1_800_000_000, 1_700_000_000),
            1_800_000_001
        );
    }

    #[test]
    fn dateserial_counts_changes_within_a_day() {
        // 2026-11-24 12:00 UTC.
        let now = 1_795_521_600;
        assert_eq!(date_serial(now), 2_026_112_400);
        assert_eq!(SerialPolicy::DateSerial.next(1, now), 2_026_112_400);
        assert_eq!(
            SerialPolicy::DateSerial.next(2_026_112_400, now),
            2_026_112_401
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn policies_have_their_config_names() {
        for p in [
            SerialPolicy::Increment,
            SerialPolicy::UnixTime,
            SerialPolicy::DateSerial,
        ] {
            assert_eq!(SerialPolicy::from_name(p.name()), Some(p));
        }
        assert_eq!(SerialPolicy::from_name("random"), None);
    }
}
