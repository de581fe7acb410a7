//! The queues: per-worker bounded queues filled by [`Tap`]s on the query path
//! and emptied through one [`Drain`] by whoever does the I/O.
//!
//! The split follows the dnstap design: the server duplicates each message
//! into a lock-free circular queue and goes on; a separate thread (at the
//! edge: this crate starts none) ships the queued messages with buffered
//! writes; when the queue is full the message is dropped and counted, so
//! logging never slows the server down.
//!
//! A `Tap` encodes each message straight into a chunk of Frame Streams data
//! frames and queues the chunk when it is full or when the server has finished
//! a batch of queries, so the queue and the writer work per chunk, not per
//! message, and the writer copies chunks to the output without looking inside.
//! The queue's bound is in frames (`queue_capacity`), so a full queue drops
//! whole chunks and counts every frame in them.
//!
//! Buffers circulate: a `Tap` takes one from its queue's pool, encodes into it
//! and pushes it on the queue; the drain hands it to the writer and back to the
//! pool. A new buffer is allocated only when the pool is empty, so in steady
//! state logging allocates nothing, and the number of buffers per queue is
//! bounded by twice its chunk slots plus one per producer.

use std::mem;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crossbeam_queue::ArrayQueue;

use crate::encode::{append_exchange_frame, Exchange, Header};
use crate::{DnstapError, KindSet, MessageContext, MessageKind, SinkConfig, SinkStats};

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
/// Buffers that grew beyond this (a huge message) are freed instead of pooled.
const MAX_POOLED_BUFFER: usize = 64 * 1024;

/// The queues of one dnstap output: hands out [`Tap`]s (producers) and counts.
/// Its one consumer is the [`Drain`] made with it.
#[derive(Debug)]
pub struct Sink {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    kinds: KindSet,
    header: Header,
    queue_capacity: usize,
    queues: Mutex<Vec<Arc<TapQueue>>>,
    /// Bumped whenever `queues` changes, so the drain re-reads it only then.
    generation: AtomicU64,
    sent: AtomicU64,
    /// Drops counted by the writer (destination down), and by queues that
    /// have been forgotten.
    dropped: AtomicU64,
    reconnects: AtomicU64,
    /// Set once the drain is finished: whatever is still queued then is lost.
    finished: AtomicBool,
}

/// One bounded queue and its buffer pool, shared by a [`Tap`] and its siblings
/// (producers) and the drain (consumer).
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding this lock cannot leave the data inconsistent (a
    // list of queues), so poisoning is ignored.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sink {
    /// The queues and their consumer. Nothing runs yet: whoever owns the
    /// [`Drain`] empties it (bulwark's dnstap writer thread).
    pub fn new(config: &SinkConfig) -> Result<(Sink, Drain), DnstapError> {
        if config.queue_capacity == 0 {
            return Err(DnstapError::Config("queue capacity must be at least 1"));
        }
        let shared = Arc::new(Shared {
            kinds: config.kinds,
            header: Header::new(config.identity.as_deref(), config.version.as_deref()),
            queue_capacity: config.queue_capacity,
            queues: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            finished: AtomicBool::new(false),
        });
        let drain = Drain {
            shared: Arc::clone(&shared),
            queues: Vec::new(),
            generation: u64::MAX,
            next_queue: 0,
        };
        Ok((Sink { shared }, drain))
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
                    // After the drain is finished, what is left in a queue
                    // will never be written.
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
}

/// A chunk of complete data frames, as a tap hands it to the drain.
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

    /// Encodes one wire-format DNS message with its context (the times in it
    /// read by the caller) into the current chunk: a query goes in
    /// `query_message`, a response in `response_message`. The chunk is queued
    /// once it is full; call [`Tap::flush`] when a batch of work is done.
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

/// The consumer side of a [`Sink`]: the one place queued chunks come out.
/// The writer hands each chunk's bytes (whole Frame Streams data frames, ready
/// to be copied to the output) to a `write` function that says whether they
/// reached the output; the drain counts the chunk's frames as sent or as
/// dropped accordingly and recycles its buffer.
///
/// Dropping the drain (or [`Drain::finish`]) ends the sink: frames still
/// queued, or queued later, count as dropped.
#[derive(Debug)]
pub struct Drain {
    shared: Arc<Shared>,
    /// The writer's snapshot of the queue list.
    queues: Vec<Arc<TapQueue>>,
    generation: u64,
    next_queue: usize,
}

impl Drain {
    /// Re-reads the queue list if a tap was added or a queue forgotten.
    fn refresh(&mut self) {
        let generation = self.shared.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.queues = lock(&self.shared.queues).clone();
            self.generation = generation;
        }
    }

    fn account(&self, frames: u64, written: bool) {
        let counter = if written {
            &self.shared.sent
        } else {
            &self.shared.dropped
        };
        counter.fetch_add(frames, Ordering::Relaxed);
    }

    /// One round-robin pass over the queues, at most a few chunks from each
    /// so that no busy producer starves the others. Returns how many chunks
    /// were handed to `write`; 0 means the queues were empty.
    pub fn drain_round(&mut self, mut write: impl FnMut(&[u8]) -> bool) -> usize {
        self.refresh();
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
                let written = write(&chunk.bytes);
                self.account(chunk.frames, written);
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

    /// Hands `write` what the queues hold now, and no more: taps that keep
    /// logging (a server still answering) must not keep a stopping writer
    /// from finishing.
    pub fn drain_for_stop(&mut self, mut write: impl FnMut(&[u8]) -> bool) {
        self.refresh();
        for queue in &self.queues {
            for _ in 0..queue.queue.len() {
                let Some(chunk) = queue.queue.pop() else {
                    break;
                };
                queue.pending.fetch_sub(chunk.frames, Ordering::AcqRel);
                let written = write(&chunk.bytes);
                self.account(chunk.frames, written);
            }
        }
    }

    /// Forgets queues that no tap uses any more and that are empty, keeping
    /// their drop counts. The writer calls it now and then (about once a
    /// second) when idle.
    pub fn sweep(&mut self) {
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

    /// Counts a connection made again after a lost one (the stats'
    /// `reconnects`).
    pub fn count_reconnect(&self) {
        self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends the sink: nothing will be written any more, so what stays queued
    /// counts as dropped. Dropping the drain does the same.
    pub fn finish(self) {}
}

impl Drop for Drain {
    fn drop(&mut self) {
        self.shared.finished.store(true, Ordering::Release);
    }
}
