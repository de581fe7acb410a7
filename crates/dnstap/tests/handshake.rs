//! Bidirectional Frame Streams over any `Read + Write`: the sender's side
//! (`sender`) and the receiver's (`capture`), against scripted bytes, against
//! each other, and against fstrm's own tools. Sockets here are the test's
//! own; the writer that uses `sender` over real connections is tested in
//! bulwark.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::io::{self, Cursor, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Command;
use std::thread;

use bulwark_dnstap::capture::{self, Ended, Receiver};
use bulwark_dnstap::frame::{write_control, write_data, ControlType};
use bulwark_dnstap::schema::Dnstap;
use bulwark_dnstap::{
    sender, DnstapError, KindSet, MessageContext, MessageKind, Protocol, Reader, SinkConfig,
    Timestamp,
};
use bulwark_testkit::require_tool;
use support::TestWriter;

/// READY, ACCEPT and START with the dnstap content type, STOP and FINISH,
/// byte for byte as fstrm writes them.
const READY: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x22\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x16protobuf:dnstap.Dnstap";
const ACCEPT: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x22\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x16protobuf:dnstap.Dnstap";
const START: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x22\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x16protobuf:dnstap.Dnstap";
const STOP: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x03";
const FINISH: &[u8] = b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x05";

/// A peer that says `input` and records what it is told.
struct Scripted {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Scripted {
    fn new(parts: &[&[u8]]) -> Scripted {
        Scripted {
            input: Cursor::new(parts.concat()),
            output: Vec::new(),
        }
    }

    /// How much of the input is left unread.
    fn unread(&self) -> usize {
        self.input.get_ref().len() - self.input.position() as usize
    }
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Scripted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

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

/// The data frames of messages with these ids, as the writer would send them.
fn frames_for(ids: impl IntoIterator<Item = u16>) -> Vec<u8> {
    let mut writer = TestWriter::new(&SinkConfig {
        identity: Some(b"ns1.test".to_vec()),
        version: None,
        kinds: KindSet::auth(),
        queue_capacity: 64,
    });
    let mut tap = writer.tap();
    for id in ids {
        tap.log(MessageKind::AuthQuery, &context(), &query_wire(id));
        tap.flush();
    }
    writer.stop();
    writer.frames
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

#[test]
fn the_sender_opens_with_ready_and_starts_after_accept() {
    // The receiver's ACCEPT, then bytes the sender must leave alone.
    let mut peer = Scripted::new(&[ACCEPT, b"later"]);
    sender::open(&mut peer).unwrap();
    assert_eq!(peer.output, [READY, START].concat());
    assert_eq!(peer.unread(), 5, "nothing read past ACCEPT");
}

#[test]
fn the_sender_refuses_an_accept_for_another_content_type() {
    let mut accept = Vec::new();
    write_control(&mut accept, ControlType::Accept, Some(b"protobuf:other")).unwrap();
    let mut peer = Scripted::new(&[&accept]);
    let err = sender::open(&mut peer).unwrap_err();
    assert!(matches!(err, DnstapError::ContentType(_)), "{err}");
    assert_eq!(peer.output, READY, "no START");
}

#[test]
fn the_sender_fails_when_the_receiver_says_nothing() {
    let mut peer = Scripted::new(&[]);
    assert!(sender::open(&mut peer).is_err());
    let mut peer = Scripted::new(&[START]);
    assert!(matches!(
        sender::open(&mut peer),
        Err(DnstapError::UnexpectedFrame(_))
    ));
}

#[test]
fn the_sender_closes_with_stop_and_waits_for_finish() {
    let mut peer = Scripted::new(&[FINISH]);
    sender::close(&mut peer).unwrap();
    assert_eq!(peer.output, STOP);
    // No FINISH: an error the writer ignores (it closes anyway).
    let mut peer = Scripted::new(&[]);
    assert!(sender::close(&mut peer).is_err());
}

#[test]
fn the_receiver_accepts_copies_and_finishes() {
    let data = frames_for(1..=3);
    let mut peer = Scripted::new(&[READY, START, &data, STOP]);
    let mut receiver = Receiver::handshake(&mut peer).unwrap();
    let mut out = Vec::new();
    let mut copied = 0;
    assert_eq!(
        receiver.copy_frames(&mut out, None, &mut copied).unwrap(),
        Ended::Stop
    );
    receiver.finish().unwrap();
    drop(receiver);
    assert_eq!(copied, 3);
    assert_eq!(out, data);
    assert_eq!(peer.output, [ACCEPT, FINISH].concat());
}

#[test]
fn the_receiver_stops_at_its_limit_and_at_the_end_of_the_stream() {
    let data = frames_for(1..=3);
    let mut peer = Scripted::new(&[READY, START, &data]);
    let mut receiver = Receiver::handshake(&mut peer).unwrap();
    let mut out = Vec::new();
    let mut copied = 0;
    assert_eq!(
        receiver
            .copy_frames(&mut out, Some(2), &mut copied)
            .unwrap(),
        Ended::Limit
    );
    assert_eq!(copied, 2);
    assert_eq!(
        receiver.copy_frames(&mut out, None, &mut copied).unwrap(),
        Ended::Closed,
        "a sender that goes away without STOP"
    );
    assert_eq!(copied, 3);
    assert_eq!(out, data);
}

#[test]
fn the_receiver_refuses_a_control_frame_other_than_stop_after_start() {
    let mut peer = Scripted::new(&[READY, START, START]);
    let mut receiver = Receiver::handshake(&mut peer).unwrap();
    let mut copied = 0;
    assert!(matches!(
        receiver.copy_frames(&mut Vec::new(), None, &mut copied),
        Err(DnstapError::UnexpectedFrame(_))
    ));
}

#[test]
fn capture_accept_refuses_another_content_type() {
    let mut ready = Vec::new();
    write_control(&mut ready, ControlType::Ready, Some(b"protobuf:other")).unwrap();
    let mut peer = Scripted::new(&[&ready]);
    let mut out = Vec::new();
    let result = capture::accept(&mut peer, &mut out);
    assert!(
        matches!(result, Err(DnstapError::ContentType(_))),
        "{result:?}"
    );
    assert!(out.is_empty());
    assert!(peer.output.is_empty(), "no ACCEPT");
}

#[test]
fn capture_accept_writes_a_unidirectional_stream() {
    let data = frames_for(1..=4);
    let mut peer = Scripted::new(&[READY, START, &data, STOP]);
    let mut out = Vec::new();
    assert_eq!(capture::accept(&mut peer, &mut out).unwrap(), 4);
    assert_eq!(out, [START, &data, STOP].concat());
    assert_eq!(peer.output, [ACCEPT, FINISH].concat());
}

#[test]
fn sender_and_capture_accept_agree_over_a_socket() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let receiver = thread::spawn(move || {
        let mut out = Vec::new();
        let copied = capture::accept(theirs, &mut out).unwrap();
        (copied, out)
    });
    sender::open(&mut ours).unwrap();
    ours.write_all(&frames_for(1..=5)).unwrap();
    sender::close(&mut ours).unwrap();
    let (copied, out) = receiver.join().unwrap();
    assert_eq!(copied, 5);
    assert_eq!(ids(&read_stream(&out)), [1, 2, 3, 4, 5]);
}

#[test]
fn capture_accept_receives_from_fstrm_replay() {
    let Some(fstrm_replay) = require_tool("fstrm_replay") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A file to replay.
    let source = dir.path().join("source.fstrm");
    let mut file = std::fs::File::create(&source).unwrap();
    file.write_all(&[START, &frames_for(1..=7), STOP].concat())
        .unwrap();
    drop(file);

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
fn write_data_frames_are_what_taps_queue() {
    // A tap's chunk is a run of ordinary data frames.
    let data = frames_for([9]);
    let payload = &data[4..];
    let mut framed = Vec::new();
    write_data(&mut framed, payload).unwrap();
    assert_eq!(framed, data);
}
