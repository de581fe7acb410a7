#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! The TCP limits, each on a real loopback connection: every limit closes the
//! connection, and the close is counted under its reason. Tests wait on what
//! the client can observe (an answer, the close), never on time.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::{bind_tcp, serve_tcp, Shutdown, TcpConfig, TcpStats};
use bulwark_testkit::wire::{self, read_framed};

/// How long a client waits for anything before failing the test.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Short server timeouts so the tests finish quickly.
const SHORT: Duration = Duration::from_millis(200);
/// Server timeouts no test waits out: a close seen is not theirs.
const LONG: Duration = Duration::from_secs(600);

/// `www.example. A` with RD set.
fn query(id: u16) -> Vec<u8> {
    wire::query(id, wire::RD, "www.example.", 1)
}

fn framed(id: u16) -> Vec<u8> {
    wire::framed(&query(id))
}

struct Server {
    addr: SocketAddr,
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
    _rt: tokio::runtime::Runtime,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

fn server(config: TcpConfig) -> Server {
    server_with(config, 1, || common::echo)
}

fn server_with<F, H>(config: TcpConfig, threads: usize, make_handler: F) -> Server
where
    F: Fn() -> H + Send + Sync + 'static,
    H: bulwark_net::QueryHandler + Send + 'static,
{
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap();
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    rt.spawn(async move { serve_tcp(vec![listener], config, make_handler, st, s).await });
    Server {
        addr,
        stats,
        shutdown,
        _rt: rt,
    }
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// A connection from `source` (any 127/8 address is local on Linux).
fn connect_from(source: [u8; 4], server: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect(&server.into()).unwrap();
    let s: TcpStream = socket.into();
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

fn connect(server: SocketAddr) -> TcpStream {
    connect_from([127, 0, 0, 1], server)
}

/// One query and its answer on `s`.
fn exchange(s: &mut TcpStream, id: u16) -> std::io::Result<()> {
    s.write_all(&framed(id))?;
    let r = read_framed(s)?;
    assert_eq!(&r[..2], &id.to_be_bytes());
    Ok(())
}

/// Blocks until the server closes `s` (end of stream or reset); fails the test
/// if the client timeout passes first or data arrives.
fn wait_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("expected a close, got {n} octets"),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            panic!("the server did not close the connection")
        }
        Err(_) => {} // reset: closed too
    }
}

#[test]
fn a_message_dripped_a_byte_at_a_time_is_cut_off_by_the_message_timeout() {
    let srv = server(TcpConfig {
        idle_timeout: Duration::from_secs(30),
        message_timeout: SHORT,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    // Each byte arrives well within the idle timeout, so only the limit on the
    // whole message can end this. The pauses are the attack, not synchronisation.
    let mut dripper = s.try_clone().unwrap();
    let drip = std::thread::spawn(move || {
        let mut wire = vec![0x01, 0x00];
        wire.extend_from_slice(&[0u8; 256]);
        for b in wire {
            if dripper.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    wait_closed(&mut s);
    drop(s);
    drip.join().unwrap();
    assert_eq!(load(&srv.stats.message_timeout), 1);
    assert_eq!(load(&srv.stats.idle), 0);
}

#[test]
fn a_length_prefix_larger_than_the_data_is_cut_off_by_the_message_timeout() {
    let srv = server(TcpConfig {
        idle_timeout: Duration::from_secs(30),
        message_timeout: SHORT,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    s.write_all(&[0x02, 0x00, 1, 2, 3, 4]).unwrap();
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.message_timeout), 1);
}

#[test]
fn the_message_timeout_restarts_with_each_message() {
    let srv = server(TcpConfig {
        message_timeout: SHORT,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    // Queries answered one after another: each is timed from its own first
    // octet, so a connection used for longer than the timeout stays open.
    for id in 0..20 {
        exchange(&mut s, id).unwrap();
    }
    assert_eq!(load(&srv.stats.message_timeout), 0);
}

#[test]
fn an_idle_connection_is_closed_and_counted_as_idle() {
    let srv = server(TcpConfig {
        idle_timeout: SHORT,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    exchange(&mut s, 1).unwrap();
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.idle), 1);
    assert_eq!(load(&srv.stats.message_timeout), 0);
}

#[test]
fn a_connection_is_closed_after_its_query_limit_with_every_answer_sent() {
    let srv = server(TcpConfig {
        max_queries_per_connection: 3,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    let wire: Vec<u8> = (0..3).flat_map(framed).collect();
    s.write_all(&wire).unwrap();
    for id in 0..3u16 {
        assert_eq!(&read_framed(&mut s).unwrap()[..2], &id.to_be_bytes());
    }
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.query_limit), 1);
    assert_eq!(load(&srv.stats.queries), 3);
}

#[test]
fn at_the_per_client_cap_the_longest_idle_connection_makes_room() {
    let srv = server(TcpConfig {
        max_connections_per_client: 2,
        idle_timeout: LONG,
        ..TcpConfig::default()
    });
    let mut held: Vec<TcpStream> = (0..2).map(|_| connect(srv.addr)).collect();
    for (id, s) in (0u16..).zip(held.iter_mut()) {
        exchange(s, id).unwrap();
    }
    // The second one asked last: the first has waited longest.
    let mut third = connect(srv.addr);
    exchange(&mut third, 9).unwrap();
    wait_closed(&mut held[0]);
    assert_eq!(load(&srv.stats.evicted), 1);
    assert_eq!(load(&srv.stats.rejected), 0);
    exchange(&mut held[1], 10).unwrap();

    // Another address is another client: nothing of 127.0.0.1 gives way.
    let mut other = connect_from([127, 0, 0, 2], srv.addr);
    exchange(&mut other, 11).unwrap();
    exchange(&mut held[1], 12).unwrap();
    exchange(&mut third, 13).unwrap();
    assert_eq!(load(&srv.stats.evicted), 1);
}

#[test]
fn connections_stalled_mid_message_make_room_oldest_first() {
    // Timeouts far off, so that only eviction can close the stalled ones.
    let srv = server(TcpConfig {
        max_connections_per_client: 3,
        idle_timeout: LONG,
        message_timeout: LONG,
        ..TcpConfig::default()
    });
    // Three connections that each sent one octet of a length and stalled.
    let mut stalled: Vec<TcpStream> = (0..3).map(|_| connect(srv.addr)).collect();
    for s in &mut stalled {
        s.write_all(&[0]).unwrap();
    }
    // Each fresh connection is answered at once, and the stalled ones close
    // in the order they came.
    // (The fresh ones stay open, so each needs a place of its own.)
    let mut fresh = Vec::new();
    for (i, id) in (0..3).zip(20u16..) {
        let mut s = connect(srv.addr);
        exchange(&mut s, id).unwrap();
        wait_closed(&mut stalled[i]);
        fresh.push(s);
    }
    assert_eq!(load(&srv.stats.evicted), 3);
    assert_eq!(load(&srv.stats.message_timeout), 0);
}

/// Echoes, except that a query with id [`BLOCKING_ID`] is held until the
/// test lets it go: its connection is busy answering for as long as it likes.
#[derive(Clone)]
struct HoldsOne {
    entered: std::sync::mpsc::SyncSender<()>,
    release: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
}

const BLOCKING_ID: u16 = 0xbeef;

impl bulwark_net::QueryHandler for HoldsOne {
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        if query[..2] == BLOCKING_ID.to_be_bytes() {
            self.entered.send(()).unwrap();
            // Blocking a runtime thread outright would also block whatever
            // task sits in its LIFO slot, which no other thread may steal:
            // the accept of the next connection, and the test would hang.
            tokio::task::block_in_place(|| self.release.lock().unwrap().recv().unwrap());
        }
        common::echo(query, peer, local, out)
    }
}

#[test]
fn a_client_whose_every_connection_is_busy_is_refused() {
    let (entered_tx, entered) = std::sync::mpsc::sync_channel(1);
    let (release, release_rx) = std::sync::mpsc::channel();
    let handler = HoldsOne {
        entered: entered_tx,
        release: Arc::new(std::sync::Mutex::new(release_rx)),
    };
    // Room for the held handler's thread and for accepting.
    let srv = server_with(
        TcpConfig {
            max_connections_per_client: 1,
            ..TcpConfig::default()
        },
        3,
        move || handler.clone(),
    );
    let mut busy = connect(srv.addr);
    busy.write_all(&framed(BLOCKING_ID)).unwrap();
    entered.recv_timeout(CLIENT_TIMEOUT).unwrap();
    let mut refused = connect(srv.addr);
    let _ = refused.write_all(&framed(1));
    wait_closed(&mut refused);
    assert_eq!(load(&srv.stats.too_many_for_client), 1);
    assert_eq!(load(&srv.stats.evicted), 0);
    release.send(()).unwrap();
    assert_eq!(
        &read_framed(&mut busy).unwrap()[..2],
        &BLOCKING_ID.to_be_bytes()
    );
    exchange(&mut busy, 2).unwrap();
}

#[test]
fn connections_beyond_the_total_cap_are_closed_and_counted() {
    let srv = server(TcpConfig {
        max_connections: 2,
        max_connections_per_client: 0,
        ..TcpConfig::default()
    });
    let mut held: Vec<TcpStream> = (0..2).map(|_| connect(srv.addr)).collect();
    for (id, s) in (0u16..).zip(held.iter_mut()) {
        exchange(s, id).unwrap();
    }
    let mut third = connect_from([127, 0, 0, 3], srv.addr);
    let _ = third.write_all(&framed(9));
    wait_closed(&mut third);
    assert_eq!(load(&srv.stats.too_many_total), 1);
    assert_eq!(load(&srv.stats.too_many_for_client), 0);
    exchange(&mut held[1], 5).unwrap();
}

#[test]
fn a_length_below_a_header_closes_the_connection_as_bad_length() {
    let srv = server(TcpConfig::default());
    let mut s = connect(srv.addr);
    // One good query, then a length of 5: the answer comes, then the close.
    let mut wire = framed(1);
    wire.extend_from_slice(&[0, 5, 1, 2, 3, 4, 5]);
    s.write_all(&wire).unwrap();
    assert_eq!(&read_framed(&mut s).unwrap()[..2], &1u16.to_be_bytes());
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.bad_length), 1);
}

#[test]
fn a_length_above_the_limit_closes_the_connection_as_bad_length() {
    let srv = server(TcpConfig {
        max_query_size: 512,
        ..TcpConfig::default()
    });
    let mut s = connect(srv.addr);
    s.write_all(&[0x02, 0x01]).unwrap();
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.bad_length), 1);
}

#[test]
fn a_client_closing_its_side_is_counted_as_peer_closed() {
    let srv = server(TcpConfig::default());
    let mut s = connect(srv.addr);
    exchange(&mut s, 1).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    wait_closed(&mut s);
    assert_eq!(load(&srv.stats.peer_closed), 1);
    assert_eq!(load(&srv.stats.accepted), 1);
}

#[test]
fn a_large_pipelined_burst_is_answered_in_order() {
    let srv = server(TcpConfig::default());
    let mut s = connect(srv.addr);
    // More than one read's worth and one write batch's worth of queries.
    let wire: Vec<u8> = (0..2000).flat_map(framed).collect();
    let mut writer = s.try_clone().unwrap();
    let send = std::thread::spawn(move || writer.write_all(&wire).unwrap());
    for id in 0..2000u16 {
        assert_eq!(&read_framed(&mut s).unwrap()[..2], &id.to_be_bytes());
    }
    send.join().unwrap();
}

#[test]
fn a_connection_the_server_closes_gives_its_places_back_before_the_close() {
    let srv = server(TcpConfig {
        idle_timeout: SHORT,
        max_connections: 1,
        max_connections_per_client: 1,
        ..TcpConfig::default()
    });
    for id in 0..3 {
        let mut s = connect(srv.addr);
        exchange(&mut s, id).unwrap();
        wait_closed(&mut s);
    }
    assert_eq!(load(&srv.stats.idle), 3);
    assert_eq!(load(&srv.stats.rejected), 0);
}
