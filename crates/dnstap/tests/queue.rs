//! The queues and the codec end to end: taps on the query path, a drain
//! emptied by a test-side writer (bulwark's writer thread does the same with a
//! file or a socket, and is tested there), and the reader.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::process::Command;

use bulwark_dnstap::schema::{Dnstap, SocketFamily};
use bulwark_dnstap::{KindSet, MessageContext, MessageKind, Protocol, Sink, SinkConfig, Timestamp};
use support::TestWriter;

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

fn config(kinds: KindSet, capacity: usize) -> SinkConfig {
    SinkConfig {
        identity: Some(b"ns1.test".to_vec()),
        version: Some(b"bulwark 0.1.0".to_vec()),
        kinds,
        queue_capacity: capacity,
    }
}

fn writer() -> TestWriter {
    TestWriter::new(&config(KindSet::auth(), 64))
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

fn kinds(messages: &[Dnstap]) -> Vec<i32> {
    messages
        .iter()
        .map(|m| m.message.as_ref().unwrap().r#type)
        .collect()
}

fn write_pair() -> TestWriter {
    let mut w = writer();
    let mut tap = w.tap();
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
    w.stop();
    assert_eq!(w.sink.stats().sent, 2);
    assert_eq!(w.sink.stats().dropped, 0);
    w
}

#[test]
fn tap_to_stream_to_reader_keeps_every_field() {
    let messages = write_pair().messages();
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
    let mut w = writer();
    let mut tap = w.tap();
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
    w.stop();
    let messages = w.messages();
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
    let only_responses = KindSet::empty().with(MessageKind::AuthResponse);
    let mut w = TestWriter::new(&config(only_responses, 8));
    let mut tap = w.tap();
    assert!(!tap.wants(MessageKind::AuthQuery));
    assert!(tap.wants(MessageKind::AuthResponse));
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    w.stop();
    assert_eq!(kinds(&w.messages()), [2]);
}

#[test]
fn siblings_share_one_queue_and_the_drain_empties_every_tap() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 4096));
    let first = w.tap();
    let handles: Vec<_> = [first.sibling(), first.sibling(), w.tap()]
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
    w.stop();
    let stats = w.sink.stats();
    assert_eq!(stats.sent + stats.dropped, 1500);
    assert_eq!(w.messages().len() as u64, stats.sent);
}

#[test]
fn dnstap_ldns_reads_our_streams() {
    let Some(dnstap_ldns) = bulwark_testkit::require_tool("dnstap-ldns") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ldns.fstrm");
    write_pair().write_file(&path);
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
fn a_zero_capacity_is_refused() {
    assert!(Sink::new(&config(KindSet::auth(), 0)).is_err());
}

#[test]
fn steady_state_logging_reuses_its_buffers() {
    let mut w = writer();
    let mut tap = w.tap();
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
        w.drain_all();
        assert_eq!(w.sink.stats().sent, n);
    }
    // The drain hands each buffer back to the pool: one buffer in all.
    assert_eq!(tap.buffers_allocated(), 1);
    w.stop();
    assert_eq!(w.messages().len(), 300);
}

#[test]
fn after_the_drain_is_finished_later_logs_are_dropped() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 2));
    let mut tap = w.tap();
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    w.stop();
    for _ in 0..5 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
        tap.flush();
    }
    let stats = w.sink.stats();
    assert_eq!(stats.sent, 1);
    assert_eq!(stats.dropped, 5, "never written, so dropped");
    assert_eq!(w.messages().len(), 1);
}

#[test]
fn drain_for_stop_writes_what_is_queued_and_no_more() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 64));
    let mut tap = w.tap();
    for _ in 0..3 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
        tap.flush();
    }
    w.stop();
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    let stats = w.sink.stats();
    assert_eq!((stats.sent, stats.dropped), (3, 1));
    assert_eq!(kinds(&w.messages()), [1, 1, 1]);
}

#[test]
fn chunks_the_output_refuses_count_as_dropped() {
    let mut w = writer();
    let mut tap = w.tap();
    w.output_up = false;
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    tap.flush();
    assert_eq!(w.drain_all(), 1, "one chunk of two frames");
    w.output_up = true;
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    w.drain_all();
    let stats = w.sink.stats();
    assert_eq!((stats.sent, stats.dropped), (1, 2));
    assert_eq!(kinds(&w.messages()), [2]);
}

#[test]
fn a_tap_queues_its_chunk_when_full_on_flush_and_on_drop() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 4096));
    let mut tap = w.tap();
    // Far more than one chunk's worth: full chunks go out without a flush.
    for _ in 0..300 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    assert!(w.drain_all() > 0, "full chunks are queued");
    let sent_before_flush = w.sink.stats().sent;
    assert!(sent_before_flush > 0);
    assert!(sent_before_flush < 300, "the last chunk waits for a flush");
    tap.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    tap.flush();
    w.drain_all();
    assert_eq!(w.sink.stats().sent, 301);
    // Dropping a tap queues what it holds.
    tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    drop(tap);
    w.stop();
    assert_eq!(w.sink.stats().sent, 302);
    assert_eq!(w.sink.stats().dropped, 0);
    let kinds = kinds(&w.messages());
    assert_eq!(kinds.len(), 302);
    assert_eq!(kinds[299], 1);
    assert_eq!(kinds[300], 2, "frames stay in the order they were logged");
    assert_eq!(kinds[301], 1);
}

#[test]
fn a_chunk_that_does_not_fit_the_queue_is_dropped_and_every_frame_counted() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 4));
    let mut tap = w.tap();
    for _ in 0..10 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    tap.flush();
    assert_eq!(w.sink.stats().dropped, 10, "10 frames over a budget of 4");
    for _ in 0..3 {
        tap.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    tap.flush();
    w.stop();
    let stats = w.sink.stats();
    assert_eq!((stats.sent, stats.dropped), (3, 10));
    assert_eq!(w.messages().len(), 3);
}

#[test]
fn a_round_takes_a_few_chunks_from_each_queue_in_turn() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 4096));
    let (mut busy, mut quiet) = (w.tap(), w.tap());
    for _ in 0..20 {
        busy.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
        busy.flush();
    }
    quiet.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    quiet.flush();
    // At most 8 chunks from the busy queue, then the quiet one's turn.
    assert_eq!(w.drain_round(), 9);
    assert!(
        kinds(&w.messages()).contains(&2),
        "the quiet tap is not starved"
    );
    w.drain_all();
    assert_eq!(w.sink.stats().sent, 21);
}

#[test]
fn sweeping_forgets_a_dropped_taps_queue_and_keeps_its_drops() {
    let mut w = TestWriter::new(&config(KindSet::auth(), 2));
    let mut kept = w.tap();
    let mut gone = w.tap();
    for _ in 0..5 {
        gone.log(MessageKind::AuthQuery, &v4_context(), &query_wire());
    }
    gone.flush();
    drop(gone);
    assert_eq!(w.sink.stats().dropped, 5);
    w.drain_all();
    w.sweep();
    assert_eq!(w.sink.stats().dropped, 5, "its drops are still counted");
    // The queue still in use is kept.
    kept.log(MessageKind::AuthResponse, &v4_context(), &response_wire());
    kept.flush();
    w.drain_all();
    w.sweep();
    let stats = w.sink.stats();
    assert_eq!((stats.sent, stats.dropped), (1, 5));
}

#[test]
fn reconnects_are_counted_by_the_drain() {
    let (sink, drain) = Sink::new(&config(KindSet::auth(), 8)).unwrap();
    drain.count_reconnect();
    drain.count_reconnect();
    assert_eq!(sink.stats().reconnects, 2);
}

#[test]
fn log_exchange_writes_what_two_logs_write_and_skips_unwanted_kinds() {
    let ctx = MessageContext {
        response_time: Some(RESPONSE_TIME),
        ..v4_context()
    };
    let (query, response) = (query_wire(), response_wire());

    let mut one_by_one = writer();
    let mut tap = one_by_one.tap();
    tap.log(MessageKind::AuthQuery, &ctx, &query);
    tap.log(MessageKind::AuthResponse, &ctx, &response);
    tap.flush();
    one_by_one.stop();

    let mut together = writer();
    let mut tap = together.tap();
    tap.log_exchange(
        &ctx,
        (MessageKind::AuthQuery, &query),
        Some((MessageKind::AuthResponse, &response)),
    );
    // No response was sent: only the query.
    tap.log_exchange(&ctx, (MessageKind::AuthQuery, &query), None);
    tap.flush();
    together.stop();
    let written = together.messages();
    assert_eq!(written.len(), 3);
    assert_eq!(written[..2], one_by_one.messages()[..]);
    assert_eq!(written[2].message.as_ref().unwrap().r#type, 1);

    // Responses only: the query of each exchange is skipped.
    let mut kinds_set = KindSet::empty();
    kinds_set.insert(MessageKind::AuthResponse);
    let mut responses = TestWriter::new(&config(kinds_set, 64));
    let mut tap = responses.tap();
    tap.log_exchange(
        &ctx,
        (MessageKind::AuthQuery, &query),
        Some((MessageKind::AuthResponse, &response)),
    );
    tap.flush();
    responses.stop();
    assert_eq!(kinds(&responses.messages()), [2]);
}
