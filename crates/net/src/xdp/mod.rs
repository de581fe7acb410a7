//! DNS over UDP past the kernel's socket layer: AF_XDP (Linux 4.18+).
//!
//! An XDP program on the interface (filter.bpf.c, loaded through aya) hands
//! the UDP datagrams to the DNS port, one AF_XDP socket per queue, straight
//! from the driver; everything else goes on to the kernel as before. A worker
//! thread per queue reads the Ethernet frames, asks the same
//! [`QueryHandler`] as the socket path (so ACLs, rate limiting, cookies,
//! dnstap and counts are the same), and writes the reply over the query's
//! own frame, addresses swapped, into the TX ring. Per query there is no
//! allocation and no syscall of its own; in copy mode the kernel is told to
//! send once per 32 answers (its TX batch), in zero-copy once per round.
//!
//! What it does not do: TCP (it stays on sockets), IP fragments, IPv4
//! options and IPv6 extension headers (all passed to the kernel, which
//! answers them on the socket path if bulwark listens there), and replies
//! larger than the interface's MTU (cut to the question with TC set, so the
//! client retries over TCP).
//!
//! Frames a worker holds: received ones until answered, plus a few spare
//! for deferred replies (dynamic updates acknowledged once durable).

pub mod frame;
mod frame_batch;
mod program;
mod xsk;

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

pub use program::AttachMode;
pub use xsk::{CopyMode, XskStats};

use crate::deferred::Responder;
use crate::error::NetError;
use crate::shutdown::Shutdown;
use crate::QueryHandler;
use frame::{Datagram, Flow};
use frame_batch::Frames;
use xsk::{chunk_of, Desc, Xsk, FRAME_SIZE};

/// Frames received and answered per round.
const BATCH: usize = 64;
/// How long an idle worker sleeps before looking at the shutdown flag.
const IDLE_WAIT_MS: i32 = 100;
/// Frames kept out of the fill ring for deferred replies.
const SPARE_FRAMES: u32 = 64;
/// Deferred replies waiting for a worker.
const DEFERRED_QUEUE: usize = 1024;

/// One interface's AF_XDP path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpConfig {
    pub interface: String,
    /// The queues to serve; `None`: all the interface has.
    pub queues: Option<Vec<u32>>,
    /// The UDP port taken (53).
    pub port: u16,
    pub attach: AttachMode,
    pub copy: CopyMode,
}

/// Sockets bound and the program attached; not yet served.
#[derive(Debug)]
pub struct BoundXdp {
    program: program::Program,
    sockets: Vec<(u32, Xsk, Vec<u64>)>,
    interface: String,
    mtu: usize,
}

/// How a bound path runs, for the log and `ctl status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpInfo {
    pub interface: String,
    pub queues: Vec<u32>,
    /// The program runs in the driver (else in generic XDP).
    pub native: bool,
    /// The sockets share their memory with the driver.
    pub zero_copy: bool,
}

/// Loads and attaches the XDP program on `config.interface` and binds a
/// socket to each queue. Needs CAP_NET_ADMIN and CAP_BPF (or root); the
/// sockets keep working once they are dropped.
pub fn bind_xdp(config: &XdpConfig) -> Result<BoundXdp, NetError> {
    let interface = config.interface.as_str();
    let err = |what: &'static str| {
        move |cause: String| NetError::Xdp {
            interface: interface.to_owned(),
            what,
            cause,
        }
    };
    let facts = crate::sys::interface_facts(interface)
        .map_err(|e| err("asking the kernel about it")(e.to_string()))?;
    let (ifindex, mtu) = (facts.index, facts.mtu);
    let queues = match &config.queues {
        Some(q) => q.clone(),
        None => (0..facts.rx_queues).collect(),
    };
    if queues.is_empty() {
        return Err(err("choosing queues")("the interface has none".into()));
    }
    let mut program = program::Program::load(interface, config.port)?;
    let mut sockets = Vec::with_capacity(queues.len());
    for &queue in &queues {
        let (xsk, spare) =
            Xsk::open(ifindex, queue, config.copy, SPARE_FRAMES).map_err(|e| NetError::Xdp {
                interface: interface.to_owned(),
                what: "binding an AF_XDP socket",
                cause: format!("queue {queue}: {e}"),
            })?;
        program.add_socket(interface, queue, xsk.fd())?;
        sockets.push((queue, xsk, spare));
    }
    program.attach(interface, config.attach)?;
    Ok(BoundXdp {
        program,
        sockets,
        interface: interface.to_owned(),
        mtu,
    })
}

impl BoundXdp {
    pub fn info(&self) -> XdpInfo {
        XdpInfo {
            interface: self.interface.clone(),
            queues: self.sockets.iter().map(|(q, _, _)| *q).collect(),
            native: self.program.native,
            zero_copy: self.sockets.iter().all(|(_, x, _)| x.zero_copy()),
        }
    }

    /// Starts a worker thread per queue; `make_handler(i)` builds the `i`th
    /// worker's handler.
    pub fn spawn<F, H>(
        self,
        mut make_handler: F,
        shutdown: &Shutdown,
    ) -> Result<XdpWorkers, NetError>
    where
        F: FnMut(usize) -> H,
        H: QueryHandler + Send + 'static,
    {
        let info = self.info();
        let mut workers = XdpWorkers {
            threads: Vec::with_capacity(self.sockets.len()),
            counters: Vec::with_capacity(self.sockets.len()),
            shutdown: shutdown.clone(),
            _program: self.program,
            info,
        };
        for (i, (queue, xsk, spare)) in self.sockets.into_iter().enumerate() {
            let wake = Arc::new(crate::sys::eventfd().map_err(NetError::Spawn)?);
            let (tx, rx) = mpsc::sync_channel(DEFERRED_QUEUE);
            let counters = Arc::new(XdpCounters::default());
            let worker = Worker {
                xsk,
                handler: make_handler(i),
                mtu: self.mtu,
                shutdown: shutdown.clone(),
                counters: Arc::clone(&counters),
                deferred_rx: rx,
                replier: Replier {
                    tx,
                    wake: Arc::clone(&wake),
                    counters: Arc::clone(&counters),
                },
                wake,
                spare,
            };
            let thread = std::thread::Builder::new()
                .name(format!("xdp-{queue}"))
                .spawn(move || worker.run())
                .map_err(NetError::Spawn)?;
            workers.threads.push(thread);
            workers.counters.push(counters);
        }
        Ok(workers)
    }
}

/// Per-worker counts.
#[derive(Debug, Default)]
struct XdpCounters {
    received: AtomicU64,
    responded: AtomicU64,
    dropped: AtomicU64,
    truncated: AtomicU64,
    unreadable: AtomicU64,
    send_errors: AtomicU64,
    kernel_rx_dropped: AtomicU64,
    kernel_rx_ring_full: AtomicU64,
    kernel_fill_empty: AtomicU64,
    kernel_invalid: AtomicU64,
}

/// Totals over a path's workers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct XdpStats {
    pub received: u64,
    pub responded: u64,
    /// Queries the handler chose not to answer.
    pub dropped: u64,
    /// Replies cut to fit the MTU.
    pub truncated: u64,
    /// Frames that were not a readable UDP datagram (the program passes
    /// those to the kernel, so this stays zero unless something is wrong).
    pub unreadable: u64,
    /// Replies that found the TX ring full, or no frame to go in.
    pub send_errors: u64,
    /// The kernel's counts: frames dropped before the worker saw them.
    pub kernel: XskStats,
}

/// The running workers of one interface; the program stays attached while
/// this lives.
#[derive(Debug)]
pub struct XdpWorkers {
    threads: Vec<JoinHandle<()>>,
    counters: Vec<Arc<XdpCounters>>,
    shutdown: Shutdown,
    info: XdpInfo,
    /// Last: detached after the workers stop.
    _program: program::Program,
}

impl XdpWorkers {
    pub fn info(&self) -> &XdpInfo {
        &self.info
    }

    pub fn stats(&self) -> XdpStats {
        let mut s = XdpStats::default();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for c in &self.counters {
            s.received = s.received.wrapping_add(get(&c.received));
            s.responded = s.responded.wrapping_add(get(&c.responded));
            s.dropped = s.dropped.wrapping_add(get(&c.dropped));
            s.truncated = s.truncated.wrapping_add(get(&c.truncated));
            s.unreadable = s.unreadable.wrapping_add(get(&c.unreadable));
            s.send_errors = s.send_errors.wrapping_add(get(&c.send_errors));
            let k = &mut s.kernel;
            k.rx_dropped = k.rx_dropped.wrapping_add(get(&c.kernel_rx_dropped));
            k.rx_ring_full = k.rx_ring_full.wrapping_add(get(&c.kernel_rx_ring_full));
            k.rx_fill_ring_empty = k.rx_fill_ring_empty.wrapping_add(get(&c.kernel_fill_empty));
            k.rx_invalid = k.rx_invalid.wrapping_add(get(&c.kernel_invalid));
        }
        s
    }

    /// Stops the workers, waits for them, detaches the program and returns
    /// the final totals.
    pub fn join(mut self) -> XdpStats {
        self.shutdown.trigger();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.stats()
    }
}

/// Where a deferred reply goes: to the worker that received the query,
/// which owns the TX ring.
#[derive(Debug, Clone)]
pub(crate) struct Replier {
    tx: mpsc::SyncSender<(Flow, Vec<u8>)>,
    wake: Arc<OwnedFd>,
    counters: Arc<XdpCounters>,
}

impl Replier {
    /// Queues `msg` for `flow`; false when the worker is gone or its queue
    /// full (a lost datagram, for the client to retry).
    pub(crate) fn send(&self, flow: Flow, msg: Vec<u8>) -> bool {
        match self.tx.try_send((flow, msg)) {
            Ok(()) => {
                crate::sys::eventfd_signal(self.wake.as_raw_fd());
                true
            }
            Err(_) => {
                self.counters.send_errors.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}

struct Worker<H> {
    xsk: Xsk,
    handler: H,
    mtu: usize,
    shutdown: Shutdown,
    counters: Arc<XdpCounters>,
    deferred_rx: mpsc::Receiver<(Flow, Vec<u8>)>,
    replier: Replier,
    wake: Arc<OwnedFd>,
    /// Frames in hand for deferred replies.
    spare: Vec<u64>,
}

impl<H: QueryHandler> Worker<H> {
    fn run(mut self) {
        let mut received: Vec<Desc> = Vec::with_capacity(BATCH);
        // Each frame's datagram, read once a round for the batch hook and
        // the answers both.
        let mut parsed: Vec<Option<Datagram>> = Vec::with_capacity(BATCH);
        let mut out = Vec::with_capacity(usize::try_from(FRAME_SIZE).unwrap_or(4096));
        let mut rounds: u32 = 0;
        while !self.shutdown.is_triggered() {
            self.reclaim();
            self.send_deferred();
            received.clear();
            while received.len() < BATCH {
                match self.xsk.receive() {
                    Some(d) => received.push(d),
                    None => break,
                }
            }
            if received.is_empty() {
                self.xsk.flush_sends();
                self.publish_kernel_stats();
                self.wait();
                continue;
            }
            self.xsk.release_received();
            self.answer(&received, &mut parsed, &mut out);
            rounds = rounds.wrapping_add(1);
            if rounds % 4096 == 0 {
                self.publish_kernel_stats();
            }
        }
        self.publish_kernel_stats();
    }

    /// Sleeps until a frame or a deferred reply comes, or the idle wait ends.
    fn wait(&mut self) {
        let mut fds = [
            libc_pollfd(self.xsk.fd()),
            libc_pollfd(self.wake.as_raw_fd()),
        ];
        crate::sys::poll_for(&mut fds, IDLE_WAIT_MS);
        crate::sys::eventfd_clear(self.wake.as_raw_fd());
    }

    fn answer(&mut self, received: &[Desc], parsed: &mut Vec<Option<Datagram>>, out: &mut Vec<u8>) {
        let mut answered = 0u64;
        let mut deferred = 0u64;
        touch_frames(&self.xsk, received);
        parsed.clear();
        parsed.extend(
            received
                .iter()
                .map(|&d| self.xsk.frame(d).and_then(|f| frame::parse(f).ok())),
        );
        self.handler.start_of_batch(&Frames {
            xsk: &self.xsk,
            descs: received,
            parsed,
        });
        for (&desc, datagram) in received.iter().zip(parsed.iter()) {
            let query = datagram
                .as_ref()
                .and_then(|d| self.xsk.frame(desc)?.get(d.payload.clone()));
            let (Some(datagram), Some(query)) = (datagram, query) else {
                self.counters.unreadable.fetch_add(1, Ordering::Relaxed);
                // A descriptor outside the UMEM is no frame to give back.
                if self.xsk.frame(desc).is_some() {
                    self.recycle(desc.addr);
                }
                continue;
            };
            let flow = datagram.flow;
            out.clear();
            let handler = &mut self.handler;
            let respond = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.handle(query, flow.peer, flow.local, out)
            }));
            match respond {
                Ok(true) => {
                    if self.reply_in_place(desc.addr, &flow, out) {
                        answered = answered.wrapping_add(1);
                    }
                }
                Ok(false) => {
                    let job = self
                        .handler
                        .take_deferred()
                        .or_else(|| self.handler.take_deferred_reply());
                    if let Some(job) = job {
                        deferred = deferred.wrapping_add(1);
                        job(Responder::xdp(self.replier.clone(), flow));
                    }
                    self.recycle(desc.addr);
                }
                Err(_) => {
                    tracing::error!(peer = %flow.peer, "answering a query panicked; query dropped");
                    self.recycle(desc.addr);
                }
            }
        }
        // As on the socket path: what the handler batched is handed on
        // before the client holds its answer.
        self.handler.end_of_batch();
        self.xsk.flush_sends();
        self.xsk.fill.submit();
        let n = u64::try_from(received.len()).unwrap_or(0);
        let c = &self.counters;
        c.received.fetch_add(n, Ordering::Relaxed);
        c.responded.fetch_add(answered, Ordering::Relaxed);
        c.dropped.fetch_add(
            n.saturating_sub(answered).saturating_sub(deferred),
            Ordering::Relaxed,
        );
    }

    /// Writes the reply over the query's frame and queues it; the frame
    /// comes back on the completion ring once sent.
    fn reply_in_place(&mut self, addr: u64, flow: &Flow, out: &mut Vec<u8>) -> bool {
        if out.len() > frame::max_payload(flow, self.mtu) {
            frame::truncate_response(out);
            self.counters.truncated.fetch_add(1, Ordering::Relaxed);
        }
        let written = self
            .xsk
            .chunk_mut(addr)
            .and_then(|chunk| frame::write_reply(flow, out, chunk));
        let sent = written
            .and_then(|len| u32::try_from(len).ok())
            .is_some_and(|len| self.xsk.send(Desc { addr, len }));
        if !sent {
            self.counters.send_errors.fetch_add(1, Ordering::Relaxed);
            self.recycle(addr);
        }
        sent
    }

    /// Gives a frame back to the kernel to receive into.
    fn recycle(&mut self, addr: u64) {
        // The fill ring holds every frame, so this never finds it full.
        let _ = self.xsk.fill.push(chunk_of(addr));
    }

    /// Frames whose replies went out: spare ones first, then the fill ring.
    fn reclaim(&mut self) {
        let mut any = false;
        while let Some(addr) = self.xsk.completion.pop() {
            any = true;
            if self.spare.len() < SPARE_FRAMES as usize {
                self.spare.push(chunk_of(addr));
            } else {
                let _ = self.xsk.fill.push(chunk_of(addr));
            }
        }
        if any {
            self.xsk.completion.release();
            self.xsk.fill.submit();
        }
    }

    /// Replies that deferred jobs finished, each in a spare frame.
    fn send_deferred(&mut self) {
        let mut sent = 0u64;
        while let Ok((flow, mut msg)) = self.deferred_rx.try_recv() {
            let Some(addr) = self.spare.pop().or_else(|| self.borrow_received_frame()) else {
                self.counters.send_errors.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            if self.reply_in_place(addr, &flow, &mut msg) {
                sent = sent.wrapping_add(1);
            }
        }
        if sent > 0 {
            self.xsk.flush_sends();
            self.counters.responded.fetch_add(sent, Ordering::Relaxed);
        }
    }

    /// With no spare frame (all replies still in flight), a received frame
    /// waiting in the RX ring is dropped to carry the reply: one lost query
    /// rather than a lost acknowledgement of work done.
    fn borrow_received_frame(&mut self) -> Option<u64> {
        let desc = self.xsk.receive()?;
        self.xsk.release_received();
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        Some(chunk_of(desc.addr))
    }

    fn publish_kernel_stats(&self) {
        let k = self.xsk.stats();
        let c = &self.counters;
        c.kernel_rx_dropped.store(k.rx_dropped, Ordering::Relaxed);
        c.kernel_rx_ring_full
            .store(k.rx_ring_full, Ordering::Relaxed);
        c.kernel_fill_empty
            .store(k.rx_fill_ring_empty, Ordering::Relaxed);
        c.kernel_invalid
            .store(k.rx_invalid.wrapping_add(k.tx_invalid), Ordering::Relaxed);
    }
}

/// Reads the first cache lines of every frame of a round at once. The
/// kernel wrote them (in copy mode, on whichever core ran the driver's
/// poll), so each is a cache miss here; loads that depend on nothing are
/// overlapped by the core, where the parser's, one frame after another,
/// were not.
fn touch_frames(xsk: &Xsk, received: &[Desc]) {
    let mut sum = 0u8;
    for &desc in received {
        if let Some(frame) = xsk.frame(desc) {
            sum ^= frame.first().copied().unwrap_or(0);
            sum ^= frame.get(64).copied().unwrap_or(0);
        }
    }
    std::hint::black_box(sum);
}

fn libc_pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}
