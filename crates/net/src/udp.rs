//! UDP: one worker per core, each with its own `SO_REUSEPORT` socket per
//! listen address, so the kernel spreads queries over workers and each reply
//! leaves from the socket (and so the address) it was sent to. A worker receives
//! and sends in batches (recvmmsg/sendmmsg) with buffers allocated once: per query
//! there is no allocation, no lock and no syscall of its own.
//!
//! A worker is an OS thread of its own ([`UdpListeners::spawn`]) when answers
//! are made there and then, as an authoritative server's are; it is a task on
//! the async runtime ([`UdpListeners::spawn_tasks`]) when answers wait on work
//! that runs on the runtime, as a resolver's wait on its driver. There, a
//! worker thread beside the runtime's would sleep in recvmmsg while the
//! runtime's thread held the core, and be woken, through an interrupt from the
//! core the datagram came in on, for every few queries; a task is found ready
//! by the runtime between its other tasks, without waking anyone.

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::thread::JoinHandle;

use bulwark_proto::message::truncate_to_question;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::unix::AsyncFd;

use crate::deferred::Responder;
use crate::error::NetError;
use crate::shutdown::Shutdown;
use crate::sys::{self, RecvBatch, SendBatch};
use crate::QueryHandler;

/// Datagrams received per recvmmsg call.
pub const DEFAULT_BATCH: usize = 64;
/// The largest query accepted over UDP; bigger datagrams are dropped. Queries to
/// an authoritative server are a few hundred bytes; this leaves room for EDNS
/// options and TSIG.
pub const DEFAULT_MAX_UDP_QUERY: usize = 4096;
/// Kernel receive buffer asked for each socket, to ride out bursts.
pub const DEFAULT_RECV_BUFFER: usize = 4 << 20;
/// Full batches drained from one socket before polling again, so one busy socket
/// cannot starve the worker's others or delay shutdown.
const MAX_BATCHES_PER_WAKE: usize = 32;

#[derive(Debug, Clone)]
pub struct UdpConfig {
    pub batch: usize,
    pub max_query_size: usize,
    /// Initial capacity of each response buffer; it grows once if a response needs more.
    pub response_capacity: usize,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            batch: DEFAULT_BATCH,
            max_query_size: DEFAULT_MAX_UDP_QUERY,
            response_capacity: 4096,
        }
    }
}

/// Whether UDP answers may leave in fragments. Neither honours the path MTU
/// that ICMP reports, which an attacker can forge to have answers split and
/// a forged later fragment spliced in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fragmentation {
    /// Never (the default, RFC 9715 §3.1): DF on IPv4, none at the source
    /// on IPv6. An answer too big for the interface goes again cut to the
    /// question with TC, and the client asks over TCP.
    Never,
    /// Only answers larger than the outgoing interface's MTU, for a server
    /// configured to send more than a link carries whole.
    AtInterfaceMtu,
}

impl Fragmentation {
    /// For a server whose UDP answers may be up to `max_payload` octets: up
    /// to RFC 9715's largest recommended payload (1,400, which fits the
    /// common 1,500-octet links whole), answers never fragment.
    pub fn for_max_payload(max_payload: u16) -> Fragmentation {
        if max_payload > RFC9715_MAX_PAYLOAD {
            Fragmentation::AtInterfaceMtu
        } else {
            Fragmentation::Never
        }
    }

    fn apply(self, socket: &Socket, addr: SocketAddr) -> std::io::Result<()> {
        sys::set_fragmentation(
            socket.as_raw_fd(),
            addr.is_ipv6(),
            self == Fragmentation::Never,
        )
    }
}

/// The largest UDP payload RFC 9715 §3.1 (R3) recommends a responder sends.
const RFC9715_MAX_PAYLOAD: u16 = 1400;

/// Bound sockets, not yet served: `sockets[w]` are worker `w`'s, one per address.
#[derive(Debug)]
pub struct UdpListeners {
    sockets: Vec<Vec<Arc<Socket>>>,
    local_addrs: Vec<SocketAddr>,
}

/// Binds `workers` sockets to each of `addrs` with SO_REUSEPORT. A port of 0 is
/// resolved by the first socket and reused for that address's others.
pub fn bind_udp(addrs: &[SocketAddr], workers: usize) -> Result<UdpListeners, NetError> {
    let workers = workers.max(1);
    let mut sockets: Vec<Vec<Arc<Socket>>> = (0..workers)
        .map(|_| Vec::with_capacity(addrs.len()))
        .collect();
    let mut local_addrs = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        let actual = unshared(addr)?;
        for worker in sockets.iter_mut() {
            worker.push(Arc::new(bind_one(actual)?));
        }
        local_addrs.push(actual);
    }
    Ok(UdpListeners {
        sockets,
        local_addrs,
    })
}

/// A UDP socket bound to `addr` with no sharing (no SO_REUSEPORT),
/// IPV6_V6ONLY on v6: the probe below, and a QUIC listener's socket.
pub(crate) fn bind_plain(addr: SocketAddr) -> Result<Socket, NetError> {
    let bind_err = |cause| NetError::Bind {
        proto: "udp",
        addr,
        cause,
    };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(bind_err)?;
    if addr.is_ipv6() {
        socket
            .set_only_v6(true)
            .map_err(|cause| NetError::SocketOption {
                option: "IPV6_V6ONLY",
                addr,
                cause,
            })?;
    }
    socket.bind(&addr.into()).map_err(bind_err)?;
    Ok(socket)
}

/// `addr` when no other socket holds it for UDP (with port 0, a port no
/// socket holds). The workers' sockets set SO_REUSEPORT, and a bind with it
/// succeeds on a port another process of the same user holds with it too,
/// joining that process's group: the kernel would then split the other
/// server's queries with ours, silently. A probe bound without SO_REUSEPORT
/// fails on a held port instead, and is closed before the workers bind.
fn unshared(addr: SocketAddr) -> Result<SocketAddr, NetError> {
    let probe = bind_plain(addr)?;
    let bound = probe
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .unwrap_or(addr);
    Ok(bound)
}

fn bind_one(addr: SocketAddr) -> Result<Socket, NetError> {
    let opt = |option: &'static str| {
        move |cause| NetError::SocketOption {
            option,
            addr,
            cause,
        }
    };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(
        |cause| NetError::Bind {
            proto: "udp",
            addr,
            cause,
        },
    )?;
    if addr.is_ipv6() {
        // One socket per family: a v6 socket must not also take v4 traffic, or
        // the v4 listener would collide with it.
        socket.set_only_v6(true).map_err(opt("IPV6_V6ONLY"))?;
    }
    socket.set_reuse_port(true).map_err(opt("SO_REUSEPORT"))?;
    // Best effort: the kernel caps it at net.core.rmem_max.
    let _ = socket.set_recv_buffer_size(DEFAULT_RECV_BUFFER);
    if addr.ip().is_unspecified() {
        sys::enable_pktinfo(socket.as_raw_fd(), addr.is_ipv6()).map_err(opt("IP_PKTINFO"))?;
    }
    Fragmentation::Never
        .apply(&socket, addr)
        .map_err(opt("IP_MTU_DISCOVER"))?;
    socket.bind(&addr.into()).map_err(|cause| NetError::Bind {
        proto: "udp",
        addr,
        cause,
    })?;
    Ok(socket)
}

impl UdpListeners {
    /// Sets every socket's fragmentation (bound with `Fragmentation::Never`).
    pub fn set_fragmentation(&self, policy: Fragmentation) -> Result<(), NetError> {
        for (socket, &addr) in self
            .sockets
            .iter()
            .flat_map(|worker| worker.iter().zip(&self.local_addrs))
        {
            policy
                .apply(socket, addr)
                .map_err(|cause| NetError::SocketOption {
                    option: "IP_MTU_DISCOVER",
                    addr,
                    cause,
                })?;
        }
        Ok(())
    }

    /// The bound addresses, with any port 0 resolved.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    pub fn workers(&self) -> usize {
        self.sockets.len()
    }

    /// Starts one thread per worker; `make_handler(w)` builds worker `w`'s handler.
    pub fn spawn<F, H>(
        self,
        config: &UdpConfig,
        mut make_handler: F,
        shutdown: &Shutdown,
    ) -> Result<UdpWorkers, NetError>
    where
        F: FnMut(usize) -> H,
        H: QueryHandler + Send + 'static,
    {
        let mut workers = UdpWorkers::new(&self.sockets, None, shutdown);
        for (w, sockets) in self.sockets.into_iter().enumerate() {
            let handler = make_handler(w);
            let counters = Arc::new(Counters::default());
            let worker = Worker {
                sockets,
                handler,
                config: config.clone(),
                shutdown: shutdown.clone(),
                counters: Arc::clone(&counters),
            };
            let thread = std::thread::Builder::new()
                .name(format!("udp-{w}"))
                .spawn(move || worker.run());
            match thread {
                Ok(t) => {
                    workers.threads.push(t);
                    workers.counters.push(counters);
                }
                Err(e) => {
                    // Do not leave half a server running.
                    shutdown.trigger();
                    let _ = workers.join();
                    return Err(NetError::Spawn(e));
                }
            }
        }
        Ok(workers)
    }

    /// Starts one task per worker on `runtime` (see the module's note on
    /// when); `make_handler(w)` builds worker `w`'s handler. Must be called
    /// where a task can be registered with the runtime's reactor: within the
    /// runtime's context (`Runtime::enter`).
    pub fn spawn_tasks<F, H>(
        self,
        runtime: &tokio::runtime::Handle,
        config: &UdpConfig,
        mut make_handler: F,
        shutdown: &Shutdown,
    ) -> Result<UdpWorkers, NetError>
    where
        F: FnMut(usize) -> H,
        H: QueryHandler + Send + 'static,
    {
        let mut workers = UdpWorkers::new(&self.sockets, Some(runtime), shutdown);
        for (w, sockets) in self.sockets.into_iter().enumerate() {
            // Registered with the reactor here, so a failure is the caller's.
            let ready = {
                let _entered = runtime.enter();
                sockets
                    .iter()
                    .map(|s| sys::register_readable(Arc::clone(s)))
                    .collect::<Result<Vec<_>, _>>()
            };
            let ready = match ready {
                Ok(r) => r,
                Err(e) => {
                    shutdown.trigger();
                    let _ = workers.join();
                    return Err(NetError::Spawn(e));
                }
            };
            let counters = Arc::new(Counters::default());
            let worker = Worker {
                sockets,
                handler: make_handler(w),
                config: config.clone(),
                shutdown: shutdown.clone(),
                counters: Arc::clone(&counters),
            };
            workers.tasks.push(runtime.spawn(worker.run_task(ready)));
            workers.counters.push(counters);
        }
        Ok(workers)
    }
}

/// Per-worker counters, bumped once per batch and summed when read; a
/// deferred reply (a resolution, an update) bumps them when it is sent.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    received: AtomicU64,
    pub(crate) responded: AtomicU64,
    dropped: AtomicU64,
    pub(crate) send_errors: AtomicU64,
    /// Replies too big for the link unfragmented, sent again truncated.
    pub(crate) truncated: AtomicU64,
}

/// Totals over all workers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UdpStats {
    pub received: u64,
    pub responded: u64,
    pub dropped: u64,
    pub send_errors: u64,
    /// Responses larger than the link's MTU allows unfragmented, sent again
    /// cut to the question with TC.
    pub truncated: u64,
}

/// The running workers.
#[derive(Debug)]
pub struct UdpWorkers {
    threads: Vec<JoinHandle<()>>,
    /// Workers run as tasks, and the runtime they run on.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    runtime: Option<tokio::runtime::Handle>,
    counters: Vec<Arc<Counters>>,
    /// Every worker's sockets, shut for reading on join to wake workers that
    /// sleep in recvmmsg.
    sockets: Vec<Arc<Socket>>,
    shutdown: Shutdown,
}

impl UdpWorkers {
    /// None running yet: room for a thread or a task per worker of `sockets`.
    fn new(
        sockets: &[Vec<Arc<Socket>>],
        runtime: Option<&tokio::runtime::Handle>,
        shutdown: &Shutdown,
    ) -> UdpWorkers {
        let (threads, tasks) = if runtime.is_some() {
            (0, sockets.len())
        } else {
            (sockets.len(), 0)
        };
        UdpWorkers {
            threads: Vec::with_capacity(threads),
            tasks: Vec::with_capacity(tasks),
            runtime: runtime.cloned(),
            counters: Vec::with_capacity(sockets.len()),
            sockets: sockets.iter().flatten().cloned().collect(),
            shutdown: shutdown.clone(),
        }
    }

    pub fn stats(&self) -> UdpStats {
        let mut s = UdpStats::default();
        for c in &self.counters {
            s.received = s.received.wrapping_add(c.received.load(Ordering::Relaxed));
            s.responded = s
                .responded
                .wrapping_add(c.responded.load(Ordering::Relaxed));
            s.dropped = s.dropped.wrapping_add(c.dropped.load(Ordering::Relaxed));
            s.send_errors = s
                .send_errors
                .wrapping_add(c.send_errors.load(Ordering::Relaxed));
            s.truncated = s
                .truncated
                .wrapping_add(c.truncated.load(Ordering::Relaxed));
        }
        s
    }

    /// Stops every worker (triggering the shutdown if nobody has), waits for
    /// them and returns the final totals.
    pub fn join(self) -> UdpStats {
        // Before the sockets are shut, so a worker woken by that sees it.
        self.shutdown.trigger();
        for socket in &self.sockets {
            // Linux wakes a receiver blocked on a UDP socket shut for reading,
            // even an unconnected one, though the call reports ENOTCONN.
            let _ = socket.shutdown(std::net::Shutdown::Read);
        }
        for t in self.threads {
            if t.join().is_err() {
                tracing::error!("a UDP worker panicked");
            }
        }
        // Tasks end when they see the shutdown. Waited for from outside the
        // runtime; from inside, where no thread may block, they are stopped.
        let outside = tokio::runtime::Handle::try_current().is_err();
        for t in self.tasks {
            match &self.runtime {
                Some(rt) if outside => {
                    if rt.block_on(t).is_err() {
                        tracing::error!("a UDP worker task panicked or was cancelled");
                    }
                }
                _ => t.abort(),
            }
        }
        UdpWorkers {
            threads: Vec::new(),
            tasks: Vec::new(),
            runtime: self.runtime,
            counters: self.counters,
            sockets: Vec::new(),
            shutdown: self.shutdown,
        }
        .stats()
    }
}

struct Worker<H> {
    sockets: Vec<Arc<Socket>>,
    handler: H,
    config: UdpConfig,
    shutdown: Shutdown,
    counters: Arc<Counters>,
}

/// A worker's buffers, allocated once.
struct Buffers {
    recv: RecvBatch,
    send: SendBatch,
    outs: Vec<Vec<u8>>,
    which: Vec<usize>,
    /// Each socket's bound address, handed to the handler as the listener.
    locals: Vec<SocketAddr>,
}

impl<H: QueryHandler> Worker<H> {
    fn buffers(&self) -> Buffers {
        let batch = self.config.batch.max(1);
        // Sockets on a wildcard address need each reply's source set explicitly.
        let pktinfo = self.sockets.iter().any(|s| {
            s.local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .is_some_and(|a| a.ip().is_unspecified())
        });
        Buffers {
            recv: RecvBatch::new(batch, self.config.max_query_size, pktinfo),
            send: SendBatch::new(batch),
            outs: (0..batch)
                .map(|_| Vec::with_capacity(self.config.response_capacity))
                .collect(),
            which: Vec::with_capacity(batch),
            locals: self
                .sockets
                .iter()
                .map(|s| {
                    s.local_addr()
                        .ok()
                        .and_then(|a| a.as_socket())
                        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
                })
                .collect(),
        }
    }

    /// The worker as a task: it sleeps until one of its sockets is readable
    /// (or the server stops), then drains it as the thread does.
    async fn run_task(mut self, ready: Vec<AsyncFd<Arc<Socket>>>) {
        let Buffers {
            mut recv,
            mut send,
            mut outs,
            mut which,
            locals,
        } = self.buffers();
        let shutdown = self.shutdown.clone();
        let mut stop = std::pin::pin!(shutdown.wait());
        // Where the next look for a readable socket starts, turn about, so
        // one busy socket cannot keep the others waiting.
        let mut first = 0usize;
        loop {
            let readable = std::future::poll_fn(|cx| {
                if stop.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                let n = ready.len();
                for k in 0..n {
                    let w = first.wrapping_add(k).checked_rem(n).unwrap_or(0);
                    if let Some(fd) = ready.get(w) {
                        if let Poll::Ready(r) = fd.poll_read_ready(cx) {
                            return Poll::Ready(Some((w, r)));
                        }
                    }
                }
                Poll::Pending
            })
            .await;
            let Some((w, guard)) = readable else { return };
            first = w.wrapping_add(1);
            let mut guard = match guard {
                Ok(g) => g,
                Err(e) => {
                    tracing::error!(error = %e, "UDP worker cannot wait for its socket; stopping");
                    return;
                }
            };
            let fd = guard.get_inner().as_raw_fd();
            let local = locals
                .get(w)
                .copied()
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            let mut drained = false;
            for _ in 0..MAX_BATCHES_PER_WAKE {
                let n = match recv.recv(fd) {
                    Ok(n) => n,
                    Err(e) => {
                        tracing::warn!(error = %e, "recvmmsg failed");
                        0
                    }
                };
                // Only an empty receive ends the turn, not a short batch as
                // on a thread: while one batch is answered the next comes
                // in, and receiving it now spares the runtime a trip
                // through epoll to learn of it (a fifth of the time spent
                // on cache hits, measured).
                if n == 0 {
                    drained = true;
                    break;
                }
                self.answer_batch((w, fd, local), n, &recv, &mut send, &mut outs, &mut which);
            }
            if drained {
                guard.clear_ready();
            } else {
                // Still busy: the runtime's other tasks have their turn.
                drop(guard);
                tokio::task::yield_now().await;
            }
            if self.shutdown.is_triggered() {
                return;
            }
        }
    }

    fn run(mut self) {
        let Buffers {
            mut recv,
            mut send,
            mut outs,
            mut which,
            locals,
        } = self.buffers();
        if let ([socket], [local]) = (self.sockets.as_slice(), locals.as_slice()) {
            let (fd, local) = (socket.as_raw_fd(), *local);
            return self.run_one_socket((fd, local), &mut recv, &mut send, &mut outs, &mut which);
        }
        // Slot 0 is the shutdown eventfd, then one per socket.
        let mut fds: Vec<libc::pollfd> = std::iter::once(self.shutdown.raw_fd())
            .chain(self.sockets.iter().map(|s| s.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        loop {
            match sys::poll(&mut fds) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!(error = %e, "UDP worker cannot poll; stopping");
                    return;
                }
            }
            if fds.first().is_some_and(|p| p.revents != 0) || self.shutdown.is_triggered() {
                return;
            }
            // The sockets stay owned by `self.sockets`; their fds are borrowed here.
            for (w, (pfd, &local)) in fds.iter().skip(1).zip(&locals).enumerate() {
                if pfd.revents == 0 {
                    continue;
                }
                let fd = pfd.fd;
                for _ in 0..MAX_BATCHES_PER_WAKE {
                    let n = match recv.recv(fd) {
                        Ok(n) => n,
                        Err(e) => {
                            tracing::warn!(error = %e, "recvmmsg failed");
                            break;
                        }
                    };
                    if n == 0 {
                        break;
                    }
                    self.answer_batch((w, fd, local), n, &recv, &mut send, &mut outs, &mut which);
                    // A short batch means the queue is empty: back to poll rather
                    // than spend a syscall to learn it.
                    if n < recv.capacity() {
                        break;
                    }
                }
            }
        }
    }

    /// A worker with one socket sleeps in the receive itself: no poll, so one
    /// syscall fewer per wake-up, which is most of what a lightly loaded server
    /// does. It is woken for shutdown by [`UdpWorkers::join`] shutting its
    /// socket for reading.
    fn run_one_socket(
        &mut self,
        (fd, local): (std::os::fd::RawFd, SocketAddr),
        recv: &mut RecvBatch,
        send: &mut SendBatch,
        outs: &mut [Vec<u8>],
        which: &mut Vec<usize>,
    ) {
        loop {
            let received = recv.recv_waiting(fd);
            // A socket shut for reading returns empty entries, not datagrams;
            // the flag was set before the shutdown, so it is seen here.
            if self.shutdown.is_triggered() {
                return;
            }
            match received {
                Ok(0) => return,
                Ok(n) => self.answer_batch((0, fd, local), n, recv, send, outs, which),
                Err(e) => tracing::warn!(error = %e, "recvmmsg failed"),
            }
        }
    }

    fn answer_batch(
        &mut self,
        (socket_index, fd, local): (usize, std::os::fd::RawFd, SocketAddr),
        n: usize,
        recv: &RecvBatch,
        send: &mut SendBatch,
        outs: &mut [Vec<u8>],
        which: &mut Vec<usize>,
    ) {
        which.clear();
        // Queries whose reply comes later, from a job: not dropped.
        let mut deferred = 0u64;
        self.handler.start_of_batch(&Received { recv, n });
        for (i, out) in outs.iter_mut().enumerate().take(n) {
            let (Some(query), Some(peer)) = (recv.payload(i), recv.peer(i)) else {
                continue;
            };
            // A bug in answering must cost one query, not the worker: unwinding
            // is caught here (free when nothing panics) and the query dropped.
            let handler = &mut self.handler;
            let respond = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.handle(query, peer, local, out)
            }));
            match respond {
                Ok(true) => which.push(i),
                Ok(false) => {
                    let job = self
                        .handler
                        .take_deferred()
                        .or_else(|| self.handler.take_deferred_reply());
                    if let Some(job) = job {
                        if let Some(socket) = self.sockets.get(socket_index) {
                            deferred = deferred.saturating_add(1);
                            job(Responder::udp(
                                Arc::clone(socket),
                                peer,
                                recv.reply_control(i),
                                Arc::clone(&self.counters),
                            ));
                        }
                    }
                }
                Err(_) => {
                    out.clear();
                    tracing::error!(%peer, "answering a query panicked; query dropped");
                }
            }
        }
        // Before the send, as over TCP: what the handler batched (log
        // entries, rate-limiting counts) is handed on by the time a client
        // holds its answer.
        self.handler.end_of_batch();
        let answered = u64::try_from(which.len()).unwrap_or(0);
        let mut sent = if which.is_empty() {
            sys::Sent::default()
        } else {
            send.send(fd, recv, outs, which)
        };
        if sent.too_big > 0 {
            // Cut to the question with TC (RFC 9715 §3.1, R4): the client asks
            // again over TCP rather than waiting for an answer that never comes.
            which.clear();
            which.extend_from_slice(send.too_big());
            which.retain(|&i| outs.get_mut(i).is_some_and(truncate_to_question));
            let again = send.send(fd, recv, outs, which);
            self.counters
                .truncated
                .fetch_add(u64::try_from(which.len()).unwrap_or(0), Ordering::Relaxed);
            sent.sent = sent.sent.saturating_add(again.sent);
            sent.failed = sent
                .failed
                .saturating_add(again.failed)
                .saturating_add(again.too_big)
                .saturating_add(sent.too_big.saturating_sub(which.len()));
        }
        let n64 = u64::try_from(n).unwrap_or(0);
        let c = &self.counters;
        c.received.fetch_add(n64, Ordering::Relaxed);
        c.responded
            .fetch_add(u64::try_from(sent.sent).unwrap_or(0), Ordering::Relaxed);
        c.dropped.fetch_add(
            n64.saturating_sub(answered).saturating_sub(deferred),
            Ordering::Relaxed,
        );
        c.send_errors
            .fetch_add(u64::try_from(sent.failed).unwrap_or(0), Ordering::Relaxed);
    }
}

/// The first `n` messages of a receive batch, as the handler sees them.
struct Received<'a> {
    recv: &'a RecvBatch,
    n: usize,
}

impl crate::Batch for Received<'_> {
    fn len(&self) -> usize {
        self.n
    }

    fn query(&self, i: usize) -> Option<&[u8]> {
        (i < self.n).then(|| self.recv.payload(i)).flatten()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn modes(listeners: &UdpListeners) -> Vec<libc::c_int> {
        listeners
            .sockets
            .iter()
            .flat_map(|worker| worker.iter().zip(&listeners.local_addrs))
            .map(|(s, a)| sys::mtu_discover_mode(s.as_raw_fd(), a.is_ipv6()).unwrap())
            .collect()
    }

    #[test]
    fn listeners_never_fragment_unless_set_to_at_the_interface() {
        let addrs: Vec<SocketAddr> =
            vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let listeners = bind_udp(&addrs, 2).unwrap();
        assert_eq!(modes(&listeners), vec![libc::IP_PMTUDISC_PROBE; 4]);
        listeners
            .set_fragmentation(Fragmentation::AtInterfaceMtu)
            .unwrap();
        assert_eq!(modes(&listeners), vec![libc::IP_PMTUDISC_OMIT; 4]);
    }

    #[test]
    fn only_answers_above_the_rfc_9715_size_may_fragment() {
        assert_eq!(Fragmentation::for_max_payload(512), Fragmentation::Never);
        assert_eq!(Fragmentation::for_max_payload(1232), Fragmentation::Never);
        assert_eq!(Fragmentation::for_max_payload(1400), Fragmentation::Never);
        assert_eq!(
            Fragmentation::for_max_payload(1401),
            Fragmentation::AtInterfaceMtu
        );
    }
}
