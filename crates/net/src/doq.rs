//! DNS over QUIC's stream framing (RFC 9250 §4.2), read without I/O: what a
//! client's stream carries, the error code that answers a stream that breaks
//! the rules, and which queries may be answered from 0-RTT data. The QUIC
//! itself is quinn's; this is the part a fuzzer drives.

use bulwark_proto::message::{bits, first_qtype, Header};
use bulwark_proto::{Opcode, Rtype};

/// RFC 9250 §4.1.1: the ALPN protocol ID of DNS over QUIC.
pub const ALPN_DOQ: &[u8] = b"doq";

/// RFC 9250 §4.3: the application error codes of DoQ, sent in a
/// CONNECTION_CLOSE, RESET_STREAM or STOP_SENDING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum DoqError {
    /// No error: a connection closed when it is idle or at its query cap.
    NoError = 0x0,
    /// The server could not go on (an internal failure).
    InternalError = 0x1,
    /// The peer broke the protocol: a malformed stream, a non-zero message ID.
    ProtocolError = 0x2,
    /// A client's cancellation of a query.
    RequestCancelled = 0x3,
    /// The server is closing for load: a connection evicted or refused.
    ExcessiveLoad = 0x4,
    /// None of the others.
    UnspecifiedError = 0x5,
}

impl DoqError {
    /// The code on the wire.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// Why a client's stream is not one DNS query as RFC 9250 §4.2 frames it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    #[error("the stream ended before its two-octet length")]
    NoLength,
    #[error("the stream ended before the message its length announced")]
    Short,
    #[error("the stream carries more after its message")]
    Trailing,
    #[error("the message is shorter than a DNS header")]
    BelowHeader,
    #[error("the message ID is not 0 (RFC 9250 §4.2.1)")]
    NonZeroId,
}

/// The largest stream a query may take: a two-octet length and the
/// largest message that length can announce.
pub const MAX_STREAM: usize = 2 + u16::MAX as usize;

/// The query carried by a client stream read to its FIN: a two-octet
/// length, then exactly that many octets of a message with ID 0. Anything
/// else is a protocol error (RFC 9250 §4.2 and §4.3.3) that closes the
/// connection.
pub fn read_query(stream: &[u8]) -> Result<&[u8], StreamError> {
    let (prefix, rest) = stream
        .split_first_chunk::<2>()
        .ok_or(StreamError::NoLength)?;
    let len = usize::from(u16::from_be_bytes(*prefix));
    let message = rest.get(..len).ok_or(StreamError::Short)?;
    if rest.len() > len {
        return Err(StreamError::Trailing);
    }
    let id = message.first_chunk::<2>().ok_or(StreamError::BelowHeader)?;
    if Header::parse(message).is_none() {
        return Err(StreamError::BelowHeader);
    }
    if *id != [0, 0] {
        return Err(StreamError::NonZeroId);
    }
    Ok(message)
}

/// The two octets a stream carries before `message` (RFC 9250 §4.2): its
/// length; `None` for a message too long to frame.
pub fn length_prefix(message: &[u8]) -> Option<[u8; 2]> {
    u16::try_from(message.len()).ok().map(u16::to_be_bytes)
}

/// Whether a query may be answered from 0-RTT data, which an attacker can
/// replay (RFC 9250 §4.5): only a standard query that reads, not a zone
/// transfer, which is costly to repeat and whose access control must not
/// rest on data anyone could have recorded (RFC 9103 §9). UPDATE, NOTIFY and
/// the other opcodes change state or start work: they wait for the
/// handshake's 1-RTT keys.
pub fn replay_safe(query: &[u8]) -> bool {
    if bits::opcode(query) != Some(Opcode::QUERY) {
        return false;
    }
    !matches!(first_qtype(query), Some(Rtype::AXFR | Rtype::IXFR) | None)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn query(id: u16, opcode: u8, qtype: u16) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&[opcode << 3, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        m.extend_from_slice(b"\x07example\x00");
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m
    }

    fn framed(message: &[u8]) -> Vec<u8> {
        let mut out = length_prefix(message).unwrap().to_vec();
        out.extend_from_slice(message);
        out
    }

    #[test]
    fn a_framed_query_with_id_zero_is_read() {
        let q = query(0, 0, 1);
        assert_eq!(read_query(&framed(&q)), Ok(&q[..]));
    }

    #[test]
    fn a_stream_that_breaks_the_framing_is_named() {
        let q = query(0, 0, 1);
        let f = framed(&q);
        assert_eq!(read_query(&[]), Err(StreamError::NoLength));
        assert_eq!(read_query(&f[..1]), Err(StreamError::NoLength));
        assert_eq!(read_query(&f[..f.len() - 1]), Err(StreamError::Short));
        let mut more = f.clone();
        more.push(0);
        assert_eq!(read_query(&more), Err(StreamError::Trailing));
        assert_eq!(read_query(&framed(&q[..5])), Err(StreamError::BelowHeader));
        assert_eq!(
            read_query(&framed(&query(7, 0, 1))),
            Err(StreamError::NonZeroId)
        );
    }

    #[test]
    fn only_reading_queries_are_safe_to_replay() {
        assert!(replay_safe(&query(0, 0, 1)));
        assert!(replay_safe(&query(0, 0, 28)));
        assert!(!replay_safe(&query(0, 0, 252)), "AXFR");
        assert!(!replay_safe(&query(0, 0, 251)), "IXFR");
        assert!(!replay_safe(&query(0, 5, 6)), "UPDATE");
        assert!(!replay_safe(&query(0, 4, 6)), "NOTIFY");
        assert!(!replay_safe(&[0; 5]));
    }

    #[test]
    fn error_codes_are_the_rfcs() {
        assert_eq!(DoqError::NoError.code(), 0);
        assert_eq!(DoqError::ProtocolError.code(), 2);
        assert_eq!(DoqError::ExcessiveLoad.code(), 4);
        assert_eq!(DoqError::UnspecifiedError.code(), 5);
    }
}
