//! TTL values in master files: seconds, or BIND's unit form (`1h30m`, `2d`, `1w`).

/// RFC 2181 §8: a TTL is an unsigned 31-bit number; larger values are not sent.
pub const MAX_TTL: u32 = 0x7fff_ffff;

/// Why a TTL was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlError {
    /// Not digits, or digits with a unit other than s, m, h, d, w.
    Syntax,
    /// Above [`MAX_TTL`].
    TooLarge,
}

impl TtlError {
    pub fn message(self, text: &str) -> String {
        match self {
            TtlError::Syntax => format!(
                "bad TTL \"{text}\": expected seconds or units such as 1h30m (s, m, h, d, w)"
            ),
            TtlError::TooLarge => {
                format!("TTL {text} is above {MAX_TTL} (RFC 2181 §8)")
            }
        }
    }
}

/// Whether `text` is meant as a TTL rather than a class or a type: TTLs, and only
/// they, start with a digit (type and class names start with a letter).
pub fn looks_like_ttl(text: &[u8]) -> bool {
    text.first().is_some_and(u8::is_ascii_digit)
}

fn unit_seconds(unit: u8) -> Option<u64> {
    match unit.to_ascii_lowercase() {
        b's' => Some(1),
        b'm' => Some(60),
        b'h' => Some(3600),
        b'd' => Some(86_400),
        b'w' => Some(604_800),
        _ => None,
    }
}

/// Parses a TTL: plain decimal seconds, or one or more `<number><unit>` pairs in
/// any order (BIND's form, units case-insensitive). A number without a unit after
/// a unit (`1h30`) is rejected, as BIND does.
pub fn parse_ttl(text: &[u8]) -> Result<u32, TtlError> {
    if text.is_empty() {
        return Err(TtlError::Syntax);
    }
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    let mut any_unit = false;
    for &b in text {
        if b.is_ascii_digit() {
            let d = u64::from(b.saturating_sub(b'0'));
            let n = number
                .unwrap_or(0)
                .checked_mul(10)
                .and_then(|n| n.checked_add(d))
                .ok_or(TtlError::TooLarge)?;
            number = Some(n.min(u64::from(u32::MAX).saturating_add(1)));
        } else {
            let secs = unit_seconds(b).ok_or(TtlError::Syntax)?;
            let n = number.take().ok_or(TtlError::Syntax)?;
            total = total.saturating_add(n.saturating_mul(secs));
            any_unit = true;
        }
    }
    match number {
        Some(n) if !any_unit => total = n,
        Some(_) => return Err(TtlError::Syntax),
        None => {}
    }
    if total > u64::from(MAX_TTL) {
        return Err(TtlError::TooLarge);
    }
    u32::try_from(total).map_err(|_| TtlError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_seconds_and_bind_units() {
        assert_eq!(parse_ttl(b"0"), Ok(0));
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1W2D"), Ok(604_800 + 2 * 86_400));
        assert_eq!(parse_ttl(b"2d"), Ok(172_800));
        assert_eq!(parse_ttl(b"1h1h"), Ok(7200));
        assert_eq!(parse_ttl(b"90s"), Ok(90));
        assert_eq!(parse_ttl(b"2147483647"), Ok(MAX_TTL));
    }

    #[test]
    fn malformed_or_oversized_ttls_are_rejected() {
        assert_eq!(parse_ttl(b""), Err(TtlError::Syntax));
        assert_eq!(parse_ttl(b"1h30"), Err(TtlError::Syntax));
        assert_eq!(parse_ttl(b"h"), Err(TtlError::Syntax));
        assert_eq!(parse_ttl(b"1y"), Err(TtlError::Syntax));
        assert_eq!(parse_ttl(b"-1"), Err(TtlError::Syntax));
        assert_eq!(parse_ttl(b"2147483648"), Err(TtlError::TooLarge));
        assert_eq!(
            parse_ttl(b"99999999999999999999999"),
            Err(TtlError::TooLarge)
        );
        assert_eq!(parse_ttl(b"4000w"), Err(TtlError::TooLarge));
    }
}
