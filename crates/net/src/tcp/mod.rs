//! DNS over TCP per RFC 7766: two-byte length framing (§8, see [`crate::frame`]),
//! many queries per connection answered in order as they are read (pipelining,
//! §6.2.1.1), and the limits §6.2.2 and §6.2.3 let a server set against clients
//! that would hold its connections: an idle timeout, a time limit on reading
//! each message once it has started, a cap on queries per connection, and caps
//! on concurrent connections in total and per client. A connection beyond a cap
//! is closed at once rather than queued; each close is counted by its reason.
//! DNS over TLS and over HTTPS are accepted by the same loop, under the same
//! caps and counters: TLS runs this connection loop after its handshake,
//! HTTPS hands the stream to `crate::https`.

mod accept;
mod connection;

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::caps::Refused;
use crate::client_conns::ClientSlot;
use crate::error::NetError;
use crate::frame::FrameError;
use crate::https::DohConfig;
use crate::shutdown::Shutdown;
use crate::tls::TlsServer;
use crate::QueryHandler;

use accept::{serve_streams, Security};

/// RFC 7766 §6.2.3 suggests an idle timeout "on the order of seconds".
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;
/// The largest query read over TCP; a longer one closes the connection. Queries to
/// an authoritative server are small; the full 65535 would only invite memory use.
pub const DEFAULT_MAX_TCP_QUERY: usize = 16384;
/// RFC 7766 §6.2.2: per-client limits "SHOULD be much looser" than the one
/// connection a client should open, since one address may be many resolvers or
/// a NAT. 20 is that much looser (room for a resolver's pool of pipelining
/// connections), yet keeps a single address (or IPv6 /64) from holding more
/// than 2% of the default 1000 connections. The binary's configuration uses
/// the same default.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 20;
/// No cap by default (as NSD's `tcp-query-count: 0`): a pipelining resolver
/// should not have to reconnect, and a TCP client cannot spoof its address, so
/// its queries cost it a round trip each like anyone's. The idle timeout and the
/// connection caps bound what one client holds.
pub const DEFAULT_MAX_QUERIES_PER_CONNECTION: u32 = 0;
/// Time allowed to receive one whole message once its first octet has arrived.
/// A query is one or two segments, so a healthy client sends it well within this
/// even with a retransmission; a client dripping a byte at a time (slowloris)
/// is cut off however often it sends. Knot's `tcp-io-timeout` is 500 ms; this is
/// gentler on lossy paths.
pub const DEFAULT_MESSAGE_TIMEOUT: Duration = Duration::from_secs(2);
const LISTEN_BACKLOG: i32 = 1024;
/// Responses gathered from pipelined queries are written once they reach this
/// size, so a client that sends many queries and reads nothing cannot make the
/// connection buffer an unbounded amount.
pub(super) const WRITE_BATCH: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// A connection with no message in progress is closed after this long
    /// without receiving anything (also the limit on writing a response).
    pub idle_timeout: Duration,
    /// Concurrent connections over all listeners.
    pub max_connections: usize,
    /// The largest query accepted; a longer length prefix closes the connection.
    pub max_query_size: usize,
    /// Concurrent connections from one IPv4 address or IPv6 /64; 0 = unlimited.
    pub max_connections_per_client: usize,
    /// Queries answered on one connection before it is closed; 0 = unlimited.
    pub max_queries_per_connection: u32,
    /// Time to receive one whole message once its first octet arrived; zero
    /// leaves only the idle timeout (applied to each read).
    pub message_timeout: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_query_size: DEFAULT_MAX_TCP_QUERY,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            max_queries_per_connection: DEFAULT_MAX_QUERIES_PER_CONNECTION,
            message_timeout: DEFAULT_MESSAGE_TIMEOUT,
        }
    }
}

/// A bound, listening TCP socket for DNS, as [`bind_tcp`] makes it and
/// [`serve_tcp`] serves it; the edge holds it without naming a socket type.
#[derive(Debug)]
pub struct BoundTcp {
    listener: std::net::TcpListener,
}

impl BoundTcp {
    /// The address bound, with a port 0 resolved to the kernel's choice.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Connections with data in their SYN (TCP Fast Open) that may wait for
/// accept: beyond it the kernel falls back to the full handshake.
const FAST_OPEN_QUEUE: libc::c_int = 256;

/// Binds a listening socket (SO_REUSEADDR so a restart does not wait for
/// TIME_WAIT; IPV6_V6ONLY on v6; TCP Fast Open where the kernel allows it),
/// non-blocking, ready for [`serve_tcp`].
pub fn bind_tcp(addr: SocketAddr) -> Result<BoundTcp, NetError> {
    let bind_err = |cause| NetError::Bind {
        proto: "tcp",
        addr,
        cause,
    };
    let opt = |option: &'static str| {
        move |cause| NetError::SocketOption {
            option,
            addr,
            cause,
        }
    };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(bind_err)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true).map_err(opt("IPV6_V6ONLY"))?;
    }
    socket
        .set_reuse_address(true)
        .map_err(opt("SO_REUSEADDR"))?;
    socket.set_nonblocking(true).map_err(opt("O_NONBLOCK"))?;
    socket.bind(&addr.into()).map_err(bind_err)?;
    // Issue 27: a client holding our TFO cookie sends its query in the SYN
    // and has the answer a round trip sooner. An optimisation only: a
    // kernel without it (or with it turned off) leaves plain TCP, which
    // works the same, so a refusal is not an error.
    let _ = crate::sys::enable_fast_open_listener(socket.as_raw_fd(), FAST_OPEN_QUEUE);
    socket.listen(LISTEN_BACKLOG).map_err(bind_err)?;
    Ok(BoundTcp {
        listener: socket.into(),
    })
}

/// Connection counters shared by every listener of one [`serve_tcp`] call.
/// Each connection accepted ends in exactly one of the close reasons.
#[derive(Debug, Default)]
pub struct TcpStats {
    pub accepted: AtomicU64,
    /// Connections closed at accept: `too_many_total + too_many_for_client`.
    pub rejected: AtomicU64,
    pub queries: AtomicU64,
    /// Closed at accept: all `max_connections` were in use.
    pub too_many_total: AtomicU64,
    /// Closed at accept: the client already held `max_connections_per_client`
    /// and every one of them was busy answering or writing.
    pub too_many_for_client: AtomicU64,
    /// Closed after `idle_timeout` without a message in progress.
    pub idle: AtomicU64,
    /// Closed because a message was not received in full within `message_timeout`.
    pub message_timeout: AtomicU64,
    /// Closed after answering `max_queries_per_connection` queries.
    pub query_limit: AtomicU64,
    /// Closed on a length prefix below a header or above `max_query_size`.
    pub bad_length: AtomicU64,
    /// The client closed (possibly mid-message).
    pub peer_closed: AtomicU64,
    /// A response could not be written within `idle_timeout`.
    pub write_timeout: AtomicU64,
    /// A socket error (reset by the peer and the like).
    pub io_error: AtomicU64,
    /// Closed because the server is shutting down.
    pub shutdown: AtomicU64,
    /// Closed while idle or stalled mid-message, to make room for a newer
    /// connection of a client at `max_connections_per_client`.
    pub evicted: AtomicU64,
    /// TLS only: the handshake was not done within the handshake timeout.
    pub handshake_timeout: AtomicU64,
    /// TLS only: the handshake failed (no protocol or cipher in common, an
    /// ALPN other than DoT's, not TLS at all).
    pub handshake_failed: AtomicU64,
    /// QUIC only: the client broke DoQ's or HTTP/3's rules (a malformed
    /// stream, a non-zero message ID), closed with a protocol error.
    pub protocol_error: AtomicU64,
}

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Serves every listener until `shutdown` fires. Each connection gets its own
/// handler from `make_handler`. Must run inside a tokio runtime.
pub async fn serve_tcp<F, H>(
    listeners: Vec<BoundTcp>,
    config: TcpConfig,
    make_handler: F,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) -> Result<(), NetError>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let listeners = listeners
        .into_iter()
        .map(|l| (l, Security::Plain))
        .collect();
    serve_streams(listeners, config, make_handler, stats, shutdown).await
}

/// Serves DNS over TLS (RFC 7858) on every listener until `shutdown` fires:
/// the same framing, limits and counters as [`serve_tcp`], each connection
/// first completing a TLS handshake within the server's handshake timeout.
/// Each listener has its own certificate; the connection caps are shared.
pub async fn serve_tls<F, H>(
    listeners: Vec<(BoundTcp, TlsServer)>,
    config: TcpConfig,
    make_handler: F,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) -> Result<(), NetError>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let listeners = listeners
        .into_iter()
        .map(|(l, tls)| (l, Security::Tls(Arc::new(tls))))
        .collect();
    serve_streams(listeners, config, make_handler, stats, shutdown).await
}

/// Serves DNS over HTTPS (RFC 8484) on every listener until `shutdown`
/// fires: TLS as [`serve_tls`], then HTTP/2 or HTTP/1.1 as ALPN chose, with
/// the same caps and counters; `max_queries_per_connection` counts requests.
/// Each listener has its own certificate and path.
pub async fn serve_https<F, H>(
    listeners: Vec<(BoundTcp, TlsServer, DohConfig)>,
    config: TcpConfig,
    make_handler: F,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) -> Result<(), NetError>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let listeners = listeners
        .into_iter()
        .map(|(l, tls, doh)| (l, Security::Https(Arc::new(tls), Arc::new(doh))))
        .collect();
    serve_streams(listeners, config, make_handler, stats, shutdown).await
}

/// Counts a connection refused at once: in `accepted` (as the metrics have
/// it, every connection ends in one reason) and under its reason.
pub(crate) fn count_refusal(stats: &TcpStats, refused: Refused) {
    bump(&stats.accepted);
    bump(&stats.rejected);
    bump(match refused {
        Refused::TooManyForClient => &stats.too_many_for_client,
        Refused::TooManyTotal => &stats.too_many_total,
    });
}

/// Counts a connection's close under its reason.
pub(crate) fn count_end(stats: &TcpStats, end: &ConnectionEnd) {
    bump(match end {
        ConnectionEnd::PeerClosed => &stats.peer_closed,
        ConnectionEnd::Idle => &stats.idle,
        ConnectionEnd::MessageTimeout => &stats.message_timeout,
        ConnectionEnd::QueryLimit => &stats.query_limit,
        ConnectionEnd::BadLength(_) => &stats.bad_length,
        ConnectionEnd::WriteTimeout => &stats.write_timeout,
        ConnectionEnd::Io(_) => &stats.io_error,
        ConnectionEnd::Shutdown => &stats.shutdown,
        ConnectionEnd::Evicted => &stats.evicted,
        ConnectionEnd::HandshakeTimeout => &stats.handshake_timeout,
        ConnectionEnd::Handshake(_) => &stats.handshake_failed,
        ConnectionEnd::Protocol => &stats.protocol_error,
    });
}

/// Why a connection was closed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectionEnd {
    #[error("closed by the client")]
    PeerClosed,
    #[error("idle timeout")]
    Idle,
    #[error("message not received in time")]
    MessageTimeout,
    #[error("query limit reached")]
    QueryLimit,
    #[error(transparent)]
    BadLength(FrameError),
    #[error("write timed out")]
    WriteTimeout,
    #[error(transparent)]
    Io(std::io::Error),
    #[error("server shutting down")]
    Shutdown,
    #[error("evicted to make room for a newer connection of the same client")]
    Evicted,
    #[error("TLS handshake not completed in time")]
    HandshakeTimeout,
    #[error("TLS handshake failed: {0}")]
    Handshake(std::io::Error),
    #[error("the client broke the protocol")]
    Protocol,
}

/// Who a connection serves, and its place among its client's connections.
pub(super) struct Peer<'a> {
    pub(super) addr: SocketAddr,
    pub(super) local: SocketAddr,
    pub(super) slot: Option<&'a ClientSlot>,
}
