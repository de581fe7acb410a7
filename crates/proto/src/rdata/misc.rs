//! Certificate, key-fingerprint and zone-integrity types: TLSA (RFC 6698),
//! SSHFP (RFC 4255), CAA (RFC 8659) and ZONEMD (RFC 8976).

use core::fmt;

use super::text::{text_error, unescape, write_character_string, write_hex, Fields};
use crate::rdata::RdataTextError;
use crate::wire::{Reader, WireError};

fn bad(r: &Reader<'_>, what: &'static str) -> WireError {
    WireError::BadRdata {
        at: r.position(),
        what,
    }
}

fn read_nonempty_rest(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, WireError> {
    if r.is_empty() {
        return Err(bad(r, what));
    }
    Ok(r.read_rest().to_vec())
}

/// TLSA record data (RFC 6698 §2.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tlsa {
    pub usage: u8,
    pub selector: u8,
    pub matching_type: u8,
    pub data: Vec<u8>,
}

impl Tlsa {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Tlsa, WireError> {
        Ok(Tlsa {
            usage: r.read_u8()?,
            selector: r.read_u8()?,
            matching_type: r.read_u8()?,
            data: read_nonempty_rest(r, "TLSA without association data")?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.usage, self.selector, self.matching_type]);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Tlsa, RdataTextError> {
        Ok(Tlsa {
            usage: f.u8()?,
            selector: f.u8()?,
            matching_type: f.u8()?,
            data: f.rest_hex()?,
        })
    }
}

impl fmt::Display for Tlsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} ",
            self.usage, self.selector, self.matching_type
        )?;
        write_hex(f, &self.data)
    }
}

/// SSHFP record data (RFC 4255 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sshfp {
    pub algorithm: u8,
    pub fingerprint_type: u8,
    pub fingerprint: Vec<u8>,
}

impl Sshfp {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Sshfp, WireError> {
        Ok(Sshfp {
            algorithm: r.read_u8()?,
            fingerprint_type: r.read_u8()?,
            fingerprint: read_nonempty_rest(r, "SSHFP without a fingerprint")?,
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.algorithm, self.fingerprint_type]);
        out.extend_from_slice(&self.fingerprint);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Sshfp, RdataTextError> {
        Ok(Sshfp {
            algorithm: f.u8()?,
            fingerprint_type: f.u8()?,
            fingerprint: f.rest_hex()?,
        })
    }
}

impl fmt::Display for Sshfp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.algorithm, self.fingerprint_type)?;
        write_hex(f, &self.fingerprint)
    }
}

/// CAA record data (RFC 8659 §4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caa {
    pub flags: u8,
    /// ASCII letters and digits only, at least one (RFC 8659 §4.1).
    pub tag: Vec<u8>,
    /// Everything after the tag; not limited to 255 octets.
    pub value: Vec<u8>,
}

fn valid_caa_tag(tag: &[u8]) -> bool {
    !tag.is_empty() && tag.iter().all(u8::is_ascii_alphanumeric)
}

impl Caa {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Caa, WireError> {
        let flags = r.read_u8()?;
        let tag = r.read_character_string()?.to_vec();
        if !valid_caa_tag(&tag) {
            return Err(bad(r, "CAA tag that is not letters and digits"));
        }
        Ok(Caa {
            flags,
            tag,
            value: r.read_rest().to_vec(),
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.flags);
        super::basic::put_character_string(out, &self.tag);
        out.extend_from_slice(&self.value);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Caa, RdataTextError> {
        const TAG: &str = "a CAA tag of letters and digits";
        const VALUE: &str = "a CAA value";
        let flags = f.u8()?;
        let (at, tag) = f.next(TAG)?;
        if !valid_caa_tag(tag.raw) || tag.raw.len() > 255 {
            return Err(text_error(at, TAG));
        }
        let (at, value) = f.next(VALUE)?;
        let value = unescape(value.raw).ok_or_else(|| text_error(at, VALUE))?;
        Ok(Caa {
            flags,
            tag: tag.raw.to_vec(),
            value,
        })
    }
}

impl fmt::Display for Caa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.flags)?;
        for &b in &self.tag {
            fmt::Write::write_char(f, char::from(b))?;
        }
        f.write_str(" ")?;
        write_character_string(f, &self.value)
    }
}

/// RFC 8976 §2.2.4: a digest shorter than 12 octets is invalid.
const ZONEMD_MIN_DIGEST: usize = 12;

/// ZONEMD record data (RFC 8976 §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zonemd {
    pub serial: u32,
    pub scheme: u8,
    pub hash_algorithm: u8,
    pub digest: Vec<u8>,
}

impl Zonemd {
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Zonemd, WireError> {
        let serial = r.read_u32()?;
        let scheme = r.read_u8()?;
        let hash_algorithm = r.read_u8()?;
        if r.remaining() < ZONEMD_MIN_DIGEST {
            return Err(bad(r, "ZONEMD digest shorter than 12 octets"));
        }
        Ok(Zonemd {
            serial,
            scheme,
            hash_algorithm,
            digest: r.read_rest().to_vec(),
        })
    }

    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.serial.to_be_bytes());
        out.extend_from_slice(&[self.scheme, self.hash_algorithm]);
        out.extend_from_slice(&self.digest);
    }

    pub(crate) fn parse(f: &mut Fields<'_, '_>) -> Result<Zonemd, RdataTextError> {
        let serial = f.u32()?;
        let scheme = f.u8()?;
        let hash_algorithm = f.u8()?;
        let at = f.index();
        let digest = f.rest_hex()?;
        if digest.len() < ZONEMD_MIN_DIGEST {
            return Err(text_error(at, "a hex digest of at least 12 octets"));
        }
        Ok(Zonemd {
            serial,
            scheme,
            hash_algorithm,
            digest,
        })
    }
}

impl fmt::Display for Zonemd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} ",
            self.serial, self.scheme, self.hash_algorithm
        )?;
        write_hex(f, &self.digest)
    }
}
