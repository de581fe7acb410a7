//! The dnstap writer: the thread that empties the taps' queues (a
//! `bulwark_dnstap::Drain`) and writes their frames, buffered, to a file it
//! opens and rotates, or to a receiver on a Unix or TCP socket connected
//! through `bulwark-net`, reconnecting with back-off.
//!
//! The query path never waits for it: a full queue drops (and counts) in the
//! tap, and frames drained while the destination is down are dropped (and
//! counted) here.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bulwark_dnstap::{sender, DnstapError, Drain, Sink, SinkConfig, SinkStats, Tap};
use bulwark_net::{Stream, StreamAddr};

use super::Destination;

/// The writer's output buffer: one system call per 64 KiB of frames at most.
const WRITE_BUFFER: usize = 64 * 1024;
/// How long the idle writer sleeps before looking at the queues again.
/// Producers never wake it (that would cost them a futex call), so this bounds
/// the delay between a message and its write. Each wake costs a few thousand
/// instructions and a write; 10 ms keeps that under 1% of a quiet server's
/// work while a busy worker's queue (16384 messages by default) holds far
/// more than 10 ms of traffic.
const IDLE_PARK: Duration = Duration::from_millis(10);
/// Reconnection back-off, doubled after each failure.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// A receiver that takes longer than this to accept a write, or to answer the
/// handshake or STOP, is treated as gone: the writer must stay responsive to
/// stop and to its queues.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the idle writer forgets queues whose taps are all gone.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);
/// After a failed file open, how long until the next try.
const RETRY_OPEN: Duration = Duration::from_secs(1);

/// A running dnstap output: the queues the taps fill and the writer thread.
///
/// Dropping it stops it (see [`TapWriter::stop`]).
#[derive(Debug)]
pub struct TapWriter {
    sink: Sink,
    signals: Arc<Signals>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the writer is asked to do besides writing.
#[derive(Debug, Default)]
struct Signals {
    stop: AtomicBool,
    rotate: AtomicBool,
}

fn after(delay: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(delay).unwrap_or(now)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding this lock cannot leave a join handle
    // inconsistent, so poisoning is ignored.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TapWriter {
    /// Starts the writer thread ("bulwark-dnstap"). A file destination is
    /// created (truncating any previous file) and its START frame written
    /// before this returns, so a bad path is reported here. Socket
    /// destinations are connected by the writer, in the background, and
    /// reconnected with back-off (0.1 s doubling to 5 s) whenever lost.
    pub fn start(destination: &Destination, config: &SinkConfig) -> Result<TapWriter, DnstapError> {
        let (sink, drain) = Sink::new(config)?;
        let output = match destination {
            Destination::File { path, max_bytes } => {
                if max_bytes == &Some(0) {
                    return Err(DnstapError::Config("max_bytes must be at least 1"));
                }
                Output::File(FileOutput::create(path.clone(), *max_bytes)?)
            }
            Destination::Unix(path) => {
                Output::Socket(SocketOutput::new(StreamAddr::Unix(path.clone())))
            }
            Destination::Tcp(addr) => Output::Socket(SocketOutput::new(StreamAddr::Tcp(*addr))),
        };
        let signals = Arc::new(Signals::default());
        let writer = Writer {
            drain,
            signals: Arc::clone(&signals),
            output,
            last_sweep: Instant::now(),
        };
        let thread = thread::Builder::new()
            .name("bulwark-dnstap".to_owned())
            .spawn(move || writer.run())?;
        Ok(TapWriter {
            sink,
            signals,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A producer with a new queue of its own (one per worker thread).
    pub fn tap(&self) -> Tap {
        self.sink.tap()
    }

    /// The counters so far.
    pub fn stats(&self) -> SinkStats {
        self.sink.stats()
    }

    /// Files: the writer ends the current file with STOP, renames it to
    /// `PATH.1` (replacing an older one; if `PATH` was already moved away, by
    /// logrotate say, there is nothing to rename) and starts a new `PATH`.
    /// Sockets: nothing. Returns at once; the writer rotates within
    /// milliseconds.
    pub fn rotate(&self) {
        self.signals.rotate.store(true, Ordering::Release);
        if let Some(thread) = lock(&self.thread).as_ref() {
            thread.thread().unpark();
        }
    }

    /// Drains the queues, ends the stream (STOP; on a socket, waits up to 2 s
    /// for the receiver's FINISH) and joins the writer. Idempotent. Messages
    /// logged afterwards are never written and count as dropped.
    pub fn stop(&self) {
        let Some(thread) = lock(&self.thread).take() else {
            return;
        };
        self.signals.stop.store(true, Ordering::Release);
        thread.thread().unpark();
        // The writer only panics on a bug; there is nothing left to clean up.
        let _ = thread.join();
    }
}

impl Drop for TapWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread's state.
struct Writer {
    drain: Drain,
    signals: Arc<Signals>,
    output: Output,
    last_sweep: Instant,
}

impl Writer {
    fn run(mut self) {
        loop {
            if self.signals.stop.load(Ordering::Acquire) {
                let output = &mut self.output;
                self.drain.drain_for_stop(|chunk| output.write(chunk));
                output.flush();
                break;
            }
            if self.signals.rotate.swap(false, Ordering::AcqRel) {
                self.output.rotate();
            }
            self.output.maintain(&self.drain);
            let output = &mut self.output;
            if self.drain.drain_round(|chunk| output.write(chunk)) == 0 {
                self.output.flush();
                self.sweep();
                thread::park_timeout(IDLE_PARK);
            }
        }
        self.output.finish();
        // What is still queued now will never be written: count it dropped.
        self.drain.finish();
    }

    fn sweep(&mut self) {
        if self.last_sweep.elapsed() < SWEEP_INTERVAL {
            return;
        }
        self.last_sweep = Instant::now();
        self.drain.sweep();
    }
}

enum Output {
    File(FileOutput),
    Socket(SocketOutput),
}

impl Output {
    /// Writes a chunk of whole frames; false if it did not reach the output
    /// (the drain counts its frames dropped).
    fn write(&mut self, chunk: &[u8]) -> bool {
        match self {
            Output::File(file) => file.write(chunk),
            Output::Socket(socket) => socket.write(chunk),
        }
    }

    fn flush(&mut self) {
        match self {
            Output::File(file) => file.flush(),
            Output::Socket(socket) => socket.flush(),
        }
    }

    fn maintain(&mut self, drain: &Drain) {
        if let Output::Socket(socket) = self {
            socket.maintain(drain);
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
    fn write(&mut self, chunk: &[u8]) -> bool {
        if self.file.is_none() {
            self.reopen_if_due();
        }
        let Some(file) = self.file.as_mut() else {
            return false;
        };
        match file.write_all(chunk) {
            Ok(()) => {
                let len = u64::try_from(chunk.len()).unwrap_or(u64::MAX);
                self.written = self.written.saturating_add(len);
                if self.max_bytes.is_some_and(|max| self.written >= max) {
                    self.rotate();
                }
                true
            }
            Err(_) => {
                // A disk error: a frame may be half written, so the file
                // can no longer be read past it. Start over at the next try.
                self.file = None;
                self.retry_at = Some(after(RETRY_OPEN));
                false
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
            let _ = sender::stop(&mut file).and_then(|()| file.flush());
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
    sender::start(&mut file)?;
    // Readers of a live file see a valid (empty) stream at once.
    file.flush()?;
    Ok(file)
}

/// Bidirectional Frame Streams to a socket.
struct SocketOutput {
    target: StreamAddr,
    connection: Option<BufWriter<Stream>>,
    backoff: Duration,
    next_attempt: Instant,
    /// Whether a handshake has ever completed, so later ones are reconnects.
    was_connected: bool,
}

impl SocketOutput {
    fn new(target: StreamAddr) -> SocketOutput {
        SocketOutput {
            target,
            connection: None,
            backoff: BACKOFF_MIN,
            next_attempt: Instant::now(),
            was_connected: false,
        }
    }

    /// Connects when disconnected and the back-off has passed.
    fn maintain(&mut self, drain: &Drain) {
        if self.connection.is_some() || Instant::now() < self.next_attempt {
            return;
        }
        match self.connect() {
            Ok(connection) => {
                self.connection = Some(connection);
                self.backoff = BACKOFF_MIN;
                if self.was_connected {
                    drain.count_reconnect();
                }
                self.was_connected = true;
            }
            Err(_) => {
                self.next_attempt = after(self.backoff);
                self.backoff = self.backoff.saturating_mul(2).min(BACKOFF_MAX);
            }
        }
    }

    /// Connects and runs the sender's side of the handshake (READY, ACCEPT,
    /// START) unbuffered, then buffers the data frames.
    fn connect(&self) -> Result<BufWriter<Stream>, DnstapError> {
        let mut stream = Stream::connect(&self.target, SOCKET_TIMEOUT)?;
        sender::open(&mut stream)?;
        Ok(BufWriter::with_capacity(WRITE_BUFFER, stream))
    }

    fn write(&mut self, chunk: &[u8]) -> bool {
        let Some(connection) = self.connection.as_mut() else {
            return false;
        };
        if connection.write_all(chunk).is_ok() {
            return true;
        }
        self.lost();
        false
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

    /// Ends the stream: what is buffered, STOP, then the receiver's FINISH
    /// (or the timeout).
    fn finish(&mut self) {
        let Some(mut connection) = self.connection.take() else {
            return;
        };
        if connection.flush().is_err() {
            let _ = connection.into_parts();
            return;
        }
        let (mut stream, _) = connection.into_parts();
        let _ = sender::close(&mut stream);
    }
}

#[cfg(test)]
mod tests;
