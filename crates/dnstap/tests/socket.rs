//! Bidirectional Frame Streams: the sink as sender, `capture::accept` as
//! receiver, each against the other and against fstrm's own tools.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use bulwark_dnstap::frame::{write_control, ControlType, FrameReader};
use bulwark_dnstap::schema::Dnstap;
use bulwark_dnstap::{
    capture, Destination, KindSet, MessageContext, MessageKind, Protocol, Reader, Sink, SinkConfig,
    Timestamp, CONTENT_TYPE,
};
use bulwark_testkit::require_tool;

fn query_wire(id: u16) -> Vec<u8> {
    let mut wire = id.to_be_bytes().to_vec();
    wire.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    wire.extend_from_slice(b"\x03www\x07example\x03com\x00");
    wire.extend_from_slice(&[0, 1, 0, 1]);
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

fn sink_to(destination: Destination, capacity: usize) -> Sink {
    Sink::start(SinkConfig {
        destination,
        identity: Some(b"ns1.test".to_vec()),
        version: None,
        kinds: KindSet::auth(),
        queue_capacity: capacity,
    })
    .unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
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

fn read_stream(bytes: &[u8]) -> Vec<Dnstap> {
    Reader::new(bytes)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

/// Messages the writer has dealt with: written, or dropped (by a full queue,
/// or by the writer while no receiver is connected).
fn handled(sink: &Sink) -> u64 {
    let stats = sink.stats();
    stats.sent + stats.dropped
}

/// Logs message `id` and waits until the writer has dealt with it, so the
/// next one never finds the queue full of its predecessors.
fn log_and_wait_handled(sink: &Sink, tap: &mut bulwark_dnstap::Tap, id: u16) {
    let before = handled(sink);
    tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
    tap.flush();
    wait_until(&format!("the writer to send or drop message {id}"), || {
        handled(sink) > before
    });
}

/// Logs one message at a time until the sink has sent `count` more; messages
/// logged while the connection is still being set up are dropped, so only
/// the ids that were sent are returned.
fn log_until_sent(sink: &Sink, tap: &mut bulwark_dnstap::Tap, first_id: u16, count: u64) -> u16 {
    let target = sink.stats().sent + count;
    let mut id = first_id;
    let deadline = Instant::now() + Duration::from_secs(30);
    while sink.stats().sent < target {
        assert!(
            Instant::now() < deadline,
            "messages not sent: {:?}",
            sink.stats()
        );
        log_and_wait_handled(sink, tap, id);
        id += 1;
    }
    id
}

#[test]
fn unix_handshake_data_stop_finish_with_capture_accept() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("tap.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let receiver = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let copied = capture::accept(stream, &mut out).unwrap();
        (copied, out)
    });
    let sink = sink_to(Destination::Unix(socket), 64);
    let mut tap = sink.tap();
    log_until_sent(&sink, &mut tap, 1, 5);
    let sent = sink.stats().sent;
    // stop() returns only after the receiver's FINISH (or a timeout); the
    // receiver returns only after STOP.
    sink.stop();
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, sent);
    let messages = read_stream(&out);
    assert_eq!(messages.len() as u64, sent);
    assert_eq!(messages[0].identity.as_deref(), Some(&b"ns1.test"[..]));
    let ids = ids(&messages);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    assert_eq!(sink.stats().reconnects, 0);
}

#[test]
fn tcp_destination_works_the_same() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let copied = capture::accept(stream, &mut out).unwrap();
        (copied, out)
    });
    let sink = sink_to(Destination::Tcp(addr), 64);
    let mut tap = sink.tap();
    log_until_sent(&sink, &mut tap, 1, 3);
    sink.stop();
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, sink.stats().sent);
    assert_eq!(read_stream(&out).len() as u64, copied);
}

#[test]
fn a_restarted_receiver_is_reconnected_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("restart.sock");
    let listener = UnixListener::bind(&socket).unwrap();
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
    let sink = sink_to(Destination::Unix(socket), 64);
    let mut tap = sink.tap();
    accepted_rx.recv().unwrap();
    crash_tx.send(()).unwrap();
    let mut id = 1u16;
    // The first connection dies; the writer connects again with back-off.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sink.stats().reconnects == 0 {
        assert!(
            Instant::now() < deadline,
            "no reconnection: {:?}",
            sink.stats()
        );
        log_and_wait_handled(&sink, &mut tap, id);
        id += 1;
    }
    log_until_sent(&sink, &mut tap, 1000, 3);
    sink.stop();
    let (copied, out) = receiver.join().unwrap();
    let messages = read_stream(&out);
    assert_eq!(messages.len() as u64, copied);
    let after = ids(&messages).iter().filter(|&&id| id >= 1000).count();
    assert!(
        after >= 3,
        "the messages logged after the reconnection arrived: {after}"
    );
    assert_eq!(sink.stats().reconnects, 1);
}

#[test]
fn a_stalled_receiver_makes_the_taps_drop_not_wait() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("stalled.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let receiver = thread::spawn(move || {
        let (mut stream, _): (UnixStream, _) = listener.accept().unwrap();
        FrameReader::new(&mut stream)
            .expect_control(ControlType::Ready)
            .unwrap();
        write_control(&mut stream, ControlType::Accept, Some(CONTENT_TYPE)).unwrap();
        stream.flush().unwrap();
        // Never read again until the test is over.
        let _ = release_rx.recv();
        drop(stream);
    });
    let sink = sink_to(Destination::Unix(socket), 4);
    let mut tap = sink.tap();
    let big = vec![0u8; 30_000];
    let mut logged = 0u64;
    // Each log returns at once; with nobody reading, the socket buffer and
    // then the queue fill, and everything after is dropped and counted.
    wait_until("drops", || {
        tap.log(MessageKind::AuthQuery, &context(), &big);
        tap.flush();
        logged += 1;
        sink.stats().dropped >= 1000
    });
    let stats = sink.stats();
    assert!(stats.sent < logged);
    release_tx.send(()).unwrap();
    receiver.join().unwrap();
    sink.stop();
}

#[test]
fn nobody_listening_drops_and_stop_still_returns() {
    let dir = tempfile::tempdir().unwrap();
    let sink = sink_to(Destination::Unix(dir.path().join("nobody.sock")), 8);
    let mut tap = sink.tap();
    wait_until("drops", || {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(1));
        tap.flush();
        sink.stats().dropped >= 20
    });
    sink.stop();
    assert_eq!(sink.stats().sent, 0);
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for_path(path: &Path) {
    wait_until(&format!("{}", path.display()), || path.exists());
}

#[test]
fn fstrm_capture_receives_from_the_sink() {
    let Some(fstrm_capture) = require_tool("fstrm_capture") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("capture.sock");
    let file = dir.path().join("captured.fstrm");
    let child = Command::new(&fstrm_capture)
        .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
        .arg(&socket)
        .arg("-w")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    wait_for_path(&socket);
    let sink = sink_to(Destination::Unix(socket), 64);
    let mut tap = sink.tap();
    log_until_sent(&sink, &mut tap, 1, 4);
    let sent = sink.stats().sent;
    sink.stop();
    // fstrm_capture closes its file (with STOP) on SIGTERM.
    Command::new("kill")
        .arg("-TERM")
        .arg(child.0.id().to_string())
        .status()
        .unwrap();
    child.0.wait().unwrap();
    let messages = Reader::open(&file)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(messages.len() as u64, sent);
    assert_eq!(
        sink.stats().reconnects,
        0,
        "fstrm_capture answered STOP with FINISH"
    );
}

#[test]
fn capture_accept_receives_from_fstrm_replay() {
    let Some(fstrm_replay) = require_tool("fstrm_replay") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A file to replay, written by the file sink.
    let source = dir.path().join("source.fstrm");
    let sink = sink_to(
        Destination::File {
            path: source.clone(),
            max_bytes: None,
        },
        64,
    );
    let mut tap = sink.tap();
    for id in 1..=7 {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
        tap.flush();
    }
    sink.stop();
    assert_eq!(sink.stats().sent, 7);

    let socket = dir.path().join("replay.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let receiver = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut out = Vec::new();
        let copied = capture::accept(stream, &mut out).unwrap();
        (copied, out)
    });
    let status = Command::new(&fstrm_replay)
        .args(["-t", "protobuf:dnstap.Dnstap", "-r"])
        .arg(&source)
        .arg("-u")
        .arg(&socket)
        .status()
        .unwrap();
    assert!(status.success());
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, 7);
    assert_eq!(ids(&read_stream(&out)), (1..=7).collect::<Vec<u16>>());
}

#[test]
fn capture_accept_refuses_another_content_type() {
    let (mut sender, receiver) = UnixStream::pair().unwrap();
    write_control(&mut sender, ControlType::Ready, Some(b"protobuf:other")).unwrap();
    let mut out = Vec::new();
    let result = capture::accept(receiver, &mut out);
    assert!(
        matches!(result, Err(bulwark_dnstap::DnstapError::ContentType(_))),
        "{result:?}"
    );
    assert!(out.is_empty());
}
