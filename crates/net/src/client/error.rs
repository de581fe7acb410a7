//! Why an exchange with another server failed.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The step of an exchange that ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// Opening a TCP connection.
    Connect,
    /// Writing a message on a TCP connection.
    Send,
    /// Waiting for the response (UDP), or for the next message (TCP).
    Receive,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Connect => "connecting",
            Operation::Send => "sending the query",
            Operation::Receive => "waiting for the response",
        })
    }
}

/// Why an exchange with another server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// RFC 5452 §9.2: an ID or port that cannot be drawn unpredictably is not
    /// drawn at all.
    #[error("the operating system's random number generator failed: {0}")]
    Random(getrandom::Error),
    /// The query's header or question cannot be read, so no response could
    /// be matched to it.
    #[error("the query is not a DNS message whose header and question can be read")]
    BadQuery,
    #[error("a message of {0} octets does not fit TCP's two-octet length prefix")]
    TooLong(usize),
    #[error(
        "the local address {via} cannot reach {server}: they are of different address families"
    )]
    AddressFamily { server: SocketAddr, via: IpAddr },
    // The io::Error is shown in the message and not also chained as a source,
    // as NetError does, so a printed chain does not repeat it.
    #[error("cannot bind a socket to {addr}: {cause}")]
    Bind { addr: SocketAddr, cause: io::Error },
    #[error("no progress {operation} within {after:?}")]
    Timeout {
        operation: Operation,
        after: Duration,
    },
    /// The server closed (or reset) the connection before the message being
    /// read had begun, or while the query was being written.
    #[error("the server closed the connection")]
    Closed,
    /// The TLS handshake failed: among other reasons, the server did not
    /// prove the identity configured for it.
    #[error("TLS handshake failed: {0}")]
    Tls(io::Error),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl ClientError {
    /// Whether the server simply did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }
}
