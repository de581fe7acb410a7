//! The writer end to end: taps on the query path, the writer thread, a file
//! or a socket, and the reader. (Moved from `crates/dnstap/tests/sink.rs` and
//! `socket.rs` with the writer; the queues and the codec are tested in
//! bulwark-dnstap.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

use std::io::{BufReader, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use bulwark_dnstap::frame::{write_control, ControlType, FrameReader};
use bulwark_dnstap::schema::Dnstap;
use bulwark_dnstap::{
    capture, KindSet, MessageContext, MessageKind, Protocol, Reader, Timestamp, CONTENT_TYPE,
};
use bulwark_net::StreamListener;
use bulwark_testkit::require_tool;

use super::*;

/// A query for www.example.com. IN A with this id (RD).
fn query_wire(id: u16) -> Vec<u8> {
    let mut wire = id.to_be_bytes().to_vec();
    wire.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    wire.extend_from_slice(b"\x03www\x07example\x03com\x00");
    wire.extend_from_slice(&[0, 1, 0, 1]);
    wire
}

/// The answer: NOERROR, AA, one A record 192.0.2.1 with TTL 3600.
fn response_wire() -> Vec<u8> {
    let mut wire = vec![0x12, 0x34, 0x85, 0x00, 0, 1, 0, 1, 0, 0, 0, 0];
    wire.extend_from_slice(b"\x03www\x07example\x03com\x00");
    wire.extend_from_slice(&[0, 1, 0, 1]);
    wire.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1]);
    wire
}

fn context() -> MessageContext<'static> {
    MessageContext {
        protocol: Protocol::Udp,
        client: SocketAddr::from((Ipv4Addr::new(192, 0, 2, 7), 40000)),
        server: SocketAddr::from((Ipv4Addr::LOCALHOST, 53)),
        query_time: Some(Timestamp {
            secs: 1_795_000_000,
            nanos: 5,
        }),
        response_time: None,
        query_zone: None,
    }
}

fn config(kinds: KindSet, capacity: usize) -> SinkConfig {
    SinkConfig {
        identity: Some(b"ns1.test".to_vec()),
        version: Some(b"bulwark 0.1.0".to_vec()),
        kinds,
        queue_capacity: capacity,
    }
}

fn file(path: &Path, max_bytes: Option<u64>) -> Destination {
    Destination::File {
        path: path.to_path_buf(),
        max_bytes,
    }
}

fn writer_to(destination: Destination, capacity: usize) -> TapWriter {
    TapWriter::start(&destination, &config(KindSet::auth(), capacity)).unwrap()
}

fn file_writer(path: &Path) -> TapWriter {
    writer_to(file(path, None), 64)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

fn read_all(path: &Path) -> Vec<Dnstap> {
    Reader::new(BufReader::new(File::open(path).unwrap()))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn read_stream(bytes: &[u8]) -> Vec<Dnstap> {
    Reader::new(bytes)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn kinds(messages: &[Dnstap]) -> Vec<i32> {
    messages
        .iter()
        .map(|m| m.message.as_ref().unwrap().r#type)
        .collect()
}

fn ids(messages: &[Dnstap]) -> Vec<u16> {
    messages
        .iter()
        .map(|m| {
            let wire = m.message.as_ref().unwrap().query_message.as_ref().unwrap();
            u16::from_be_bytes([wire[0], wire[1]])
        })
        .collect()
}

fn write_pair(path: &Path) {
    let writer = file_writer(path);
    let mut tap = writer.tap();
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(0x1234));
    tap.flush();
    tap.log(MessageKind::AuthResponse, &context(), &response_wire());
    tap.flush();
    writer.stop();
    assert_eq!(writer.stats().sent, 2);
    assert_eq!(writer.stats().dropped, 0);
}

// ---------------------------------------------------------------------------
// files
// ---------------------------------------------------------------------------

#[test]
fn tap_to_file_to_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tap.fstrm");
    write_pair(&path);
    let messages = read_all(&path);
    assert_eq!(kinds(&messages), [1, 2]);
    assert_eq!(
        messages[0].identity.as_deref(),
        Some(&b"ns1.test"[..]),
        "the sink's identity"
    );
    assert_eq!(
        messages[0]
            .message
            .as_ref()
            .unwrap()
            .query_message
            .as_deref(),
        Some(query_wire(0x1234).as_slice())
    );
    // The file ends with STOP, not just EOF.
    let bytes = fs::read(&path).unwrap();
    assert!(bytes.ends_with(b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x03"));
}

#[test]
fn dnstap_ldns_reads_our_files() {
    let Some(dnstap_ldns) = require_tool("dnstap-ldns") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ldns.fstrm");
    write_pair(&path);
    let out = Command::new(&dnstap_ldns)
        .arg("-r")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "dnstap-ldns failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains(" AQ ") && lines[0].contains("\"www.example.com.\" IN A"),
        "{text}"
    );
    assert!(
        lines[1].contains(" AR ") && lines[1].contains("\"www.example.com.\" IN A"),
        "{text}"
    );
}

#[test]
fn rotate_closes_the_file_as_path_1_and_starts_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rot.fstrm");
    let old = dir.path().join("rot.fstrm.1");
    let writer = file_writer(&path);
    let mut tap = writer.tap();
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    tap.flush();
    wait_until("the first message written", || writer.stats().sent == 1);
    writer.rotate();
    wait_until("the rotated file", || old.exists());
    tap.log(MessageKind::AuthResponse, &context(), &response_wire());
    tap.flush();
    writer.stop();
    let before = read_all(&old);
    assert_eq!(kinds(&before), [1]);
    // The old file ends with STOP, not just EOF.
    let bytes = fs::read(&old).unwrap();
    assert!(bytes.ends_with(b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x03"));
    assert_eq!(kinds(&read_all(&path)), [2]);
}

#[test]
fn rotate_after_the_file_was_moved_away_starts_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moved.fstrm");
    let moved = dir.path().join("elsewhere.fstrm");
    let writer = file_writer(&path);
    let mut tap = writer.tap();
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    tap.flush();
    wait_until("the first message written", || writer.stats().sent == 1);
    // logrotate's way: move the file, then reload.
    fs::rename(&path, &moved).unwrap();
    writer.rotate();
    wait_until("the new file", || path.exists());
    tap.log(MessageKind::AuthResponse, &context(), &response_wire());
    tap.flush();
    writer.stop();
    assert_eq!(kinds(&read_all(&moved)), [1], "the moved file is complete");
    assert_eq!(kinds(&read_all(&path)), [2]);
    assert!(!dir.path().join("moved.fstrm.1").exists());
}

#[test]
fn max_bytes_rotates_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.fstrm");
    let old = dir.path().join("small.fstrm.1");
    let writer = writer_to(file(&path, Some(200)), 16);
    let mut tap = writer.tap();
    // Each frame is about 100 bytes: the second one crosses the limit.
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    tap.flush();
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(2));
    tap.flush();
    wait_until("the rotated file", || old.exists());
    tap.log(MessageKind::AuthResponse, &context(), &response_wire());
    tap.flush();
    writer.stop();
    assert_eq!(read_all(&old).len(), 2);
    assert_eq!(read_all(&path).len(), 1);
}

#[test]
fn a_bad_file_path_or_size_fails_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing-dir").join("x.fstrm");
    assert!(TapWriter::start(&file(&path, None), &config(KindSet::auth(), 8)).is_err());
    let y = dir.path().join("y");
    assert!(TapWriter::start(&file(&y, None), &config(KindSet::auth(), 0)).is_err());
    assert!(TapWriter::start(&file(&y, Some(0)), &config(KindSet::auth(), 8)).is_err());
}

#[test]
fn siblings_share_one_queue_and_the_writer_drains_every_tap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.fstrm");
    let writer = writer_to(file(&path, None), 4096);
    let first = writer.tap();
    let handles: Vec<_> = [first.sibling(), first.sibling(), writer.tap()]
        .into_iter()
        .map(|mut tap| {
            thread::spawn(move || {
                for id in 0..500 {
                    tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
                    tap.flush();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    writer.stop();
    let stats = writer.stats();
    assert_eq!(stats.sent + stats.dropped, 1500);
    assert_eq!(read_all(&path).len() as u64, stats.sent);
}

#[test]
fn steady_state_logging_reuses_its_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alloc.fstrm");
    let writer = file_writer(&path);
    let mut tap = writer.tap();
    let (query, response) = (query_wire(7), response_wire());
    for n in 1..=300u64 {
        let kind = if n % 2 == 0 {
            MessageKind::AuthResponse
        } else {
            MessageKind::AuthQuery
        };
        tap.log(
            kind,
            &context(),
            if kind.query() { &query } else { &response },
        );
        tap.flush();
        wait_until("the writer", || writer.stats().sent == n);
    }
    // One buffer in flight and at most one more while the writer returns the
    // previous one: never one per message.
    assert!(
        tap.buffers_allocated() <= 2,
        "{} buffers",
        tap.buffers_allocated()
    );
    writer.stop();
    assert_eq!(read_all(&path).len(), 300);
}

#[test]
fn stop_is_idempotent_and_later_logs_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stop.fstrm");
    let writer = writer_to(file(&path, None), 2);
    let mut tap = writer.tap();
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    tap.flush();
    writer.stop();
    writer.stop();
    for id in 0..5 {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
        tap.flush();
    }
    let stats = writer.stats();
    assert_eq!(stats.sent, 1);
    assert_eq!(stats.dropped, 5, "never written, so dropped");
    assert_eq!(read_all(&path).len(), 1);
}

#[test]
fn stop_returns_while_taps_keep_logging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.fstrm");
    let writer = file_writer(&path);
    let mut tap = writer.tap();
    let done = Arc::new(AtomicBool::new(false));
    let producer = {
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let mut logged = 0u64;
            while !done.load(Ordering::Relaxed) {
                tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
                tap.flush();
                logged += 1;
            }
            logged
        })
    };
    wait_until("traffic", || writer.stats().sent > 100);
    writer.stop();
    done.store(true, Ordering::Relaxed);
    let logged = producer.join().unwrap();
    let stats = writer.stats();
    assert_eq!(
        stats.sent + stats.dropped,
        logged,
        "every message is sent or counted as dropped"
    );
    assert_eq!(read_all(&path).len() as u64, stats.sent);
}

#[test]
fn a_tap_queues_its_chunk_when_full_on_flush_and_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chunks.fstrm");
    let writer = writer_to(file(&path, None), 4096);
    let mut tap = writer.tap();
    // Far more than one chunk's worth: full chunks go out without a flush.
    for _ in 0..300 {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    }
    wait_until("a full chunk written", || writer.stats().sent > 0);
    let sent_before_flush = writer.stats().sent;
    assert!(sent_before_flush < 300, "the last chunk waits for a flush");
    tap.log(MessageKind::AuthResponse, &context(), &response_wire());
    tap.flush();
    wait_until("the flushed chunk", || writer.stats().sent == 301);
    // Dropping a tap queues what it holds.
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
    drop(tap);
    writer.stop();
    assert_eq!(writer.stats().sent, 302);
    assert_eq!(writer.stats().dropped, 0);
    let kinds = kinds(&read_all(&path));
    assert_eq!(kinds.len(), 302);
    assert_eq!(kinds[299], 1);
    assert_eq!(kinds[300], 2, "frames stay in the order they were logged");
    assert_eq!(kinds[301], 1);
}

#[test]
fn a_dropped_taps_queue_is_forgotten_and_its_drops_still_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep.fstrm");
    let writer = writer_to(file(&path, None), 2);
    let mut tap = writer.tap();
    for id in 0..5 {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
    }
    tap.flush();
    assert_eq!(writer.stats().dropped, 5, "5 frames over a budget of 2");
    drop(tap);
    // The idle writer sweeps about once a second.
    thread::sleep(SWEEP_INTERVAL * 2);
    assert_eq!(writer.stats().dropped, 5);
    writer.stop();
    assert_eq!(writer.stats().dropped, 5);
}

// ---------------------------------------------------------------------------
// sockets
// ---------------------------------------------------------------------------

/// Messages the writer has dealt with: written, or dropped (by a full queue,
/// or by the writer while no receiver is connected).
fn handled(writer: &TapWriter) -> u64 {
    let stats = writer.stats();
    stats.sent + stats.dropped
}

/// Logs message `id` and waits until the writer has dealt with it, so the
/// next one never finds the queue full of its predecessors.
fn log_and_wait_handled(writer: &TapWriter, tap: &mut Tap, id: u16) {
    let before = handled(writer);
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
    tap.flush();
    wait_until(&format!("the writer to send or drop message {id}"), || {
        handled(writer) > before
    });
}

/// Logs one message at a time until the writer has sent `count` more;
/// messages logged while the connection is still being set up are dropped.
fn log_until_sent(writer: &TapWriter, tap: &mut Tap, first_id: u16, count: u64) -> u16 {
    let target = writer.stats().sent + count;
    let mut id = first_id;
    let deadline = Instant::now() + Duration::from_secs(30);
    while writer.stats().sent < target {
        assert!(
            Instant::now() < deadline,
            "messages not sent: {:?}",
            writer.stats()
        );
        log_and_wait_handled(writer, tap, id);
        id += 1;
    }
    id
}

fn listen(addr: StreamAddr) -> (StreamListener, Destination) {
    let listener = StreamListener::bind(&addr).unwrap();
    let destination = match listener.local_addr() {
        StreamAddr::Unix(path) => Destination::Unix(path.clone()),
        StreamAddr::Tcp(addr) => Destination::Tcp(*addr),
    };
    (listener, destination)
}

/// A receiver on its own thread: `capture::accept` on the first connection.
fn receive_once(listener: StreamListener) -> thread::JoinHandle<(u64, Vec<u8>)> {
    thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let copied = capture::accept(stream, &mut out).unwrap();
        (copied, out)
    })
}

#[test]
fn unix_handshake_data_stop_finish_with_capture_accept() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, destination) = listen(StreamAddr::Unix(dir.path().join("tap.sock")));
    let receiver = receive_once(listener);
    let writer = writer_to(destination, 64);
    let mut tap = writer.tap();
    log_until_sent(&writer, &mut tap, 1, 5);
    let sent = writer.stats().sent;
    // stop() returns only after the receiver's FINISH (or a timeout); the
    // receiver returns only after STOP.
    writer.stop();
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, sent);
    let messages = read_stream(&out);
    assert_eq!(messages.len() as u64, sent);
    assert_eq!(messages[0].identity.as_deref(), Some(&b"ns1.test"[..]));
    let ids = ids(&messages);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    assert_eq!(writer.stats().reconnects, 0);
}

#[test]
fn tcp_destination_works_the_same() {
    let (listener, destination) =
        listen(StreamAddr::Tcp(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))));
    let receiver = receive_once(listener);
    let writer = writer_to(destination, 64);
    let mut tap = writer.tap();
    log_until_sent(&writer, &mut tap, 1, 3);
    writer.stop();
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, writer.stats().sent);
    assert_eq!(read_stream(&out).len() as u64, copied);
}

#[test]
fn a_restarted_receiver_is_reconnected_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, destination) = listen(StreamAddr::Unix(dir.path().join("restart.sock")));
    let (accepted_tx, accepted_rx) = mpsc::channel();
    let (crash_tx, crash_rx) = mpsc::channel::<()>();
    let receiver = thread::spawn(move || {
        // First life: handshake by hand, then vanish without FINISH.
        let (mut stream, _) = listener.accept().unwrap();
        FrameReader::new(&mut stream)
            .expect_control(ControlType::Ready)
            .unwrap();
        write_control(&mut stream, ControlType::Accept, Some(CONTENT_TYPE)).unwrap();
        stream.flush().unwrap();
        // START: the sender has completed its side of the handshake.
        FrameReader::new(&mut stream)
            .expect_control(ControlType::Start)
            .unwrap();
        accepted_tx.send(()).unwrap();
        crash_rx.recv().unwrap();
        drop(stream);
        // Second life: a proper receiver.
        let (stream, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let copied = capture::accept(stream, &mut out).unwrap();
        (copied, out)
    });
    let writer = writer_to(destination, 64);
    let mut tap = writer.tap();
    accepted_rx.recv().unwrap();
    crash_tx.send(()).unwrap();
    let mut id = 1u16;
    // The first connection dies; the writer connects again with back-off.
    let deadline = Instant::now() + Duration::from_secs(30);
    while writer.stats().reconnects == 0 {
        assert!(
            Instant::now() < deadline,
            "no reconnection: {:?}",
            writer.stats()
        );
        log_and_wait_handled(&writer, &mut tap, id);
        id += 1;
    }
    log_until_sent(&writer, &mut tap, 1000, 3);
    writer.stop();
    let (copied, out) = receiver.join().unwrap();
    let messages = read_stream(&out);
    assert_eq!(messages.len() as u64, copied);
    let after = ids(&messages).iter().filter(|&&id| id >= 1000).count();
    assert!(
        after >= 3,
        "the messages logged after the reconnection arrived: {after}"
    );
    assert_eq!(writer.stats().reconnects, 1);
}

#[test]
fn a_stalled_receiver_makes_the_taps_drop_not_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, destination) = listen(StreamAddr::Unix(dir.path().join("stalled.sock")));
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let receiver = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        FrameReader::new(&mut stream)
            .expect_control(ControlType::Ready)
            .unwrap();
        write_control(&mut stream, ControlType::Accept, Some(CONTENT_TYPE)).unwrap();
        stream.flush().unwrap();
        // Never read again until the test is over.
        let _ = release_rx.recv();
        drop(stream);
    });
    let writer = writer_to(destination, 4);
    let mut tap = writer.tap();
    let big = vec![0u8; 30_000];
    let mut logged = 0u64;
    // Each log returns at once; with nobody reading, the socket buffer and
    // then the queue fill, and everything after is dropped and counted.
    wait_until("drops", || {
        tap.log(MessageKind::AuthQuery, &context(), &big);
        tap.flush();
        logged += 1;
        writer.stats().dropped >= 1000
    });
    let stats = writer.stats();
    assert!(stats.sent < logged);
    release_tx.send(()).unwrap();
    receiver.join().unwrap();
    writer.stop();
}

#[test]
fn nobody_listening_drops_and_stop_still_returns() {
    let dir = tempfile::tempdir().unwrap();
    let writer = writer_to(Destination::Unix(dir.path().join("nobody.sock")), 8);
    let mut tap = writer.tap();
    wait_until("drops", || {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
        tap.flush();
        writer.stats().dropped >= 20
    });
    writer.stop();
    assert_eq!(writer.stats().sent, 0);
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn fstrm_capture_receives_from_the_writer() {
    let Some(fstrm_capture) = require_tool("fstrm_capture") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("capture.sock");
    let captured = dir.path().join("captured.fstrm");
    let child = Command::new(&fstrm_capture)
        .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
        .arg(&socket)
        .arg("-w")
        .arg(&captured)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    wait_until(&format!("{}", socket.display()), || socket.exists());
    let writer = writer_to(Destination::Unix(socket), 64);
    let mut tap = writer.tap();
    log_until_sent(&writer, &mut tap, 1, 4);
    let sent = writer.stats().sent;
    writer.stop();
    // fstrm_capture closes its file (with STOP) on SIGTERM.
    Command::new("kill")
        .arg("-TERM")
        .arg(child.0.id().to_string())
        .status()
        .unwrap();
    child.0.wait().unwrap();
    assert_eq!(read_all(&captured).len() as u64, sent);
    assert_eq!(
        writer.stats().reconnects,
        0,
        "fstrm_capture answered STOP with FINISH"
    );
}
