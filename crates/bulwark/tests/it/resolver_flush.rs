#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `bulwark ctl cache flush` on a validating resolver: what it flushes is
//! forgotten everywhere the resolver keeps it, not only among the cached
//! RRsets. A zone's operator adds a name and flushes the zone: the name
//! resolves at once, though the NSEC spans of an earlier denial (RFC 8198)
//! covered it and had hours to live. After flushing everything, an answer
//! costs the questions it cost a fresh resolver: the zone's keys are asked
//! for again, not trusted from before the flush.
//!
//! The zone is signed by bulwark's authoritative side (NSEC, ECDSA P-256),
//! reached as a stub zone with its DS as the trust anchor, as in
//! `resolver_validation`.

use std::fs;
use std::path::Path;

use hickory_proto::rr::RecordType;

use crate::interop_validation::bulwark;
use crate::resolver_validation::{ctl, resolve, start_resolver, Reach};
use crate::support::{self, temp_dir};

const ZONE: &str = "flush.test.";

/// The zone at `serial`, with `extra` records; negative answers live an
/// hour (the SOA's TTL and MINIMUM), so only a flush can end a denial
/// within the test.
fn zone_text(serial: u32, extra: &str) -> String {
    format!(
        "$TTL 3600\n@ IN SOA ns1 hostmaster {serial} 3600 900 604800 3600\n  NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.80\nzzz A 192.0.2.90\n{extra}"
    )
}

/// The resolver's count of queries it sent upstream, from `ctl stats`.
fn upstream_queries(socket: &Path) -> u64 {
    let stats = ctl(socket, &["stats"]);
    stats
        .lines()
        .find_map(|l| l.strip_prefix("bulwark_resolver_upstream_queries_total "))
        .unwrap_or_else(|| panic!("no upstream query count in:\n{stats}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_flush_forgets_the_zones_keys_and_the_spans_that_denied_its_names() {
    let dir = temp_dir("resolver-flush-auth-");
    let file = dir.path().join("flush.test.zone");
    fs::write(&file, zone_text(1, "")).unwrap();
    let auth_socket = dir.path().join("auth.sock");
    let config = dir.path().join("bulwark.toml");
    fs::write(
        &config,
        format!(
            "[server]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n\
             [dnssec_policy.p]\nalgorithm = \"ECDSAP256SHA256\"\n\n\
             [[zone]]\norigin = \"{ZONE}\"\nfile = \"flush.test.zone\"\ndnssec_policy = \"p\"\n",
            auth_socket.display()
        ),
    )
    .unwrap();
    let mut auth = support::spawn_bulwark(&[], &["--config", config.to_str().unwrap()]);
    auth.wait_ready(ZONE, RecordType::SOA, |a| {
        a.rcode == 0 && !a.answer.is_empty()
    });
    let keys = dir.path().join("keys");
    let ds = bulwark(&["keys", "ds", ZONE, "-K", keys.to_str().unwrap()]);
    let resolver_dir = temp_dir("resolver-flush-");
    let (process, resolver) = start_resolver(
        resolver_dir.path(),
        &[ds.trim().to_owned()],
        &[ZONE],
        auth.addr,
        Reach::Stub,
    );
    let socket = resolver_dir.path().join("control.sock");
    let secure = |qname: &str, rcode: &str, answers: bool| {
        let v = resolve(resolver, qname, RecordType::A, false);
        let log = process.log();
        assert_eq!(v.rcode, rcode, "{qname} (EDE {:?})\n{log}", v.ede);
        assert_eq!(v.answers > 0, answers, "{qname}: {} answers", v.answers);
        assert!(v.ad, "{qname}: no AD (EDE {:?})\n{log}", v.ede);
    };

    // What a fresh resolver asks to answer an address: the zone's keys
    // and the address.
    let before = upstream_queries(&socket);
    secure("www.flush.test.", "NOERROR", true);
    let fresh = upstream_queries(&socket) - before;
    assert!(fresh >= 2, "{fresh} questions for the keys and the address");

    // A denial's NSEC spans (www to zzz) then deny another name there
    // without asking.
    secure("x.flush.test.", "NXDOMAIN", false);
    let before = upstream_queries(&socket);
    secure("y.flush.test.", "NXDOMAIN", false);
    assert_eq!(upstream_queries(&socket), before, "the spans answer y.");

    // The zone gains y.; its server has it, and the resolver still denies
    // it from the spans it holds.
    fs::write(&file, zone_text(2, "y A 192.0.2.121\n")).unwrap();
    let reloaded = ctl(&auth_socket, &["reload"]);
    auth.wait_ready("y.flush.test.", RecordType::A, |a| {
        a.rcode == 0 && !a.answer.is_empty()
    });
    secure("y.flush.test.", "NXDOMAIN", false);

    // Flushing the zone: y. is asked for, found, and secure.
    let out = ctl(&socket, &["cache", "flush", "--zone", ZONE]);
    assert!(out.contains("flushed"), "{out}");
    secure("y.flush.test.", "NOERROR", true);
    secure("x.flush.test.", "NXDOMAIN", false);

    // Flushing everything: an address costs what it cost when fresh, the
    // zone's keys asked for again.
    let out = ctl(&socket, &["cache", "flush"]);
    assert!(out.contains("flushed"), "{out}");
    let before = upstream_queries(&socket);
    secure("www.flush.test.", "NOERROR", true);
    assert_eq!(
        upstream_queries(&socket) - before,
        fresh,
        "questions after a flush against a fresh resolver's (auth reload: {reloaded})"
    );

    // Forgetting the servers keeps the data: the cached answer costs no
    // question, and the resolver goes on resolving.
    let out = ctl(&socket, &["cache", "flush-infra", "127.0.0.1"]);
    assert!(
        out.contains("forgetting what is known of 127.0.0.1"),
        "{out}"
    );
    let out = ctl(&socket, &["cache", "flush-infra"]);
    assert!(out.contains("every server"), "{out}");
    let before = upstream_queries(&socket);
    secure("www.flush.test.", "NOERROR", true);
    assert_eq!(
        upstream_queries(&socket),
        before,
        "the answer is still cached"
    );
    secure("z.flush.test.", "NXDOMAIN", false);
    assert!(
        upstream_queries(&socket) > before,
        "the servers are asked again"
    );
}
