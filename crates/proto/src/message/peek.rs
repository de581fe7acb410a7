//! What can be read of a message without parsing it: for counting and
//! logging messages that were refused before, or failed, a full parse.

use super::header::{Header, HEADER_LEN};
use crate::rtype::Rtype;

/// The type of the first question, when the header counts one and the octets
/// after its name hold a type. The name is stepped over, not checked: a
/// compression pointer ends it (RFC 1035 §4.1.4), and a bad label type gives
/// `None`.
pub fn first_qtype(msg: &[u8]) -> Option<Rtype> {
    if Header::parse(msg)?.qdcount == 0 {
        return None;
    }
    let end = skip_name(msg, HEADER_LEN)?;
    let t = msg.get(end..end.checked_add(2)?)?;
    Some(Rtype(u16::from_be_bytes([*t.first()?, *t.get(1)?])))
}

/// The offset just past the name at `at`.
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)?;
        match len & 0xc0 {
            0x00 if len == 0 => return at.checked_add(1),
            0x00 => at = at.checked_add(usize::from(len))?.checked_add(1)?,
            0xc0 => return at.checked_add(2),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn the_first_question_type_is_read_however_the_rest_looks() {
        let mut q = vec![0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03www\x07example\x00\x00\x1c\x00\x01");
        assert_eq!(first_qtype(&q), Some(Rtype::AAAA));
        q.extend_from_slice(&[0xff, 0xff]); // junk after: still read
        assert_eq!(first_qtype(&q), Some(Rtype::AAAA));
        let mut pointer = vec![0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 6];
        assert_eq!(first_qtype(&pointer), Some(Rtype::SOA));
        pointer[5] = 0; // no question counted
        assert_eq!(first_qtype(&pointer), None);
        assert_eq!(first_qtype(&q[..14]), None, "cut inside the name");
        assert_eq!(first_qtype(&[0u8; 5]), None);
    }
}
