//! bulwark as a DNS client of other servers, for replication: a request
//! signed with the remote's TSIG key when it has one, and its responses
//! checked the same way (RFC 8945). Sending it (UDP with TCP after TC, the
//! transfer's TCP stream, IDs and ports from the CSPRNG) is
//! `bulwark_net::client`'s.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use bulwark_net::client::{Client, ClientConfig, TransferStream, UpstreamTls};
use bulwark_xfr::tsig::{sign_request, ResponseVerifier, TsigKey, DEFAULT_FUDGE};

use crate::signing::unix_now;

/// How long a TCP connection to a primary or secondary is kept unused for
/// the next exchange (RFC 7766 §6.2.1). Servers commonly close theirs after
/// about ten seconds idle; a connection kept longer would be found closed.
const CONNECTION_IDLE: Duration = Duration::from_secs(10);
/// Idle connections kept per remote address.
const IDLE_PER_REMOTE: usize = 2;

/// Why an exchange with a remote server failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Net(#[from] bulwark_net::ClientError),
    #[error("cannot sign the request: {0}")]
    Sign(String),
    #[error("the response's TSIG does not verify: {0}")]
    Tsig(String),
    #[error("the response is malformed: {0}")]
    Malformed(String),
}

impl ClientError {
    /// Whether the remote simply did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Net(e) if e.is_timeout())
    }
}

/// The client every replication task shares, so its kept connections serve
/// them all. The server runs one runtime for its whole life, which is what
/// a client's connections need.
fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        Client::new(ClientConfig {
            idle_timeout: CONNECTION_IDLE,
            max_idle_per_server: IDLE_PER_REMOTE,
        })
    })
}

/// Primaries asked over TLS (XoT, RFC 9103): their TLS settings by address,
/// replaced whole on reload.
fn tls_remotes() -> &'static ArcSwap<HashMap<SocketAddr, UpstreamTls>> {
    static TLS: OnceLock<ArcSwap<HashMap<SocketAddr, UpstreamTls>>> = OnceLock::new();
    TLS.get_or_init(|| ArcSwap::from_pointee(HashMap::new()))
}

/// Sets the primaries asked over TLS (at start, and on each reload).
pub fn set_tls_remotes(remotes: HashMap<SocketAddr, UpstreamTls>) {
    tls_remotes().store(Arc::new(remotes));
}

/// A fresh, unpredictable query ID (RFC 5452 §9.2); a failing random
/// number generator is an error, never a guessable ID.
pub fn random_id() -> Result<u16, ClientError> {
    Ok(bulwark_net::client::random_id()?)
}

/// A request ready to send: its bytes, and the MAC its response must chain
/// from when it was signed.
pub struct Request {
    pub bytes: Vec<u8>,
    pub key: Option<TsigKey>,
    pub mac: Option<Vec<u8>>,
}

impl Request {
    /// `msg` signed with `key` when there is one.
    pub fn new(mut msg: Vec<u8>, key: Option<&TsigKey>) -> Result<Request, ClientError> {
        let mac = match key {
            Some(k) => Some(
                sign_request(&mut msg, k, unix_now(), DEFAULT_FUDGE)
                    .map_err(|e| ClientError::Sign(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Request {
            bytes: msg,
            key: key.cloned(),
            mac,
        })
    }

    /// The checker for this request's response messages, when it was signed.
    pub fn verifier(&self) -> Option<ResponseVerifier> {
        match (&self.key, &self.mac) {
            (Some(k), Some(m)) => Some(ResponseVerifier::new(k, m)),
            _ => None,
        }
    }
}

/// Checks one response message against the request's TSIG (when it was
/// signed): a response to a signed request must be signed (RFC 8945 §5.3).
pub fn check_response(
    verifier: &mut Option<ResponseVerifier>,
    msg: &[u8],
) -> Result<(), ClientError> {
    if let Some(v) = verifier {
        v.verify(msg, unix_now())
            .map_err(|e| ClientError::Tsig(e.to_string()))?;
    }
    Ok(())
}

/// Sends `message` to `remote` (over UDP, asked again over TCP when the
/// response is truncated) and returns the response, within `wait` for each
/// step. The response is not yet checked against the request's TSIG.
pub async fn exchange(
    remote: SocketAddr,
    via: Option<IpAddr>,
    message: &[u8],
    wait: Duration,
) -> Result<Vec<u8>, ClientError> {
    let response = client().exchange(remote, via, message, wait).await?;
    Ok(response.message)
}

/// Sends `message` to a primary and returns the response, within `wait`
/// for each step: over TLS when the primary is configured for it (XoT),
/// else as [`exchange`].
pub async fn ask_primary(
    remote: SocketAddr,
    via: Option<IpAddr>,
    message: &[u8],
    wait: Duration,
) -> Result<Vec<u8>, ClientError> {
    let tls = tls_remotes().load().get(&remote).cloned();
    match tls {
        Some(tls) => Ok(client()
            .exchange_tls(remote, via, &tls, message, wait)
            .await?),
        None => exchange(remote, via, message, wait).await,
    }
}

/// Starts a zone transfer: connects to `remote` (over TLS when it is
/// configured for it, RFC 9103) and sends `message`, each within `wait`; the
/// messages are then read from the stream.
pub async fn transfer(
    remote: SocketAddr,
    via: Option<IpAddr>,
    message: &[u8],
    wait: Duration,
) -> Result<TransferStream, ClientError> {
    let tls = tls_remotes().load().get(&remote).cloned();
    Ok(match tls {
        Some(tls) => {
            client()
                .transfer_tls(remote, via, &tls, message, wait)
                .await?
        }
        None => client().transfer(remote, via, message, wait).await?,
    })
}
