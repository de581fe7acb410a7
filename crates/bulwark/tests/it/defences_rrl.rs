#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Response rate limiting against the real binary: a flood of queries for a large
//! answer from one /24 (127.0.1.0/24, standing in for spoofed sources) is cut by
//! at least 90% in bytes, while a client in another network (127.0.2.1) gets
//! every answer and a client in the flooded network still gets through over TCP.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{Answer, EdnsSpec, QuerySpec};

const ATTACKER: [u8; 4] = [127, 0, 1, 1];
const LEGITIMATE: [u8; 4] = [127, 0, 2, 1];
const FLOOD_QUERIES: usize = 5000;
/// Queries sent per burst, and bursts paced so the flood lasts about 1.5 s.
const BURST: usize = 100;
const BURST_GAP: Duration = Duration::from_millis(30);
const LEGIT_QUERIES: usize = 20;
/// Slower than the limit (10/s), so the legitimate network stays within budget.
const LEGIT_GAP: Duration = Duration::from_millis(150);
const TIMEOUT: Duration = Duration::from_secs(2);

/// A TXT RRset of about 1 KB: the amplification an attacker would want.
fn big_zone() -> String {
    let chunk = "x".repeat(250);
    format!(
        "$ORIGIN big.test.\n$TTL 300\n@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  IN NS ns1\nns1 IN A 192.0.2.1\nbig IN TXT \"{chunk}\" \"{chunk}\" \"{chunk}\" \"{chunk}\"\n"
    )
}

const CONFIG: &str = "[rrl]
responses_per_second = 10
slip = 2
window = 15
exempt = []
[cookies]
enabled = false
";

fn big_query(id: u16) -> Vec<u8> {
    let mut spec = QuerySpec::new("big.big.test.", RecordType::TXT);
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: false,
        version: 0,
    });
    spec.to_wire(id)
}

fn start(dir: &Path) -> support::Server {
    let zone = dir.join("big.test.zone");
    std::fs::write(&zone, big_zone()).unwrap();
    let conf = dir.join("bulwark.toml");
    std::fs::write(&conf, CONFIG).unwrap();
    support::spawn_bulwark(
        &[("big.test.", &zone)],
        &["--config", conf.to_str().unwrap(), "--threads", "2"],
    )
}

fn udp_from(source: [u8; 4], server: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind(SocketAddr::from((source, 0))).unwrap();
    s.connect(server).unwrap();
    s
}

/// One query from `source`, waiting for the response with its ID.
fn ask_udp(sock: &UdpSocket, id: u16) -> Option<Vec<u8>> {
    sock.send(&big_query(id)).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = [0u8; 65535];
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id => {
                return Some(buf[..n].to_vec())
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

fn tcp_from(source: [u8; 4], server: SocketAddr, wire: &[u8]) -> Vec<u8> {
    let socket = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .unwrap();
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect_timeout(&server.into(), TIMEOUT).unwrap();
    let mut stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
        .write_all(&bulwark_testkit::wire::framed(wire))
        .unwrap();
    bulwark_testkit::wire::read_framed(&mut stream).unwrap()
}

#[derive(Debug, Default)]
struct Received {
    bytes: usize,
    responses: usize,
    full: usize,
    slipped: usize,
    /// A small response without TC: would mean slipping is wrong.
    bad: Vec<Answer>,
}

#[test]
fn rrl_cuts_flood_bytes_by_ninety_percent_and_spares_other_networks_and_tcp() {
    let dir = support::temp_dir("bulwark-rrl-");
    let server = start(dir.path());
    let addr = server.addr;

    // The size of the full answer, as the legitimate network sees it.
    let legit = udp_from(LEGITIMATE, addr);
    let full = ask_udp(&legit, 1).expect("first legitimate answer");
    let full_answer = Answer::parse(&full).unwrap();
    assert!(
        !full_answer.tc && full_answer.counts[1] == 1,
        "{full_answer}"
    );
    let full_len = full.len();
    assert!(full_len > 1000, "answer of {full_len} octets is not large");

    let attacker = udp_from(ATTACKER, addr);
    let receiver = attacker.try_clone().unwrap();
    let sending = Arc::new(AtomicBool::new(true));
    let counting = {
        let sending = Arc::clone(&sending);
        std::thread::spawn(move || {
            let mut got = Received::default();
            let mut buf = [0u8; 65535];
            receiver
                .set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            loop {
                match receiver.recv(&mut buf) {
                    Ok(n) => {
                        got.bytes += n;
                        got.responses += 1;
                        let a = Answer::parse(&buf[..n]).unwrap();
                        if n == full_len {
                            got.full += 1;
                        } else if a.tc && a.counts[1] == 0 {
                            got.slipped += 1;
                        } else if got.bad.len() < 3 {
                            got.bad.push(a);
                        }
                    }
                    // Quiet for 500 ms after the last query was sent: done.
                    Err(_) if !sending.load(Ordering::Relaxed) => return got,
                    Err(_) => {}
                }
            }
        })
    };
    let legitimate = std::thread::spawn(move || {
        let mut answered = 0;
        let mut failures = Vec::new();
        for i in 0..LEGIT_QUERIES {
            let id = 1000 + u16::try_from(i).unwrap();
            match ask_udp(&legit, id).map(|w| Answer::parse(&w).unwrap()) {
                Some(a) if !a.tc && a.counts[1] == 1 => answered += 1,
                other => failures.push(format!("query {i}: {other:?}")),
            }
            std::thread::sleep(LEGIT_GAP);
        }
        (answered, failures)
    });

    let queries: Vec<Vec<u8>> = (0..FLOOD_QUERIES)
        .map(|i| big_query(u16::try_from(i).unwrap()))
        .collect();
    for burst in queries.chunks(BURST) {
        for q in burst {
            // A full socket buffer drops the query, as it would on a network.
            let _ = attacker.send(q);
        }
        std::thread::sleep(BURST_GAP);
    }
    // Over TCP the attacker's network is not limited.
    let over_tcp = Answer::parse(&tcp_from(ATTACKER, addr, &big_query(9999))).unwrap();
    sending.store(false, Ordering::Relaxed);
    let got = counting.join().unwrap();
    let (answered, failures) = legitimate.join().unwrap();

    let unlimited = FLOOD_QUERIES * full_len;
    eprintln!(
        "flood: {FLOOD_QUERIES} queries, {} responses ({} full, {} slipped), {} of {unlimited} octets ({:.1}%)",
        got.responses,
        got.full,
        got.slipped,
        got.bytes,
        100.0 * got.bytes as f64 / unlimited as f64
    );
    assert!(
        got.bytes * 10 <= unlimited,
        "flood got {} octets, more than 10% of {unlimited}",
        got.bytes
    );
    assert!(got.slipped > 0, "no slipped (TC) responses: {got:?}");
    assert!(
        got.bad.is_empty(),
        "limited responses without TC: {:?}",
        got.bad
    );
    assert_eq!(answered, LEGIT_QUERIES, "legitimate client: {failures:?}");
    assert!(
        !over_tcp.tc && over_tcp.counts[1] == 1,
        "TCP from the flooded network: {over_tcp}"
    );
}

#[test]
fn ctl_status_shows_rate_limit_counters() {
    let dir = support::temp_dir("bulwark-rrl-ctl-");
    let zone = dir.path().join("big.test.zone");
    std::fs::write(&zone, big_zone()).unwrap();
    let sock = dir.path().join("control.sock");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        format!("{CONFIG}[control]\nsocket = \"{}\"\n", sock.display()),
    )
    .unwrap();
    let server = support::spawn_bulwark(
        &[("big.test.", &zone)],
        &["--config", conf.to_str().unwrap()],
    );
    let attacker = udp_from(ATTACKER, server.addr);
    for i in 0..50u16 {
        let _ = attacker.send(&big_query(i));
    }
    // The last query's answer (or its absence) means all 51 were handled.
    let _ = ask_udp(&attacker, 60_000);
    // A worker adds its batch's rate-limiting counts before it sends the
    // batch's answers, so the status already counts every check.
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--socket", sock.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("rrl passed"))
        .unwrap_or_else(|| panic!("no rrl line in:\n{text}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 3, "{line}");
    assert!(
        numbers.iter().sum::<u64>() >= 51,
        "every check counted: {text}"
    );
    assert!(numbers[1] + numbers[2] > 0, "nothing limited: {text}");
    assert!(text.contains("cookies off"), "{text}");
}

/// `big.big.test. TXT` with EDNS (payload 1232) and a COOKIE option.
fn big_query_with_cookie(id: u16, cookie: &[u8]) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    q.extend_from_slice(b"\x03big\x03big\x04test\x00\x00\x10\x00\x01");
    let option_len = u16::try_from(cookie.len()).unwrap();
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
    q.extend_from_slice(&(option_len + 4).to_be_bytes());
    q.extend_from_slice(&[0, 10]);
    q.extend_from_slice(&option_len.to_be_bytes());
    q.extend_from_slice(cookie);
    q
}

/// The 24-octet COOKIE option data (client + server cookie) of a response.
fn returned_cookie(response: &[u8]) -> Vec<u8> {
    let at = response
        .windows(4)
        .rposition(|w| w == [0, 10, 0, 24])
        .expect("a COOKIE option with a server cookie");
    response[at + 4..at + 28].to_vec()
}

#[test]
fn client_with_a_valid_server_cookie_is_not_limited_inside_a_flooded_network() {
    let dir = support::temp_dir("bulwark-rrl-cookie-");
    let zone = dir.path().join("big.test.zone");
    std::fs::write(&zone, big_zone()).unwrap();
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(&conf, CONFIG.replace("enabled = false", "enabled = true")).unwrap();
    let server = support::spawn_bulwark(
        &[("big.test.", &zone)],
        &["--config", conf.to_str().unwrap()],
    );
    // The flood uses up the network's budget for this answer.
    let attacker = udp_from(ATTACKER, server.addr);
    for i in 0..200u16 {
        let _ = attacker.send(&big_query(i));
    }
    let flooded = ask_udp(&attacker, 60_000).map(|w| Answer::parse(&w).unwrap());
    assert!(
        flooded.as_ref().is_none_or(|a| a.tc),
        "the flooded network is not limited: {flooded:?}"
    );

    // A real client in the same /24 learns its server cookie over TCP...
    let client: [u8; 4] = [127, 0, 1, 2];
    let client_cookie = [1, 2, 3, 4, 5, 6, 7, 8];
    let first = tcp_from(
        client,
        server.addr,
        &big_query_with_cookie(1, &client_cookie),
    );
    let cookie = returned_cookie(&first);
    assert_eq!(&cookie[..8], &client_cookie);

    // ...and then gets every full answer over UDP, well past the limit.
    let sock = udp_from(client, server.addr);
    for i in 0..30u16 {
        sock.send(&big_query_with_cookie(100 + i, &cookie)).unwrap();
        let mut buf = [0u8; 4096];
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        let n = sock
            .recv(&mut buf)
            .expect("an answer for a client with a cookie");
        let a = Answer::parse(&buf[..n]).unwrap();
        assert!(!a.tc && a.counts[1] == 1, "query {i}: {a}");
    }
}
