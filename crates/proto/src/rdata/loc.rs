//! LOC record data (RFC 1876): a location as latitude, longitude, altitude,
//! size and precisions. Only version 0 is defined; other versions are kept as
//! generic data by the caller.

use core::fmt;

use super::text::{text_error, Fields};
use crate::rdata::RdataTextError;
use crate::wire::{Reader, WireError};

/// RFC 1876 §2: latitude and longitude are offsets from 2^31 in thousandths of
/// an arc-second; altitude is in centimetres above a base 100 000 m below the
/// WGS 84 reference spheroid.
const EQUATOR: i64 = 1 << 31;
const ALTITUDE_BASE_CM: i64 = 10_000_000;
const MAS_PER_DEGREE: i64 = 3_600_000;
/// RFC 1876 §3 defaults: size 1 m, horizontal precision 10 000 m, vertical 10 m,
/// as mantissa/exponent octets of centimetres.
const DEFAULT_SIZE: u8 = 0x12;
const DEFAULT_HORIZ_PRE: u8 = 0x16;
const DEFAULT_VERT_PRE: u8 = 0x13;

/// LOC version 0 (RFC 1876 §2), fields in wire encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    /// Diameter of the sphere, as a mantissa (high nibble) and power of ten
    /// (low nibble) of centimetres.
    pub size: u8,
    pub horiz_pre: u8,
    pub vert_pre: u8,
    pub latitude: u32,
    pub longitude: u32,
    pub altitude: u32,
}

/// Digits 0-9 each; zero only as `0x00`, so that every value has one encoding
/// and text round trips are exact.
fn precsize_valid(b: u8) -> bool {
    let (m, e) = (b >> 4, b & 0x0f);
    m <= 9 && e <= 9 && (m != 0 || e == 0)
}

fn in_range(v: u32, max_degrees: i64) -> bool {
    let off = i64::from(v).saturating_sub(EQUATOR);
    off.saturating_abs() <= max_degrees.saturating_mul(MAS_PER_DEGREE)
}

impl Loc {
    /// `None` when the version is not 0: the caller keeps such data generic.
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Option<Loc>, WireError> {
        let at = r.position();
        let version = r.read_u8()?;
        if version != 0 {
            return Ok(None);
        }
        let loc = Loc {
            size: r.read_u8()?,
            horiz_pre: r.read_u8()?,
            vert_pre: r.read_u8()?,
            latitude: r.read_u32()?,
            longitude: r.read_u32()?,
            altitude: r.read_u32()?,
        };
        let bad = |what| WireError::BadRdata { at, what };
        if ![loc.size, loc.horiz_pre, loc.vert_pre]
            .into_iter()
            .all(precsize_valid)
        {
            return Err(bad("LOC size or precision not a digit pair"));
        }
        if !in_range(loc.latitude, 90) || !in_range(loc.longitude, 180) {
            return Err(bad("LOC latitude or longitude out of range"));
        }
        Ok(Some(loc))
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[0, self.size, self.horiz_pre, self.vert_pre]);
        out.extend_from_slice(&self.latitude.to_be_bytes());
        out.extend_from_slice(&self.longitude.to_be_bytes());
        out.extend_from_slice(&self.altitude.to_be_bytes());
    }

    /// RFC 1876 §3: `d1 [m1 [s1]] N|S d2 [m2 [s2]] E|W alt[m] [siz[m] [hp[m] [vp[m]]]]`.
    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Loc, RdataTextError> {
        let latitude = parse_coordinate(f, 90, b'N', b'S')?;
        let longitude = parse_coordinate(f, 180, b'E', b'W')?;
        let altitude = parse_altitude(f)?;
        let mut sizes = [DEFAULT_SIZE, DEFAULT_HORIZ_PRE, DEFAULT_VERT_PRE];
        for slot in &mut sizes {
            if f.is_done() {
                break;
            }
            *slot = parse_precsize(f)?;
        }
        let [size, horiz_pre, vert_pre] = sizes;
        Ok(Loc {
            size,
            horiz_pre,
            vert_pre,
            latitude,
            longitude,
            altitude,
        })
    }
}

/// A non-negative decimal with at most `decimals` fraction digits, scaled by
/// 10^decimals; an optional trailing `m` when `unit` is set.
fn parse_fixed(s: &str, decimals: u32, unit: bool) -> Option<u64> {
    let s = if unit {
        s.strip_suffix(['m', 'M']).unwrap_or(s)
    } else {
        s
    };
    let (int, frac) = match s.split_once('.') {
        Some((i, fr)) => (i, fr),
        None => (s, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 12 || !digits(int) || !digits(frac) {
        return None;
    }
    if frac.len() > usize::try_from(decimals).ok()? {
        return None;
    }
    let scale = 10u64.checked_pow(decimals)?;
    let mut v = int.parse::<u64>().ok()?.checked_mul(scale)?;
    if !frac.is_empty() {
        let pad = decimals.checked_sub(u32::try_from(frac.len()).ok()?)?;
        let f = frac
            .parse::<u64>()
            .ok()?
            .checked_mul(10u64.checked_pow(pad)?)?;
        v = v.checked_add(f)?;
    }
    Some(v)
}

fn parse_coordinate(
    f: &mut Fields<'_, '_>,
    max_degrees: u64,
    positive: u8,
    negative: u8,
) -> Result<u32, RdataTextError> {
    let what = if max_degrees == 90 {
        "a latitude (degrees [minutes [seconds]] N or S)"
    } else {
        "a longitude (degrees [minutes [seconds]] E or W)"
    };
    let hemisphere = |raw: &[u8]| -> Option<bool> {
        match raw {
            [c] if c.eq_ignore_ascii_case(&positive) => Some(true),
            [c] if c.eq_ignore_ascii_case(&negative) => Some(false),
            _ => None,
        }
    };
    let start = f.index();
    // Up to three numbers (degrees, minutes, seconds), then the hemisphere.
    let mut parts: [u64; 3] = [0; 3];
    let mut count = 0usize;
    let north = loop {
        let (at, field) = f.next(what)?;
        if count > 0 {
            if let Some(h) = hemisphere(field.raw) {
                break h;
            }
        }
        let s = field.as_str().ok_or_else(|| text_error(at, what))?;
        let (v, limit) = match count {
            0 => (parse_fixed(s, 0, false), max_degrees),
            1 => (parse_fixed(s, 0, false), 59),
            2 => (parse_fixed(s, 3, false), 59_999),
            _ => (None, 0),
        };
        let v = v
            .filter(|&v| v <= limit)
            .ok_or_else(|| text_error(at, what))?;
        if let Some(slot) = parts.get_mut(count) {
            *slot = v;
        }
        count = count.saturating_add(1);
    };
    let [d, m, s] = parts;
    let mas = d
        .saturating_mul(3_600_000)
        .saturating_add(m.saturating_mul(60_000))
        .saturating_add(s);
    if mas > max_degrees.saturating_mul(3_600_000) {
        return Err(text_error(start, what));
    }
    let mas = i64::try_from(mas).map_err(|_| text_error(start, what))?;
    let v = if north {
        EQUATOR.saturating_add(mas)
    } else {
        EQUATOR.saturating_sub(mas)
    };
    u32::try_from(v).map_err(|_| text_error(start, what))
}

fn parse_altitude(f: &mut Fields<'_, '_>) -> Result<u32, RdataTextError> {
    const WHAT: &str = "an altitude in metres (-100000.00 to 42849672.95)";
    let (at, field) = f.next(WHAT)?;
    let s = field.as_str().ok_or_else(|| text_error(at, WHAT))?;
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let cm = parse_fixed(digits, 2, true)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| text_error(at, WHAT))?;
    let cm = if neg { cm.saturating_neg() } else { cm };
    let v = ALTITUDE_BASE_CM.saturating_add(cm);
    u32::try_from(v).map_err(|_| text_error(at, WHAT))
}

/// Metres to the mantissa/exponent octet, truncating as RFC 1876 Appendix A's
/// `precsize_aton` does.
fn parse_precsize(f: &mut Fields<'_, '_>) -> Result<u8, RdataTextError> {
    const WHAT: &str = "a size in metres (0 to 90000000.00)";
    let (at, field) = f.next(WHAT)?;
    let cm = field
        .as_str()
        .and_then(|s| parse_fixed(s, 2, true))
        .filter(|&v| v <= 9_000_000_000)
        .ok_or_else(|| text_error(at, WHAT))?;
    let power = |e: u32| 10u64.checked_pow(e).unwrap_or(u64::MAX);
    let mut exponent = 0u32;
    while exponent < 9 && cm >= power(exponent.saturating_add(1)) {
        exponent = exponent.saturating_add(1);
    }
    let mantissa = cm.checked_div(power(exponent)).unwrap_or(0).min(9);
    let m = u8::try_from(mantissa).map_err(|_| text_error(at, WHAT))?;
    let e = u8::try_from(exponent).map_err(|_| text_error(at, WHAT))?;
    Ok((m << 4) | e)
}

fn write_coordinate(f: &mut fmt::Formatter<'_>, v: u32, pos: char, neg: char) -> fmt::Result {
    let off = i64::from(v).saturating_sub(EQUATOR);
    let hemi = if off < 0 { neg } else { pos };
    let mas = off.saturating_abs();
    let d = mas / MAS_PER_DEGREE;
    let m = mas / 60_000 % 60;
    let s = mas % 60_000;
    write!(f, "{d} {m} {}.{:03} {hemi}", s / 1000, s % 1000)
}

fn write_centimetres(f: &mut fmt::Formatter<'_>, cm: i64) -> fmt::Result {
    let sign = if cm < 0 { "-" } else { "" };
    let a = cm.saturating_abs();
    write!(f, "{sign}{}.{:02}m", a / 100, a % 100)
}

fn precsize_cm(b: u8) -> i64 {
    let mantissa = i64::from(b >> 4);
    mantissa.saturating_mul(10i64.saturating_pow(u32::from(b & 0x0f)))
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_coordinate(f, self.latitude, 'N', 'S')?;
        f.write_str(" ")?;
        write_coordinate(f, self.longitude, 'E', 'W')?;
        f.write_str(" ")?;
        write_centimetres(f, i64::from(self.altitude).saturating_sub(ALTITUDE_BASE_CM))?;
        for b in [self.size, self.horiz_pre, self.vert_pre] {
            f.write_str(" ")?;
            write_centimetres(f, precsize_cm(b))?;
        }
        Ok(())
    }
}
