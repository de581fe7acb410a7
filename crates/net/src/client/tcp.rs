//! DNS over TCP as a client: connecting, framed messages (RFC 1035 §4.2.2,
//! RFC 7766 §8), one query and its response, and the message stream of a
//! zone transfer. Every step is bounded by a timeout the caller passes.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use super::error::{ClientError, Operation};
use super::matching::Expected;
use super::udp::local_ip;

/// The length prefix of a message on a stream.
const PREFIX_LEN: usize = 2;

/// Opens a connection to `server`, from `via` when given (on a port the
/// kernel picks), within `timeout`.
pub(crate) async fn connect(
    server: SocketAddr,
    via: Option<IpAddr>,
    timeout: Duration,
) -> Result<TcpStream, ClientError> {
    let socket = match server {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // Issue 27: with the server's TFO cookie in the kernel, the query goes
    // in the SYN (RFC 7413). Where the kernel refuses, plain TCP.
    let _ = crate::sys::enable_fast_open_connect(socket.as_raw_fd());
    if via.is_some() {
        let addr = SocketAddr::new(local_ip(server, via)?, 0);
        socket
            .bind(addr)
            .map_err(|cause| ClientError::Bind { addr, cause })?;
    }
    let stream = tokio::time::timeout(timeout, socket.connect(server))
        .await
        .map_err(|_| ClientError::Timeout {
            operation: Operation::Connect,
            after: timeout,
        })??;
    // Queries are whole messages written at once: nothing to gain by
    // waiting for more.
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Whether an I/O error means the other end closed or reset the connection.
fn is_connection_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::NotConnected
            | io::ErrorKind::UnexpectedEof
    )
}

/// Writes `msg` with its length prefix, in one write, within `timeout`.
pub(crate) async fn write_message<S: AsyncWrite + Unpin>(
    stream: &mut S,
    msg: &[u8],
    timeout: Duration,
) -> Result<(), ClientError> {
    let len = u16::try_from(msg.len()).map_err(|_| ClientError::TooLong(msg.len()))?;
    let mut framed = Vec::with_capacity(msg.len().saturating_add(PREFIX_LEN));
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(msg);
    let written = async {
        stream.write_all(&framed).await?;
        // TLS holds its records until flushed.
        stream.flush().await
    };
    match tokio::time::timeout(timeout, written).await {
        Err(_) => Err(ClientError::Timeout {
            operation: Operation::Send,
            after: timeout,
        }),
        Ok(Err(e)) if is_connection_gone(&e) => Err(ClientError::Closed),
        Ok(Err(e)) => Err(ClientError::Io(e)),
        Ok(Ok(())) => Ok(()),
    }
}

/// Reads one message into `out` (replacing what it held). A connection
/// closed or reset before the first octet of the message is
/// [`ClientError::Closed`]; inside it, an I/O error.
async fn read_message<S: AsyncRead + Unpin>(
    stream: &mut S,
    out: &mut Vec<u8>,
) -> Result<(), ClientError> {
    let mut prefix = [0u8; PREFIX_LEN];
    let first = match stream.read(&mut prefix).await {
        Ok(0) => return Err(ClientError::Closed),
        Err(e) if is_connection_gone(&e) => return Err(ClientError::Closed),
        Err(e) => return Err(ClientError::Io(e)),
        Ok(n) => n,
    };
    if let Some(rest) = prefix.get_mut(first..) {
        stream.read_exact(rest).await?;
    }
    out.clear();
    out.resize(usize::from(u16::from_be_bytes(prefix)), 0);
    stream.read_exact(out).await?;
    Ok(())
}

/// [`read_message`] within `timeout`.
async fn read_message_within<S: AsyncRead + Unpin>(
    stream: &mut S,
    out: &mut Vec<u8>,
    timeout: Duration,
) -> Result<(), ClientError> {
    tokio::time::timeout(timeout, read_message(stream, out))
        .await
        .map_err(|_| ClientError::Timeout {
            operation: Operation::Receive,
            after: timeout,
        })?
}

/// How one query on a connection ended, when it did not.
#[derive(Debug)]
pub(crate) enum RoundTripError {
    /// The server had closed the connection: nothing of a response came.
    /// On a reused connection, the query is worth sending again on a new
    /// one (RFC 7766 §6.2.1: either end may close an idle connection).
    Closed,
    Failed(ClientError),
}

impl From<RoundTripError> for ClientError {
    fn from(e: RoundTripError) -> ClientError {
        match e {
            RoundTripError::Closed => ClientError::Closed,
            RoundTripError::Failed(e) => e,
        }
    }
}

/// Sends `query` and reads messages until its response, each step within
/// `timeout` (the whole wait for the response, messages that are not it
/// included). Returns the response and the connection, ready for another
/// query.
pub(crate) async fn round_trip<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    query: &[u8],
    expected: &Expected,
    timeout: Duration,
) -> Result<(Vec<u8>, S), RoundTripError> {
    match write_message(&mut stream, query, timeout).await {
        Ok(()) => {}
        Err(ClientError::Closed) => return Err(RoundTripError::Closed),
        Err(e) => return Err(RoundTripError::Failed(e)),
    }
    let wait = async {
        let mut msg = Vec::new();
        let mut first = true;
        loop {
            match read_message(&mut stream, &mut msg).await {
                Ok(()) => {}
                Err(ClientError::Closed) if first => return Err(RoundTripError::Closed),
                Err(e) => return Err(RoundTripError::Failed(e)),
            }
            first = false;
            // RFC 7766 §7: responses are matched by ID (and question); one
            // that is not ours is skipped.
            if expected.response_header(&msg).is_some() {
                return Ok(msg);
            }
        }
    };
    let msg = tokio::time::timeout(timeout, wait).await.map_err(|_| {
        RoundTripError::Failed(ClientError::Timeout {
            operation: Operation::Receive,
            after: timeout,
        })
    })??;
    Ok((msg, stream))
}

/// A connection a transfer can come over: TCP, or TLS (XoT, RFC 9103).
trait TransferIo: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> TransferIo for T {}

/// The messages of a zone transfer (RFC 5936 §4.2), read one at a time from
/// the connection its query was sent on. The messages are handed over as
/// they come: checking them (ID, question, TSIG, the SOA that ends the
/// transfer) is the transfer reader's job.
pub struct TransferStream {
    stream: Box<dyn TransferIo>,
    server: SocketAddr,
}

impl std::fmt::Debug for TransferStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransferStream")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl TransferStream {
    /// Connects to `server` and sends `query`, each within `timeout`.
    pub(crate) async fn open(
        server: SocketAddr,
        via: Option<IpAddr>,
        query: &[u8],
        timeout: Duration,
    ) -> Result<TransferStream, ClientError> {
        let stream = connect(server, via, timeout).await?;
        TransferStream::start(Box::new(stream), server, query, timeout).await
    }

    /// Sends `query` on a connection already open (a TLS one, for XoT).
    async fn start(
        mut stream: Box<dyn TransferIo>,
        server: SocketAddr,
        query: &[u8],
        timeout: Duration,
    ) -> Result<TransferStream, ClientError> {
        write_message(&mut stream, query, timeout).await?;
        Ok(TransferStream { stream, server })
    }

    /// Connects to `server` over TLS (XoT, RFC 9103 §5), proving it as `tls`
    /// says, and sends `query`, each within `timeout`.
    pub(crate) async fn open_tls(
        server: SocketAddr,
        via: Option<IpAddr>,
        tls: &super::tls::UpstreamTls,
        query: &[u8],
        timeout: Duration,
    ) -> Result<TransferStream, ClientError> {
        let stream = tls.connect(server, via, timeout).await?;
        TransferStream::start(Box::new(stream), server, query, timeout).await
    }

    /// The server the transfer comes from.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Reads the next message into `out` (replacing what it held) within
    /// `timeout`. The server closing the connection before the next message
    /// begins is [`ClientError::Closed`].
    pub async fn next_message(
        &mut self,
        out: &mut Vec<u8>,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        read_message_within(&mut self.stream, out, timeout).await
    }
}
