#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! bulwark's resolver validates (RFC 4035 §5). The zones of
//! `interop_validation` (every algorithm, NSEC and NSEC3, opt-out, online
//! and offline signing) are served by bulwark's authoritative side and
//! reached through stub zones, each zone's DS its trust anchor: the setup
//! in which Unbound gives its verdicts there. bulwark's must be the same:
//! AD for data and for denials, none for denials under opt-out (RFC 5155
//! §9.2). A zone whose anchor matches none of its keys is SERVFAIL with
//! Extended DNS Error 9 (DNSKEY Missing), while its data still goes to a
//! client that set CD (RFC 4035 §3.2.2), without AD, and a negative trust
//! anchor set with `bulwark ctl nta add` makes it answer, insecure, until
//! removed. The root KSK sentinel
//! names (RFC 8509) answer or fail by the root anchor's key tag. The same
//! verdicts come
//! when the zones are reached through forwarding (RD set) instead of
//! iterating. delv, validating for
//! itself through bulwark's resolver, gets the signatures and proofs it
//! needs.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use hickory_proto::rr::RecordType;

use crate::interop_validation::{bulwark, key_directory, setup, static_key_anchor, CASES};
use crate::support::{self, require_tool, temp_dir, ChildGuard, EdnsSpec, QuerySpec, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);

/// IANA's KSK-2017, key tag 20326.
const ROOT_KSK_2017: &str =
    ". IN DS 20326 8 2 E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D";

/// How the resolver reaches the zones' server.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reach {
    /// As a stub zone's authoritative server, iterating (RD clear).
    Stub,
    /// As a forwarder (RD set): validation must not care.
    Forward,
}

/// bulwark as a validating resolver with `anchors`, `zones` reached at
/// `upstream` as `reach` says.
pub(crate) fn start_resolver(
    dir: &Path,
    anchors: &[String],
    zones: &[&str],
    upstream: SocketAddr,
    reach: Reach,
) -> (ChildGuard, SocketAddr) {
    start_resolver_with(dir, anchors, zones, upstream, reach, "")
}

/// [`start_resolver`] with `resolver_lines` added to its `[resolver]` table.
pub(crate) fn start_resolver_with(
    dir: &Path,
    anchors: &[String],
    zones: &[&str],
    upstream: SocketAddr,
    reach: Reach,
    resolver_lines: &str,
) -> (ChildGuard, SocketAddr) {
    // The root's KSK-2017 as an anchor too, for the sentinel (RFC 8509):
    // the zones below have anchors of their own, which are closer.
    let quoted: Vec<String> = anchors
        .iter()
        .map(|a| format!("\"{a}\""))
        .chain([format!("\"{ROOT_KSK_2017}\"")])
        .collect();
    let mut config = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n\
         [control]\nsocket = \"{}\"\n\n\
         [resolver]\nroot_hints = [\"127.0.0.1:9\"]\nquery_localhost = true\n\
         dnssec_validation = true\ntrust_anchors = [{}]\n{resolver_lines}\n",
        dir.join("control.sock").display(),
        quoted.join(", ")
    );
    let table = match reach {
        Reach::Stub => "resolver.stub",
        Reach::Forward => "resolver.forward",
    };
    for zone in zones {
        config.push_str(&format!(
            "[[{table}]]\nzone = \"{zone}\"\naddresses = [\"{upstream}\"]\n\n"
        ));
    }
    let path = dir.join("resolver.toml");
    fs::write(&path, config).unwrap();
    let argv = vec![
        "serve".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let (process, bound) = support::start_bulwark(&argv, &[], dir, "resolver");
    (process, bound.dns[0])
}

/// What a validating resolver said of a question.
pub(crate) struct Verdict {
    pub rcode: String,
    pub ad: bool,
    pub answers: usize,
    pub ede: Option<u16>,
}

pub(crate) fn resolve(addr: SocketAddr, qname: &str, qtype: RecordType, cd: bool) -> Verdict {
    resolve_over(addr, qname, qtype, cd, Transport::Udp)
}

/// Asks `addr` with RD and DO over `transport` (TCP for answers that do not
/// fit 1,232 octets): the verdict, its Extended DNS Error read from a
/// second asking.
pub(crate) fn resolve_over(
    addr: SocketAddr,
    qname: &str,
    qtype: RecordType,
    cd: bool,
    transport: Transport,
) -> Verdict {
    let mut spec = QuerySpec::new(qname, qtype);
    spec.rd = true;
    spec.cd = cd;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let a = support::query_retry(addr, &spec, transport, TIMEOUT, 3)
        .unwrap_or_else(|e| panic!("{qname} {qtype}: {e}"));
    let wire = spec.to_wire(0x5eed);
    let raw = match transport {
        Transport::Udp => support::exchange_udp(addr, &wire, 0x5eed, TIMEOUT),
        Transport::Tcp => support::exchange_tcp(addr, &wire, TIMEOUT),
    }
    .unwrap();
    Verdict {
        rcode: a.rcode_name(),
        ad: a.ad,
        answers: a.answer.len(),
        ede: support::extended_error(&raw).map(|(code, _)| code),
    }
}

/// `bulwark ctl` on `socket`, its output (stdout and stderr).
pub(crate) fn ctl(socket: &Path, words: &[&str]) -> String {
    let out = Command::new(support::bulwark_bin())
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn bulwark_validates_every_algorithm_and_denial_as_unbound_does() {
    let Some(delv) = require_tool("delv") else {
        return;
    };
    let dir = temp_dir("resolver-validation-");
    let config = setup(dir.path());
    let mut auth = support::spawn_bulwark(&[], &["--config", config.to_str().unwrap()]);
    for case in &CASES {
        auth.wait_ready(case.zone, RecordType::SOA, |a| {
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
    let zones: Vec<&str> = CASES.iter().map(|c| c.zone).collect();
    let forward_dir = temp_dir("resolver-validation-forward-");
    let (forwarding, forwarder) = start_resolver(
        forward_dir.path(),
        &anchors,
        &zones,
        auth.addr,
        Reach::Forward,
    );
    let resolver_dir = temp_dir("resolver-validation-good-");
    let (process, resolver) = start_resolver(
        resolver_dir.path(),
        &anchors,
        &zones,
        auth.addr,
        Reach::Stub,
    );

    for (case, (process, resolver)) in CASES
        .iter()
        .flat_map(|c| [(c, (&process, resolver)), (c, (&forwarding, forwarder))])
    {
        let name = |label: &str| format!("{label}{}", case.zone);
        let check = |qname: &str, qtype: RecordType, rcode: &str, answers: bool, ad: bool| {
            let v = resolve(resolver, qname, qtype, false);
            let log = process.log();
            assert_eq!(v.rcode, rcode, "{qname} {qtype} (EDE {:?})\n{log}", v.ede);
            assert_eq!(
                v.answers > 0,
                answers,
                "{qname} {qtype}: answers {}",
                v.answers
            );
            assert_eq!(v.ad, ad, "{qname} {qtype}: AD bit (EDE {:?})\n{log}", v.ede);
        };
        check(case.zone, RecordType::DNSKEY, "NOERROR", true, true);
        check(&name("www."), RecordType::A, "NOERROR", true, true);
        check(&name("www."), RecordType::AAAA, "NOERROR", true, true);
        check(&name("alias."), RecordType::A, "NOERROR", true, true);
        // NODATA at a name, and at an empty non-terminal.
        check(&name("www."), RecordType::MX, "NOERROR", false, true);
        check(&name("y.ent."), RecordType::A, "NOERROR", false, true);
        check(&name("x.y.ent."), RecordType::TXT, "NOERROR", true, true);
        let secure_denial = !case.opt_out;
        check(
            &name("nope."),
            RecordType::A,
            "NXDOMAIN",
            false,
            secure_denial,
        );
        // The zone's own apex NSEC, cached from that denial, must not deny
        // the zone's DS (RFC 6840 §4.1): the DS is its parent's, which
        // here nobody serves.
        let ds = resolve(resolver, case.zone, RecordType::DS, false);
        assert!(
            !(ds.rcode == "NOERROR" && ds.answers == 0),
            "{} DS denied by the zone itself: {} AD {}",
            case.zone,
            ds.rcode,
            ds.ad
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
        // RFC 8509: the sentinel names say which root key is an anchor.
        check(
            &name("root-key-sentinel-is-ta-20326."),
            RecordType::A,
            "NOERROR",
            true,
            true,
        );
        check(
            &name("root-key-sentinel-not-ta-20326."),
            RecordType::A,
            "SERVFAIL",
            false,
            false,
        );
        check(
            &name("root-key-sentinel-is-ta-11111."),
            RecordType::A,
            "SERVFAIL",
            false,
            false,
        );
        check(
            &name("root-key-sentinel-not-ta-11111."),
            RecordType::A,
            "NOERROR",
            true,
            true,
        );
        // Asked again, the cache answers with the same verdict.
        check(
            &name("root-key-sentinel-not-ta-20326."),
            RecordType::A,
            "SERVFAIL",
            false,
            false,
        );
        check(&name("www."), RecordType::A, "NOERROR", true, true);
        check(
            &name("nope."),
            RecordType::A,
            "NXDOMAIN",
            false,
            secure_denial,
        );
    }

    // delv validates for itself through bulwark: the signatures and the
    // denial proofs reach a client that sets DO.
    let case = &CASES[2];
    let key_file = fs::read_dir(key_directory(dir.path(), case))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let file = p.file_name().unwrap().to_str().unwrap().to_owned();
            p.extension().is_some_and(|e| e == "key")
                && file.starts_with(&format!("K{}+", case.zone))
                && fs::read_to_string(p).unwrap().contains("DNSKEY 257 ")
        })
        .unwrap();
    let anchor = resolver_dir.path().join("delv.anchor");
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
                format!("@{}", resolver.ip()),
                "-p".into(),
                resolver.port().to_string(),
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
            "delv {qname} through bulwark: expected {expect:?}:\n{text}"
        );
    }
    drop(process);
    drop(forwarding);

    // One anchor replaced by a stranger's DS: that zone is bogus.
    let bad_zone = "p256.test.";
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
    let bad_dir = temp_dir("resolver-validation-bad-");
    let (process, resolver) =
        start_resolver(bad_dir.path(), &anchors, &zones, auth.addr, Reach::Stub);
    let qname = format!("www.{bad_zone}");
    for _ in 0..2 {
        // Once resolved, once from the cache's bogus entry.
        let v = resolve(resolver, &qname, RecordType::A, false);
        assert_eq!(v.rcode, "SERVFAIL", "{}", process.log());
        assert_eq!(v.ede, Some(9), "DNSKEY Missing");
        assert!(!v.ad && v.answers == 0);
        let v = resolve(resolver, &qname, RecordType::A, true);
        assert_eq!(v.rcode, "NOERROR", "CD: the data, to judge for itself");
        assert!(v.answers > 0 && !v.ad);
    }
    let v = resolve(resolver, "www.ed25519.test.", RecordType::A, false);
    assert!(
        v.rcode == "NOERROR" && v.ad,
        "the other zones still validate"
    );

    // A negative trust anchor (RFC 7646) set at run time: the broken zone
    // answers, insecure, until the anchor goes.
    let socket = bad_dir.path().join("control.sock");
    let out = ctl(&socket, &["nta", "add", bad_zone, "600"]);
    assert!(
        out.contains(&format!("{bad_zone} not validated for 600 s")),
        "{out}"
    );
    assert!(ctl(&socket, &["nta", "list"]).contains(bad_zone));
    let v = resolve(resolver, &qname, RecordType::A, false);
    assert_eq!(
        (v.rcode.as_str(), v.ad),
        ("NOERROR", false),
        "under the NTA"
    );
    assert!(v.answers > 0);
    let v = resolve(resolver, "www.ed25519.test.", RecordType::A, false);
    assert!(v.ad, "other zones are still validated");
    let out = ctl(&socket, &["nta", "remove", bad_zone]);
    assert!(out.contains("validated again"), "{out}");
    let v = resolve(resolver, &qname, RecordType::A, false);
    assert_eq!(
        v.rcode, "SERVFAIL",
        "validated again once the anchor is gone"
    );
    drop(process);
}
