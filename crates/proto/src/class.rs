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

impl FromStr for Class {
    type Err = UnknownClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        for (m, c) in [
            ("IN", Class::IN),
            ("CH", Class::CH),
            ("CHAOS", Class::CH),
            ("HS", Class::HS),
            ("NONE", Class::NONE),
            ("ANY", Class::ANY),
        ] {
            if s.eq_ignore_ascii_case(m) {
                return Ok(c);
            }
        }
        let digits = s
            .get(..5)
            .filter(|p| p.eq_ignore_ascii_case("CLASS"))
            .and_then(|_| s.get(5..))
            .ok_or(UnknownClass)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(UnknownClass);
        }
        digits.parse::<u16>().map(Class).map_err(|_| UnknownClass)
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
}
