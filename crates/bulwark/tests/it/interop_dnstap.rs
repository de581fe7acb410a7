#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! dnstap against real peers: bulwark's sink read by fstrm_capture and
//! dnstap-ldns, knotd's mod-dnstap read and captured by `bulwark dnstap`, a
//! file round trip, and a receiver that stalls (queries must still be answered,
//! the loss counted).

use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{
    bulwark_bin, data_dir, free_port, query, query_retry, require_tool, spawn_bulwark, temp_dir,
    ChildGuard, QuerySpec, Transport,
};

const DEADLINE: Duration = Duration::from_secs(30);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// Polls `ready` until it holds, failing after `DEADLINE` with `what`.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Block on something that can end early instead of sleeping.
        let _ = UdpSocket::bind("127.0.0.1:0").and_then(|s| {
            s.set_read_timeout(Some(Duration::from_millis(20)))?;
            s.recv(&mut [0u8; 1])
        });
    }
}

fn diff_zone() -> PathBuf {
    data_dir().join("diff.zone")
}

/// The queries each test sends, and what a reader must show for them.
const QUERIES: [(&str, RecordType, &str); 3] = [
    ("www.diff.test.", RecordType::A, "A"),
    ("diff.test.", RecordType::MX, "MX"),
    ("nonexistent.diff.test.", RecordType::A, "A"),
];

fn send_queries(addr: SocketAddr, transport: Transport) {
    for (name, rtype, _) in QUERIES {
        query_retry(
            addr,
            &QuerySpec::new(name, rtype),
            transport,
            ANSWER_TIMEOUT,
            3,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

fn bulwark_dnstap(args: &[&str]) -> Output {
    Command::new(bulwark_bin())
        .arg("dnstap")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn read_text(file: &Path) -> String {
    let out = bulwark_dnstap(&["read", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "bulwark dnstap read failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn dnstap_ldns(file: &Path) -> Option<String> {
    let tool = require_tool("dnstap-ldns")?;
    Some(support::run_tool(
        &tool,
        &["-r".to_string(), file.display().to_string()],
    ))
}

/// Every query shows up as a line with `query_mark` and as one with
/// `response_mark` (AQ/AR in dnstap-ldns), naming the qname and type.
fn assert_logged(text: &str, query_mark: &str, response_mark: &str) {
    for (name, _, rtype) in QUERIES {
        for mark in [query_mark, response_mark] {
            assert!(
                text.lines()
                    .any(|l| l.contains(mark) && l.contains(name) && l.contains(rtype)),
                "no {mark} line for {name} {rtype} in:\n{text}"
            );
        }
    }
}

/// Stops a process with SIGTERM and waits for it.
fn terminate(p: &mut ChildGuard) {
    p.signal("TERM");
    let status = p
        .wait_exit(DEADLINE)
        .unwrap_or_else(|| panic!("{} did not exit after SIGTERM; log:\n{}", p.name(), p.log()));
    assert!(
        status.success(),
        "{} exited with {status}:\n{}",
        p.name(),
        p.log()
    );
}

#[test]
fn bulwark_feeds_fstrm_capture_over_a_unix_socket() {
    let (Some(fstrm), Some(_)) = (require_tool("fstrm_capture"), require_tool("dnstap-ldns"))
    else {
        return;
    };
    let dir = temp_dir("dnstap-fstrm-");
    let sock = dir.path().join("tap.sock");
    let file = dir.path().join("tap.fstrm");
    let args: Vec<String> = [
        "-dddd",
        "-t",
        "protobuf:dnstap.Dnstap",
        "-u",
        sock.to_str().unwrap(),
        "-w",
        file.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let mut capture = ChildGuard::spawn("fstrm_capture", &fstrm, &args, dir.path().join("cap.log"));
    wait_until("the fstrm_capture socket", || sock.exists());

    let dest = format!("unix:{}", sock.display());
    let mut server = spawn_bulwark(&[("diff.test.", &diff_zone())], &["--dnstap", &dest]);
    // bulwark connects in the background: messages before START would be
    // dropped, so wait for the handshake to finish.
    wait_until("bulwark's START", || {
        capture.log().contains("received FSTRM_CONTROL_START")
    });
    send_queries(server.addr, Transport::Udp);
    send_queries(server.addr, Transport::Tcp);
    terminate(&mut server.process);
    assert!(
        capture.log().contains("received FSTRM_CONTROL_STOP"),
        "bulwark did not end the stream with STOP:\n{}",
        capture.log()
    );
    capture.signal("TERM");
    capture.wait_exit(DEADLINE).expect("fstrm_capture exits");

    let text = dnstap_ldns(&file).unwrap();
    assert_logged(&text, " AQ ", " AR ");
    assert!(text.contains(" UDP "), "{text}");
    assert!(text.contains(" TCP "), "{text}");
}

/// knotd with mod-dnstap (Knot 3 syntax, knot.conf(5) "dnstap" module), the
/// sink a file or `unix:PATH`.
fn spawn_knotd_tapped(knotd: &Path, dir: &Path, sink: &str) -> (ChildGuard, SocketAddr) {
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let d = dir.display();
    let conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    \
         tcp-workers: 1\n    background-workers: 1\n\ndatabase:\n    storage: {d}\n\n\
         log:\n  - target: stderr\n    any: info\n\n\
         mod-dnstap:\n  - id: tap\n    sink: {sink}\n    log-queries: on\n    log-responses: on\n\n\
         template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    \
         zonefile-load: whole\n    journal-content: none\n    global-module: mod-dnstap/tap\n\n\
         zone:\n  - domain: diff.test.\n    file: {}\n",
        diff_zone().display()
    );
    let conf_path = dir.join("knot.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec!["-c".to_string(), conf_path.display().to_string()];
    let mut knotd = ChildGuard::spawn("knotd", knotd, &args, dir.join("knotd.log"));
    let probe = QuerySpec::new("diff.test.", RecordType::SOA);
    wait_until("knotd to serve diff.test", || {
        assert!(knotd.exited().is_none(), "knotd exited:\n{}", knotd.log());
        matches!(query(addr, &probe, Transport::Udp, Duration::from_millis(200)),
                 Ok(a) if a.rcode == 0 && a.aa)
    });
    (knotd, addr)
}

#[test]
fn bulwark_reads_a_knotd_dnstap_file() {
    let Some(knotd) = require_tool("knotd") else {
        return;
    };
    let dir = temp_dir("dnstap-knot-file-");
    let file = dir.path().join("knot.fstrm");
    let (mut knot, addr) = spawn_knotd_tapped(&knotd, dir.path(), file.to_str().unwrap());
    send_queries(addr, Transport::Udp);
    terminate(&mut knot);

    let text = read_text(&file);
    assert_logged(&text, "AQ", "AR");

    let json = bulwark_dnstap(&["read", "--format", "json", file.to_str().unwrap()]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let json = String::from_utf8(json.stdout).unwrap();
    // Every line is one JSON object: checked by an independent parser.
    if let Some(python) = require_tool("python3") {
        let mut child = Command::new(python)
            .args([
                "-c",
                "import json,sys\nn=0\nfor l in sys.stdin:\n    json.loads(l); n+=1\nprint(n)",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(json.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "not JSON lines: {}\n{json}",
            String::from_utf8_lossy(&out.stderr)
        );
        let n: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(n, text.lines().count(), "{json}");
    }
    for (name, _, _) in QUERIES {
        assert!(json.contains(name), "{name} missing from JSON:\n{json}");
    }
}

#[test]
fn capture_receives_from_knotd() {
    let Some(knotd) = require_tool("knotd") else {
        return;
    };
    let dir = temp_dir("dnstap-knot-cap-");
    let sock = dir.path().join("tap.sock");
    let file = dir.path().join("captured.fstrm");
    let args: Vec<String> = [
        "dnstap",
        "capture",
        "--unix",
        sock.to_str().unwrap(),
        "-w",
        file.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let mut capture = ChildGuard::spawn(
        "bulwark capture",
        &bulwark_bin(),
        &args,
        dir.path().join("cap.log"),
    );
    wait_until("the capture socket", || sock.exists());
    let (mut knot, addr) =
        spawn_knotd_tapped(&knotd, dir.path(), &format!("unix:{}", sock.display()));
    wait_until("knotd's START", || capture.log().contains("receiving"));
    send_queries(addr, Transport::Udp);
    terminate(&mut knot);
    terminate(&mut capture);

    assert_logged(&read_text(&file), "AQ", "AR");
    // An independent reader accepts what the capture wrote.
    if let Some(text) = dnstap_ldns(&file) {
        assert_logged(&text, " AQ ", " AR ");
    }
}

#[test]
fn capture_receives_from_unbound() {
    let Some(unbound) = require_tool("unbound") else {
        return;
    };
    let dir = temp_dir("dnstap-unbound-");
    let sock = dir.path().join("tap.sock");
    let file = dir.path().join("captured.fstrm");
    // Two queries, each a CLIENT_QUERY and a CLIENT_RESPONSE: capture stops
    // by itself after the fourth, so nothing depends on when unbound flushes.
    let args: Vec<String> = [
        "dnstap",
        "capture",
        "--unix",
        sock.to_str().unwrap(),
        "-w",
        file.to_str().unwrap(),
        "--count",
        "4",
    ]
    .map(String::from)
    .to_vec();
    let mut capture = ChildGuard::spawn(
        "bulwark capture",
        &bulwark_bin(),
        &args,
        dir.path().join("cap.log"),
    );
    wait_until("the capture socket", || sock.exists());
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    // Answers from local data only: no network, no root hints needed.
    let conf = format!(
        "server:\n    interface: 127.0.0.1@{port}\n    do-daemonize: no\n    chroot: \"\"\n    \
         username: \"\"\n    directory: \"{d}\"\n    pidfile: \"\"\n    use-syslog: no\n    \
         do-ip6: no\n    num-threads: 1\n    access-control: 127.0.0.0/8 allow\n    \
         local-zone: \"diff.test.\" static\n    \
         local-data: \"www.diff.test. 300 IN A 192.0.2.80\"\n    \
         local-data: \"diff.test. 300 IN MX 10 mail.diff.test.\"\n\
         dnstap:\n    dnstap-enable: yes\n    dnstap-socket-path: \"{s}\"\n    \
         dnstap-send-identity: yes\n    dnstap-send-version: yes\n    \
         dnstap-log-client-query-messages: yes\n    dnstap-log-client-response-messages: yes\n",
        d = dir.path().display(),
        s = sock.display()
    );
    let conf_path = dir.path().join("unbound.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        conf_path.display().to_string(),
    ];
    let mut server = ChildGuard::spawn("unbound", &unbound, &args, dir.path().join("unbound.log"));
    wait_until("unbound's START", || {
        assert!(
            server.exited().is_none(),
            "unbound exited:\n{}",
            server.log()
        );
        capture.log().contains("receiving")
    });
    for (name, rtype) in [
        ("www.diff.test.", RecordType::A),
        ("diff.test.", RecordType::MX),
    ] {
        let a = query_retry(
            addr,
            &QuerySpec::new(name, rtype),
            Transport::Udp,
            ANSWER_TIMEOUT,
            3,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}\n{}", server.log()));
        assert_eq!(a.rcode, 0, "{a}");
    }
    let status = capture
        .wait_exit(DEADLINE)
        .unwrap_or_else(|| panic!("capture did not stop after 4 messages:\n{}", capture.log()));
    assert!(status.success(), "{}", capture.log());
    terminate(&mut server);

    let text = read_text(&file);
    for (name, rtype) in [("\"www.diff.test.\"", " A"), ("\"diff.test.\"", " MX")] {
        for mark in [" CQ ", " CR "] {
            assert!(
                text.lines()
                    .any(|l| l.contains(mark) && l.contains(name) && l.contains(rtype)),
                "no {mark} line for {name} in:\n{text}"
            );
        }
    }
}

#[test]
fn bulwark_feeds_capture_over_tcp() {
    let dir = temp_dir("dnstap-tcp-");
    let file = dir.path().join("captured.fstrm");
    let args: Vec<String> = [
        "dnstap",
        "capture",
        "--tcp",
        "127.0.0.1:0",
        "-w",
        file.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let mut capture = ChildGuard::spawn(
        "bulwark capture",
        &bulwark_bin(),
        &args,
        dir.path().join("cap.log"),
    );
    // Port 0: the capture names the port it got when it starts listening.
    let mut listen = None;
    wait_until("the capture listener", || {
        listen = capture
            .log()
            .lines()
            .find_map(|l| Some(l.split_once("listening on tcp:")?.1.trim().to_string()));
        listen.is_some()
    });
    let dest = format!("tcp:{}", listen.unwrap());
    let mut server = spawn_bulwark(&[("diff.test.", &diff_zone())], &["--dnstap", &dest]);
    wait_until("bulwark's START", || capture.log().contains("receiving"));
    send_queries(server.addr, Transport::Udp);
    terminate(&mut server.process);
    // bulwark ended its stream with STOP: the capture saw the sender finish.
    wait_until("the sender's end", || capture.log().contains(" done ("));
    terminate(&mut capture);
    assert_logged(&read_text(&file), "AQ", "AR");
}

#[test]
fn file_destination_round_trips_through_read_and_dnstap_ldns() {
    let dir = temp_dir("dnstap-file-");
    let file = dir.path().join("bulwark.fstrm");
    let dest = format!("file:{}", file.display());
    let mut server = spawn_bulwark(&[("diff.test.", &diff_zone())], &["--dnstap", &dest]);
    send_queries(server.addr, Transport::Udp);
    terminate(&mut server.process);

    let text = read_text(&file);
    assert_logged(&text, "AQ", "AR");
    if let Some(text) = dnstap_ldns(&file) {
        assert_logged(&text, " AQ ", " AR ");
    }
}

#[test]
fn read_rejects_a_garbage_file_naming_it() {
    let dir = temp_dir("dnstap-garbage-");
    let file = dir.path().join("garbage.fstrm");
    std::fs::write(&file, b"this is not frame streams at all").unwrap();
    let out = bulwark_dnstap(&["read", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with(file.to_str().unwrap()), "{err}");
    let missing = dir.path().join("missing.fstrm");
    let out = bulwark_dnstap(&["read", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.fstrm"));
}

/// A Frame Streams control frame: escape, length, type, optional content type.
fn control_frame(kind: u32, content_type: Option<&[u8]>) -> Vec<u8> {
    let mut body = kind.to_be_bytes().to_vec();
    if let Some(ct) = content_type {
        body.extend_from_slice(&1u32.to_be_bytes());
        body.extend_from_slice(&(ct.len() as u32).to_be_bytes());
        body.extend_from_slice(ct);
    }
    let mut frame = 0u32.to_be_bytes().to_vec();
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Reads one control frame (escape, length, body) from `s`.
fn read_control(s: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut head = [0u8; 8];
    s.read_exact(&mut head)?;
    let len = u32::from_be_bytes(head[4..8].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(body)
}

#[test]
fn stalled_receiver_costs_dropped_messages_not_answers() {
    let dir = temp_dir("dnstap-stall-");
    let sock = dir.path().join("stall.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    // The receiver shakes hands (READY → ACCEPT → START) and then never reads.
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let ready = read_control(&mut s).unwrap();
        assert_eq!(&ready[..4], &4u32.to_be_bytes(), "READY expected");
        s.write_all(&control_frame(1, Some(b"protobuf:dnstap.Dnstap")))
            .unwrap();
        let start = read_control(&mut s).unwrap();
        assert_eq!(&start[..4], &2u32.to_be_bytes(), "START expected");
        held_tx.send(s).unwrap();
    });
    let dest = format!("unix:{}", sock.display());
    let mut server = spawn_bulwark(&[("diff.test.", &diff_zone())], &["--dnstap", &dest]);
    let held = held_rx
        .recv_timeout(DEADLINE)
        .expect("bulwark completes the handshake");

    // 20,000 queries in windows of 50, each window answered before the next.
    const TOTAL: usize = 20_000;
    const WINDOW: usize = 50;
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.addr).unwrap();
    client.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    let wire = QuerySpec::new("www.diff.test.", RecordType::A).to_wire(0x1234);
    let mut answered = 0usize;
    let mut buf = [0u8; 1500];
    for _ in 0..TOTAL / WINDOW {
        for _ in 0..WINDOW {
            client.send(&wire).unwrap();
        }
        for _ in 0..WINDOW {
            match client.recv(&mut buf) {
                Ok(n) if n >= 12 && buf[..2] == wire[..2] => answered += 1,
                Ok(_) => {}
                Err(e) => panic!("after {answered} answers: {e}"),
            }
        }
    }
    assert_eq!(answered, TOTAL);

    terminate(&mut server.process);
    drop(held);
    let log = strip_ansi(&server.process.log());
    let line = log
        .lines()
        .find(|l| l.contains("dnstap stopped"))
        .unwrap_or_else(|| panic!("no dnstap stop line in:\n{log}"));
    let dropped: u64 = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("dropped="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no dropped= in {line}"));
    assert!(dropped > 0, "{line}");
}

/// The log without terminal colour sequences (ESC [ ... m).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
