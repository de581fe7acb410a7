//! DNS over TLS as a client (RFC 7858), to a forwarder: the upstream proves
//! who it is by a certificate for the name configured, chained to trusted
//! roots (RFC 8310's strict profile), or by a public key whose SHA-256 pin
//! is configured (RFC 7858 §4.2, the key-pinned profile). A connection that
//! cannot prove it is never used. Connections are kept for later queries as
//! TCP's are.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    ClientConfig, DigitallySignedStruct, Error as TlsProtocolError, RootCertStore, SignatureScheme,
};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::error::{ClientError, Operation};

/// The SHA-256 of a certificate's DER SubjectPublicKeyInfo (RFC 7469 §2.4),
/// computed by the caller's crypto.
pub type SpkiDigest = fn(&[u8]) -> [u8; 32];

/// How an upstream is to prove its identity.
#[derive(Clone, Debug)]
pub enum Authentication {
    /// A certificate for this name, chained to one of these roots.
    Name {
        name: String,
        roots: Vec<CertificateDer<'static>>,
    },
    /// A leaf whose public key has one of these SHA-256 pins, whatever signed
    /// it; `name`, if any, is sent as SNI.
    Pins {
        name: Option<String>,
        pins: Vec<[u8; 32]>,
        digest: SpkiDigest,
    },
}

/// Why an upstream's TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamTlsError {
    #[error("`{0}` is not a name to check a certificate against")]
    BadName(String),
    #[error("no trusted root certificate to check the upstream against")]
    NoRoots,
    #[error("cannot make the TLS configuration: {0}")]
    Config(String),
}

/// An upstream's TLS settings, ready for [`crate::Client::exchange_tls`].
#[derive(Clone)]
pub struct UpstreamTls {
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
}

impl fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamTls")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl UpstreamTls {
    /// TLS to `address` authenticated as `auth` says; ALPN `dot`, TLS 1.3
    /// and 1.2, sessions resumed.
    pub fn new(address: IpAddr, auth: Authentication) -> Result<UpstreamTls, UpstreamTlsError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| UpstreamTlsError::Config(e.to_string()))?;
        let (name, mut config) = match auth {
            Authentication::Name { name, roots } => {
                let mut store = RootCertStore::empty();
                let (added, _) = store.add_parsable_certificates(roots);
                if added == 0 {
                    return Err(UpstreamTlsError::NoRoots);
                }
                let server = ServerName::try_from(name.clone())
                    .map_err(|_| UpstreamTlsError::BadName(name))?;
                let config = builder
                    .with_root_certificates(Arc::new(store))
                    .with_no_client_auth();
                (server, config)
            }
            Authentication::Pins { name, pins, digest } => {
                let server = match name {
                    Some(n) => {
                        ServerName::try_from(n.clone()).map_err(|_| UpstreamTlsError::BadName(n))?
                    }
                    None => ServerName::IpAddress(address.into()),
                };
                let verifier = PinnedKey {
                    pins,
                    digest,
                    provider: Arc::clone(&provider),
                };
                let config = builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
                    .with_no_client_auth();
                (server, config)
            }
        };
        config.alpn_protocols = vec![crate::tls::ALPN_DOT.to_vec()];
        Ok(UpstreamTls {
            name,
            config: Arc::new(config),
        })
    }

    /// Opens a connection to `server` and completes the handshake, each
    /// within `timeout`.
    pub(crate) async fn connect(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        timeout: Duration,
    ) -> Result<TlsStream<TcpStream>, ClientError> {
        let tcp = super::tcp::connect(server, via, timeout).await?;
        let connector = tokio_rustls::TlsConnector::from(Arc::clone(&self.config));
        match tokio::time::timeout(timeout, connector.connect(self.name.clone(), tcp)).await {
            Err(_) => Err(ClientError::Timeout {
                operation: Operation::Connect,
                after: timeout,
            }),
            Ok(Err(e)) => Err(ClientError::Tls(e)),
            Ok(Ok(s)) => Ok(s),
        }
    }
}

/// The key-pinned profile's check: the leaf's public key, by its pin. The
/// handshake's signatures are still checked with that key.
#[derive(Debug)]
struct PinnedKey {
    pins: Vec<[u8; 32]>,
    digest: SpkiDigest,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedKey {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsProtocolError> {
        let parsed = ParsedCertificate::try_from(end_entity)?;
        let pin = (self.digest)(parsed.subject_public_key_info().as_ref());
        if self.pins.contains(&pin) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(TlsProtocolError::General(
                "the upstream's public key matches no configured pin".to_string(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsProtocolError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsProtocolError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
