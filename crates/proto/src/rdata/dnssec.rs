//! DNSSEC record data: DS/CDS, DNSKEY/CDNSKEY, RRSIG, NSEC (RFC 4034, RFC 7344),
//! NSEC3 and NSEC3PARAM (RFC 5155), and the type bitmap they share.

use core::fmt;

use super::put_name;
use super::text::{
    base32hex_decode, hex_decode, parse_decimal, text_error, write_base32hex, write_base64,
    write_hex, Fields,
};
use crate::name::Name;
use crate::rdata::RdataTextError;
use crate::rtype::Rtype;
use crate::wire::{Reader, WireError};

fn bad(r: &Reader<'_>, what: &'static str) -> WireError {
    WireError::BadRdata {
        at: r.position(),
        what,
    }
}

/// The rest of the rdata as a blob that must not be empty: presentation format
/// has no way to write an empty digest, key or signature.
pub(crate) fn read_blob(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, WireError> {
    if r.is_empty() {
        return Err(bad(r, what));
    }
    Ok(r.read_rest().to_vec())
}

/// RFC 4034 §5.3 and §3.2 allow an algorithm mnemonic where its number goes
/// (IANA "DNS Security Algorithm Numbers").
const ALGORITHM_MNEMONICS: &[(&str, u8)] = &[
    ("RSAMD5", 1),
    ("DH", 2),
    ("DSA", 3),
    ("RSASHA1", 5),
    ("DSA-NSEC3-SHA1", 6),
    ("RSASHA1-NSEC3-SHA1", 7),
    ("RSASHA256", 8),
    ("RSASHA512", 10),
    ("ECC-GOST", 12),
    ("ECDSAP256SHA256", 13),
    ("ECDSAP384SHA384", 14),
    ("ED25519", 15),
    ("ED448", 16),
    // dnspython's and bulwark's name for ML-DSA-44 (draft-westerbaan-dnssec-mldsa).
    ("MLDSA44", 18),
    ("INDIRECT", 252),
    ("PRIVATEDNS", 253),
    ("PRIVATEOID", 254),
];

pub(crate) fn parse_algorithm(f: &mut Fields<'_, '_>) -> Result<u8, RdataTextError> {
    const WHAT: &str = "an algorithm number or mnemonic";
    let (at, field) = f.next(WHAT)?;
    let s = field.as_str().ok_or_else(|| text_error(at, WHAT))?;
    if let Some(v) = parse_decimal(s) {
        return u8::try_from(v).map_err(|_| text_error(at, WHAT));
    }
    ALGORITHM_MNEMONICS
        .iter()
        .find(|(m, _)| m.eq_ignore_ascii_case(s))
        .map(|&(_, v)| v)
        .ok_or_else(|| text_error(at, WHAT))
}

/// Digest lengths of the registered DS digest types (IANA "DS RR Type Digest
/// Algorithms": SHA-1, SHA-256, GOST R 34.11-94, SHA-384). A digest of the
/// wrong length can never match, and BIND and Knot refuse it too.
fn ds_digest_len(digest_type: u8) -> Option<usize> {
    match digest_type {
        1 => Some(20),
        2 | 3 => Some(32),
        4 => Some(48),
        _ => None,
    }
}

/// DS and CDS record data (RFC 4034 §5, RFC 7344 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ds {
    pub key_tag: u16,
    pub algorithm: u8,
    pub digest_type: u8,
    pub digest: Vec<u8>,
}

impl Ds {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Ds, WireError> {
        let ds = Ds {
            key_tag: r.read_u16()?,
            algorithm: r.read_u8()?,
            digest_type: r.read_u8()?,
            digest: read_blob(r, "DS without a digest")?,
        };
        if ds_digest_len(ds.digest_type).is_some_and(|n| n != ds.digest.len()) {
            return Err(bad(r, "DS digest length wrong for its digest type"));
        }
        Ok(ds)
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key_tag.to_be_bytes());
        out.push(self.algorithm);
        out.push(self.digest_type);
        out.extend_from_slice(&self.digest);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Ds, RdataTextError> {
        let key_tag = f.u16()?;
        let algorithm = parse_algorithm(f)?;
        let digest_type = f.u8()?;
        let at = f.index();
        let digest = f.rest_hex()?;
        if let Some(n) = ds_digest_len(digest_type).filter(|&n| n != digest.len()) {
            return Err(text_error(
                at,
                &format!("a {n}-octet digest for digest type {digest_type}"),
            ));
        }
        Ok(Ds {
            key_tag,
            algorithm,
            digest_type,
            digest,
        })
    }
}

impl fmt::Display for Ds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} ",
            self.key_tag, self.algorithm, self.digest_type
        )?;
        write_hex(f, &self.digest)
    }
}

/// DNSKEY and CDNSKEY record data (RFC 4034 §2, RFC 7344 §3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dnskey {
    pub flags: u16,
    pub protocol: u8,
    pub algorithm: u8,
    pub public_key: Vec<u8>,
}

impl Dnskey {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Dnskey, WireError> {
        Ok(Dnskey {
            flags: r.read_u16()?,
            protocol: r.read_u8()?,
            algorithm: r.read_u8()?,
            public_key: read_blob(r, "DNSKEY without a public key")?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.flags.to_be_bytes());
        out.push(self.protocol);
        out.push(self.algorithm);
        out.extend_from_slice(&self.public_key);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Dnskey, RdataTextError> {
        Ok(Dnskey {
            flags: f.u16()?,
            protocol: f.u8()?,
            algorithm: parse_algorithm(f)?,
            public_key: nonempty(f.rest_base64()?, f)?,
        })
    }
}

fn nonempty(v: Vec<u8>, f: &Fields<'_, '_>) -> Result<Vec<u8>, RdataTextError> {
    if v.is_empty() {
        return Err(text_error(
            f.index().saturating_sub(1),
            "non-empty base64 data",
        ));
    }
    Ok(v)
}

impl fmt::Display for Dnskey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ", self.flags, self.protocol, self.algorithm)?;
        write_base64(f, &self.public_key)
    }
}

/// RRSIG record data (RFC 4034 §3). Times are seconds since 1970 modulo 2^32
/// (RFC 4034 §3.1.5: compared with serial number arithmetic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rrsig {
    pub type_covered: Rtype,
    pub algorithm: u8,
    pub labels: u8,
    pub original_ttl: u32,
    pub expiration: u32,
    pub inception: u32,
    pub key_tag: u16,
    pub signer: Name,
    pub signature: Vec<u8>,
}

impl Rrsig {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Rrsig, WireError> {
        Ok(Rrsig {
            type_covered: Rtype(r.read_u16()?),
            algorithm: r.read_u8()?,
            labels: r.read_u8()?,
            original_ttl: r.read_u32()?,
            expiration: r.read_u32()?,
            inception: r.read_u32()?,
            key_tag: r.read_u16()?,
            // RFC 4034 §3.1.7: the signer's name is not compressed.
            signer: Name::read_uncompressed(r)?,
            signature: read_blob(r, "RRSIG without a signature")?,
        })
    }

    /// Everything but the signature: what RFC 4034 §3.1.8.1 signs first.
    pub fn write_without_signature(&self, out: &mut Vec<u8>, canonical: bool) {
        out.extend_from_slice(&self.type_covered.0.to_be_bytes());
        out.push(self.algorithm);
        out.push(self.labels);
        out.extend_from_slice(&self.original_ttl.to_be_bytes());
        out.extend_from_slice(&self.expiration.to_be_bytes());
        out.extend_from_slice(&self.inception.to_be_bytes());
        out.extend_from_slice(&self.key_tag.to_be_bytes());
        put_name(out, &self.signer, canonical);
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, canonical: bool) {
        self.write_without_signature(out, canonical);
        out.extend_from_slice(&self.signature);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Rrsig, RdataTextError> {
        let type_covered = f.rtype()?;
        let algorithm = parse_algorithm(f)?;
        let labels = f.u8()?;
        let original_ttl = f.u32()?;
        let expiration = parse_time(f)?;
        let inception = parse_time(f)?;
        let key_tag = f.u16()?;
        let signer = f.name()?;
        let signature = nonempty(f.rest_base64()?, f)?;
        Ok(Rrsig {
            type_covered,
            algorithm,
            labels,
            original_ttl,
            expiration,
            inception,
            key_tag,
            signer,
            signature,
        })
    }
}

impl fmt::Display for Rrsig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} ",
            self.type_covered, self.algorithm, self.labels, self.original_ttl
        )?;
        write_time(f, self.expiration)?;
        f.write_str(" ")?;
        write_time(f, self.inception)?;
        write!(f, " {} {} ", self.key_tag, self.signer)?;
        write_base64(f, &self.signature)
    }
}

const SECONDS_PER_DAY: u64 = 86_400;

fn is_leap(y: u64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Leap days in the years 1..=y (proleptic Gregorian).
fn leaps_through(y: u64) -> u64 {
    (y / 4).saturating_sub(y / 100).saturating_add(y / 400)
}

/// Seconds since 1970-01-01T00:00:00Z of a `YYYYMMDDHHmmSS` time, if valid.
fn seconds_from_date(s: &str) -> Option<u64> {
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |r: core::ops::Range<usize>| s.get(r).and_then(|d| d.parse::<u64>().ok());
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, se) = (num(8..10)?, num(10..12)?, num(12..14)?);
    if y < 1970 || !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
        return None;
    }
    if h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let years = y.checked_sub(1970)?;
    let mut days = years
        .checked_mul(365)?
        .checked_add(leaps_through(y.checked_sub(1)?))?
        .checked_sub(leaps_through(1969))?;
    for m in 1..mo {
        days = days.checked_add(days_in_month(y, m))?;
    }
    days = days.checked_add(d.checked_sub(1)?)?;
    days.checked_mul(SECONDS_PER_DAY)?
        .checked_add(h.checked_mul(3600)?)?
        .checked_add(mi.checked_mul(60)?)?
        .checked_add(se)
}

/// RFC 4034 §3.2: `YYYYMMDDHHmmSS` in UTC, or plain seconds since the epoch.
/// Dates past 2106 wrap modulo 2^32, as the field does on the wire.
fn parse_time(f: &mut Fields<'_, '_>) -> Result<u32, RdataTextError> {
    const WHAT: &str = "a time as YYYYMMDDHHmmSS or seconds";
    let (at, field) = f.next(WHAT)?;
    let s = field.as_str().ok_or_else(|| text_error(at, WHAT))?;
    let secs = if s.len() == 14 {
        seconds_from_date(s)
    } else {
        parse_decimal(s).filter(|&v| v <= u64::from(u32::MAX))
    };
    secs.and_then(|v| u32::try_from(v & u64::from(u32::MAX)).ok())
        .ok_or_else(|| text_error(at, WHAT))
}

/// Prints a wire time as `YYYYMMDDHHmmSS` (1970 to 2106).
fn write_time(f: &mut impl fmt::Write, t: u32) -> fmt::Result {
    let t = u64::from(t);
    let mut days = t / SECONDS_PER_DAY;
    let rem = t % SECONDS_PER_DAY;
    let mut year = 1970u64;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days = days.saturating_sub(len);
        year = year.saturating_add(1);
    }
    let mut month = 1u64;
    while month < 12 && days >= days_in_month(year, month) {
        days = days.saturating_sub(days_in_month(year, month));
        month = month.saturating_add(1);
    }
    // YYYYMMDDHHmmSS, digit by digit: a signed zone prints two per RRSIG.
    let mut text = [b'0'; 14];
    let fields = [
        (0usize, 4usize, year),
        (4, 2, month),
        (6, 2, days.saturating_add(1)),
        (8, 2, rem / 3600),
        (10, 2, rem % 3600 / 60),
        (12, 2, rem % 60),
    ];
    for (at, width, mut value) in fields {
        for i in (at..at.saturating_add(width)).rev() {
            if let Some(digit) = text.get_mut(i) {
                *digit = b'0'.saturating_add(u8::try_from(value % 10).unwrap_or(0));
            }
            value /= 10;
        }
    }
    f.write_str(core::str::from_utf8(&text).map_err(|_| fmt::Error)?)
}

/// The set of types present at a name (RFC 4034 §4.1.2), kept sorted and unique.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TypeBitmap {
    types: Vec<Rtype>,
}

impl TypeBitmap {
    pub fn new<I: IntoIterator<Item = Rtype>>(types: I) -> TypeBitmap {
        let mut types: Vec<Rtype> = types.into_iter().collect();
        types.sort_unstable();
        types.dedup();
        TypeBitmap { types }
    }

    pub fn contains(&self, t: Rtype) -> bool {
        self.types.binary_search(&t).is_ok()
    }

    pub fn iter(&self) -> impl Iterator<Item = Rtype> + '_ {
        self.types.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// RFC 4034 §4.1.2: window blocks in increasing order, each with the bitmap
    /// trimmed of trailing zero octets; empty windows are left out.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let mut i = 0usize;
        while let Some(first) = self.types.get(i) {
            let window = first.0 >> 8;
            let mut bits = [0u8; 32];
            let mut used = 0usize;
            while let Some(t) = self.types.get(i).filter(|t| t.0 >> 8 == window) {
                let low = usize::from(t.0 & 0xff);
                if let Some(b) = bits.get_mut(low / 8) {
                    *b |= 0x80 >> (low % 8);
                }
                used = used.max((low / 8).saturating_add(1));
                i = i.saturating_add(1);
            }
            out.push(u8::try_from(window).unwrap_or(u8::MAX));
            out.push(u8::try_from(used).unwrap_or(32));
            out.extend_from_slice(bits.get(..used).unwrap_or(&[]));
        }
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<TypeBitmap, WireError> {
        let mut types = Vec::new();
        let mut last_window: Option<u8> = None;
        while !r.is_empty() {
            let window = r.read_u8()?;
            if last_window.is_some_and(|w| window <= w) {
                return Err(bad(r, "type bitmap windows out of order"));
            }
            last_window = Some(window);
            let len = r.read_u8()?;
            if len == 0 || len > 32 {
                return Err(bad(r, "type bitmap window length not in 1..=32"));
            }
            let bits = r.read_bytes(usize::from(len))?;
            if bits.last() == Some(&0) {
                return Err(bad(r, "type bitmap with a trailing zero octet"));
            }
            for (octet, &b) in (0u16..).zip(bits) {
                for bit in 0..8u16 {
                    if b & (0x80 >> bit) != 0 {
                        let low = octet.saturating_mul(8).saturating_add(bit);
                        types.push(Rtype((u16::from(window) << 8) | low));
                    }
                }
            }
        }
        Ok(TypeBitmap { types })
    }

    /// The remaining fields, each a type mnemonic or `TYPEnnn`.
    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<TypeBitmap, RdataTextError> {
        let mut types = Vec::new();
        while !f.is_done() {
            types.push(f.rtype()?);
        }
        Ok(TypeBitmap::new(types))
    }
}

impl fmt::Display for TypeBitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.types.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

/// An NSEC always lists at least NSEC and RRSIG (RFC 4035 §2.3), so an empty
/// bitmap is malformed; BIND rejects it too. NSEC3 bitmaps may be empty: the
/// NSEC3 of an empty non-terminal has no types (RFC 5155).
fn nonempty_bitmap(b: TypeBitmap) -> Option<TypeBitmap> {
    (!b.is_empty()).then_some(b)
}

/// NSEC record data (RFC 4034 §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nsec {
    pub next: Name,
    pub types: TypeBitmap,
}

impl Nsec {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Nsec, WireError> {
        Ok(Nsec {
            // RFC 4034 §4.1.1: not compressed.
            next: Name::read_uncompressed(r)?,
            types: nonempty_bitmap(TypeBitmap::read(r)?)
                .ok_or_else(|| bad(r, "NSEC without types"))?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        // RFC 6840 §5.1: the next name keeps its case even in canonical form.
        out.extend_from_slice(self.next.as_wire());
        self.types.write(out);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Nsec, RdataTextError> {
        let next = f.name()?;
        let at = f.index();
        let types = nonempty_bitmap(TypeBitmap::parse(f)?)
            .ok_or_else(|| text_error(at, "a record type"))?;
        Ok(Nsec { next, types })
    }
}

impl fmt::Display for Nsec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.next)?;
        if !self.types.is_empty() {
            write!(f, " {}", self.types)?;
        }
        Ok(())
    }
}

/// CSYNC record data (RFC 7477 §2.1): the child's SOA serial, flags and the
/// types the parent should copy. The bitmap may be empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csync {
    pub serial: u32,
    pub flags: u16,
    pub types: TypeBitmap,
}

impl Csync {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Csync, WireError> {
        Ok(Csync {
            serial: r.read_u32()?,
            flags: r.read_u16()?,
            types: TypeBitmap::read(r)?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.serial.to_be_bytes());
        out.extend_from_slice(&self.flags.to_be_bytes());
        self.types.write(out);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Csync, RdataTextError> {
        Ok(Csync {
            serial: f.u32()?,
            flags: f.u16()?,
            types: TypeBitmap::parse(f)?,
        })
    }
}

impl fmt::Display for Csync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.serial, self.flags)?;
        if !self.types.is_empty() {
            write!(f, " {}", self.types)?;
        }
        Ok(())
    }
}

/// RFC 5155 §3.3: the salt is hex, or `-` when empty.
fn parse_salt(f: &mut Fields<'_, '_>) -> Result<Vec<u8>, RdataTextError> {
    const WHAT: &str = "a hex salt or -";
    let (at, field) = f.next(WHAT)?;
    let s = field.as_str().ok_or_else(|| text_error(at, WHAT))?;
    if s == "-" {
        return Ok(Vec::new());
    }
    hex_decode(s)
        .filter(|v| !v.is_empty() && v.len() <= 255)
        .ok_or_else(|| text_error(at, WHAT))
}

fn write_salt(f: &mut impl fmt::Write, salt: &[u8]) -> fmt::Result {
    if salt.is_empty() {
        f.write_char('-')
    } else {
        write_hex(f, salt)
    }
}

fn put_u8_prefixed(out: &mut Vec<u8>, data: &[u8]) {
    let data = data.get(..data.len().min(255)).unwrap_or(&[]);
    out.push(u8::try_from(data.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(data);
}

/// NSEC3 record data (RFC 5155 §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nsec3 {
    pub hash_algorithm: u8,
    pub flags: u8,
    pub iterations: u16,
    pub salt: Vec<u8>,
    /// The next hashed owner name, raw hash bytes (not base32hex text).
    pub next_hashed: Vec<u8>,
    pub types: TypeBitmap,
}

impl Nsec3 {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Nsec3, WireError> {
        let hash_algorithm = r.read_u8()?;
        let flags = r.read_u8()?;
        let iterations = r.read_u16()?;
        let salt = r.read_character_string()?.to_vec();
        let next_hashed = r.read_character_string()?.to_vec();
        if next_hashed.is_empty() {
            return Err(bad(r, "NSEC3 with an empty next hashed owner name"));
        }
        Ok(Nsec3 {
            hash_algorithm,
            flags,
            iterations,
            salt,
            next_hashed,
            types: TypeBitmap::read(r)?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.hash_algorithm);
        out.push(self.flags);
        out.extend_from_slice(&self.iterations.to_be_bytes());
        put_u8_prefixed(out, &self.salt);
        put_u8_prefixed(out, &self.next_hashed);
        self.types.write(out);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Nsec3, RdataTextError> {
        const NEXT: &str = "a base32hex next hashed owner name";
        let hash_algorithm = f.u8()?;
        let flags = f.u8()?;
        let iterations = f.u16()?;
        let salt = parse_salt(f)?;
        let (at, field) = f.next(NEXT)?;
        let next_hashed = field
            .as_str()
            .and_then(base32hex_decode)
            .filter(|v| !v.is_empty() && v.len() <= 255)
            .ok_or_else(|| text_error(at, NEXT))?;
        Ok(Nsec3 {
            hash_algorithm,
            flags,
            iterations,
            salt,
            next_hashed,
            types: TypeBitmap::parse(f)?,
        })
    }
}

impl fmt::Display for Nsec3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} ",
            self.hash_algorithm, self.flags, self.iterations
        )?;
        write_salt(f, &self.salt)?;
        f.write_str(" ")?;
        write_base32hex(f, &self.next_hashed)?;
        if !self.types.is_empty() {
            write!(f, " {}", self.types)?;
        }
        Ok(())
    }
}

/// NSEC3PARAM record data (RFC 5155 §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nsec3param {
    pub hash_algorithm: u8,
    pub flags: u8,
    pub iterations: u16,
    pub salt: Vec<u8>,
}

impl Nsec3param {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Nsec3param, WireError> {
        Ok(Nsec3param {
            hash_algorithm: r.read_u8()?,
            flags: r.read_u8()?,
            iterations: r.read_u16()?,
            salt: r.read_character_string()?.to_vec(),
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.hash_algorithm);
        out.push(self.flags);
        out.extend_from_slice(&self.iterations.to_be_bytes());
        put_u8_prefixed(out, &self.salt);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Nsec3param, RdataTextError> {
        Ok(Nsec3param {
            hash_algorithm: f.u8()?,
            flags: f.u8()?,
            iterations: f.u16()?,
            salt: parse_salt(f)?,
        })
    }
}

impl fmt::Display for Nsec3param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} ",
            self.hash_algorithm, self.flags, self.iterations
        )?;
        write_salt(f, &self.salt)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::rdata::text::to_string_with;

    #[test]
    fn dates_convert_both_ways() {
        for (text, secs) in [
            ("19700101000000", 0u64),
            ("20000229235959", 951_868_799),
            ("20380119031408", 2_147_483_648),
            ("21060207062815", 4_294_967_295),
        ] {
            assert_eq!(seconds_from_date(text), Some(secs), "{text}");
            let t = u32::try_from(secs).unwrap();
            assert_eq!(to_string_with(|s| write_time(s, t)), text);
        }
        assert_eq!(seconds_from_date("20230230000000"), None);
        assert_eq!(seconds_from_date("19691231235959"), None);
        assert_eq!(seconds_from_date("20231301000000"), None);
    }
}
