//! Response codes, including the EDNS extended range (RFC 6891 §6.1.3).

use core::fmt;

/// A 12-bit response code: the low 4 bits live in the header, the high 8 in the OPT TTL.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rcode(u16);

impl Rcode {
    pub const NOERROR: Rcode = Rcode(0);
    pub const FORMERR: Rcode = Rcode(1);
    pub const SERVFAIL: Rcode = Rcode(2);
    pub const NXDOMAIN: Rcode = Rcode(3);
    pub const NOTIMP: Rcode = Rcode(4);
    pub const REFUSED: Rcode = Rcode(5);
    pub const YXDOMAIN: Rcode = Rcode(6);
    pub const YXRRSET: Rcode = Rcode(7);
    pub const NXRRSET: Rcode = Rcode(8);
    pub const NOTAUTH: Rcode = Rcode(9);
    pub const NOTZONE: Rcode = Rcode(10);
    /// RFC 6891: also BADSIG in TSIG context (RFC 8945).
    pub const BADVERS: Rcode = Rcode(16);
    pub const BADKEY: Rcode = Rcode(17);
    pub const BADTIME: Rcode = Rcode(18);
    pub const BADMODE: Rcode = Rcode(19);
    pub const BADNAME: Rcode = Rcode(20);
    pub const BADALG: Rcode = Rcode(21);
    pub const BADTRUNC: Rcode = Rcode(22);
    pub const BADCOOKIE: Rcode = Rcode(23);

    /// Keeps the low 12 bits, the width of an extended rcode.
    pub const fn new(v: u16) -> Rcode {
        Rcode(v & 0x0fff)
    }

    /// Joins the header's 4 bits with the OPT record's 8 upper bits.
    pub const fn from_parts(header_low: u8, opt_high: u8) -> Rcode {
        Rcode::new(((opt_high as u16) << 4) | (header_low as u16 & 0x0f))
    }

    pub const fn value(self) -> u16 {
        self.0
    }

    /// The 4 bits that go in the header.
    pub const fn header_bits(self) -> u8 {
        self.0.to_be_bytes()[1] & 0x0f
    }

    /// The 8 bits that go in the OPT record's extended-rcode field.
    pub const fn extended_bits(self) -> u8 {
        // 12-bit value: bits 4..12 fit in a byte.
        (self.0 >> 4).to_be_bytes()[1]
    }

    /// Whether the rcode needs an OPT record to be expressed.
    pub const fn is_extended(self) -> bool {
        self.0 > 0x0f
    }
}

impl fmt::Display for Rcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.0 {
            0 => "NOERROR",
            1 => "FORMERR",
            2 => "SERVFAIL",
            3 => "NXDOMAIN",
            4 => "NOTIMP",
            5 => "REFUSED",
            6 => "YXDOMAIN",
            7 => "YXRRSET",
            8 => "NXRRSET",
            9 => "NOTAUTH",
            10 => "NOTZONE",
            16 => "BADVERS",
            17 => "BADKEY",
            18 => "BADTIME",
            19 => "BADMODE",
            20 => "BADNAME",
            21 => "BADALG",
            22 => "BADTRUNC",
            23 => "BADCOOKIE",
            n => return write!(f, "RCODE{n}"),
        };
        f.write_str(s)
    }
}

impl fmt::Debug for Rcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_rcode_splits_between_header_and_opt() {
        assert_eq!(Rcode::BADVERS.header_bits(), 0);
        assert_eq!(Rcode::BADVERS.extended_bits(), 1);
        assert_eq!(Rcode::from_parts(0, 1), Rcode::BADVERS);
        assert_eq!(Rcode::from_parts(3, 0), Rcode::NXDOMAIN);
        assert!(!Rcode::REFUSED.is_extended());
    }
}
