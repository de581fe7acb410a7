#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Zones bulwark signs validate live: Unbound on loopback, holding each
//! zone's DS as its trust anchor, gets the AD bit for names that exist and
//! validated NXDOMAIN and NODATA for names and types that do not, for every
//! algorithm, NSEC and NSEC3, online and offline signing; BIND's delv agrees;
//! and a zone whose anchor does not match is SERVFAIL, so the checks bite.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{
    bulwark_bin, free_port, require_tool, temp_dir, ChildGuard, EdnsSpec, QuerySpec, Server,
    Transport,
};

const TIMEOUT: Duration = Duration::from_secs(5);

fn zone_text(serial: u32) -> String {
    format!(
        "$TTL 300\n@ IN SOA ns1 hostmaster {serial} 3600 900 604800 300\n  NS ns1\n  MX 10 mail\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.80\n    AAAA 2001:db8::80\nmail A 192.0.2.25\n\
         *.wild TXT \"wildcard\"\nx.y.ent TXT \"below two empty non-terminals\"\nalias CNAME www\n\
         sub NS ns.sub\nns.sub A 192.0.2.53\n\
         root-key-sentinel-is-ta-20326 A 192.0.2.9\nroot-key-sentinel-not-ta-20326 A 192.0.2.9\n\
         root-key-sentinel-is-ta-11111 A 192.0.2.9\nroot-key-sentinel-not-ta-11111 A 192.0.2.9\n"
    )
}

/// One zone of the matrix: its policy (a `[dnssec_policy]` body), or None
/// for a zone signed offline by `bulwark sign` and served as a file.
pub(crate) struct Case {
    pub zone: &'static str,
    pub policy: Option<&'static str>,
    /// NSEC3 opt-out: denial of a name is insecure by design (RFC 5155 §9.2).
    pub opt_out: bool,
}

pub(crate) const CASES: [Case; 7] = [
    Case { zone: "rsasha256.test.", policy: Some("algorithm = \"RSASHA256\""), opt_out: false },
    Case { zone: "rsasha512.test.", policy: Some("algorithm = \"RSASHA512\"\nnsec3 = true"), opt_out: false },
    Case { zone: "p256.test.", policy: Some("algorithm = \"ECDSAP256SHA256\"\nnsec3 = true\nnsec3_salt_length = 8\nnsec3_iterations = 1"), opt_out: false },
    Case { zone: "p384.test.", policy: Some("algorithm = \"ECDSAP384SHA384\""), opt_out: false },
    Case { zone: "ed25519.test.", policy: Some("algorithm = \"ED25519\"\nnsec3 = true\nsingle_key = true"), opt_out: false },
    Case { zone: "optout.test.", policy: Some("nsec3 = true\nnsec3_opt_out = true"), opt_out: true },
    Case { zone: "offline.test.", policy: None, opt_out: false },
];

pub(crate) fn bulwark(args: &[&str]) -> String {
    let out = Command::new(bulwark_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bulwark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes the zones and the configuration, offline-signs `offline.test.`.
pub(crate) fn setup(dir: &Path) -> std::path::PathBuf {
    let mut config = String::from("[server]\nthreads = 1\n\n");
    for (i, case) in CASES.iter().enumerate() {
        let file = format!("{}zone", case.zone);
        fs::write(dir.join(&file), zone_text(1)).unwrap();
        match case.policy {
            Some(policy) => {
                config.push_str(&format!(
                    "[dnssec_policy.p{i}]\n{policy}\n\n[[zone]]\norigin = \"{}\"\nfile = \"{file}\"\ndnssec_policy = \"p{i}\"\n\n",
                    case.zone
                ));
            }
            None => {
                let keys = dir.join("offline-keys");
                let keys = keys.to_str().unwrap();
                bulwark(&[
                    "keys", "generate", case.zone, "-a", "ED25519", "--role", "ksk", "-K", keys,
                ]);
                bulwark(&[
                    "keys", "generate", case.zone, "-a", "ED25519", "--role", "zsk", "-K", keys,
                ]);
                let signed = dir.join(format!("{file}.signed"));
                bulwark(&[
                    "sign",
                    case.zone,
                    dir.join(&file).to_str().unwrap(),
                    "-K",
                    keys,
                    "--nsec3",
                    "-o",
                    signed.to_str().unwrap(),
                ]);
                config.push_str(&format!(
                    "[[zone]]\norigin = \"{}\"\nfile = \"{file}.signed\"\n\n",
                    case.zone
                ));
            }
        }
    }
    let path = dir.join("bulwark.toml");
    fs::write(&path, config).unwrap();
    path
}

pub(crate) fn key_directory(dir: &Path, case: &Case) -> std::path::PathBuf {
    if case.policy.is_some() {
        dir.join("keys")
    } else {
        dir.join("offline-keys")
    }
}

/// Unbound validating with one DS trust anchor per zone and a stub zone
/// pointing at bulwark; `local-zone: test. nodefault` lifts the RFC 6761
/// block Unbound puts on `test.`.
pub(crate) fn start_unbound(
    unbound: &Path,
    dir: &Path,
    anchors: &[String],
    zones: &[&str],
    upstream: SocketAddr,
) -> Server {
    let port = free_port();
    let mut conf = format!(
        "server:\n  interface: 127.0.0.1@{port}\n  do-daemonize: no\n  chroot: \"\"\n  username: \"\"\n  \
         directory: \"{d}\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  do-ip6: no\n  num-threads: 1\n  \
         so-reuseport: no\n  access-control: 127.0.0.0/8 allow\n  do-not-query-localhost: no\n  \
         module-config: \"validator iterator\"\n  val-log-level: 2\n  qname-minimisation: no\n  \
         local-zone: \"test.\" nodefault\n",
        d = dir.display()
    );
    for anchor in anchors {
        conf.push_str(&format!("  trust-anchor: \"{anchor}\"\n"));
    }
    for zone in zones {
        conf.push_str(&format!(
            "stub-zone:\n  name: \"{zone}\"\n  stub-addr: {}@{}\n",
            upstream.ip(),
            upstream.port()
        ));
    }
    conf.push_str("remote-control:\n  control-enable: no\n");
    let path = dir.join("unbound.conf");
    fs::write(&path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let process = ChildGuard::spawn("unbound", unbound, &args, dir.join("unbound.log"));
    let mut server = Server {
        process,
        addr: ([127, 0, 0, 1], port).into(),
        dir: temp_dir("unbound-"),
    };
    server.wait_ready(zones[0], RecordType::SOA, |_| true);
    server
}

struct Verdict {
    rcode: String,
    ad: bool,
    answers: usize,
}

fn resolve(unbound: &Server, qname: &str, qtype: RecordType) -> Verdict {
    let mut spec = QuerySpec::new(qname, qtype);
    spec.rd = true;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let a = support::query_retry(unbound.addr, &spec, Transport::Udp, TIMEOUT, 3)
        .unwrap_or_else(|e| panic!("{qname} {qtype}: {e}\n{}", unbound.process.log()));
    Verdict {
        rcode: a.rcode_name(),
        ad: a.ad,
        answers: a.answer.len(),
    }
}

#[test]
fn unbound_validates_every_algorithm_and_denial_and_delv_agrees() {
    let Some(unbound) = require_tool("unbound") else {
        return;
    };
    let Some(delv) = require_tool("delv") else {
        return;
    };
    let dir = temp_dir("validation-");
    let config = setup(dir.path());
    let mut bulwark_server = support::spawn_bulwark(&[], &["--config", config.to_str().unwrap()]);
    // Zones are served once signed; RSA keys take a moment to make.
    for case in &CASES {
        bulwark_server.wait_ready(case.zone, RecordType::SOA, |a| {
            a.rcode == 0 && !a.answer.is_empty()
        });
    }

    let mut anchors = Vec::new();
    for case in &CASES {
        let ds = bulwark(&[
            "keys",
            "ds",
            case.zone,
            "-K",
            key_directory(dir.path(), case).to_str().unwrap(),
        ]);
        assert_eq!(ds.lines().count(), 1, "{}: {ds}", case.zone);
        anchors.push(ds.trim().to_owned());
    }
    // A zone whose anchor names a key it does not have: validation must fail.
    let bad_zone = "p256.test.";
    let zones: Vec<&str> = CASES.iter().map(|c| c.zone).collect();
    let resolver = start_unbound(&unbound, dir.path(), &anchors, &zones, bulwark_server.addr);

    for case in &CASES {
        let name = |label: &str| format!("{label}{}", case.zone);
        let check = |qname: &str, qtype: RecordType, rcode: &str, answers: bool, ad: bool| {
            let v = resolve(&resolver, qname, qtype);
            assert_eq!(
                v.rcode,
                rcode,
                "{qname} {qtype}\n{}",
                resolver.process.log()
            );
            assert_eq!(
                v.answers > 0,
                answers,
                "{qname} {qtype}: answers {}",
                v.answers
            );
            assert_eq!(
                v.ad,
                ad,
                "{qname} {qtype}: AD bit\n{}",
                resolver.process.log()
            );
        };
        check(case.zone, RecordType::DNSKEY, "NOERROR", true, true);
        check(&name("www."), RecordType::A, "NOERROR", true, true);
        check(&name("www."), RecordType::AAAA, "NOERROR", true, true);
        check(&name("alias."), RecordType::A, "NOERROR", true, true);
        // NODATA at a name, and at an empty non-terminal.
        check(&name("www."), RecordType::MX, "NOERROR", false, true);
        check(&name("y.ent."), RecordType::A, "NOERROR", false, true);
        check(&name("x.y.ent."), RecordType::TXT, "NOERROR", true, true);
        // Opt-out makes denial of names insecure by design (RFC 5155 §9.2):
        // correct answers, no AD.
        let secure_denial = !case.opt_out;
        check(
            &name("nope."),
            RecordType::A,
            "NXDOMAIN",
            false,
            secure_denial,
        );
        check(
            &name("a.wild."),
            RecordType::TXT,
            "NOERROR",
            true,
            secure_denial,
        );
        check(
            &name("sub."),
            RecordType::DS,
            "NOERROR",
            false,
            secure_denial,
        );
    }

    // delv, BIND's validator, with the KSK as a static key, talking to bulwark directly.
    for case in &CASES {
        let key_file = fs::read_dir(key_directory(dir.path(), case))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.extension().is_some_and(|e| e == "key")
                    && p.file_name()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .starts_with(&format!("K{}+", case.zone))
                    && fs::read_to_string(p).unwrap().contains("DNSKEY 257 ")
            })
            .unwrap();
        let anchor = dir.path().join(format!("{}anchor", case.zone));
        fs::write(&anchor, static_key_anchor(case.zone, &key_file)).unwrap();
        for (qname, expect) in [
            (format!("www.{}", case.zone), "; fully validated"),
            (
                format!("nope.{}", case.zone),
                "; negative response, fully validated",
            ),
        ] {
            let out = Command::new(&delv)
                .args([
                    format!("@{}", bulwark_server.addr.ip()),
                    "-p".into(),
                    bulwark_server.addr.port().to_string(),
                    "-a".into(),
                    anchor.display().to_string(),
                    format!("+root={}", case.zone),
                    qname.clone(),
                    "A".into(),
                ])
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                text.contains(expect),
                "delv {qname}: expected {expect:?}:\n{text}"
            );
        }
    }
    drop(resolver);

    // The same zones with one anchor replaced by a stranger's DS.
    let stranger = dir.path().join("stranger");
    bulwark(&[
        "keys",
        "generate",
        bad_zone,
        "--role",
        "ksk",
        "-K",
        stranger.to_str().unwrap(),
    ]);
    let wrong = bulwark(&["keys", "ds", bad_zone, "-K", stranger.to_str().unwrap()])
        .trim()
        .to_owned();
    let anchors: Vec<String> = anchors
        .into_iter()
        .map(|a| {
            if a.starts_with(bad_zone) {
                wrong.clone()
            } else {
                a
            }
        })
        .collect();
    let unbound_dir = temp_dir("validation-bad-");
    let resolver = start_unbound(
        &unbound,
        unbound_dir.path(),
        &anchors,
        &zones,
        bulwark_server.addr,
    );
    let v = resolve(&resolver, &format!("www.{bad_zone}"), RecordType::A);
    assert_eq!(
        v.rcode, "SERVFAIL",
        "a zone whose anchor matches no key must not validate"
    );
    let v = resolve(&resolver, "www.ed25519.test.", RecordType::A);
    assert!(v.rcode == "NOERROR" && v.ad);
}

/// BIND's `trust-anchors` statement making the KSK in `key_file` (a
/// `K<zone>+...key` file) a static key of `zone`, for delv.
pub(crate) fn static_key_anchor(zone: &str, key_file: &Path) -> String {
    let text = fs::read_to_string(key_file).unwrap();
    let record = text.lines().find(|l| l.contains("DNSKEY 257 ")).unwrap();
    let fields: Vec<&str> = record.split_whitespace().collect();
    format!(
        "trust-anchors {{ {zone} static-key {} {} {} \"{}\"; }};\n",
        fields[3],
        fields[4],
        fields[5],
        fields[6..].join("")
    )
}
