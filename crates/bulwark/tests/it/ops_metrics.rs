#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The Prometheus endpoint: scraped over real HTTP, parsed by the Prometheus
//! project's own Python parser (Debian's python3-prometheus-client), and
//! checked for names, types and counters that follow the traffic sent.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hickory_proto::rr::RecordType;
use serde_json::Value;

use crate::support;
use crate::support::{QuerySpec, Server, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);
const ORIGIN: &str = "diff.test.";

/// Serves the test zone with `[prometheus]` on port 0; returns the server
/// and the endpoint's address, read from the server's ready file (the
/// endpoint accepts connections from then on).
fn start(extra: &str) -> (Server, SocketAddr, tempfile::TempDir) {
    let dir = support::temp_dir("bulwark-metrics-");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        format!("[server]\nthreads = 1\n\n[prometheus]\nlisten = \"127.0.0.1:0\"\n{extra}"),
    )
    .unwrap();
    let zone = support::data_dir().join("diff.zone");
    let args: Vec<String> = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--zone",
        &format!("{ORIGIN}={}", zone.display()),
        "--config",
        &conf.display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    let (process, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let metrics = bound
        .prometheus
        .unwrap_or_else(|| panic!("no prometheus line in the ready file: {bound:?}"));
    let mut server = Server {
        process,
        addr: bound.dns[0],
        dir: support::temp_dir("bulwark-metrics-run-"),
    };
    // One query, as `spawn_bulwark` asks: the query families exist (with
    // their labels) once something was counted.
    server.wait_ready(ORIGIN, RecordType::SOA, |_| true);
    (server, metrics, dir)
}

/// One HTTP/1.1 request; returns the status code and the body.
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

fn scrape(addr: SocketAddr) -> String {
    let (status, body) = http(addr, "GET", "/metrics");
    assert_eq!(status, 200, "{body}");
    body
}

/// A python3 with prometheus_client: Debian's interpreter comes first, as the
/// python3-* packages install for it alone (a python3 earlier on PATH, from
/// pyenv say, would not see them). `None` (after a note) outside CI when it
/// is missing; a failure under CI.
fn prometheus_parser() -> Option<PathBuf> {
    support::require_python_module("prometheus_client")
}

/// The families prometheus_client's parser finds in `text`, as JSON:
/// `{name: {type, samples: [[sample_name, labels, value], ...]}}`.
fn parse_with_prometheus_client(python: &Path, text: &str) -> serde_json::Map<String, Value> {
    let program = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    out[family.name] = {
        "type": family.type,
        "samples": [[s.name, s.labels, s.value] for s in family.samples],
    }
print(json.dumps(out))
"#;
    let mut child = Command::new(python)
        .args(["-c", program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client could not parse the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).unwrap() {
        Value::Object(families) => families,
        other => panic!("{other:?}"),
    }
}

/// The sum of the samples named `sample` whose labels include `labels`.
fn value(families: &serde_json::Map<String, Value>, sample: &str, labels: &[(&str, &str)]) -> f64 {
    families
        .values()
        .flat_map(|f| f["samples"].as_array().unwrap().iter())
        .filter(|s| s[0] == sample)
        .filter(|s| labels.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap())
        .sum()
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn ask(server: &Server, qname: &str, transport: Transport) -> support::Answer {
    support::query_retry(
        server.addr,
        &QuerySpec::new(qname, RecordType::A),
        transport,
        TIMEOUT,
        3,
    )
    .unwrap()
}

#[test]
fn every_family_parses_with_valid_names_and_types() {
    let Some(python) = prometheus_parser() else {
        return;
    };
    let (_server, metrics, _dir) = start("");
    let text = scrape(metrics);
    let families = parse_with_prometheus_client(&python, &text);
    assert!(families.len() >= 10, "{text}");
    for (name, family) in &families {
        assert!(is_metric_name(name), "{name}");
        assert!(name.starts_with("bulwark_"), "{name}");
        let kind = family["type"].as_str().unwrap();
        assert!(
            ["counter", "gauge", "histogram"].contains(&kind),
            "{name}: {kind}"
        );
        for s in family["samples"].as_array().unwrap() {
            let sample = s[0].as_str().unwrap();
            assert!(is_metric_name(sample), "{sample}");
            if kind == "counter" {
                // The parser strips _total from the family, not the sample.
                assert!(
                    sample.ends_with("_total") || sample.ends_with("_created"),
                    "{sample}"
                );
            }
        }
    }
    for expected in [
        "bulwark_queries",
        "bulwark_responses",
        "bulwark_response_size_bytes",
        "bulwark_query_duration_seconds",
        "bulwark_truncated",
        "bulwark_dropped",
        "bulwark_malformed",
        "bulwark_tcp_connections_open",
        "bulwark_zones",
        "bulwark_uptime_seconds",
    ] {
        assert!(
            families.contains_key(expected),
            "{expected} missing:\n{text}"
        );
    }
    // The text carries HELP and TYPE for every family.
    assert!(
        text.contains("# TYPE bulwark_queries_total counter"),
        "{text}"
    );
    assert!(text.contains("# HELP bulwark_queries_total "), "{text}");
}

#[test]
fn counters_rise_with_the_traffic_sent() {
    let Some(python) = prometheus_parser() else {
        return;
    };
    let (server, metrics, _dir) = start("");
    let before = parse_with_prometheus_client(&python, &scrape(metrics));
    // More than one latency sampling interval (1 query in 64 per worker;
    // one worker here).
    for _ in 0..120 {
        assert_eq!(
            ask(&server, "www.diff.test.", Transport::Udp).rcode_name(),
            "NOERROR"
        );
    }
    for _ in 0..10 {
        assert_eq!(
            ask(&server, "nope.diff.test.", Transport::Udp).rcode_name(),
            "NXDOMAIN"
        );
    }
    for _ in 0..4 {
        assert_eq!(
            ask(&server, "www.diff.test.", Transport::Tcp).rcode_name(),
            "NOERROR"
        );
    }
    let after = parse_with_prometheus_client(&python, &scrape(metrics));

    let rise = |sample: &str, labels: &[(&str, &str)]| {
        value(&after, sample, labels) - value(&before, sample, labels)
    };
    let udp_a = [("transport", "udp"), ("qtype", "A")];
    assert!(rise("bulwark_queries_total", &udp_a) >= 130.0);
    let tcp_a = [("transport", "tcp"), ("qtype", "A")];
    assert!(rise("bulwark_queries_total", &tcp_a) >= 4.0);
    let nx = [("transport", "udp"), ("rcode", "NXDOMAIN")];
    assert!(rise("bulwark_responses_total", &nx) >= 10.0);
    assert!(rise("bulwark_response_size_bytes_count", &[("transport", "udp")]) >= 130.0);
    assert!(rise("bulwark_response_size_bytes_sum", &[("transport", "udp")]) > 0.0);
    assert!(rise("bulwark_tcp_connections_accepted_total", &[]) >= 4.0);

    // The latency histogram: cumulative buckets up to +Inf, which equals
    // the count.
    let buckets: Vec<(f64, f64)> = after["bulwark_query_duration_seconds"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == "bulwark_query_duration_seconds_bucket" && s[1]["transport"] == "udp")
        .map(|s| {
            let le = s[1]["le"].as_str().unwrap();
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            (le, s[2].as_f64().unwrap())
        })
        .collect();
    assert!(buckets.len() >= 5, "{buckets:?}");
    assert!(
        buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "{buckets:?}"
    );
    let (last_le, last_count) = *buckets.last().unwrap();
    assert!(last_le.is_infinite());
    let count = value(
        &after,
        "bulwark_query_duration_seconds_count",
        &[("transport", "udp")],
    );
    assert_eq!(last_count, count);
    assert!(count > 0.0, "queries are sampled for latency");
}

#[test]
fn other_paths_and_methods_are_refused() {
    let (_server, metrics, _dir) = start("");
    let (status, _) = http(metrics, "GET", "/nope");
    assert_eq!(status, 404);
    let (status, _) = http(metrics, "POST", "/metrics");
    assert_eq!(status, 405);
    // Still serving after the refusals.
    assert!(scrape(metrics).contains("bulwark_queries_total"));
}

#[test]
fn without_the_section_nothing_listens() {
    let dir = support::temp_dir("bulwark-metrics-off-");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(&conf, "[statistics]\nenabled = true\n").unwrap();
    let conf = conf.display().to_string();
    let zone = support::data_dir().join("diff.zone");
    let server = support::spawn_bulwark(&[(ORIGIN, &zone)], &["--config", conf.as_str()]);
    // No HTTP listener in the process: its sockets are the DNS ones only.
    let listening = listening_tcp_ports(server.process.pid());
    assert_eq!(listening, vec![server.addr.port()], "{listening:?}");
}

/// The TCP ports a process listens on, from /proc/net/tcp and its fds.
fn listening_tcp_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|p| {
            let p = p.display().to_string();
            Some(p.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // st 0A is LISTEN; local_address is HEXIP:HEXPORT.
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1].rsplit(':').next().unwrap();
                ports.push(u16::from_str_radix(port, 16).unwrap());
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Every metric the Grafana dashboard in docs/ queries is one the server
/// exposes (with rate limiting and dnstap on, so that their families exist).
#[test]
fn the_grafana_dashboard_queries_only_metrics_that_exist() {
    let Some(python) = prometheus_parser() else {
        return;
    };
    // The tap file goes next to the configuration (a relative path).
    let (_server, metrics, _dir) =
        start("[rrl]\nresponses_per_second = 100\n\n[dnstap]\ndestination = \"file:tap.fstrm\"\n");
    let exposed = parse_with_prometheus_client(&python, &scrape(metrics));
    let samples: std::collections::BTreeSet<String> = exposed
        .values()
        .flat_map(|f| f["samples"].as_array().unwrap().iter())
        .map(|s| s[0].as_str().unwrap().to_string())
        .collect();
    let dashboard_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/grafana/bulwark-dashboard.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(&dashboard_path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 20, "{exprs:?}");
    let mut used = std::collections::BTreeSet::new();
    for expr in &exprs {
        let mut rest = expr.as_str();
        while let Some(at) = rest.find("bulwark_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            used.insert(name);
        }
    }
    for name in &used {
        assert!(
            samples.contains(name),
            "the dashboard queries {name}, which the server does not expose"
        );
    }
    for core in [
        "bulwark_queries_total",
        "bulwark_responses_total",
        "bulwark_query_duration_seconds_bucket",
        "bulwark_truncated_total",
        "bulwark_dropped_total",
    ] {
        assert!(used.contains(core), "the dashboard shows {core}");
    }
}

fn collect_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr" | "query", Value::String(s)) => out.push(s.clone()),
                    _ => collect_exprs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}
