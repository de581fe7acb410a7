//! Interop with the everyday clients: kdig (Knot) and dig (BIND), over UDP
//! and TCP, read answers from bulwark correctly. dig sends EDNS with a
//! COOKIE option by default, so this also covers a query carrying options.
//!
//! The same checks run against knotd serving the same zone, which keeps the
//! expectations (and the output parsing) honest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::support;

const ORIGIN: &str = "diff.test.";

fn zone_file() -> PathBuf {
    support::data_dir().join("diff.zone")
}

/// A client's view of a response, parsed from its text output.
#[derive(Debug, Default)]
struct ClientAnswer {
    status: String,
    flags: Vec<String>,
    /// Records as whitespace-separated fields: owner, TTL, class, type, rdata...
    answer: Vec<Vec<String>>,
    authority: Vec<Vec<String>>,
    text: String,
}

impl ClientAnswer {
    /// Reads dig's or kdig's presentation output; both print a header line
    /// with `status:`, a flags line and `;; ANSWER SECTION:` style headings.
    fn parse(text: &str) -> ClientAnswer {
        let mut out = ClientAnswer {
            text: text.to_string(),
            ..ClientAnswer::default()
        };
        #[derive(PartialEq)]
        enum Section {
            Other,
            Answer,
            Authority,
        }
        let mut section = Section::Other;
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(pos) = trimmed.find("status: ") {
                let rest = &trimmed[pos + "status: ".len()..];
                out.status = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
            }
            let lower = trimmed.to_ascii_lowercase();
            if lower.starts_with(";; flags:") {
                let flags = lower.trim_start_matches(";; flags:");
                let flags = flags.split(';').next().unwrap_or("");
                out.flags = flags.split_whitespace().map(str::to_string).collect();
            }
            if trimmed.starts_with(";;") && trimmed.contains("SECTION") {
                section = if trimmed.contains("ANSWER") {
                    Section::Answer
                } else if trimmed.contains("AUTHORITY") {
                    Section::Authority
                } else {
                    Section::Other
                };
                continue;
            }
            if trimmed.is_empty() {
                section = Section::Other;
                continue;
            }
            if trimmed.starts_with(';') {
                continue;
            }
            let fields: Vec<String> = trimmed.split_whitespace().map(str::to_string).collect();
            match section {
                Section::Answer => out.answer.push(fields),
                Section::Authority => out.authority.push(fields),
                Section::Other => {}
            }
        }
        out
    }

    /// Records of `rtype` in `records` whose owner is `owner`, as rdata text.
    fn rdata(records: &[Vec<String>], owner: &str, rtype: &str) -> Vec<String> {
        records
            .iter()
            .filter(|f| {
                f.len() >= 5 && f[0].eq_ignore_ascii_case(owner) && f[3].eq_ignore_ascii_case(rtype)
            })
            .map(|f| f[4..].join(" "))
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
enum Client {
    Kdig,
    Dig,
}

/// Runs one client query and parses the result.
fn ask(
    tool: &Path,
    client: Client,
    addr: SocketAddr,
    tcp: bool,
    name: &str,
    rtype: &str,
) -> ClientAnswer {
    let mut args = vec![
        format!("@{}", addr.ip()),
        "-p".to_string(),
        addr.port().to_string(),
        name.to_string(),
        rtype.to_string(),
        "+norecurse".to_string(),
    ];
    match client {
        Client::Kdig => args.extend(["+retry=1", "+time=3"].map(String::from)),
        Client::Dig => args.extend(["+tries=2", "+time=3"].map(String::from)),
    }
    if tcp {
        args.push("+tcp".to_string());
    }
    ClientAnswer::parse(&support::run_tool(tool, &args))
}

/// The checks every client and transport must pass against `addr`.
fn check_answers(tool: &Path, client: Client, addr: SocketAddr, tcp: bool) {
    let ctx =
        |what: &str, a: &ClientAnswer| format!("{client:?} tcp={tcp}: {what}; output:\n{}", a.text);

    let a = ask(tool, client, addr, tcp, "www.diff.test.", "A");
    assert_eq!(a.status, "NOERROR", "{}", ctx("www A status", &a));
    assert!(
        a.flags.iter().any(|f| f == "aa"),
        "{}",
        ctx("www A is authoritative", &a)
    );
    assert_eq!(
        ClientAnswer::rdata(&a.answer, "www.diff.test.", "A"),
        ["192.0.2.80"],
        "{}",
        ctx("www A", &a)
    );

    let a = ask(tool, client, addr, tcp, "www.diff.test.", "AAAA");
    assert_eq!(
        ClientAnswer::rdata(&a.answer, "www.diff.test.", "AAAA"),
        ["2001:db8::80"],
        "{}",
        ctx("www AAAA", &a)
    );

    let a = ask(tool, client, addr, tcp, ORIGIN, "MX");
    let mut mx = ClientAnswer::rdata(&a.answer, ORIGIN, "MX");
    mx.sort();
    assert_eq!(
        mx,
        ["10 mail.diff.test.", "20 mail.outside.example."],
        "{}",
        ctx("apex MX", &a)
    );

    // RFC 2308 §3: a name error carries the zone's SOA in the authority section.
    let a = ask(tool, client, addr, tcp, "nonexistent.diff.test.", "A");
    assert_eq!(a.status, "NXDOMAIN", "{}", ctx("NXDOMAIN status", &a));
    assert!(a.answer.is_empty(), "{}", ctx("NXDOMAIN has no answer", &a));
    let soa = ClientAnswer::rdata(&a.authority, ORIGIN, "SOA");
    assert_eq!(soa.len(), 1, "{}", ctx("NXDOMAIN carries the SOA", &a));
    assert!(soa[0].contains("2024010101"), "{}", ctx("SOA serial", &a));

    // RFC 1034 §4.3.2: the server follows the CNAME chain inside its zone.
    let a = ask(tool, client, addr, tcp, "c1.diff.test.", "A");
    assert_eq!(a.status, "NOERROR", "{}", ctx("CNAME chain status", &a));
    for (owner, target) in [
        ("c1.diff.test.", "c2.diff.test."),
        ("c2.diff.test.", "c3.diff.test."),
        ("c3.diff.test.", "www.diff.test."),
    ] {
        assert_eq!(
            ClientAnswer::rdata(&a.answer, owner, "CNAME"),
            [target],
            "{}",
            ctx("CNAME chain link", &a)
        );
    }
    assert_eq!(
        ClientAnswer::rdata(&a.answer, "www.diff.test.", "A"),
        ["192.0.2.80"],
        "{}",
        ctx("CNAME chain target", &a)
    );
}

fn check_all_clients(addr: SocketAddr) -> bool {
    let mut ran = false;
    for (name, client) in [("kdig", Client::Kdig), ("dig", Client::Dig)] {
        let Some(tool) = support::require_tool(name) else {
            continue;
        };
        for tcp in [false, true] {
            check_answers(&tool, client, addr, tcp);
        }
        ran = true;
    }
    ran
}

#[test]
fn kdig_and_dig_read_correct_answers_from_bulwark() {
    let zone = zone_file();
    let server = support::spawn_bulwark(&[(ORIGIN, zone.as_path())], &[]);
    check_all_clients(server.addr);
}

/// The same checks against knotd: if this fails, the expectations are wrong,
/// not bulwark.
#[test]
fn the_interop_checks_pass_against_knotd() {
    let zone = zone_file();
    let Some(server) = support::spawn_knotd(&[(ORIGIN, zone.as_path())]) else {
        return;
    };
    check_all_clients(server.addr);
}

/// And against BIND's named, a second independent implementation.
#[test]
fn the_interop_checks_pass_against_named() {
    let zone = zone_file();
    let Some(server) = support::spawn_named(&[(ORIGIN, zone.as_path())]) else {
        return;
    };
    check_all_clients(server.addr);
}

/// `--listen` given twice, once on IPv6: both addresses answer. Skipped
/// (with a message) where the machine has no IPv6 loopback, as in some
/// containers.
#[test]
fn bulwark_answers_on_ipv6_loopback_too() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("SKIPPED: no IPv6 loopback on this machine");
        return;
    }
    let zone = zone_file();
    // Port 0 on both: the ready file names the port each got.
    let args = [
        "serve".to_string(),
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
        "--listen".to_string(),
        "[::1]:0".to_string(),
        "--zone".to_string(),
        format!("{ORIGIN}={}", zone.display()),
    ];
    let dir = support::temp_dir("bulwark-v6-");
    let (_server, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let [addr4, addr6] = bound.dns[..] else {
        panic!("two listen addresses: {bound:?}");
    };
    assert!(addr4.is_ipv4() && addr6.is_ipv6(), "{bound:?}");
    let spec = support::QuerySpec::new("www.diff.test.", hickory_proto::rr::RecordType::A);
    for addr in [addr4, addr6] {
        for transport in [support::Transport::Udp, support::Transport::Tcp] {
            let answer =
                support::query_retry(addr, &spec, transport, std::time::Duration::from_secs(2), 3)
                    .unwrap_or_else(|e| panic!("{addr} over {transport:?}: {e}"));
            assert_eq!(
                answer.rdata_of("A"),
                ["192.0.2.80"],
                "{addr} {transport:?}: {answer}"
            );
        }
    }
}
