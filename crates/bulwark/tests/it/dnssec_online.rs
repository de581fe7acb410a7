#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Online signing: a zone with a `dnssec_policy` is served signed, its
//! signatures validate in dnspython, keys are made once and kept across
//! restarts, the re-signing pass refreshes signatures, and a bad policy is a
//! configuration error that says where.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{QuerySpec, Server, Transport};

const ORIGIN: &str = "signed.test.";
const TIMEOUT: Duration = Duration::from_secs(5);

const ZONE: &str = "$ORIGIN signed.test.\n$TTL 300\n\
@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  IN NS ns1\n  IN MX 10 mail\n\
ns1 IN A 192.0.2.1\nwww IN A 192.0.2.80\n    IN AAAA 2001:db8::80\nmail IN A 192.0.2.25\n\
*.wild IN TXT \"wildcard\"\nx.y.ent IN TXT \"below empty non-terminals\"\n\
sub IN NS ns.sub\nns.sub IN A 192.0.2.53\nsecure IN NS ns.outside.example.\n\
secure IN DS 12345 13 2 2BB183AF5F22588179A53B0A98631FAD1A292118D2C0AE2E1FA19E0D7C6E1F70\n";

fn write_setup(dir: &Path, policy: &str) -> PathBuf {
    fs::write(dir.join("zone.db"), ZONE).unwrap();
    let config = dir.join("bulwark.toml");
    fs::write(
        &config,
        format!(
            "[server]\nthreads = 1\n\n[dnssec_policy.test]\n{policy}\n\n[[zone]]\norigin = \"{ORIGIN}\"\nfile = \"zone.db\"\ndnssec_policy = \"test\"\n"
        ),
    )
    .unwrap();
    config
}

fn start(config: &Path) -> Server {
    let arg = config.display().to_string();
    support::spawn_bulwark(&[], &["--config", arg.as_str()])
}

fn ask(server: &Server, qname: &str, qtype: RecordType) -> support::Answer {
    support::query_retry(
        server.addr,
        &QuerySpec::new(qname, qtype),
        Transport::Udp,
        TIMEOUT,
        3,
    )
    .unwrap()
}

/// The RDATA of each answer record of `qtype` at `qname`, as wire bytes,
/// asked over TCP (the apex's signatures do not fit a plain UDP answer).
/// Read with hickory and encoded again by it, so it does not matter whether
/// hickory knows the DNSSEC types (its `dnssec` feature may be on in a
/// workspace build and off in this crate's).
fn rdatas(server: &Server, qname: &str, qtype: RecordType) -> Vec<Vec<u8>> {
    use hickory_proto::serialize::binary::BinEncodable;
    let wire = QuerySpec::new(qname, qtype).to_wire(0x5151);
    let raw = support::exchange_tcp(server.addr, &wire, TIMEOUT).unwrap();
    let message = hickory_proto::op::Message::from_vec(&raw).unwrap();
    message
        .answers()
        .iter()
        .filter(|r| r.record_type() == qtype)
        .filter_map(|r| r.data().map(|d| d.to_bytes().unwrap()))
        .collect()
}

/// The DNSKEY RRset as served, sorted.
fn dnskeys(server: &Server) -> Vec<Vec<u8>> {
    let mut keys = rdatas(server, ORIGIN, RecordType::DNSKEY);
    keys.sort();
    keys
}

fn dnspython_check(server: &Server, rrsets: &[&str]) -> String {
    let Some(python) = support::require_python_module("dns.dnssec") else {
        return String::new();
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/dnssec_check.py");
    let out = Command::new(python)
        .arg(script)
        .arg(server.addr.ip().to_string())
        .arg(server.addr.port().to_string())
        .arg(ORIGIN)
        .args(rrsets)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "dnspython rejected the served signatures:\n{text}\nserver log:\n{}",
        server.process.log()
    );
    text
}

#[test]
fn a_zone_with_a_policy_is_served_signed_and_validates_in_dnspython() {
    let dir = support::temp_dir("dnssec-online-");
    let config = write_setup(dir.path(), "nsec3 = true\nnsec3_salt_length = 4");
    let server = start(&config);

    // A KSK and a ZSK were made in the default key directory, private halves
    // readable by their owner only.
    let mut private: Vec<PathBuf> = fs::read_dir(dir.path().join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "private"))
        .collect();
    private.sort();
    assert_eq!(private.len(), 2, "{private:?}");
    for p in &private {
        assert_eq!(fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let keys = dnskeys(&server);
    assert_eq!(keys.len(), 2);
    // Flags 257 (KSK) and 256 (ZSK), protocol 3, algorithm 13.
    assert!(
        keys.iter().any(|k| k.starts_with(&[1, 1, 3, 13])),
        "{keys:?}"
    );
    assert!(
        keys.iter().any(|k| k.starts_with(&[1, 0, 3, 13])),
        "{keys:?}"
    );

    let param = rdatas(&server, ORIGIN, RecordType::NSEC3PARAM);
    assert_eq!(param.len(), 1);
    // SHA-1, no flags, 0 iterations (RFC 9276), a 4-octet salt.
    assert_eq!(param[0][..5], [1, 0, 0, 0, 4], "{param:?}");

    let report = dnspython_check(
        &server,
        &[
            "signed.test./SOA",
            "signed.test./NS",
            "signed.test./MX",
            "signed.test./NSEC3PARAM",
            "www.signed.test./A",
            "www.signed.test./AAAA",
            "*.wild.signed.test./TXT",
            "x.y.ent.signed.test./TXT",
        ],
    );
    assert_eq!(
        report.lines().filter(|l| l.starts_with("ok ")).count(),
        9,
        "{report}"
    );
    // CDS and CDNSKEY wait until the new KSK is in every cache (RFC 7344
    // §4): the DNSKEY TTL plus the propagation delay, an hour here.
    assert!(ask(&server, ORIGIN, RecordType::CDS).answer.is_empty());
}

/// (inception, expiration) of the RRSIG covering www's A record
/// (RFC 4034 §3.1: type covered, algorithm, labels, TTL, expiration, inception).
fn www_signature_times(server: &Server) -> (u32, u32) {
    let sig = signature_of(server, "www.signed.test.", 1);
    let at = |i: usize| u32::from_be_bytes(sig[i..i + 4].try_into().unwrap());
    (at(12), at(8))
}

#[test]
fn the_resigning_pass_refreshes_signatures_and_a_restart_keeps_the_keys() {
    let dir = support::temp_dir("dnssec-resign-");
    let config = write_setup(
        dir.path(),
        // Refreshed when less than 3599 s of validity are left: a second
        // after they are made, so every pass makes new ones.
        "signature_validity = \"1h\"\nsignature_refresh = \"3599\"\nsignature_jitter = \"0\"\nresign_interval = \"1s\"\nsignature_inception_offset = \"5m\"",
    );
    let server = start(&config);
    let keys = dnskeys(&server);
    let first = www_signature_times(&server);
    // Signature times have a resolution of one second: a pass a second or
    // more later writes new ones.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut later = www_signature_times(&server);
    while later == first {
        assert!(
            Instant::now() < deadline,
            "signatures never refreshed: {first:?}\n{}",
            server.process.log()
        );
        std::thread::yield_now();
        later = www_signature_times(&server);
    }
    assert!(
        later.0 > first.0 && later.1 > first.1,
        "{first:?} then {later:?}"
    );
    dnspython_check(&server, &["www.signed.test./A", "signed.test./SOA"]);
    drop(server);

    // The keys are in files: a new process signs with the same ones.
    let server = start(&config);
    assert_eq!(dnskeys(&server), keys);
    assert!(server.process.log().matches("DNSSEC key generated").count() == 0);
}

/// The RRSIG covering `qtype` at `qname`, as RDATA bytes.
fn signature_of(server: &Server, qname: &str, qtype: u16) -> Vec<u8> {
    rdatas(server, qname, RecordType::RRSIG)
        .into_iter()
        .find(|s| s[..2] == qtype.to_be_bytes())
        .unwrap_or_else(|| panic!("no RRSIG {qtype} at {qname}"))
}

#[test]
fn a_reload_re_signs_only_what_changed() {
    let dir = support::temp_dir("dnssec-reuse-");
    let config = write_setup(dir.path(), "signature_jitter = \"0\"");
    let server = start(&config);
    let www_before = signature_of(&server, "www.signed.test.", 1);
    let mail_before = signature_of(&server, "mail.signed.test.", 1);
    let soa_before = signature_of(&server, ORIGIN, 6);

    // mail's address and the serial change; www is untouched.
    let changed = ZONE
        .replace("mail IN A 192.0.2.25", "mail IN A 192.0.2.26")
        .replace("hostmaster 1 ", "hostmaster 2 ");
    fs::write(dir.path().join("zone.db"), changed).unwrap();
    server.process.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(20);
    while signature_of(&server, ORIGIN, 6) == soa_before {
        assert!(
            Instant::now() < deadline,
            "the reload was not signed:\n{}",
            server.process.log()
        );
        std::thread::yield_now();
    }
    assert_ne!(signature_of(&server, "mail.signed.test.", 1), mail_before);
    assert_eq!(
        signature_of(&server, "www.signed.test.", 1),
        www_before,
        "an unchanged RRset kept its signature"
    );
    dnspython_check(
        &server,
        &[
            "www.signed.test./A",
            "mail.signed.test./A",
            "signed.test./SOA",
        ],
    );
    assert!(
        server.process.log().contains("kept="),
        "{}",
        server.process.log()
    );
}

/// The zones as served, read back with `ctl zone read`, pass the verifiers
/// the offline tests use: online signing writes the same zones.
#[test]
fn zones_signed_online_pass_ldns_verify_zone_and_dnssec_verify() {
    let Some(verifiers) = support::ZoneVerifiers::find() else {
        return;
    };
    let dir = support::temp_dir("dnssec-read-");
    let socket = dir.path().join("ctl.sock");
    let policies = [
        ("nsec.test.", "algorithm = \"ED25519\""),
        (
            "nsec3.test.",
            "algorithm = \"ECDSAP384SHA384\"\nnsec3 = true\nnsec3_salt_length = 4",
        ),
        (
            "optout.test.",
            "algorithm = \"RSASHA256\"\nnsec3 = true\nnsec3_opt_out = true",
        ),
    ];
    let mut config = format!(
        "[server]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n",
        socket.display()
    );
    for (i, (zone, policy)) in policies.iter().enumerate() {
        fs::write(
            dir.path().join(format!("{zone}db")),
            ZONE.replace("$ORIGIN signed.test.", &format!("$ORIGIN {zone}")),
        )
        .unwrap();
        config.push_str(&format!(
            "[dnssec_policy.p{i}]\n{policy}\n\n[[zone]]\norigin = \"{zone}\"\nfile = \"{zone}db\"\ndnssec_policy = \"p{i}\"\n\n"
        ));
    }
    let path = dir.path().join("bulwark.toml");
    fs::write(&path, config).unwrap();
    let mut server = start(&path);
    for (zone, _) in policies {
        server.wait_ready(zone, RecordType::SOA, |a| {
            a.rcode == 0 && !a.answer.is_empty()
        });
    }
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "no control socket");
        std::thread::yield_now();
    }
    for (zone, _) in policies {
        let out = Command::new(support::bulwark_bin())
            .args([
                "ctl",
                "--socket",
                socket.to_str().unwrap(),
                "zone",
                "read",
                zone,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = dir.path().join(format!("{zone}served"));
        fs::write(&file, &out.stdout).unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().nth(3) == Some("RRSIG")),
            "{zone}: unsigned?"
        );
        verifiers.assert_valid(&file, zone, false, &format!("{zone} as served"));
    }
}

#[test]
fn a_manual_zsk_rollover_starts_at_ctl_zone_sign() {
    let dir = support::temp_dir("dnssec-manual-");
    let socket = dir.path().join("ctl.sock");
    fs::write(dir.path().join("zone.db"), ZONE).unwrap();
    let config = dir.path().join("bulwark.toml");
    fs::write(
        &config,
        format!(
            "[server]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n[dnssec_policy.p]\nzsk_lifetime = \"0\"\n\n\
             [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"zone.db\"\ndnssec_policy = \"p\"\n",
            socket.display()
        ),
    )
    .unwrap();
    let server = start(&config);
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "no control socket");
        std::thread::yield_now();
    }
    let keys = dir.path().join("keys");
    let bulwark = |args: &[&str]| {
        let out = Command::new(support::bulwark_bin())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let before = dnskeys(&server);
    assert_eq!(before.len(), 2);
    bulwark(&[
        "keys",
        "rollover",
        ORIGIN,
        "--role",
        "zsk",
        "-K",
        keys.to_str().unwrap(),
    ]);
    let status = bulwark(&[
        "ctl",
        "--socket",
        socket.to_str().unwrap(),
        "zone",
        "sign",
        ORIGIN,
    ]);
    assert!(status.contains("dnssec: signed at"), "{status}");
    // The successor is published at once (pre-publication) and the old ZSK
    // keeps signing until the new one takes over.
    assert_eq!(dnskeys(&server).len(), 3, "{}", server.process.log());
    let listing = bulwark(&["keys", "list", ORIGIN, "-K", keys.to_str().unwrap()]);
    assert!(
        listing
            .lines()
            .any(|l| l.contains(" ZSK ") && l.contains("published")),
        "{listing}"
    );
    assert!(
        listing
            .lines()
            .any(|l| l.contains(" ZSK ") && l.contains("active, retiring")),
        "{listing}"
    );
    dnspython_check(&server, &["www.signed.test./A"]);
}

fn check_config(config: &Path) -> (bool, String) {
    let out = Command::new(support::bulwark_bin())
        .arg("check-config")
        .arg(config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn policy_mistakes_are_configuration_errors_that_say_where() {
    let dir = support::temp_dir("dnssec-config-");
    let config = write_setup(
        dir.path(),
        "algorithm = \"GOST\"\nsignature_validity = \"2d\"\nsignature_refresh = \"3d\"\nresign_interval = \"soon\"",
    );
    let (ok, err) = check_config(&config);
    assert!(!ok);
    let file = config.display().to_string();
    for expected in [
        format!("{file}:5:13: algorithm: `GOST` is not one of"),
        format!("{file}:7:21: signature_refresh: must be shorter than signature_validity"),
        format!("{file}:8:19: resign_interval: `soon` is not a duration"),
    ] {
        assert!(err.contains(&expected), "missing {expected:?} in:\n{err}");
    }

    fs::write(
        &config,
        format!(
            "[[zone]]\norigin = \"{ORIGIN}\"\nfile = \"zone.db\"\ndnssec_policy = \"nowhere\"\n"
        ),
    )
    .unwrap();
    let (ok, err) = check_config(&config);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "{file}:4:17: dnssec_policy: no [dnssec_policy.nowhere] is defined"
        )),
        "{err}"
    );
}
