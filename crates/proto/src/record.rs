//! A resource record with typed data, as read from a zone file or built for a message.

use core::fmt;

use crate::class::Class;
use crate::name::Name;
use crate::rdata::Rdata;
use crate::rtype::Rtype;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub owner: Name,
    pub class: Class,
    pub ttl: u32,
    pub rdata: Rdata,
}

impl Record {
    pub fn rtype(&self) -> Rtype {
        self.rdata.rtype()
    }
}

impl fmt::Display for Record {
    /// One zone-file line, `owner TTL CLASS TYPE rdata`, tab-separated, with an
    /// absolute owner and explicit TTL and class so that no `$ORIGIN` or `$TTL`
    /// is needed to read it back (RFC 1035 §5.1). Data we hold as opaque bytes
    /// is written in the RFC 3597 §5 generic form under `TYPEnnn`, which every
    /// reader accepts even when it lacks the mnemonic.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\t{}\t{}\t", self.owner, self.ttl, self.class)?;
        match self.rdata {
            Rdata::Unknown { rtype, .. } => write!(f, "TYPE{}", rtype.0)?,
            _ => write!(f, "{}", self.rtype())?,
        }
        write!(f, "\t{}", self.rdata)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn record(owner: &str, ttl: u32, rtype: Rtype, text: &str) -> Record {
        let origin = Name::root();
        Record {
            owner: owner.parse().unwrap(),
            class: Class::IN,
            ttl,
            rdata: Rdata::from_text(rtype, text, &origin).unwrap(),
        }
    }

    #[test]
    fn displays_as_a_tab_separated_zone_file_line() {
        assert_eq!(
            record("www.Example.com.", 300, Rtype::A, "192.0.2.1").to_string(),
            "www.Example.com.\t300\tIN\tA\t192.0.2.1"
        );
        assert_eq!(
            record("example.com.", 0, Rtype::MX, "10 mx.example.com.").to_string(),
            "example.com.\t0\tIN\tMX\t10 mx.example.com."
        );
    }

    #[test]
    fn opaque_data_uses_the_generic_type_and_data_forms() {
        let r = record("x.", 60, Rtype::AMTRELAY, "\\# 2 0102");
        assert_eq!(r.to_string(), "x.\t60\tIN\tTYPE260\t\\# 2 0102");
        let mut ch = record("x.", 60, Rtype(65280), "\\# 0");
        ch.class = Class::CH;
        assert_eq!(ch.to_string(), "x.\t60\tCH\tTYPE65280\t\\# 0");
    }
}
