#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! DNS cookies (RFC 7873/9018) and NSID (RFC 5001) against the real binary, as
//! dig and kdig see them.

use std::path::Path;

use crate::support;

const ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 1 3600 900 604800 300
    IN NS  ns1
ns1 IN A   192.0.2.1
www IN A   192.0.2.80
";

fn big_txt() -> String {
    let chunk = "y".repeat(250);
    format!("big IN TXT \"{chunk}\" \"{chunk}\" \"{chunk}\"\n")
}

fn start(dir: &Path, config: &str) -> support::Server {
    let zone = dir.join("example.test.zone");
    std::fs::write(&zone, format!("{ZONE}{}", big_txt())).unwrap();
    let conf = dir.join("bulwark.toml");
    std::fs::write(&conf, config).unwrap();
    support::spawn_bulwark(
        &[("example.test.", &zone)],
        &["--config", conf.to_str().unwrap()],
    )
}

fn dig(dig: &Path, server: &support::Server, args: &[&str]) -> String {
    let mut all = vec![
        format!("@{}", server.addr.ip()),
        "-p".to_string(),
        server.addr.port().to_string(),
        "+tries=1".to_string(),
        "+time=2".to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    support::run_tool(dig, &all)
}

/// The hex after `; COOKIE: ` in dig's output, and whether dig called it good.
fn cookie_of(output: &str) -> Option<(String, bool)> {
    let line = output.lines().find(|l| l.starts_with("; COOKIE: "))?;
    let rest = line.trim_start_matches("; COOKIE: ");
    let hex = rest.split_whitespace().next()?.to_string();
    Some((hex, rest.contains("(good)")))
}

fn status_of(output: &str) -> &str {
    output
        .split("status: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or("")
}

fn flags_of(output: &str) -> Vec<&str> {
    output
        .lines()
        .find(|l| l.starts_with(";; flags:"))
        .map(|l| {
            l.trim_start_matches(";; flags:")
                .split(';')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn dig_gets_a_server_cookie_and_its_return_is_accepted() {
    let Some(dig_bin) = support::require_tool("dig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-cookie-");
    let server = start(dir.path(), "");
    let first = dig(&dig_bin, &server, &["+cookie", "www.example.test", "A"]);
    let (cookie, good) = cookie_of(&first).unwrap_or_else(|| panic!("no cookie:\n{first}"));
    assert!(good, "{first}");
    // 8 octets of client cookie and 16 of server cookie (RFC 9018 §4).
    assert_eq!(cookie.len(), 48, "{first}");
    assert_eq!(status_of(&first), "NOERROR", "{first}");

    let second = dig(
        &dig_bin,
        &server,
        &[&format!("+cookie={cookie}"), "www.example.test", "A"],
    );
    assert_eq!(status_of(&second), "NOERROR", "{second}");
    assert!(!second.contains("BADCOOKIE"), "{second}");
    let (_, good) = cookie_of(&second).unwrap();
    assert!(good, "{second}");
}

#[test]
fn kdig_gets_a_server_cookie() {
    let Some(kdig) = support::require_tool("kdig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-kcookie-");
    let server = start(dir.path(), "");
    let out = support::run_tool(
        &kdig,
        &[
            format!("@{}", server.addr.ip()),
            "-p".to_string(),
            server.addr.port().to_string(),
            "+cookie".to_string(),
            "www.example.test".to_string(),
            "A".to_string(),
        ],
    );
    assert!(out.contains("COOKIE:"), "{out}");
    assert!(out.contains("status: NOERROR"), "{out}");
    assert!(!out.contains("BADCOOKIE"), "{out}");
}

#[test]
fn required_cookie_gates_large_udp_answers_but_never_tcp() {
    let Some(dig_bin) = support::require_tool("dig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-cookie-req-");
    let server = start(dir.path(), "[cookies]\nrequire_for_udp_above = 512\n");

    // No cookie at all: an empty truncated answer, to be retried over TCP.
    let none = dig(
        &dig_bin,
        &server,
        &[
            "+nocookie",
            "+ignore",
            "+bufsize=1232",
            "big.example.test",
            "TXT",
        ],
    );
    assert!(flags_of(&none).contains(&"tc"), "{none}");
    assert!(none.contains("ANSWER: 0"), "{none}");

    // A client cookie only: BADCOOKIE with a server cookie to retry with.
    let bad = dig(
        &dig_bin,
        &server,
        &[
            "+cookie",
            "+nobadcookie",
            "+bufsize=1232",
            "big.example.test",
            "TXT",
        ],
    );
    assert_eq!(status_of(&bad), "BADCOOKIE", "{bad}");
    let (cookie, _) = cookie_of(&bad).unwrap_or_else(|| panic!("no cookie:\n{bad}"));
    assert_eq!(cookie.len(), 48, "{bad}");

    // dig retries by itself with the server cookie (RFC 7873 §5.3), and gets
    // the answer.
    let retried = dig(
        &dig_bin,
        &server,
        &["+cookie", "+bufsize=1232", "big.example.test", "TXT"],
    );
    assert!(retried.contains("BADCOOKIE, retrying"), "{retried}");
    assert_eq!(status_of(&retried), "NOERROR", "{retried}");
    assert!(retried.contains("ANSWER: 1"), "{retried}");
    assert!(!flags_of(&retried).contains(&"tc"), "{retried}");

    // Presenting the cookie straight away works too.
    let with = dig(
        &dig_bin,
        &server,
        &[
            &format!("+cookie={cookie}"),
            "+bufsize=1232",
            "big.example.test",
            "TXT",
        ],
    );
    assert_eq!(status_of(&with), "NOERROR", "{with}");
    assert!(with.contains("ANSWER: 1"), "{with}");

    // TCP proves the source: no cookie needed.
    let tcp = dig(
        &dig_bin,
        &server,
        &["+tcp", "+nocookie", "big.example.test", "TXT"],
    );
    assert_eq!(status_of(&tcp), "NOERROR", "{tcp}");
    assert!(tcp.contains("ANSWER: 1"), "{tcp}");

    // Small answers are never gated.
    let small = dig(&dig_bin, &server, &["+nocookie", "www.example.test", "A"]);
    assert_eq!(status_of(&small), "NOERROR", "{small}");
    assert!(small.contains("ANSWER: 1"), "{small}");
}

#[test]
fn dig_nsid_shows_the_configured_identifier() {
    let Some(dig_bin) = support::require_tool("dig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-nsid-");
    let server = start(dir.path(), "[server]\nnsid = \"ns1-test\"\n");
    let out = dig(&dig_bin, &server, &["+nsid", "www.example.test", "A"]);
    let line = out
        .lines()
        .find(|l| l.starts_with("; NSID:"))
        .unwrap_or_else(|| panic!("no NSID:\n{out}"));
    assert!(line.contains("ns1-test"), "{line}");
    // Not asked, not sent (RFC 5001 §2.1).
    let plain = dig(&dig_bin, &server, &["www.example.test", "A"]);
    assert!(!plain.contains("NSID"), "{plain}");
}

#[test]
fn tcp_answers_advertise_the_idle_timeout_as_keepalive() {
    let Some(dig_bin) = support::require_tool("dig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-keepalive-");
    let server = start(dir.path(), "[server]\ntcp_idle_timeout = 7\n");
    let out = dig(
        &dig_bin,
        &server,
        &["+tcp", "+keepalive", "www.example.test", "A"],
    );
    // RFC 7828 §3.1: sent in units of 100 ms; dig prints seconds.
    assert!(out.contains("; TCP KEEPALIVE: 7.0 secs"), "{out}");
}

#[test]
fn kdig_retries_a_badcookie_with_the_server_cookie_and_gets_the_large_answer() {
    let Some(kdig) = support::require_tool("kdig") else {
        return;
    };
    let dir = support::temp_dir("bulwark-kcookie-req-");
    let server = start(dir.path(), "[cookies]\nrequire_for_udp_above = 512\n");
    let out = support::run_tool(
        &kdig,
        &[
            format!("@{}", server.addr.ip()),
            "-p".to_string(),
            server.addr.port().to_string(),
            "+cookie".to_string(),
            "big.example.test".to_string(),
            "TXT".to_string(),
        ],
    );
    let first = out
        .find("status: BADCOOKIE")
        .unwrap_or_else(|| panic!("{out}"));
    let then = out
        .find("status: NOERROR")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(first < then, "{out}");
    assert!(out.contains("ANSWER: 1"), "{out}");
}

/// A TXT answer of about 1,310 octets: within `max_udp_payload = 1400`,
/// larger than a 1,280-octet link carries in one datagram.
fn huge_txt() -> String {
    let chunk = "z".repeat(250);
    format!("huge IN TXT \"{chunk}\" \"{chunk}\" \"{chunk}\" \"{chunk}\" \"{chunk}\"\n")
}

/// UDP answers leave whole (RFC 9715 §3.1): in a private network namespace
/// whose `lo` carries 1,280 octets, an answer the size limit allows but the
/// link does not comes truncated, and dig asks again over TCP; the kernel,
/// left to its default, would have fragmented it. A server configured for
/// answers above RFC 9715's 1,400 has them fragmented at the interface.
#[test]
fn answers_too_big_for_the_link_come_truncated_unless_large_ones_are_configured() {
    let Some(dig_bin) = support::require_tool("dig") else {
        return;
    };
    bulwark_testkit::netns::isolated_or_skip(|| {
        bulwark_testkit::netns::set_loopback_mtu(1280).unwrap();
        let serve = |payload: u16| {
            let dir = support::temp_dir("bulwark-unfragmented-");
            let zone = dir.path().join("example.test.zone");
            std::fs::write(&zone, format!("{ZONE}{}", huge_txt())).unwrap();
            let conf = dir.path().join("bulwark.toml");
            std::fs::write(&conf, format!("[server]\nmax_udp_payload = {payload}\n")).unwrap();
            let server = support::spawn_bulwark(
                &[("example.test.", &zone)],
                &["--config", conf.to_str().unwrap()],
            );
            (dir, server)
        };
        let udp_only = [
            "+nocookie",
            "+ignore",
            "+bufsize=4096",
            "huge.example.test",
            "TXT",
        ];

        let (_dir, server) = serve(1400);
        let cut = dig(&dig_bin, &server, &udp_only);
        assert!(flags_of(&cut).contains(&"tc"), "{cut}");
        assert!(cut.contains("ANSWER: 0"), "{cut}");
        let retried = dig(
            &dig_bin,
            &server,
            &["+nocookie", "+bufsize=4096", "huge.example.test", "TXT"],
        );
        assert!(retried.contains("retrying in TCP mode"), "{retried}");
        assert!(retried.contains("ANSWER: 1"), "{retried}");
        // Answers that fit the link are untouched.
        let small = dig(&dig_bin, &server, &["+nocookie", "www.example.test", "A"]);
        assert!(small.contains("ANSWER: 1"), "{small}");
        assert!(!flags_of(&small).contains(&"tc"), "{small}");
        drop(server);

        let (_dir, server) = serve(4096);
        let whole = dig(&dig_bin, &server, &udp_only);
        assert!(!flags_of(&whole).contains(&"tc"), "{whole}");
        assert!(whole.contains("ANSWER: 1"), "{whole}");
    });
}
