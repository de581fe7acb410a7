#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Zone transfers over TLS (XoT, RFC 9103) with BIND's named 9.18 on the
//! other side both ways. As the primary, bulwark's DNS over TLS listener
//! serves AXFR to kdig (`+tls`, checking the certificate) and to named as a
//! secondary whose `primaries` name a `tls` block with the test's CA. As the
//! secondary, bulwark transfers from named's TLS-only port, checking its
//! certificate by name. (Knot 3.2, Debian's, has no XoT.)

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support::{self, ChildGuard, QuerySpec, Transport};

const ORIGIN: &str = "xot.test.";
const ZONE: &str = "$ORIGIN xot.test.\n$TTL 300\n\
@    IN SOA ns1 hostmaster 7 10 5 604800 300\n\
@    IN NS ns1\n\
ns1  IN A 192.0.2.1\n\
www  IN A 192.0.2.80\n\
txt  IN TXT \"over tls\"\n";

const DEADLINE: Duration = Duration::from_secs(30);

/// kdig's AXFR over TLS, as sorted lines without the closing SOA.
fn axfr_over_tls(kdig: &Path, dot: SocketAddr, ca: &Path) -> Vec<String> {
    let text = support::run_tool(
        kdig,
        &[
            format!("@{}", dot.ip()),
            "-p".to_string(),
            dot.port().to_string(),
            format!("+tls-ca={}", ca.display()),
            "+tls-hostname=localhost".to_string(),
            "+nocomments".to_string(),
            "+nostats".to_string(),
            "AXFR".to_string(),
            ORIGIN.to_string(),
        ],
    );
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .collect();
    // The closing SOA repeats the first.
    let first = lines.first().cloned();
    if lines.len() > 1 && lines.last() == first.as_ref() {
        lines.pop();
    }
    lines.sort();
    lines
}

#[test]
fn kdig_and_named_transfer_the_zone_from_bulwark_over_tls() {
    let (Some(kdig), Some(named)) = (
        support::require_tool("kdig"),
        support::require_tool("named"),
    ) else {
        return;
    };
    let dir = support::temp_dir("bulwark-xot-");
    let (ca, _) = support::write_certificate(dir.path());
    std::fs::write(dir.path().join("xot.zone"), ZONE).unwrap();
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\n\n\
             [[listener]]\naddress = \"127.0.0.1:0\"\ntransport = \"tls\"\n\
             certificate = \"cert.pem\"\nkey = \"key.pem\"\n\n\
             [acl.loopback]\nallow = [\"127.0.0.0/8\"]\n\n\
             [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"xot.zone\"\nallow_transfer = [\"loopback\"]\n"
        ),
    )
    .unwrap();
    let args = ["serve", "--config", &conf.display().to_string()].map(String::from);
    let (bulwark, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let dot = bound.dot[0];

    let records = axfr_over_tls(&kdig, dot, &ca);
    assert_eq!(records.len(), 5, "{records:?}\n{}", bulwark.log());
    assert!(
        records.iter().any(|r| r.contains("txt \"over tls\"")),
        "{records:?}"
    );

    // named as a secondary, fetching over TLS only (its primary is the DoT
    // port; the plain port is not named).
    let port = support::free_port();
    let named_dir = support::temp_dir("named-xot-");
    let d = named_dir.path().display();
    let named_conf = format!(
        "options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  listen-on port {port} {{ 127.0.0.1; }};\n  \
         listen-on-v6 {{ none; }};\n  recursion no;\n  dnssec-validation no;\n  notify no;\n}};\n\
         controls {{ }};\n\
         tls bulwark {{\n  ca-file \"{ca}\";\n  remote-hostname \"localhost\";\n}};\n\
         zone \"{ORIGIN}\" {{\n  type secondary;\n  file \"xot.db\";\n  \
         primaries port {dot_port} {{ {dot_ip} tls bulwark; }};\n}};\n",
        ca = ca.display(),
        dot_port = dot.port(),
        dot_ip = dot.ip()
    );
    let conf_path = named_dir.path().join("named.conf");
    std::fs::write(&conf_path, named_conf).unwrap();
    let named_args = ["-g", "-n", "1", "-c", &conf_path.display().to_string()].map(String::from);
    let process = ChildGuard::spawn(
        "named",
        &named,
        &named_args,
        named_dir.path().join("named.log"),
    );
    let secondary: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let served = support::query(
            secondary,
            &QuerySpec::new("www.xot.test.", RecordType::A),
            Transport::Udp,
            Duration::from_millis(500),
        )
        .ok()
        .filter(|a| a.rcode == 0 && a.aa);
        if let Some(a) = served {
            assert_eq!(a.rdata_of("A"), vec!["192.0.2.80".to_string()]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "named did not load {ORIGIN} over TLS; its log:\n{}\nbulwark's:\n{}",
            process.log(),
            bulwark.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        process.log().contains("Transfer status: success"),
        "{}",
        process.log()
    );
}

/// named 9.18 as an XoT primary: plain DNS on one port (to tell when it is
/// up), DNS over TLS (its `tls` block, our certificate) on another.
fn start_named_primary(named: &Path, dir: &Path) -> (ChildGuard, SocketAddr, SocketAddr) {
    let (plain, tls) = (support::free_port(), support::free_port());
    std::fs::write(
        dir.join("xot2.zone"),
        ZONE.replace("xot.test.", "xot2.test."),
    )
    .unwrap();
    let d = dir.display();
    let conf = format!(
        "tls local-tls {{\n  key-file \"{d}/key.pem\";\n  cert-file \"{d}/cert.pem\";\n}};\n\
         options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  listen-on port {plain} {{ 127.0.0.1; }};\n  \
         listen-on port {tls} tls local-tls {{ 127.0.0.1; }};\n  \
         listen-on-v6 {{ none; }};\n  recursion no;\n  dnssec-validation no;\n  notify no;\n}};\n\
         controls {{ }};\n\
         zone \"xot2.test\" {{\n  type primary;\n  file \"{d}/xot2.zone\";\n  allow-transfer {{ any; }};\n}};\n"
    );
    let path = dir.join("named.conf");
    std::fs::write(&path, conf).unwrap();
    let args = ["-g", "-n", "1", "-c", &path.display().to_string()].map(String::from);
    let process = ChildGuard::spawn("named", named, &args, dir.join("named.log"));
    let plain: SocketAddr = ([127, 0, 0, 1], plain).into();
    let deadline = Instant::now() + DEADLINE;
    while support::query(
        plain,
        &QuerySpec::new("xot2.test.", RecordType::SOA),
        Transport::Udp,
        Duration::from_millis(500),
    )
    .map_or(true, |a| a.rcode != 0)
    {
        assert!(
            Instant::now() < deadline,
            "named did not start:\n{}",
            process.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (process, plain, ([127, 0, 0, 1], tls).into())
}

#[test]
fn bulwark_transfers_the_zone_from_named_over_tls_only() {
    let Some(named) = support::require_tool("named") else {
        return;
    };
    let dir = support::temp_dir("bulwark-xot-secondary-");
    support::write_certificate(dir.path());
    let named_dir = support::temp_dir("named-xot-primary-");
    std::fs::copy(
        dir.path().join("cert.pem"),
        named_dir.path().join("cert.pem"),
    )
    .unwrap();
    std::fs::copy(dir.path().join("key.pem"), named_dir.path().join("key.pem")).unwrap();
    let (named_process, _plain, tls) = start_named_primary(&named, named_dir.path());

    // The remote is named's TLS port only: a transfer over plain TCP to it
    // would fail, so a loaded zone came over TLS.
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nstorage = \"bulwark.db\"\n\n\
             [remote.named]\naddress = \"{tls}\"\ntls_name = \"localhost\"\ntls_ca_file = \"cert.pem\"\n\n\
             [[zone]]\norigin = \"xot2.test.\"\nprimaries = [\"named\"]\n"
        ),
    )
    .unwrap();
    let args = ["serve", "--config", &conf.display().to_string()].map(String::from);
    let (bulwark, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let served = support::query(
            bound.dns[0],
            &QuerySpec::new("txt.xot2.test.", RecordType::TXT),
            Transport::Udp,
            Duration::from_millis(500),
        )
        .ok()
        .filter(|a| a.rcode == 0 && a.aa);
        if let Some(a) = served {
            assert_eq!(a.rdata_of("TXT"), vec!["\"over tls\"".to_string()]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "bulwark did not load xot2.test. over TLS; its log:\n{}\nnamed's:\n{}",
            bulwark.log(),
            named_process.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
