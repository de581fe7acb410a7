//! The server's encrypted listeners: DNS over TLS (RFC 7858) and DNS over
//! HTTPS (RFC 8484), bound with the plain ones, each with the certificate
//! its `[[listener]]` names; and the demo's, with a certificate made at start
//! for `localhost`. Certificates are read again on reload; a connection keeps
//! the one it began with.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use bulwark_net::https::ALPN_DOH;
use bulwark_net::tls::{ServerCertificate, TlsServer, ALPN_DOT};
use bulwark_net::{bind_tcp, BoundTcp, DohConfig, NetError, TcpConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::settings::{Encrypted, Settings, TlsLimits};

/// The demo's first DoT port, then the next free ones.
pub const DEMO_TLS_PORT: u16 = 8853;
/// The demo's first DoH port, then the next free ones.
pub const DEMO_HTTPS_PORT: u16 = 8443;

/// One bound encrypted listener.
#[derive(Debug)]
struct Bound {
    listener: BoundTcp,
    certificate: Arc<ServerCertificate>,
    kind: Encrypted,
}

/// Bound encrypted listeners and their certificates, before serving.
#[derive(Debug, Default)]
pub struct TlsListeners {
    bound: Vec<Bound>,
}

/// The listeners ready for `bulwark_net::serve_tls` and `serve_https`.
pub struct Servers {
    pub dot: Vec<(BoundTcp, TlsServer)>,
    pub doh: Vec<(BoundTcp, TlsServer, DohConfig)>,
}

impl TlsListeners {
    /// Binds each `transport = "tls"` or `"https"` listener and reads its
    /// certificate and key; an unreadable file stops the start, naming it.
    pub fn bind(settings: &Settings) -> anyhow::Result<TlsListeners> {
        let mut bound = Vec::new();
        for l in &settings.tls_listeners {
            let certificate = ServerCertificate::load(&l.certificate, &l.key)
                .with_context(|| format!("encrypted listener {}", l.address))?;
            bound.push(Bound {
                listener: bind_tcp(l.address)?,
                certificate,
                kind: l.kind.clone(),
            });
        }
        Ok(TlsListeners { bound })
    }

    /// The demo's listeners on 127.0.0.1, DoT from [`DEMO_TLS_PORT`] and DoH
    /// from [`DEMO_HTTPS_PORT`], with a self-signed certificate for
    /// `localhost` made now.
    pub fn bind_demo() -> anyhow::Result<TlsListeners> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .context("cannot make the demo's TLS certificate")?;
        let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
        let certificate = ServerCertificate::fixed(chain, key)?;
        let doh = Encrypted::Doh {
            path: bulwark_net::doh::DEFAULT_PATH.to_string(),
        };
        let bound = [(DEMO_TLS_PORT, Encrypted::Dot), (DEMO_HTTPS_PORT, doh)]
            .into_iter()
            .map(|(port, kind)| {
                Ok(Bound {
                    listener: bind_demo_port(port)?,
                    certificate: Arc::clone(&certificate),
                    kind,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(TlsListeners { bound })
    }

    /// The bound addresses of one kind's listeners.
    pub fn local_addrs(&self, dot: bool) -> Vec<SocketAddr> {
        self.bound
            .iter()
            .filter(|b| (b.kind == Encrypted::Dot) == dot)
            .filter_map(|b| b.listener.local_addr().ok())
            .collect()
    }

    pub fn certificates(&self) -> Vec<Arc<ServerCertificate>> {
        self.bound
            .iter()
            .map(|b| Arc::clone(&b.certificate))
            .collect()
    }

    /// Each listener with its TLS server (ALPN `dot`, or `h2` and
    /// `http/1.1`), split by what it serves.
    pub fn into_servers(self, limits: &TlsLimits) -> anyhow::Result<Servers> {
        let mut servers = Servers {
            dot: Vec::new(),
            doh: Vec::new(),
        };
        for b in self.bound {
            match b.kind {
                Encrypted::Dot => {
                    let tls = TlsServer::new(b.certificate, &[ALPN_DOT], limits.handshake_timeout)?;
                    servers.dot.push((b.listener, tls));
                }
                Encrypted::Doh { path } => {
                    let tls = TlsServer::new(b.certificate, &ALPN_DOH, limits.handshake_timeout)?;
                    let doh = DohConfig {
                        path,
                        ..DohConfig::default()
                    };
                    servers.doh.push((b.listener, tls, doh));
                }
            }
        }
        Ok(servers)
    }
}

/// `port` on the demo's address, or the next free one.
fn bind_demo_port(first: u16) -> anyhow::Result<BoundTcp> {
    let mut last = None;
    for offset in 0..crate::demo::DEMO_PORT_TRIES {
        let port = first.saturating_add(offset);
        match bind_tcp(SocketAddr::new(crate::demo::DEMO_ADDR, port)) {
            Ok(l) => return Ok(l),
            Err(e) if e.is_addr_in_use() => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last
        .unwrap_or_else(|| NetError::Listener(std::io::Error::from(std::io::ErrorKind::AddrInUse)))
        .into())
}

/// The connection limits of DoT and DoH: TCP's caps, TLS's own timeouts and
/// query cap.
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

/// Serves the encrypted listeners on the runtime: DoT with its handlers,
/// DoH with its own, each told the keepalive of the encrypted transports
/// (RFC 7828 §3.3.2: the client hears this connection's idle timeout, not
/// TCP's). `stats` counts DoT then DoH connections.
pub fn serve(
    listeners: TlsListeners,
    settings: &Settings,
    shared: &crate::handler::Shared,
    stats: [Arc<bulwark_net::TcpStats>; 2],
    shutdown: &bulwark_net::Shutdown,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<()> {
    use crate::handler::{ServerHandler, Shared};
    use crate::via::Via;
    if listeners.bound.is_empty() {
        return Ok(());
    }
    let Servers { dot, doh } = listeners.into_servers(&settings.tls_limits)?;
    let config = connection_config(settings);
    let shared = Shared {
        config: Arc::new(bulwark_auth::AnswerConfig {
            tcp_keepalive: Some(crate::server::keepalive_units(
                settings.tls_limits.idle_timeout,
            )),
            ..(*shared.config).clone()
        }),
        ..shared.clone()
    };
    let [dot_stats, doh_stats] = stats;
    if !dot.is_empty() {
        let (shared, shutdown, config) = (shared.clone(), shutdown.clone(), config.clone());
        let make = move || ServerHandler::new(&shared, Via::Tls);
        runtime.spawn(async move {
            let served = bulwark_net::serve_tls(dot, config, make, dot_stats, shutdown.clone());
            if let Err(e) = served.await {
                tracing::error!(error = %e, "DNS over TLS listeners failed; stopping");
                shutdown.trigger();
            }
        });
    }
    if !doh.is_empty() {
        let shutdown = shutdown.clone();
        let make = move || ServerHandler::new(&shared, Via::Https);
        runtime.spawn(async move {
            let served = bulwark_net::serve_https(doh, config, make, doh_stats, shutdown.clone());
            if let Err(e) = served.await {
                tracing::error!(error = %e, "DNS over HTTPS listeners failed; stopping");
                shutdown.trigger();
            }
        });
    }
    Ok(())
}
