//! The fixed 12-octet message header (RFC 1035 §4.1.1, RFC 4035 §3.2 for AD/CD).

use crate::opcode::Opcode;

/// Size of the header on the wire.
pub const HEADER_LEN: usize = 12;

/// The single-bit header flags. `z` is the one bit RFC 1035 reserved that is
/// still unassigned; it is carried so it can be observed, and answers clear it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(clippy::struct_excessive_bools)] // one field per header bit is the clearest model
pub struct Flags {
    pub qr: bool,
    pub aa: bool,
    pub tc: bool,
    pub rd: bool,
    pub ra: bool,
    pub z: bool,
    pub ad: bool,
    pub cd: bool,
}

/// A decoded header. `rcode_low` is only the 4 header bits of the response code;
/// the upper 8 bits of an extended rcode travel in the OPT record (RFC 6891 §6.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub id: u16,
    pub flags: Flags,
    pub opcode: Opcode,
    pub rcode_low: u8,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
}

// Bit positions in the third and fourth header octets (RFC 1035 §4.1.1).
const QR: u8 = 0x80;
const AA: u8 = 0x04;
const TC: u8 = 0x02;
const RD: u8 = 0x01;
const RA: u8 = 0x80;
const Z: u8 = 0x40;
const AD: u8 = 0x20;
const CD: u8 = 0x10;

impl Header {
    /// Decodes the first 12 octets of `bytes`; `None` if there are fewer.
    pub fn parse(bytes: &[u8]) -> Option<Header> {
        let h: &[u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
        let [i0, i1, b2, b3, q0, q1, a0, a1, n0, n1, r0, r1] = *h;
        Some(Header {
            id: u16::from_be_bytes([i0, i1]),
            flags: Flags {
                qr: b2 & QR != 0,
                aa: b2 & AA != 0,
                tc: b2 & TC != 0,
                rd: b2 & RD != 0,
                ra: b3 & RA != 0,
                z: b3 & Z != 0,
                ad: b3 & AD != 0,
                cd: b3 & CD != 0,
            },
            opcode: Opcode::new((b2 >> 3) & 0x0f),
            rcode_low: b3 & 0x0f,
            qdcount: u16::from_be_bytes([q0, q1]),
            ancount: u16::from_be_bytes([a0, a1]),
            nscount: u16::from_be_bytes([n0, n1]),
            arcount: u16::from_be_bytes([r0, r1]),
        })
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let f = self.flags;
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        let b2 = bit(f.qr, QR)
            | ((self.opcode.value() & 0x0f) << 3)
            | bit(f.aa, AA)
            | bit(f.tc, TC)
            | bit(f.rd, RD);
        let b3 =
            bit(f.ra, RA) | bit(f.z, Z) | bit(f.ad, AD) | bit(f.cd, CD) | (self.rcode_low & 0x0f);
        let [i0, i1] = self.id.to_be_bytes();
        let [q0, q1] = self.qdcount.to_be_bytes();
        let [a0, a1] = self.ancount.to_be_bytes();
        let [n0, n1] = self.nscount.to_be_bytes();
        let [r0, r1] = self.arcount.to_be_bytes();
        [i0, i1, b2, b3, q0, q1, a0, a1, n0, n1, r0, r1]
    }
}

/// The header bits of a message held as bytes, read and set in place, for
/// callers that must not parse the whole message (RFC 1035 §4.1.1). Each
/// reader is `None` for fewer octets than a header.
pub mod bits {
    use super::{Opcode, AA, HEADER_LEN, QR, TC};

    fn flags(msg: &[u8]) -> Option<(u8, u8)> {
        let h = msg.get(..HEADER_LEN)?;
        Some((*h.get(2)?, *h.get(3)?))
    }

    /// QR: the message is a response.
    pub fn is_response(msg: &[u8]) -> Option<bool> {
        flags(msg).map(|(b2, _)| b2 & QR != 0)
    }

    /// TC: the message was truncated.
    pub fn is_truncated(msg: &[u8]) -> Option<bool> {
        flags(msg).map(|(b2, _)| b2 & TC != 0)
    }

    pub fn opcode(msg: &[u8]) -> Option<Opcode> {
        flags(msg).map(|(b2, _)| Opcode::new((b2 >> 3) & 0x0f))
    }

    /// The four rcode bits of the header; an extended rcode's upper bits are
    /// in the OPT record (RFC 6891 §6.1.3).
    pub fn rcode_low(msg: &[u8]) -> Option<u8> {
        flags(msg).map(|(_, b3)| b3 & 0x0f)
    }

    /// Sets TC; nothing for fewer octets than a header.
    pub fn set_truncated(msg: &mut [u8]) {
        if msg.len() >= HEADER_LEN {
            if let Some(b) = msg.get_mut(2) {
                *b |= TC;
            }
        }
    }

    /// Sets or clears AA; nothing for fewer octets than a header.
    pub fn set_authoritative(msg: &mut [u8], on: bool) {
        if msg.len() >= HEADER_LEN {
            if let Some(b) = msg.get_mut(2) {
                if on {
                    *b |= AA;
                } else {
                    *b &= !AA;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_has_its_own_bit() {
        let cases: [(Flags, [u8; 2]); 8] = [
            (
                Flags {
                    qr: true,
                    ..Flags::default()
                },
                [0x80, 0],
            ),
            (
                Flags {
                    aa: true,
                    ..Flags::default()
                },
                [0x04, 0],
            ),
            (
                Flags {
                    tc: true,
                    ..Flags::default()
                },
                [0x02, 0],
            ),
            (
                Flags {
                    rd: true,
                    ..Flags::default()
                },
                [0x01, 0],
            ),
            (
                Flags {
                    ra: true,
                    ..Flags::default()
                },
                [0, 0x80],
            ),
            (
                Flags {
                    z: true,
                    ..Flags::default()
                },
                [0, 0x40],
            ),
            (
                Flags {
                    ad: true,
                    ..Flags::default()
                },
                [0, 0x20],
            ),
            (
                Flags {
                    cd: true,
                    ..Flags::default()
                },
                [0, 0x10],
            ),
        ];
        for (flags, bits) in cases {
            let h = Header {
                flags,
                ..Header::default()
            };
            let b = h.to_bytes();
            assert_eq!([b[2], b[3]], bits, "{flags:?}");
            assert_eq!(Header::parse(&b), Some(h));
        }
    }

    #[test]
    fn opcode_rcode_and_counts_round_trip() {
        let wire = [0xab, 0xcd, 0x28, 0x05, 0, 1, 0, 2, 0, 3, 0x01, 0x04];
        let h = Header::parse(&wire).unwrap_or_default();
        assert_eq!(h.id, 0xabcd);
        assert_eq!(h.opcode, Opcode::UPDATE);
        assert_eq!(h.rcode_low, 5);
        assert_eq!((h.qdcount, h.ancount, h.nscount, h.arcount), (1, 2, 3, 260));
        assert_eq!(h.to_bytes(), wire);
        assert_eq!(Header::parse(&wire[..11]), None);
    }

    #[test]
    #[allow(clippy::indexing_slicing)]
    fn bits_read_and_set_in_place() {
        let mut m = [
            0x12,
            0x34,
            0x80 | (5 << 3),
            0x09,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0xff,
        ];
        assert_eq!(bits::is_response(&m), Some(true));
        assert_eq!(bits::is_truncated(&m), Some(false));
        assert_eq!(bits::opcode(&m), Some(Opcode::UPDATE));
        assert_eq!(bits::rcode_low(&m), Some(9));
        bits::set_truncated(&mut m);
        bits::set_authoritative(&mut m, true);
        assert_eq!(m[2], 0x80 | (5 << 3) | TC | AA);
        bits::set_authoritative(&mut m, false);
        assert_eq!(m[2], 0x80 | (5 << 3) | TC);
        let mut short = [0x80u8; 11];
        assert_eq!(bits::is_response(&short), None);
        bits::set_truncated(&mut short);
        assert_eq!(
            short, [0x80; 11],
            "fewer octets than a header are left alone"
        );
    }
}
