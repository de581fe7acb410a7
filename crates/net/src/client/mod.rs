//! The outbound DNS client: what replication (SOA queries, NOTIFY, zone
//! transfers), the parent DS check and a resolver use to ask other servers.
//!
//! - A query goes over UDP from a fresh socket on a port drawn from the
//!   operating system's CSPRNG, like its ID (RFC 5452 §9.2, §10); only the
//!   response from the address and port asked, with the ID asked, QR set and
//!   the same question is taken, and anything else leaves the wait going
//!   until its timeout. A truncated response is asked again over TCP
//!   (RFC 7766 §5).
//! - Over TCP, messages are framed (RFC 1035 §4.2.2) and connections are
//!   kept for later exchanges with the same server (RFC 7766 §6.2.1), closed
//!   after an idle time; a kept connection that turns out closed before any
//!   of its response arrived is replaced once, transparently.
//! - A zone transfer is a stream: one query, then its messages one by one.
//!
//! Every wait is bounded by a timeout the caller passes: none is decided
//! here. A [`Client`] is cheap to clone and safe to share between tasks, so
//! many exchanges with many servers may run at once; each UDP exchange has
//! its own socket. It must be used on one tokio runtime (its kept
//! connections belong to that runtime's reactor).

mod error;
mod matching;
mod pool;
mod random;
mod tcp;
mod tls;
mod udp;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

pub use error::{ClientError, Operation};
pub use random::{fill_random, random_id, random_port, RandomBlock};
pub use tcp::TransferStream;
pub use tls::{Authentication, SpkiDigest, UpstreamTls, UpstreamTlsError};

use matching::Expected;
use pool::Pool;
use tcp::RoundTripError;

/// How a response came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// The response to a query, and how it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub message: Vec<u8>,
    pub transport: Transport,
}

/// What a [`Client`] keeps between exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientConfig {
    /// How long an unused TCP connection is kept for a later exchange
    /// before it is closed (RFC 7766 §6.2.1; servers commonly close theirs
    /// after a few seconds idle). Zero keeps none.
    pub idle_timeout: Duration,
    /// How many unused connections are kept per server and local address.
    /// Zero keeps none.
    pub max_idle_per_server: usize,
}

/// A DNS client. See the module documentation.
#[derive(Debug, Clone)]
pub struct Client {
    pool: Arc<Pool>,
    tls_pool: Arc<Pool<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>>,
}

impl Client {
    /// A client keeping connections as `config` says. Needs no runtime until
    /// it is used.
    pub fn new(config: ClientConfig) -> Client {
        Client {
            pool: Arc::new(Pool::new(config.idle_timeout, config.max_idle_per_server)),
            tls_pool: Arc::new(Pool::new(config.idle_timeout, config.max_idle_per_server)),
        }
    }

    /// Sends `query` (whose ID the caller drew, with [`random_id`], before
    /// signing it if it signs) to `server` over UDP, from `via` when given,
    /// and returns its response; a truncated one (TC) is asked again over
    /// TCP. `timeout` bounds the wait for the UDP response, then each step
    /// over TCP.
    pub async fn exchange(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let expected = Expected::of_query(query)?;
        let (message, header) = udp::exchange(server, via, query, &expected, timeout).await?;
        // RFC 1035 §4.2.1, RFC 7766 §5: the whole answer comes over TCP.
        if header.flags.tc {
            let message = self.tcp(server, via, query, &expected, timeout).await?;
            return Ok(Response {
                message,
                transport: Transport::Tcp,
            });
        }
        Ok(Response {
            message,
            transport: Transport::Udp,
        })
    }

    /// Sends `query` over UDP only and returns its response as it came,
    /// truncated or not, for a caller that decides itself what to do on TC.
    pub async fn exchange_udp(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, ClientError> {
        let expected = Expected::of_query(query)?;
        let (message, _) = udp::exchange(server, via, query, &expected, timeout).await?;
        Ok(message)
    }

    /// Sends `query` over TCP, on a kept connection to `server` when there
    /// is one, and returns its response; the connection is kept afterwards.
    /// `timeout` bounds each step: connecting, writing, and the wait for the
    /// response.
    pub async fn exchange_tcp(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, ClientError> {
        let expected = Expected::of_query(query)?;
        self.tcp(server, via, query, &expected, timeout).await
    }

    async fn tcp(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        expected: &Expected,
        timeout: Duration,
    ) -> Result<Vec<u8>, ClientError> {
        let key = (server, via);
        if let Some(stream) = self.pool.take(key) {
            match tcp::round_trip(stream, query, expected, timeout).await {
                Ok((message, stream)) => {
                    self.pool.put(key, stream);
                    return Ok(message);
                }
                // The server closed it while it was idle, and the close had
                // not reached us yet: once more, on a new connection.
                Err(RoundTripError::Closed) => {
                    tracing::debug!(%server, "a kept connection was closed by the server; reconnecting");
                }
                Err(RoundTripError::Failed(e)) => return Err(e),
            }
        }
        let stream = tcp::connect(server, via, timeout).await?;
        let (message, stream) = tcp::round_trip(stream, query, expected, timeout).await?;
        self.pool.put(key, stream);
        Ok(message)
    }

    /// Sends `query` over TLS to `server` (RFC 7858), on a kept connection
    /// when there is one, and returns its response; the connection is kept
    /// afterwards. The server must prove the identity `tls` names, or the
    /// exchange fails with [`ClientError::Tls`]. `timeout` bounds each step:
    /// connecting, the handshake, writing, and the wait for the response.
    pub async fn exchange_tls(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        tls: &UpstreamTls,
        query: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, ClientError> {
        let expected = Expected::of_query(query)?;
        let key = (server, via);
        if let Some(stream) = self.tls_pool.take(key) {
            match tcp::round_trip(stream, query, &expected, timeout).await {
                Ok((message, stream)) => {
                    self.tls_pool.put(key, stream);
                    return Ok(message);
                }
                Err(RoundTripError::Closed) => {
                    tracing::debug!(%server, "a kept TLS connection was closed by the server; reconnecting");
                }
                Err(RoundTripError::Failed(e)) => return Err(e),
            }
        }
        let stream = tls.connect(server, via, timeout).await?;
        let (message, stream) = tcp::round_trip(stream, query, &expected, timeout).await?;
        self.tls_pool.put(key, stream);
        Ok(message)
    }

    /// Starts a zone transfer (AXFR or IXFR over TCP, RFC 5936, RFC 1995):
    /// connects to `server` and sends `query`, each within `timeout`, on a
    /// connection of its own. The messages are then read from the stream.
    pub async fn transfer(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        timeout: Duration,
    ) -> Result<TransferStream, ClientError> {
        TransferStream::open(server, via, query, timeout).await
    }

    /// A zone transfer over TLS (XoT, RFC 9103): as [`Client::transfer`],
    /// on a connection of its own whose server proves itself as `tls` says.
    pub async fn transfer_tls(
        &self,
        server: SocketAddr,
        via: Option<IpAddr>,
        tls: &UpstreamTls,
        query: &[u8],
        timeout: Duration,
    ) -> Result<TransferStream, ClientError> {
        TransferStream::open_tls(server, via, tls, query, timeout).await
    }

    /// How many idle TCP and TLS connections the client keeps now.
    pub fn idle_connections(&self) -> usize {
        self.pool.len().saturating_add(self.tls_pool.len())
    }
}
