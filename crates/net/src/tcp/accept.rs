//! Accepting stream connections: the caps on connections in all and per
//! client (with eviction of a client's own idle connection), the TLS
//! handshake, and handing the connection to DNS over TCP or TLS
//! ([`super::connection`]) or to HTTP ([`crate::https`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::client_conns::ClientSlot;
use crate::error::NetError;
use crate::https::DohConfig;
use crate::shutdown::Shutdown;
use crate::tls::TlsServer;
use crate::QueryHandler;

use super::connection::serve_connection;
use super::{bump, count_end, count_refusal, BoundTcp, ConnectionEnd, Peer, TcpConfig, TcpStats};
use crate::caps::{Caps, Place};

/// What a listener speaks over its TCP connections.
#[derive(Clone)]
pub(super) enum Security {
    /// DNS over TCP.
    Plain,
    /// DNS over TLS.
    Tls(Arc<TlsServer>),
    /// DNS over HTTPS.
    Https(Arc<TlsServer>, Arc<DohConfig>),
}

pub(super) async fn serve_streams<F, H>(
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
        caps: Caps::new(config.max_connections, config.max_connections_per_client),
        config,
    });
    let make_handler = Arc::new(make_handler);
    let mut accepts = tokio::task::JoinSet::new();
    for (l, security) in listeners {
        set_nodelay_for_accepted(&l.listener);
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

/// Responses go out as written, not held for Nagle's algorithm. Set once on
/// the listener, TCP_NODELAY is inherited by every socket it accepts (Linux
/// copies it at the handshake): one system call fewer for every connection.
fn set_nodelay_for_accepted(listener: &std::net::TcpListener) {
    if let Err(e) = socket2::SockRef::from(listener).set_nodelay(true) {
        tracing::warn!(error = %e, "TCP_NODELAY refused on a listener; answers may wait for ACKs");
    }
}

/// What every connection of one `serve_tcp` (or `_tls`, `_https`) call
/// shares.
struct Limits {
    config: TcpConfig,
    caps: Arc<Caps>,
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
        // Half the connections or more in use before this one: it gets
        // fewer HTTP/2 streams, so many connections each hold little.
        let pressed = limits.caps.pressed();
        let place = match limits.caps.admit(peer.ip()) {
            Ok(p) => p,
            Err(refused) => {
                count_refusal(&stats, refused);
                drop(stream);
                continue;
            }
        };
        bump(&stats.accepted);
        let connection = Connection {
            pressed,
            security: security.clone(),
            limits: Arc::clone(&limits),
            stats: Arc::clone(&stats),
            place,
        };
        let handler = HeapHandler(Box::new(make_handler()));
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut stream = Some(stream);
            let who = Peer {
                addr: peer,
                local,
                slot: connection.place.slot(),
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

/// A connection's handler, on the heap. Its scratch space (1.7 KB) would
/// otherwise sit in the connection's future, which tokio copies at spawn and
/// again when the task ends: at one query per connection `perf` put 9% of
/// the server's time in that `memmove` (under `tokio::spawn` and
/// `set_stage`), most of it gone with this and the boxed TLS and HTTPS
/// paths below.
struct HeapHandler<H>(Box<H>);

impl<H: QueryHandler> QueryHandler for HeapHandler<H> {
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        self.0.handle(query, peer, local, out)
    }

    fn start_of_batch(&mut self, batch: &dyn crate::Batch) {
        self.0.start_of_batch(batch);
    }

    fn end_of_batch(&mut self) {
        self.0.end_of_batch();
    }

    fn take_deferred(&mut self) -> Option<crate::Deferred> {
        self.0.take_deferred()
    }

    fn take_deferred_reply(&mut self) -> Option<crate::Deferred> {
        self.0.take_deferred_reply()
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
    // The TLS and HTTPS futures (rustls' and hyper's state) are boxed: a
    // connection's task holds the largest future it may run, and a plain
    // one is spawned, moved and dropped at every accept.
    match doh {
        Some(doh) => Box::pin(serve_https(socket, who, handler, connection, tls, doh)).await,
        None => Box::pin(serve_tls(socket, who, handler, connection, tls)).await,
    }
}

/// DNS over HTTPS after the TLS handshake: hyper owns the socket.
async fn serve_https<H: QueryHandler + Send + 'static>(
    socket: &mut Option<TcpStream>,
    who: Peer<'_>,
    handler: H,
    connection: &Connection,
    tls: &TlsServer,
    doh: &Arc<DohConfig>,
) -> ConnectionEnd {
    let config = &connection.limits.config;
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
    crate::https::serve_http(stream, peer, local, handler, config, doh, &connection.stats).await
}

/// DNS over TLS: the handshake, then the stream framing over the TLS stream.
async fn serve_tls<H: QueryHandler + Send + 'static>(
    socket: &mut Option<TcpStream>,
    who: Peer<'_>,
    handler: H,
    connection: &Connection,
    tls: &TlsServer,
) -> ConnectionEnd {
    let (config, stats) = (&connection.limits.config, &*connection.stats);
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
    /// Given back when the connection is dropped.
    place: Place,
}

impl Connection {
    fn count(&self, end: &ConnectionEnd) {
        count_end(&self.stats, end);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sockets_accepted_from_the_listener_have_nodelay() {
        let bound = super::super::bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        set_nodelay_for_accepted(&bound.listener);
        bound.listener.set_nonblocking(false).unwrap();
        let addr = bound.listener.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let (accepted, _) = bound.listener.accept().unwrap();
        assert!(accepted.nodelay().unwrap());
    }
}
