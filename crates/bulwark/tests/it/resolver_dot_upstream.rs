#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! bulwark forwarding over DNS over TLS (RFC 7858) to Unbound, whose port
//! speaks only TLS: the forwarder proven by its certificate's name under the
//! CA file given, or by its key's pin as `openssl` computes it, answers; one
//! whose key matches no pin is never trusted (SERVFAIL); dnstap marks the
//! forwarded messages DOT.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use hickory_proto::rr::RecordType;

use crate::support::{self, ChildGuard, EdnsSpec, QuerySpec, Server, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);

/// Unbound serving `upstream.test.` from local data, plain DNS on one port
/// (to tell when it is up) and DNS over TLS only on another, of 127.0.0.1
/// and 127.0.0.2.
fn start_unbound(unbound: &Path, dir: &Path) -> (Server, SocketAddr) {
    let (plain, tls) = (support::free_port(), support::free_port());
    let conf = format!(
        "server:\n  interface: 127.0.0.1@{plain}\n  interface: 127.0.0.1@{tls}\n  interface: 127.0.0.2@{tls}\n  tls-port: {tls}\n  \
         tls-service-key: \"{d}/key.pem\"\n  tls-service-pem: \"{d}/cert.pem\"\n  \
         do-daemonize: no\n  chroot: \"\"\n  username: \"\"\n  directory: \"{d}\"\n  pidfile: \"\"\n  \
         use-syslog: no\n  logfile: \"\"\n  do-ip6: no\n  num-threads: 1\n  so-reuseport: no\n  \
         access-control: 127.0.0.0/8 allow\n  module-config: \"iterator\"\n  \
         local-zone: \"upstream.test.\" static\n  \
         local-data: \"www.upstream.test. 300 IN A 192.0.2.80\"\n  \
         local-data: \"mail.upstream.test. 300 IN A 192.0.2.25\"\n\
         remote-control:\n  control-enable: no\n",
        d = dir.display()
    );
    let path = dir.join("unbound.conf");
    std::fs::write(&path, conf).unwrap();
    let args = ["-d", "-c", &path.display().to_string()].map(String::from);
    let process = ChildGuard::spawn("unbound", unbound, &args, dir.join("unbound.log"));
    let mut server = Server {
        process,
        addr: ([127, 0, 0, 1], plain).into(),
        dir: support::temp_dir("unbound-dot-run-"),
    };
    server.wait_ready("www.upstream.test.", RecordType::A, |_| true);
    (server, ([127, 0, 0, 1], tls).into())
}

/// The base64 SHA-256 pin of the certificate's public key, by openssl.
fn openssl_pin(cert: &Path) -> String {
    let script = format!(
        "openssl x509 -in '{}' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
        cert.display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn ask(addr: SocketAddr, qname: &str) -> support::Answer {
    let spec = QuerySpec {
        rd: true,
        edns: Some(EdnsSpec {
            payload: 1232,
            dnssec_ok: false,
            version: 0,
        }),
        ..QuerySpec::new(qname, RecordType::A)
    };
    support::query(addr, &spec, Transport::Udp, TIMEOUT).unwrap()
}

#[test]
fn forwarding_over_tls_checks_the_name_or_the_pin_of_unbound() {
    let (Some(unbound), Some(_openssl)) = (
        support::require_tool("unbound"),
        support::require_tool("openssl"),
    ) else {
        return;
    };
    let dir = support::temp_dir("bulwark-dot-upstream-");
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), made.key_pair.serialize_pem()).unwrap();
    let (_unbound, dot) = start_unbound(&unbound, dir.path());
    let pin = openssl_pin(&cert);
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let other_pin = {
        let p = dir.path().join("other.pem");
        std::fs::write(&p, other.cert.pem()).unwrap();
        openssl_pin(&p)
    };
    let tap = dir.path().join("resolver.tap");
    let conf = dir.path().join("bulwark.toml");
    // The same Unbound three ways: by name (port 853's default replaced
    // by the address's), by pin, and by a pin of another key.
    std::fs::write(
        &conf,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n\
             [dnstap]\ndestination = \"file:{tap}\"\nmessages = [\"forwarder_query\", \"forwarder_response\"]\n\n\
             [resolver]\nroot_hints = [\"127.0.0.1:1\"]\ndnssec_validation = false\n\n\
             [[resolver.forward]]\nzone = \"www.upstream.test.\"\naddresses = [\"{dot}\"]\n\
             tls = true\ntls_name = \"localhost\"\ntls_ca_file = \"cert.pem\"\n\n\
             [[resolver.forward]]\nzone = \"mail.upstream.test.\"\naddresses = [\"{dot}\"]\n\
             tls = true\ntls_pin_sha256 = [\"{pin}\"]\n\n\
             [[resolver.forward]]\nzone = \"upstream.test.\"\naddresses = [\"127.0.0.2:{port}\"]\n\
             tls = true\ntls_pin_sha256 = [\"{other_pin}\"]\n",
            tap = tap.display(),
            port = dot.port()
        ),
    )
    .unwrap();
    let args = ["serve", "--config", &conf.display().to_string()].map(String::from);
    let (mut bulwark, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let resolver = bound.dns[0];

    let by_name = ask(resolver, "www.upstream.test.");
    assert_eq!(by_name.rcode, 0, "{}", bulwark.log());
    assert_eq!(by_name.rdata_of("A"), vec!["192.0.2.80".to_string()]);
    let by_pin = ask(resolver, "mail.upstream.test.");
    assert_eq!(by_pin.rcode, 0, "{}", bulwark.log());
    assert_eq!(by_pin.rdata_of("A"), vec!["192.0.2.25".to_string()]);
    // 127.0.0.2 reaches the same Unbound; its key is not the one pinned.
    let wrong = ask(resolver, "other.upstream.test.");
    assert_eq!(wrong.rcode_name(), "SERVFAIL");

    bulwark.signal("TERM");
    bulwark
        .wait_exit(TIMEOUT)
        .expect("bulwark stops on SIGTERM");
    let yaml = support::dnstap_yaml(&tap);
    assert!(yaml.contains("FORWARDER_RESPONSE"), "{yaml}");
    assert!(yaml.contains("socket_protocol: DOT"), "{yaml}");
    assert!(!yaml.contains("socket_protocol: UDP"), "{yaml}");
}

/// What `bulwark serve` says on standard error when it will not start.
fn refused_start(dir: &Path, config: &str) -> String {
    let conf = dir.join("bulwark.toml");
    std::fs::write(&conf, config).unwrap();
    let out = Command::new(support::bulwark_bin())
        .args(["serve", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn a_tls_forwarder_without_a_name_or_pin_or_with_an_unreadable_ca_file_does_not_start() {
    let dir = support::temp_dir("bulwark-dot-upstream-bad-");
    let said = refused_start(
        dir.path(),
        "[server]\nlisten = [\"127.0.0.1:0\"]\n\n[resolver]\n\n\
         [[resolver.forward]]\nzone = \"example.\"\naddresses = [\"192.0.2.1\"]\ntls = true\n",
    );
    assert!(said.contains("bulwark.toml:7:8"), "{said}");
    assert!(said.contains("give `tls_name`"), "{said}");
    let said = refused_start(
        dir.path(),
        "[server]\nlisten = [\"127.0.0.1:0\"]\n\n[resolver]\n\n\
         [[resolver.forward]]\nzone = \"example.net.\"\naddresses = [\"192.0.2.2\"]\ntls = true\n\
         tls_name = \"dns.example.net\"\ntls_ca_file = \"missing.pem\"\n",
    );
    assert!(said.contains("missing.pem"), "{said}");
}
