//! TLS for the encrypted listeners (DoT, DoH, XoT, and under QUIC DoQ and
//! HTTP/3): a certificate and key read from PEM files, swapped in place on
//! reload so established connections keep theirs, and the server
//! configuration every listener starts from: TLS 1.3 preferred and 1.2
//! allowed over TCP (RFC 8310 §9 asks for TLS 1.2 or later), 1.3 alone over
//! QUIC, SHA-256 suites first, session tickets with keys that rotate, and no
//! 0-RTT but DoQ's (see `crate::quic`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// RFC 7858 §3.2 and RFC 8310 §8.1: the ALPN protocol ID of DNS over TLS.
pub const ALPN_DOT: &[u8] = b"dot";
/// Time for a client to complete the TLS handshake after connecting: a
/// handshake is two round trips, so this covers slow paths, and a client that
/// connects and says nothing holds a connection slot no longer.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// TLS 1.2 session IDs the server remembers for resumption (TLS 1.3 uses
/// tickets, which hold the state themselves).
const SESSION_CACHE: usize = 4096;

/// Why a certificate or key could not be used: each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{}: cannot read the certificate chain: {cause}", path.display())]
    Certificate {
        path: PathBuf,
        cause: rustls_pki_types::pem::Error,
    },
    #[error("{}: holds no certificate (expected PEM `BEGIN CERTIFICATE` blocks)", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: cannot read the private key: {cause}", path.display())]
    Key {
        path: PathBuf,
        cause: rustls_pki_types::pem::Error,
    },
    #[error("{}: the key cannot be used with the certificate in {}: {cause}", key.display(), certificate.display())]
    Unusable {
        certificate: PathBuf,
        key: PathBuf,
        cause: rustls::Error,
    },
    #[error("cannot make the TLS configuration: {0}")]
    Config(rustls::Error),
}

/// The crypto provider every TLS context uses: aws-lc-rs, the library the
/// rest of the project builds.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The server's provider: aws-lc-rs with the AES-128-GCM suites first.
/// rustls' default order puts AES-256-GCM with SHA-384 first, and a TLS 1.3
/// handshake (more so QUIC's, which derives keys for every packet space) is
/// dozens of HKDF steps: with SHA-384 they took 15% of a DoQ handshake's
/// CPU, as SHA-512's compression has no instructions of its own where
/// SHA-256's has. AES-128 is the suite TLS 1.3 requires every peer to have
/// (RFC 8446 §9.1); the others stay, for clients that offer nothing else.
fn server_provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    // A stable sort: the SHA-384 suites last, the rest in rustls' order.
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite().as_str().is_some_and(|n| n.ends_with("SHA384")));
    Arc::new(provider)
}

/// Reads a certificate chain (leaf first) and its private key from PEM files,
/// checking that the key belongs to the leaf.
pub fn load_certified_key(certificate: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_file_iter(certificate)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|cause| TlsError::Certificate {
            path: certificate.to_path_buf(),
            cause,
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: certificate.to_path_buf(),
        });
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|cause| TlsError::Key {
        path: key.to_path_buf(),
        cause,
    })?;
    CertifiedKey::from_der(chain, private, &provider()).map_err(|cause| TlsError::Unusable {
        certificate: certificate.to_path_buf(),
        key: key.to_path_buf(),
        cause,
    })
}

/// A listener's certificate, swapped whole on reload: each handshake takes
/// the one current when it starts, so connections made before a reload keep
/// the certificate they were made with.
#[derive(Debug)]
pub struct ServerCertificate {
    certificate: PathBuf,
    key: PathBuf,
    current: ArcSwap<CertifiedKey>,
}

impl ServerCertificate {
    /// Loads the files now; an error names the file at fault.
    pub fn load(certificate: &Path, key: &Path) -> Result<Arc<ServerCertificate>, TlsError> {
        let loaded = load_certified_key(certificate, key)?;
        Ok(Arc::new(ServerCertificate {
            certificate: certificate.to_path_buf(),
            key: key.to_path_buf(),
            current: ArcSwap::from_pointee(loaded),
        }))
    }

    /// A certificate made in memory (the demo's, the tests'), with no files
    /// to reload from.
    pub fn fixed(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Arc<ServerCertificate>, TlsError> {
        let loaded = CertifiedKey::from_der(chain, key, &provider()).map_err(|cause| {
            TlsError::Unusable {
                certificate: PathBuf::new(),
                key: PathBuf::new(),
                cause,
            }
        })?;
        Ok(Arc::new(ServerCertificate {
            certificate: PathBuf::new(),
            key: PathBuf::new(),
            current: ArcSwap::from_pointee(loaded),
        }))
    }

    /// Reads the files again and, if they are usable, serves them from the
    /// next handshake on; on error the old certificate stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        if self.certificate.as_os_str().is_empty() {
            return Ok(());
        }
        let loaded = load_certified_key(&self.certificate, &self.key)?;
        self.current.store(Arc::new(loaded));
        Ok(())
    }

    /// The certificate file, for messages.
    pub fn certificate_path(&self) -> &Path {
        &self.certificate
    }
}

impl ResolvesServerCert for ServerCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// What a TLS listener needs beyond what every stream listener has.
#[derive(Clone)]
pub struct TlsServer {
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    pub(crate) handshake_timeout: Duration,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl TlsServer {
    /// The server side of TLS with `certificate`, offering the ALPN protocols
    /// in `alpn` (a client that offers none is still served, as RFC 7858
    /// predates ALPN).
    pub fn new(
        certificate: Arc<ServerCertificate>,
        alpn: &[&[u8]],
        handshake_timeout: Duration,
    ) -> Result<TlsServer, TlsError> {
        let mut config = server_config(certificate, alpn, TlsVersions::Tls13And12)?;
        // No 0-RTT: a replayed query over DoT cannot be told from a new one.
        config.max_early_data_size = 0;
        Ok(TlsServer {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            handshake_timeout,
        })
    }
}

/// Which TLS versions a server configuration offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TlsVersions {
    /// TLS 1.3 preferred, 1.2 allowed: DoT and DoH over TCP.
    Tls13And12,
    /// QUIC is TLS 1.3 only (RFC 9001 §4.2).
    Tls13Only,
}

/// The server configuration every TLS listener starts from: its
/// certificate, its ALPN protocols, session resumption.
pub(crate) fn server_config(
    certificate: Arc<ServerCertificate>,
    alpn: &[&[u8]],
    versions: TlsVersions,
) -> Result<ServerConfig, TlsError> {
    let offered: &[&rustls::SupportedProtocolVersion] = match versions {
        TlsVersions::Tls13And12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsVersions::Tls13Only => &[&rustls::version::TLS13],
    };
    let mut config = ServerConfig::builder_with_provider(server_provider())
        .with_protocol_versions(offered)
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // The server's order of cipher suites, not the client's: see
    // `server_provider`.
    config.ignore_client_order = true;
    // Resumption: tickets for TLS 1.3 and 1.2 (keys made at random and
    // rotated every six hours by rustls), session IDs as a fallback.
    config.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().map_err(TlsError::Config)?;
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    Ok(config)
}

/// Issues no stateless tickets: TLS 1.3 resumption then goes through the
/// server's session cache, the only way rustls accepts 0-RTT data.
#[derive(Debug)]
pub(crate) struct StatefulOnly;

impl rustls::server::ProducesTickets for StatefulOnly {
    fn enabled(&self) -> bool {
        false
    }

    fn lifetime(&self) -> u32 {
        0
    }

    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }

    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn the_server_prefers_sha256_suites_and_keeps_the_others() {
        let suites: Vec<_> = server_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert_eq!(
            suites.first(),
            Some(&rustls::CipherSuite::TLS13_AES_128_GCM_SHA256)
        );
        let sha384 = suites
            .iter()
            .position(|s| s.as_str().unwrap().ends_with("SHA384"))
            .unwrap();
        assert!(suites[..sha384]
            .iter()
            .all(|s| !s.as_str().unwrap().ends_with("SHA384")));
        assert_eq!(
            suites.len(),
            rustls::crypto::aws_lc_rs::default_provider()
                .cipher_suites
                .len()
        );
    }
}
