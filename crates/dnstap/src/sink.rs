//! The sink: per-worker bounded queues filled by [`Tap`]s on the query path,
//! emptied by one writer thread that does all the I/O.
//!
//! The split follows the dnstap design: the server duplicates each message
//! into a lock-free circular queue and goes on; a separate thread ships the
//! queued messages with buffered writes; when the queue is full the message is
//! dropped and counted, so logging never slows the server down.
//!
//! A `Tap` encodes each message straight into a chunk of Frame Streams data
//! frames and queues the chunk when it is full or when the server has finished
//! a batch of queries, so the queue and the writer work per chunk, not per
//! message, and the writer copies chunks to the output without looking inside.
//! The queue's bound is in frames (`queue_capacity`), so a full queue drops
//! whole chunks and counts every frame in them.
//!
//! Buffers circulate: a `Tap` takes one from its queue's pool, encodes into it
//! and pushes it on the queue; the writer writes it and hands it back to the
//! pool. A new buffer is allocated only when the pool is empty, so in steady
//! state logging allocates nothing, and the number of buffers per queue is
//! bounded by twice its chunk slots plus one per producer.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::mem;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

use crate::encode::{append_exchange_frame, Exchange, Header};
use crate::frame::{write_control, ControlType, FrameReader};
use crate::{
    Destination, DnstapError, KindSet, MessageContext, MessageKind, SinkConfig, SinkStats,
    CONTENT_TYPE,
};

/// The writer's output buffer: one system call per 64 KiB of frames at most.
const WRITE_BUFFER: usize = 64 * 1024;
/// How long the idle writer sleeps before looking at the queues again.
/// Producers never wake it (that would cost them a futex call), so this bounds
/// the delay between a message and its write. Each wake costs a few thousand
/// instructions and a write; 10 ms keeps that under 1% of a quiet server's
/// work while a busy worker's queue (16384 messages by default) holds far
/// more than 10 ms of traffic.
const IDLE_PARK: Duration = Duration::from_millis(10);
/// Chunks taken from one queue before moving to the next, so that a busy
/// worker cannot starve the others.
const BATCH: usize = 8;
/// A tap's chunk is queued once it holds this many octets of frames (about
/// 60 typical authoritative messages), and its buffer starts this large.
const CHUNK_FULL: usize = 8 * 1024;
const CHUNK_CAPACITY: usize = 12 * 1024;
/// Queue slots for chunks: one per this many frames of the frame budget,
/// between MIN and MAX_CHUNK_SLOTS, so that a queue of one-frame chunks (a
/// light load with a stalled receiver) holds at most that many buffers.
const FRAMES_PER_CHUNK_SLOT: usize = 8;
const MIN_CHUNK_SLOTS: usize = 64;
const MAX_CHUNK_SLOTS: usize = 1024;
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
const MAX_POOLED_BUFFER: usize = 64 * 1024;

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
    header: Header,
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
    queue: ArrayQueue<Chunk>,
    pool: ArrayQueue<Vec<u8>>,
    /// Frames in the queued chunks, and how many there may be.
    pending: AtomicU64,
    frame_capacity: u64,
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
            header: Header::new(config.identity.as_deref(), config.version.as_deref()),
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
        let capacity = self.shared.queue_capacity;
        // Chunks hold one frame or many; their number is capped apart from
        // the frame budget so that many small chunks cannot hold much memory.
        let chunks = (capacity / FRAMES_PER_CHUNK_SLOT).clamp(MIN_CHUNK_SLOTS, MAX_CHUNK_SLOTS);
        let queue = Arc::new(TapQueue {
            queue: ArrayQueue::new(chunks),
            pool: ArrayQueue::new(chunks),
            pending: AtomicU64::new(0),
            frame_capacity: u64::try_from(capacity).unwrap_or(u64::MAX),
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
                    let stranded = if finished {
                        queue.pending.load(Ordering::Relaxed)
                    } else {
                        0
                    };
                    sum.saturating_add(queue.dropped.load(Ordering::Relaxed))
                        .saturating_add(stranded)
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

/// A chunk of complete data frames, as a tap hands it to the writer.
#[derive(Debug)]
struct Chunk {
    bytes: Vec<u8>,
    frames: u64,
}

/// A producer on one queue. Logging never blocks, never makes a system call,
/// and in steady state never allocates. `Send`, not `Sync`: one per thread or
/// per connection task; see [`Tap::sibling`].
///
/// Messages are encoded straight into a chunk of frames; the chunk goes on
/// the queue when it is full, on [`Tap::flush`] (the server calls it after
/// each batch of queries it answered) and when the tap is dropped.
#[derive(Debug)]
pub struct Tap {
    queue: Arc<TapQueue>,
    kinds: KindSet,
    header: Header,
    chunk: Vec<u8>,
    /// Frames in `chunk`.
    frames: u64,
}

impl Tap {
    fn new(queue: Arc<TapQueue>, shared: &Shared) -> Tap {
        Tap {
            queue,
            kinds: shared.kinds,
            header: shared.header.clone(),
            chunk: Vec::new(),
            frames: 0,
        }
    }

    /// Another producer on the same queue, e.g. for the connection tasks of
    /// one worker.
    pub fn sibling(&self) -> Tap {
        Tap {
            queue: Arc::clone(&self.queue),
            kinds: self.kinds,
            header: self.header.clone(),
            chunk: Vec::new(),
            frames: 0,
        }
    }

    /// Whether messages of this kind are logged; check it before building a
    /// [`MessageContext`] (e.g. before reading the clock).
    #[inline]
    pub fn wants(&self, kind: MessageKind) -> bool {
        self.kinds.contains(kind)
    }

    /// How many chunk buffers this tap's queue has allocated so far: it stops
    /// growing once the pool holds enough (a test hook for "steady state
    /// allocates nothing").
    pub fn buffers_allocated(&self) -> u64 {
        self.queue.allocated.load(Ordering::Relaxed)
    }

    /// Encodes one wire-format DNS message with its context into the current
    /// chunk: a query goes in `query_message`, a response in
    /// `response_message`. The chunk is queued once it is full; call
    /// [`Tap::flush`] when a batch of work is done.
    pub fn log(&mut self, kind: MessageKind, ctx: &MessageContext<'_>, wire: &[u8]) {
        if !self.kinds.contains(kind) {
            return;
        }
        self.append(kind, &Exchange::new(ctx), ctx, wire);
    }

    /// Logs a query and its response (when there is one) of the same
    /// exchange, as [`Tap::log`] would one after the other, encoding the
    /// fields they share once.
    pub fn log_exchange(
        &mut self,
        ctx: &MessageContext<'_>,
        query: (MessageKind, &[u8]),
        response: Option<(MessageKind, &[u8])>,
    ) {
        let log_query = self.kinds.contains(query.0);
        let response = response.filter(|(kind, _)| self.kinds.contains(*kind));
        if !log_query && response.is_none() {
            return;
        }
        let exchange = Exchange::new(ctx);
        if log_query {
            self.append(query.0, &exchange, ctx, query.1);
        }
        if let Some((kind, wire)) = response {
            self.append(kind, &exchange, ctx, wire);
        }
    }

    fn append(
        &mut self,
        kind: MessageKind,
        exchange: &Exchange,
        ctx: &MessageContext<'_>,
        wire: &[u8],
    ) {
        if self.chunk.capacity() == 0 {
            self.chunk = match self.queue.pool.pop() {
                Some(pooled) => pooled,
                None => {
                    self.queue.allocated.fetch_add(1, Ordering::Relaxed);
                    Vec::with_capacity(CHUNK_CAPACITY)
                }
            };
        }
        if append_exchange_frame(&mut self.chunk, &self.header, kind, exchange, ctx, wire) {
            self.frames = self.frames.saturating_add(1);
        } else {
            self.queue.dropped.fetch_add(1, Ordering::Relaxed);
        }
        if self.chunk.len() >= CHUNK_FULL {
            self.flush();
        }
    }

    /// Queues the frames logged since the last flush. If the queue has no
    /// room for them, they are dropped and counted; this never waits.
    pub fn flush(&mut self) {
        if self.frames == 0 {
            return;
        }
        let frames = mem::take(&mut self.frames);
        let queue = &self.queue;
        let before = queue.pending.fetch_add(frames, Ordering::AcqRel);
        if before.saturating_add(frames) > queue.frame_capacity {
            queue.pending.fetch_sub(frames, Ordering::AcqRel);
            queue.dropped.fetch_add(frames, Ordering::Relaxed);
            self.chunk.clear();
            return;
        }
        let chunk = Chunk {
            bytes: mem::take(&mut self.chunk),
            frames,
        };
        if let Err(refused) = queue.queue.push(chunk) {
            queue.pending.fetch_sub(frames, Ordering::AcqRel);
            queue.dropped.fetch_add(frames, Ordering::Relaxed);
            self.chunk = refused.bytes;
            self.chunk.clear();
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.flush();
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
                let Some(chunk) = queue.queue.pop() else {
                    break;
                };
                queue.pending.fetch_sub(chunk.frames, Ordering::AcqRel);
                self.output.write(&chunk, &self.shared);
            }
        }
        self.output.flush();
    }

    /// One round-robin pass over the queues, at most BATCH chunks from each.
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
                let Some(chunk) = queue.queue.pop() else {
                    break;
                };
                queue.pending.fetch_sub(chunk.frames, Ordering::AcqRel);
                self.output.write(&chunk, &self.shared);
                moved = moved.saturating_add(1);
                let mut buffer = chunk.bytes;
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
    fn write(&mut self, chunk: &Chunk, shared: &Shared) {
        match self {
            Output::File(file) => file.write(chunk, shared),
            Output::Socket(socket) => socket.write(chunk, shared),
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

    /// Writes a chunk whole; a file may grow past `max_bytes` by one chunk.
    fn write(&mut self, chunk: &Chunk, shared: &Shared) {
        if self.file.is_none() {
            self.reopen_if_due();
        }
        let Some(file) = self.file.as_mut() else {
            shared.dropped.fetch_add(chunk.frames, Ordering::Relaxed);
            return;
        };
        match file.write_all(&chunk.bytes) {
            Ok(()) => {
                shared.sent.fetch_add(chunk.frames, Ordering::Relaxed);
                let len = u64::try_from(chunk.bytes.len()).unwrap_or(u64::MAX);
                self.written = self.written.saturating_add(len);
                if self.max_bytes.is_some_and(|max| self.written >= max) {
                    self.rotate();
                }
            }
            Err(_) => {
                // A disk error: a frame may be half written, so the file
                // can no longer be read past it. Start over at the next try.
                shared.dropped.fetch_add(chunk.frames, Ordering::Relaxed);
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
        if self.retry_at.is_none_or(|at| Instant::now() >= at) {
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

    fn write(&mut self, chunk: &Chunk, shared: &Shared) {
        let Some(connection) = self.connection.as_mut() else {
            shared.dropped.fetch_add(chunk.frames, Ordering::Relaxed);
            return;
        };
        match connection.write_all(&chunk.bytes) {
            Ok(()) => {
                shared.sent.fetch_add(chunk.frames, Ordering::Relaxed);
            }
            Err(_) => {
                shared.dropped.fetch_add(chunk.frames, Ordering::Relaxed);
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
