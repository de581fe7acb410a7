//! Record classes (RFC 1035 §3.2.4, RFC 2136 §2.4 for NONE).

use core::fmt;
use core::str::FromStr;

/// A class. Open newtype: unknown values round-trip as `CLASSnnn` (RFC 3597 §5).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Class(pub u16);

impl Class {
    pub const IN: Class = Class(1);
    pub const CH: Class = Class(3);
    pub const HS: Class = Class(4);
    pub const NONE: Class = Class(254);
    pub const ANY: Class = Class(255);

    pub fn mnemonic(self) -> Option<&'static str> {
        match self.0 {
            1 => Some("IN"),
            3 => Some("CH"),
            4 => Some("HS"),
            254 => Some("NONE"),
            255 => Some("ANY"),
            _ => None,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mnemonic() {
            Some(m) => f.write_str(m),
            None => write!(f, "CLASS{}", self.0),
        }
    }
}

impl fmt::Debug for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown class")]
pub struct UnknownClass;

impl Class {
    /// Reads a class from its presentation text (`IN`, `ch`, `CLASS3`), as
    /// octets: a zone file's tokens need no UTF-8 check to be compared.
    pub fn from_text(text: &[u8]) -> Result<Class, UnknownClass> {
        // Every token of a record's head is tried as a class; most are types,
        // so a mismatch must cost little: compare the uppercased octets whole.
        let mut upper = [0u8; 5];
        if let Some(dest) = upper.get_mut(..text.len()) {
            dest.copy_from_slice(text);
            dest.make_ascii_uppercase();
            match &*dest {
                b"IN" => return Ok(Class::IN),
                b"CH" | b"CHAOS" => return Ok(Class::CH),
                b"HS" => return Ok(Class::HS),
                b"NONE" => return Ok(Class::NONE),
                b"ANY" => return Ok(Class::ANY),
                _ => {}
            }
        }
        text.get(..5)
            .filter(|p| p.eq_ignore_ascii_case(b"CLASS"))
            .and_then(|_| text.get(5..))
            .and_then(decimal_u16)
            .map(Class)
            .ok_or(UnknownClass)
    }
}

/// A non-empty run of ASCII digits whose value fits 16 bits.
pub(crate) fn decimal_u16(digits: &[u8]) -> Option<u16> {
    crate::rdata::text::decimal(digits).and_then(|v| u16::try_from(v).ok())
}

impl FromStr for Class {
    type Err = UnknownClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Class::from_text(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_round_trip() {
        assert_eq!("in".parse::<Class>(), Ok(Class::IN));
        assert_eq!("CLASS3".parse::<Class>(), Ok(Class::CH));
        assert_eq!(Class(77).to_string(), "CLASS77");
        assert!("CLASSX".parse::<Class>().is_err());
    }

    #[test]
    fn every_mnemonic_reads_in_any_case_and_nothing_near_it_does() {
        for (text, class) in [
            ("IN", Class::IN),
            ("iN", Class::IN),
            ("ch", Class::CH),
            ("Chaos", Class::CH),
            ("hs", Class::HS),
            ("none", Class::NONE),
            ("Any", Class::ANY),
            ("class65535", Class(65535)),
        ] {
            assert_eq!(Class::from_text(text.as_bytes()), Ok(class), "{text}");
        }
        for text in [
            "",
            "I",
            "INN",
            "CHAO",
            "CHAOSS",
            "NON",
            "AN",
            "A",
            "CLASS",
            "CLASS65536",
            "CLASS-1",
            "\u{e9}N",
        ] {
            assert_eq!(
                Class::from_text(text.as_bytes()),
                Err(UnknownClass),
                "{text}"
            );
        }
    }
}
