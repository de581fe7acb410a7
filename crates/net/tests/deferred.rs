#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Responses a handler finishes later: one datagram from the queried address
//! over UDP, a run of messages before the next response over TCP.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::{
    bind_tcp, bind_udp, serve_tcp, Deferred, QueryHandler, Shutdown, TcpConfig, TcpStats, UdpConfig,
};
use bulwark_testkit::wire::{self, read_framed};

/// Echoes queries whose first ID octet is not 0xdf at once; for 0xdf it
/// defers, and a thread later sends `count` copies (the last ID octet set to
/// 0, 1, 2...), as a transfer would send its messages.
#[derive(Default)]
struct LaterHandler {
    pending: Option<Vec<u8>>,
}

const COUNT: u8 = 5;

impl QueryHandler for LaterHandler {
    fn handle(
        &mut self,
        query: &[u8],
        _peer: SocketAddr,
        _local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        out.clear();
        if query.len() < 12 {
            return false;
        }
        if query[0] == 0xdf {
            self.pending = Some(query.to_vec());
            return false;
        }
        out.extend_from_slice(query);
        out[2] |= 0x80;
        true
    }

    fn take_deferred(&mut self) -> Option<Deferred> {
        let query = self.pending.take()?;
        Some(Box::new(move |responder| {
            std::thread::spawn(move || {
                let count = if responder.is_stream() { COUNT } else { 1 };
                for i in 0..count {
                    let mut msg = query.clone();
                    msg[2] |= 0x80;
                    msg[1] = i;
                    if responder.send_blocking(msg).is_err() {
                        return;
                    }
                }
            });
        }))
    }
}

/// `www.example. A` with RD set.
fn query(id: u16) -> Vec<u8> {
    wire::query(id, wire::RD, "www.example.", 1)
}

#[test]
fn a_deferred_udp_reply_leaves_from_the_address_queried() {
    let listeners = bind_udp(&["0.0.0.0:0".parse().unwrap()], 1).unwrap();
    let port = listeners.local_addrs()[0].port();
    let shutdown = Shutdown::new().unwrap();
    let workers = listeners
        .spawn(
            &UdpConfig::default(),
            |_| LaterHandler::default(),
            &shutdown,
        )
        .unwrap();
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // 127.0.0.2 is not the source the kernel would choose for a reply.
    let server: SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    c.send_to(&query(0xdf00), server).unwrap();
    let mut buf = [0u8; 512];
    let (n, from) = c.recv_from(&mut buf).unwrap();
    assert_eq!(from, server);
    assert_eq!(&buf[..2], &[0xdf, 0]);
    assert_eq!(buf[2] & 0x80, 0x80);
    assert_eq!(n, query(0).len());
    // The worker went on answering while the reply was pending.
    c.send_to(&query(0x0102), server).unwrap();
    let (_, _) = c.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..2], &[1, 2]);
    // The deferred reply counts as a response, not a drop: the replying
    // thread counts it just after its send, so wait for that.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while workers.stats().responded < 2 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    shutdown.trigger();
    let stats = workers.join();
    assert_eq!(stats.received, 2);
    assert_eq!(stats.responded, 2);
    assert_eq!(stats.dropped, 0);
}

#[test]
fn deferred_tcp_messages_come_in_order_before_the_next_response() {
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let s = shutdown.clone();
    rt.spawn(async move {
        serve_tcp(
            vec![listener],
            TcpConfig::default(),
            LaterHandler::default,
            Arc::new(TcpStats::default()),
            s,
        )
        .await
    });
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Pipelined: an ordinary query, one answered later, another ordinary one.
    let mut bytes = Vec::new();
    for id in [0x0001u16, 0xdf00, 0x0002] {
        let q = query(id);
        bytes.extend_from_slice(&u16::try_from(q.len()).unwrap().to_be_bytes());
        bytes.extend_from_slice(&q);
    }
    c.write_all(&bytes).unwrap();
    let ids: Vec<[u8; 2]> = (0..usize::from(COUNT) + 2)
        .map(|_| {
            let m = read_framed(&mut c).unwrap();
            [m[0], m[1]]
        })
        .collect();
    let mut want = vec![[0, 1]];
    want.extend((0..COUNT).map(|i| [0xdf, i]));
    want.push([0, 2]);
    assert_eq!(ids, want);
    shutdown.trigger();
}

/// Echoes queries at once, except those whose first ID octet is 0xee: their
/// echo is a deferred reply, sent by a thread once `gate` opens.
struct ReplyHandler {
    gate: Arc<Gate>,
    pending: Option<Vec<u8>>,
}

#[derive(Default)]
struct Gate {
    open: std::sync::Mutex<bool>,
    changed: std::sync::Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }
}

impl QueryHandler for ReplyHandler {
    fn handle(
        &mut self,
        query: &[u8],
        _peer: SocketAddr,
        _local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        out.clear();
        if query.len() < 12 {
            return false;
        }
        if query[0] == 0xee {
            self.pending = Some(query.to_vec());
            return false;
        }
        out.extend_from_slice(query);
        out[2] |= 0x80;
        true
    }

    fn take_deferred_reply(&mut self) -> Option<Deferred> {
        let mut msg = self.pending.take()?;
        msg[2] |= 0x80;
        let gate = Arc::clone(&self.gate);
        Some(Box::new(move |responder| {
            std::thread::spawn(move || {
                gate.wait();
                let _ = responder.send_blocking(msg);
            });
        }))
    }
}

fn reply_server(gate: &Arc<Gate>) -> (SocketAddr, Shutdown, tokio::runtime::Runtime) {
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (s, g) = (shutdown.clone(), Arc::clone(gate));
    rt.spawn(async move {
        serve_tcp(
            vec![listener],
            TcpConfig::default(),
            move || ReplyHandler {
                gate: Arc::clone(&g),
                pending: None,
            },
            Arc::new(TcpStats::default()),
            s,
        )
        .await
    });
    (addr, shutdown, rt)
}

fn framed_queries(ids: &[u16]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for id in ids {
        bytes.extend_from_slice(&wire::framed(&query(*id)));
    }
    bytes
}

/// RFC 7766 §6.2.1.1: a resolution in progress does not hold up the
/// connection; the queries after it are answered first.
#[test]
fn deferred_tcp_replies_are_overtaken_by_later_answers() {
    let gate = Arc::new(Gate::default());
    let (addr, shutdown, _rt) = reply_server(&gate);
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&framed_queries(&[0xee01, 0x0003])).unwrap();
    let first = read_framed(&mut c).unwrap();
    assert_eq!(
        &first[..2],
        &[0, 3],
        "the later query was not answered first"
    );
    // Another round on the same connection while the reply still waits.
    c.write_all(&framed_queries(&[0x0004])).unwrap();
    assert_eq!(&read_framed(&mut c).unwrap()[..2], &[0, 4]);
    gate.open();
    let reply = read_framed(&mut c).unwrap();
    assert_eq!(&reply[..2], &[0xee, 1]);
    assert_eq!(reply[2] & 0x80, 0x80);
    shutdown.trigger();
}

/// A client that sends its queries and closes its side still gets the
/// replies it waits for before the connection closes.
#[test]
fn deferred_tcp_replies_are_sent_after_the_client_half_closes() {
    let gate = Arc::new(Gate::default());
    let (addr, shutdown, _rt) = reply_server(&gate);
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&framed_queries(&[0xee02, 0x0005])).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(&read_framed(&mut c).unwrap()[..2], &[0, 5]);
    gate.open();
    assert_eq!(&read_framed(&mut c).unwrap()[..2], &[0xee, 2]);
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut rest).unwrap();
    assert!(rest.is_empty(), "nothing after the reply, then the close");
    shutdown.trigger();
}
