//! Reading and validating the query (RFC 1035 §4.1, RFC 6891 §6.1): the whole
//! message is checked once by `MessageView`; here we decide what cannot be
//! answered at all.

use bulwark_proto::message::{bits, MessageView};
use bulwark_proto::Opcode;

/// Why a query is not answered normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// Too short for a header, or a response (QR set): nothing is sent.
    Drop,
    /// RFC 1035 §4.1.1: the query could not be read: FORMERR.
    Malformed,
    /// RFC 1035 §4.1.1, RFC 6895 §2.2: an opcode this server does not
    /// implement: NOTIMP, judged from the header alone.
    NotImplemented,
}

/// Parses and validates `bytes` as a query.
pub(crate) fn read_query(bytes: &[u8]) -> Result<MessageView<'_>, Rejected> {
    // A response sent to us: answering it could start a loop between servers.
    if bits::is_response(bytes).is_none_or(|qr| qr) {
        return Err(Rejected::Drop);
    }
    // The opcode says how to read the rest; an unknown one leaves nothing
    // else to judge (a missing question is no FORMERR then).
    if !bits::opcode(bytes).is_some_and(is_implemented) {
        return Err(Rejected::NotImplemented);
    }
    MessageView::parse(bytes).map_err(|_| Rejected::Malformed)
}

/// The opcodes this server answers or hands to its own handlers.
fn is_implemented(opcode: Opcode) -> bool {
    matches!(opcode, Opcode::QUERY | Opcode::NOTIFY | Opcode::UPDATE)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use bulwark_proto::message::HEADER_LEN;

    /// id 0x0102, RD, one question `a.` IN A.
    const QUERY: &[u8] = &[1, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, b'a', 0, 0, 1, 0, 1];

    #[test]
    fn short_and_response_packets_are_dropped() {
        assert_eq!(read_query(&QUERY[..11]).err(), Some(Rejected::Drop));
        let mut r = QUERY.to_vec();
        r[2] |= 0x80; // QR
        assert_eq!(read_query(&r).err(), Some(Rejected::Drop));
    }

    #[test]
    fn truncated_or_padded_queries_are_malformed() {
        assert_eq!(
            read_query(&QUERY[..QUERY.len() - 1]).err(),
            Some(Rejected::Malformed)
        );
        let mut long = QUERY.to_vec();
        long.push(0);
        assert_eq!(read_query(&long).err(), Some(Rejected::Malformed));
        assert!(read_query(QUERY).is_ok());
    }

    #[test]
    fn unknown_opcodes_are_not_implemented_whatever_follows() {
        for opcode in [1u8, 2, 3, 6, 7, 15] {
            // Header only: no question, which QUERY would find malformed.
            let mut h = QUERY[..HEADER_LEN].to_vec();
            h[2] = opcode << 3;
            h[5] = 0;
            assert_eq!(
                read_query(&h).err(),
                Some(Rejected::NotImplemented),
                "{opcode}"
            );
            // Trailing junk changes nothing.
            let mut junk = QUERY.to_vec();
            junk[2] = opcode << 3;
            junk.push(0xff);
            assert_eq!(
                read_query(&junk).err(),
                Some(Rejected::NotImplemented),
                "{opcode}"
            );
        }
        for opcode in [0u8, 4, 5] {
            let mut q = QUERY.to_vec();
            q[2] = opcode << 3;
            assert!(read_query(&q).is_ok(), "{opcode}");
        }
    }
}
