//! The sink: per-worker bounded queues filled by [`Tap`]s on the query path,
//! emptied by one writer thread that does all the I/O.
//!
//! The split follows the dnstap design: the server duplicates each message
//! into a lock-free circular queue and goes on; a separate thread ships the
//! queued messages with buffered writes; when the queue is full the message is
//! dropped and counted, so logging never slows the server down.
//!
//! Buffers circulate: a `Tap` takes one from its queue's pool, encodes into it
//! and pushes it on the queue; the writer writes it and hands it back to the
//! pool. A new buffer is allocated only when the pool is empty, so in steady
//! state logging allocates nothing, and the number of buffers per queue is
//! bounded by twice the queue capacity plus one per producer.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::mem;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use prost::Message as _;

use crate::frame::{write_control, write_data, ControlType, FrameReader};
use crate::schema::{self, Dnstap};
use crate::{
    Destination, DnstapError, KindSet, MessageContext, MessageKind, SinkConfig, SinkStats,
    Timestamp, CONTENT_TYPE,
};

/// The writer's output buffer: one system call per 64 KiB of frames at most.
const WRITE_BUFFER: usize = 64 * 1024;
/// How long the idle writer sleeps before looking at the queues again.
/// Producers never wake it (that would cost them a futex call), so this bounds
/// the delay between a message and its write.
const IDLE_PARK: Duration = Duration::from_millis(2);
/// Frames taken from one queue before moving to the next, so that a busy
/// worker cannot starve the others.
const BATCH: usize = 64;
/// Reconnection back-off, doubled after each failure.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A receiver that takes longer than this to accept a write, or to answer the
/// handshake or STOP, is treated as gone: the writer must stay responsive to
/// stop and to its queues.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the idle writer forgets queues whose taps are all gone.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);
/// Buffers that grew beyond this (a huge message) are freed instead of pooled.
const MAX_POOLED_BUFFER: usize = 16 * 1024;
/// The size of a fresh buffer: most dnstap messages of an authoritative
/// server fit.
const FRESH_BUFFER: usize = 512;

/// A running dnstap sink: the writer thread and the queues it empties.
///
/// Dropping the sink stops it (see [`Sink::stop`]).
#[derive(Debug)]
pub struct Sink {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    kinds: KindSet,
    identity: Option<Vec<u8>>,
    version: Option<Vec<u8>>,
    queue_capacity: usize,
    queues: Mutex<Vec<Arc<TapQueue>>>,
    /// Bumped whenever `queues` changes, so the writer re-reads it only then.
    generation: AtomicU64,
    sent: AtomicU64,
    /// Drops counted by the writer (destination down), and by queues that
    /// have been forgotten.
    dropped: AtomicU64,
    reconnects: AtomicU64,
    stop: AtomicBool,
    /// Set once the writer has exited: whatever is still queued then is lost.
    finished: AtomicBool,
    rotate: AtomicBool,
}

/// One bounded queue and its buffer pool, shared by a [`Tap`] and its siblings
/// (producers) and the writer (consumer).
#[derive(Debug)]
struct TapQueue {
    queue: ArrayQueue<Vec<u8>>,
    pool: ArrayQueue<Vec<u8>>,
    dropped: AtomicU64,
    allocated: AtomicU64,
}

/// After a failed file open, how long until the next try.
const RETRY_OPEN: Duration = Duration::from_secs(1);

fn after(delay: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(delay).unwrap_or(now)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave the data inconsistent
    // (a list of queues, a join handle), so poisoning is ignored.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sink {
    /// Starts the writer thread ("bulwark-dnstap"). A file destination is
    /// created (truncating any previous file) and its START frame written
    /// before this returns, so a bad path is reported here. Socket
    /// destinations are connected by the writer, in the background, and
    /// reconnected with back-off (0.1 s doubling to 5 s) whenever lost.
    pub fn start(config: SinkConfig) -> Result<Sink, DnstapError> {
        if config.queue_capacity == 0 {
            return Err(DnstapError::Config("queue capacity must be at least 1"));
        }
        let output = match &config.destination {
            Destination::File { path, max_bytes } => {
                if max_bytes == &Some(0) {
                    return Err(DnstapError::Config("max_bytes must be at least 1"));
                }
                Output::File(FileOutput::create(path.clone(), *max_bytes)?)
            }
            Destination::Unix(path) => {
                Output::Socket(SocketOutput::new(Target::Unix(path.clone())))
            }
            Destination::Tcp(addr) => Output::Socket(SocketOutput::new(Target::Tcp(*addr))),
        };
        let shared = Arc::new(Shared {
            kinds: config.kinds,
            identity: config.identity,
            version: config.version,
            queue_capacity: config.queue_capacity,
            queues: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            rotate: AtomicBool::new(false),
        });
        let writer_shared = Arc::clone(&shared);
        let writer = thread::Builder::new()
            .name("bulwark-dnstap".to_owned())
            .spawn(move || Writer::new(writer_shared, output).run())?;
        Ok(Sink {
            shared,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// A producer with a new queue of its own (one per worker thread).
    pub fn tap(&self) -> Tap {
        let queue = Arc::new(TapQueue {
            queue: ArrayQueue::new(self.shared.queue_capacity),
            pool: ArrayQueue::new(self.shared.queue_capacity),
            dropped: AtomicU64::new(0),
            allocated: AtomicU64::new(0),
        });
        lock(&self.shared.queues).push(Arc::clone(&queue));
        self.shared.generation.fetch_add(1, Ordering::Release);
        Tap::new(queue, &self.shared)
    }

    /// The counters so far.
    pub fn stats(&self) -> SinkStats {
        // Under the lock, so that a queue being forgotten (its drops moving
        // to the shared counter) is counted exactly once.
        let dropped = {
            let queues = lock(&self.shared.queues);
            let finished = self.shared.finished.load(Ordering::Acquire);
            queues
                .iter()
                .fold(self.shared.dropped.load(Ordering::Relaxed), |sum, queue| {
                    // After stop, what is left in a queue will never be written.
                    let stranded = if finished { queue.queue.len() } else { 0 };
                    sum.saturating_add(queue.dropped.load(Ordering::Relaxed))
                        .saturating_add(u64::try_from(stranded).unwrap_or(u64::MAX))
                })
        };
        SinkStats {
            sent: self.shared.sent.load(Ordering::Relaxed),
            dropped,
            reconnects: self.shared.reconnects.load(Ordering::Relaxed),
        }
    }

    /// Files: the writer ends the current file with STOP, renames it to
    /// `PATH.1` (replacing an older one; if `PATH` was already moved away, by
    /// logrotate say, there is nothing to rename) and starts a new `PATH`.
    /// Sockets: nothing. Returns at once; the writer rotates within
    /// milliseconds.
    pub fn rotate(&self) {
        self.shared.rotate.store(true, Ordering::Release);
        if let Some(writer) = lock(&self.writer).as_ref() {
            writer.thread().unpark();
        }
    }

    /// Drains the queues, ends the stream (STOP; on a socket, waits up to 2 s
    /// for the receiver's FINISH) and joins the writer. Idempotent. Messages
    /// logged afterwards are never written and count as dropped.
    pub fn stop(&self) {
        let Some(writer) = lock(&self.writer).take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::Release);
        writer.thread().unpark();
        // The writer only panics on a bug; there is nothing left to clean up.
        let _ = writer.join();
        self.shared.finished.store(true, Ordering::Release);
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Spare storage for the optional byte fields of the reusable message, so
/// that unsetting a field keeps its capacity for the next message.
#[derive(Debug, Default)]
struct Spares {
    query_message: Vec<u8>,
    response_message: Vec<u8>,
    query_zone: Vec<u8>,
}

/// A producer on one queue. Logging never blocks, never makes a system call,
/// and in steady state never allocates. `Send`, not `Sync`: one per thread or
/// per connection task; see [`Tap::sibling`].
#[derive(Debug)]
pub struct Tap {
    queue: Arc<TapQueue>,
    kinds: KindSet,
    /// The message, reused: its byte fields are cleared and refilled, never
    /// dropped.
    record: Dnstap,
    spares: Spares,
    /// A buffer kept back after a full queue refused it.
    buffer: Vec<u8>,
}

impl Tap {
    fn new(queue: Arc<TapQueue>, shared: &Shared) -> Tap {
        Tap::with_template(
            queue,
            shared.kinds,
            shared.identity.clone(),
            shared.version.clone(),
        )
    }

    fn with_template(
        queue: Arc<TapQueue>,
        kinds: KindSet,
        identity: Option<Vec<u8>>,
        version: Option<Vec<u8>>,
    ) -> Tap {
        let record = Dnstap {
            identity,
            version,
            extra: None,
            r#type: schema::dnstap::Type::Message as i32,
            message: Some(schema::Message {
                query_address: Some(Vec::with_capacity(16)),
                response_address: Some(Vec::with_capacity(16)),
                ..schema::Message::default()
            }),
        };
        Tap {
            queue,
            kinds,
            record,
            spares: Spares::default(),
            buffer: Vec::new(),
        }
    }

    /// Another producer on the same queue, e.g. for the connection tasks of
    /// one worker.
    pub fn sibling(&self) -> Tap {
        Tap::with_template(
            Arc::clone(&self.queue),
            self.kinds,
            self.record.identity.clone(),
            self.record.version.clone(),
        )
    }

    /// Whether messages of this kind are logged; check it before building a
    /// [`MessageContext`] (e.g. before reading the clock).
    #[inline]
    pub fn wants(&self, kind: MessageKind) -> bool {
        self.kinds.contains(kind)
    }

    /// How many buffers this tap's queue has allocated so far: it stops
    /// growing once the pool holds enough (a test hook for "steady state
    /// allocates nothing").
    pub fn buffers_allocated(&self) -> u64 {
        self.queue.allocated.load(Ordering::Relaxed)
    }

    /// Copies one wire-format DNS message with its context to the sink: a
    /// query goes in `query_message`, a response in `response_message`.
    /// If the queue is full the message is dropped and counted.
    pub fn log(&mut self, kind: MessageKind, ctx: &MessageContext<'_>, wire: &[u8]) {
        if !self.kinds.contains(kind) {
            return;
        }
        self.fill(kind, ctx, wire);
        let mut buffer = mem::take(&mut self.buffer);
        if buffer.capacity() == 0 {
            buffer = match self.queue.pool.pop() {
                Some(pooled) => pooled,
                None => {
                    self.queue.allocated.fetch_add(1, Ordering::Relaxed);
                    Vec::with_capacity(self.record.encoded_len().max(FRESH_BUFFER))
                }
            };
        }
        buffer.clear();
        if self.record.encode(&mut buffer).is_err() {
            // Only on capacity overflow, which a Vec cannot report; count it
            // as a drop all the same.
            self.queue.dropped.fetch_add(1, Ordering::Relaxed);
            self.buffer = buffer;
            return;
        }
        if let Err(refused) = self.queue.queue.push(buffer) {
            self.queue.dropped.fetch_add(1, Ordering::Relaxed);
            self.buffer = refused;
        }
    }

    /// Fills the reusable message in place.
    fn fill(&mut self, kind: MessageKind, ctx: &MessageContext<'_>, wire: &[u8]) {
        let Some(message) = self.record.message.as_mut() else {
            return;
        };
        message.r#type = i32::from(kind.code());
        message.socket_protocol = Some(ctx.protocol.code());
        let (family, client, server) = family_and_addresses(ctx.client.ip(), ctx.server.ip());
        message.socket_family = Some(family as i32);
        set_address(&mut message.query_address, client);
        set_address(&mut message.response_address, server);
        message.query_port = Some(u32::from(ctx.client.port()));
        message.response_port = Some(u32::from(ctx.server.port()));
        set_time(
            &mut message.query_time_sec,
            &mut message.query_time_nsec,
            ctx.query_time,
        );
        let response_time = if kind.query() {
            None
        } else {
            ctx.response_time
        };
        set_time(
            &mut message.response_time_sec,
            &mut message.response_time_nsec,
            response_time,
        );
        let (query_message, response_message) = if kind.query() {
            (Some(wire), None)
        } else {
            (None, Some(wire))
        };
        set_bytes(
            &mut message.query_message,
            &mut self.spares.query_message,
            query_message,
        );
        set_bytes(
            &mut message.response_message,
            &mut self.spares.response_message,
            response_message,
        );
        set_bytes(
            &mut message.query_zone,
            &mut self.spares.query_zone,
            ctx.query_zone,
        );
    }
}

/// The address family and the two addresses as dnstap wants them: IPv4 as 4
/// octets (INET), IPv6 as 16 (INET6). IPv4-mapped IPv6 addresses (a dual-stack
/// socket's view of an IPv4 peer) are reported as the IPv4 they stand for;
/// if the two sides still differ in family, both are given as IPv6.
fn family_and_addresses(client: IpAddr, server: IpAddr) -> (schema::SocketFamily, IpAddr, IpAddr) {
    match (client.to_canonical(), server.to_canonical()) {
        (client @ IpAddr::V4(_), server @ IpAddr::V4(_)) => {
            (schema::SocketFamily::Inet, client, server)
        }
        (client, server) => (
            schema::SocketFamily::Inet6,
            IpAddr::V6(as_v6(client)),
            IpAddr::V6(as_v6(server)),
        ),
    }
}

fn as_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn set_address(field: &mut Option<Vec<u8>>, ip: IpAddr) {
    let bytes = field.get_or_insert_with(Vec::new);
    bytes.clear();
    match ip {
        IpAddr::V4(v4) => bytes.extend_from_slice(&v4.octets()),
        IpAddr::V6(v6) => bytes.extend_from_slice(&v6.octets()),
    }
}

fn set_time(secs: &mut Option<u64>, nanos: &mut Option<u32>, time: Option<Timestamp>) {
    *secs = time.map(|t| t.secs);
    *nanos = time.map(|t| t.nanos);
}

/// Sets or unsets an optional bytes field without giving up its capacity:
/// an unset field's Vec waits in `spare` until the field is set again.
fn set_bytes(field: &mut Option<Vec<u8>>, spare: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(value) => {
            let bytes = field.get_or_insert_with(|| mem::take(spare));
            bytes.clear();
            bytes.extend_from_slice(value);
        }
        None => {
            if let Some(old) = field.take() {
                *spare = old;
            }
        }
    }
}

/// The writer thread's state.
struct Writer {
    shared: Arc<Shared>,
    output: Output,
    queues: Vec<Arc<TapQueue>>,
    generation: u64,
    next_queue: usize,
    last_sweep: Instant,
}

impl Writer {
    fn new(shared: Arc<Shared>, output: Output) -> Writer {
        Writer {
            shared,
            output,
            queues: Vec::new(),
            generation: u64::MAX,
            next_queue: 0,
            last_sweep: Instant::now(),
        }
    }

    fn run(mut self) {
        loop {
            let generation = self.shared.generation.load(Ordering::Acquire);
            if generation != self.generation {
                self.queues = lock(&self.shared.queues).clone();
                self.generation = generation;
            }
            if self.shared.stop.load(Ordering::Acquire) {
                self.drain_for_stop();
                break;
            }
            if self.shared.rotate.swap(false, Ordering::AcqRel) {
                self.output.rotate();
            }
            self.output.maintain(&self.shared);
            if self.drain_round() == 0 {
                self.output.flush();
                self.sweep();
                thread::park_timeout(IDLE_PARK);
            }
        }
        self.output.finish();
    }

    /// Writes what the queues hold when stop is seen, and no more: taps that
    /// keep logging (a server still answering) must not keep the writer, and
    /// so `Sink::stop`, from finishing.
    fn drain_for_stop(&mut self) {
        for queue in &self.queues {
            for _ in 0..queue.queue.len() {
                let Some(buffer) = queue.queue.pop() else {
                    break;
                };
                self.output.write(&buffer, &self.shared);
            }
        }
        self.output.flush();
    }

    /// One round-robin pass over the queues, at most BATCH frames from each.
    fn drain_round(&mut self) -> usize {
        let count = self.queues.len();
        if count == 0 {
            return 0;
        }
        let mut moved = 0usize;
        for step in 0..count {
            let index = self
                .next_queue
                .wrapping_add(step)
                .checked_rem(count)
                .unwrap_or(0);
            let Some(queue) = self.queues.get(index) else {
                continue;
            };
            for _ in 0..BATCH {
                let Some(mut buffer) = queue.queue.pop() else {
                    break;
                };
                self.output.write(&buffer, &self.shared);
                moved = moved.saturating_add(1);
                if buffer.capacity() <= MAX_POOLED_BUFFER {
                    buffer.clear();
                    // A full pool means enough buffers are in circulation.
                    let _ = queue.pool.push(buffer);
                }
            }
        }
        self.next_queue = self
            .next_queue
            .wrapping_add(1)
            .checked_rem(count)
            .unwrap_or(0);
        moved
    }

    /// Forgets queues that no tap uses any more and that are empty, keeping
    /// their drop counts.
    fn sweep(&mut self) {
        if self.last_sweep.elapsed() < SWEEP_INTERVAL {
            return;
        }
        self.last_sweep = Instant::now();
        // Under the lock no queue can be added (`Sink::tap` holds it), and a
        // queue with no tap left cannot gain one (`Tap::sibling` needs a tap).
        let mut list = lock(&self.shared.queues);
        // Refresh the snapshot first so that every listed queue is held
        // exactly twice (list and snapshot) plus once per tap.
        self.queues.clone_from(&list);
        let before = list.len();
        list.retain(|queue| {
            let unused = Arc::strong_count(queue) <= 2 && queue.queue.is_empty();
            if unused {
                self.shared
                    .dropped
                    .fetch_add(queue.dropped.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            !unused
        });
        if list.len() == before {
            return;
        }
        self.queues.clone_from(&list);
        self.shared.generation.fetch_add(1, Ordering::Release);
        self.generation = self.shared.generation.load(Ordering::Acquire);
    }
}

enum Output {
    File(FileOutput),
    Socket(SocketOutput),
}

impl Output {
    fn write(&mut self, payload: &[u8], shared: &Shared) {
        match self {
            Output::File(file) => file.write(payload, shared),
            Output::Socket(socket) => socket.write(payload, shared),
        }
    }

    fn flush(&mut self) {
        match self {
            Output::File(file) => file.flush(),
            Output::Socket(socket) => socket.flush(),
        }
    }

    fn maintain(&mut self, shared: &Shared) {
        if let Output::Socket(socket) = self {
            socket.maintain(shared);
        }
    }

    fn rotate(&mut self) {
        if let Output::File(file) = self {
            file.rotate();
        }
    }

    fn finish(&mut self) {
        match self {
            Output::File(file) => file.close(),
            Output::Socket(socket) => socket.finish(),
        }
    }
}

/// Unidirectional Frame Streams to a file.
struct FileOutput {
    path: PathBuf,
    max_bytes: Option<u64>,
    file: Option<BufWriter<File>>,
    written: u64,
    /// After a failed open, when to try again.
    retry_at: Option<Instant>,
}

impl FileOutput {
    fn create(path: PathBuf, max_bytes: Option<u64>) -> io::Result<FileOutput> {
        let file = open_stream_file(&path)?;
        Ok(FileOutput {
            path,
            max_bytes,
            file: Some(file),
            written: 0,
            retry_at: None,
        })
    }

    fn write(&mut self, payload: &[u8], shared: &Shared) {
        if self.file.is_none() {
            self.reopen_if_due();
        }
        let Some(file) = self.file.as_mut() else {
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match write_data(file, payload) {
            Ok(()) => {
                shared.sent.fetch_add(1, Ordering::Relaxed);
                let frame_len = u64::try_from(payload.len())
                    .unwrap_or(u64::MAX)
                    .saturating_add(4);
                self.written = self.written.saturating_add(frame_len);
                if self.max_bytes.is_some_and(|max| self.written >= max) {
                    self.rotate();
                }
            }
            Err(_) => {
                // A disk error: the frame may be half written, so the file
                // can no longer be read past it. Start over at the next try.
                shared.dropped.fetch_add(1, Ordering::Relaxed);
                self.file = None;
                self.retry_at = Some(after(RETRY_OPEN));
            }
        }
    }

    fn flush(&mut self) {
        if let Some(file) = self.file.as_mut() {
            if file.flush().is_err() {
                self.file = None;
                self.retry_at = Some(after(RETRY_OPEN));
            }
        }
    }

    fn close(&mut self) {
        if let Some(mut file) = self.file.take() {
            let _ = write_control(&mut file, ControlType::Stop, None).and_then(|()| file.flush());
        }
    }

    fn rotate(&mut self) {
        self.close();
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        // NotFound: the file was moved away already; start a new one anyway.
        let _ = fs::rename(&self.path, &old);
        self.open();
    }

    fn open(&mut self) {
        self.written = 0;
        match open_stream_file(&self.path) {
            Ok(file) => {
                self.file = Some(file);
                self.retry_at = None;
            }
            Err(_) => self.retry_at = Some(after(RETRY_OPEN)),
        }
    }

    fn reopen_if_due(&mut self) {
        if self.retry_at.map_or(true, |at| Instant::now() >= at) {
            self.open();
        }
    }
}

/// Creates (truncating) a dnstap file and writes its START frame.
fn open_stream_file(path: &Path) -> io::Result<BufWriter<File>> {
    let mut file = BufWriter::with_capacity(WRITE_BUFFER, File::create(path)?);
    write_control(&mut file, ControlType::Start, Some(CONTENT_TYPE))?;
    // Readers of a live file see a valid (empty) stream at once.
    file.flush()?;
    Ok(file)
}

enum Target {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn connect(target: &Target) -> io::Result<Stream> {
        let stream = match target {
            Target::Unix(path) => {
                let stream = UnixStream::connect(path)?;
                stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
                stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
                Stream::Unix(stream)
            }
            Target::Tcp(addr) => {
                let stream = TcpStream::connect_timeout(addr, SOCKET_TIMEOUT)?;
                stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
                stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
                // Frames are batched in the BufWriter already.
                stream.set_nodelay(true)?;
                Stream::Tcp(stream)
            }
        };
        Ok(stream)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// Bidirectional Frame Streams to a socket.
struct SocketOutput {
    target: Target,
    connection: Option<BufWriter<Stream>>,
    backoff: Duration,
    next_attempt: Instant,
    /// Whether a handshake has ever completed, so later ones are reconnects.
    was_connected: bool,
}

impl SocketOutput {
    fn new(target: Target) -> SocketOutput {
        SocketOutput {
            target,
            connection: None,
            backoff: BACKOFF_MIN,
            next_attempt: Instant::now(),
            was_connected: false,
        }
    }

    /// Connects when disconnected and the back-off has passed.
    fn maintain(&mut self, shared: &Shared) {
        if self.connection.is_some() || Instant::now() < self.next_attempt {
            return;
        }
        match self.connect() {
            Ok(connection) => {
                self.connection = Some(connection);
                self.backoff = BACKOFF_MIN;
                if self.was_connected {
                    shared.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                self.was_connected = true;
            }
            Err(_) => {
                self.next_attempt = after(self.backoff);
                self.backoff = self.backoff.saturating_mul(2).min(BACKOFF_MAX);
            }
        }
    }

    /// Connects and runs the sender's side of the handshake: READY with our
    /// content type, the receiver's ACCEPT naming it, then START.
    fn connect(&self) -> Result<BufWriter<Stream>, DnstapError> {
        let mut stream = Stream::connect(&self.target)?;
        write_control(&mut stream, ControlType::Ready, Some(CONTENT_TYPE))?;
        stream.flush()?;
        // Unbuffered: read exactly the ACCEPT frame and nothing more.
        let accept = FrameReader::new(&mut stream).expect_control(ControlType::Accept)?;
        if !accept.allows(CONTENT_TYPE) {
            return Err(DnstapError::ContentType(accept.describe_content_types()));
        }
        let mut connection = BufWriter::with_capacity(WRITE_BUFFER, stream);
        write_control(&mut connection, ControlType::Start, Some(CONTENT_TYPE))?;
        connection.flush()?;
        Ok(connection)
    }

    fn write(&mut self, payload: &[u8], shared: &Shared) {
        let Some(connection) = self.connection.as_mut() else {
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match write_data(connection, payload) {
            Ok(()) => {
                shared.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                shared.dropped.fetch_add(1, Ordering::Relaxed);
                self.lost();
            }
        }
    }

    fn flush(&mut self) {
        if let Some(connection) = self.connection.as_mut() {
            if connection.flush().is_err() {
                self.lost();
            }
        }
    }

    /// The receiver is gone (or stalled past the write timeout). Frames
    /// buffered but not written are lost with the connection; they were
    /// counted as sent, as a file's frames are before the disk has them.
    fn lost(&mut self) {
        if let Some(connection) = self.connection.take() {
            // Do not flush the rest of the buffer on drop: discard it.
            let _ = connection.into_parts();
        }
        self.backoff = BACKOFF_MIN;
        self.next_attempt = after(self.backoff);
    }

    /// Ends the stream: STOP, then the receiver's FINISH (or the timeout).
    fn finish(&mut self) {
        let Some(mut connection) = self.connection.take() else {
            return;
        };
        if write_control(&mut connection, ControlType::Stop, None)
            .and_then(|()| connection.flush())
            .is_err()
        {
            let _ = connection.into_parts();
            return;
        }
        let (mut stream, _) = connection.into_parts();
        let _ = FrameReader::new(&mut stream).expect_control(ControlType::Finish);
    }
}
