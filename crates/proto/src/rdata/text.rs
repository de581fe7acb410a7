//! Presentation-format building blocks shared by the record types: a cursor over
//! the rdata fields that names the failing field, character-strings, and the
//! base16/base32hex/base64 encodings (RFC 4648), written here to keep the
//! protocol crate free of dependencies.

use core::fmt;

use crate::name::{parse_escape, Name};
use crate::presentation::Field;
use crate::rdata::RdataTextError;
use crate::rtype::Rtype;

/// RFC 1035 §3.3: a `<character-string>` is at most 255 octets.
pub(crate) const MAX_CHARACTER_STRING: usize = 255;

pub(crate) fn text_error(field: usize, expected: &str) -> RdataTextError {
    RdataTextError {
        field,
        expected: expected.to_owned(),
    }
}

/// Walks the rdata fields in order; every error names the field it happened at.
#[derive(Debug)]
pub(crate) struct Fields<'f, 'a> {
    fields: &'f [Field<'a>],
    pos: usize,
    origin: &'f Name,
}

impl<'f, 'a> Fields<'f, 'a> {
    pub(crate) fn new(fields: &'f [Field<'a>], origin: &'f Name) -> Self {
        Fields {
            fields,
            pos: 0,
            origin,
        }
    }

    /// Index of the next field to be read.
    pub(crate) fn index(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_done(&self) -> bool {
        self.pos >= self.fields.len()
    }

    /// The next field without consuming it.
    pub(crate) fn peek(&self) -> Option<Field<'a>> {
        self.fields.get(self.pos).copied()
    }

    /// The next field, or an error naming what was expected there.
    pub(crate) fn next(&mut self, expected: &str) -> Result<(usize, Field<'a>), RdataTextError> {
        let at = self.pos;
        let f = self
            .fields
            .get(at)
            .copied()
            .ok_or_else(|| text_error(at, expected))?;
        self.pos = at.saturating_add(1);
        Ok((at, f))
    }

    /// The next field as UTF-8 text (numbers, mnemonics, encodings are ASCII).
    fn next_str(&mut self, expected: &str) -> Result<(usize, &'a str), RdataTextError> {
        let (at, f) = self.next(expected)?;
        let s = f.as_str().ok_or_else(|| text_error(at, expected))?;
        Ok((at, s))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, RdataTextError> {
        const WHAT: &str = "an 8-bit integer";
        let (at, s) = self.next_str(WHAT)?;
        parse_decimal(s)
            .and_then(|v| u8::try_from(v).ok())
            .ok_or_else(|| text_error(at, WHAT))
    }

    pub(crate) fn u16(&mut self) -> Result<u16, RdataTextError> {
        const WHAT: &str = "a 16-bit integer";
        let (at, s) = self.next_str(WHAT)?;
        parse_decimal(s)
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| text_error(at, WHAT))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, RdataTextError> {
        const WHAT: &str = "a 32-bit integer";
        let (at, s) = self.next_str(WHAT)?;
        parse_decimal(s)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| text_error(at, WHAT))
    }

    /// A time in seconds, plain or with BIND-style units (`1h30m`, `2w`), as all
    /// of BIND, Knot and NSD accept in SOA timers.
    pub(crate) fn duration(&mut self) -> Result<u32, RdataTextError> {
        const WHAT: &str = "a 32-bit number of seconds or a duration like 1h30m";
        let (at, s) = self.next_str(WHAT)?;
        parse_duration(s).ok_or_else(|| text_error(at, WHAT))
    }

    /// A record type mnemonic or `TYPEnnn` (RFC 3597 §5).
    pub(crate) fn rtype(&mut self) -> Result<Rtype, RdataTextError> {
        const WHAT: &str = "a record type";
        let (at, s) = self.next_str(WHAT)?;
        s.parse::<Rtype>().map_err(|_| text_error(at, WHAT))
    }

    /// A domain name: relative to the origin unless it ends in a dot; `@` alone is
    /// the origin itself (RFC 1035 §5.1).
    pub(crate) fn name(&mut self) -> Result<Name, RdataTextError> {
        const WHAT: &str = "a domain name";
        let (at, f) = self.next(WHAT)?;
        if f.raw == b"@" && !f.quoted {
            return Ok(self.origin.clone());
        }
        Name::from_presentation(f.raw, Some(self.origin))
            .map_err(|e| text_error(at, &format!("{WHAT} ({e})")))
    }

    /// One `<character-string>`, quoted or not, escapes decoded.
    pub(crate) fn character_string(&mut self) -> Result<Vec<u8>, RdataTextError> {
        const WHAT: &str = "a character-string of at most 255 octets";
        let (at, f) = self.next(WHAT)?;
        let bytes = unescape(f.raw).ok_or_else(|| text_error(at, WHAT))?;
        if bytes.len() > MAX_CHARACTER_STRING {
            return Err(text_error(at, WHAT));
        }
        Ok(bytes)
    }

    /// Every remaining field joined: base64 and hex blobs may contain whitespace
    /// (RFC 4034 §2.2, §5.3). At least one field must remain.
    pub(crate) fn rest_joined(
        &mut self,
        expected: &str,
    ) -> Result<(usize, String), RdataTextError> {
        let at = self.pos;
        if self.is_done() {
            return Err(text_error(at, expected));
        }
        let mut out = String::new();
        while let Some(f) = self.peek() {
            let i = self.pos;
            let s = f.as_str().ok_or_else(|| text_error(i, expected))?;
            out.push_str(s);
            self.pos = i.saturating_add(1);
        }
        Ok((at, out))
    }

    /// Base64 data filling the rest of the record.
    pub(crate) fn rest_base64(&mut self) -> Result<Vec<u8>, RdataTextError> {
        const WHAT: &str = "base64 data";
        let (at, s) = self.rest_joined(WHAT)?;
        base64_decode(&s).ok_or_else(|| text_error(at, WHAT))
    }

    /// Hex data filling the rest of the record.
    pub(crate) fn rest_hex(&mut self) -> Result<Vec<u8>, RdataTextError> {
        const WHAT: &str = "hex data";
        let (at, s) = self.rest_joined(WHAT)?;
        hex_decode(&s)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| text_error(at, WHAT))
    }

    /// Fails if fields are left over.
    pub(crate) fn finish(&self) -> Result<(), RdataTextError> {
        if self.is_done() {
            Ok(())
        } else {
            Err(text_error(self.pos, "the end of the record data"))
        }
    }
}

/// Plain unsigned decimal, no sign, at most 10 digits (fits u32 checks by callers).
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.len() > 10 {
        return None;
    }
    decimal(s.as_bytes())
}

/// A non-empty run of ASCII digits, of any length, whose value fits 64 bits.
pub(crate) fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        let digit = d.checked_sub(b'0').filter(|v| *v <= 9)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Seconds, either plain decimal or digits each followed by a unit
/// (s, m, h, d, w; either case).
pub(crate) fn parse_duration(s: &str) -> Option<u32> {
    if let Some(v) = parse_decimal(s) {
        return u32::try_from(v).ok();
    }
    let mut total = 0u64;
    let mut digits = 0u64;
    let mut have_digits = false;
    for b in s.bytes() {
        if let Some(d) = b.checked_sub(b'0').filter(|d| *d <= 9) {
            digits = digits.checked_mul(10)?.checked_add(u64::from(d))?;
            have_digits = true;
            continue;
        }
        let unit: u64 = match b.to_ascii_lowercase() {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86_400,
            b'w' => 604_800,
            _ => return None,
        };
        if !have_digits {
            return None;
        }
        total = total.checked_add(digits.checked_mul(unit)?)?;
        digits = 0;
        have_digits = false;
    }
    if have_digits || s.is_empty() {
        return None;
    }
    u32::try_from(total).ok()
}

/// Decodes `\X` and `\DDD` escapes (RFC 1035 §5.1).
pub(crate) fn unescape(raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0usize;
    while let Some(&c) = raw.get(i) {
        i = i.saturating_add(1);
        if c == b'\\' {
            let (b, used) = parse_escape(raw.get(i..).unwrap_or(&[])).ok()?;
            i = i.saturating_add(used);
            out.push(b);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Writes a `<character-string>` in double quotes, escaping `"` and `\` and
/// writing bytes outside printable ASCII as `\DDD`.
pub(crate) fn write_character_string(f: &mut impl fmt::Write, s: &[u8]) -> fmt::Result {
    f.write_char('"')?;
    write_escaped_bytes(f, s)?;
    f.write_char('"')
}

/// The inside of a quoted string: `"` and `\` escaped, unprintables as `\DDD`.
pub(crate) fn write_escaped_bytes(f: &mut impl fmt::Write, s: &[u8]) -> fmt::Result {
    for &b in s {
        match b {
            b'"' | b'\\' => {
                f.write_char('\\')?;
                f.write_char(char::from(b))?;
            }
            0x20..=0x7e => f.write_char(char::from(b))?,
            _ => write!(f, "\\{b:03}")?,
        }
    }
    Ok(())
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

pub(crate) fn write_hex(f: &mut impl fmt::Write, data: &[u8]) -> fmt::Result {
    for &b in data {
        let hi = HEX_UPPER.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
        let lo = HEX_UPPER
            .get(usize::from(b & 0x0f))
            .copied()
            .unwrap_or(b'0');
        f.write_char(char::from(hi))?;
        f.write_char(char::from(lo))?;
    }
    Ok(())
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => c.checked_sub(b'0'),
        b'a'..=b'f' => c.checked_sub(b'a' - 10),
        b'A'..=b'F' => c.checked_sub(b'A' - 10),
        _ => None,
    }
}

/// Base16, either case, an even number of digits.
pub(crate) fn hex_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    if bytes.len() % 2 != 0 {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|p| {
            let hi = hex_value(*p.first()?)?;
            let lo = hex_value(*p.get(1)?)?;
            Some((hi << 4) | lo)
        })
        .collect()
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 with padding (RFC 4648 §4).
pub(crate) fn write_base64(f: &mut impl fmt::Write, data: &[u8]) -> fmt::Result {
    let sym = |v: u32| BASE64.get((v & 0x3f) as usize).copied().unwrap_or(b'A');
    // 48 input octets make 64 symbols: written a block at a time, since a
    // signed zone prints millions of signatures.
    for block in data.chunks(48) {
        let mut out = [0u8; 64];
        let mut len = 0usize;
        for chunk in block.chunks(3) {
            let b0 = u32::from(chunk.first().copied().unwrap_or(0));
            let b1 = u32::from(chunk.get(1).copied().unwrap_or(0));
            let b2 = u32::from(chunk.get(2).copied().unwrap_or(0));
            let v = (b0 << 16) | (b1 << 8) | b2;
            let third = if chunk.len() > 1 { sym(v >> 6) } else { b'=' };
            let fourth = if chunk.len() > 2 { sym(v) } else { b'=' };
            if let Some(dst) = out.get_mut(len..len.saturating_add(4)) {
                dst.copy_from_slice(&[sym(v >> 18), sym(v >> 12), third, fourth]);
            }
            len = len.saturating_add(4);
        }
        let text = out.get(..len).unwrap_or_default();
        f.write_str(core::str::from_utf8(text).map_err(|_| fmt::Error)?)?;
    }
    Ok(())
}

fn base64_value(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c.checked_sub(b'A')?,
        b'a'..=b'z' => c.checked_sub(b'a')?.checked_add(26)?,
        b'0'..=b'9' => c.checked_sub(b'0')?.checked_add(52)?,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Base64 with the padding RFC 4648 §4 requires; padding only at the end.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity((bytes.len() / 4).saturating_mul(3));
    let quads = bytes.chunks_exact(4);
    let last = quads.len().checked_sub(1);
    for (qi, q) in quads.enumerate() {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && Some(qi) != last) {
            return None;
        }
        let mut v = 0u32;
        for (i, &c) in q.iter().enumerate() {
            let d = if i >= 4usize.saturating_sub(pad) {
                0
            } else {
                base64_value(c)?
            };
            v = (v << 6) | d;
        }
        let [_, b0, b1, b2] = v.to_be_bytes();
        out.push(b0);
        if pad < 2 {
            out.push(b1);
        }
        if pad < 1 {
            out.push(b2);
        }
    }
    Some(out)
}

const BASE32HEX: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

/// Base32 with the extended hex alphabet, unpadded (RFC 4648 §7, RFC 5155 §3.3).
pub(crate) fn write_base32hex(f: &mut impl fmt::Write, data: &[u8]) -> fmt::Result {
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 8];
        if let Some(dst) = buf.get_mut(3..3usize.saturating_add(chunk.len())) {
            dst.copy_from_slice(chunk);
        }
        let v = u64::from_be_bytes(buf);
        // 5 input octets make 8 symbols; a partial group makes ceil(bits / 5).
        let symbols = (chunk.len().saturating_mul(8)).div_ceil(5);
        for i in 0..symbols {
            let shift = 35usize.saturating_sub(i.saturating_mul(5));
            let idx = usize::try_from((v >> shift) & 0x1f).unwrap_or(0);
            f.write_char(char::from(BASE32HEX.get(idx).copied().unwrap_or(b'0')))?;
        }
    }
    Ok(())
}

/// Unpadded base32hex, either case.
pub(crate) fn base32hex_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(5) / 8);
    for group in bytes.chunks(8) {
        // Only 2, 4, 5, 7 or 8 symbols make whole octets.
        let octets = match group.len() {
            2 => 1,
            4 => 2,
            5 => 3,
            7 => 4,
            8 => 5,
            _ => return None,
        };
        let mut v = 0u64;
        for i in 0..8 {
            let d = match group.get(i) {
                Some(&c) => {
                    let c = c.to_ascii_lowercase();
                    let d = match c {
                        b'0'..=b'9' => c.checked_sub(b'0')?,
                        b'a'..=b'v' => c.checked_sub(b'a' - 10)?,
                        _ => return None,
                    };
                    u64::from(d)
                }
                None => 0,
            };
            v = (v << 5) | d;
        }
        let be = v.to_be_bytes();
        out.extend_from_slice(be.get(3..3usize.saturating_add(octets))?);
    }
    Some(out)
}

/// Formats into a `String` through `fmt::Write` (used by tests and by `Display`s).
#[cfg(test)]
pub(crate) fn to_string_with(w: impl Fn(&mut String) -> fmt::Result) -> String {
    let mut s = String::new();
    let _ = w(&mut s);
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn base64_matches_rfc4648_test_vectors() {
        // RFC 4648 §10.
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(to_string_with(|s| write_base64(s, plain.as_bytes())), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
        }
        // Longer than one 48-octet output block, every tail length.
        for len in 44..=100usize {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11).to_le_bytes()[0]).collect();
            let text = to_string_with(|s| write_base64(s, &data));
            assert_eq!(text.len(), len.div_ceil(3) * 4);
            assert_eq!(base64_decode(&text).unwrap(), data);
        }
        assert!(base64_decode("Zg=").is_none());
        assert!(base64_decode("Zg==Zg==").is_none());
        assert!(base64_decode("Z===").is_none());
        assert!(base64_decode("Zm9*").is_none());
    }

    #[test]
    fn base32hex_matches_rfc4648_test_vectors_unpadded() {
        // RFC 4648 §10, padding removed as RFC 5155 §3.3 writes it.
        for (plain, enc) in [
            ("", ""),
            ("f", "co"),
            ("fo", "cpng"),
            ("foo", "cpnmu"),
            ("foob", "cpnmuog"),
            ("fooba", "cpnmuoj1"),
            ("foobar", "cpnmuoj1e8"),
        ] {
            assert_eq!(
                to_string_with(|s| write_base32hex(s, plain.as_bytes())),
                enc
            );
            assert_eq!(base32hex_decode(enc).unwrap(), plain.as_bytes());
            assert_eq!(
                base32hex_decode(&enc.to_ascii_uppercase()).unwrap(),
                plain.as_bytes()
            );
        }
        assert!(base32hex_decode("c").is_none());
        assert!(base32hex_decode("cw").is_none());
    }

    #[test]
    fn hex_accepts_either_case_and_rejects_odd_length() {
        assert_eq!(hex_decode("0aFf").unwrap(), [0x0a, 0xff]);
        assert!(hex_decode("abc").is_none());
        assert!(hex_decode("zz").is_none());
        assert_eq!(to_string_with(|s| write_hex(s, &[0x0a, 0xff])), "0AFF");
    }

    #[test]
    fn durations_accept_units() {
        assert_eq!(parse_duration("3600"), Some(3600));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("2W1d"), Some(1_296_000));
        assert_eq!(parse_duration("1h30"), None);
        assert_eq!(parse_duration("h"), None);
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("4294967296"), None);
        assert_eq!(parse_duration("7102w"), None);
    }

    #[test]
    fn escapes_decode_and_print_back() {
        assert_eq!(unescape(br#"a\"b\\c\065\009"#).unwrap(), b"a\"b\\cA\t");
        assert!(unescape(b"bad\\25").is_none());
        assert_eq!(
            to_string_with(|s| write_character_string(s, b"a\"b\\c\t ")),
            r#""a\"b\\c\009 ""#
        );
    }
}
