//! The flood test (issue 3): the real server, on loopback, takes 200,000
//! malformed, truncated, random and pointer-loop UDP packets and 2,000 abusive
//! TCP streams while a well-behaved client keeps asking real questions. Every
//! real question must get the right answer (a UDP query may be retried a few
//! times, as a resolver would: the flood shares the server's socket queue), the
//! process must never die or panic, and its memory must stay bounded.
//!
//! Everything is deterministic (a seeded PRNG) and bounded in time: the UDP
//! senders are paced to finish in about [`FLOOD_PACE`], and the TCP abusers
//! wait for the server to close each stream, which its message and idle
//! timeouts (1 s here) guarantee.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{query, spawn_bulwark, Answer, EdnsSpec, QuerySpec, Transport};

const UDP_PACKETS: u64 = 200_000;
const UDP_SENDERS: u64 = 3;
const TCP_STREAMS: usize = 2_000;
const TCP_ABUSERS: usize = 8;
/// Abusive streams one abuser holds open at once.
const TCP_BATCH: usize = 25;
/// The UDP senders spread their packets over about this long: as fast as a
/// debug build on a shared two-core machine answers without the flood
/// crowding every legitimate query out of the socket queue.
const FLOOD_PACE: Duration = Duration::from_secs(20);
/// A legitimate query's wait for one attempt, and its attempts in all.
const VALID_TIMEOUT: Duration = Duration::from_secs(1);
const VALID_ATTEMPTS: u32 = 5;
/// How long an abuser waits for the server to close its streams before it
/// counts them as left open (the server's limits are 1 s).
const CLOSE_DEADLINE: Duration = Duration::from_secs(15);
/// Pause between the abusers' rounds: one byte per stream per round.
const DRIP_INTERVAL: Duration = Duration::from_millis(50);
const MAX_RSS_GROWTH_KB: u64 = 64 * 1024;

const ZONE: &str = "\
$ORIGIN flood.test.
$TTL 3600
@       SOA     ns.flood.test. admin.flood.test. 1 3600 900 604800 300
@       NS      ns
ns      A       192.0.2.53
www     A       192.0.2.80
www     AAAA    2001:db8::80
alias   CNAME   www
text    TXT     \"under fire\"
sub     NS      ns.sub
ns.sub  A       192.0.2.99
";

/// xorshift64*: small, fast and the same on every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

fn header(id: u16, flags: u16, counts: [u16; 4]) -> Vec<u8> {
    let mut h = id.to_be_bytes().to_vec();
    h.extend_from_slice(&flags.to_be_bytes());
    for c in counts {
        h.extend_from_slice(&c.to_be_bytes());
    }
    h
}

const QNAME: &[u8] = b"\x03www\x05flood\x04test\x00";

/// A well-formed query for www.flood.test/A, optionally with an OPT record.
fn plain_query(id: u16, edns: bool) -> Vec<u8> {
    let mut q = header(id, 0, [1, 0, 0, u16::from(edns)]);
    q.extend_from_slice(QNAME);
    q.extend_from_slice(&[0, 1, 0, 1]);
    if edns {
        q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    }
    q
}

/// One hostile datagram. Kinds cycle with `i`; their contents vary with `rng`.
fn hostile_datagram(rng: &mut Rng, i: u64) -> Vec<u8> {
    let id = rng.next() as u16;
    match i % 16 {
        0 => Vec::new(),
        1 => vec![rng.byte()],
        // A header cut short.
        2 => {
            let n = 2 + rng.below(10);
            rng.bytes(n)
        }
        // Noise of any length.
        3 => {
            let n = 12 + rng.below(600);
            rng.bytes(n)
        }
        // Counts promising far more than the message holds.
        4 => {
            let counts = [0; 4].map(|_: u16| 0xff00 | u16::from(rng.byte()));
            let mut p = header(id, 0, counts);
            if rng.below(2) == 0 {
                p.extend_from_slice(QNAME);
                p.extend_from_slice(&[0, 1, 0, 1]);
            }
            let n = rng.below(100);
            p.extend(rng.bytes(n));
            p
        }
        // A name that is a pointer to itself.
        5 => {
            let mut p = header(id, 0, [1, 0, 0, 0]);
            p.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
            p
        }
        // A label then a pointer back to it: a.a.a.a... forever; or two
        // pointers pointing at each other.
        6 => {
            let mut p = header(id, 0, [1, 0, 0, 0]);
            if rng.below(2) == 0 {
                p.extend_from_slice(&[1, b'a', 0xc0, 12, 0, 1, 0, 1]);
            } else {
                p.extend_from_slice(&[0xc0, 14, 0xc0, 12, 0, 1, 0, 1]);
            }
            p
        }
        // A pointer forward (RFC 1035 §4.1.4 allows only prior occurrences),
        // or past the end, or with the reserved 01/10 label types.
        7 => {
            let mut p = header(id, 0, [1, 0, 0, 0]);
            let pick = rng.below(4);
            match pick {
                0 => p.extend_from_slice(&[0xc0, 18, 0, 1, 0, 1]),
                1 => p.extend_from_slice(&[0xff, 0xff, 0, 1, 0, 1]),
                2 => p.extend_from_slice(&[0x40 | (rng.byte() & 0x3f), 0, 0, 1, 0, 1]),
                _ => p.extend_from_slice(&[0x80 | (rng.byte() & 0x3f), 0, 0, 1, 0, 1]),
            }
            p.extend_from_slice(QNAME);
            p
        }
        // OPT abuse: several OPTs, a named OPT, lengths that overrun,
        // malformed cookies, EDNS version 255, a zero payload size.
        8 => {
            let mut p = plain_query(id, false);
            let opts = 1 + rng.below(3) as u16;
            p[11] = opts as u8;
            for _ in 0..opts {
                let owner: &[u8] = if rng.below(4) == 0 {
                    b"\x01x\x00"
                } else {
                    b"\x00"
                };
                p.extend_from_slice(owner);
                p.extend_from_slice(&[0, 41]);
                p.extend_from_slice(&(rng.next() as u16).to_be_bytes()); // payload
                p.extend_from_slice(&[0, if rng.below(3) == 0 { 255 } else { 0 }, 0x80, 0]);
                let option: Vec<u8> = match rng.below(5) {
                    // A cookie with a client part of 7 octets (RFC 7873 §5.2.2: 8).
                    0 => [&[0, 10, 0, 7][..], &rng.bytes(7)].concat(),
                    // A server cookie of 41 octets (at most 32 allowed).
                    1 => [&[0, 10, 0, 49][..], &rng.bytes(49)].concat(),
                    // An option claiming more than the record holds.
                    2 => vec![0, 3, 0xff, 0xff],
                    // keepalive and padding with odd lengths.
                    3 => vec![0, 11, 0, 1, 7, 0, 12, 0, 3, 0, 0],
                    _ => {
                        let n = rng.below(40);
                        rng.bytes(n)
                    }
                };
                // Sometimes the stated rdata length lies.
                let stated = if rng.below(3) == 0 {
                    rng.next() as u16
                } else {
                    option.len() as u16
                };
                p.extend_from_slice(&stated.to_be_bytes());
                p.extend_from_slice(&option);
            }
            p
        }
        // QR=1: a response sent to a server, which must not answer it
        // (RFC 1035 §4.1.1; answering would let two servers ping-pong).
        9 => {
            let mut p = plain_query(id, rng.below(2) == 0);
            p[2] |= 0x80;
            p
        }
        // A good query cut off anywhere.
        10 => {
            let p = plain_query(id, true);
            let cut = rng.below(p.len());
            p[..cut].to_vec()
        }
        // A good query with a few octets changed.
        11 => {
            let mut p = plain_query(id, rng.below(2) == 0);
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(p.len());
                p[at] = rng.byte();
            }
            p
        }
        // A name over 255 octets, or a label over 63.
        12 => {
            let mut p = header(id, 0, [1, 0, 0, 0]);
            if rng.below(2) == 0 {
                for _ in 0..60 {
                    p.extend_from_slice(b"\x04abcd");
                }
            } else {
                p.push(63 + rng.below(2) as u8);
                p.extend_from_slice(&[b'x'; 64]);
            }
            p.extend_from_slice(&[0, 0, 1, 0, 1]);
            p
        }
        // Other opcodes, and types a UDP query should not ask for.
        13 => {
            let opcode = [1u16, 2, 3, 4, 5, 6, 15][rng.below(7)];
            let mut p = header(id, opcode << 11, [1, 0, 0, 0]);
            p.extend_from_slice(QNAME);
            p.extend_from_slice(&[0, 6, 0, 1]);
            let n = rng.below(40);
            p.extend(rng.bytes(n));
            p
        }
        14 => {
            let mut p = header(id, 0, [1, 0, 0, 0]);
            p.extend_from_slice(QNAME);
            let qtype = [252u16, 251, 255, 0, 41, 65535][rng.below(6)];
            p.extend_from_slice(&qtype.to_be_bytes());
            p.extend_from_slice(&[0, [1u8, 3, 254, 255][rng.below(4)]]);
            p
        }
        // No question, or two.
        _ => {
            let two = rng.below(2) == 0;
            let mut p = header(id, 0, [if two { 2 } else { 0 }, 0, 0, 0]);
            if two {
                for _ in 0..2 {
                    p.extend_from_slice(QNAME);
                    p.extend_from_slice(&[0, 1, 0, 1]);
                }
            }
            p
        }
    }
}

/// Sends `count` hostile datagrams from one socket, paced to take about
/// [`FLOOD_PACE`]. Returns how many were sent.
fn udp_sender(server: SocketAddr, seed: u64, count: u64) -> u64 {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let mut sent = 0;
    for i in 0..count {
        let p = hostile_datagram(&mut rng, i);
        // ENOBUFS and the like under pressure: the packet is lost, as on a
        // real network; keep going.
        if sock.send_to(&p, server).is_ok() {
            sent += 1;
        }
        if i % 64 == 63 {
            let due = FLOOD_PACE.mul_f64((i + 1) as f64 / count as f64);
            if let Some(ahead) = due.checked_sub(start.elapsed()) {
                thread::sleep(ahead);
            }
        }
    }
    sent
}

#[derive(Clone, Copy, Debug)]
enum Abuse {
    /// A length prefix promising more than is ever sent, then silence.
    Overlong,
    /// One octet per round, never finishing the message.
    Drip,
    /// Random octets: bad lengths, bogus messages, partial frames.
    Garbage,
    /// Connect, perhaps send an octet, and close.
    ConnectClose,
    /// A length below a header or above the server's limit.
    BadLength,
}

const ABUSES: [Abuse; 5] = [
    Abuse::Overlong,
    Abuse::Drip,
    Abuse::Garbage,
    Abuse::ConnectClose,
    Abuse::BadLength,
];

struct Stream {
    sock: TcpStream,
    abuse: Abuse,
    /// The message being dripped.
    drip: Vec<u8>,
    dripped: usize,
}

#[derive(Default)]
struct AbuseTally {
    streams: u64,
    refused_connect: u64,
    closed_by_server: u64,
    left_open: u64,
}

/// A connection from `source`: any 127/8 address is local on Linux, so one
/// machine plays many clients. tokio's socket is used only because it can bind
/// before connecting; the stream is handed back as a std one.
fn connect_from(
    rt: &tokio::runtime::Runtime,
    source: [u8; 4],
    server: SocketAddr,
) -> std::io::Result<TcpStream> {
    rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from((source, 0)))?;
        let stream = tokio::time::timeout(Duration::from_secs(5), socket.connect(server))
            .await
            .map_err(|_| std::io::Error::new(ErrorKind::TimedOut, "connect timed out"))??;
        let stream = stream.into_std()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    })
}

/// Opens `streams` abusive TCP connections, [`TCP_BATCH`] at a time, and waits
/// for the server to close each one. Abuser 0 sends everything from one
/// address, so the per-client cap turns most of its streams away; the others
/// spread theirs over many 127/8 addresses.
fn tcp_abuser(server: SocketAddr, which: usize, streams: usize) -> AbuseTally {
    let mut rng = Rng::new(0xab05e + which as u64);
    let mut tally = AbuseTally::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut n = 0;
    while n < streams {
        let mut open: Vec<Stream> = Vec::new();
        for _ in 0..TCP_BATCH.min(streams - n) {
            let source = if which == 0 {
                [127, 0, 0, 9]
            } else {
                [127, 1, which as u8, (n % 250 + 1) as u8]
            };
            let abuse = ABUSES[n % ABUSES.len()];
            n += 1;
            tally.streams += 1;
            let Ok(mut sock) = connect_from(&rt, source, server) else {
                tally.refused_connect += 1;
                continue;
            };
            let first: Vec<u8> = match abuse {
                Abuse::Overlong => {
                    let len = 0x2000u16 + rng.next() as u16 % 0x1000;
                    let body = rng.below(200);
                    [&len.to_be_bytes()[..], &rng.bytes(body)].concat()
                }
                Abuse::Drip => Vec::new(),
                Abuse::Garbage => {
                    let len = 1 + rng.below(64);
                    rng.bytes(len)
                }
                Abuse::ConnectClose => {
                    if rng.below(2) == 0 {
                        let _ = sock.write_all(&[0]);
                    }
                    drop(sock);
                    continue;
                }
                Abuse::BadLength => {
                    let len = if rng.below(2) == 0 {
                        rng.below(12) as u16
                    } else {
                        0xffff
                    };
                    len.to_be_bytes().to_vec()
                }
            };
            let _ = sock.write_all(&first);
            sock.set_nonblocking(true).unwrap();
            let mut drip = vec![0x00, 0xf0];
            drip.extend(rng.bytes(0xf0));
            open.push(Stream {
                sock,
                abuse,
                drip,
                dripped: 0,
            });
        }
        // Rounds until the server has closed every stream.
        let deadline = Instant::now() + CLOSE_DEADLINE;
        let mut buf = [0u8; 4096];
        while !open.is_empty() {
            open.retain_mut(|s| {
                let closed = loop {
                    match s.sock.read(&mut buf) {
                        Ok(0) => break true,
                        Ok(_) => continue, // an answer to garbage that parsed
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
                        Err(_) => break true,
                    }
                };
                if closed {
                    tally.closed_by_server += 1;
                    return false;
                }
                if matches!(s.abuse, Abuse::Drip) {
                    if let Some(b) = s.drip.get(s.dripped) {
                        if s.sock.write(&[*b]).is_ok() {
                            s.dripped += 1;
                        }
                    }
                }
                true
            });
            if open.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                tally.left_open += open.len() as u64;
                break;
            }
            thread::sleep(DRIP_INTERVAL);
        }
    }
    tally
}

fn vm_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// The questions the legitimate client asks, covering an answer, a CNAME, a
/// negative answer, a referral, and EDNS with DO.
fn legitimate_questions() -> Vec<QuerySpec> {
    let edns = |mut q: QuerySpec| {
        q.edns = Some(EdnsSpec {
            payload: 1232,
            dnssec_ok: true,
            version: 0,
        });
        q
    };
    vec![
        QuerySpec::new("www.flood.test.", RecordType::A),
        edns(QuerySpec::new("www.flood.test.", RecordType::AAAA)),
        QuerySpec::new("alias.flood.test.", RecordType::A),
        edns(QuerySpec::new("nothing.flood.test.", RecordType::A)),
        QuerySpec::new("text.flood.test.", RecordType::TXT),
        QuerySpec::new("host.sub.flood.test.", RecordType::A),
        edns(QuerySpec::new("flood.test.", RecordType::SOA)),
    ]
}

/// An answer without what legitimately differs between two asks.
fn normalised(mut a: Answer) -> Answer {
    a.id = 0;
    a
}

/// Asks `spec` over `transport`, retrying up to [`VALID_ATTEMPTS`] times on
/// any failure (a lost datagram; a TCP connection the flood crowded out).
fn ask(server: SocketAddr, spec: &QuerySpec, transport: Transport) -> Option<Answer> {
    (0..VALID_ATTEMPTS).find_map(|_| query(server, spec, transport, VALID_TIMEOUT).ok())
}

#[derive(Default)]
struct LegitTally {
    asked: u64,
    answered: u64,
    retried: u64,
    lost: Vec<String>,
    wrong: Vec<String>,
}

#[test]
fn a_flood_of_hostile_packets_and_streams_leaves_every_real_query_answered() {
    let started = Instant::now();
    let dir = support::temp_dir("bulwark-flood-");
    let zone = dir.path().join("flood.test.zone");
    std::fs::write(&zone, ZONE).unwrap();
    let conf = dir.path().join("bulwark.toml");
    // Short TCP timeouts so abusive streams end quickly; everything else (the
    // caps, RRL with loopback exempt, cookies) at its defaults.
    std::fs::write(
        &conf,
        "[server]\ntcp_idle_timeout = 1\ntcp_message_timeout = 1\n\n\
         [control]\nsocket = \"ctl.sock\"\n",
    )
    .unwrap();
    let conf_arg = conf.display().to_string();
    let mut server = spawn_bulwark(
        &[("flood.test.", zone.as_path())],
        &["--config", &conf_arg, "--log-level", "warn"],
    );
    let addr = server.addr;
    let pid = server.process.pid();

    // What the quiet server answers is what the busy one must answer.
    let questions = legitimate_questions();
    let expected: Vec<(Answer, Answer)> = questions
        .iter()
        .map(|q| {
            let udp = ask(addr, q, Transport::Udp).expect("quiet server answers over UDP");
            let tcp = ask(addr, q, Transport::Tcp).expect("quiet server answers over TCP");
            (normalised(udp), normalised(tcp))
        })
        .collect();
    assert_eq!(expected[0].0.rdata_of("A"), vec!["192.0.2.80"]);
    assert!(expected[0].0.aa);
    assert_eq!(expected[3].0.rcode_name(), "NXDOMAIN");
    let rss_before = vm_rss_kb(pid);

    let flooding = Arc::new(AtomicBool::new(true));
    let peak_rss = Arc::new(AtomicU64::new(rss_before));
    let legit = {
        let (flooding, peak_rss) = (Arc::clone(&flooding), Arc::clone(&peak_rss));
        let questions = questions.clone();
        let expected = expected.clone();
        thread::spawn(move || {
            let mut t = LegitTally::default();
            let mut i = 0usize;
            while flooding.load(Ordering::Relaxed) {
                let k = i % questions.len();
                // Every tenth question goes over TCP, from 127.0.0.1, an address
                // no abuser uses.
                let (transport, want) = if i % 10 == 9 {
                    (Transport::Tcp, &expected[k].1)
                } else {
                    (Transport::Udp, &expected[k].0)
                };
                i += 1;
                t.asked += 1;
                let first = query(addr, &questions[k], transport, VALID_TIMEOUT).ok();
                let got = first.or_else(|| {
                    t.retried += 1;
                    ask(addr, &questions[k], transport)
                });
                match got {
                    None => t.lost.push(format!("{} over {transport:?}", questions[k])),
                    Some(a) => {
                        t.answered += 1;
                        let a = normalised(a);
                        if &a != want {
                            t.wrong.push(format!(
                                "{} over {transport:?}:\n    got  {a}\n    want {want}",
                                questions[k]
                            ));
                        }
                    }
                }
                if i % 50 == 0 {
                    peak_rss.fetch_max(vm_rss_kb(pid), Ordering::Relaxed);
                }
            }
            t
        })
    };

    let senders: Vec<_> = (0..UDP_SENDERS)
        .map(|s| {
            let share = UDP_PACKETS / UDP_SENDERS + u64::from(s < UDP_PACKETS % UDP_SENDERS);
            thread::spawn(move || udp_sender(addr, 0x5eed + s, share))
        })
        .collect();
    let per_abuser = TCP_STREAMS / TCP_ABUSERS;
    let abusers: Vec<_> = (0..TCP_ABUSERS)
        .map(|w| thread::spawn(move || tcp_abuser(addr, w, per_abuser)))
        .collect();
    let udp_sent: u64 = senders.into_iter().map(|h| h.join().unwrap()).sum();
    let tcp: Vec<AbuseTally> = abusers.into_iter().map(|h| h.join().unwrap()).collect();
    let flood_time = started.elapsed();
    flooding.store(false, Ordering::Relaxed);
    let legit = legit.join().unwrap();
    let rss_after = vm_rss_kb(pid);
    let peak = peak_rss.load(Ordering::Relaxed).max(rss_after);

    let sum = |f: fn(&AbuseTally) -> u64| tcp.iter().map(f).sum::<u64>();
    println!(
        "UDP: {udp_sent} hostile datagrams sent (of {}), TCP: {} abusive streams \
         ({} closed by the server, {} refused at connect, {} left open)",
        UDP_PACKETS,
        sum(|t| t.streams),
        sum(|t| t.closed_by_server),
        sum(|t| t.refused_connect),
        sum(|t| t.left_open),
    );
    println!(
        "legitimate: {} asked, {} answered, {} needed a retry, {} lost, {} wrong",
        legit.asked,
        legit.answered,
        legit.retried,
        legit.lost.len(),
        legit.wrong.len()
    );
    println!(
        "server VmRSS: {rss_before} kB before, {rss_after} kB after, {peak} kB peak seen; \
         flood took {flood_time:.1?}"
    );

    // The server's own counters, for the record, and proof the flood arrived.
    let status = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--config", &conf_arg, "status"])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    println!("server status:\n{status}");
    let udp_received = status.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("udp") && words.next() == Some("received"))
            .then(|| words.next()?.parse::<u64>().ok())?
    });
    if let Some(received) = udp_received {
        assert!(
            received >= UDP_PACKETS / 2,
            "the server saw only {received} datagrams of the flood"
        );
    }

    if let Some(status) = server.process.exited() {
        panic!(
            "the server died ({status}); its log:\n{}",
            server.process.log()
        );
    }
    let log = server.process.log();
    assert!(!log.contains("panicked"), "the server panicked:\n{log}");
    assert!(
        legit.wrong.is_empty(),
        "wrong answers under the flood:\n{}",
        legit.wrong.join("\n")
    );
    assert!(
        legit.lost.is_empty(),
        "legitimate queries lost after {VALID_ATTEMPTS} attempts each:\n{}",
        legit.lost.join("\n")
    );
    assert!(legit.answered >= 100, "too few legitimate queries to judge");
    assert_eq!(
        sum(|t| t.left_open),
        0,
        "the server left abusive streams open"
    );
    assert!(udp_sent >= UDP_PACKETS * 9 / 10, "the flood was not sent");
    assert!(
        rss_after.saturating_sub(rss_before) < MAX_RSS_GROWTH_KB,
        "memory grew from {rss_before} kB to {rss_after} kB"
    );
    // Still serving both ways after it all.
    for (q, (udp, tcp)) in questions.iter().zip(&expected) {
        assert_eq!(&normalised(ask(addr, q, Transport::Udp).unwrap()), udp);
        assert_eq!(&normalised(ask(addr, q, Transport::Tcp).unwrap()), tcp);
    }
    assert!(
        server.process.exited().is_none(),
        "the server died at the end"
    );
}
