//! SVCB and HTTPS record data (RFC 9460): priority, target and SvcParams.
//!
//! Parameter values are kept in wire form and checked when built, so printing
//! can always decode them; presentation follows RFC 9460 §2.1 and Appendix A.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::text::{
    base64_decode, parse_decimal, text_error, unescape, write_base64, write_escaped_bytes, Fields,
};
use crate::name::Name;
use crate::rdata::RdataTextError;
use crate::wire::{Reader, WireError};

/// A SvcParamKey (RFC 9460 §14.3.2). Open: unknown keys print as `keyNNNNN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SvcParamKey(pub u16);

impl SvcParamKey {
    pub const MANDATORY: SvcParamKey = SvcParamKey(0);
    pub const ALPN: SvcParamKey = SvcParamKey(1);
    pub const NO_DEFAULT_ALPN: SvcParamKey = SvcParamKey(2);
    pub const PORT: SvcParamKey = SvcParamKey(3);
    pub const IPV4HINT: SvcParamKey = SvcParamKey(4);
    pub const ECH: SvcParamKey = SvcParamKey(5);
    pub const IPV6HINT: SvcParamKey = SvcParamKey(6);
    /// RFC 9461 §5.
    pub const DOHPATH: SvcParamKey = SvcParamKey(7);
    /// RFC 9540 §4.
    pub const OHTTP: SvcParamKey = SvcParamKey(8);
    /// RFC 9460 §14.3.2: "Invalid key", never used.
    pub const INVALID: SvcParamKey = SvcParamKey(65535);

    const NAMES: [(&'static str, SvcParamKey); 9] = [
        ("mandatory", SvcParamKey::MANDATORY),
        ("alpn", SvcParamKey::ALPN),
        ("no-default-alpn", SvcParamKey::NO_DEFAULT_ALPN),
        ("port", SvcParamKey::PORT),
        ("ipv4hint", SvcParamKey::IPV4HINT),
        ("ech", SvcParamKey::ECH),
        ("ipv6hint", SvcParamKey::IPV6HINT),
        ("dohpath", SvcParamKey::DOHPATH),
        ("ohttp", SvcParamKey::OHTTP),
    ];

    /// A key name or `keyNNNNN` (RFC 9460 §2.1); key names are lowercase.
    fn from_text(s: &[u8]) -> Option<SvcParamKey> {
        if let Some(&(_, k)) = Self::NAMES.iter().find(|(n, _)| n.as_bytes() == s) {
            return Some(k);
        }
        let digits = s.strip_prefix(b"key")?;
        let v = parse_decimal(core::str::from_utf8(digits).ok()?)?;
        u16::try_from(v)
            .ok()
            .map(SvcParamKey)
            .filter(|k| *k != SvcParamKey::INVALID)
    }
}

impl fmt::Display for SvcParamKey {
    /// Names for the RFC 9460 keys; later ones (dohpath, ohttp) as `keyNNNNN`,
    /// which every reader accepts, while Knot 3.2, BIND 9.18 and NSD 4 each
    /// reject some of the newer names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Self::NAMES
            .iter()
            .find(|(_, k)| k == self && k.0 <= SvcParamKey::IPV6HINT.0)
        {
            Some((n, _)) => f.write_str(n),
            None => write!(f, "key{}", self.0),
        }
    }
}

/// One SvcParam with its value in wire form (RFC 9460 §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvcParam {
    pub key: SvcParamKey,
    pub value: Vec<u8>,
}

/// SVCB or HTTPS record data (RFC 9460 §2.2). Params are sorted by key, unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Svcb {
    /// 0 is AliasMode (RFC 9460 §2.4.2), anything else ServiceMode.
    pub priority: u16,
    pub target: Name,
    pub params: Vec<SvcParam>,
}

impl Svcb {
    pub fn is_alias(&self) -> bool {
        self.priority == 0
    }

    /// The value of `key`, in wire form.
    pub fn param(&self, key: SvcParamKey) -> Option<&[u8]> {
        self.params
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.value.as_slice())
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Svcb, WireError> {
        let priority = r.read_u16()?;
        // RFC 9460 §2.2: the TargetName is uncompressed.
        let target = Name::read_uncompressed(r)?;
        let mut params: Vec<SvcParam> = Vec::new();
        while !r.is_empty() {
            let at = r.position();
            let key = SvcParamKey(r.read_u16()?);
            // RFC 9460 §2.2: keys strictly increasing, so no duplicates.
            if params.last().is_some_and(|p| p.key >= key) {
                return Err(WireError::BadRdata {
                    at,
                    what: "SvcParamKeys not in strictly increasing order",
                });
            }
            let len = r.read_u16()?;
            let value = r.read_bytes(usize::from(len))?;
            check_value(key, value).map_err(|what| WireError::BadRdata { at, what })?;
            params.push(SvcParam {
                key,
                value: value.to_vec(),
            });
        }
        if missing_mandatory(&params).is_some() {
            return Err(WireError::BadRdata {
                at: r.position(),
                what: "a key listed in mandatory is missing",
            });
        }
        if no_default_alpn_without_alpn(&params) {
            return Err(WireError::BadRdata {
                at: r.position(),
                what: "no-default-alpn without alpn",
            });
        }
        Ok(Svcb {
            priority,
            target,
            params,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.priority.to_be_bytes());
        out.extend_from_slice(self.target.as_wire());
        for p in &self.params {
            let value = p.value.get(..p.value.len().min(usize::from(u16::MAX)));
            let value = value.unwrap_or(&[]);
            out.extend_from_slice(&p.key.0.to_be_bytes());
            out.extend_from_slice(&u16::try_from(value.len()).unwrap_or(0).to_be_bytes());
            out.extend_from_slice(value);
        }
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Svcb, RdataTextError> {
        let priority = f.u16()?;
        let target = f.name()?;
        let mut params: Vec<(usize, SvcParam)> = Vec::new();
        while !f.is_done() {
            let (at, param) = parse_param(f)?;
            if params.iter().any(|(_, p)| p.key == param.key) {
                return Err(text_error(at, "a SvcParamKey not already given"));
            }
            params.push((at, param));
        }
        params.sort_by_key(|(_, p)| p.key);
        let at = params
            .iter()
            .find(|(_, p)| p.key == SvcParamKey::MANDATORY)
            .map_or(0, |(at, _)| *at);
        let params: Vec<SvcParam> = params.into_iter().map(|(_, p)| p).collect();
        if let Some(k) = missing_mandatory(&params) {
            return Err(text_error(
                at,
                &format!("mandatory keys that are present ({k} is missing)"),
            ));
        }
        if no_default_alpn_without_alpn(&params) {
            return Err(text_error(f.index(), "an alpn key beside no-default-alpn"));
        }
        Ok(Svcb {
            priority,
            target,
            params,
        })
    }
}

/// RFC 9460 §8: every key listed in mandatory must be present itself (the
/// record is otherwise malformed, §2.4.3). Returns the first missing key.
fn missing_mandatory(params: &[SvcParam]) -> Option<SvcParamKey> {
    let m = params.iter().find(|p| p.key == SvcParamKey::MANDATORY)?;
    m.value
        .chunks_exact(2)
        .map(|pair| {
            SvcParamKey(u16::from_be_bytes([
                pair.first().copied().unwrap_or(0),
                pair.get(1).copied().unwrap_or(0),
            ]))
        })
        .find(|k| !params.iter().any(|p| p.key == *k))
}

/// RFC 9460 §7.1.1: no-default-alpn without alpn is not self-consistent, so
/// the record is malformed (§2.4.3).
fn no_default_alpn_without_alpn(params: &[SvcParam]) -> bool {
    let has = |k| params.iter().any(|p| p.key == k);
    has(SvcParamKey::NO_DEFAULT_ALPN) && !has(SvcParamKey::ALPN)
}

/// Wire-value rules of the keys we know (RFC 9460 §7, §8; RFC 9461; RFC 9540).
fn check_value(key: SvcParamKey, v: &[u8]) -> Result<(), &'static str> {
    match key {
        SvcParamKey::MANDATORY => {
            if v.is_empty() || v.len() % 2 != 0 {
                return Err("mandatory value not a non-empty list of keys");
            }
            let mut last: Option<u16> = None;
            for pair in v.chunks_exact(2) {
                let k = u16::from_be_bytes([
                    pair.first().copied().unwrap_or(0),
                    pair.get(1).copied().unwrap_or(0),
                ]);
                if k == 0 || last.is_some_and(|l| k <= l) {
                    return Err("mandatory keys not sorted, unique and without mandatory");
                }
                last = Some(k);
            }
            Ok(())
        }
        SvcParamKey::ALPN => {
            let mut r = Reader::new(v);
            if r.is_empty() {
                return Err("empty alpn");
            }
            while !r.is_empty() {
                match r.read_character_string() {
                    Ok(id) if !id.is_empty() => {}
                    _ => return Err("alpn not a list of non-empty protocol ids"),
                }
            }
            Ok(())
        }
        SvcParamKey::NO_DEFAULT_ALPN | SvcParamKey::OHTTP if !v.is_empty() => {
            Err("value given for a key that takes none")
        }
        SvcParamKey::PORT if v.len() != 2 => Err("port value not 2 octets"),
        SvcParamKey::IPV4HINT if v.is_empty() || v.len() % 4 != 0 => {
            Err("ipv4hint not a list of IPv4 addresses")
        }
        SvcParamKey::IPV6HINT if v.is_empty() || v.len() % 16 != 0 => {
            Err("ipv6hint not a list of IPv6 addresses")
        }
        SvcParamKey::ECH if v.is_empty() => Err("empty ech"),
        SvcParamKey::INVALID => Err("SvcParamKey 65535 is reserved"),
        _ => Ok(()),
    }
}

/// One `key`, `key=value` or `key=` followed by a quoted value field.
fn parse_param(f: &mut Fields<'_, '_>) -> Result<(usize, SvcParam), RdataTextError> {
    const WHAT: &str = "a SvcParam (key=value)";
    let (at, field) = f.next(WHAT)?;
    if field.quoted {
        return Err(text_error(at, WHAT));
    }
    let (key_text, value_raw) = match field.raw.iter().position(|&b| b == b'=') {
        Some(eq) => (
            field.raw.get(..eq).unwrap_or(&[]),
            Some(field.raw.get(eq.saturating_add(1)..).unwrap_or(&[])),
        ),
        None => (field.raw, None),
    };
    let key = SvcParamKey::from_text(key_text)
        .ok_or_else(|| text_error(at, "a SvcParamKey name or keyNNNNN"))?;
    // `key="value"` reaches us as `key=` and a separate quoted field.
    let value_raw = match value_raw {
        Some(v) if v.is_empty() && f.peek().is_some_and(|n| n.quoted) => {
            let (_, quoted) = f.next(WHAT)?;
            Some(quoted.raw)
        }
        other => other,
    };
    let value = match value_raw {
        Some(raw) => Some(unescape(raw).ok_or_else(|| text_error(at, "a valid escape"))?),
        None => None,
    };
    let wire = encode_value(key, value.as_deref()).map_err(|e| text_error(at, &e))?;
    check_value(key, &wire).map_err(|e| text_error(at, e))?;
    Ok((at, SvcParam { key, value: wire }))
}

/// Turns a decoded presentation value into wire form for `key`.
fn encode_value(key: SvcParamKey, value: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let needs = |what: &str| format!("{key}={what}");
    let text = |v: &[u8]| core::str::from_utf8(v).map(str::to_owned).ok();
    match key {
        SvcParamKey::NO_DEFAULT_ALPN | SvcParamKey::OHTTP => match value {
            None | Some([]) => Ok(Vec::new()),
            Some(_) => Err(format!("{key} without a value")),
        },
        SvcParamKey::MANDATORY => {
            let s = value
                .and_then(text)
                .ok_or_else(|| needs("a comma-separated list of keys"))?;
            let mut keys = Vec::new();
            for item in s.split(',') {
                let k = SvcParamKey::from_text(item.as_bytes())
                    .filter(|k| *k != SvcParamKey::MANDATORY)
                    .ok_or_else(|| needs("a comma-separated list of keys other than mandatory"))?;
                if keys.contains(&k) {
                    return Err(needs("a list of keys without repeats"));
                }
                keys.push(k);
            }
            keys.sort();
            Ok(keys.iter().flat_map(|k| k.0.to_be_bytes()).collect())
        }
        SvcParamKey::ALPN => {
            let v = value.ok_or_else(|| needs("a comma-separated list of protocol ids"))?;
            let mut out = Vec::new();
            for id in split_value_list(v).ok_or_else(|| needs("a valid value list"))? {
                if id.is_empty() || id.len() > 255 {
                    return Err(needs("protocol ids of 1 to 255 octets"));
                }
                out.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
                out.extend_from_slice(&id);
            }
            Ok(out)
        }
        SvcParamKey::PORT => value
            .and_then(text)
            .and_then(|s| parse_decimal(&s))
            .and_then(|p| u16::try_from(p).ok())
            .map(|p| p.to_be_bytes().to_vec())
            .ok_or_else(|| needs("a 16-bit port number")),
        SvcParamKey::IPV4HINT => {
            let s = value
                .and_then(text)
                .ok_or_else(|| needs("a list of IPv4 addresses"))?;
            s.split(',')
                .map(|a| a.parse::<Ipv4Addr>().map(|a| a.octets()))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.concat())
                .map_err(|_| needs("a list of IPv4 addresses"))
        }
        SvcParamKey::IPV6HINT => {
            let s = value
                .and_then(text)
                .ok_or_else(|| needs("a list of IPv6 addresses"))?;
            s.split(',')
                .map(|a| a.parse::<Ipv6Addr>().map(|a| a.octets()))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.concat())
                .map_err(|_| needs("a list of IPv6 addresses"))
        }
        SvcParamKey::ECH => value
            .and_then(text)
            .and_then(|s| base64_decode(&s))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| needs("base64 data")),
        _ => Ok(value.map(<[u8]>::to_vec).unwrap_or_default()),
    }
}

/// RFC 9460 Appendix A.1: after character-string decoding, items are separated
/// by commas; a backslash makes the next octet (a comma or backslash) literal.
fn split_value_list(v: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut items = vec![Vec::new()];
    let mut it = v.iter();
    while let Some(&b) = it.next() {
        match b {
            b'\\' => {
                let &lit = it.next()?;
                items.last_mut()?.push(lit);
            }
            b',' => items.push(Vec::new()),
            _ => items.last_mut()?.push(b),
        }
    }
    Some(items)
}

/// Writes `items` as an RFC 9460 value list inside double quotes: list-level
/// escaping of `,` and `\`, then character-string escaping of the result.
fn write_value_list(f: &mut fmt::Formatter<'_>, items: &[&[u8]]) -> fmt::Result {
    let mut list = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            list.push(b',');
        }
        for &b in *item {
            if b == b',' || b == b'\\' {
                list.push(b'\\');
            }
            list.push(b);
        }
    }
    f.write_str("\"")?;
    write_escaped_bytes(f, &list)?;
    f.write_str("\"")
}

fn write_param(f: &mut fmt::Formatter<'_>, p: &SvcParam) -> fmt::Result {
    let v = p.value.as_slice();
    match p.key {
        SvcParamKey::MANDATORY => {
            f.write_str("mandatory=")?;
            for (i, pair) in v.chunks_exact(2).enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                let k = u16::from_be_bytes([
                    pair.first().copied().unwrap_or(0),
                    pair.get(1).copied().unwrap_or(0),
                ]);
                write!(f, "{}", SvcParamKey(k))?;
            }
            Ok(())
        }
        SvcParamKey::ALPN => {
            let mut ids = Vec::new();
            let mut r = Reader::new(v);
            while let Ok(id) = r.read_character_string() {
                ids.push(id);
            }
            f.write_str("alpn=")?;
            write_value_list(f, &ids)
        }
        SvcParamKey::PORT if v.len() == 2 => {
            let port = u16::from_be_bytes([
                v.first().copied().unwrap_or(0),
                v.get(1).copied().unwrap_or(0),
            ]);
            write!(f, "port={port}")
        }
        SvcParamKey::IPV4HINT if v.len() % 4 == 0 => {
            f.write_str("ipv4hint=")?;
            for (i, a) in v.chunks_exact(4).enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                let mut o = [0u8; 4];
                o.copy_from_slice(a);
                write!(f, "{}", Ipv4Addr::from(o))?;
            }
            Ok(())
        }
        SvcParamKey::IPV6HINT if v.len() % 16 == 0 => {
            f.write_str("ipv6hint=")?;
            for (i, a) in v.chunks_exact(16).enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                let mut o = [0u8; 16];
                o.copy_from_slice(a);
                write!(f, "{}", Ipv6Addr::from(o))?;
            }
            Ok(())
        }
        SvcParamKey::ECH => {
            f.write_str("ech=")?;
            write_base64(f, v)
        }
        key if v.is_empty() => write!(f, "{key}"),
        key => {
            write!(f, "{key}=\"")?;
            write_escaped_bytes(f, v)?;
            f.write_str("\"")
        }
    }
}

impl fmt::Display for Svcb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.priority, self.target)?;
        for p in &self.params {
            f.write_str(" ")?;
            write_param(f, p)?;
        }
        Ok(())
    }
}
