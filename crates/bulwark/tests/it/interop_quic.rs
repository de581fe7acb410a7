#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! DNS over QUIC (RFC 9250) and DNS over HTTPS on HTTP/3 from clients no one
//! here wrote: dnspython with aioquic (from PyPI: Debian has no aioquic;
//! scripts/test.sh installs both into target/pyquic) verifies bulwark's
//! certificate and reads its answers, padded when its queries are; HTTP/2
//! clients are told of HTTP/3 by `Alt-Svc`; a zone transfer over DoQ (XoQ)
//! carries the records kdig transfers over TCP; the metrics count DoQ apart,
//! and dnstap marks its messages DOQ.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{self, ChildGuard};

const ORIGIN: &str = "diff.test.";

struct QuicServer {
    process: ChildGuard,
    dns: SocketAddr,
    doq: SocketAddr,
    doh: SocketAddr,
    doh3: SocketAddr,
    prometheus: SocketAddr,
    control: PathBuf,
    cert: PathBuf,
    tap: PathBuf,
    dir: tempfile::TempDir,
}

fn start() -> QuicServer {
    let dir = support::temp_dir("bulwark-quic-");
    let (cert, _) = support::write_certificate(dir.path());
    let tap = dir.path().join("quic.tap");
    let control = dir.path().join("control.sock");
    let config = dir.path().join("bulwark.toml");
    let zone = support::data_dir().join("diff.zone");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [prometheus]\nlisten = \"127.0.0.1:0\"\n\n\
             [[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"quic\"\n\
             certificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
             [[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"https\"\nhttp3 = true\n\
             certificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
             [dnstap]\ndestination = \"file:{}\"\nmessages = [\"auth_query\", \"auth_response\"]\n\n\
             [acl.loopback]\nallow = [\"127.0.0.0/8\"]\n\n\
             [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"{}\"\nallow_transfer = [\"loopback\"]\n",
            control.display(),
            tap.display(),
            zone.display()
        ),
    )
    .unwrap();
    let args = ["serve", "--config", &config.display().to_string()].map(String::from);
    let (process, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    QuicServer {
        process,
        dns: bound.dns[0],
        doq: bound.doq[0],
        doh: bound.doh[0],
        doh3: bound.doh3[0],
        prometheus: bound.prometheus.unwrap(),
        control,
        cert,
        tap,
        dir,
    }
}

/// Runs the dnspython client (`mode`: doq, h3 for POST, h3get for GET) with
/// `queries` (`QNAME:QTYPE[:pad]`) over one connection; its output lines.
fn ask(python: &Path, mode: &str, server: SocketAddr, ca: &Path, queries: &[&str]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/quic_client.py");
    let out = Command::new(python)
        .arg(script)
        .args([
            mode,
            &server.ip().to_string(),
            &server.port().to_string(),
            &ca.display().to_string(),
        ])
        .args(queries)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{mode} client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(str::to_string).collect()
}

const QUERIES: [&str; 3] = [
    "www.diff.test.:A",
    "www.diff.test.:AAAA:pad",
    "nx.diff.test.:A",
];

/// The lines every run of [`QUERIES`] prints: answers from the zone, the
/// message ID 0 that DoQ and DoH require, padding only when asked for.
fn check_answers(lines: &[String]) {
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0].trim_end(),
        "NOERROR 0 unpadded 192.0.2.80",
        "{lines:?}"
    );
    assert_eq!(
        lines[1].trim_end(),
        "NOERROR 0 padded 2001:db8::80",
        "{lines:?}"
    );
    assert_eq!(lines[2].trim_end(), "NXDOMAIN 0 unpadded", "{lines:?}");
}

#[test]
fn dnspython_asks_over_doq_and_http3_and_dnstap_marks_doq() {
    let Some(python) = support::require_python_module("aioquic") else {
        return;
    };
    let mut s = start();
    check_answers(&ask(&python, "doq", s.doq, &s.cert, &QUERIES));
    check_answers(&ask(&python, "h3", s.doh3, &s.cert, &QUERIES));
    check_answers(&ask(&python, "h3get", s.doh3, &s.cert, &QUERIES));

    // A client that trusts another CA does not get in.
    let other = support::temp_dir("bulwark-quic-other-");
    let (other_ca, _) = support::write_certificate(other.path());
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/quic_client.py"))
        .args(["doq", "127.0.0.1", &s.doq.port().to_string()])
        .arg(&other_ca)
        .arg("www.diff.test.:A")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");

    let metrics = support::scrape_metrics(s.prometheus);
    assert_eq!(
        support::metric(&metrics, "bulwark_quic_queries_total"),
        3,
        "{metrics}"
    );
    assert_eq!(
        support::metric(&metrics, "bulwark_https_queries_total"),
        6,
        "{metrics}"
    );
    assert!(
        metrics.contains("bulwark_queries_total{transport=\"quic\""),
        "{metrics}"
    );
    // One connection per run, the refused one included (its handshake failed).
    assert_eq!(
        support::metric(&metrics, "bulwark_quic_connections_accepted_total"),
        2,
        "{metrics}"
    );
    assert!(
        metrics.contains("bulwark_quic_connections_closed_total{reason=\"handshake_failed\"} 1"),
        "{metrics}"
    );

    s.process.signal("TERM");
    s.process
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("bulwark stops on SIGTERM");
    let yaml = support::dnstap_yaml(&s.tap);
    assert_eq!(
        yaml.matches("socket_protocol: DOQ").count(),
        6,
        "every message over QUIC is marked DOQ:\n{yaml}"
    );
    assert_eq!(
        yaml.matches("socket_protocol: DOH").count(),
        12,
        "every message over HTTP/3 is marked DOH:\n{yaml}"
    );
}

#[test]
fn http2_answers_advertise_http3_on_the_same_port() {
    let Some(curl) = support::require_tool("curl") else {
        return;
    };
    let s = start();
    let out = Command::new(curl)
        .args([
            "-s",
            "--http2",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "--cacert",
            &s.cert.display().to_string(),
            "--resolve",
            &format!("localhost:{}:127.0.0.1", s.doh.port()),
            &format!(
                "https://localhost:{}/dns-query?dns=AAABAAABAAAAAAAAA3d3dwRkaWZmBHRlc3QAAAEAAQ",
                s.doh.port()
            ),
        ])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(head.starts_with("http/2 200"), "{head}");
    assert_eq!(s.doh.port(), s.doh3.port());
    assert!(
        head.contains(&format!("alt-svc: h3=\":{}\"; ma=86400", s.doh3.port())),
        "{head}"
    );
}

#[test]
fn a_zone_transfer_over_doq_carries_what_one_over_tcp_does() {
    let (Some(python), Some(kdig)) = (
        support::require_python_module("aioquic"),
        support::require_tool("kdig"),
    ) else {
        return;
    };
    let s = start();
    // The reference: kdig's AXFR over plain TCP, "(M messages, R records)".
    let tcp = support::run_tool(
        &kdig,
        &[
            format!("@{}", s.dns.ip()),
            "-p".to_string(),
            s.dns.port().to_string(),
            "+time=5".to_string(),
            ORIGIN.to_string(),
            "AXFR".to_string(),
        ],
    );
    let records: usize = tcp
        .lines()
        .find_map(|l| l.strip_prefix(";; Received "))
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no transfer summary in:\n{tcp}"))
        .parse()
        .unwrap();
    assert!(records > 10, "{tcp}");
    let lines = ask(&python, "xoq", s.doq, &s.cert, &[ORIGIN]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let words: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(words[0], "messages");
    assert!(words[1].parse::<usize>().unwrap() >= 1, "{lines:?}");
    assert_eq!(
        words[3].parse::<usize>().unwrap(),
        records,
        "{lines:?}\n{tcp}"
    );
}

fn ctl(s: &QuicServer, command: &str) -> (bool, String) {
    let out = Command::new(support::bulwark_bin())
        .args(["ctl", "--socket"])
        .arg(&s.control)
        .arg(command)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Whether a DoQ (or HTTP/3) client trusting `ca` is answered.
fn answered(python: &Path, mode: &str, server: SocketAddr, ca: &Path) -> bool {
    Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/quic_client.py"))
        .args([mode, "127.0.0.1", &server.port().to_string()])
        .arg(ca)
        .arg("www.diff.test.:A")
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn status_names_the_quic_listeners_and_a_reload_serves_them_the_new_certificate() {
    let Some(python) = support::require_python_module("aioquic") else {
        return;
    };
    let s = start();
    let (ok, status) = ctl(&s, "status");
    assert!(ok, "{status}");
    assert!(
        status.contains(&format!("listen {} quic\n", s.doq)),
        "{status}"
    );
    assert!(
        status.contains(&format!("listen {} h3\n", s.doh3)),
        "{status}"
    );
    assert!(
        status.contains("quic accepted 0 rejected 0 queries 0"),
        "{status}"
    );

    let old_ca = s.dir.path().join("old-ca.pem");
    std::fs::copy(&s.cert, &old_ca).unwrap();
    support::write_certificate(s.dir.path());
    let (ok, said) = ctl(&s, "reload");
    assert!(ok, "{said}");
    for (mode, server) in [("doq", s.doq), ("h3", s.doh3)] {
        assert!(
            answered(&python, mode, server, &s.cert),
            "{mode}: the new certificate"
        );
        assert!(
            !answered(&python, mode, server, &old_ca),
            "{mode}: the old one is gone"
        );
    }
    let (_, status) = ctl(&s, "status");
    assert!(
        status.contains("quic accepted 2 rejected 0 queries 1"),
        "{status}"
    );
}
