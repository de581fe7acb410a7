//! The server's encrypted listeners: DNS over TLS (RFC 7858), DNS over
//! HTTPS (RFC 8484, with HTTP/3 beside HTTP/2 when asked) and DNS over QUIC
//! (RFC 9250), bound with the plain ones, each with the certificate its
//! `[[listener]]` names; and the demo's, with a certificate made at start
//! for `localhost`. Certificates are read again on reload; a connection
//! keeps the one it began with.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use bulwark_net::https::ALPN_DOH;
use bulwark_net::tls::{ServerCertificate, TlsServer, ALPN_DOT};
use bulwark_net::{
    bind_quic, bind_tcp, BoundQuic, BoundTcp, DohConfig, NetError, QuicServer, QuicService,
    TcpConfig,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::settings::{Encrypted, Settings, TlsLimits};

/// The demo's first DoT port, then the next free ones.
pub const DEMO_TLS_PORT: u16 = 8853;
/// The demo's first DoH port, then the next free ones.
pub const DEMO_HTTPS_PORT: u16 = 8443;

/// One bound encrypted listener: its TCP socket (DoT, DoH), its UDP socket
/// (DoQ, DoH over HTTP/3), or both.
#[derive(Debug)]
struct Bound {
    tcp: Option<BoundTcp>,
    udp: Option<BoundQuic>,
    certificate: Arc<ServerCertificate>,
    kind: Encrypted,
}

/// Bound encrypted listeners and their certificates, before serving.
#[derive(Debug, Default)]
pub struct TlsListeners {
    bound: Vec<Bound>,
}

/// The listeners ready for `bulwark_net::serve_tls`, `serve_https` and
/// `serve_quic`.
pub struct Servers {
    pub dot: Vec<(BoundTcp, TlsServer)>,
    pub doh: Vec<(BoundTcp, TlsServer, DohConfig)>,
    pub doq: Vec<(BoundQuic, QuicServer)>,
    pub doh3: Vec<(BoundQuic, QuicServer)>,
}

/// What `ctl status` and the ready file call each kind of listener.
pub const KINDS: [&str; 4] = ["tls", "https", "quic", "h3"];

impl TlsListeners {
    /// Binds each `transport = "tls"` or `"https"` listener and reads its
    /// certificate and key; an unreadable file stops the start, naming it.
    pub fn bind(settings: &Settings) -> anyhow::Result<TlsListeners> {
        let mut bound = Vec::new();
        for l in &settings.tls_listeners {
            let certificate = ServerCertificate::load(&l.certificate, &l.key)
                .with_context(|| format!("encrypted listener {}", l.address))?;
            let tcp = if l.kind.uses_tcp() {
                Some(bind_tcp(l.address)?)
            } else {
                None
            };
            // HTTP/3 beside HTTP/2 takes the port TCP was given.
            let udp_addr = tcp
                .as_ref()
                .and_then(|t| t.local_addr().ok())
                .unwrap_or(l.address);
            let udp = if l.kind.uses_udp() {
                Some(bind_quic(udp_addr)?)
            } else {
                None
            };
            bound.push(Bound {
                tcp,
                udp,
                certificate,
                kind: l.kind.clone(),
            });
        }
        Ok(TlsListeners { bound })
    }

    /// The demo's listeners on 127.0.0.1: DoT (TCP) and DoQ (UDP) from
    /// [`DEMO_TLS_PORT`], DoH on HTTP/2 and HTTP/3 from [`DEMO_HTTPS_PORT`],
    /// with a self-signed certificate for `localhost` made now.
    pub fn bind_demo() -> anyhow::Result<TlsListeners> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .context("cannot make the demo's TLS certificate")?;
        let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
        let certificate = ServerCertificate::fixed(chain, key)?;
        let mut bound = Vec::new();
        let (dot, doq) = bind_demo_ports(DEMO_TLS_PORT)?;
        bound.push(Bound {
            tcp: Some(dot),
            udp: None,
            certificate: Arc::clone(&certificate),
            kind: Encrypted::Dot,
        });
        bound.push(Bound {
            tcp: None,
            udp: Some(doq),
            certificate: Arc::clone(&certificate),
            kind: Encrypted::Doq,
        });
        let (doh, doh3) = bind_demo_ports(DEMO_HTTPS_PORT)?;
        bound.push(Bound {
            tcp: Some(doh),
            udp: Some(doh3),
            certificate,
            kind: Encrypted::Doh {
                path: bulwark_net::doh::DEFAULT_PATH.to_string(),
                http3: true,
            },
        });
        Ok(TlsListeners { bound })
    }

    /// Each bound address with what it serves there (one of [`KINDS`]).
    pub fn local_addrs(&self) -> Vec<(SocketAddr, &'static str)> {
        let mut out = Vec::new();
        for b in &self.bound {
            let tcp = b.tcp.as_ref().and_then(|t| t.local_addr().ok());
            let udp = b.udp.as_ref().and_then(|u| u.local_addr().ok());
            match b.kind {
                Encrypted::Dot => out.extend(tcp.map(|a| (a, "tls"))),
                Encrypted::Doh { .. } => {
                    out.extend(tcp.map(|a| (a, "https")));
                    out.extend(udp.map(|a| (a, "h3")));
                }
                Encrypted::Doq => out.extend(udp.map(|a| (a, "quic"))),
            }
        }
        out
    }

    pub fn certificates(&self) -> Vec<Arc<ServerCertificate>> {
        self.bound
            .iter()
            .map(|b| Arc::clone(&b.certificate))
            .collect()
    }

    /// Each listener with its TLS or QUIC server, split by what it serves.
    pub fn into_servers(
        self,
        limits: &TlsLimits,
        connections: &TcpConfig,
    ) -> anyhow::Result<Servers> {
        let mut servers = Servers {
            dot: Vec::new(),
            doh: Vec::new(),
            doq: Vec::new(),
            doh3: Vec::new(),
        };
        let handshake = limits.handshake_timeout;
        for b in self.bound {
            match b.kind {
                Encrypted::Dot => {
                    if let Some(tcp) = b.tcp {
                        let tls = TlsServer::new(b.certificate, &[ALPN_DOT], handshake)?;
                        servers.dot.push((tcp, tls));
                    }
                }
                Encrypted::Doh { path, .. } => {
                    let mut doh = DohConfig {
                        path,
                        ..DohConfig::default()
                    };
                    if let Some(udp) = b.udp {
                        // RFC 9114 §3.1.1: HTTP/2 clients learn of HTTP/3 here.
                        let port = udp.local_addr()?.port();
                        let service = QuicService::Http3(doh.clone());
                        let quic = QuicServer::new(
                            Arc::clone(&b.certificate),
                            service,
                            connections,
                            handshake,
                        )?;
                        servers.doh3.push((udp, quic));
                        doh.alt_svc = Some(format!("h3=\":{port}\"; ma=86400"));
                    }
                    if let Some(tcp) = b.tcp {
                        let tls = TlsServer::new(b.certificate, &ALPN_DOH, handshake)?;
                        servers.doh.push((tcp, tls, doh));
                    }
                }
                Encrypted::Doq => {
                    if let Some(udp) = b.udp {
                        let quic = QuicServer::new(
                            b.certificate,
                            QuicService::Doq,
                            connections,
                            handshake,
                        )?;
                        servers.doq.push((udp, quic));
                    }
                }
            }
        }
        Ok(servers)
    }
}

/// `first` (or the next port free for both) on the demo's address, bound
/// for TCP and for UDP.
fn bind_demo_ports(first: u16) -> anyhow::Result<(BoundTcp, BoundQuic)> {
    let mut last = None;
    for offset in 0..crate::demo::DEMO_PORT_TRIES {
        let addr = SocketAddr::new(crate::demo::DEMO_ADDR, first.saturating_add(offset));
        let tcp = match bind_tcp(addr) {
            Ok(l) => l,
            Err(e) if e.is_addr_in_use() => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        match bind_quic(addr) {
            Ok(u) => return Ok((tcp, u)),
            Err(e) if e.is_addr_in_use() => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last
        .unwrap_or_else(|| NetError::Listener(std::io::Error::from(std::io::ErrorKind::AddrInUse)))
        .into())
}

/// The connection limits of DoT, DoH and DoQ: TCP's caps, TLS's own
/// timeouts and query cap.
pub fn connection_config(settings: &Settings) -> TcpConfig {
    TcpConfig {
        idle_timeout: settings.tls_limits.idle_timeout,
        max_connections: settings.tcp_max_connections,
        max_connections_per_client: settings.tcp_limits.max_connections_per_client,
        max_queries_per_connection: settings.tls_limits.max_queries_per_connection,
        message_timeout: settings.tcp_limits.message_timeout,
        ..TcpConfig::default()
    }
}

/// Reads every listener's certificate files again; what failed is logged
/// and keeps its old certificate. The messages say what failed.
pub fn reload_certificates(certificates: &[Arc<ServerCertificate>]) -> Vec<String> {
    let mut said = Vec::new();
    for c in certificates {
        if c.certificate_path().as_os_str().is_empty() {
            continue;
        }
        match c.reload() {
            Ok(()) => {
                tracing::info!(file = %c.certificate_path().display(), "TLS certificate reloaded");
            }
            Err(e) => {
                tracing::error!(error = %e, "TLS certificate not reloaded; the old one stays");
                said.push(format!("error: {e}"));
            }
        }
    }
    said
}

/// Serves the encrypted listeners on the runtime, each kind with its own
/// handlers, each told the keepalive of the encrypted transports (RFC 7828
/// §3.3.2: the client hears this connection's idle timeout, not TCP's).
/// `stats` counts DoT, DoH (HTTP/2, HTTP/1.1 and HTTP/3) and DoQ
/// connections.
pub fn serve(
    listeners: TlsListeners,
    settings: &Settings,
    shared: &crate::handler::Shared,
    stats: [Arc<bulwark_net::TcpStats>; 3],
    shutdown: &bulwark_net::Shutdown,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    use crate::handler::{ServerHandler, Shared};
    use crate::via::Via;
    if listeners.bound.is_empty() {
        return Ok(());
    }
    let config = connection_config(settings);
    let Servers {
        dot,
        doh,
        doq,
        doh3,
    } = listeners.into_servers(&settings.tls_limits, &config)?;
    let shared = Shared {
        config: Arc::new(bulwark_auth::AnswerConfig {
            tcp_keepalive: Some(crate::server::keepalive_units(
                settings.tls_limits.idle_timeout,
            )),
            ..(*shared.config).clone()
        }),
        ..shared.clone()
    };
    let [dot_stats, doh_stats, doq_stats] = stats;
    let spawn = |what: &'static str,
                 served: std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), NetError>> + Send>,
    >| {
        let shutdown = shutdown.clone();
        runtime.spawn(async move {
            if let Err(e) = served.await {
                tracing::error!(error = %e, "{what} listeners failed; stopping");
                shutdown.trigger();
            }
        });
    };
    if !dot.is_empty() {
        let shared = shared.clone();
        let make = move || ServerHandler::new(&shared, Via::Tls);
        let served = bulwark_net::serve_tls(dot, config.clone(), make, dot_stats, shutdown.clone());
        spawn("DNS over TLS", Box::pin(served));
    }
    if !doh.is_empty() {
        let shared = shared.clone();
        let make = move || ServerHandler::new(&shared, Via::Https);
        let served = bulwark_net::serve_https(
            doh,
            config.clone(),
            make,
            Arc::clone(&doh_stats),
            shutdown.clone(),
        );
        spawn("DNS over HTTPS", Box::pin(served));
    }
    if !doh3.is_empty() {
        let shared = shared.clone();
        let make = move || ServerHandler::new(&shared, Via::Https);
        let served =
            bulwark_net::serve_quic(doh3, config.clone(), make, doh_stats, shutdown.clone());
        spawn("DNS over HTTP/3", Box::pin(served));
    }
    if !doq.is_empty() {
        // RFC 9250 §5.5.2: edns-tcp-keepalive is TCP's and TLS's; DoQ
        // messages never carry it (QUIC has its own idle timeout).
        let shared = Shared {
            config: Arc::new(bulwark_auth::AnswerConfig {
                tcp_keepalive: None,
                ..(*shared.config).clone()
            }),
            ..shared
        };
        let make = move || ServerHandler::new(&shared, Via::Quic);
        let served = bulwark_net::serve_quic(doq, config, make, doq_stats, shutdown.clone());
        spawn("DNS over QUIC", Box::pin(served));
    }
    Ok(())
}
