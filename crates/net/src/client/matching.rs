//! Which received message is the response to a query (RFC 5452 §4.3,
//! RFC 7766 §7): from the server asked (checked by the transport), with the
//! query's ID, QR set, and the same question, its name compared without
//! regard to case (RFC 4343). Anything else is not the response.

use bulwark_proto::message::{first_question, Header, Question};

use super::error::ClientError;

/// What the response to one query must carry.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    id: u16,
    qdcount: u16,
    /// The first question, when the query has one.
    question: Option<Question>,
}

impl Expected {
    /// Reads the ID and question of `query`.
    pub(crate) fn of_query(query: &[u8]) -> Result<Expected, ClientError> {
        let header = Header::parse(query).ok_or(ClientError::BadQuery)?;
        let question = match header.qdcount {
            0 => None,
            _ => Some(first_question(query).ok_or(ClientError::BadQuery)?),
        };
        Ok(Expected {
            id: header.id,
            qdcount: header.qdcount,
            question,
        })
    }

    /// The header of `msg` when it is the response; `None` when it is not.
    /// Only the header and question are read, so a truncated response (whose
    /// records may be cut short) still matches.
    pub(crate) fn response_header(&self, msg: &[u8]) -> Option<Header> {
        let header = Header::parse(msg)?;
        if header.id != self.id || !header.flags.qr || header.qdcount != self.qdcount {
            return None;
        }
        match &self.question {
            None => Some(header),
            // Name equality ignores ASCII case, so a server's case is accepted
            // as it echoes it (RFC 4343 §4.1).
            Some(asked) => (first_question(msg).as_ref() == Some(asked)).then_some(header),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// A message with one question for `www.example.` A IN.
    fn message(id: u16, flags: [u8; 2], qname: &[u8]) -> Vec<u8> {
        let mut m = id.to_be_bytes().to_vec();
        m.extend_from_slice(&flags);
        m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
        m.extend_from_slice(qname);
        m.extend_from_slice(&[0, 1, 0, 1]);
        m
    }

    const WWW: &[u8] = b"\x03www\x07example\x00";

    #[test]
    fn only_the_response_to_the_query_matches() {
        let expected = Expected::of_query(&message(0x1234, [0x01, 0], WWW)).unwrap();
        let cases: [(&str, Vec<u8>, bool); 6] = [
            ("the response", message(0x1234, [0x81, 0x80], WWW), true),
            (
                "the name in another case",
                message(0x1234, [0x81, 0x80], b"\x03WwW\x07EXAMPLE\x00"),
                true,
            ),
            ("another ID", message(0x1235, [0x81, 0x80], WWW), false),
            ("QR clear", message(0x1234, [0x01, 0x80], WWW), false),
            (
                "another name",
                message(0x1234, [0x81, 0x80], b"\x03ftp\x07example\x00"),
                false,
            ),
            (
                "the header alone",
                message(0x1234, [0x81, 0x80], WWW)[..12].to_vec(),
                false,
            ),
        ];
        for (what, msg, matches) in cases {
            assert_eq!(expected.response_header(&msg).is_some(), matches, "{what}");
        }
        let mut other_type = message(0x1234, [0x81, 0x80], WWW);
        other_type[WWW.len() + 13] = 28;
        assert!(
            expected.response_header(&other_type).is_none(),
            "another type"
        );
    }

    #[test]
    fn a_query_without_a_readable_question_is_refused() {
        let mut q = message(1, [0, 0], WWW);
        q.truncate(14);
        assert!(matches!(Expected::of_query(&q), Err(ClientError::BadQuery)));
        assert!(matches!(
            Expected::of_query(&q[..5]),
            Err(ClientError::BadQuery)
        ));
    }
}
