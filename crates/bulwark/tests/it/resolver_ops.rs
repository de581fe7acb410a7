#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! bulwark as a resolver, seen from outside: it resolves through knotd
//! (a forward zone to a loopback port: root hints would lead, after
//! priming, to the root servers' port 53), answers its own zones itself, refuses
//! recursion to clients not listed (EDE 18), says why it fails (EDE 22),
//! and its cache is seen and flushed with `bulwark ctl`, counted in the
//! metrics, and expired by the test clock. dnstap carries its CLIENT_ and
//! FORWARDER_ messages, decoded by dnstap-ldns.
//!
//! The deeper scenarios (referrals, glue, CNAME chains across zones, QNAME
//! minimisation, lame servers) are Deckard's (`resolver_scenarios`) and the
//! simulated internet's (`resolver_internet`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use bulwark_proto::message::MessageView;
use hickory_proto::rr::RecordType;

use crate::support::{self, Answer, ChildGuard, EdnsSpec, QuerySpec, Server, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);

/// Served by knotd; bulwark forwards `upstream.test.` to it.
const UPSTREAM: &str = "$ORIGIN upstream.test.\n$TTL 300\n@ SOA ns admin 1 1800 900 604800 60\n@ NS ns\nns A 127.0.0.1\nwww A 192.0.2.80\nalias CNAME www\n";
/// The zone bulwark serves itself.
const LOCAL: &str = "$ORIGIN local.test.\n$TTL 300\n@ SOA ns admin 1 1800 900 604800 60\n@ NS ns\nns A 127.0.0.1\nwww A 198.51.100.7\n";

/// knotd serving `upstream.test.` on a loopback port.
fn upstream(dir: &Path) -> Option<Server> {
    let zone = dir.join("upstream.zone");
    std::fs::write(&zone, UPSTREAM).unwrap();
    support::spawn_knotd(&[("upstream.test.", zone.as_path())])
}

struct Resolver {
    process: ChildGuard,
    addr: SocketAddr,
    socket: PathBuf,
    prometheus: Option<SocketAddr>,
    /// A DNS over TLS listener, when `extra` adds one.
    dot: Option<SocketAddr>,
    /// A DNS over HTTPS listener, likewise.
    doh: Option<SocketAddr>,
    /// A DNS over QUIC listener, likewise.
    doq: Option<SocketAddr>,
}

/// bulwark forwarding `upstream.test.` to `upstream` (and using it as its
/// root hint), serving `local.test.` itself, with `extra` appended to its
/// configuration.
fn resolver(dir: &Path, upstream: SocketAddr, extra: &str, args: &[&str]) -> Resolver {
    std::fs::write(dir.join("local.zone"), LOCAL).unwrap();
    let socket = dir.join("control.sock");
    let config = dir.join("bulwark.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n\
             [prometheus]\nlisten = \"127.0.0.1:0\"\n\n\
             [[zone]]\norigin = \"local.test.\"\nfile = \"local.zone\"\n\n\
             [resolver]\nroot_hints = [\"{upstream}\"]\ndnssec_validation = false\n{extra}\n\n\
             [[resolver.forward]]\nzone = \"upstream.test.\"\naddresses = [\"{upstream}\"]\n",
            socket.display()
        ),
    )
    .unwrap();
    let mut argv = vec![
        "serve".to_string(),
        "--config".to_string(),
        config.display().to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (process, bound) = support::start_bulwark(&argv, &[], dir, "resolver");
    Resolver {
        process,
        addr: bound.dns[0],
        socket,
        prometheus: bound.prometheus,
        dot: bound.dot.first().copied(),
        doh: bound.doh.first().copied(),
        doq: bound.doq.first().copied(),
    }
}

fn ctl(socket: &Path, words: &[&str]) -> Output {
    Command::new(support::bulwark_bin())
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words)
        .output()
        .unwrap()
}

fn ctl_ok(socket: &Path, words: &[&str]) -> String {
    let out = ctl(socket, words);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "ctl {words:?} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn recursive(qname: &str, qtype: RecordType) -> QuerySpec {
    QuerySpec {
        rd: true,
        edns: Some(EdnsSpec {
            payload: 1232,
            dnssec_ok: false,
            version: 0,
        }),
        ..QuerySpec::new(qname, qtype)
    }
}

fn ask(addr: SocketAddr, spec: &QuerySpec) -> Answer {
    support::query(addr, spec, Transport::Udp, TIMEOUT).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// The raw response, for what hickory does not show (EDE).
fn ask_raw(addr: SocketAddr, spec: &QuerySpec) -> Vec<u8> {
    let wire = spec.to_wire(0x5151);
    support::exchange_udp(addr, &wire, 0x5151, TIMEOUT).unwrap()
}

/// The TTL of the first answer record ("owner ttl class type rdata").
fn first_ttl(a: &Answer) -> u32 {
    a.answer[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn resolves_through_knotd_and_answers_its_own_zones_itself() {
    let dir = support::temp_dir("bulwark-resolver-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let r = resolver(dir.path(), knot.addr, "", &[]);

    let a = ask(r.addr, &recursive("alias.upstream.test.", RecordType::A));
    assert_eq!(a.rcode_name(), "NOERROR", "{a}");
    assert!(a.ra && a.rd && !a.aa, "RA and RD set, AA clear: {a}");
    assert_eq!(a.rdata_of("CNAME"), ["www.upstream.test."], "{a}");
    assert_eq!(a.rdata_of("A"), ["192.0.2.80"], "{a}");

    let nx = ask(r.addr, &recursive("nope.upstream.test.", RecordType::A));
    assert_eq!(nx.rcode_name(), "NXDOMAIN", "{nx}");
    assert!(nx.authority.iter().any(|r| r.contains("SOA")), "{nx}");

    // Its own zone: answered from it, authoritatively, RD or not.
    let own = ask(r.addr, &recursive("www.local.test.", RecordType::A));
    assert!(own.aa, "{own}");
    assert_eq!(own.rdata_of("A"), ["198.51.100.7"]);

    // A question without RD for a name not ours: not authoritative.
    let plain = ask_raw(
        r.addr,
        &QuerySpec {
            rd: false,
            ..recursive("www.upstream.test.", RecordType::A)
        },
    );
    assert_eq!(
        MessageView::parse(&plain).unwrap().rcode(),
        bulwark_proto::Rcode::REFUSED
    );
    assert_eq!(
        support::extended_error(&plain).map(|(code, _)| code),
        Some(20)
    );
    // Over TCP too.
    let tcp = support::query(
        r.addr,
        &recursive("www.upstream.test.", RecordType::A),
        Transport::Tcp,
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(tcp.rdata_of("A"), ["192.0.2.80"], "{tcp}");
    drop(r);
}

#[test]
fn the_cache_is_counted_flushed_and_expired_by_the_test_clock() {
    let dir = support::temp_dir("bulwark-resolver-cache-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let start = 1_900_000_000u64;
    let start_arg = start.to_string();
    let r = resolver(dir.path(), knot.addr, "", &["--test-clock", &start_arg]);
    let prometheus = r.prometheus.expect("prometheus bound");
    let q = recursive("www.upstream.test.", RecordType::A);

    let first = ask(r.addr, &q);
    assert_eq!(first.rdata_of("A"), ["192.0.2.80"], "{first}");
    let sent = support::metric(
        &support::scrape_metrics(prometheus),
        "bulwark_resolver_upstream_queries_total",
    );
    assert!(sent >= 1);

    // Asked again: from the cache, no query upstream, the TTL counting down.
    let again = ask(r.addr, &q);
    assert!(first_ttl(&again) <= first_ttl(&first));
    let text = support::scrape_metrics(prometheus);
    assert_eq!(
        support::metric(&text, "bulwark_resolver_upstream_queries_total"),
        sent
    );
    assert!(support::metric(&text, "bulwark_resolver_answers_from_cache_total") >= 1);
    assert!(support::metric(&text, "bulwark_resolver_cache_entries") >= 1);
    let stats = ctl_ok(&r.socket, &["cache", "stats"]);
    assert!(
        stats
            .lines()
            .any(|l| l.starts_with("entries ") && l != "entries 0"),
        "{stats}"
    );

    // 200 s later the TTL (300) has 100 s left; 400 s later it is gone.
    ctl_ok(&r.socket, &["test-clock", "advance", "200"]);
    let later = ask(r.addr, &q);
    assert!(first_ttl(&later) <= 100, "{later}");
    assert_eq!(
        support::metric(
            &support::scrape_metrics(prometheus),
            "bulwark_resolver_upstream_queries_total"
        ),
        sent
    );
    ctl_ok(&r.socket, &["test-clock", "advance", "200"]);
    let expired = ask(r.addr, &q);
    assert_eq!(expired.rdata_of("A"), ["192.0.2.80"]);
    let resent = support::metric(
        &support::scrape_metrics(prometheus),
        "bulwark_resolver_upstream_queries_total",
    );
    assert!(resent > sent, "expired data is asked for again");

    // Flushing the name makes the next question go upstream again.
    let out = ctl_ok(
        &r.socket,
        &["cache", "flush", "--name", "www.upstream.test."],
    );
    assert!(out.contains("flushed"), "{out}");
    ask(r.addr, &q);
    let after_flush = support::metric(
        &support::scrape_metrics(prometheus),
        "bulwark_resolver_upstream_queries_total",
    );
    assert!(after_flush > resent);
    let out = ctl_ok(&r.socket, &["cache", "flush"]);
    assert!(out.contains("flushed"), "{out}");
    assert!(ctl_ok(&r.socket, &["cache", "stats"]).contains("entries 0"));
    drop(r);
}

#[test]
fn the_cache_survives_a_reload() {
    let dir = support::temp_dir("bulwark-resolver-reload-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let r = resolver(dir.path(), knot.addr, "", &[]);
    let prometheus = r.prometheus.expect("prometheus bound");
    let q = recursive("www.upstream.test.", RecordType::A);
    assert_eq!(ask(r.addr, &q).rdata_of("A"), ["192.0.2.80"]);
    let sent = support::metric(
        &support::scrape_metrics(prometheus),
        "bulwark_resolver_upstream_queries_total",
    );
    let entries = |r: &Resolver| {
        ctl_ok(&r.socket, &["cache", "stats"])
            .lines()
            .find_map(|l| l.strip_prefix("entries ").map(str::to_string))
            .unwrap_or_default()
    };
    let before = entries(&r);
    assert_ne!(before, "0");

    // A reload re-reads the zones (local.test. changes) and keeps the cache.
    std::fs::write(
        dir.path().join("local.zone"),
        LOCAL
            .replace("1 1800", "2 1800")
            .replace("198.51.100.7", "198.51.100.8"),
    )
    .unwrap();
    ctl_ok(&r.socket, &["reload"]);
    let local = ask(r.addr, &recursive("www.local.test.", RecordType::A));
    assert_eq!(local.rdata_of("A"), ["198.51.100.8"], "{local}");
    assert_eq!(entries(&r), before);
    assert_eq!(ask(r.addr, &q).rdata_of("A"), ["192.0.2.80"]);
    assert_eq!(
        support::metric(
            &support::scrape_metrics(prometheus),
            "bulwark_resolver_upstream_queries_total"
        ),
        sent,
        "answered from the cache kept across the reload"
    );
    drop(r);
}

#[test]
fn the_test_clock_and_the_cache_commands_say_when_they_do_not_apply() {
    let dir = support::temp_dir("bulwark-resolver-clock-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let r = resolver(dir.path(), knot.addr, "", &[]);
    let said = |out: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let out = ctl(&r.socket, &["test-clock", "advance", "10"]);
    assert!(!out.status.success());
    assert!(said(&out).contains("--test-clock"), "{}", said(&out));
    drop(r);

    // Without [resolver]: the cache commands say recursion is off.
    let auth = support::spawn_bulwark(
        &[],
        &[
            "--control-socket",
            dir.path().join("a.sock").to_str().unwrap(),
        ],
    );
    let out = ctl(&dir.path().join("a.sock"), &["cache", "stats"]);
    assert!(!out.status.success());
    assert!(said(&out).contains("recursion is off"), "{}", said(&out));
    drop(auth);
}

#[test]
fn clients_not_allowed_to_recurse_are_refused_with_ede_18() {
    let dir = support::temp_dir("bulwark-resolver-acl-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    // Only 10/8 may recurse; the test asks from 127.0.0.1.
    let r = resolver(
        dir.path(),
        knot.addr,
        "allow_recursion = [\"10.0.0.0/8\"]",
        &[],
    );
    let raw = ask_raw(r.addr, &recursive("www.upstream.test.", RecordType::A));
    let view = MessageView::parse(&raw).unwrap();
    assert_eq!(view.rcode(), bulwark_proto::Rcode::REFUSED);
    assert_eq!(
        support::extended_error(&raw).map(|(code, _)| code),
        Some(18)
    );
    // Its own zone is still answered.
    let own = ask(r.addr, &recursive("www.local.test.", RecordType::A));
    assert_eq!(own.rdata_of("A"), ["198.51.100.7"]);
    drop(r);
}

#[test]
fn an_unreachable_root_is_servfail_saying_no_reachable_authority() {
    let dir = support::temp_dir("bulwark-resolver-down-");
    // A port nobody listens on: every query is refused by the kernel.
    let dead: SocketAddr = ([127, 0, 0, 1], support::free_port()).into();
    let r = resolver(
        dir.path(),
        dead,
        "query_timeout_ms = 200\nmax_upstream_queries = 6",
        &[],
    );
    let raw = ask_raw(r.addr, &recursive("www.upstream.test.", RecordType::A));
    let view = MessageView::parse(&raw).unwrap();
    assert_eq!(view.rcode(), bulwark_proto::Rcode::SERVFAIL);
    let code = support::extended_error(&raw).map(|(code, _)| code);
    assert!(
        matches!(code, Some(22 | 23)),
        "EDE 22 (no reachable authority) or 23 (network error), not {code:?}"
    );
    drop(r);
}

#[test]
fn dnstap_logs_client_and_resolver_messages_that_dnstap_ldns_reads() {
    let dir = support::temp_dir("bulwark-resolver-tap-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let Some(ldns) = support::require_tool("dnstap-ldns") else {
        return;
    };
    let tap = dir.path().join("resolver.tap");
    let extra = format!(
        "\n[dnstap]\ndestination = \"file:{}\"\nmessages = [\"client_query\", \"client_response\", \"forwarder_query\", \"forwarder_response\"]\n",
        tap.display()
    );
    let mut r = resolver(dir.path(), knot.addr, &extra, &[]);
    ask(r.addr, &recursive("www.upstream.test.", RecordType::A));
    // From the cache: CLIENT_QUERY and CLIENT_RESPONSE logged by the worker.
    ask(r.addr, &recursive("www.upstream.test.", RecordType::A));
    r.process.signal("TERM");
    r.process
        .wait_exit(TIMEOUT)
        .expect("bulwark stops on SIGTERM");
    let text = support::run_tool(&ldns, &["-r".to_string(), tap.display().to_string()]);
    // Forwarded: FORWARDER_QUERY and FORWARDER_RESPONSE (FQ, FR).
    for mark in ["CQ", "CR", "FQ", "FR"] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {mark} ")) && l.contains("www.upstream.test")),
            "no {mark} line for www.upstream.test in:\n{text}"
        );
    }
    // Two client questions, each with its response.
    let cq = text.lines().filter(|l| l.contains(" CQ ")).count();
    let cr = text.lines().filter(|l| l.contains(" CR ")).count();
    assert_eq!((cq, cr), (2, 2), "{text}");
}

#[test]
fn clients_over_tls_https_and_quic_are_resolved_for_with_padded_answers_that_dnstap_marks() {
    let dir = support::temp_dir("bulwark-resolver-dot-");
    let Some(knot) = upstream(dir.path()) else {
        return;
    };
    let (Some(kdig), Some(ldns), Some(python)) = (
        support::require_tool("kdig"),
        support::require_tool("dnstap-ldns"),
        support::require_python_module("aioquic"),
    ) else {
        return;
    };
    let (cert, _) = support::write_certificate(dir.path());
    let tap = dir.path().join("resolver.tap");
    let extra = format!(
        "\n[[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"tls\"\ncertificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
         [[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"https\"\ncertificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
         [[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"quic\"\ncertificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
         [dnstap]\ndestination = \"file:{}\"\nmessages = [\"client_query\", \"client_response\"]\n",
        tap.display()
    );
    let mut r = resolver(dir.path(), knot.addr, &extra, &[]);
    let dot = r.dot.expect("a dot line in the ready file");
    let doh = r.doh.expect("a doh line in the ready file");
    // The first answer is resolved (a deferred reply), the second comes
    // from the cache: both padded, as kdig pads its queries over TLS; then
    // the same over HTTPS, from a cache that does not hold `alias`.
    for (server, extra, qname) in [
        (dot, "+tls", "www.upstream.test."),
        (dot, "+tls", "www.upstream.test."),
        (doh, "+https", "alias.upstream.test."),
        (doh, "+https", "alias.upstream.test."),
    ] {
        let out = Command::new(&kdig)
            .args([
                format!("@{}", server.ip()),
                "-p".to_string(),
                server.port().to_string(),
                extra.to_string(),
                format!("+tls-ca={}", cert.display()),
                "+tls-hostname=localhost".to_string(),
                "+time=5".to_string(),
                "+retry=0".to_string(),
                qname.to_string(),
                "A".to_string(),
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("status: NOERROR"), "{text}");
        assert!(text.contains("192.0.2.80"), "{text}");
        assert!(text.contains(";; PADDING:"), "{text}");
        let size: usize = text
            .lines()
            .find_map(|l| l.strip_prefix(";; Received "))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(size % 468, 0, "{text}");
    }
    // DNS over QUIC (dnspython with aioquic), one connection: `ns` resolved,
    // then from the cache, padded both times.
    let doq = r.doq.expect("a doq line in the ready file");
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/quic_client.py"))
        .args(["doq", &doq.ip().to_string(), &doq.port().to_string()])
        .arg(&cert)
        .args(["ns.upstream.test.:A:pad", "ns.upstream.test.:A:pad"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.lines().map(str::trim_end).collect::<Vec<_>>(),
        ["NOERROR 0 padded 127.0.0.1", "NOERROR 0 padded 127.0.0.1"],
        "{text}"
    );
    r.process.signal("TERM");
    r.process
        .wait_exit(TIMEOUT)
        .expect("bulwark stops on SIGTERM");
    let text = support::run_tool(&ldns, &["-r".to_string(), tap.display().to_string()]);
    let client_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" CQ ") || l.contains(" CR "))
        .collect();
    assert_eq!(client_lines.len(), 12, "{text}");
    // dnstap-ldns decodes every message, the responses padded to 468
    // octets; its schema predates DOT (it prints `?` for the protocol),
    // so bulwark's reader names it.
    assert!(
        client_lines
            .iter()
            .all(|l| !l.contains(" CR ") || l.contains(" 468b ")),
        "{text}"
    );
    let yaml = support::dnstap_yaml(&tap);
    assert_eq!(
        yaml.matches("socket_protocol: DOT").count(),
        4,
        "every client message over TLS is marked DOT:\n{yaml}"
    );
    assert_eq!(
        yaml.matches("socket_protocol: DOH").count(),
        4,
        "every client message over HTTPS is marked DOH:\n{yaml}"
    );
    assert_eq!(
        yaml.matches("socket_protocol: DOQ").count(),
        4,
        "every client message over QUIC is marked DOQ:\n{yaml}"
    );
}
