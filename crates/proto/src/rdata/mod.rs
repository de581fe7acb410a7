//! Record data: typed values for the types we know, RFC 3597 generic data for the rest.
//!
//! STUB: the variant list and the bodies below are being filled in; the public
//! signatures are the contract other crates build against.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::name::Name;
use crate::presentation::Field;
use crate::rtype::Rtype;
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

/// Typed record data. `Unknown` carries any type as opaque bytes (RFC 3597).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rdata {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Ns(Name),
    Cname(Name),
    Dname(Name),
    Ptr(Name),
    Soa(Soa),
    Mx {
        preference: u16,
        exchange: Name,
    },
    /// One or more character-strings, each ≤ 255 octets.
    Txt(Vec<Vec<u8>>),
    Unknown {
        rtype: Rtype,
        data: Vec<u8>,
    },
}

/// Why record data in presentation format was rejected: which field, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {expected}")]
pub struct RdataTextError {
    /// 0-based index of the offending field in the rdata (the field after the last one when fields are missing).
    pub field: usize,
    /// What was expected there, e.g. "an IPv4 address" or "a 16-bit integer".
    pub expected: String,
}

impl Rdata {
    /// The record type this data belongs to.
    pub fn rtype(&self) -> Rtype {
        match self {
            Rdata::A(_) => Rtype::A,
            Rdata::Aaaa(_) => Rtype::AAAA,
            Rdata::Ns(_) => Rtype::NS,
            Rdata::Cname(_) => Rtype::CNAME,
            Rdata::Dname(_) => Rtype::DNAME,
            Rdata::Ptr(_) => Rtype::PTR,
            Rdata::Soa(_) => Rtype::SOA,
            Rdata::Mx { .. } => Rtype::MX,
            Rdata::Txt(_) => Rtype::TXT,
            Rdata::Unknown { rtype, .. } => *rtype,
        }
    }

    /// Reads `len` bytes of record data of type `rtype` from a message, following
    /// compression pointers in the names of types that allow them.
    pub fn read(rtype: Rtype, r: &mut Reader<'_>, len: usize) -> Result<Rdata, WireError> {
        let mut sub = r.limit(len)?;
        Ok(Rdata::Unknown {
            rtype,
            data: sub.read_rest().to_vec(),
        })
    }

    /// Appends the uncompressed wire form, names in the case they were given.
    pub fn write_wire(&self, out: &mut Vec<u8>) {
        if let Rdata::Unknown { data, .. } = self {
            out.extend_from_slice(data);
        }
    }

    /// Parses the rdata fields of a record in presentation format, including the
    /// RFC 3597 `\# <len> <hex>` form for any type. Relative names use `origin`.
    pub fn parse_presentation(
        rtype: Rtype,
        fields: &[Field<'_>],
        origin: &Name,
    ) -> Result<Rdata, RdataTextError> {
        let _ = (fields, origin);
        Err(RdataTextError {
            field: 0,
            expected: format!("{rtype} not implemented yet"),
        })
    }
}

impl fmt::Display for Rdata {
    /// Presentation format that BIND, Knot and NSD read back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut w = Vec::new();
        self.write_wire(&mut w);
        write!(f, "\\# {}", w.len())?;
        if !w.is_empty() {
            f.write_str(" ")?;
            for b in w {
                write!(f, "{b:02X}")?;
            }
        }
        Ok(())
    }
}
