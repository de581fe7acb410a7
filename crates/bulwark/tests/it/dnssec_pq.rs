#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Post-quantum DNSSEC (issue 27): ML-DSA-44 as algorithm 18, signed by
//! bulwark and checked by code no one here wrote, validated by bulwark's
//! resolver, and rejected when tampered with; and Falcon-512 on PRIVATEOID
//! (254), experimental, the same way where the resolver is told to validate
//! it, and insecure where it is not.
//!
//! Seven zones on one bulwark authoritative server:
//! - `mldsa.test.` (KSK and ZSK, NSEC) and `mldsa3.test.` (one CSK, NSEC3),
//!   signed online by a `[dnssec_policy]` with `algorithm = "MLDSA44"`;
//! - `offline.test.`, signed by `bulwark sign` with `bulwark keys generate
//!   -a MLDSA44` keys, NSEC3;
//! - `tampered.test.`, signed the same way, NSEC, one octet of the
//!   signature over `www`'s A changed in the signed file;
//! - `dnspython.test.`, signed by dnspython (>= 2.9.2, with cryptography's
//!   ML-DSA) with keys dnspython made;
//! - `falcon.test.`, signed online with `algorithm = "FALCON512"`, and
//!   `falcon-tampered.test.`, signed offline with Falcon-512 keys and one
//!   signature changed as above. No independent Falcon DNSSEC signer or
//!   validator exists to check these against.
//!
//! dnspython verifies every signed RRset of the offline files and, over TCP,
//! what the online signer serves; it refuses the tampered file, so its
//! verdicts bite. bulwark's resolver, with each zone's DS as its trust anchor,
//! gives AD to data and to NXDOMAIN, NODATA and wildcard proofs in every good
//! zone, dnspython's included, and SERVFAIL with Extended DNS Error 6 (DNSSEC
//! Bogus) to the tampered name, whose data still goes to a client that sets
//! CD. Every answer here is larger than 1,232 octets with its signatures, so
//! the resolver's upstream queries meet TC and go on over TCP.
//!
//! Unbound 1.17, which does not implement algorithm 18, holds the same
//! anchors: RFC 4035 §5.2 and RFC 6840 §5.2 make such a zone insecure, not
//! bogus, so it answers every name without AD, the tampered one too. That is
//! what a validator without post-quantum support does with bulwark's zones.
//! A second bulwark resolver, not told `experimental_algorithms`, treats the
//! Falcon zones the same way.
//!
//! Needs `unbound` (Debian) and a python3 with `dns.dnssecalgs.mldsa`
//! (dnspython 2.9.2 and cryptography from PyPI, which scripts/test.sh
//! installs into target/pyquic); under CI their absence fails the test.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use hickory_proto::rr::RecordType;

use crate::interop_validation::{bulwark, start_unbound};
use crate::resolver_validation::{
    resolve_over, start_resolver, start_resolver_with, Reach, Verdict,
};
use crate::support::{
    self, require_python_module, require_tool, temp_dir, Bound, ChildGuard, Transport,
};

/// RFC 8914 §4.7: DNSSEC Bogus.
const EDE_DNSSEC_BOGUS: u16 = 6;

const ONLINE: [(&str, &str); 2] = [
    ("mldsa.test.", "algorithm = \"MLDSA44\""),
    (
        "mldsa3.test.",
        "algorithm = \"MLDSA44\"\nnsec3 = true\nsingle_key = true",
    ),
];
const OFFLINE: &str = "offline.test.";
const TAMPERED: &str = "tampered.test.";
const DNSPYTHON: &str = "dnspython.test.";
const FALCON: (&str, &str) = ("falcon.test.", "algorithm = \"FALCON512\"");
const FALCON_TAMPERED: &str = "falcon-tampered.test.";
/// What a resolver needs to validate Falcon-512.
const EXPERIMENTAL: &str = "experimental_algorithms = [\"FALCON512\"]\n";

fn zone_text() -> &'static str {
    "$TTL 300\n@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  NS ns1\n  MX 10 mail\n\
     ns1 A 192.0.2.1\nwww A 192.0.2.80\n    AAAA 2001:db8::80\nmail A 192.0.2.25\n\
     *.wild TXT \"wildcard\"\nx.y.ent TXT \"below an empty non-terminal\"\n\
     sub NS ns.sub\nns.sub A 192.0.2.53\n"
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/dnssec_pq_oracle.py")
}

/// Runs the dnspython oracle; its stdout, or its stderr as the error.
fn oracle(python: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(python)
        .arg(oracle_script())
        .args(args)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Signs `zone` offline with a new KSK and ZSK of `algorithm` in `keys`;
/// the signed file's path.
fn sign_offline(dir: &Path, keys: &Path, zone: &str, algorithm: &str, nsec3: bool) -> PathBuf {
    let keys = keys.to_str().unwrap();
    for role in ["ksk", "zsk"] {
        bulwark(&[
            "keys", "generate", zone, "-a", algorithm, "--role", role, "-K", keys,
        ]);
    }
    let unsigned = dir.join(format!("{zone}zone"));
    fs::write(&unsigned, zone_text()).unwrap();
    let signed = dir.join(format!("{zone}zone.signed"));
    let mut args = vec![
        "sign",
        zone,
        unsigned.to_str().unwrap(),
        "-K",
        keys,
        "-o",
        signed.to_str().unwrap(),
    ];
    if nsec3 {
        args.push("--nsec3");
    }
    bulwark(&args);
    signed
}

/// Changes one octet of the signature over `owner`'s A RRset in a signed
/// file `bulwark sign` wrote (one record a line, owner first).
fn tamper_with_a_signature(path: &Path, owner: &str) {
    let text = fs::read_to_string(path).unwrap();
    let mut changed = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let covers_a = tokens.windows(2).any(|w| w[0] == "RRSIG" && w[1] == "A");
            if tokens.first() != Some(&owner) || !covers_a {
                return line.to_owned();
            }
            changed += 1;
            // The signature is the last field's base64; a letter in its
            // middle becomes another, so the text still decodes.
            let mut chars: Vec<char> = line.chars().collect();
            let at = chars.len() - 40;
            chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
            chars.into_iter().collect()
        })
        .collect();
    assert_eq!(changed, 1, "one RRSIG over {owner} A in\n{text}");
    fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Asks `addr` over TCP with RD and DO: these answers do not fit 1,232
/// octets, and the verdict is what is compared here, not truncation.
fn resolve(addr: SocketAddr, qname: &str, qtype: RecordType, cd: bool) -> Verdict {
    resolve_over(addr, qname, qtype, cd, Transport::Tcp)
}

#[test]
fn bulwark_signs_and_validates_ml_dsa_44_as_dnspython_does_and_unbound_calls_it_insecure() {
    let Some(python) = require_python_module("dns.dnssecalgs.mldsa") else {
        return;
    };
    let Some(unbound) = require_tool("unbound") else {
        return;
    };
    let dir = temp_dir("dnssec-pq-");
    let offline_keys = dir.path().join("offline-keys");

    // The zones and the server's configuration.
    let mut config = String::from("[server]\nthreads = 1\n\n");
    for (i, (zone, policy)) in ONLINE.iter().chain([&FALCON]).enumerate() {
        let file = format!("{zone}zone");
        fs::write(dir.path().join(&file), zone_text()).unwrap();
        config.push_str(&format!(
            "[dnssec_policy.pq{i}]\n{policy}\n\n[[zone]]\norigin = \"{zone}\"\nfile = \"{file}\"\ndnssec_policy = \"pq{i}\"\n\n"
        ));
    }
    let offline = sign_offline(dir.path(), &offline_keys, OFFLINE, "MLDSA44", true);
    let tampered = sign_offline(dir.path(), &offline_keys, TAMPERED, "MLDSA44", false);
    tamper_with_a_signature(&tampered, &format!("www.{TAMPERED}"));
    let falcon_tampered = sign_offline(
        dir.path(),
        &offline_keys,
        FALCON_TAMPERED,
        "FALCON512",
        true,
    );
    tamper_with_a_signature(&falcon_tampered, &format!("www.{FALCON_TAMPERED}"));
    let unsigned = dir.path().join("dnspython.test.zone");
    fs::write(&unsigned, zone_text()).unwrap();
    let by_dnspython = dir.path().join("dnspython.test.zone.signed");
    let dnspython_ds = oracle(
        &python,
        &[
            "sign",
            DNSPYTHON,
            unsigned.to_str().unwrap(),
            by_dnspython.to_str().unwrap(),
        ],
    )
    .unwrap_or_else(|e| panic!("dnspython signing: {e}"));
    for (zone, file) in [
        (OFFLINE, &offline),
        (TAMPERED, &tampered),
        (DNSPYTHON, &by_dnspython),
        (FALCON_TAMPERED, &falcon_tampered),
    ] {
        config.push_str(&format!(
            "[[zone]]\norigin = \"{zone}\"\nfile = \"{}\"\n\n",
            file.display()
        ));
    }
    let path = dir.path().join("bulwark.toml");
    fs::write(&path, config).unwrap();

    // dnspython verifies bulwark's offline signatures, and refuses the
    // tampered file at the changed signature.
    let verified = oracle(
        &python,
        &["verify-file", OFFLINE, offline.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("dnspython on bulwark sign's {OFFLINE}: {e}"));
    assert!(verified.starts_with("verified "), "{verified}");
    let refused = oracle(
        &python,
        &["verify-file", TAMPERED, tampered.to_str().unwrap()],
    )
    .expect_err("dnspython verified the tampered zone");
    assert!(
        refused.contains(&format!("www.{TAMPERED} A")),
        "dnspython refused something else: {refused}"
    );

    let mut auth = support::spawn_bulwark(&[], &["--config", path.to_str().unwrap()]);
    let all_zones = [
        ONLINE[0].0,
        ONLINE[1].0,
        OFFLINE,
        TAMPERED,
        DNSPYTHON,
        FALCON.0,
        FALCON_TAMPERED,
    ];
    for zone in all_zones {
        auth.wait_ready(zone, RecordType::SOA, |a| {
            a.rcode == 0 && !a.answer.is_empty()
        });
    }

    // dnspython verifies what the online signer serves: the DNSKEY RRset,
    // data, a wildcard answer and the NSEC or NSEC3 proofs of a denial.
    for (zone, _) in ONLINE {
        let names = ["www", "a.wild", "nope"].map(|label| format!("{label}.{zone}"));
        let mut args = vec![
            "verify-live".to_string(),
            zone.to_string(),
            auth.addr.ip().to_string(),
            auth.addr.port().to_string(),
        ];
        args.extend(names);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let verified = oracle(&python, &args)
            .unwrap_or_else(|e| panic!("dnspython on bulwark's online {zone}: {e}"));
        assert!(verified.starts_with("verified "), "{verified}");
    }

    // Each zone's DS is the trust anchor.
    let mut anchors = Vec::new();
    for zone in all_zones {
        let ds = match zone {
            DNSPYTHON => dnspython_ds.clone(),
            _ if ONLINE.iter().chain([&FALCON]).any(|(z, _)| *z == zone) => {
                let keys = dir.path().join("keys");
                bulwark(&["keys", "ds", zone, "-K", keys.to_str().unwrap()])
            }
            _ => bulwark(&["keys", "ds", zone, "-K", offline_keys.to_str().unwrap()]),
        };
        let ds = ds.trim().to_owned();
        assert_eq!(ds.lines().count(), 1, "{zone}: {ds}");
        let algorithm = if zone.starts_with("falcon") { 254 } else { 18 };
        assert!(
            ds.contains(" DS ") && ds.contains(&format!(" {algorithm} 2 ")),
            "{ds}"
        );
        anchors.push(ds);
    }

    let resolver_dir = temp_dir("dnssec-pq-resolver-");
    let (process, resolver) = start_resolver_with(
        resolver_dir.path(),
        &anchors,
        &all_zones,
        auth.addr,
        Reach::Stub,
        EXPERIMENTAL,
    );
    let check = |qname: &str, qtype: RecordType, rcode: &str, answers: bool, ad: bool| {
        let v = resolve(resolver, qname, qtype, false);
        let log = process.log();
        assert_eq!(v.rcode, rcode, "{qname} {qtype} (EDE {:?})\n{log}", v.ede);
        assert_eq!(v.answers > 0, answers, "{qname} {qtype}: answers");
        assert_eq!(v.ad, ad, "{qname} {qtype}: AD (EDE {:?})\n{log}", v.ede);
    };
    for zone in [ONLINE[0].0, ONLINE[1].0, OFFLINE, DNSPYTHON, FALCON.0] {
        check(zone, RecordType::DNSKEY, "NOERROR", true, true);
        check(&format!("www.{zone}"), RecordType::A, "NOERROR", true, true);
        check(
            &format!("www.{zone}"),
            RecordType::MX,
            "NOERROR",
            false,
            true,
        );
        check(
            &format!("y.ent.{zone}"),
            RecordType::A,
            "NOERROR",
            false,
            true,
        );
        check(
            &format!("nope.{zone}"),
            RecordType::A,
            "NXDOMAIN",
            false,
            true,
        );
        check(
            &format!("a.wild.{zone}"),
            RecordType::TXT,
            "NOERROR",
            true,
            true,
        );
        check(
            &format!("sub.{zone}"),
            RecordType::DS,
            "NOERROR",
            false,
            true,
        );
    }
    for zone in [TAMPERED, FALCON_TAMPERED] {
        let broken = format!("www.{zone}");
        for _ in 0..2 {
            // Once resolved, once from the cache's bogus entry.
            let v = resolve(resolver, &broken, RecordType::A, false);
            assert_eq!(v.rcode, "SERVFAIL", "{broken}\n{}", process.log());
            assert_eq!(v.ede, Some(EDE_DNSSEC_BOGUS), "{broken}");
            assert!(!v.ad && v.answers == 0);
            let v = resolve(resolver, &broken, RecordType::A, true);
            assert_eq!(v.rcode, "NOERROR", "CD: the data, to judge for itself");
            assert!(v.answers > 0 && !v.ad);
        }
        // Only the changed signature is bad: the rest of the zone validates.
        check(
            &format!("mail.{zone}"),
            RecordType::A,
            "NOERROR",
            true,
            true,
        );
        check(
            &format!("www.{zone}"),
            RecordType::AAAA,
            "NOERROR",
            true,
            true,
        );
    }
    drop(process);

    // Without `experimental_algorithms`, PRIVATEOID is an algorithm not
    // implemented: the Falcon zones are insecure, answered without AD.
    let plain_dir = temp_dir("dnssec-pq-plain-");
    let (plain, plain_addr) = start_resolver(
        plain_dir.path(),
        &anchors,
        &all_zones,
        auth.addr,
        Reach::Stub,
    );
    for zone in [FALCON.0, FALCON_TAMPERED] {
        let v = resolve(plain_addr, &format!("www.{zone}"), RecordType::A, false);
        assert_eq!(
            (v.rcode.as_str(), v.answers > 0, v.ad),
            ("NOERROR", true, false),
            "www.{zone} without experimental algorithms\n{}",
            plain.log()
        );
    }
    let v = resolve(plain_addr, &format!("www.{OFFLINE}"), RecordType::A, false);
    assert!(v.ad, "ML-DSA-44 is not experimental: validated by default");
    drop(plain);

    // Unbound implements neither algorithm 18 nor Falcon: the zones are
    // insecure to it, and it answers them, without AD (RFC 4035 §5.2, RFC
    // 6840 §5.2).
    let unbound_dir = temp_dir("dnssec-pq-unbound-");
    let unbound = start_unbound(
        &unbound,
        unbound_dir.path(),
        &anchors,
        &all_zones,
        auth.addr,
    );
    for zone in all_zones {
        let v = resolve(unbound.addr, &format!("www.{zone}"), RecordType::A, false);
        assert_eq!(
            (v.rcode.as_str(), v.answers > 0, v.ad),
            ("NOERROR", true, false),
            "Unbound on www.{zone}\n{}",
            unbound.process.log()
        );
    }
}

/// The zone the delivery tests serve, signed online with ML-DSA-44.
const MLDSA_ZONE: &str = "mldsa.test.";

/// bulwark serving [`MLDSA_ZONE`] on 127.0.0.1, with `server_lines` added to
/// its `[server]` table and `tables` before its zone: the process, what it
/// bound, and the zone's DS, once it is signed.
fn serve_mldsa_zone(dir: &Path, server_lines: &str, tables: &str) -> (ChildGuard, Bound, String) {
    fs::write(dir.join("mldsa.test.zone"), zone_text()).unwrap();
    let config = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n{server_lines}\n{tables}\
         [dnssec_policy.pq]\nalgorithm = \"MLDSA44\"\n\n\
         [[zone]]\norigin = \"{MLDSA_ZONE}\"\nfile = \"mldsa.test.zone\"\ndnssec_policy = \"pq\"\n"
    );
    let path = dir.join("auth.toml");
    fs::write(&path, config).unwrap();
    let args = ["serve", "--config", path.to_str().unwrap()].map(String::from);
    let (auth, bound) = support::start_bulwark(&args, &[], dir, "auth");
    let keys = dir.join("keys");
    let ds = bulwark(&["keys", "ds", MLDSA_ZONE, "-K", keys.to_str().unwrap()]);
    (auth, bound, ds.trim().to_owned())
}

/// Queries of `transport` a bulwark has received, by its metrics.
fn queries_over(prometheus: SocketAddr, transport: &str) -> u64 {
    let prefix = format!("bulwark_queries_total{{transport=\"{transport}\"");
    support::scrape_metrics(prometheus)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Seed 003's fewer round trips, the standard way: an authoritative bulwark
/// that sends UDP answers larger than 1,232 octets only to clients that
/// proved their address with its cookie (`max_udp_payload` with `[cookies]
/// require_for_udp_above`), and a resolving bulwark that offers a larger
/// payload to servers whose cookie it holds (`udp_payload_with_cookie`).
/// After the first exchange, which gets the cookie, ML-DSA-44 answers come
/// over UDP in one round trip, and the authoritative server sees no more TCP.
/// A resolver without the setting falls back to TCP for every such answer.
#[test]
fn a_resolver_holding_the_servers_cookie_gets_large_answers_over_udp() {
    let dir = temp_dir("dnssec-pq-cookie-");
    let (_auth, bound, ds) = serve_mldsa_zone(
        dir.path(),
        "max_udp_payload = 8192\n",
        "[cookies]\nrequire_for_udp_above = 1232\n\n[prometheus]\nlisten = \"127.0.0.1:0\"\n\n",
    );
    let zone = MLDSA_ZONE;
    let auth = bound.dns[0];
    let prometheus = bound.prometheus.expect("prometheus bound");
    let anchors = [ds];

    let names = [
        ("mail", RecordType::A),
        ("www", RecordType::AAAA),
        ("nope1", RecordType::A),
        ("nope2", RecordType::A),
        ("x.y.ent", RecordType::TXT),
    ];
    for (with_cookie, more_tcp) in [(true, false), (false, true)] {
        let resolver_dir = temp_dir("dnssec-pq-cookie-resolver-");
        let lines = if with_cookie {
            "udp_payload_with_cookie = 8192\n"
        } else {
            ""
        };
        let (process, resolver) = start_resolver_with(
            resolver_dir.path(),
            &anchors,
            &[zone],
            auth,
            Reach::Stub,
            lines,
        );
        // The first question meets the server: its first answers are TC
        // (no cookie of ours yet), then the cookie is held.
        let v = resolve(resolver, &format!("www.{zone}"), RecordType::A, false);
        assert!(v.rcode == "NOERROR" && v.ad, "{}", process.log());
        let (tcp_before, udp_before) = (
            queries_over(prometheus, "tcp"),
            queries_over(prometheus, "udp"),
        );
        for (label, qtype) in names {
            let qname = format!("{label}.{zone}");
            let v = resolve(resolver, &qname, qtype, false);
            assert!(
                v.ad && (v.rcode == "NOERROR" || v.rcode == "NXDOMAIN"),
                "{qname} {qtype}: {} AD {}\n{}",
                v.rcode,
                v.ad,
                process.log()
            );
        }
        let tcp = queries_over(prometheus, "tcp") - tcp_before;
        let udp = queries_over(prometheus, "udp") - udp_before;
        assert!(udp >= names.len() as u64, "UDP queries {udp}");
        if more_tcp {
            assert!(tcp >= names.len() as u64, "without the setting, TCP {tcp}");
        } else {
            assert_eq!(tcp, 0, "with the server's cookie, no TCP ({udp} over UDP)");
        }
    }
}

/// The TcpExt counter `name` of the network namespace this thread is in
/// (`/proc/thread-self`: `/proc/net` would be the process's namespace).
fn tcp_ext(name: &str) -> u64 {
    let text = fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    let names: Vec<&str> = lines[0].split_whitespace().collect();
    let values: Vec<&str> = lines[1].split_whitespace().collect();
    let at = names
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("no TcpExt {name}"));
    values[at].parse().unwrap()
}

/// TCP Fast Open (RFC 7413), seed 003's other saving: bulwark's TCP
/// listeners take a query in the SYN from a client that holds their TFO
/// cookie, and bulwark's resolver sends its TCP queries in the SYN to a
/// server whose cookie the kernel holds. In a private network namespace
/// with `net.ipv4.tcp_fastopen = 3` (client and server), the namespace's
/// own counters show it: TCPFastOpenPassive counts SYNs whose data a
/// listener took, TCPFastOpenActive SYNs whose data a server took. kdig
/// (`+fastopen`) is the client no one here wrote; the server for the
/// resolver is bulwark's authoritative side, whose ML-DSA-44 answers do
/// not fit 1,232 octets, so the resolver meets TC and uses TCP.
#[test]
fn tcp_fast_open_carries_queries_in_the_syn_both_ways() {
    let Some(kdig) = require_tool("kdig") else {
        return;
    };
    bulwark_testkit::netns::isolated_or_skip(|| {
        let set = Command::new("sh")
            .args(["-c", "echo 3 > /proc/sys/net/ipv4/tcp_fastopen"])
            .status()
            .unwrap();
        assert!(set.success(), "net.ipv4.tcp_fastopen in the namespace");
        let dir = temp_dir("dnssec-pq-tfo-");
        let (_auth, bound, ds) = serve_mldsa_zone(dir.path(), "", "");
        let zone = MLDSA_ZONE;
        let auth = bound.dns[0];

        // kdig: the first connection gets a TFO cookie, the second sends
        // its query in the SYN, and bulwark takes it.
        let passive = tcp_ext("TCPFastOpenPassive");
        for _ in 0..2 {
            let out = support::run_tool(
                &kdig,
                &[
                    format!("@{}", auth.ip()),
                    "-p".into(),
                    auth.port().to_string(),
                    "+tcp".into(),
                    "+fastopen".into(),
                    "+dnssec".into(),
                    format!("www.{zone}"),
                    "A".into(),
                ],
            );
            assert!(out.contains("NOERROR") && out.contains("RRSIG"), "{out}");
        }
        assert!(
            tcp_ext("TCPFastOpenPassive") > passive,
            "bulwark took no query from a SYN"
        );

        // The resolver: one instance's TCP connection leaves the server's
        // cookie in the namespace's kernel; the next instance's first TCP
        // query goes in its SYN.
        let anchors = [ds];
        let active = tcp_ext("TCPFastOpenActive");
        for label in ["www", "mail"] {
            let resolver_dir = temp_dir("dnssec-pq-tfo-resolver-");
            let (process, resolver) =
                start_resolver(resolver_dir.path(), &anchors, &[zone], auth, Reach::Stub);
            let v = resolve(resolver, &format!("{label}.{zone}"), RecordType::A, false);
            assert!(v.rcode == "NOERROR" && v.ad, "{}", process.log());
        }
        assert!(
            tcp_ext("TCPFastOpenActive") > active,
            "the resolver sent no query in a SYN"
        );
    });
}
