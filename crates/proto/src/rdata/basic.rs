//! The RFC 1035 family and its close relatives: SOA, TXT, SRV (RFC 2782) and
//! NAPTR (RFC 3403). Their names may be compressed on the wire (RFC 3597 §4 for
//! the RFC 1035 types; we are lenient for the later ones, as peers are).

use core::fmt;

use super::put_name;
use super::text::{write_character_string, Fields};
use crate::name::Name;
use crate::rdata::RdataTextError;
use crate::wire::{Reader, WireError};

/// SOA record data (RFC 1035 §3.3.13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Soa {
    pub mname: Name,
    pub rname: Name,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
}

impl Soa {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Soa, WireError> {
        Ok(Soa {
            mname: Name::read(r)?,
            rname: Name::read(r)?,
            serial: r.read_u32()?,
            refresh: r.read_u32()?,
            retry: r.read_u32()?,
            expire: r.read_u32()?,
            minimum: r.read_u32()?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, canonical: bool) {
        put_name(out, &self.mname, canonical);
        put_name(out, &self.rname, canonical);
        for v in [
            self.serial,
            self.refresh,
            self.retry,
            self.expire,
            self.minimum,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// The timers may use units (`1h`), a zone-file convention every peer
    /// accepts; the serial is a plain number (RFC 1982 arithmetic applies).
    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Soa, RdataTextError> {
        Ok(Soa {
            mname: f.name()?,
            rname: f.name()?,
            serial: f.u32()?,
            refresh: f.duration()?,
            retry: f.duration()?,
            expire: f.duration()?,
            minimum: f.duration()?,
        })
    }
}

impl fmt::Display for Soa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.mname,
            self.rname,
            self.serial,
            self.refresh,
            self.retry,
            self.expire,
            self.minimum
        )
    }
}

/// Appends a `<character-string>`; callers guarantee ≤ 255 octets, longer input
/// is cut rather than written with a wrong length.
pub(crate) fn put_character_string(out: &mut Vec<u8>, s: &[u8]) {
    let s = s.get(..s.len().min(255)).unwrap_or(&[]);
    out.push(u8::try_from(s.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(s);
}

/// RFC 1035 §3.3.14: one or more character-strings filling the rdata.
pub(crate) fn read_txt(r: &mut Reader<'_>) -> Result<Vec<Vec<u8>>, WireError> {
    if r.is_empty() {
        return Err(WireError::BadRdata {
            at: r.position(),
            what: "TXT without a character-string",
        });
    }
    let mut out = Vec::new();
    while !r.is_empty() {
        out.push(r.read_character_string()?.to_vec());
    }
    Ok(out)
}

/// SRV record data (RFC 2782).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub target: Name,
}

impl Srv {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Srv, WireError> {
        Ok(Srv {
            priority: r.read_u16()?,
            weight: r.read_u16()?,
            port: r.read_u16()?,
            target: Name::read(r)?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, canonical: bool) {
        out.extend_from_slice(&self.priority.to_be_bytes());
        out.extend_from_slice(&self.weight.to_be_bytes());
        out.extend_from_slice(&self.port.to_be_bytes());
        put_name(out, &self.target, canonical);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Srv, RdataTextError> {
        Ok(Srv {
            priority: f.u16()?,
            weight: f.u16()?,
            port: f.u16()?,
            target: f.name()?,
        })
    }
}

impl fmt::Display for Srv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.priority, self.weight, self.port, self.target
        )
    }
}

/// NAPTR record data (RFC 3403 §4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naptr {
    pub order: u16,
    pub preference: u16,
    pub flags: Vec<u8>,
    pub services: Vec<u8>,
    pub regexp: Vec<u8>,
    pub replacement: Name,
}

impl Naptr {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Naptr, WireError> {
        Ok(Naptr {
            order: r.read_u16()?,
            preference: r.read_u16()?,
            flags: r.read_character_string()?.to_vec(),
            services: r.read_character_string()?.to_vec(),
            regexp: r.read_character_string()?.to_vec(),
            replacement: Name::read(r)?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>, canonical: bool) {
        out.extend_from_slice(&self.order.to_be_bytes());
        out.extend_from_slice(&self.preference.to_be_bytes());
        put_character_string(out, &self.flags);
        put_character_string(out, &self.services);
        put_character_string(out, &self.regexp);
        put_name(out, &self.replacement, canonical);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Naptr, RdataTextError> {
        Ok(Naptr {
            order: f.u16()?,
            preference: f.u16()?,
            flags: f.character_string()?,
            services: f.character_string()?,
            regexp: f.character_string()?,
            replacement: f.name()?,
        })
    }
}

impl fmt::Display for Naptr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.order, self.preference)?;
        write_character_string(f, &self.flags)?;
        f.write_str(" ")?;
        write_character_string(f, &self.services)?;
        f.write_str(" ")?;
        write_character_string(f, &self.regexp)?;
        write!(f, " {}", self.replacement)
    }
}
