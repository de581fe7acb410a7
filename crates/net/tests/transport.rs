#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! The transports with a trivial handler: echo the query with QR set.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::{bind_tcp, bind_udp, serve_tcp, Shutdown, TcpConfig, TcpStats, UdpConfig};
use bulwark_testkit::wire::{self, read_framed};

fn echo(query: &[u8], _peer: SocketAddr, _local: SocketAddr, out: &mut Vec<u8>) -> bool {
    out.clear();
    if query.len() < 12 {
        return false;
    }
    out.extend_from_slice(query);
    out[2] |= 0x80;
    true
}

/// `www.example. A` with RD set.
fn query(id: u16) -> Vec<u8> {
    wire::query(id, wire::RD, "www.example.", 1)
}

fn udp_client(server: SocketAddr) -> UdpSocket {
    let bind: SocketAddr = if server.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    }
    .parse()
    .unwrap();
    let c = UdpSocket::bind(bind).unwrap();
    // A lost datagram must fail the test, not hang it.
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

#[test]
fn udp_workers_answer_each_query_and_stop_on_shutdown() {
    let addrs: Vec<SocketAddr> = vec!["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
    let listeners = bind_udp(&addrs, 3).unwrap();
    let bound = listeners.local_addrs().to_vec();
    assert!(bound.iter().all(|a| a.port() != 0));
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| echo, &shutdown)
        .unwrap();
    for server in &bound {
        let c = udp_client(*server);
        for id in 0..200u16 {
            c.send_to(&query(id), server).unwrap();
            let mut buf = [0u8; 512];
            let (n, from) = c.recv_from(&mut buf).unwrap();
            assert_eq!(from, *server, "reply leaves from the address queried");
            assert_eq!(&buf[..2], &id.to_be_bytes());
            assert_eq!(buf[2] & 0x80, 0x80);
            assert_eq!(n, query(id).len());
        }
    }
    shutdown.trigger();
    // Counters are bumped after a batch is sent: read them once workers are done.
    let stats = workers.join();
    assert_eq!(stats.received, 400);
    assert_eq!(stats.responded, 400);
}

#[test]
fn udp_drops_what_the_handler_declines() {
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| echo, &shutdown)
        .unwrap();
    let c = udp_client(server);
    c.send_to(b"short", server).unwrap();
    c.send_to(&query(7), server).unwrap();
    let mut buf = [0u8; 512];
    let (_, _) = c.recv_from(&mut buf).unwrap();
    assert_eq!(
        &buf[..2],
        &7u16.to_be_bytes(),
        "the short datagram got no reply"
    );
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.dropped, 1);
}

#[test]
fn udp_bind_reports_address_in_use_for_a_taken_port() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let err = bind_udp(&[taken.local_addr().unwrap()], 1).unwrap_err();
    assert!(err.is_addr_in_use(), "{err}");
}

#[test]
fn udp_bind_will_not_join_another_servers_reuseport_group() {
    // Another server holding the port with SO_REUSEPORT, as named and knotd
    // do: a bind of ours with SO_REUSEPORT alone would succeed and split its
    // queries with us.
    let other = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    other.set_reuse_port(true).unwrap();
    other
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let held = other.local_addr().unwrap().as_socket().unwrap();
    let err = bind_udp(&[held], 2).unwrap_err();
    assert!(err.is_addr_in_use(), "{err}");
    // Port 0 gets a port nobody holds, the same for every worker.
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 2).unwrap();
    assert_ne!(listeners.local_addrs()[0].port(), 0);
    assert_ne!(listeners.local_addrs()[0], held);
}

struct TcpServer {
    addr: SocketAddr,
    shutdown: Shutdown,
    stats: Arc<TcpStats>,
    rt: tokio::runtime::Runtime,
}

fn tcp_server(config: TcpConfig) -> TcpServer {
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    rt.spawn(async move { serve_tcp(vec![listener], config, || echo, st, s).await });
    TcpServer {
        addr,
        shutdown,
        stats,
        rt,
    }
}

#[test]
fn tcp_answers_pipelined_queries_in_order_on_one_connection() {
    let server = tcp_server(TcpConfig::default());
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // All queries in one write, some split across segment boundaries.
    let mut all = Vec::new();
    for id in 0..100u16 {
        let q = query(id);
        all.extend_from_slice(&u16::try_from(q.len()).unwrap().to_be_bytes());
        all.extend_from_slice(&q);
    }
    s.write_all(&all).unwrap();
    for id in 0..100u16 {
        let r = read_framed(&mut s).unwrap();
        assert_eq!(&r[..2], &id.to_be_bytes());
        assert_eq!(r[2] & 0x80, 0x80);
    }
    assert_eq!(
        server
            .stats
            .queries
            .load(std::sync::atomic::Ordering::Relaxed),
        100
    );
    server.shutdown.trigger();
    drop(server.rt);
}

#[test]
fn tcp_closes_a_connection_announcing_an_oversized_query() {
    let server = tcp_server(TcpConfig {
        max_query_size: 512,
        ..TcpConfig::default()
    });
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[0x04, 0x00]).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed without a reply");
}

#[test]
fn tcp_closes_idle_connections() {
    let server = tcp_server(TcpConfig {
        idle_timeout: Duration::from_millis(200),
        ..TcpConfig::default()
    });
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 16];
    // Blocks until the server gives up on the silent client.
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
}

#[test]
fn tcp_closes_new_connections_beyond_the_cap() {
    let server = tcp_server(TcpConfig {
        max_connections: 1,
        ..TcpConfig::default()
    });
    let mut first = TcpStream::connect(server.addr).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Make sure the first connection holds its slot before the second arrives.
    let q = query(1);
    first
        .write_all(&u16::try_from(q.len()).unwrap().to_be_bytes())
        .unwrap();
    first.write_all(&q).unwrap();
    read_framed(&mut first).unwrap();
    let mut second = TcpStream::connect(server.addr).unwrap();
    second
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        second.read(&mut buf).unwrap_or(0),
        0,
        "second connection closed at once"
    );
    assert_eq!(
        server
            .stats
            .rejected
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // The first still works.
    first
        .write_all(&u16::try_from(q.len()).unwrap().to_be_bytes())
        .unwrap();
    first.write_all(&q).unwrap();
    assert_eq!(&read_framed(&mut first).unwrap()[..2], &1u16.to_be_bytes());
}

#[test]
fn udp_on_a_wildcard_address_replies_from_the_address_queried() {
    let listeners = bind_udp(&["0.0.0.0:0".parse().unwrap()], 2).unwrap();
    let port = listeners.local_addrs()[0].port();
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| echo, &shutdown)
        .unwrap();
    let c = udp_client("127.0.0.1:1".parse().unwrap());
    // 127.0.0.2 is loopback too, but not the address the kernel would pick as
    // the source of a reply to 127.0.0.1: only IP_PKTINFO gets this right.
    for dst in ["127.0.0.1", "127.0.0.2"] {
        let server: SocketAddr = format!("{dst}:{port}").parse().unwrap();
        c.send_to(&query(9), server).unwrap();
        let mut buf = [0u8; 512];
        let (_, from) = c.recv_from(&mut buf).unwrap();
        assert_eq!(from, server);
    }
    shutdown.trigger();
    let _ = workers.join();
}

#[test]
fn udp_on_the_ipv6_wildcard_replies_from_the_address_queried() {
    let Ok(listeners) = bind_udp(&["[::]:0".parse().unwrap()], 1) else {
        return; // no IPv6 here
    };
    let port = listeners.local_addrs()[0].port();
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| echo, &shutdown)
        .unwrap();
    let server: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let c = udp_client(server);
    c.send_to(&query(9), server).unwrap();
    let mut buf = [0u8; 512];
    let (_, from) = c.recv_from(&mut buf).unwrap();
    assert_eq!(from, server);
    shutdown.trigger();
    let _ = workers.join();
}

#[test]
fn udp_worker_survives_a_handler_panic() {
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let panicky = |q: &[u8], p: SocketAddr, l: SocketAddr, out: &mut Vec<u8>| {
        if q[0] == 0xde {
            panic!("bug in answering");
        }
        echo(q, p, l, out)
    };
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| panicky, &shutdown)
        .unwrap();
    let c = udp_client(server);
    c.send_to(&query(0xdead), server).unwrap();
    c.send_to(&query(0x0101), server).unwrap();
    let mut buf = [0u8; 512];
    let (_, _) = c.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..2], &[1, 1]);
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.dropped, 1);
}

/// Echoes, marking in the fourth octet whether the query was announced to
/// `start_of_batch` before being handled (1) or not (2).
#[derive(Default)]
struct Announced {
    batch: Vec<Vec<u8>>,
}

impl bulwark_net::QueryHandler for Announced {
    fn start_of_batch(&mut self, batch: &dyn bulwark_net::Batch) {
        self.batch = (0..batch.len())
            .filter_map(|i| batch.query(i))
            .map(<[u8]>::to_vec)
            .collect();
    }

    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        let announced = self.batch.iter().any(|q| q == query);
        let answered = echo(query, peer, local, out);
        out[3] = if announced { 1 } else { 2 };
        answered
    }
}

#[test]
fn udp_announces_each_batch_before_answering_it() {
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(&UdpConfig::default(), |_| Announced::default(), &shutdown)
        .unwrap();
    let c = udp_client(server);
    // A burst, so that batches hold several queries, then one at a time.
    for id in 0..64u16 {
        c.send_to(&query(id), server).unwrap();
    }
    let mut seen = 0;
    let mut buf = [0u8; 512];
    while seen < 64 {
        c.recv_from(&mut buf).unwrap();
        assert_eq!(buf[3], 1, "query {:?} answered unannounced", &buf[..2]);
        seen += 1;
    }
    for id in 0..8u16 {
        c.send_to(&query(id), server).unwrap();
        c.recv_from(&mut buf).unwrap();
        assert_eq!(buf[3], 1);
    }
    shutdown.trigger();
    workers.join();
}

/// Echoes, and hands the count of queries it answered to `ended` only at
/// the end of each batch, slowly: a client that sees a count short of its
/// answers got them before the batch ended.
struct CountsAtBatchEnd {
    answered: u64,
    ended: Arc<std::sync::atomic::AtomicU64>,
}

impl bulwark_net::QueryHandler for CountsAtBatchEnd {
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        self.answered += 1;
        echo(query, peer, local, out)
    }

    fn end_of_batch(&mut self) {
        // Slow on purpose: were the answers sent first, the client would
        // read the count long before this stores it.
        std::thread::sleep(Duration::from_millis(20));
        self.ended
            .store(self.answered, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn udp_ends_each_batch_before_sending_its_answers() {
    let listeners = bind_udp(&["127.0.0.1:0".parse().unwrap()], 1).unwrap();
    let server = listeners.local_addrs()[0];
    let shutdown = Shutdown::new().unwrap();
    let ended = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let handler_ended = Arc::clone(&ended);
    let workers = listeners
        .spawn(
            &UdpConfig::default(),
            move |_| CountsAtBatchEnd {
                answered: 0,
                ended: Arc::clone(&handler_ended),
            },
            &shutdown,
        )
        .unwrap();
    let c = udp_client(server);
    let mut buf = [0u8; 512];
    for id in 1..=5u16 {
        c.send_to(&query(id), server).unwrap();
        c.recv_from(&mut buf).unwrap();
        assert_eq!(
            ended.load(std::sync::atomic::Ordering::SeqCst),
            u64::from(id),
            "answer {id} arrived before its batch ended"
        );
    }
    shutdown.trigger();
    workers.join();
}
