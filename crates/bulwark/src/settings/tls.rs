//! Encrypted listeners: where DNS over TLS, HTTPS and QUIC are served,
//! with which certificate, and the connection limits that differ from plain
//! TCP's.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Seed 004: Quad9 closes an idle connection after about 20 s; an encrypted
/// connection costs a handshake to reopen, so it is kept longer than TCP's.
pub const DEFAULT_TLS_IDLE_TIMEOUT: Duration = Duration::from_secs(20);
/// Seed 004: Cloudflare closes a connection after 10,000 queries, which
/// bounds what one connection's keys protect and rebalances long clients.
pub const DEFAULT_TLS_MAX_QUERIES_PER_CONNECTION: u32 = 10_000;

/// What an encrypted listener speaks over TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encrypted {
    /// DNS over TLS (RFC 7858), on TCP.
    Dot,
    /// DNS over HTTPS (RFC 8484), queries at this path: HTTP/2 and HTTP/1.1
    /// on TCP, and with `http3` HTTP/3 on UDP at the same address.
    Doh { path: String, http3: bool },
    /// DNS over QUIC (RFC 9250), on UDP.
    Doq,
}

impl Encrypted {
    /// Whether the listener takes a TCP port at its address.
    pub fn uses_tcp(&self) -> bool {
        !matches!(self, Encrypted::Doq)
    }

    /// Whether the listener takes a UDP port at its address.
    pub fn uses_udp(&self) -> bool {
        matches!(self, Encrypted::Doq | Encrypted::Doh { http3: true, .. })
    }
}

/// One `[[listener]]` with `transport = "tls"`, `"https"` or `"quic"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsListener {
    pub address: SocketAddr,
    pub kind: Encrypted,
    /// PEM: the certificate chain, leaf first.
    pub certificate: PathBuf,
    /// PEM: the leaf's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// `[server] tls_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsLimits {
    pub idle_timeout: Duration,
    pub max_queries_per_connection: u32,
    pub handshake_timeout: Duration,
}

impl Default for TlsLimits {
    fn default() -> Self {
        TlsLimits {
            idle_timeout: DEFAULT_TLS_IDLE_TIMEOUT,
            max_queries_per_connection: DEFAULT_TLS_MAX_QUERIES_PER_CONNECTION,
            handshake_timeout: bulwark_net::tls::DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}
