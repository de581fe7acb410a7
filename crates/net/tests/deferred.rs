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
    shutdown.trigger();
    let _ = workers.join();
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
