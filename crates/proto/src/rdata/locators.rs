//! Identifiers and locators: URI (RFC 7553), EUI48/EUI64 (RFC 7043) and CERT
//! (RFC 4398).

use core::fmt;

use super::text::{text_error, unescape, write_base64, write_character_string, Fields};
use crate::rdata::RdataTextError;
use crate::wire::{Reader, WireError};

fn bad(r: &Reader<'_>, what: &'static str) -> WireError {
    WireError::BadRdata {
        at: r.position(),
        what,
    }
}

/// URI record data (RFC 7553 §4): the target fills the rest of the rdata,
/// without a length octet, and is not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri {
    pub priority: u16,
    pub weight: u16,
    pub target: Vec<u8>,
}

impl Uri {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Uri, WireError> {
        let priority = r.read_u16()?;
        let weight = r.read_u16()?;
        if r.is_empty() {
            return Err(bad(r, "URI with an empty target"));
        }
        Ok(Uri {
            priority,
            weight,
            target: r.read_rest().to_vec(),
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.priority.to_be_bytes());
        out.extend_from_slice(&self.weight.to_be_bytes());
        out.extend_from_slice(&self.target);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Uri, RdataTextError> {
        const WHAT: &str = "a non-empty quoted URI";
        let priority = f.u16()?;
        let weight = f.u16()?;
        let (at, field) = f.next(WHAT)?;
        let target = unescape(field.raw)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| text_error(at, WHAT))?;
        Ok(Uri {
            priority,
            weight,
            target,
        })
    }
}

impl fmt::Display for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.priority, self.weight)?;
        write_character_string(f, &self.target)
    }
}

/// RFC 7043 §3.2 / §4.2: hexadecimal octet pairs joined by hyphens.
pub(crate) fn parse_eui<const N: usize>(f: &mut Fields<'_, '_>) -> Result<[u8; N], RdataTextError> {
    let what = if N == 6 {
        "an EUI-48 address (xx-xx-xx-xx-xx-xx)"
    } else {
        "an EUI-64 address (xx-xx-xx-xx-xx-xx-xx-xx)"
    };
    let (at, field) = f.next(what)?;
    let s = field.as_str().ok_or_else(|| text_error(at, what))?;
    let mut out = [0u8; N];
    let mut parts = s.split('-');
    for slot in &mut out {
        let p = parts.next().ok_or_else(|| text_error(at, what))?;
        if p.len() != 2 {
            return Err(text_error(at, what));
        }
        *slot = u8::from_str_radix(p, 16).map_err(|_| text_error(at, what))?;
    }
    if parts.next().is_some() {
        return Err(text_error(at, what));
    }
    Ok(out)
}

pub(crate) fn write_eui(f: &mut fmt::Formatter<'_>, octets: &[u8]) -> fmt::Result {
    for (i, b) in octets.iter().enumerate() {
        if i > 0 {
            f.write_str("-")?;
        }
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

pub(crate) fn read_eui<const N: usize>(r: &mut Reader<'_>) -> Result<[u8; N], WireError> {
    let mut out = [0u8; N];
    out.copy_from_slice(r.read_bytes(N)?);
    Ok(out)
}

/// RFC 4398 §2.1 certificate type mnemonics.
const CERT_TYPES: &[(&str, u16)] = &[
    ("PKIX", 1),
    ("SPKI", 2),
    ("PGP", 3),
    ("IPKIX", 4),
    ("ISPKI", 5),
    ("IPGP", 6),
    ("ACPKIX", 7),
    ("IACPKIX", 8),
    ("URI", 253),
    ("OID", 254),
];

/// CERT record data (RFC 4398 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
    pub cert_type: u16,
    pub key_tag: u16,
    pub algorithm: u8,
    pub certificate: Vec<u8>,
}

impl Cert {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Cert, WireError> {
        let cert_type = r.read_u16()?;
        let key_tag = r.read_u16()?;
        let algorithm = r.read_u8()?;
        if r.is_empty() {
            return Err(bad(r, "CERT without a certificate"));
        }
        Ok(Cert {
            cert_type,
            key_tag,
            algorithm,
            certificate: r.read_rest().to_vec(),
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.cert_type.to_be_bytes());
        out.extend_from_slice(&self.key_tag.to_be_bytes());
        out.push(self.algorithm);
        out.extend_from_slice(&self.certificate);
    }

    /// RFC 4398 §2.2: the type and algorithm may be mnemonics.
    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Cert, RdataTextError> {
        const TYPE: &str = "a certificate type number or mnemonic";
        let cert_type = match f.peek().and_then(|p| p.as_str()).and_then(|s| {
            CERT_TYPES
                .iter()
                .find(|(m, _)| m.eq_ignore_ascii_case(s))
                .map(|&(_, v)| v)
        }) {
            Some(v) => {
                f.next(TYPE)?;
                v
            }
            None => f.u16().map_err(|e| text_error(e.field, TYPE))?,
        };
        let key_tag = f.u16()?;
        let algorithm = super::dnssec::parse_algorithm(f)?;
        let at = f.index();
        let certificate = f.rest_base64()?;
        if certificate.is_empty() {
            return Err(text_error(at, "non-empty base64 data"));
        }
        Ok(Cert {
            cert_type,
            key_tag,
            algorithm,
            certificate,
        })
    }
}

impl fmt::Display for Cert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ", self.cert_type, self.key_tag, self.algorithm)?;
        write_base64(f, &self.certificate)
    }
}
