//! The AF_XDP path on a veth link between two network namespaces the test
//! makes: queries to the DNS port over IPv4 and IPv6 are answered by the
//! XDP workers (not the kernel's socket), everything else (other ports, TCP,
//! fragments) still reaches the kernel, deferred replies go out through the
//! worker, and a reply larger than the link's MTU is cut to TC.
//!
//! Needs root (namespaces, BPF) and iproute2; outside CI a machine without
//! them skips, under CI=true it fails.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use bulwark_net::xdp::{AttachMode, CopyMode};
use bulwark_net::{bind_xdp, QueryHandler, Responder, Shutdown, XdpConfig, XdpStats, XdpWorkers};
use bulwark_testkit::netns::{self, LinkEnd, Namespace};

const SERVER_V4: &str = "10.53.0.1";
const CLIENT_V4: &str = "10.53.0.2";
const SERVER_V6: &str = "fd53::1";
const CLIENT_V6: &str = "fd53::2";
/// The link's MTU: a 1500-octet Ethernet.
const MTU: usize = 1500;

/// Runs `test` with an XDP path serving `handler` on `xa` (this side),
/// and the namespace at the other end of the link (`xb`). Skips (outside
/// CI) where namespaces or BPF are not allowed.
fn with_link<H, F>(handler: impl Fn() -> H + Send + Sync, test: F)
where
    H: QueryHandler + Send + 'static,
    F: FnOnce(&Namespace, &XdpWorkers) + Send,
{
    netns::isolated_or_skip(|| -> Result<(), String> {
        let far = Namespace::new().map_err(|e| e.to_string())?;
        netns::veth(
            LinkEnd {
                name: "xa",
                addresses: &["10.53.0.1/24", "fd53::1/64"],
            },
            &far,
            LinkEnd {
                name: "xb",
                addresses: &["10.53.0.2/24", "fd53::2/64"],
            },
        )
        .map_err(|e| e.to_string())?;
        let bound = bind_xdp(&XdpConfig {
            interface: "xa".into(),
            queues: None,
            port: 53,
            attach: AttachMode::Auto,
            copy: CopyMode::Auto,
        })
        .map_err(|e| e.to_string())?;
        let shutdown = Shutdown::new().unwrap();
        let workers = bound.spawn(|_| handler(), &shutdown).unwrap();
        test(&far, &workers);
        workers.join();
        Ok(())
    });
}

/// Runs `f` on a thread in `ns`.
fn over_there<T: Send>(ns: &Namespace, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            ns.enter().unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

/// The workers' counters once `settled` holds of them, or after 5 s: a
/// worker adds up a round's counts after sending its replies, so a client
/// can hold an answer before it is counted.
fn stats_once(workers: &XdpWorkers, settled: impl Fn(&XdpStats) -> bool) -> XdpStats {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let s = workers.stats();
        if settled(&s) || std::time::Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ask(client: &UdpSocket, server: SocketAddr, query: &[u8]) -> Vec<u8> {
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.send_to(query, server).unwrap();
    let mut buf = vec![0u8; 65536];
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert_eq!(from, server, "the reply comes from the queried address");
    buf.truncate(n);
    buf
}

#[test]
fn queries_to_the_dns_port_are_answered_by_the_xdp_workers_over_v4_and_v6() {
    with_link(
        || common::echo,
        |far, workers| {
            // A kernel socket on the same address and port: it must see
            // nothing while the program takes the port.
            let kernel = UdpSocket::bind((SERVER_V4, 53)).unwrap();
            kernel.set_nonblocking(true).unwrap();
            over_there(far, || {
                for (client, server) in [
                    (format!("{CLIENT_V4}:0"), format!("{SERVER_V4}:53")),
                    (format!("[{CLIENT_V6}]:0"), format!("[{SERVER_V6}]:53")),
                ] {
                    let socket = UdpSocket::bind(client.as_str()).unwrap();
                    let server: SocketAddr = server.parse().unwrap();
                    for i in 0..20u16 {
                        let q = bulwark_testkit::wire::query(i, 0x0100, "example.", 1);
                        let a = ask(&socket, server, &q);
                        let mut want = q.clone();
                        want[2] |= 0x80;
                        assert_eq!(a, want);
                    }
                }
            });
            let mut buf = [0u8; 512];
            assert!(
                kernel.recv_from(&mut buf).is_err(),
                "the kernel saw a query"
            );
            let s = stats_once(workers, |s| s.responded >= 40);
            assert_eq!((s.received, s.responded), (40, 40), "{s:?}");
            assert_eq!(s.unreadable, 0);
            assert!(workers.info().native, "veth runs XDP in its driver");
        },
    );
}

#[test]
fn other_ports_tcp_and_fragments_still_reach_the_kernel() {
    with_link(
        || common::echo,
        |far, workers| {
            let other = UdpSocket::bind((SERVER_V4, 5353)).unwrap();
            let tcp = TcpListener::bind((SERVER_V4, 53)).unwrap();
            let kernel53 = UdpSocket::bind((SERVER_V4, 53)).unwrap();
            kernel53
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let server53: SocketAddr = format!("{SERVER_V4}:53").parse().unwrap();
            over_there(far, || {
                let socket = UdpSocket::bind(format!("{CLIENT_V4}:0")).unwrap();
                socket
                    .send_to(b"other port", format!("{SERVER_V4}:5353"))
                    .unwrap();
                let mut conn = TcpStream::connect(server53).unwrap();
                conn.write_all(b"tcp").unwrap();
                // Larger than the MTU: sent as fragments, which the
                // program passes on; the kernel reassembles them.
                socket.send_to(&[7u8; 3000], server53).unwrap();
            });
            let mut buf = vec![0u8; 4096];
            let (n, _) = other.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"other port");
            let (mut accepted, _) = tcp.accept().unwrap();
            let mut got = [0u8; 3];
            std::io::Read::read_exact(&mut accepted, &mut got).unwrap();
            assert_eq!(&got, b"tcp");
            let (n, _) = kernel53.recv_from(&mut buf).unwrap();
            assert_eq!(
                n, 3000,
                "the fragmented datagram, reassembled by the kernel"
            );
            let s = workers.stats();
            assert_eq!((s.received, s.unreadable), (0, 0), "{s:?}");
        },
    );
}

/// Defers every query; a job thread answers later through the responder.
struct Deferring {
    job: Option<bulwark_net::Deferred>,
}

impl QueryHandler for Deferring {
    fn handle(&mut self, query: &[u8], _: SocketAddr, _: SocketAddr, _: &mut Vec<u8>) -> bool {
        let mut answer = query.to_vec();
        answer[2] |= 0x80;
        self.job = Some(Box::new(move |responder: Responder| {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                responder.send_blocking(answer).unwrap();
            });
        }));
        false
    }

    fn take_deferred(&mut self) -> Option<bulwark_net::Deferred> {
        self.job.take()
    }
}

#[test]
fn deferred_replies_go_out_through_the_worker() {
    with_link(
        || Deferring { job: None },
        |far, workers| {
            over_there(far, || {
                let socket = UdpSocket::bind(format!("[{CLIENT_V6}]:0")).unwrap();
                let server: SocketAddr = format!("[{SERVER_V6}]:53").parse().unwrap();
                for i in 0..5u16 {
                    let q = bulwark_testkit::wire::query(i, 0x2800, "example.", 6);
                    let a = ask(&socket, server, &q);
                    assert_eq!(&a[..2], &i.to_be_bytes());
                    assert_eq!(a[2] & 0x80, 0x80);
                }
            });
            let s = stats_once(workers, |s| s.responded >= 5);
            assert_eq!((s.received, s.responded, s.dropped), (5, 5, 0), "{s:?}");
        },
    );
}

#[test]
fn a_reply_larger_than_the_mtu_is_cut_to_its_question_with_tc() {
    let large = |query: &[u8], _: SocketAddr, _: SocketAddr, out: &mut Vec<u8>| {
        common::echo(
            query,
            "0.0.0.0:0".parse().unwrap(),
            "0.0.0.0:0".parse().unwrap(),
            out,
        );
        // An answer section no link of 1500 octets carries.
        out[7] = 1;
        out.resize(MTU + 500, 0xab);
        true
    };
    with_link(
        || large,
        |far, workers| {
            let a = over_there(far, || {
                let socket = UdpSocket::bind(format!("{CLIENT_V4}:0")).unwrap();
                let q = bulwark_testkit::wire::query(9, 0x0100, "big.example.", 16);
                ask(&socket, format!("{SERVER_V4}:53").parse().unwrap(), &q)
            });
            let q = bulwark_testkit::wire::query(9, 0x0100, "big.example.", 16);
            assert_eq!(a.len(), q.len(), "header and question only");
            assert_eq!(a[2] & 0x82, 0x82, "QR and TC");
            assert_eq!(&a[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
            assert_eq!(&a[12..], &q[12..]);
            assert_eq!(stats_once(workers, |s| s.truncated >= 1).truncated, 1);
        },
    );
}
