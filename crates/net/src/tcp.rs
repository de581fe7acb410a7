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

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client_conns::{Admitted, AllBusy, ClientSlot, ClientTable};
use crate::deferred::{Deferred, Responder, TCP_QUEUE};
use crate::error::NetError;
use crate::frame::{FrameDecoder, FrameError};
use crate::https::DohConfig;
use crate::shutdown::Shutdown;
use crate::tls::TlsServer;
use crate::QueryHandler;

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
const WRITE_BATCH: usize = 16 * 1024;

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

/// Binds a listening socket (SO_REUSEADDR so a restart does not wait for
/// TIME_WAIT; IPV6_V6ONLY on v6), non-blocking, ready for [`serve_tcp`].
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

/// What a listener speaks over its TCP connections.
#[derive(Clone)]
enum Security {
    /// DNS over TCP.
    Plain,
    /// DNS over TLS.
    Tls(Arc<TlsServer>),
    /// DNS over HTTPS.
    Https(Arc<TlsServer>, Arc<DohConfig>),
}

async fn serve_streams<F, H>(
    listeners: Vec<(BoundTcp, Security)>,
    config: TcpConfig,
    make_handler: F,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) -> Result<(), NetError>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let limits = Arc::new(Limits {
        slots: Semaphore::new(config.max_connections.max(1)),
        clients: Arc::new(ClientTable::new(config.max_connections_per_client)),
        config,
    });
    let make_handler = Arc::new(make_handler);
    let mut accepts = tokio::task::JoinSet::new();
    for (l, security) in listeners {
        let listener = TcpListener::from_std(l.listener).map_err(NetError::Listener)?;
        accepts.spawn(accept_loop(
            listener,
            security,
            Arc::clone(&limits),
            Arc::clone(&make_handler),
            Arc::clone(&stats),
            shutdown.clone(),
        ));
    }
    while accepts.join_next().await.is_some() {}
    Ok(())
}

/// What every connection of one [`serve_tcp`] call shares.
struct Limits {
    config: TcpConfig,
    slots: Semaphore,
    clients: Arc<ClientTable>,
}

async fn accept_loop<F, H>(
    listener: TcpListener,
    security: Security,
    limits: Arc<Limits>,
    make_handler: Arc<F>,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    // The listener's bound address, handed to each query's handler.
    let local = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait() => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: keep accepting later
                // connections rather than stop serving TCP.
                tracing::warn!(error = %e, "TCP accept failed");
                tokio::task::yield_now().await;
                continue;
            }
        };
        // At its cap a client's longest-waiting connection gives way; only
        // a client whose every connection is busy is refused.
        let (client_slot, evicting) = match limits.clients.admit(peer.ip()) {
            Ok(Some((slot, how))) => (Some(slot), how == Admitted::Evicting),
            Ok(None) => (None, false),
            Err(AllBusy) => {
                bump(&stats.rejected);
                bump(&stats.too_many_for_client);
                drop(stream);
                continue;
            }
        };
        // A connection that evicted one of its client's own takes that one's
        // place in the total (the evicted one gives it over, not back), so
        // a client flooding connections holds no more than its cap however
        // fast they come. Otherwise, full: close at once rather than queue
        // (RFC 7766 §6.2.2).
        if !evicting {
            let Ok(permit) = limits.slots.try_acquire() else {
                bump(&stats.rejected);
                bump(&stats.too_many_total);
                drop(client_slot);
                drop(stream);
                continue;
            };
            // Given back by `Connection`, which owns it as a count rather
            // than a borrow of `limits`.
            permit.forget();
        }
        bump(&stats.accepted);
        // Half the connections or more in use before this one: it gets
        // fewer HTTP/2 streams, so many connections each hold little.
        let free = limits.slots.available_permits().saturating_add(1);
        let pressed = free.saturating_mul(2) <= limits.config.max_connections;
        let connection = Connection {
            pressed,
            security: security.clone(),
            limits: Arc::clone(&limits),
            stats: Arc::clone(&stats),
            client: client_slot,
        };
        let handler = make_handler();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let mut stream = Some(stream);
            let who = Peer {
                addr: peer,
                local,
                slot: connection.client.as_ref(),
            };
            let end = tokio::select! {
                _ = shutdown.wait() => ConnectionEnd::Shutdown,
                end = serve_accepted(&mut stream, who, handler, &connection) => end,
            };
            tracing::debug!(%peer, reason = %end, "TCP connection closed");
            // Counted and its places given back before the socket closes, so a
            // client that sees the close also sees the count, and may reconnect.
            connection.count(&end);
            drop(connection);
            drop(stream);
        });
    }
}

/// Serves an accepted connection, in the clear or after a TLS handshake. DNS
/// over TCP and TLS borrow the socket, which the caller closes once the
/// connection is counted; HTTP needs it for its own (hyper owns its I/O), so
/// there the close may come first.
async fn serve_accepted<H: QueryHandler + Send + 'static>(
    socket: &mut Option<TcpStream>,
    who: Peer<'_>,
    handler: H,
    connection: &Connection,
) -> ConnectionEnd {
    let (config, stats) = (&connection.limits.config, &*connection.stats);
    let (tls, doh) = match &connection.security {
        Security::Plain => {
            return match socket.as_mut() {
                Some(stream) => serve_connection(stream, who, handler, config, stats).await,
                None => ConnectionEnd::PeerClosed,
            };
        }
        Security::Tls(tls) => (tls, None),
        Security::Https(tls, doh) => (tls, Some(doh)),
    };
    if let Some(doh) = doh {
        let Some(owned) = socket.take() else {
            return ConnectionEnd::PeerClosed;
        };
        let handshake = tokio::time::timeout(tls.handshake_timeout, tls.acceptor.accept(owned));
        let stream = match handshake_or_eviction(handshake, who.slot).await {
            Ok(s) => s,
            Err(end) => return end,
        };
        let (peer, local) = (who.addr, who.local);
        let pressed;
        let doh = if connection.pressed {
            pressed = DohConfig {
                max_concurrent_streams: doh
                    .max_concurrent_streams
                    .min(crate::quic::PRESSED_MAX_STREAMS),
                ..DohConfig::clone(doh)
            };
            &pressed
        } else {
            &**doh
        };
        return crate::https::serve_http(
            stream,
            peer,
            local,
            handler,
            config,
            doh,
            &connection.stats,
        )
        .await;
    }
    let Some(stream) = socket.as_mut() else {
        return ConnectionEnd::PeerClosed;
    };
    let handshake = tokio::time::timeout(tls.handshake_timeout, tls.acceptor.accept(stream));
    let mut stream = match handshake_or_eviction(handshake, who.slot).await {
        Ok(s) => s,
        Err(end) => return end,
    };
    let end = serve_connection(&mut stream, who, handler, config, stats).await;
    // RFC 8446 §6.1: a close_notify tells the client that nothing was cut
    // off; a client that has gone or stalled does not get to delay the close.
    if matches!(
        end,
        ConnectionEnd::PeerClosed | ConnectionEnd::Idle | ConnectionEnd::QueryLimit
    ) {
        // Flushed, not shut down: the socket closes once the connection is
        // counted, as a plain one does.
        stream.get_mut().1.send_close_notify();
        let _ = tokio::time::timeout(CLOSE_NOTIFY_WAIT, stream.flush()).await;
    }
    end
}

/// Waits for a TLS handshake (already bounded by its timeout). A connection
/// still in its handshake is idle: a newer connection of the same client at
/// its cap may take its place.
async fn handshake_or_eviction<S>(
    handshake: impl std::future::Future<
        Output = Result<
            std::io::Result<tokio_rustls::server::TlsStream<S>>,
            tokio::time::error::Elapsed,
        >,
    >,
    slot: Option<&ClientSlot>,
) -> Result<tokio_rustls::server::TlsStream<S>, ConnectionEnd> {
    let evicted = async {
        match slot {
            Some(s) => s.evicted().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = evicted => Err(ConnectionEnd::Evicted),
        done = handshake => match done {
            Err(_) => Err(ConnectionEnd::HandshakeTimeout),
            Ok(Err(e)) => Err(ConnectionEnd::Handshake(e)),
            Ok(Ok(s)) => Ok(s),
        },
    }
}

/// How long a TLS connection's close waits for its close_notify to be sent.
const CLOSE_NOTIFY_WAIT: Duration = Duration::from_secs(1);

/// Holds a connection's places in the caps; dropping it gives them back.
struct Connection {
    /// Accepted when half the connections or more were in use.
    pressed: bool,
    security: Security,
    limits: Arc<Limits>,
    stats: Arc<TcpStats>,
    client: Option<ClientSlot>,
}

impl Connection {
    fn count(&self, end: &ConnectionEnd) {
        count_end(&self.stats, end);
    }
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

impl Drop for Connection {
    fn drop(&mut self) {
        // An evicted connection's place went to its evictor.
        let passed_on = self.client.as_ref().is_some_and(ClientSlot::close);
        if !passed_on {
            self.limits.slots.add_permits(1);
        }
    }
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
struct Peer<'a> {
    addr: SocketAddr,
    local: SocketAddr,
    slot: Option<&'a ClientSlot>,
}

/// Reads, answers and writes until a limit or the client ends the connection.
async fn serve_connection<H: QueryHandler, S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    who: Peer<'_>,
    mut handler: H,
    config: &TcpConfig,
    stats: &TcpStats,
) -> ConnectionEnd {
    let Peer {
        addr: peer,
        local,
        slot,
    } = who;
    let mut decoder = FrameDecoder::new(config.max_query_size);
    let mut out: Vec<u8> = Vec::new();
    let mut responses: Vec<u8> = Vec::new();
    let mut answered: u32 = 0;
    // Responses still being made that later ones may overtake (RFC 7766
    // §6.2.1.1): each ends with its message, or with none.
    let mut replies: JoinSet<Option<Vec<u8>>> = JoinSet::new();
    // When the message now in progress must be complete by.
    let mut message_deadline: Option<Instant> = None;
    loop {
        // Evicted while reading: what was read is not answered.
        if slot.is_some_and(|s| !s.begin_work()) {
            return ConnectionEnd::Evicted;
        }
        // Answer every message already received, in order (RFC 7766 §6.2.1.1);
        // their responses leave together.
        let mut completed = false;
        loop {
            // A client with many resolutions waiting reads no more until
            // one ends: its connection holds a bounded amount of work.
            if replies.len() >= MAX_REPLIES_WAITING {
                if let Err(end) =
                    next_reply(stream, &mut replies, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
            }
            let query = match decoder.next_frame() {
                Ok(Some(q)) => q,
                Ok(None) => break,
                Err(e) => {
                    // Send what was answered before the bad prefix; the close
                    // follows either way.
                    let _ = write_responses(stream, &mut responses, config.idle_timeout).await;
                    return ConnectionEnd::BadLength(e);
                }
            };
            completed = true;
            bump(&stats.queries);
            if handler.handle(query, peer, local, &mut out) {
                push_framed(&mut responses, &out);
            } else if let Some(job) = handler.take_deferred() {
                // The job's messages follow the responses already made, and
                // the next query waits for them (a transfer is contiguous).
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
                if let Err(end) = relay_deferred(stream, job, config.idle_timeout).await {
                    return end;
                }
            } else if let Some(job) = handler.take_deferred_reply() {
                let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
                job(Responder::tcp(tx));
                replies.spawn(async move { rx.recv().await });
            }
            answered = answered.saturating_add(1);
            if config.max_queries_per_connection != 0
                && answered >= config.max_queries_per_connection
            {
                // RFC 7766 §6.2.3: the server may close; the answers go first.
                return match finish(stream, &mut replies, &mut responses, config).await {
                    Ok(()) => ConnectionEnd::QueryLimit,
                    Err(end) => end,
                };
            }
            if responses.len() >= WRITE_BATCH {
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
            }
        }
        handler.end_of_batch();
        if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await {
            return end;
        }

        // The clock for a message starts with its first octet: at the read that
        // brought it, which is now if that read also completed a message.
        let now = Instant::now();
        if decoder.pending() == 0 {
            message_deadline = None;
        } else if completed || message_deadline.is_none() {
            message_deadline = now.checked_add(config.message_timeout);
        }
        let (deadline, expired) = match message_deadline {
            Some(d) if !config.message_timeout.is_zero() => (d, ConnectionEnd::MessageTimeout),
            _ => (
                now.checked_add(config.idle_timeout).unwrap_or(now),
                if decoder.pending() == 0 {
                    ConnectionEnd::Idle
                } else {
                    ConnectionEnd::MessageTimeout
                },
            ),
        };
        if let Some(s) = slot {
            s.end_work(completed);
        }
        // Waiting on its own resolutions, a connection is not idle.
        let idle_waits = !(replies.is_empty() || decoder.pending() > 0);
        let evicted = async {
            match slot {
                Some(s) => s.evicted().await,
                None => std::future::pending().await,
            }
        };
        let read = tokio::select! {
            () = evicted => return ConnectionEnd::Evicted,
            () = tokio::time::sleep_until(deadline), if !idle_waits => return expired,
            Some(done) = replies.join_next(), if !replies.is_empty() => {
                if let Ok(Some(msg)) = done {
                    push_framed(&mut responses, &msg);
                }
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
                continue;
            }
            r = stream.read(decoder.read_space()) => r,
        };
        match read {
            Ok(0) => {
                // The client sent all it will: what it still waits for goes
                // out before the close.
                return match finish(stream, &mut replies, &mut responses, config).await {
                    Ok(()) => ConnectionEnd::PeerClosed,
                    Err(end) => end,
                };
            }
            Ok(n) => decoder.commit(n),
            Err(e) => return ConnectionEnd::Io(e),
        }
    }
}

/// Resolutions one connection may have waiting at once (a client that
/// pipelines more waits for the first ones).
const MAX_REPLIES_WAITING: usize = 64;

/// Waits for the next of the connection's waiting responses and writes it.
async fn next_reply<S: AsyncWrite + Unpin>(
    stream: &mut S,
    replies: &mut JoinSet<Option<Vec<u8>>>,
    responses: &mut Vec<u8>,
    write_limit: Duration,
) -> Result<(), ConnectionEnd> {
    if let Some(Ok(Some(msg))) = replies.join_next().await {
        push_framed(responses, &msg);
    }
    write_responses(stream, responses, write_limit).await
}

/// Writes what is ready, then every waiting response as it comes (each
/// resolution ends, answered or not, within the resolver's own limits; the
/// idle timeout bounds the whole wait all the same).
async fn finish<S: AsyncWrite + Unpin>(
    stream: &mut S,
    replies: &mut JoinSet<Option<Vec<u8>>>,
    responses: &mut Vec<u8>,
    config: &TcpConfig,
) -> Result<(), ConnectionEnd> {
    write_responses(stream, responses, config.idle_timeout).await?;
    let wait = async {
        while !replies.is_empty() {
            next_reply(stream, replies, responses, config.idle_timeout).await?;
        }
        Ok(())
    };
    tokio::time::timeout(config.idle_timeout, wait)
        .await
        .unwrap_or(Err(ConnectionEnd::Idle))
}

/// Appends one response with its two-octet length (RFC 7766 §8). A response
/// over 65535 octets cannot be framed; handlers keep to that limit, so this
/// only guards against a bug.
fn push_framed(responses: &mut Vec<u8>, msg: &[u8]) {
    if let Ok(n) = u16::try_from(msg.len()) {
        responses.extend_from_slice(&n.to_be_bytes());
        responses.extend_from_slice(msg);
    }
}

/// Runs a deferred job and writes each message it sends, until it drops its
/// responder. Messages are written one by one: a transfer of a large zone is
/// never held whole, and a client that stops reading stops the job through
/// the bounded queue.
async fn relay_deferred<S: AsyncWrite + Unpin>(
    stream: &mut S,
    job: Deferred,
    write_limit: Duration,
) -> Result<(), ConnectionEnd> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(TCP_QUEUE);
    job(Responder::tcp(tx));
    let mut framed: Vec<u8> = Vec::new();
    while let Some(msg) = rx.recv().await {
        push_framed(&mut framed, &msg);
        write_responses(stream, &mut framed, write_limit).await?;
    }
    Ok(())
}

/// Writes and clears the gathered responses. write_all copes with partial
/// writes; the timeout stops a client that never reads from holding the
/// connection forever.
async fn write_responses<S: AsyncWrite + Unpin>(
    stream: &mut S,
    responses: &mut Vec<u8>,
    limit: Duration,
) -> Result<(), ConnectionEnd> {
    if responses.is_empty() {
        return Ok(());
    }
    // Flushed too: TLS holds records until then.
    let written = tokio::time::timeout(limit, async {
        stream.write_all(responses).await?;
        stream.flush().await
    })
    .await;
    responses.clear();
    match written {
        Err(_) => Err(ConnectionEnd::WriteTimeout),
        Ok(Err(e)) => Err(ConnectionEnd::Io(e)),
        Ok(Ok(())) => Ok(()),
    }
}
