//! QUIC listeners (quinn): DNS over QUIC (RFC 9250) and DNS over HTTPS on
//! HTTP/3 (RFC 8484 over RFC 9114). One UDP socket per listener, each with
//! its certificate; the connection caps of the stream transports (a total,
//! and per client with eviction of the client's own idle connection, see
//! `crate::client_conns`), an address check (a QUIC Retry) for every new
//! client once half the total is in use, fewer concurrent streams per
//! connection under the same pressure, a handshake timeout, and each close
//! counted by its reason in a [`TcpStats`].

mod doq_conn;
mod http3;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{ConnectionError, TransportConfig, VarInt};

use crate::caps::Caps;
use crate::client_conns::ClientSlot;
use crate::doq::DoqError;
use crate::error::NetError;
use crate::https::DohConfig;
use crate::shutdown::Shutdown;
use crate::tcp::{bump, count_end, count_refusal, ConnectionEnd, TcpConfig, TcpStats};
use crate::tls::{ServerCertificate, TlsError, TlsVersions};
use crate::QueryHandler;

/// RFC 9114 §3.1: the ALPN protocol ID of HTTP/3.
pub const ALPN_H3: &[u8] = b"h3";

/// Concurrent streams (queries in flight) a connection may have: as many as
/// HTTP/2 allows a DoH connection.
pub const DEFAULT_MAX_STREAMS: u32 = 100;
/// The streams a connection opened under pressure may have: enough for a
/// client's pipeline, while many connections each hold little.
pub const PRESSED_MAX_STREAMS: u32 = 10;
/// Octets a client may have sent on one stream before it is read: one
/// query, framed (RFC 9250 §4.2).
const STREAM_WINDOW: u32 = 2 + 65_535;
/// Octets a connection may have unacknowledged towards a client: a client
/// that stops reading holds this much memory, no more.
const SEND_WINDOW: u64 = 1 << 20;
/// How much longer QUIC's idle timeout is than the connection's own.
const IDLE_MARGIN: Duration = Duration::from_secs(2);
/// How long a closing endpoint waits for its last packets to leave.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// What a QUIC listener serves.
#[derive(Debug, Clone)]
pub enum QuicService {
    /// DNS over QUIC (RFC 9250).
    Doq,
    /// DNS over HTTPS on HTTP/3.
    Http3(DohConfig),
}

/// A listener's QUIC configuration: TLS 1.3 with its certificate, its ALPN,
/// and the limits of each connection: one set for ordinary times, one for
/// connections accepted under pressure.
#[derive(Clone)]
pub struct QuicServer {
    config: quinn::ServerConfig,
    /// Fewer streams (a peer's stream credit is granted in the handshake's
    /// transport parameters and can never be taken back, so it is chosen
    /// before the handshake), and no 0-RTT (a server taking 0-RTT may not
    /// offer less than the session it resumes remembers, RFC 9000 §7.4.1).
    pressed: Arc<quinn::ServerConfig>,
    handshake_timeout: Duration,
    service: QuicService,
}

impl std::fmt::Debug for QuicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicServer")
            .field("service", &self.service)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl QuicServer {
    /// The server side of QUIC for `service` with `certificate`. DoQ takes
    /// 0-RTT data (only queries safe to replay are answered from it, see
    /// [`crate::doq::replay_safe`]); HTTP/3 does not.
    pub fn new(
        certificate: Arc<ServerCertificate>,
        service: QuicService,
        limits: &TcpConfig,
        handshake_timeout: Duration,
    ) -> Result<QuicServer, TlsError> {
        let (alpn, zero_rtt, uni_streams) = match &service {
            // RFC 9250 §4.2: a client's unidirectional stream is an error;
            // allowing none keeps any from being opened.
            QuicService::Doq => (crate::doq::ALPN_DOQ, true, 0u32),
            // HTTP/3's control stream and QPACK's two, and room for grease.
            QuicService::Http3(_) => (ALPN_H3, false, 8u32),
        };
        let mut tls = crate::tls::server_config(certificate, &[alpn], TlsVersions::Tls13Only)?;
        if zero_rtt {
            // QUIC takes 0-RTT whole or not at all: rustls' marker for "on".
            tls.max_early_data_size = u32::MAX;
            // rustls accepts early data only on stateful resumption: the
            // session stays in the server's cache, and a ticket is taken
            // from it once, so a recorded 0-RTT flight resumes no second
            // time on this server (RFC 8446 §8.1).
            tls.ticketer = Arc::new(crate::tls::StatefulOnly);
        }
        let mut tls_pressed = tls.clone();
        tls_pressed.max_early_data_size = 0;
        let config = quic_config(tls, DEFAULT_MAX_STREAMS, uni_streams, limits)?;
        let pressed = quic_config(tls_pressed, PRESSED_MAX_STREAMS, uni_streams, limits)?;
        Ok(QuicServer {
            config,
            pressed: Arc::new(pressed),
            handshake_timeout,
            service,
        })
    }
}

/// quinn's configuration over `tls`: `streams` concurrent streams (queries)
/// a connection may open, flow-control windows sized for DNS messages.
fn quic_config(
    tls: rustls::ServerConfig,
    streams: u32,
    uni_streams: u32,
    limits: &TcpConfig,
) -> Result<quinn::ServerConfig, TlsError> {
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| {
        TlsError::Config(rustls::Error::General(format!("QUIC needs TLS 1.3: {e}")))
    })?;
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(streams))
        .max_concurrent_uni_streams(VarInt::from_u32(uni_streams))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(
            STREAM_WINDOW.saturating_mul(streams.min(16)),
        ))
        .send_window(SEND_WINDOW)
        // The idle timeout both sides agree on: a client that goes quiet
        // without closing is forgotten after it. A little longer than the
        // connection's own, so a client hears the graceful close
        // (DOQ_NO_ERROR) rather than silence.
        .max_idle_timeout(
            quinn::IdleTimeout::try_from(limits.idle_timeout.saturating_add(IDLE_MARGIN)).ok(),
        );
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    // Clients move between networks (RFC 9250 §5.5.2 expects it).
    config.migration(true);
    Ok(config)
}

/// A bound UDP socket for QUIC, as [`bind_quic`] makes it.
#[derive(Debug)]
pub struct BoundQuic {
    socket: std::net::UdpSocket,
}

impl BoundQuic {
    /// The address bound, with a port 0 resolved to the kernel's choice.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

/// Binds a UDP socket for a QUIC listener (IPV6_V6ONLY on v6).
pub fn bind_quic(addr: SocketAddr) -> Result<BoundQuic, NetError> {
    Ok(BoundQuic {
        socket: crate::udp::bind_plain(addr)?.into(),
    })
}

/// What every connection of one [`serve_quic`] call shares.
struct Limits {
    config: TcpConfig,
    caps: Arc<Caps>,
}

/// Serves every QUIC listener until `shutdown` fires. Each connection gets
/// its own handler from `make_handler`; the caps of `config` are shared by
/// all the listeners. Must run inside a tokio runtime.
pub async fn serve_quic<F, H>(
    listeners: Vec<(BoundQuic, QuicServer)>,
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
    let mut endpoints = Vec::new();
    for (bound, server) in listeners {
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            Some(server.config.clone()),
            bound.socket,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(NetError::Listener)?;
        endpoints.push((endpoint, Arc::new(server)));
    }
    let mut accepts = tokio::task::JoinSet::new();
    for (endpoint, server) in &endpoints {
        accepts.spawn(accept_loop(
            endpoint.clone(),
            Arc::clone(server),
            Arc::clone(&limits),
            Arc::clone(&make_handler),
            Arc::clone(&stats),
            shutdown.clone(),
        ));
    }
    while accepts.join_next().await.is_some() {}
    for (endpoint, _) in &endpoints {
        endpoint.close(VarInt::from_u32(DoqError::NoError.code()), b"shutdown");
        let _ = tokio::time::timeout(DRAIN_WAIT, endpoint.wait_idle()).await;
    }
    Ok(())
}

async fn accept_loop<F, H>(
    endpoint: quinn::Endpoint,
    server: Arc<QuicServer>,
    limits: Arc<Limits>,
    make_handler: Arc<F>,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let local = endpoint
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    loop {
        let incoming = tokio::select! {
            _ = shutdown.wait() => return,
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => return,
            },
        };
        // Under pressure a client proves it owns its address (one round
        // trip) before it costs a connection: spoofed floods end here.
        let pressed = limits.caps.pressed();
        if pressed && !incoming.remote_address_validated() && incoming.may_retry() {
            let _ = incoming.retry();
            continue;
        }
        let place = match limits.caps.admit(incoming.remote_address().ip()) {
            Ok(p) => p,
            Err(refused) => {
                count_refusal(&stats, refused);
                incoming.refuse();
                continue;
            }
        };
        let accepted = if pressed {
            incoming.accept_with(Arc::clone(&server.pressed))
        } else {
            incoming.accept()
        };
        let connecting = match accepted {
            Ok(c) => c,
            Err(e) => {
                bump(&stats.accepted);
                count_end(&stats, &ConnectionEnd::Handshake(std::io::Error::other(e)));
                continue;
            }
        };
        bump(&stats.accepted);
        let handler = make_handler();
        let (server, stats, shutdown) = (Arc::clone(&server), Arc::clone(&stats), shutdown.clone());
        let limits = Arc::clone(&limits);
        tokio::spawn(async move {
            let peer = connecting.remote_address();
            let held = Held {
                config: &limits.config,
                slot: place.slot(),
            };
            let served = serve_connection(connecting, &server, held, handler, local, &stats);
            let end = tokio::select! {
                _ = shutdown.wait() => ConnectionEnd::Shutdown,
                end = served => end,
            };
            tracing::debug!(%peer, reason = %end, "QUIC connection closed");
            count_end(&stats, &end);
            drop(place);
        });
    }
}

/// What a connection is held to: the limits, and its place among its
/// client's.
struct Held<'a> {
    config: &'a TcpConfig,
    slot: Option<&'a ClientSlot>,
}

/// Completes the handshake (DoQ serves 0-RTT streams meanwhile) and serves
/// the connection until it ends.
async fn serve_connection<H: QueryHandler + Send + 'static>(
    connecting: quinn::Connecting,
    server: &QuicServer,
    held: Held<'_>,
    handler: H,
    local: SocketAddr,
    stats: &Arc<TcpStats>,
) -> ConnectionEnd {
    let Held { config, slot } = held;
    match &server.service {
        QuicService::Doq => {
            let Ok((connection, established)) = connecting.into_0rtt() else {
                return ConnectionEnd::Handshake(std::io::Error::other("no 0-RTT on a server"));
            };
            let handshake = tokio::time::timeout(server.handshake_timeout, established);
            let served = doq_conn::serve(&connection, handler, local, config, stats, slot);
            tokio::pin!(handshake, served);
            // 0-RTT streams are served while the handshake completes; a
            // connection that ends before it has, failed it.
            let mut established = false;
            let end = loop {
                tokio::select! {
                    biased;
                    done = &mut handshake, if !established => match done {
                        Err(_) => break ConnectionEnd::HandshakeTimeout,
                        Ok(_) => match connection.close_reason() {
                            None => established = true,
                            Some(e) => break handshake_failed(e),
                        },
                    },
                    end = &mut served => match end {
                        ConnectionEnd::PeerClosed | ConnectionEnd::Protocol | ConnectionEnd::Io(_)
                            if !established =>
                        {
                            let why = connection.close_reason();
                            break why.map_or(ConnectionEnd::HandshakeTimeout, handshake_failed);
                        }
                        end => break end,
                    },
                }
            };
            close_for(&connection, &end);
            end
        }
        QuicService::Http3(doh) => {
            let handshake = tokio::time::timeout(server.handshake_timeout, connecting);
            let evicted = evicted(slot);
            let connection = tokio::select! {
                () = evicted => return ConnectionEnd::Evicted,
                done = handshake => match done {
                    Err(_) => return ConnectionEnd::HandshakeTimeout,
                    Ok(Err(e)) => return handshake_failed(e),
                    Ok(Ok(c)) => c,
                },
            };
            let end = http3::serve(&connection, handler, local, config, doh, stats, slot).await;
            close_for(&connection, &end);
            end
        }
    }
}

/// Resolves when the connection is chosen to make room for a newer one of
/// the same client; never without a per-client cap.
async fn evicted(slot: Option<&ClientSlot>) {
    match slot {
        Some(s) => s.evicted().await,
        None => std::future::pending().await,
    }
}

/// Closes the connection with the code that says why (RFC 9250 §4.3): no
/// error when idle, at the query cap or shutting down; excessive load when
/// evicted; a protocol error when the client broke the rules.
fn close_for(connection: &quinn::Connection, end: &ConnectionEnd) {
    let (code, reason): (DoqError, &[u8]) = match end {
        ConnectionEnd::Idle => (DoqError::NoError, b"idle"),
        ConnectionEnd::QueryLimit => (DoqError::NoError, b"query limit"),
        ConnectionEnd::Shutdown => (DoqError::NoError, b"shutdown"),
        ConnectionEnd::Evicted => (DoqError::ExcessiveLoad, b"evicted"),
        ConnectionEnd::Protocol => (DoqError::ProtocolError, b"protocol error"),
        ConnectionEnd::HandshakeTimeout | ConnectionEnd::MessageTimeout => {
            (DoqError::NoError, b"timeout")
        }
        _ => (DoqError::NoError, b""),
    };
    connection.close(VarInt::from_u32(code.code()), reason);
}

/// A handshake that ended with `error`.
fn handshake_failed(error: ConnectionError) -> ConnectionEnd {
    ConnectionEnd::Handshake(std::io::Error::other(error))
}

/// Why a connection ended, from quinn's account of it.
fn end_of(error: &ConnectionError) -> ConnectionEnd {
    match error {
        ConnectionError::ApplicationClosed(_) | ConnectionError::ConnectionClosed(_) => {
            ConnectionEnd::PeerClosed
        }
        ConnectionError::TimedOut => ConnectionEnd::Idle,
        ConnectionError::LocallyClosed => ConnectionEnd::Shutdown,
        ConnectionError::TransportError(_) => ConnectionEnd::Protocol,
        other => ConnectionEnd::Io(std::io::Error::other(other.clone())),
    }
}
