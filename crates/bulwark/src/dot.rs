//! The server's DNS over TLS listeners (RFC 7858): bound with the plain
//! ones, each with the certificate its `[[listener]]` names, and the demo's
//! own certificate, made at start for `localhost`. Certificates are read
//! again on reload; a connection keeps the one it began with.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use bulwark_net::tls::{ServerCertificate, TlsServer, ALPN_DOT};
use bulwark_net::{bind_tcp, BoundTcp, NetError, TcpConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::settings::{Settings, TlsLimits};

/// The demo's first DoT port, then the next free ones.
pub const DEMO_TLS_PORT: u16 = 8853;

/// Bound DoT listeners and their certificates, before serving.
#[derive(Debug, Default)]
pub struct TlsListeners {
    pub bound: Vec<(BoundTcp, Arc<ServerCertificate>)>,
}

impl TlsListeners {
    /// Binds each `transport = "tls"` listener and reads its certificate and
    /// key; an unreadable file stops the start, naming it.
    pub fn bind(settings: &Settings) -> anyhow::Result<TlsListeners> {
        let mut bound = Vec::new();
        for l in &settings.tls_listeners {
            let certificate = ServerCertificate::load(&l.certificate, &l.key)
                .with_context(|| format!("DNS over TLS listener {}", l.address))?;
            bound.push((bind_tcp(l.address)?, certificate));
        }
        Ok(TlsListeners { bound })
    }

    /// The demo's listener on 127.0.0.1 from [`DEMO_TLS_PORT`], with a
    /// self-signed certificate for `localhost` made now.
    pub fn bind_demo() -> anyhow::Result<TlsListeners> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .context("cannot make the demo's TLS certificate")?;
        let chain = vec![CertificateDer::from(made.cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
        let certificate = ServerCertificate::fixed(chain, key)?;
        let mut last = None;
        for offset in 0..crate::demo::DEMO_PORT_TRIES {
            let port = DEMO_TLS_PORT.saturating_add(offset);
            match bind_tcp(SocketAddr::new(crate::demo::DEMO_ADDR, port)) {
                Ok(l) => {
                    return Ok(TlsListeners {
                        bound: vec![(l, certificate)],
                    })
                }
                Err(e) if e.is_addr_in_use() => last = Some(e),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last
            .unwrap_or_else(|| {
                NetError::Listener(std::io::Error::from(std::io::ErrorKind::AddrInUse))
            })
            .into())
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.bound
            .iter()
            .filter_map(|(l, _)| l.local_addr().ok())
            .collect()
    }

    pub fn certificates(&self) -> Vec<Arc<ServerCertificate>> {
        self.bound.iter().map(|(_, c)| Arc::clone(c)).collect()
    }

    /// Each listener with its TLS server, ready for `bulwark_net::serve_tls`.
    pub fn into_servers(self, limits: &TlsLimits) -> anyhow::Result<Vec<(BoundTcp, TlsServer)>> {
        self.bound
            .into_iter()
            .map(|(l, c)| Ok((l, TlsServer::new(c, &[ALPN_DOT], limits.handshake_timeout)?)))
            .collect()
    }
}

/// The connection limits of DoT: TCP's caps, TLS's own timeouts and query cap.
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
/// and keeps its old certificate. The messages say what happened to each.
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
