//! bulwark as a DNS client of other servers: a query and its response over
//! UDP (with TCP when the answer is truncated), and a zone transfer over TCP,
//! each signed with the remote's TSIG key when it has one and checked the
//! same way (RFC 8945).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bulwark_xfr::tsig::{sign_request, ResponseVerifier, TsigKey, DEFAULT_FUDGE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UdpSocket};

use crate::signing::unix_now;

/// Why an exchange with a remote server failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("cannot sign the request: {0}")]
    Sign(String),
    #[error("the response's TSIG does not verify: {0}")]
    Tsig(String),
    #[error("the response is malformed: {0}")]
    Malformed(String),
}

/// A fresh random query ID (RFC 5452 §9.2: IDs must not be guessable).
pub fn random_id() -> u16 {
    let mut b = [0u8; 2];
    if getrandom_fill(&mut b).is_err() {
        // Never expected; a clock-derived ID still works, if guessable.
        let n = unix_now();
        return u16::try_from(n & 0xffff).unwrap_or(0);
    }
    u16::from_be_bytes(b)
}

fn getrandom_fill(buf: &mut [u8]) -> std::io::Result<()> {
    let bytes: [u8; 8] = crate::cookie_secrets::random_bytes()?;
    for (d, s) in buf.iter_mut().zip(bytes.iter().cycle()) {
        *d = *s;
    }
    Ok(())
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

fn local_for(remote: SocketAddr, via: Option<IpAddr>) -> SocketAddr {
    match (via, remote) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::from(([0, 0, 0, 0], 0)),
        (None, SocketAddr::V6(_)) => SocketAddr::from(([0u16; 8], 0)),
    }
}

/// Sends `request` over UDP and waits for the response with its ID from
/// `remote`, ignoring anything else that arrives meanwhile (a forged or
/// late datagram must not end the wait). A truncated response is asked
/// again over TCP.
pub async fn exchange(
    remote: SocketAddr,
    via: Option<IpAddr>,
    request: &Request,
    wait: Duration,
) -> Result<Vec<u8>, ClientError> {
    let id: [u8; 2] = request
        .bytes
        .get(..2)
        .and_then(|b| b.try_into().ok())
        .unwrap_or_default();
    let socket = UdpSocket::bind(local_for(remote, via)).await?;
    socket.connect(remote).await?;
    socket.send(&request.bytes).await?;
    let mut buf = vec![0u8; 65_535];
    let now = tokio::time::Instant::now();
    let deadline = now.checked_add(wait).unwrap_or(now);
    loop {
        let n = match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
            Err(_) => return Err(ClientError::Timeout(wait)),
            Ok(r) => r?,
        };
        let Some(msg) = buf.get(..n) else { continue };
        if msg.len() < 12
            || msg.get(..2) != Some(&id[..])
            || msg.get(2).is_some_and(|f| f & 0x80 == 0)
        {
            continue;
        }
        // TC (RFC 1035 §4.1.1): the whole answer only comes over TCP.
        if msg.get(2).is_some_and(|f| f & 0x02 != 0) {
            let mut out = Vec::new();
            let mut conn = connect(remote, via, wait).await?;
            send_framed(&mut conn, &request.bytes, wait).await?;
            read_framed(&mut conn, &mut out, wait).await?;
            return Ok(out);
        }
        return Ok(msg.to_vec());
    }
}

/// Opens a TCP connection to `remote` within `wait`.
pub async fn connect(
    remote: SocketAddr,
    via: Option<IpAddr>,
    wait: Duration,
) -> Result<TcpStream, ClientError> {
    let socket = match remote {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if via.is_some() {
        socket.bind(local_for(remote, via))?;
    }
    let stream = tokio::time::timeout(wait, socket.connect(remote))
        .await
        .map_err(|_| ClientError::Timeout(wait))??;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Writes one message with its two-octet length (RFC 1035 §4.2.2).
pub async fn send_framed(
    conn: &mut TcpStream,
    msg: &[u8],
    wait: Duration,
) -> Result<(), ClientError> {
    let len = u16::try_from(msg.len())
        .map_err(|_| ClientError::Malformed("request over 65535 octets".to_string()))?;
    let mut framed = Vec::with_capacity(msg.len().saturating_add(2));
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(msg);
    tokio::time::timeout(wait, conn.write_all(&framed))
        .await
        .map_err(|_| ClientError::Timeout(wait))??;
    Ok(())
}

/// Reads one framed message into `out` (cleared first).
pub async fn read_framed(
    conn: &mut TcpStream,
    out: &mut Vec<u8>,
    wait: Duration,
) -> Result<(), ClientError> {
    let mut len = [0u8; 2];
    tokio::time::timeout(wait, conn.read_exact(&mut len))
        .await
        .map_err(|_| ClientError::Timeout(wait))??;
    out.clear();
    out.resize(usize::from(u16::from_be_bytes(len)), 0);
    tokio::time::timeout(wait, conn.read_exact(out))
        .await
        .map_err(|_| ClientError::Timeout(wait))??;
    Ok(())
}
