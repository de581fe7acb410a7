//! Resource record types (RFC 1035 §3.2.2 and the IANA registry).

use core::fmt;
use core::str::FromStr;

/// A record type. An open newtype, not an enum: unknown values round-trip (RFC 3597).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Rtype(pub u16);

macro_rules! rtypes {
    ($($name:ident = $val:expr),* $(,)?) => {
        impl Rtype {
            $(pub const $name: Rtype = Rtype($val);)*

            /// The mnemonic, if this type has one.
            pub fn mnemonic(self) -> Option<&'static str> {
                match self.0 {
                    $($val => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            fn from_mnemonic(s: &[u8]) -> Option<Rtype> {
                $(if s.eq_ignore_ascii_case(stringify!($name).as_bytes()) { return Some(Rtype($val)); })*
                None
            }
        }
    };
}

rtypes! {
    A = 1, NS = 2, MD = 3, MF = 4, CNAME = 5, SOA = 6, MB = 7, MG = 8, MR = 9, NULL = 10,
    WKS = 11, PTR = 12, HINFO = 13, MINFO = 14, MX = 15, TXT = 16, RP = 17, AFSDB = 18,
    X25 = 19, ISDN = 20, RT = 21, NSAP = 22, SIG = 24, KEY = 25, PX = 26, GPOS = 27,
    AAAA = 28, LOC = 29, NXT = 30, SRV = 33, NAPTR = 35, KX = 36, CERT = 37, A6 = 38,
    DNAME = 39, OPT = 41, APL = 42, DS = 43, SSHFP = 44, IPSECKEY = 45, RRSIG = 46,
    NSEC = 47, DNSKEY = 48, DHCID = 49, NSEC3 = 50, NSEC3PARAM = 51, TLSA = 52,
    SMIMEA = 53, HIP = 55, CDS = 59, CDNSKEY = 60, OPENPGPKEY = 61, CSYNC = 62,
    ZONEMD = 63, SVCB = 64, HTTPS = 65, SPF = 99, NID = 104, L32 = 105, L64 = 106,
    LP = 107, EUI48 = 108, EUI64 = 109, TKEY = 249, TSIG = 250, IXFR = 251, AXFR = 252,
    MAILB = 253, MAILA = 254, ANY = 255, URI = 256, CAA = 257, AVC = 258, DOA = 259,
    AMTRELAY = 260, TA = 32768, DLV = 32769,
}

impl Rtype {
    /// Types that only appear in questions or act on the message, never as zone data
    /// (RFC 6895 §3.1: meta-types and query types).
    pub fn is_meta(self) -> bool {
        matches!(self.0, 41 | 128..=255) || self == Rtype::OPT
    }

    /// RFC 1034 §3.7.1 / RFC 5936: questions that are not answered by an RRset lookup.
    pub fn is_query_only(self) -> bool {
        matches!(
            self,
            Rtype::ANY | Rtype::AXFR | Rtype::IXFR | Rtype::MAILA | Rtype::MAILB
        )
    }
}

impl fmt::Display for Rtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mnemonic() {
            Some(m) => f.write_str(m),
            None => write!(f, "TYPE{}", self.0),
        }
    }
}

impl fmt::Debug for Rtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The text was neither a known mnemonic nor `TYPEnnn` (RFC 3597 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown record type")]
pub struct UnknownRtype;

impl Rtype {
    /// Reads a type from its presentation text (`AAAA`, `mx`, `TYPE65534`), as
    /// octets: a zone file's tokens need no UTF-8 check to be compared.
    pub fn from_text(text: &[u8]) -> Result<Rtype, UnknownRtype> {
        if let Some(t) = Rtype::from_mnemonic(text) {
            return Ok(t);
        }
        text.get(..4)
            .filter(|p| p.eq_ignore_ascii_case(b"TYPE"))
            .and_then(|_| text.get(4..))
            .and_then(crate::class::decimal_u16)
            .map(Rtype)
            .ok_or(UnknownRtype)
    }
}

impl FromStr for Rtype {
    type Err = UnknownRtype;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rtype::from_text(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_and_generic_names_round_trip() {
        assert_eq!("aaaa".parse::<Rtype>(), Ok(Rtype::AAAA));
        assert_eq!("TYPE65534".parse::<Rtype>(), Ok(Rtype(65534)));
        assert_eq!(Rtype(65534).to_string(), "TYPE65534");
        assert_eq!("type1".parse::<Rtype>(), Ok(Rtype::A));
        assert_eq!(Rtype::HTTPS.to_string(), "HTTPS");
        assert!("TYPE".parse::<Rtype>().is_err());
        assert!("TYPE70000".parse::<Rtype>().is_err());
        assert!("FOO".parse::<Rtype>().is_err());
    }
}
