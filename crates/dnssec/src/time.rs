//! DNSSEC times: RRSIG's 32-bit serial-number seconds (RFC 4034 §3.1.5) and the
//! YYYYMMDDHHmmSS form of key files, both from Unix seconds given by the caller.

/// RFC 4034 §3.1.5: seconds since 1970 modulo 2^32, compared by serial arithmetic.
pub fn rrsig_time(unix_seconds: u64) -> u32 {
    // Truncation is the definition: the field wraps every 136 years.
    (unix_seconds & 0xffff_ffff) as u32
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (H. Hinnant's civil_from_days).
// Inputs are days from a u64 of seconds, far from i64's limits.
#[allow(clippy::arithmetic_side_effects)]
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[allow(clippy::arithmetic_side_effects)]
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYYMMDDHHmmSS` in UTC.
#[allow(clippy::arithmetic_side_effects)]
pub fn format_timestamp(unix_seconds: u64) -> String {
    let days = i64::try_from(unix_seconds / 86_400).unwrap_or(0);
    let rest = unix_seconds % 86_400; // % of a non-zero constant cannot overflow
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Reads `YYYYMMDDHHmmSS` (UTC); None when malformed.
#[allow(clippy::arithmetic_side_effects)] // hour, minute, second are checked small
pub fn parse_timestamp(text: &str) -> Option<u64> {
    if text.len() != 14 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| text.get(range)?.parse::<u32>().ok();
    let (year, month, day) = (field(0..4)?, field(4..6)?, field(6..8)?);
    let (hour, minute, second) = (field(8..10)?, field(10..12)?, field(12..14)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let days = u64::try_from(days_from_civil(i64::from(year), month, day)).ok()?;
    let seconds = u64::from(hour * 3600 + minute * 60 + second);
    days.checked_mul(86_400)?.checked_add(seconds)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timestamps_round_trip_and_match_known_dates() {
        assert_eq!(format_timestamp(0), "19700101000000");
        // 2026-11-24 10:48:57 UTC.
        assert_eq!(format_timestamp(1_795_517_337), "20261124104857");
        assert_eq!(parse_timestamp("20261124104857"), Some(1_795_517_337));
        assert_eq!(parse_timestamp("20000229120000"), Some(951_825_600));
        for t in [0u64, 951_825_600, 1_795_517_337, 4_102_444_800] {
            assert_eq!(parse_timestamp(&format_timestamp(t)), Some(t));
        }
        assert_eq!(parse_timestamp("2026112410485"), None);
        assert_eq!(parse_timestamp("20261324104857"), None);
        assert_eq!(parse_timestamp("2026112410485x"), None);
    }

    #[test]
    fn rrsig_time_wraps() {
        assert_eq!(rrsig_time(1 << 32), 0);
        assert_eq!(rrsig_time(5), 5);
    }
}
