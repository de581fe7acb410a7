//! Record data: typed values for the types we know, RFC 3597 generic data for the rest.
//!
//! Each type has four faces, all here or in the family modules: wire read, wire
//! write (plus the RFC 4034 §6.2 canonical form), presentation parse and
//! presentation print. Presentation input arrives as already split `Field`s with
//! escapes intact; owner, TTL, class and type are the zone parser's business.

mod basic;
mod dnssec;
pub(crate) mod layout;
mod loc;
mod locators;
mod misc;
mod svcb;
pub(crate) mod text;

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::name::{Name, NameError};
use crate::presentation::{split_fields, Field};
use crate::rtype::Rtype;
use crate::wire::{Reader, WireError};

pub use basic::{Naptr, Soa, Srv};
pub use dnssec::{Csync, Dnskey, Ds, Nsec, Nsec3, Nsec3param, Rrsig, TypeBitmap};
pub use layout::{canonical_wire, compressible_pieces, RdataPiece};
pub use loc::Loc;
pub use locators::{Cert, Uri};
pub use misc::{Caa, Sshfp, Tlsa, Zonemd};
pub use svcb::{SvcParam, SvcParamKey, Svcb};
/// RFC 4648 §4 base64 as presentation formats write it (padding required).
pub use text::base64_decode;

use text::{text_error, Fields};

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
    /// Boxed, as are the other variants holding two names or more: the
    /// enum is as large as its largest variant, and a zone file's parse
    /// moves millions of them.
    Soa(Box<Soa>),
    Mx {
        preference: u16,
        exchange: Name,
    },
    /// One or more character-strings, each ≤ 255 octets.
    Txt(Vec<Vec<u8>>),
    /// RFC 1035 §3.3.2: two character-strings.
    Hinfo {
        cpu: Vec<u8>,
        os: Vec<u8>,
    },
    /// RFC 1183 §2.2: responsible person's mailbox and a name holding TXT records.
    Rp {
        mbox: Box<Name>,
        txt: Box<Name>,
    },
    /// RFC 1183 §1.
    Afsdb {
        subtype: u16,
        hostname: Name,
    },
    /// RFC 1183 §3.3: route-through, preference and an intermediate host.
    Rt {
        preference: u16,
        host: Name,
    },
    /// RFC 2163 §4: X.400 mapping.
    Px {
        preference: u16,
        map822: Box<Name>,
        mapx400: Box<Name>,
    },
    /// RFC 2230 §3: key exchanger.
    Kx {
        preference: u16,
        exchanger: Name,
    },
    Srv(Srv),
    Naptr(Box<Naptr>),
    /// Version 0 only; other versions stay `Unknown`.
    Loc(Loc),
    Ds(Ds),
    Cds(Ds),
    Dnskey(Dnskey),
    Cdnskey(Dnskey),
    Rrsig(Rrsig),
    Nsec(Nsec),
    Nsec3(Nsec3),
    Nsec3param(Nsec3param),
    Tlsa(Tlsa),
    /// RFC 8162: the TLSA layout for S/MIME.
    Smimea(Tlsa),
    Sshfp(Sshfp),
    Caa(Caa),
    Zonemd(Zonemd),
    Svcb(Svcb),
    Https(Svcb),
    Csync(Csync),
    /// RFC 7929: an OpenPGP transferable public key.
    Openpgpkey(Vec<u8>),
    /// RFC 4701: an opaque DHCP client identifier digest.
    Dhcid(Vec<u8>),
    Uri(Uri),
    Cert(Cert),
    Eui48([u8; 6]),
    Eui64([u8; 8]),
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
            Rdata::Hinfo { .. } => Rtype::HINFO,
            Rdata::Rp { .. } => Rtype::RP,
            Rdata::Afsdb { .. } => Rtype::AFSDB,
            Rdata::Rt { .. } => Rtype::RT,
            Rdata::Px { .. } => Rtype::PX,
            Rdata::Kx { .. } => Rtype::KX,
            Rdata::Srv(_) => Rtype::SRV,
            Rdata::Naptr(_) => Rtype::NAPTR,
            Rdata::Loc(_) => Rtype::LOC,
            Rdata::Ds(_) => Rtype::DS,
            Rdata::Cds(_) => Rtype::CDS,
            Rdata::Dnskey(_) => Rtype::DNSKEY,
            Rdata::Cdnskey(_) => Rtype::CDNSKEY,
            Rdata::Rrsig(_) => Rtype::RRSIG,
            Rdata::Nsec(_) => Rtype::NSEC,
            Rdata::Nsec3(_) => Rtype::NSEC3,
            Rdata::Nsec3param(_) => Rtype::NSEC3PARAM,
            Rdata::Tlsa(_) => Rtype::TLSA,
            Rdata::Smimea(_) => Rtype::SMIMEA,
            Rdata::Csync(_) => Rtype::CSYNC,
            Rdata::Openpgpkey(_) => Rtype::OPENPGPKEY,
            Rdata::Dhcid(_) => Rtype::DHCID,
            Rdata::Uri(_) => Rtype::URI,
            Rdata::Cert(_) => Rtype::CERT,
            Rdata::Eui48(_) => Rtype::EUI48,
            Rdata::Eui64(_) => Rtype::EUI64,
            Rdata::Sshfp(_) => Rtype::SSHFP,
            Rdata::Caa(_) => Rtype::CAA,
            Rdata::Zonemd(_) => Rtype::ZONEMD,
            Rdata::Svcb(_) => Rtype::SVCB,
            Rdata::Https(_) => Rtype::HTTPS,
            Rdata::Unknown { rtype, .. } => *rtype,
        }
    }

    /// Reads `len` bytes of record data of type `rtype` from a message, following
    /// compression pointers in the names of types that allow them.
    ///
    /// The data must fill `len` exactly: anything short or left over is
    /// `WireError::RdataLength`.
    pub fn read(rtype: Rtype, r: &mut Reader<'_>, len: usize) -> Result<Rdata, WireError> {
        let start = r.position();
        let mut sub = r.limit(len)?;
        let rdata = read_typed(rtype, &mut sub).map_err(|e| match e {
            // The sub-reader ends where the rdata ends: running out means the
            // fields do not fit the declared length.
            WireError::ShortInput { .. }
            | WireError::BadName {
                reason: NameError::Truncated,
                ..
            } => WireError::RdataLength { at: start },
            other => other,
        })?;
        if !sub.is_empty() {
            return Err(WireError::RdataLength { at: start });
        }
        Ok(rdata)
    }

    /// Appends the uncompressed wire form, names in the case they were given.
    pub fn write_wire(&self, out: &mut Vec<u8>) {
        self.write_form(out, false);
    }

    /// Appends the canonical wire form (RFC 4034 §6.2 as amended by RFC 6840 §5.1):
    /// uncompressed, with the embedded names of the listed types lowercased.
    pub fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_form(out, true);
    }

    /// The wire form as a new vector.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_wire(&mut out);
        out
    }

    fn write_form(&self, out: &mut Vec<u8>, canonical: bool) {
        // RFC 4034 §6.2 item 3 (amended by RFC 6840 §5.1, which drops NSEC):
        // names in NS, CNAME, SOA, PTR, MX, RP, AFSDB, RT, PX, KX, SRV, NAPTR,
        // DNAME and RRSIG rdata are lowercased. Names in newer types (NSEC,
        // SVCB) keep their case. The list itself is
        // `layout::lowercased_in_canonical`; tests/rdata_canonical.rs checks
        // that this typed path and `canonical_wire` agree.
        let name = |out: &mut Vec<u8>, n: &Name| put_name(out, n, canonical);
        match self {
            Rdata::A(a) => out.extend_from_slice(&a.octets()),
            Rdata::Aaaa(a) => out.extend_from_slice(&a.octets()),
            Rdata::Ns(n) | Rdata::Cname(n) | Rdata::Dname(n) | Rdata::Ptr(n) => name(out, n),
            Rdata::Soa(s) => s.write(out, canonical),
            Rdata::Mx {
                preference,
                exchange,
            } => {
                out.extend_from_slice(&preference.to_be_bytes());
                name(out, exchange);
            }
            Rdata::Txt(strings) => {
                for s in strings {
                    basic::put_character_string(out, s);
                }
            }
            Rdata::Hinfo { cpu, os } => {
                basic::put_character_string(out, cpu);
                basic::put_character_string(out, os);
            }
            Rdata::Rp { mbox, txt } => {
                name(out, mbox);
                name(out, txt);
            }
            Rdata::Afsdb {
                subtype: preference,
                hostname: host,
            }
            | Rdata::Rt { preference, host }
            | Rdata::Kx {
                preference,
                exchanger: host,
            } => {
                out.extend_from_slice(&preference.to_be_bytes());
                name(out, host);
            }
            Rdata::Px {
                preference,
                map822,
                mapx400,
            } => {
                out.extend_from_slice(&preference.to_be_bytes());
                name(out, map822);
                name(out, mapx400);
            }
            Rdata::Srv(s) => s.write(out, canonical),
            Rdata::Naptr(n) => n.write(out, canonical),
            Rdata::Loc(l) => l.write(out),
            Rdata::Ds(d) | Rdata::Cds(d) => d.write(out),
            Rdata::Dnskey(k) | Rdata::Cdnskey(k) => k.write(out),
            Rdata::Rrsig(s) => s.write(out, canonical),
            Rdata::Nsec(n) => n.write(out),
            Rdata::Nsec3(n) => n.write(out),
            Rdata::Nsec3param(n) => n.write(out),
            Rdata::Tlsa(t) | Rdata::Smimea(t) => t.write(out),
            Rdata::Csync(c) => c.write(out),
            Rdata::Openpgpkey(d) | Rdata::Dhcid(d) => out.extend_from_slice(d),
            Rdata::Uri(u) => u.write(out),
            Rdata::Cert(c) => c.write(out),
            Rdata::Eui48(a) => out.extend_from_slice(a),
            Rdata::Eui64(a) => out.extend_from_slice(a),
            Rdata::Sshfp(s) => s.write(out),
            Rdata::Caa(c) => c.write(out),
            Rdata::Zonemd(z) => z.write(out),
            Rdata::Svcb(s) | Rdata::Https(s) => s.write(out),
            // Types without a variant here may still be on the RFC 4034 §6.2
            // list (MD, MB, MINFO, NXT, SIG...): the layout table knows them.
            Rdata::Unknown { rtype, data } if canonical => {
                out.extend_from_slice(&canonical_wire(*rtype, data));
            }
            Rdata::Unknown { data, .. } => out.extend_from_slice(data),
        }
    }

    /// The name other records may need glue for or that resolution chases:
    /// NS nsdname, CNAME and DNAME target, MX exchange, SRV target, PTR target,
    /// AFSDB, RT and KX hosts and the SVCB/HTTPS target.
    ///
    /// A root target names no host (RFC 7505 null MX, RFC 2782 "no service",
    /// RFC 9460 §2.5 where it stands for the owner or for "unavailable"), so it
    /// gives `None`.
    pub fn target_name(&self) -> Option<&Name> {
        let target = match self {
            Rdata::Ns(n) | Rdata::Cname(n) | Rdata::Dname(n) | Rdata::Ptr(n) => Some(n),
            Rdata::Mx { exchange, .. } => Some(exchange),
            Rdata::Afsdb { hostname, .. } => Some(hostname),
            Rdata::Rt { host, .. } => Some(host),
            Rdata::Kx { exchanger, .. } => Some(exchanger),
            Rdata::Srv(s) => Some(&s.target),
            Rdata::Svcb(s) | Rdata::Https(s) => Some(&s.target),
            _ => None,
        };
        target.filter(|n| !n.is_root())
    }

    /// Parses the rdata fields of a record in presentation format, including the
    /// RFC 3597 `\# <len> <hex>` form for any type. Relative names use `origin`.
    pub fn parse_presentation(
        rtype: Rtype,
        fields: &[Field<'_>],
        origin: &Name,
    ) -> Result<Rdata, RdataTextError> {
        if let Some(first) = fields.first() {
            if first.raw == b"\\#" && !first.quoted {
                return parse_generic(rtype, fields);
            }
        }
        if rtype.is_meta() {
            // Meta and query types (RFC 6895 §3.1) have no presentation format
            // of their own; only the RFC 3597 §5 generic form carries their data.
            return Err(text_error(0, "\\# generic data for this type"));
        }
        let mut f = Fields::new(fields, origin);
        let rdata = parse_typed(rtype, &mut f)?;
        f.finish()?;
        Ok(rdata)
    }

    /// Splits `text` into fields as a zone file's lexer would and parses them.
    pub fn from_text(rtype: Rtype, text: &str, origin: &Name) -> Result<Rdata, RdataTextError> {
        let fields = split_fields(text.as_bytes())
            .map_err(|e| text_error(0, &format!("well-formed fields ({e})")))?;
        Rdata::parse_presentation(rtype, &fields, origin)
    }
}

fn nonempty_base64(f: &mut Fields<'_, '_>) -> Result<Vec<u8>, RdataTextError> {
    let at = f.index();
    let data = f.rest_base64()?;
    if data.is_empty() {
        return Err(text_error(at, "non-empty base64 data"));
    }
    Ok(data)
}

pub(crate) fn put_name(out: &mut Vec<u8>, n: &Name, lowercase: bool) {
    if lowercase {
        out.extend_from_slice(n.to_lowercase().as_wire());
    } else {
        out.extend_from_slice(n.as_wire());
    }
}

/// RFC 3597 §5: `\# <length> <hex>...`; for a known type the bytes must be valid
/// wire data of that type and yield the typed value.
fn parse_generic(rtype: Rtype, fields: &[Field<'_>]) -> Result<Rdata, RdataTextError> {
    const LEN: &str = "the length of the generic data";
    let len_field = fields.get(1).ok_or_else(|| text_error(1, LEN))?;
    let len = len_field
        .as_str()
        .and_then(text::parse_decimal)
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| text_error(1, LEN))?;
    let mut data = Vec::with_capacity(usize::from(len));
    for (i, f) in fields.iter().enumerate().skip(2) {
        let chunk = f
            .as_str()
            .filter(|_| !f.quoted)
            .and_then(text::hex_decode)
            .ok_or_else(|| text_error(i, "hex data"))?;
        data.extend_from_slice(&chunk);
    }
    if data.len() != usize::from(len) {
        return Err(text_error(
            2,
            &format!("{len} octets of hex data, as the length says"),
        ));
    }
    let mut r = Reader::new(&data);
    Rdata::read(rtype, &mut r, data.len())
        .map_err(|e| text_error(2, &format!("valid {rtype} wire data ({e})")))
}

fn read_typed(rtype: Rtype, r: &mut Reader<'_>) -> Result<Rdata, WireError> {
    Ok(match rtype {
        Rtype::A => {
            let b = r.read_bytes(4)?;
            let mut a = [0u8; 4];
            a.copy_from_slice(b);
            Rdata::A(Ipv4Addr::from(a))
        }
        Rtype::AAAA => {
            let b = r.read_bytes(16)?;
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            Rdata::Aaaa(Ipv6Addr::from(a))
        }
        // RFC 3597 §4: compression is allowed in the RFC 1035 types' names.
        Rtype::NS => Rdata::Ns(Name::read(r)?),
        Rtype::CNAME => Rdata::Cname(Name::read(r)?),
        Rtype::PTR => Rdata::Ptr(Name::read(r)?),
        // RFC 6672 §2.1: the DNAME target is sent uncompressed.
        Rtype::DNAME => Rdata::Dname(Name::read_uncompressed(r)?),
        Rtype::SOA => Rdata::Soa(Box::new(Soa::read(r)?)),
        Rtype::MX => Rdata::Mx {
            preference: r.read_u16()?,
            exchange: Name::read(r)?,
        },
        Rtype::TXT => Rdata::Txt(basic::read_txt(r)?),
        Rtype::HINFO => Rdata::Hinfo {
            cpu: r.read_character_string()?.to_vec(),
            os: r.read_character_string()?.to_vec(),
        },
        // Lenient on compression for the RFC 1183/2782/3403 types, as peers are.
        Rtype::RP => Rdata::Rp {
            mbox: Box::new(Name::read(r)?),
            txt: Box::new(Name::read(r)?),
        },
        Rtype::AFSDB => Rdata::Afsdb {
            subtype: r.read_u16()?,
            hostname: Name::read(r)?,
        },
        Rtype::RT => Rdata::Rt {
            preference: r.read_u16()?,
            host: Name::read(r)?,
        },
        Rtype::PX => Rdata::Px {
            preference: r.read_u16()?,
            map822: Box::new(Name::read(r)?),
            mapx400: Box::new(Name::read(r)?),
        },
        Rtype::KX => Rdata::Kx {
            preference: r.read_u16()?,
            exchanger: Name::read(r)?,
        },
        Rtype::SRV => Rdata::Srv(Srv::read(r)?),
        Rtype::NAPTR => Rdata::Naptr(Box::new(Naptr::read(r)?)),
        Rtype::LOC => {
            let whole = *r;
            match Loc::read(r)? {
                Some(loc) => Rdata::Loc(loc),
                // RFC 1876 §2: other versions are undefined; keep their bytes.
                None => {
                    let mut whole = whole;
                    r.read_rest();
                    Rdata::Unknown {
                        rtype,
                        data: whole.read_rest().to_vec(),
                    }
                }
            }
        }
        Rtype::DS => Rdata::Ds(Ds::read(r)?),
        Rtype::CDS => Rdata::Cds(Ds::read(r)?),
        Rtype::DNSKEY => Rdata::Dnskey(Dnskey::read(r)?),
        Rtype::CDNSKEY => Rdata::Cdnskey(Dnskey::read(r)?),
        Rtype::RRSIG => Rdata::Rrsig(Rrsig::read(r)?),
        Rtype::NSEC => Rdata::Nsec(Nsec::read(r)?),
        Rtype::NSEC3 => Rdata::Nsec3(Nsec3::read(r)?),
        Rtype::NSEC3PARAM => Rdata::Nsec3param(Nsec3param::read(r)?),
        Rtype::TLSA => Rdata::Tlsa(Tlsa::read(r)?),
        Rtype::SMIMEA => Rdata::Smimea(Tlsa::read(r)?),
        Rtype::CSYNC => Rdata::Csync(Csync::read(r)?),
        Rtype::OPENPGPKEY => Rdata::Openpgpkey(dnssec::read_blob(r, "empty OPENPGPKEY")?),
        Rtype::DHCID => Rdata::Dhcid(dnssec::read_blob(r, "empty DHCID")?),
        Rtype::URI => Rdata::Uri(Uri::read(r)?),
        Rtype::CERT => Rdata::Cert(Cert::read(r)?),
        Rtype::EUI48 => Rdata::Eui48(locators::read_eui(r)?),
        Rtype::EUI64 => Rdata::Eui64(locators::read_eui(r)?),
        Rtype::SSHFP => Rdata::Sshfp(Sshfp::read(r)?),
        Rtype::CAA => Rdata::Caa(Caa::read(r)?),
        Rtype::ZONEMD => Rdata::Zonemd(Zonemd::read(r)?),
        Rtype::SVCB => Rdata::Svcb(Svcb::read(r)?),
        Rtype::HTTPS => Rdata::Https(Svcb::read(r)?),
        // RFC 1035 §3.3 / RFC 3597 §4: the obsolete mailbox types have no
        // variant of their own, but their names may be compressed like the
        // other RFC 1035 types' (and the builder compresses them): expand them
        // so the opaque data kept is the uncompressed wire form.
        Rtype::MD | Rtype::MF | Rtype::MB | Rtype::MG | Rtype::MR => Rdata::Unknown {
            rtype,
            data: Name::read(r)?.as_wire().to_vec(),
        },
        Rtype::MINFO => {
            let mut data = Name::read(r)?.as_wire().to_vec();
            data.extend_from_slice(Name::read(r)?.as_wire());
            Rdata::Unknown { rtype, data }
        }
        _ => Rdata::Unknown {
            rtype,
            data: r.read_rest().to_vec(),
        },
    })
}

/// A dotted-quad IPv4 address, exactly as `Ipv4Addr`'s `FromStr` reads one
/// (four decimal octets, no leading zeros), but from octets: the A records
/// of a large zone file spent more time in the UTF-8 check and the general
/// address parser than in the rest of their parse.
fn ipv4_from_text(text: &[u8]) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut at = 0usize;
    let mut value = 0u16;
    let mut digits = 0u8;
    for &b in text {
        if b == b'.' {
            if digits == 0 {
                return None;
            }
            *octets.get_mut(at)? = u8::try_from(value).ok()?;
            at = at.saturating_add(1);
            (value, digits) = (0, 0);
        } else {
            let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
            // No leading zeros, at most three digits.
            if (digits == 1 && value == 0) || digits == 3 {
                return None;
            }
            value = value.saturating_mul(10).saturating_add(u16::from(digit));
            digits = digits.saturating_add(1);
        }
    }
    if at != 3 || digits == 0 {
        return None;
    }
    *octets.get_mut(3)? = u8::try_from(value).ok()?;
    Some(Ipv4Addr::from(octets))
}

/// An IPv6 address in the forms zone files mostly hold (hexadecimal groups
/// and at most one `::`, no embedded IPv4), read from octets; anything else,
/// or anything this reader turns down, is left to `Ipv6Addr`'s `FromStr`, so
/// that what is accepted and what it means stay the standard library's. The
/// AAAA records of a large zone spent a third of their parse in the UTF-8
/// check and the general parser.
fn ipv6_from_text(text: &[u8]) -> Option<Ipv6Addr> {
    ipv6_hex_groups(text).or_else(|| {
        core::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse::<Ipv6Addr>().ok())
    })
}

/// The fast half of [`ipv6_from_text`]: `None` for whatever it does not
/// read, which includes every text `Ipv6Addr` rejects.
fn ipv6_hex_groups(text: &[u8]) -> Option<Ipv6Addr> {
    let mut head = [0u16; 8];
    let mut tail = [0u16; 8];
    let (mut heads, mut tails) = (0usize, 0usize);
    let mut gap = false;
    let mut rest = text;
    if let Some(after) = rest.strip_prefix(b"::") {
        gap = true;
        rest = after;
    }
    while !rest.is_empty() {
        let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if !(1..=4).contains(&digits) {
            return None;
        }
        let (group, after) = rest.split_at_checked(digits)?;
        let value = group.iter().try_fold(0u16, |v, &b| {
            let d = char::from(b).to_digit(16)?;
            Some(v.wrapping_shl(4) | u16::try_from(d).ok()?)
        })?;
        if gap {
            *tail.get_mut(tails)? = value;
            tails = tails.saturating_add(1);
        } else {
            *head.get_mut(heads)? = value;
            heads = heads.saturating_add(1);
        }
        rest = after;
        if rest.is_empty() {
            break;
        }
        if let Some(after) = rest.strip_prefix(b"::") {
            if gap {
                return None;
            }
            gap = true;
            rest = after;
        } else {
            // A group must follow a single colon.
            rest = rest.strip_prefix(b":").filter(|r| !r.is_empty())?;
        }
    }
    let total = heads.saturating_add(tails);
    // Without `::` all eight groups; with it, `::` stands for at least one.
    if (!gap && total != 8) || (gap && total > 7) {
        return None;
    }
    let mut groups = [0u16; 8];
    groups.get_mut(..heads)?.copy_from_slice(head.get(..heads)?);
    groups
        .get_mut(8usize.saturating_sub(tails)..)?
        .copy_from_slice(tail.get(..tails)?);
    Some(Ipv6Addr::from(groups))
}

fn parse_typed(rtype: Rtype, f: &mut Fields<'_, '_>) -> Result<Rdata, RdataTextError> {
    Ok(match rtype {
        Rtype::A => {
            const WHAT: &str = "an IPv4 address";
            let (at, field) = f.next(WHAT)?;
            let a = ipv4_from_text(field.raw).ok_or_else(|| text_error(at, WHAT))?;
            Rdata::A(a)
        }
        Rtype::AAAA => {
            const WHAT: &str = "an IPv6 address";
            let (at, field) = f.next(WHAT)?;
            let a = ipv6_from_text(field.raw).ok_or_else(|| text_error(at, WHAT))?;
            Rdata::Aaaa(a)
        }
        Rtype::NS => Rdata::Ns(f.name()?),
        Rtype::CNAME => Rdata::Cname(f.name()?),
        Rtype::DNAME => Rdata::Dname(f.name()?),
        Rtype::PTR => Rdata::Ptr(f.name()?),
        Rtype::SOA => Rdata::Soa(Box::new(Soa::parse(f)?)),
        Rtype::MX => Rdata::Mx {
            preference: f.u16()?,
            exchange: f.name()?,
        },
        Rtype::TXT => {
            let mut strings = vec![f.character_string()?];
            while !f.is_done() {
                strings.push(f.character_string()?);
            }
            Rdata::Txt(strings)
        }
        Rtype::HINFO => Rdata::Hinfo {
            cpu: f.character_string()?,
            os: f.character_string()?,
        },
        Rtype::RP => Rdata::Rp {
            mbox: Box::new(f.name()?),
            txt: Box::new(f.name()?),
        },
        Rtype::AFSDB => Rdata::Afsdb {
            subtype: f.u16()?,
            hostname: f.name()?,
        },
        Rtype::RT => Rdata::Rt {
            preference: f.u16()?,
            host: f.name()?,
        },
        Rtype::PX => Rdata::Px {
            preference: f.u16()?,
            map822: Box::new(f.name()?),
            mapx400: Box::new(f.name()?),
        },
        Rtype::KX => Rdata::Kx {
            preference: f.u16()?,
            exchanger: f.name()?,
        },
        Rtype::SRV => Rdata::Srv(Srv::parse(f)?),
        Rtype::NAPTR => Rdata::Naptr(Box::new(Naptr::parse(f)?)),
        Rtype::LOC => Rdata::Loc(Loc::parse(f)?),
        Rtype::DS => Rdata::Ds(Ds::parse(f)?),
        Rtype::CDS => Rdata::Cds(Ds::parse(f)?),
        Rtype::DNSKEY => Rdata::Dnskey(Dnskey::parse(f)?),
        Rtype::CDNSKEY => Rdata::Cdnskey(Dnskey::parse(f)?),
        Rtype::RRSIG => Rdata::Rrsig(Rrsig::parse(f)?),
        Rtype::NSEC => Rdata::Nsec(Nsec::parse(f)?),
        Rtype::NSEC3 => Rdata::Nsec3(Nsec3::parse(f)?),
        Rtype::NSEC3PARAM => Rdata::Nsec3param(Nsec3param::parse(f)?),
        Rtype::TLSA => Rdata::Tlsa(Tlsa::parse(f)?),
        Rtype::SMIMEA => Rdata::Smimea(Tlsa::parse(f)?),
        Rtype::CSYNC => Rdata::Csync(Csync::parse(f)?),
        Rtype::OPENPGPKEY => Rdata::Openpgpkey(nonempty_base64(f)?),
        Rtype::DHCID => Rdata::Dhcid(nonempty_base64(f)?),
        Rtype::URI => Rdata::Uri(Uri::parse(f)?),
        Rtype::CERT => Rdata::Cert(Cert::parse(f)?),
        Rtype::EUI48 => Rdata::Eui48(locators::parse_eui(f)?),
        Rtype::EUI64 => Rdata::Eui64(locators::parse_eui(f)?),
        Rtype::SSHFP => Rdata::Sshfp(Sshfp::parse(f)?),
        Rtype::CAA => Rdata::Caa(Caa::parse(f)?),
        Rtype::ZONEMD => Rdata::Zonemd(Zonemd::parse(f)?),
        Rtype::SVCB => Rdata::Svcb(Svcb::parse(f)?),
        Rtype::HTTPS => Rdata::Https(Svcb::parse(f)?),
        _ => {
            return Err(text_error(
                0,
                &format!("\\# generic data ({rtype} has no presentation format here)"),
            ))
        }
    })
}

impl fmt::Display for Rdata {
    /// Presentation format that BIND, Knot and NSD read back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rdata::A(a) => write!(f, "{a}"),
            Rdata::Aaaa(a) => write!(f, "{a}"),
            Rdata::Ns(n) | Rdata::Cname(n) | Rdata::Dname(n) | Rdata::Ptr(n) => write!(f, "{n}"),
            Rdata::Soa(s) => write!(f, "{s}"),
            Rdata::Mx {
                preference,
                exchange,
            } => write!(f, "{preference} {exchange}"),
            Rdata::Txt(strings) => {
                for (i, s) in strings.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    text::write_character_string(f, s)?;
                }
                Ok(())
            }
            Rdata::Hinfo { cpu, os } => {
                text::write_character_string(f, cpu)?;
                f.write_str(" ")?;
                text::write_character_string(f, os)
            }
            Rdata::Rp { mbox, txt } => write!(f, "{mbox} {txt}"),
            Rdata::Afsdb { subtype, hostname } => write!(f, "{subtype} {hostname}"),
            Rdata::Rt { preference, host } => write!(f, "{preference} {host}"),
            Rdata::Kx {
                preference,
                exchanger,
            } => write!(f, "{preference} {exchanger}"),
            Rdata::Px {
                preference,
                map822,
                mapx400,
            } => write!(f, "{preference} {map822} {mapx400}"),
            Rdata::Srv(s) => write!(f, "{s}"),
            Rdata::Naptr(n) => write!(f, "{n}"),
            Rdata::Loc(l) => write!(f, "{l}"),
            Rdata::Ds(d) | Rdata::Cds(d) => write!(f, "{d}"),
            Rdata::Dnskey(k) | Rdata::Cdnskey(k) => write!(f, "{k}"),
            Rdata::Rrsig(s) => write!(f, "{s}"),
            Rdata::Nsec(n) => write!(f, "{n}"),
            Rdata::Nsec3(n) => write!(f, "{n}"),
            Rdata::Nsec3param(n) => write!(f, "{n}"),
            Rdata::Tlsa(t) | Rdata::Smimea(t) => write!(f, "{t}"),
            Rdata::Csync(c) => write!(f, "{c}"),
            Rdata::Openpgpkey(d) | Rdata::Dhcid(d) => text::write_base64(f, d),
            Rdata::Uri(u) => write!(f, "{u}"),
            Rdata::Cert(c) => write!(f, "{c}"),
            Rdata::Eui48(a) => locators::write_eui(f, a),
            Rdata::Eui64(a) => locators::write_eui(f, a),
            Rdata::Sshfp(s) => write!(f, "{s}"),
            Rdata::Caa(c) => write!(f, "{c}"),
            Rdata::Zonemd(z) => write!(f, "{z}"),
            Rdata::Svcb(s) | Rdata::Https(s) => write!(f, "{s}"),
            Rdata::Unknown { data, .. } => {
                // RFC 3597 §5.
                write!(f, "\\# {}", data.len())?;
                if !data.is_empty() {
                    f.write_str(" ")?;
                    text::write_hex(f, data)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The forms zone files hold take the fast reader, not the fallback
    /// (tests/rdata_proptest.rs holds both to the standard library).
    #[test]
    fn plain_ipv6_forms_take_the_fast_reader() {
        for text in [
            "2001:db8::1",
            "::",
            "::1",
            "fe80::",
            "1:2:3:4:5:6:7:8",
            "2001:DB8:a:B::",
        ] {
            assert_eq!(
                ipv6_hex_groups(text.as_bytes()),
                Some(text.parse::<Ipv6Addr>().unwrap()),
                "{text}"
            );
        }
        assert_eq!(ipv6_hex_groups(b"::ffff:192.0.2.1"), None);
    }
}
