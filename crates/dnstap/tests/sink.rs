//! The sink end to end: taps on the query path, the writer, a file or a
//! socket, and the reader.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bulwark_dnstap::schema::{Dnstap, SocketFamily};
use bulwark_dnstap::{
    Destination, KindSet, MessageContext, MessageKind, Protocol, Reader, Sink, SinkConfig,
    Timestamp,
};

/// A query for www.example.com. IN A (id 0x1234, RD).
fn query_wire() -> Vec<u8> {
    let mut wire = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
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

fn config(destination: Destination, kinds: KindSet, capacity: usize) -> SinkConfig {
    SinkConfig {
        destination,
        identity: Some(b"ns1.test".to_vec()),
        version: Some(b"bulwark 0.1.0".to_vec()),
        kinds,
        queue_capacity: capacity,
    }
}

fn file_config(path: &Path) -> SinkConfig {
    config(
        Destination::File {
            path: path.to_path_buf(),
            max_bytes: None,
        },
        KindSet::auth(),
        64,
    )
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

const QUERY_TIME: Timestamp = Timestamp {
    secs: 1_795_000_000,
    nanos: 123_456_000,
};
const RESPONSE_TIME: Timestamp = Timestamp {
    secs: 1_795_000_000,
    nanos: 123_999_000,
};

fn v4_context() -> MessageContext<'static> {
    MessageContext {
        protocol: Protocol::Udp,
        client: SocketAddr::from((Ipv4Addr::new(192, 0, 2, 7), 40000)),
        server: SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), 53)),
        query_time: Some(QUERY_TIME),
        response_time: None,
        query_zone: Some(b"\x07example\x03com\x00"),
    }
}

fn read_all(path: &Path) -> Vec<Dnstap> {
    Reader::open(path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn write_pair(path: &Path) {
    let sink = Sink::start(file_config(path)).unwrap();
    let mut tap = sink.tap();
    let query = query_wire();
    let response = response_wire();
    let ctx = v4_context();
    tap.log(MessageKind::AuthQuery, &ctx, &query);
    tap.flush();
    let ctx = MessageContext {
        response_time: Some(RESPONSE_TIME),
        ..ctx
    };
    tap.log(MessageKind::AuthResponse, &ctx, &response);
    tap.flush();
    sink.stop();
    assert_eq!(sink.stats().sent, 2);
    assert_eq!(sink.stats().dropped, 0);
}

#[test]
fn tap_to_file_to_reader_keeps_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tap.fstrm");
    write_pair(&path);
    let messages = read_all(&path);
    assert_eq!(messages.len(), 2);

    let q = &messages[0];
    assert_eq!(q.identity.as_deref(), Some(&b"ns1.test"[..]));
    assert_eq!(q.version.as_deref(), Some(&b"bulwark 0.1.0"[..]));
    assert_eq!(q.r#type, 1);
    let m = q.message.as_ref().unwrap();
    assert_eq!(m.r#type, 1, "AUTH_QUERY");
    assert_eq!(m.socket_family, Some(SocketFamily::Inet as i32));
    assert_eq!(m.socket_protocol, Some(1), "UDP");
    assert_eq!(m.query_address.as_deref(), Some(&[192, 0, 2, 7][..]));
    assert_eq!(m.query_port, Some(40000));
    assert_eq!(m.response_address.as_deref(), Some(&[127, 0, 0, 1][..]));
    assert_eq!(m.response_port, Some(53));
    assert_eq!(m.query_time_sec, Some(QUERY_TIME.secs));
    assert_eq!(m.query_time_nsec, Some(QUERY_TIME.nanos));
    assert_eq!(m.query_message.as_deref(), Some(query_wire().as_slice()));
    assert_eq!(m.response_message, None);
    assert_eq!(m.response_time_sec, None);
    assert_eq!(
        m.query_zone.as_deref(),
        Some(&b"\x07example\x03com\x00"[..])
    );

    let r = messages[1].message.as_ref().unwrap();
    assert_eq!(r.r#type, 2, "AUTH_RESPONSE");
    assert_eq!(r.query_message, None);
    assert_eq!(
        r.response_message.as_deref(),
        Some(response_wire().as_slice())
    );
    assert_eq!(r.query_time_sec, Some(QUERY_TIME.secs));
    assert_eq!(r.response_time_sec, Some(RESPONSE_TIME.secs));
    assert_eq!(r.response_time_nsec, Some(RESPONSE_TIME.nanos));
}

#[test]
fn ipv4_mapped_addresses_are_reported_as_inet_and_ipv6_as_inet6() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v6.fstrm");
    let sink = Sink::start(file_config(&path)).unwrap();
    let mut tap = sink.tap();
    let mapped = MessageContext {
        client: SocketAddr::V6(SocketAddrV6::new(
            Ipv4Addr::new(192, 0, 2, 9).to_ipv6_mapped(),
            1234,
            0,
            0,
        )),
        server: SocketAddr::V6(SocketAddrV6::new(
            Ipv4Addr::LOCALHOST.to_ipv6_mapped(),
            53,
            0,
            0,
        )),
        ..v4_context()
    };
    tap.log(MessageKind::AuthQuery, &mapped, &query_wire());
    tap.flush();
    let v6 = MessageContext {
        client: SocketAddr::from((Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), 1234)),
        server: SocketAddr::from((Ipv6Addr::LOCALHOST, 53)),
        protocol: Protocol::Tcp,
        ..v4_context()
    };
    tap.log(MessageKind::AuthQuery, &v6, &query_wire());
    tap.flush();
    sink.stop();
    let messages = read_all(&path);
    let m = messages[0].message.as_ref().unwrap();
    assert_eq!(m.socket_family, Some(SocketFamily::Inet as i32));
    assert_eq!(m.query_address.as_deref(), Some(&[192, 0, 2, 9][..]));
    assert_eq!(m.response_address.as_deref(), Some(&[127, 0, 0, 1][..]));
    let m = messages[1].message.as_ref().unwrap();
    assert_eq!(m.socket_family, Some(SocketFamily::Inet6 as i32));
    assert_eq!(m.socket_protocol, Some(2), "TCP");
    assert_eq!(
        m.query_address.as_deref(),
        Some(&Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets()[..])
    );
}

#[test]
fn kinds_outside_the_set_are_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.fstrm");
    let only_responses = KindSet::empty().with(MessageKind::AuthResponse);
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: None,
        },
        only_responses,
        8,
    ))
    .unwrap();
    let mut tap = sink.tap();
    assert!(!tap.wants(MessageKind::AuthQuery));
    assert!(tap.wants(MessageKind::AuthResponse));
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    sink.stop();
    let messages = read_all(&path);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].message.as_ref().unwrap().r#type, 2);
}

#[test]
fn siblings_share_one_queue_and_the_writer_drains_every_tap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.fstrm");
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: None,
        },
        KindSet::auth(),
        4096,
    ))
    .unwrap();
    let first = sink.tap();
    let handles: Vec<_> = [first.sibling(), first.sibling(), sink.tap()]
        .into_iter()
        .map(|mut tap| {
            std::thread::spawn(move || {
                for _ in 0..500 {
                    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
                    tap.flush();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    sink.stop();
    let stats = sink.stats();
    assert_eq!(stats.sent + stats.dropped, 1500);
    assert_eq!(read_all(&path).len() as u64, stats.sent);
}

#[test]
fn dnstap_ldns_reads_our_files() {
    let Some(dnstap_ldns) = bulwark_testkit::require_tool("dnstap-ldns") else {
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
    let out = Command::new(&dnstap_ldns)
        .arg("-y")
        .arg("-r")
        .arg(&path)
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn rotate_closes_the_file_as_path_1_and_starts_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rot.fstrm");
    let old = dir.path().join("rot.fstrm.1");
    let sink = Sink::start(file_config(&path)).unwrap();
    let mut tap = sink.tap();
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    wait_until("the first message written", || sink.stats().sent == 1);
    sink.rotate();
    wait_until("the rotated file", || old.exists());
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    sink.stop();
    let before = read_all(&old);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].message.as_ref().unwrap().r#type, 1);
    // The old file ends with STOP, not just EOF.
    let bytes = std::fs::read(&old).unwrap();
    assert!(bytes.ends_with(b"\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x03"));
    let after = read_all(&path);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].message.as_ref().unwrap().r#type, 2);
}

#[test]
fn max_bytes_rotates_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.fstrm");
    let old = dir.path().join("small.fstrm.1");
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: Some(200),
        },
        KindSet::auth(),
        16,
    ))
    .unwrap();
    let mut tap = sink.tap();
    // Each frame is about 100 bytes: the second one crosses the limit.
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    wait_until("the rotated file", || old.exists());
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    sink.stop();
    assert_eq!(read_all(&old).len(), 2);
    assert_eq!(read_all(&path).len(), 1);
}

#[test]
fn a_bad_file_path_fails_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing-dir").join("x.fstrm");
    assert!(Sink::start(file_config(&path)).is_err());
    let zero = SinkConfig {
        queue_capacity: 0,
        ..file_config(&dir.path().join("y"))
    };
    assert!(Sink::start(zero).is_err());
}

#[test]
fn steady_state_logging_reuses_its_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alloc.fstrm");
    let sink = Sink::start(file_config(&path)).unwrap();
    let mut tap = sink.tap();
    let (query, response) = (query_wire(), response_wire());
    for n in 1..=300u64 {
        let kind = if n % 2 == 0 {
            MessageKind::AuthResponse
        } else {
            MessageKind::AuthQuery
        };
        tap.log(
            kind,
            &v4_context(),
            if kind.query() { &query } else { &response },
        );
        tap.flush();
        wait_until("the writer", || sink.stats().sent == n);
    }
    // One buffer in flight and at most one more while the writer returns the
    // previous one: never one per message.
    assert!(
        tap.buffers_allocated() <= 2,
        "{} buffers",
        tap.buffers_allocated()
    );
    sink.stop();
    assert_eq!(read_all(&path).len(), 300);
}

#[test]
fn stop_is_idempotent_and_later_logs_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stop.fstrm");
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: None,
        },
        KindSet::auth(),
        2,
    ))
    .unwrap();
    let mut tap = sink.tap();
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    sink.stop();
    sink.stop();
    for _ in 0..5 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
        tap.flush();
    }
    let stats = sink.stats();
    assert_eq!(stats.sent, 1);
    assert_eq!(stats.dropped, 5, "never written, so dropped");
    assert_eq!(read_all(&path).len(), 1);
}

#[test]
fn stop_returns_while_taps_keep_logging() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.fstrm");
    let sink = Sink::start(file_config(&path)).unwrap();
    let mut tap = sink.tap();
    let done = Arc::new(AtomicBool::new(false));
    let producer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut logged = 0u64;
            while !done.load(Ordering::Relaxed) {
                tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
                tap.flush();
                logged += 1;
            }
            logged
        })
    };
    wait_until("traffic", || sink.stats().sent > 100);
    sink.stop();
    done.store(true, Ordering::Relaxed);
    let logged = producer.join().unwrap();
    let stats = sink.stats();
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
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: None,
        },
        KindSet::auth(),
        4096,
    ))
    .unwrap();
    let mut tap = sink.tap();
    // Far more than one chunk's worth: full chunks go out without a flush.
    for _ in 0..300 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    wait_until("a full chunk written", || sink.stats().sent > 0);
    let sent_before_flush = sink.stats().sent;
    assert!(sent_before_flush < 300, "the last chunk waits for a flush");
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    wait_until("the flushed chunk", || sink.stats().sent == 301);
    // Dropping a tap queues what it holds.
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    drop(tap);
    sink.stop();
    assert_eq!(sink.stats().sent, 302);
    assert_eq!(sink.stats().dropped, 0);
    let messages = read_all(&path);
    assert_eq!(messages.len(), 302);
    let kinds: Vec<i32> = messages
        .iter()
        .map(|m| m.message.as_ref().unwrap().r#type)
        .collect();
    assert_eq!(kinds[299], 1);
    assert_eq!(kinds[300], 2, "frames stay in the order they were logged");
    assert_eq!(kinds[301], 1);
}

#[test]
fn a_chunk_that_does_not_fit_the_queue_is_dropped_and_every_frame_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.fstrm");
    let sink = Sink::start(config(
        Destination::File {
            path: path.clone(),
            max_bytes: None,
        },
        KindSet::auth(),
        4,
    ))
    .unwrap();
    let mut tap = sink.tap();
    for _ in 0..10 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    tap.flush();
    assert_eq!(sink.stats().dropped, 10, "10 frames over a budget of 4");
    for _ in 0..3 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    tap.flush();
    sink.stop();
    let stats = sink.stats();
    assert_eq!((stats.sent, stats.dropped), (3, 10));
    assert_eq!(read_all(&path).len(), 3);
}

#[test]
fn log_exchange_writes_what_two_logs_write_and_skips_unwanted_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = MessageContext {
        response_time: Some(RESPONSE_TIME),
        ..v4_context()
    };
    let (query, response) = (query_wire(), response_wire());

    let one_by_one = dir.path().join("one-by-one.fstrm");
    let sink = Sink::start(file_config(&one_by_one)).unwrap();
    let mut tap = sink.tap();
    tap.log(MessageKind::AuthQuery, &ctx, &query);
    tap.log(MessageKind::AuthResponse, &ctx, &response);
    tap.flush();
    sink.stop();

    let together = dir.path().join("together.fstrm");
    let sink = Sink::start(file_config(&together)).unwrap();
    let mut tap = sink.tap();
    tap.log_exchange(
        &ctx,
        (MessageKind::AuthQuery, &query),
        Some((MessageKind::AuthResponse, &response)),
    );
    // No response was sent: only the query.
    tap.log_exchange(&ctx, (MessageKind::AuthQuery, &query), None);
    tap.flush();
    sink.stop();
    let written = read_all(&together);
    assert_eq!(written.len(), 3);
    assert_eq!(written[..2], read_all(&one_by_one)[..]);
    assert_eq!(written[2].message.as_ref().unwrap().r#type, 1);

    // Responses only: the query of each exchange is skipped.
    let responses = dir.path().join("responses.fstrm");
    let mut kinds = KindSet::empty();
    kinds.insert(MessageKind::AuthResponse);
    let sink = Sink::start(config(
        Destination::File {
            path: responses.clone(),
            max_bytes: None,
        },
        kinds,
        64,
    ))
    .unwrap();
    let mut tap = sink.tap();
    tap.log_exchange(
        &ctx,
        (MessageKind::AuthQuery, &query),
        Some((MessageKind::AuthResponse, &response)),
    );
    tap.flush();
    sink.stop();
    let written = read_all(&responses);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].message.as_ref().unwrap().r#type, 2);
}
