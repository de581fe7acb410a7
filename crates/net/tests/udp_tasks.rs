#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! UDP workers run as tasks on an async runtime (`spawn_tasks`), as a
//! resolver's are: they answer as the threads do, drain bursts longer than
//! a batch, reply later through a deferred job run on the same runtime, and
//! stop on shutdown.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use bulwark_net::{bind_udp, Shutdown, UdpConfig};
use bulwark_testkit::wire;

mod common;

fn runtime() -> tokio::runtime::Runtime {
    // One thread, as a resolver on one core has: the workers, the deferred
    // jobs and everything else share it.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn query(id: u16) -> Vec<u8> {
    wire::query(id, wire::RD, "www.example.", 1)
}

fn client(server: SocketAddr) -> UdpSocket {
    let bind: SocketAddr = if server.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    }
    .parse()
    .unwrap();
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(bind),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )
    .unwrap();
    // Room for a whole burst of replies read only after it is sent: the
    // default (212 KB) holds about 200 small datagrams, and one more is
    // dropped by the kernel, not lost by the server.
    socket.set_recv_buffer_size(4 << 20).unwrap();
    socket.bind(&bind.into()).unwrap();
    let c: UdpSocket = socket.into();
    // A lost datagram must fail the test, not hang it.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

#[test]
fn task_workers_answer_bursts_on_every_address_and_stop_on_shutdown() {
    let rt = runtime();
    let addrs: Vec<SocketAddr> = vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
    // Two workers, each with a socket per address: a worker waits on both.
    let listeners = bind_udp(&addrs, 2).unwrap();
    let bound = listeners.local_addrs().to_vec();
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn_tasks(
            rt.handle(),
            &UdpConfig::default(),
            |_| common::echo,
            &shutdown,
        )
        .unwrap();
    for server in &bound {
        let c = client(*server);
        // More than two batches (64) in flight at once, from one socket (so one
        // worker's queue): the worker must drain past its first batch and
        // wake again for what comes after.
        for id in 0..150u16 {
            c.send_to(&query(id), server).unwrap();
        }
        let mut seen = [false; 150];
        for _ in 0..150 {
            let mut buf = [0u8; 512];
            let (n, from) = c.recv_from(&mut buf).unwrap();
            assert_eq!(from, *server, "reply leaves from the address queried");
            assert_eq!(buf[2] & 0x80, 0x80);
            let id = u16::from_be_bytes([buf[0], buf[1]]);
            assert_eq!(n, query(id).len());
            seen[usize::from(id)] = true;
        }
        assert!(seen.iter().all(|s| *s), "every query got its reply");
    }
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.received, 300);
    assert_eq!(stats.responded, 300);
    // The workers are gone: nothing answers any more.
    let c = client(bound[0]);
    c.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    c.send_to(&query(1), bound[0]).unwrap();
    let mut buf = [0u8; 512];
    assert!(c.recv_from(&mut buf).is_err(), "no answer after shutdown");
}

/// The query with QR set, as the reply a deferred job sends.
fn echoed(query: &[u8]) -> Option<Vec<u8>> {
    let mut reply = query.to_vec();
    if reply.len() < 12 {
        return None;
    }
    reply[2] |= 0x80;
    Some(reply)
}

#[test]
fn task_workers_reply_later_from_jobs_on_their_own_runtime() {
    let rt = runtime();
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let workers = common::spawn_later(&rt, listeners, echoed, &shutdown);
    let c = client(server);
    for id in 0..100u16 {
        c.send_to(&query(id), server).unwrap();
    }
    for _ in 0..100 {
        let mut buf = [0u8; 512];
        let (_, from) = c.recv_from(&mut buf).unwrap();
        assert_eq!(from, server);
        assert_eq!(buf[2] & 0x80, 0x80);
    }
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.received, 100);
    assert_eq!(stats.responded, 100, "deferred replies are counted");
    assert_eq!(stats.dropped, 0);
}

#[test]
fn a_task_worker_survives_a_handler_panic() {
    let rt = runtime();
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let panicky = |q: &[u8], p: SocketAddr, l: SocketAddr, out: &mut Vec<u8>| {
        if q[0] == 0xde {
            panic!("bug in answering");
        }
        common::echo(q, p, l, out)
    };
    let workers = listeners
        .spawn_tasks(rt.handle(), &UdpConfig::default(), |_| panicky, &shutdown)
        .unwrap();
    let c = client(server);
    c.send_to(&query(0xdead), server).unwrap();
    c.send_to(&query(0x0101), server).unwrap();
    let mut buf = [0u8; 512];
    let (_, _) = c.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..2], &[1, 1]);
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.dropped, 1);
}
