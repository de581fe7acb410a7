//! The debugging query log (`[log] queries = true`): one `info` event per query,
//! with target `bulwark::query`, saying who asked what over which transport and
//! what they got. Off by default: it formats and writes a line per query, which
//! no busy server can afford; dnstap is the fast way to record every message.

use std::fmt;
use std::net::SocketAddr;

use bulwark_auth::Transport;
use bulwark_proto::message::{Header, Question};
use bulwark_proto::{MessageView, Rcode};

/// The `tracing` target of the query events, for filtering them on their own.
pub const TARGET: &str = "bulwark::query";

#[derive(Debug, Clone)]
pub struct QueryLog {
    enabled: bool,
    transport: Transport,
}

/// A value, or `-` when there is none.
struct OrDash<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// What a response said: its code and its size in octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ResponseSummary {
    rcode: Rcode,
    size: usize,
}

/// The full rcode of one of our own responses, its OPT included (RFC 6891
/// §6.1.3); only the header's 4 bits if it does not parse.
fn summarize_response(response: &[u8]) -> Option<ResponseSummary> {
    let rcode = match MessageView::parse(response) {
        Ok(view) => view.rcode(),
        Err(_) => Rcode::from_parts(Header::parse(response)?.rcode_low, 0),
    };
    Some(ResponseSummary {
        rcode,
        size: response.len(),
    })
}

fn transport_name(transport: Transport) -> &'static str {
    match transport {
        Transport::Udp => "udp",
        Transport::Tcp => "tcp",
    }
}

impl QueryLog {
    pub fn new(enabled: bool, transport: Transport) -> QueryLog {
        QueryLog { enabled, transport }
    }

    pub fn is_on(&self) -> bool {
        self.enabled
    }

    /// Logs one query and its response (`None`: nothing was sent).
    pub fn log(&self, peer: SocketAddr, query: &[u8], response: Option<&[u8]>) {
        let transport = transport_name(self.transport);
        let answered = response.and_then(summarize_response);
        let rcode = OrDash(answered.map(|r| r.rcode));
        let size = answered.map_or(0, |r| r.size);
        match MessageView::parse(query) {
            Ok(view) => {
                let question: Option<Question> = view.question();
                let question = question.as_ref();
                tracing::info!(
                    target: TARGET,
                    client = %peer,
                    transport = %transport,
                    qname = %OrDash(question.map(|q| &q.qname)),
                    qtype = %OrDash(question.map(|q| q.qtype)),
                    qclass = %OrDash(question.map(|q| q.qclass)),
                    rcode = %rcode,
                    size,
                    "query"
                );
            }
            Err(error) => {
                tracing::info!(
                    target: TARGET,
                    client = %peer,
                    transport = %transport,
                    %error,
                    rcode = %rcode,
                    size,
                    "malformed query"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// id 0x1234, QR set, rcode 3 (NXDOMAIN), no records.
    const NXDOMAIN_HEADER: [u8; 12] = [0x12, 0x34, 0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0];

    #[test]
    fn response_rcode_and_size_are_read() {
        let r = summarize_response(&NXDOMAIN_HEADER).unwrap();
        assert_eq!(r.rcode, Rcode::NXDOMAIN);
        assert_eq!(r.size, 12);
    }

    #[test]
    fn extended_rcode_joins_the_opt_bits() {
        // Header rcode 7 plus an OPT whose extended-rcode octet is 1: 23, BADCOOKIE.
        let mut wire = vec![0, 1, 0x80, 0x07, 0, 0, 0, 0, 0, 0, 0, 1];
        wire.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 0]);
        let r = summarize_response(&wire).unwrap();
        assert_eq!(r.rcode.value(), 23);
    }

    #[test]
    fn unparsable_response_still_gives_its_header_rcode() {
        let mut wire = NXDOMAIN_HEADER.to_vec();
        wire.push(0); // a byte after the last counted record
        assert_eq!(summarize_response(&wire).unwrap().rcode, Rcode::NXDOMAIN);
        assert_eq!(summarize_response(&wire[..5]), None);
    }

    #[test]
    fn missing_values_print_as_a_dash() {
        assert_eq!(OrDash::<Rcode>(None).to_string(), "-");
        assert_eq!(OrDash(Some(Rcode::REFUSED)).to_string(), "REFUSED");
    }
}
