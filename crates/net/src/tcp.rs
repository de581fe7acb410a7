//! DNS over TCP per RFC 7766: two-byte length framing (§8), many queries per
//! connection answered in order as they are read (pipelining, §6.2.1.1), an idle
//! timeout (§6.2.3), and a cap on concurrent connections beyond which new ones
//! are closed at once (§6.2.2 lets a busy server close connections).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::error::NetError;
use crate::shutdown::Shutdown;
use crate::QueryHandler;

/// RFC 7766 §6.2.3 suggests an idle timeout "on the order of seconds".
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;
/// The largest query read over TCP; a longer one closes the connection. Queries to
/// an authoritative server are small; the full 65535 would only invite memory use.
pub const DEFAULT_MAX_TCP_QUERY: usize = 16384;
/// RFC 1035 §4.1.1: a message has at least its 12-octet header.
const HEADER_LEN: usize = 12;
const LISTEN_BACKLOG: i32 = 1024;
const IO_BUFFER: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct TcpConfig {
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_query_size: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_query_size: DEFAULT_MAX_TCP_QUERY,
        }
    }
}

/// Binds a listening socket (SO_REUSEADDR so a restart does not wait for
/// TIME_WAIT; IPV6_V6ONLY on v6), non-blocking, ready for [`serve_tcp`].
pub fn bind_tcp(addr: SocketAddr) -> Result<std::net::TcpListener, NetError> {
    let bind_err = |cause| NetError::Bind {
        proto: "tcp",
        addr,
        cause,
    };
    let opt = |option: &'static str| {
        move |cause| NetError::SocketOption {
            option,
            addr,
            cause,
        }
    };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(bind_err)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true).map_err(opt("IPV6_V6ONLY"))?;
    }
    socket
        .set_reuse_address(true)
        .map_err(opt("SO_REUSEADDR"))?;
    socket.set_nonblocking(true).map_err(opt("O_NONBLOCK"))?;
    socket.bind(&addr.into()).map_err(bind_err)?;
    socket.listen(LISTEN_BACKLOG).map_err(bind_err)?;
    Ok(socket.into())
}

/// Connection counters shared by every listener of one [`serve_tcp`] call.
#[derive(Debug, Default)]
pub struct TcpStats {
    pub accepted: AtomicU64,
    pub rejected: AtomicU64,
    pub queries: AtomicU64,
}

/// Serves every listener until `shutdown` fires. Each connection gets its own
/// handler from `make_handler`. Must run inside a tokio runtime.
pub async fn serve_tcp<F, H>(
    listeners: Vec<std::net::TcpListener>,
    config: TcpConfig,
    make_handler: F,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) -> Result<(), NetError>
where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    let config = Arc::new(config);
    let make_handler = Arc::new(make_handler);
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut accepts = tokio::task::JoinSet::new();
    for l in listeners {
        let listener = TcpListener::from_std(l).map_err(NetError::Listener)?;
        accepts.spawn(accept_loop(
            listener,
            Arc::clone(&config),
            Arc::clone(&make_handler),
            Arc::clone(&slots),
            Arc::clone(&stats),
            shutdown.clone(),
        ));
    }
    while accepts.join_next().await.is_some() {}
    Ok(())
}

async fn accept_loop<F, H>(
    listener: TcpListener,
    config: Arc<TcpConfig>,
    make_handler: Arc<F>,
    slots: Arc<Semaphore>,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
) where
    F: Fn() -> H + Send + Sync + 'static,
    H: QueryHandler + Send + 'static,
{
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait() => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: keep accepting later
                // connections rather than stop serving TCP.
                tracing::warn!(error = %e, "TCP accept failed");
                tokio::task::yield_now().await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            // Full: close at once rather than queue (RFC 7766 §6.2.2).
            stats.rejected.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            continue;
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let handler = make_handler();
        let config = Arc::clone(&config);
        let stats = Arc::clone(&stats);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.wait() => {}
                r = serve_connection(stream, peer, handler, &config, &stats) => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "TCP connection ended");
                    }
                }
            }
            drop(permit);
        });
    }
}

/// Why a connection was closed early.
#[derive(Debug, thiserror::Error)]
enum ConnectionEnd {
    #[error("idle timeout")]
    Idle,
    #[error("query of {0} octets is outside the accepted size")]
    BadLength(usize),
    #[error("write timed out")]
    WriteTimeout,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

async fn serve_connection<H: QueryHandler>(
    stream: TcpStream,
    peer: SocketAddr,
    mut handler: H,
    config: &TcpConfig,
    stats: &TcpStats,
) -> Result<(), ConnectionEnd> {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut reader = BufReader::with_capacity(IO_BUFFER, r);
    let mut writer = BufWriter::with_capacity(IO_BUFFER, w);
    let mut query: Vec<u8> = Vec::with_capacity(512);
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    let idle = config.idle_timeout;
    loop {
        // RFC 7766 §8: each message is preceded by its length in two octets.
        let len = match tokio::time::timeout(idle, reader.read_u16()).await {
            Err(_) => return Err(ConnectionEnd::Idle),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(len)) => usize::from(len),
        };
        if len < HEADER_LEN || len > config.max_query_size {
            return Err(ConnectionEnd::BadLength(len));
        }
        query.resize(len, 0);
        match tokio::time::timeout(idle, reader.read_exact(&mut query)).await {
            Err(_) => return Err(ConnectionEnd::Idle),
            Ok(r) => {
                r?;
            }
        }
        stats.queries.fetch_add(1, Ordering::Relaxed);
        if handler.handle(&query, peer, &mut out) {
            // A response over 65535 octets cannot be framed; the handler keeps to
            // that limit, so this only guards against a bug.
            if let Ok(n) = u16::try_from(out.len()) {
                write_or_timeout(&mut writer, &n.to_be_bytes(), idle).await?;
                write_or_timeout(&mut writer, &out, idle).await?;
            }
        }
        // Pipelined queries already buffered are answered before flushing, so
        // their responses leave together; otherwise flush before blocking to read.
        if reader.buffer().is_empty() {
            match tokio::time::timeout(idle, writer.flush()).await {
                Err(_) => return Err(ConnectionEnd::WriteTimeout),
                Ok(r) => r?,
            }
        }
    }
}

/// write_all copes with partial writes; the timeout stops a client that never
/// reads from holding the connection forever.
async fn write_or_timeout<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    bytes: &[u8],
    limit: Duration,
) -> Result<(), ConnectionEnd> {
    match tokio::time::timeout(limit, w.write_all(bytes)).await {
        Err(_) => Err(ConnectionEnd::WriteTimeout),
        Ok(r) => Ok(r?),
    }
}
