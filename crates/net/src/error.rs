//! Errors from setting up sockets and threads.

use std::io;
use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    // The io::Error is shown in the message and not also chained as a source, so
    // callers printing the whole chain do not print it twice.
    #[error("cannot bind {proto} {addr}: {cause}")]
    Bind {
        proto: &'static str,
        addr: SocketAddr,
        cause: io::Error,
    },
    #[error("cannot set socket option {option} on {addr}: {cause}")]
    SocketOption {
        option: &'static str,
        addr: SocketAddr,
        cause: io::Error,
    },
    #[error("cannot start UDP worker thread: {0}")]
    Spawn(io::Error),
    #[error("cannot create the shutdown signal: {0}")]
    Shutdown(io::Error),
    #[error("TCP listener: {0}")]
    Listener(io::Error),
    /// Setting up the AF_XDP path on an interface.
    #[error("XDP on {interface}: {what}: {cause}")]
    Xdp {
        interface: String,
        what: &'static str,
        cause: String,
    },
}

impl NetError {
    /// Whether the failure was "address already in use": the caller may try another port.
    pub fn is_addr_in_use(&self) -> bool {
        matches!(self, NetError::Bind { cause, .. } if cause.kind() == io::ErrorKind::AddrInUse)
    }
}
