//! Message opcodes (RFC 1035 §4.1.1, RFC 1996, RFC 2136).

use core::fmt;

/// A 4-bit opcode. Open newtype so unassigned values can be answered NOTIMP and echoed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Opcode(u8);

impl Opcode {
    pub const QUERY: Opcode = Opcode(0);
    pub const IQUERY: Opcode = Opcode(1);
    pub const STATUS: Opcode = Opcode(2);
    pub const NOTIFY: Opcode = Opcode(4);
    pub const UPDATE: Opcode = Opcode(5);
    pub const DSO: Opcode = Opcode(6);

    /// Keeps the low four bits: the opcode field is 4 bits wide.
    pub const fn new(v: u8) -> Opcode {
        Opcode(v & 0x0f)
    }

    pub const fn value(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("QUERY"),
            1 => f.write_str("IQUERY"),
            2 => f.write_str("STATUS"),
            4 => f.write_str("NOTIFY"),
            5 => f.write_str("UPDATE"),
            6 => f.write_str("DSO"),
            n => write!(f, "OPCODE{n}"),
        }
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
