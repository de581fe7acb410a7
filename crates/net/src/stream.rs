//! Plain byte streams over TCP or a Unix socket, for protocols that run over
//! either (Frame Streams, for dnstap): connecting with timeouts, listening,
//! and a blocking [`Stream`] that is `Read + Write` whichever socket it is, so
//! that callers never name a socket type.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a stream connects or listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StreamAddr {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl fmt::Display for StreamAddr {
    /// `unix:PATH` or `tcp:ADDRESS:PORT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamAddr::Unix(path) => write!(f, "unix:{}", path.display()),
            StreamAddr::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// A connected stream socket in blocking mode.
#[derive(Debug)]
pub struct Stream {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    /// Connects to `addr`, giving up on a TCP connection after `timeout`.
    /// `timeout` also bounds every later read and write: a peer that stalls
    /// longer makes them fail with `WouldBlock`/`TimedOut`. TCP segments go
    /// out at once (`TCP_NODELAY`): callers buffer their writes.
    pub fn connect(addr: &StreamAddr, timeout: Duration) -> io::Result<Stream> {
        let inner = match addr {
            StreamAddr::Unix(path) => {
                let stream = UnixStream::connect(path)?;
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
                Inner::Unix(stream)
            }
            StreamAddr::Tcp(addr) => {
                let stream = TcpStream::connect_timeout(addr, timeout)?;
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
                stream.set_nodelay(true)?;
                Inner::Tcp(stream)
            }
        };
        Ok(Stream { inner })
    }

    /// Another handle on the same connection, e.g. to shut it down from
    /// another thread.
    pub fn try_clone(&self) -> io::Result<Stream> {
        let inner = match &self.inner {
            Inner::Unix(s) => Inner::Unix(s.try_clone()?),
            Inner::Tcp(s) => Inner::Tcp(s.try_clone()?),
        };
        Ok(Stream { inner })
    }

    /// Shuts both directions: a read blocked on another handle returns the
    /// end of the stream.
    pub fn shutdown(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Unix(s) => s.shutdown(Shutdown::Both),
            Inner::Tcp(s) => s.shutdown(Shutdown::Both),
        }
    }

    /// Shuts the writing direction: the peer reads the end of the stream,
    /// and can still answer.
    pub fn shutdown_write(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Unix(s) => s.shutdown(Shutdown::Write),
            Inner::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }

    /// Bounds each later read (`None`: wait for ever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match &self.inner {
            Inner::Unix(s) => s.set_read_timeout(timeout),
            Inner::Tcp(s) => s.set_read_timeout(timeout),
        }
    }

    /// Bounds each later write (`None`: wait for ever).
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match &self.inner {
            Inner::Unix(s) => s.set_write_timeout(timeout),
            Inner::Tcp(s) => s.set_write_timeout(timeout),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Unix(s) => s.read(buf),
            Inner::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Unix(s) => s.write(buf),
            Inner::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Unix(s) => s.flush(),
            Inner::Tcp(s) => s.flush(),
        }
    }
}

/// A listening stream socket. [`StreamListener::accept`] blocks;
/// [`StreamListener::into_async`] makes one to await in a tokio runtime.
#[derive(Debug)]
pub struct StreamListener {
    inner: ListenerInner,
    local: StreamAddr,
}

#[derive(Debug)]
enum ListenerInner {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl StreamListener {
    /// Listens on `addr`. A Unix socket file left by an earlier run is
    /// replaced; any other file at that path is not ours to delete, and is an
    /// error.
    pub fn bind(addr: &StreamAddr) -> io::Result<StreamListener> {
        let (inner, local) = match addr {
            StreamAddr::Unix(path) => {
                remove_stale_socket(path)?;
                let listener = UnixListener::bind(path)?;
                (ListenerInner::Unix(listener), addr.clone())
            }
            StreamAddr::Tcp(wanted) => {
                let listener = TcpListener::bind(wanted)?;
                // A port of 0 resolved to the port bound.
                let local = listener.local_addr().unwrap_or(*wanted);
                (ListenerInner::Tcp(listener), StreamAddr::Tcp(local))
            }
        };
        Ok(StreamListener { inner, local })
    }

    /// The address listened on, with a TCP port 0 resolved.
    pub fn local_addr(&self) -> &StreamAddr {
        &self.local
    }

    /// Waits for the next connection: the stream (blocking, no timeouts)
    /// and the peer, described for messages.
    pub fn accept(&self) -> io::Result<(Stream, String)> {
        match &self.inner {
            ListenerInner::Unix(l) => {
                let (s, _) = l.accept()?;
                Ok((Stream::from_unix(s)?, UNIX_PEER.to_string()))
            }
            ListenerInner::Tcp(l) => {
                let (s, peer) = l.accept()?;
                Ok((Stream::from_tcp(s)?, peer.to_string()))
            }
        }
    }

    /// The same listener for a tokio runtime; must be called inside one.
    pub fn into_async(self) -> io::Result<AsyncStreamListener> {
        let inner = match self.inner {
            ListenerInner::Unix(l) => {
                l.set_nonblocking(true)?;
                AsyncInner::Unix(tokio::net::UnixListener::from_std(l)?)
            }
            ListenerInner::Tcp(l) => {
                l.set_nonblocking(true)?;
                AsyncInner::Tcp(tokio::net::TcpListener::from_std(l)?)
            }
        };
        Ok(AsyncStreamListener {
            inner,
            local: self.local,
        })
    }
}

/// How an accepted Unix socket peer is described (it has no useful address).
const UNIX_PEER: &str = "a Unix socket peer";

impl Stream {
    fn from_unix(s: UnixStream) -> io::Result<Stream> {
        s.set_nonblocking(false)?;
        Ok(Stream {
            inner: Inner::Unix(s),
        })
    }

    fn from_tcp(s: TcpStream) -> io::Result<Stream> {
        s.set_nonblocking(false)?;
        Ok(Stream {
            inner: Inner::Tcp(s),
        })
    }
}

/// A [`StreamListener`] in a tokio runtime. The streams it accepts are
/// blocking, for a blocking task or thread to serve.
#[derive(Debug)]
pub struct AsyncStreamListener {
    inner: AsyncInner,
    local: StreamAddr,
}

#[derive(Debug)]
enum AsyncInner {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

impl AsyncStreamListener {
    /// The address listened on, with a TCP port 0 resolved.
    pub fn local_addr(&self) -> &StreamAddr {
        &self.local
    }

    /// The next connection, as [`StreamListener::accept`] gives it.
    pub async fn accept(&self) -> io::Result<(Stream, String)> {
        match &self.inner {
            AsyncInner::Unix(l) => {
                let (s, _) = l.accept().await?;
                Ok((Stream::from_unix(s.into_std()?)?, UNIX_PEER.to_string()))
            }
            AsyncInner::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                Ok((Stream::from_tcp(s.into_std()?)?, peer.to_string()))
            }
        }
    }
}

/// A socket file left by a previous run would make bind fail; anything else
/// at that path is not ours to delete.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot remove the old socket {}: {e}", path.display()),
            )
        }),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{}: exists and is not a socket", path.display()),
        )),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("bulwark-net-stream-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn echo_once(listener: StreamListener) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        })
    }

    #[test]
    fn tcp_connect_exchanges_bytes_and_reports_the_port_bound() {
        let listener =
            StreamListener::bind(&StreamAddr::Tcp("127.0.0.1:0".parse().unwrap())).unwrap();
        let addr = listener.local_addr().clone();
        let StreamAddr::Tcp(bound) = addr else {
            panic!("{addr}")
        };
        assert_ne!(bound.port(), 0);
        assert_eq!(addr.to_string(), format!("tcp:{bound}"));
        let server = echo_once(listener);
        let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
        s.write_all(b"hello").unwrap();
        let mut back = [0u8; 5];
        s.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello");
        server.join().unwrap();
    }

    #[test]
    fn unix_listen_replaces_a_stale_socket_but_not_a_file() {
        let dir = scratch_dir("unix");
        let path = dir.join("s.sock");
        drop(UnixListener::bind(&path).unwrap());
        let addr = StreamAddr::Unix(path.clone());
        let listener = StreamListener::bind(&addr).unwrap();
        let server = echo_once(listener);
        let mut s = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
        s.write_all(b"world").unwrap();
        let mut back = [0u8; 5];
        s.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"world");
        server.join().unwrap();

        let plain = dir.join("plain");
        std::fs::write(&plain, "data").unwrap();
        let err = StreamListener::bind(&StreamAddr::Unix(plain.clone())).unwrap_err();
        assert!(err.to_string().contains("is not a socket"), "{err}");
        assert_eq!(std::fs::read(&plain).unwrap(), b"data");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stalled_peer_times_out_reads() {
        let listener =
            StreamListener::bind(&StreamAddr::Tcp("127.0.0.1:0".parse().unwrap())).unwrap();
        let addr = listener.local_addr().clone();
        let mut s = Stream::connect(&addr, Duration::from_millis(50)).unwrap();
        let (_held, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1];
        let err = s.read(&mut buf).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{err}"
        );
    }

    #[test]
    fn shutdown_ends_a_read_blocked_on_a_clone() {
        let listener =
            StreamListener::bind(&StreamAddr::Tcp("127.0.0.1:0".parse().unwrap())).unwrap();
        let addr = listener.local_addr().clone();
        let _client = Stream::connect(&addr, Duration::from_secs(5)).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let stopper = accepted.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut accepted = accepted;
            let mut buf = [0u8; 1];
            accepted.read(&mut buf).unwrap()
        });
        std::thread::sleep(Duration::from_millis(50));
        stopper.shutdown().unwrap();
        assert_eq!(reader.join().unwrap(), 0);
    }

    #[test]
    fn connecting_to_nobody_fails() {
        let dir = scratch_dir("nobody");
        let addr = StreamAddr::Unix(dir.join("nobody.sock"));
        assert!(Stream::connect(&addr, Duration::from_secs(1)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
