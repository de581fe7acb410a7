//! The debugging query log (`[log] queries = true`): one `info` event per query,
//! with target `bulwark::query`, saying who asked what over which transport and
//! what they got. Off by default: it formats and writes a line per query, which
//! no busy server can afford; dnstap is the fast way to record every message.

use std::fmt;
use std::net::SocketAddr;

use bulwark_proto::message::Question;
use bulwark_proto::MessageView;

use crate::stats::Told;
use crate::via::Via;

/// The `tracing` target of the query events, for filtering them on their own.
pub const TARGET: &str = "bulwark::query";

#[derive(Debug, Clone)]
pub struct QueryLog {
    enabled: bool,
    via: Via,
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

impl QueryLog {
    pub fn new(enabled: bool, via: Via) -> QueryLog {
        QueryLog { enabled, via }
    }

    pub fn is_on(&self) -> bool {
        self.enabled
    }

    /// Logs one query and what its response said (`None`: nothing was
    /// sent). The query is read again for its question: this log is for
    /// debugging, and costs far more than the read.
    pub fn log(&self, peer: SocketAddr, query: &[u8], told: Option<Told>) {
        let transport = self.via.name();
        let rcode = OrDash(told.map(|t| t.rcode));
        let size = told.map_or(0, |t| t.size);
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
    use super::*;
    use bulwark_proto::Rcode;

    #[test]
    fn missing_values_print_as_a_dash() {
        assert_eq!(OrDash::<Rcode>(None).to_string(), "-");
        assert_eq!(OrDash(Some(Rcode::REFUSED)).to_string(), "REFUSED");
    }
}
