#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! UDP answers leave whole or not at all (RFC 9715 §3.1): an answer larger
//! than the link carries unfragmented goes again cut to the question with
//! TC, so the client asks over TCP, whether it was answered in its batch or
//! later (a resolver's answers). A server configured for answers larger
//! than a link carries lets the kernel fragment them at the interface's MTU.
//!
//! Each test runs in a private network namespace whose `lo` has an MTU of
//! 1,280: there a 2,000-octet answer does not fit a datagram, and the
//! kernel, left to its default, would fragment it and the client would get
//! it whole. Outside CI, where namespaces are not allowed, the tests skip;
//! under CI=true they fail.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use bulwark_net::{bind_udp, Fragmentation, Shutdown, UdpConfig};
use bulwark_testkit::{netns, wire};

mod common;

const TXT: u16 = 16;
const A: u16 = 1;
/// The namespace's link: IPv6's minimum.
const MTU: u32 = 1280;
/// Eight character-strings of 255 octets, each with its length octet.
const BIG_RDATA: usize = 8 * 256;

/// The answer to `query`: for TXT, one record of `BIG_RDATA` octets and an
/// OPT record; for anything else, the query echoed with QR set.
fn answer(query: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if query.len() < 12 {
        return false;
    }
    let qtype = u16::from_be_bytes([query[query.len() - 4], query[query.len() - 3]]);
    if qtype != TXT {
        out.extend_from_slice(query);
        out[2] |= 0x80;
        return true;
    }
    out.extend_from_slice(&query[..2]);
    // QR AA; one question, one answer, no authority, one additional (OPT).
    out.extend_from_slice(&[0x84, 0x00, 0, 1, 0, 1, 0, 0, 0, 1]);
    out.extend_from_slice(&query[12..]);
    let rdlen = u16::try_from(BIG_RDATA).unwrap();
    out.extend_from_slice(&[0xc0, 12, 0, 16, 0, 1, 0, 0, 1, 44]);
    out.extend_from_slice(&rdlen.to_be_bytes());
    for _ in 0..8 {
        out.push(255);
        out.extend_from_slice(&[b'x'; 255]);
    }
    // OPT: root owner, payload 1232, no flags, no options.
    out.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    true
}

fn direct(query: &[u8], _peer: SocketAddr, _local: SocketAddr, out: &mut Vec<u8>) -> bool {
    answer(query, out)
}

fn client() -> UdpSocket {
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A lost datagram must fail the test, not hang it.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

/// Every reply to the queries sent, by ID.
fn replies(c: &UdpSocket, server: SocketAddr, queries: &[Vec<u8>]) -> Vec<(u16, Vec<u8>)> {
    for q in queries {
        c.send_to(q, server).unwrap();
    }
    let mut got = Vec::new();
    for _ in queries {
        let mut buf = vec![0u8; 65536];
        let (n, from) = c.recv_from(&mut buf).unwrap();
        assert_eq!(from, server);
        buf.truncate(n);
        got.push((u16::from_be_bytes([buf[0], buf[1]]), buf));
    }
    got.sort_by_key(|(id, _)| *id);
    got
}

/// The truncated form of the big answer to `query`: its header with TC,
/// the question and the OPT record, nothing else.
fn assert_truncated(reply: &[u8], query: &[u8]) {
    assert_eq!(&reply[..2], &query[..2], "the query's ID");
    assert_eq!(reply[2] & 0x82, 0x82, "QR and TC set");
    assert_eq!(
        &reply[4..12],
        &[0, 1, 0, 0, 0, 0, 0, 1],
        "the question and OPT only"
    );
    assert_eq!(&reply[12..query.len()], &query[12..], "the question kept");
    assert_eq!(reply.len(), query.len() + 11, "header, question, OPT");
    assert_eq!(
        &reply[query.len()..query.len() + 3],
        &[0, 0, 41],
        "OPT kept"
    );
}

/// Runs `test` in a private namespace whose `lo` has an MTU of `MTU`.
fn in_small_link(test: impl FnOnce() + Send) {
    netns::isolated_or_skip(|| -> Result<(), String> {
        netns::set_loopback_mtu(MTU).map_err(|e| e.to_string())?;
        test();
        Ok(())
    });
}

#[test]
fn an_answer_too_big_for_the_link_goes_again_truncated_and_the_rest_of_its_batch_whole() {
    in_small_link(|| {
        let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
        let server = listeners.local_addrs()[0];
        let shutdown = Shutdown::new().unwrap();
        let workers = listeners
            .spawn(&UdpConfig::default(), |_| direct, &shutdown)
            .unwrap();
        let queries = [
            wire::query(1, wire::RD, "a.example.", A),
            wire::query(2, wire::RD, "big.example.", TXT),
            wire::query(3, wire::RD, "c.example.", A),
        ];
        let got = replies(&client(), server, &queries);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].1.len(), queries[0].len(), "the small answers whole");
        assert_eq!(got[2].1.len(), queries[2].len());
        assert_truncated(&got[1].1, &queries[1]);
        let stats = workers.join();
        assert_eq!(stats.responded, 3);
        assert_eq!(stats.truncated, 1);
        assert_eq!(stats.send_errors, 0);
    });
}

#[test]
fn a_server_configured_for_large_answers_has_them_fragmented_at_the_interface() {
    in_small_link(|| {
        let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
        listeners
            .set_fragmentation(Fragmentation::for_max_payload(4096))
            .unwrap();
        let server = listeners.local_addrs()[0];
        let shutdown = Shutdown::new().unwrap();
        let workers = listeners
            .spawn(&UdpConfig::default(), |_| direct, &shutdown)
            .unwrap();
        let query = wire::query(7, wire::RD, "big.example.", TXT);
        let got = replies(&client(), server, std::slice::from_ref(&query));
        let reply = &got[0].1;
        assert_eq!(reply[2] & 0x02, 0, "no TC: the answer arrived whole");
        assert!(reply.len() > BIG_RDATA, "{} octets", reply.len());
        let stats = workers.join();
        assert_eq!(stats.truncated, 0);
    });
}

/// The answer a deferred job sends.
fn answered(query: &[u8]) -> Option<Vec<u8>> {
    let mut reply = Vec::new();
    answer(query, &mut reply).then_some(reply)
}

#[test]
fn a_deferred_answer_too_big_for_the_link_goes_again_truncated() {
    in_small_link(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
        let server = listeners.local_addrs()[0];
        let shutdown = Shutdown::new().unwrap();
        let workers = common::spawn_later(&rt, listeners, answered, &shutdown);
        let query = wire::query(9, wire::RD, "big.example.", TXT);
        let got = replies(&client(), server, std::slice::from_ref(&query));
        assert_truncated(&got[0].1, &query);
        let stats = workers.join();
        assert_eq!(stats.truncated, 1);
        assert_eq!(stats.responded, 1);
    });
}
