#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The real binary serving over UDP and TCP: answers carry the query's ID and
//! question, pipelining works, IPv6 works, signals and `ctl` behave.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bulwark_testkit::wire;

const BIN: &str = env!("CARGO_BIN_EXE_bulwark");
const DEADLINE: Duration = Duration::from_secs(30);

// Not `\`-continued: that would strip the leading blanks that make an owner implicit.
const ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 1 3600 900 604800 300
    IN NS  ns1
ns1 IN A   192.0.2.1
www IN A   192.0.2.80
";
const BROKEN_ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 2 3600 900 604800 300
www IN A   999.0.2.80
";

fn has_ipv6_loopback() -> bool {
    UdpSocket::bind("[::1]:0").is_ok()
}

/// A running server, killed by PID when dropped.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
}

impl Server {
    /// `bulwark serve ARGS --ready-file DIR/ready` (listen addresses with
    /// port 0), once ready: the server and the addresses it bound.
    fn start_ready(dir: tempfile::TempDir, args: &[String]) -> (Server, Vec<SocketAddr>) {
        let ready = dir.path().join("ready");
        let mut args = args.to_vec();
        args.extend(["--ready-file".to_string(), ready.display().to_string()]);
        let mut server = Server::start(dir, &args);
        let bound = server.wait_ready_file(&ready);
        (server, bound)
    }

    fn start(dir: tempfile::TempDir, args: &[String]) -> Server {
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Server { child, dir }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's PID.
        #[allow(unsafe_code)]
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0);
    }

    /// Polls until the ready file is complete (its last line `ready`) and
    /// names this process; returns its `dns` addresses.
    fn wait_ready_file(&mut self, path: &Path) -> Vec<SocketAddr> {
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let pid = format!("pid {}", self.child.id());
            if text.lines().last() == Some("ready") && text.lines().any(|l| l == pid) {
                return text
                    .lines()
                    .filter_map(|l| l.strip_prefix("dns "))
                    .map(|a| a.parse().unwrap())
                    .collect();
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("server exited early ({status}):\n{}", self.log());
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no ready file {}:\n{}",
                path.display(),
                self.log()
            );
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }

    /// Polls with real queries until one is answered.
    fn wait_ready(&mut self, addr: SocketAddr) {
        let sock = client(addr);
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let start = Instant::now();
        let q = query(0x4242, "www.example.test", 1);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("server exited early ({status}):\n{}", self.log());
            }
            let _ = sock.send_to(&q, addr);
            let mut buf = [0u8; 1500];
            if let Ok(n) = sock.recv(&mut buf) {
                if n >= 2 && buf[..2] == [0x42, 0x42] {
                    return;
                }
            }
            assert!(
                start.elapsed() < DEADLINE,
                "server not answering on {addr}:\n{}",
                self.log()
            );
        }
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "server did not exit:\n{}",
                self.log()
            );
            std::thread::yield_now();
            std::thread::park_timeout(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(server: SocketAddr) -> UdpSocket {
    let s = if server.is_ipv6() {
        UdpSocket::bind("[::1]:0")
    } else {
        UdpSocket::bind("127.0.0.1:0")
    }
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// A query with RD clear and no EDNS.
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    wire::query(id, 0, name, qtype)
}

/// ID, QR and the echoed question: what must hold whatever the answer is.
fn assert_answers(response: &[u8], query: &[u8]) {
    assert!(
        response.len() >= query.len(),
        "response too short: {response:?}"
    );
    assert_eq!(response[..2], query[..2], "ID");
    assert_eq!(response[2] & 0x80, 0x80, "QR");
    assert_eq!(response[4..6], [0, 1], "QDCOUNT");
    assert_eq!(response[12..query.len()], query[12..], "question echoed");
}

fn rcode(response: &[u8]) -> u8 {
    response[3] & 0x0f
}

fn ancount(response: &[u8]) -> u16 {
    u16::from_be_bytes([response[6], response[7]])
}

fn ask_udp(addr: SocketAddr, q: &[u8]) -> Vec<u8> {
    let s = client(addr);
    s.send_to(q, addr).unwrap();
    let mut buf = vec![0u8; 65535];
    let n = s.recv(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn write_framed(s: &mut TcpStream, q: &[u8]) {
    s.write_all(&wire::framed(q)).unwrap();
}

fn read_framed(s: &mut TcpStream) -> Vec<u8> {
    wire::read_framed(s).unwrap()
}

fn tcp_connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn zone_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let zone = dir.path().join("example.test.zone");
    std::fs::write(&zone, ZONE).unwrap();
    (dir, zone)
}

fn zone_arg(path: &Path) -> String {
    format!("example.test.={}", path.display())
}

fn start_v4(extra: &[String]) -> (Server, SocketAddr, PathBuf) {
    let (dir, zone) = zone_dir();
    let mut args = vec![
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
        "--zone".to_string(),
        zone_arg(&zone),
        "--threads".to_string(),
        "2".to_string(),
    ];
    args.extend_from_slice(extra);
    let (mut server, bound) = Server::start_ready(dir, &args);
    let addr = bound[0];
    server.wait_ready(addr);
    (server, addr, zone)
}

#[test]
fn udp_and_tcp_answers_carry_the_query_id_and_question() {
    let (_server, addr, _) = start_v4(&[]);
    for (id, name) in [
        (1u16, "www.example.test"),
        (0xbeef, "WwW.ExAmPlE.tEsT"),
        (7, "nope.example.test"),
    ] {
        let q = query(id, name, 1);
        assert_answers(&ask_udp(addr, &q), &q);
        let mut s = tcp_connect(addr);
        write_framed(&mut s, &q);
        assert_answers(&read_framed(&mut s), &q);
    }
}

#[test]
fn hundred_pipelined_tcp_queries_on_one_connection_all_come_back() {
    let (_server, addr, _) = start_v4(&[]);
    let mut s = tcp_connect(addr);
    let queries: Vec<Vec<u8>> = (0..100u16)
        .map(|i| {
            query(
                1000 + i,
                if i % 2 == 0 {
                    "www.example.test"
                } else {
                    "ns1.example.test"
                },
                1,
            )
        })
        .collect();
    let mut all = Vec::new();
    for q in &queries {
        all.extend_from_slice(&wire::framed(q));
    }
    s.write_all(&all).unwrap();
    // RFC 7766 §7: responses may come in any order; match them by ID.
    let mut seen = std::collections::HashMap::new();
    for _ in 0..100 {
        let r = read_framed(&mut s);
        let id = u16::from_be_bytes([r[0], r[1]]);
        assert!(seen.insert(id, r).is_none(), "ID {id} answered twice");
    }
    for q in &queries {
        let id = u16::from_be_bytes([q[0], q[1]]);
        assert_answers(&seen[&id], q);
    }
}

#[test]
fn serves_ipv6_loopback_beside_ipv4() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no ::1 on this machine");
        return;
    }
    let (dir, zone) = zone_dir();
    // Port 0 on each: each address gets a port of its own.
    let args = [
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
        "--listen".to_string(),
        "[::1]:0".to_string(),
        "--zone".to_string(),
        zone_arg(&zone),
    ];
    let (mut server, bound) = Server::start_ready(dir, &args);
    let [v4, v6] = bound[..] else {
        panic!("two addresses: {bound:?}");
    };
    assert!(v4.is_ipv4() && v6.is_ipv6(), "{bound:?}");
    server.wait_ready(v6);
    server.wait_ready(v4);
    let q = query(0x6666, "www.example.test", 28);
    assert_answers(&ask_udp(v6, &q), &q);
    let mut s = tcp_connect(v6);
    write_framed(&mut s, &q);
    assert_answers(&read_framed(&mut s), &q);
}

#[test]
fn sigterm_stops_the_server_with_exit_status_zero() {
    let (mut server, _, _) = start_v4(&[]);
    server.signal(libc::SIGTERM);
    let status = server.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", server.log());
}

#[test]
fn reload_with_a_broken_zone_keeps_serving_the_old_copy() {
    let sock_dir = tempfile::tempdir().unwrap();
    let socket = sock_dir.path().join("control.sock");
    let (mut server, addr, zone) =
        start_v4(&["--control-socket".to_string(), socket.display().to_string()]);
    let q = query(0x1234, "www.example.test", 1);
    let before = ask_udp(addr, &q);
    assert_answers(&before, &q);
    assert_eq!(
        (rcode(&before), ancount(&before)),
        (0, 1),
        "the zone is served"
    );

    std::fs::write(&zone, BROKEN_ZONE).unwrap();
    server.signal(libc::SIGHUP);
    // `ctl reload` returns once its own reload is done, and reloads run one at a
    // time, so afterwards the SIGHUP reload has finished too.
    let out = Command::new(BIN)
        .args(["ctl", "--socket"])
        .arg(&socket)
        .arg("reload")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "ctl reload reports the failure: {stderr}"
    );
    assert!(stderr.contains("example.test."), "{stderr}");
    assert!(
        stderr.contains(&zone.display().to_string()),
        "names the file: {stderr}"
    );

    let after = ask_udp(addr, &q);
    assert_answers(&after, &q);
    assert_eq!(
        rcode(&after),
        rcode(&before),
        "same answer from the old copy"
    );
    assert_eq!(ancount(&after), ancount(&before));
    assert!(server.child.try_wait().unwrap().is_none(), "still running");

    let status = Command::new(BIN)
        .args(["ctl", "--socket"])
        .arg(&socket)
        .args(["zone", "list"])
        .output()
        .unwrap();
    assert!(status.status.success());
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(stdout.contains("example.test. "), "{stdout}");

    let stop = Command::new(BIN)
        .args(["ctl", "--socket"])
        .arg(&socket)
        .arg("stop")
        .output()
        .unwrap();
    assert!(stop.status.success());
    assert_eq!(server.wait_exit().code(), Some(0));
    assert!(!socket.exists(), "control socket removed on exit");
}

#[test]
fn serve_without_arguments_serves_the_demo_zone_and_prints_dig_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut server = Server { child, dir };
    let mut dig = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if line.trim_start().starts_with("dig @") {
            dig = Some(line);
            break;
        }
    }
    let dig = dig.unwrap_or_else(|| panic!("no dig line:\n{}", server.log()));
    // "dig @127.0.0.1 -p PORT www.demo.example A"
    let words: Vec<&str> = dig.split_whitespace().collect();
    assert_eq!(words[0], "dig");
    assert_eq!(words[2], "-p");
    let addr: SocketAddr = format!("{}:{}", &words[1][1..], words[3]).parse().unwrap();
    server.wait_ready(addr);
    let q = query(0x0d0d, "www.demo.example", 1);
    let r = ask_udp(addr, &q);
    assert_answers(&r, &q);
    server.signal(libc::SIGINT);
    assert_eq!(server.wait_exit().code(), Some(0));
}

#[test]
fn a_second_server_on_the_same_address_fails_instead_of_sharing_it() {
    let (_server, addr, zone) = start_v4(&[]);
    let out = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &addr.to_string(),
            "--zone",
            &zone_arg(&zone),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr.to_string()), "{stderr}");
    let q = query(0x2222, "www.example.test", 1);
    assert_answers(&ask_udp(addr, &q), &q);
}

/// A CH-class TXT query for `name`.
fn chaos_query(id: u16, name: &str) -> Vec<u8> {
    let mut q = query(id, name, 16);
    let n = q.len();
    q[n - 1] = 3; // class CH
    q
}

#[test]
fn config_file_sets_identity_json_logs_and_control_socket() {
    let (dir, zone) = zone_dir();
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nidentity = \"ns-test-1\"\n\n[log]\nformat = \"json\"\n\n\
             [control]\nsocket = \"ctl.sock\"\n\n\
             [[zone]]\norigin = \"example.test.\"\nfile = \"{}\"\n",
            zone.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let (mut server, bound) =
        Server::start_ready(dir, &["--config".to_string(), conf.display().to_string()]);
    let addr = bound[0];
    server.wait_ready(addr);

    let q = chaos_query(0x5151, "id.server");
    let r = ask_udp(addr, &q);
    assert_answers(&r, &q);
    assert_eq!((rcode(&r), ancount(&r)), (0, 1), "id.server answered");
    assert!(r.windows(9).any(|w| w == b"ns-test-1"));
    let q = chaos_query(0x5152, "version.bind");
    assert_eq!(rcode(&ask_udp(addr, &q)), 5, "version.bind unset: REFUSED");

    // `ctl --config` finds the socket through the file (relative to it).
    let status = Command::new(BIN)
        .args(["ctl", "--config"])
        .arg(&conf)
        .args(["zone", "status", "example.test."])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(stdout.contains("serial: 1\n"), "{stdout}");

    let log = server.log();
    assert!(!log.is_empty());
    for line in log.lines() {
        assert!(
            line.starts_with('{') && line.ends_with('}'),
            "not JSON: {line}"
        );
    }
    assert!(log.contains("\"zone\":\"example.test.\""), "{log}");
}
