//! TCP connections kept open for later exchanges with the same server
//! (RFC 7766 §6.2.1: a client should reuse a connection rather than open
//! one per query). Connections are kept per server and local address, a few
//! each, and closed once idle for the configured time; one the server has
//! closed meanwhile is dropped when found.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use socket2::SockRef;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Connections are kept apart by the server and by the local address they
/// were opened from.
pub(crate) type PoolKey = (SocketAddr, Option<IpAddr>);

/// A connection a pool can keep: it can tell whether it is still open.
pub(crate) trait Kept: Send + 'static {
    fn still_open(&self) -> bool;
}

impl Kept for TcpStream {
    fn still_open(&self) -> bool {
        still_open(self)
    }
}

impl Kept for tokio_rustls::client::TlsStream<TcpStream> {
    /// Anything waiting on the socket (a close_notify, a late ticket) makes
    /// the connection not worth reusing: a new one is cheap next to a
    /// query lost on a closing one.
    fn still_open(&self) -> bool {
        still_open(self.get_ref().0)
    }
}

/// One connection waiting for its next query.
#[derive(Debug)]
struct Idle<S> {
    stream: S,
    since: Instant,
}

#[derive(Debug)]
struct Held<S> {
    /// Per server, oldest first.
    idle: HashMap<PoolKey, VecDeque<Idle<S>>>,
    /// Whether a task is closing expired connections.
    sweeping: bool,
}

impl<S> Default for Held<S> {
    fn default() -> Self {
        Held {
            idle: HashMap::new(),
            sweeping: false,
        }
    }
}

/// The idle connections of one client (TCP, or TLS).
#[derive(Debug)]
pub(crate) struct Pool<S = TcpStream> {
    idle_timeout: Duration,
    max_per_server: usize,
    held: Mutex<Held<S>>,
}

impl<S: Kept> Pool<S> {
    pub(crate) fn new(idle_timeout: Duration, max_per_server: usize) -> Pool<S> {
        Pool {
            idle_timeout,
            max_per_server,
            held: Mutex::new(Held::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held<S>> {
        // Nothing here is left half-changed by a panic: keep going.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `idle` is past its idle time at `now`.
    fn expired(&self, idle: &Idle<S>, now: Instant) -> bool {
        idle.since
            .checked_add(self.idle_timeout)
            .is_some_and(|end| end <= now)
    }

    /// The most recently used connection to `key` that is still fresh and
    /// open; those found expired or closed are dropped (closing them).
    pub(crate) fn take(&self, key: PoolKey) -> Option<S> {
        let now = Instant::now();
        let mut held = self.lock();
        let list = held.idle.get_mut(&key)?;
        let mut found = None;
        while let Some(idle) = list.pop_back() {
            if !self.expired(&idle, now) && idle.stream.still_open() {
                found = Some(idle.stream);
                break;
            }
        }
        if list.is_empty() {
            held.idle.remove(&key);
        }
        found
    }

    /// Keeps `stream`, just used successfully, for a later exchange with
    /// `key`. Over the limit, the oldest connection to `key` is closed.
    pub(crate) fn put(self: &Arc<Self>, key: PoolKey, stream: S) {
        if self.max_per_server == 0 || self.idle_timeout.is_zero() {
            return;
        }
        let mut held = self.lock();
        let list = held.idle.entry(key).or_default();
        while list.len() >= self.max_per_server {
            list.pop_front();
        }
        list.push_back(Idle {
            stream,
            since: Instant::now(),
        });
        if !held.sweeping {
            // Always inside the runtime (an exchange just ran); without one,
            // expired connections are still dropped when next looked at.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                held.sweeping = true;
                runtime.spawn(sweep(Arc::downgrade(self)));
            }
        }
    }

    /// Closes expired and closed connections. Returns when the next one
    /// expires, or `None` (and the sweeper stops) when none is left.
    fn sweep_once(&self, now: Instant) -> Option<Instant> {
        let mut held = self.lock();
        held.idle.retain(|_, list| {
            list.retain(|idle| !self.expired(idle, now) && idle.stream.still_open());
            !list.is_empty()
        });
        let next = held
            .idle
            .values()
            .flatten()
            .filter_map(|idle| idle.since.checked_add(self.idle_timeout))
            .min();
        if next.is_none() {
            held.sweeping = false;
        }
        next
    }

    /// How many connections are kept.
    pub(crate) fn len(&self) -> usize {
        self.lock().idle.values().map(VecDeque::len).sum()
    }
}

/// Closes a pool's connections as they expire, until it holds none (or is
/// dropped with its client).
async fn sweep<S: Kept>(pool: Weak<Pool<S>>) {
    loop {
        let next = match pool.upgrade() {
            Some(pool) => pool.sweep_once(Instant::now()),
            None => return,
        };
        match next {
            Some(at) => tokio::time::sleep_until(at).await,
            None => return,
        }
    }
}

/// Whether an idle connection is still usable: nothing to read on it yet.
/// End of stream means the server closed it; data means it sent something
/// unasked; either way it is not reused. Peeking asks the socket itself,
/// not the runtime's cached readiness, so a close that has just arrived is
/// seen.
fn still_open(stream: &TcpStream) -> bool {
    let mut probe = [MaybeUninit::<u8>::uninit(); 1];
    // The socket is non-blocking (tokio set it so): an empty receive queue
    // is WouldBlock.
    match SockRef::from(stream).peek(&mut probe) {
        Err(e) => e.kind() == io::ErrorKind::WouldBlock,
        Ok(_) => false,
    }
}
