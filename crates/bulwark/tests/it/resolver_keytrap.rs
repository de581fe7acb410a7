#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Validation work is bounded per question: a KeyTrap zone (CVE-2023-50387)
//! and a zone whose NSEC3 records ask for 2,500 hash iterations get the
//! answers the RFCs ask for, promptly, at a CPU cost per question that is
//! measured, printed and held under a bound.
//!
//! Three zones, signed offline (ECDSAP256SHA256, a KSK and a ZSK from
//! dnssec-keygen), served by NSD from their files on loopback, reached by
//! bulwark through `[[resolver.stub]]` and anchored each by its own DS, as
//! `resolver_validation` does:
//!
//! - `keytrap.test.` (dnssec-signzone, NSEC): besides its KSK and ZSK, its
//!   DNSKEY RRset (signed by both) holds [`COLLIDING_KEYS`] more keys that
//!   all share one key tag, and [`GARBAGE_SIGNATURES`] RRSIGs with that tag
//!   and random signature octets are added after signing over `www A`,
//!   `mixed A` and the wildcard `*.keytrap.test. A`. The colliding keys are
//!   real P-256 points (fresh key pairs), so each one a validator tries
//!   costs a whole signature check; a key's tag is moved onto the common
//!   one with reserved flag bits, which RFC 4034 §2.1.1 says "MUST be
//!   ignored upon receipt" (see [`flags_for`]). `www` and the wildcard lose their real
//!   signature (bogus whichever signature a validator tries first); `mixed`
//!   keeps it among the garbage (bogus if the budget runs out first, secure
//!   if the real one is met within it: either is a right answer); `good`
//!   and the wildcard `*.clean` have their real signature only, the
//!   controls. A validator without bounds makes 64 x 64 checks for each
//!   name under the poisoned wildcard.
//! - `nsec3-2500.test.` (ldns-signzone: BIND's dnssec-signzone 9.18 refuses
//!   more than 150 iterations): NSEC3, 2,500 iterations, no salt. RFC 9276
//!   §3.2: "Validating resolvers MAY return an insecure response to their
//!   clients when processing NSEC3 records with iterations larger than 0";
//!   §3.2 also lets them return SERVFAIL above a higher limit. bulwark's
//!   limit is 150, as Unbound's: its NXDOMAIN and NODATA come back without
//!   AD, and without the 3 x 2,501 SHA-1 a proof would cost. Its data,
//!   which needs no NSEC3, is secure. `nsec3-151.test.`, the same zone with
//!   151 iterations (just past the limit), is the control: as insecure, and
//!   no cheaper to answer, for a validator that does not hash. Both hold
//!   [`NSEC3_EXTRA_NAMES`] more names, so that their denials carry three
//!   NSEC3 records alike, and both are past what the aggressive cache uses
//!   (RFC 8198 with RFC 9276's limit): every NXDOMAIN asks NSD and is
//!   validated.
//!
//! Each question is asked once (UDP, TCP when truncated) with RD and DO, of
//! bulwark and of Unbound (Debian 12's 1.17.1 carries the KeyTrap and NSEC3
//! fixes as patches) with the same anchors and stubs. bulwark's answers are
//! asserted, each within [`QUERY_TIMEOUT`]; Unbound's are printed beside
//! them (`-- --nocapture`), and its controls must come out secure (else the
//! zones, not bulwark, are wrong). Then [`MEASURED_NAMES`] distinct names
//! under each wildcard and as many non-existent names under each NSEC3
//! zone (distinct: no cache helps) are asked of each, one at a time, and
//! the process's CPU time (utime + stime from /proc/PID/stat) over them
//! gives the CPU per question, printed for both; every one of those
//! answers must be as above. How much CPU is a benchmark's to say, not a
//! test's (`bench/keytrap.sh` measures it, bulwark against its peers,
//! pinned to one core).

use std::fmt::Write as _;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bulwark_dnssec::{Algorithm, SigningKey};
use bulwark_proto::encoding::base64_encode;
use hickory_proto::rr::RecordType;

use crate::support::{self, Answer, ChildGuard, EdnsSpec, QuerySpec, Transport};

/// How long a client waits for one answer.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Extra keys in keytrap.test.'s DNSKEY RRset, all with one key tag.
const COLLIDING_KEYS: usize = 64;
/// Garbage RRSIGs (that tag, random signature) over each poisoned RRset.
const GARBAGE_SIGNATURES: usize = 64;
/// NSEC3 iterations of nsec3-2500.test.
const NSEC3_ITERATIONS: u32 = 2500;
/// Distinct names asked of each resolver for the CPU measurement, per zone.
const MEASURED_NAMES: usize = 200;
const RCODE_NOERROR: u16 = 0;
const RCODE_SERVFAIL: u16 = 2;
const RCODE_NXDOMAIN: u16 = 3;

/// ECDSAP256SHA256 (RFC 6605).
const ALGORITHM: u8 = 13;
/// The zone-key bit (flags bit 7), in the flags' first octet.
const ZONE_KEY_HIGH: u8 = 0x01;

const KEYTRAP: &str = "keytrap.test.";
const NSEC3_ZONE: &str = "nsec3-2500.test.";
/// The same zone just past the iteration limit, the control.
const NSEC3_CONTROL: &str = "nsec3-151.test.";
/// Its iterations: RFC 9276's limit, and bulwark's and Unbound's, plus one.
const CONTROL_ITERATIONS: u32 = 151;
/// Names in each NSEC3 zone besides the apex, `ns` and `www`.
const NSEC3_EXTRA_NAMES: u32 = 64;
/// The poisoned wildcard's control: a wildcard with its real signature.
const CLEAN: &str = "clean.keytrap.test.";

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

struct Tools {
    nsd: PathBuf,
    unbound: PathBuf,
    keygen: PathBuf,
    signzone: PathBuf,
    dsfromkey: PathBuf,
    ldns_signzone: PathBuf,
}

impl Tools {
    fn find() -> Option<Tools> {
        Some(Tools {
            nsd: support::require_tool("nsd")?,
            unbound: support::require_tool("unbound")?,
            keygen: support::require_tool("dnssec-keygen")?,
            signzone: support::require_tool("dnssec-signzone")?,
            dsfromkey: support::require_tool("dnssec-dsfromkey")?,
            ldns_signzone: support::require_tool("ldns-signzone")?,
        })
    }
}

fn run(program: &Path, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    support::run_tool(program, &args)
}

// ---------------------------------------------------------------------------
// Colliding keys and garbage signatures
// ---------------------------------------------------------------------------

/// RFC 4034 Appendix B, written out again here so that the zone does not
/// depend on the code under test's own key tag.
fn key_tag(rdata: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for (i, &b) in rdata.iter().enumerate() {
        acc += if i % 2 == 0 {
            u32::from(b) << 8
        } else {
            u32::from(b)
        };
    }
    acc += (acc >> 16) & 0xffff;
    (acc & 0xffff) as u16
}

fn dnskey_rdata(flags: u16, public: &[u8]) -> Vec<u8> {
    let mut rdata = flags.to_be_bytes().to_vec();
    rdata.extend([3, ALGORITHM]);
    rdata.extend_from_slice(public);
    rdata
}

/// Flags that give `public` the key tag `target`, if any: the zone-key bit,
/// never REVOKE, and any of the reserved bits 4-6 (first octet, counted x256
/// in the tag) and 9-14 and SEP (second octet, counted x1): one key pair in
/// 64 or so can be moved onto any tag. Bits 0-3 stay clear: BIND reads them
/// with the old KEY record's meanings (RFC 2535 §3.1.2: "no key", an
/// extended-flags field) and dnssec-signzone refuses a zone holding such a
/// key, even one it does not sign with.
fn flags_for(public: &[u8], target: u16) -> Option<u16> {
    let rest: u32 = dnskey_rdata(0, public)
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if i % 2 == 0 {
                u32::from(b) << 8
            } else {
                u32::from(b)
            }
        })
        .sum();
    for k in 0..8u8 {
        let high = ZONE_KEY_HIGH | (k << 1);
        let base = rest + (u32::from(high) << 8);
        for carry in [base >> 16, (base + 0x7f) >> 16] {
            let low = u32::from(target).wrapping_sub(base).wrapping_sub(carry) & 0xffff;
            if low < 0x80 && (base + low) >> 16 == carry {
                let flags = (u16::from(high) << 8) | low as u16;
                assert_eq!(key_tag(&dnskey_rdata(flags, public)), target);
                return Some(flags);
            }
        }
    }
    None
}

/// `count` DNSKEY rdata (flags, public key) of fresh P-256 key pairs, all
/// with key tag `target`, and how many key pairs that took.
fn colliding_keys(count: usize, target: u16) -> (Vec<(u16, Vec<u8>)>, usize) {
    let mut keys = Vec::new();
    let mut made = 0;
    while keys.len() < count {
        made += 1;
        let key = SigningKey::generate(Algorithm::EcdsaP256Sha256, None).unwrap();
        let public = key.dnskey_public_key().to_vec();
        assert_eq!(public.len(), 64, "a P-256 public key is x and y");
        if let Some(flags) = flags_for(&public, target) {
            keys.push((flags, public));
        }
    }
    (keys, made)
}

/// SplitMix64: garbage that is the same on every run.
struct Garbage(u64);

impl Garbage {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ---------------------------------------------------------------------------
// The zones
// ---------------------------------------------------------------------------

/// A KSK and a ZSK for `zone` in `dir`: their base names, their tags, and
/// the KSK's DS as a zone-file line (the trust anchor).
struct Keys {
    ksk: String,
    zsk: String,
    ksk_tag: u16,
    zsk_tag: u16,
    ds: String,
}

fn make_keys(tools: &Tools, zone: &str, dir: &Path) -> Keys {
    fs::create_dir_all(dir).unwrap();
    let d = dir.to_str().unwrap();
    let alg = "ECDSAP256SHA256";
    let ksk = run(
        &tools.keygen,
        &["-q", "-K", d, "-a", alg, "-f", "KSK", zone],
    )
    .trim()
    .to_owned();
    let zsk = run(&tools.keygen, &["-q", "-K", d, "-a", alg, zone])
        .trim()
        .to_owned();
    let key_file = dir.join(format!("{ksk}.key"));
    let ds = run(&tools.dsfromkey, &["-2", key_file.to_str().unwrap()])
        .trim()
        .to_owned();
    let tag = |base: &str| base.rsplit('+').next().unwrap().parse::<u16>().unwrap();
    Keys {
        ksk_tag: tag(&ksk),
        zsk_tag: tag(&zsk),
        ksk: dir.join(&ksk).display().to_string(),
        zsk: dir.join(&zsk).display().to_string(),
        ds,
    }
}

/// Owner, type and (for an RRSIG) type covered of a `-O full` line.
fn owner_type(line: &str) -> Option<(String, String, Option<String>)> {
    if line.starts_with(';') || line.starts_with('$') {
        return None;
    }
    let t: Vec<&str> = line.split_whitespace().collect();
    if t.len() < 5 {
        return None;
    }
    let rtype = t[3].to_ascii_uppercase();
    let covered = (rtype == "RRSIG").then(|| t[4].to_ascii_uppercase());
    Some((t[0].to_ascii_lowercase(), rtype, covered))
}

struct Zones {
    /// Each zone and its signed file.
    files: Vec<(&'static str, PathBuf)>,
    /// The DS of each zone's KSK, as zone-file lines.
    anchors: Vec<String>,
    /// What was built, for the report.
    summary: String,
}

fn build_keytrap(tools: &Tools, dir: &Path) -> (PathBuf, String, String) {
    let keys = make_keys(tools, KEYTRAP, &dir.join("keys-keytrap"));
    let mut garbage = Garbage(0x006b_6579_7472_6170);
    let mut target = garbage.next() as u16;
    while target == 0 || target == keys.ksk_tag || target == keys.zsk_tag {
        target = garbage.next() as u16;
    }
    let (colliding, made) = colliding_keys(COLLIDING_KEYS, target);
    let mut text = format!(
        "$ORIGIN {KEYTRAP}\n$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
         ns A 127.0.0.1\ngood A 192.0.2.82\nmixed A 192.0.2.81\nwww A 192.0.2.80\n\
         * A 192.0.2.99\n*.clean A 192.0.2.98\n"
    );
    for (flags, public) in &colliding {
        writeln!(
            text,
            "@ DNSKEY {flags} 3 {ALGORITHM} {}",
            base64_encode(public)
        )
        .unwrap();
    }
    let unsigned = dir.join("keytrap.test");
    fs::write(&unsigned, text).unwrap();
    let signed = dir.join("keytrap.test.signed");
    let key_dir = dir.join("keys-keytrap");
    run(
        &tools.signzone,
        &[
            "-S",
            "-K",
            key_dir.to_str().unwrap(),
            "-O",
            "full",
            "-d",
            dir.to_str().unwrap(),
            "-o",
            KEYTRAP,
            "-f",
            signed.to_str().unwrap(),
            unsigned.to_str().unwrap(),
        ],
    );
    let lines: Vec<String> = fs::read_to_string(&signed)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let is_sig_a =
        |l: &str| owner_type(l).is_some_and(|(_, t, c)| t == "RRSIG" && c.as_deref() == Some("A"));
    // The real signatures' validity, for the garbage (in its time window).
    let sample: Vec<&str> = lines
        .iter()
        .find(|l| is_sig_a(l))
        .unwrap()
        .split_whitespace()
        .collect();
    let (expiration, inception) = (sample[8], sample[9]);
    let stripped = [format!("www.{KEYTRAP}"), format!("*.{KEYTRAP}")];
    let mut kept: Vec<String> = lines
        .iter()
        .filter(|l| !(is_sig_a(l) && stripped.contains(&owner_type(l).unwrap().0)))
        .cloned()
        .collect();
    assert_eq!(
        lines.len() - kept.len(),
        2,
        "the real RRSIGs of www and * are removed"
    );
    let dnskeys = kept
        .iter()
        .filter(|l| owner_type(l).is_some_and(|(_, t, _)| t == "DNSKEY"))
        .count();
    assert_eq!(dnskeys, COLLIDING_KEYS + 2, "the DNSKEY RRset as signed");
    for (label, labels) in [("www", 3), ("mixed", 3), ("*", 2)] {
        for _ in 0..GARBAGE_SIGNATURES {
            kept.push(format!(
                "{label}.{KEYTRAP} 300 IN RRSIG A {ALGORITHM} {labels} 300 {expiration} \
                 {inception} {target} {KEYTRAP} {}",
                base64_encode(&garbage.bytes(64))
            ));
        }
    }
    fs::write(&signed, kept.join("\n") + "\n").unwrap();
    let summary = format!(
        "{KEYTRAP}: KSK {}, ZSK {}, {COLLIDING_KEYS} more keys with tag {target} ({made} key \
         pairs made), {GARBAGE_SIGNATURES} garbage RRSIGs on www (real one removed), mixed \
         (real one kept) and * (real one removed)",
        keys.ksk_tag, keys.zsk_tag
    );
    (signed, keys.ds, summary)
}

fn build_nsec3(tools: &Tools, dir: &Path, zone: &str, iterations: u32) -> (PathBuf, String) {
    let keys = make_keys(tools, zone, &dir.join(format!("keys-{zone}")));
    let unsigned = dir.join(zone);
    let mut text = format!(
        "$ORIGIN {zone}\n$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n\
         @ NS ns\nns A 127.0.0.1\nwww A 192.0.2.1\n"
    );
    // With this many NSEC3 spans an NXDOMAIN almost always needs three
    // records (the apex's, the next closer name's, the wildcard's) in both
    // zones, so they cost the same to validate; with four names one record
    // often covers two of them, by chance of the hashes.
    for i in 0..NSEC3_EXTRA_NAMES {
        writeln!(text, "h{i} A 192.0.2.{}", i + 2).unwrap();
    }
    fs::write(&unsigned, text).unwrap();
    let signed = dir.join(format!("{zone}signed"));
    let iterations = iterations.to_string();
    // ldns-signzone, not dnssec-signzone: BIND 9.18 refuses more than 150
    // iterations. It warns on stderr above 500; run_tool checks the exit
    // status only.
    run(
        &tools.ldns_signzone,
        &[
            "-n",
            "-t",
            &iterations,
            "-o",
            zone,
            "-f",
            signed.to_str().unwrap(),
            unsigned.to_str().unwrap(),
            &keys.ksk,
            &keys.zsk,
        ],
    );
    let text = fs::read_to_string(&signed).unwrap();
    let nsec3 = text
        .lines()
        .filter(|l| owner_type(l).is_some_and(|(_, t, _)| t == "NSEC3"))
        .filter(|l| l.split_whitespace().nth(6) == Some(iterations.as_str()))
        .count();
    assert!(
        nsec3 >= 3,
        "{zone}: NSEC3 records with {iterations} iterations:\n{text}"
    );
    (signed, keys.ds)
}

fn build_zones(tools: &Tools, dir: &Path) -> Zones {
    let (keytrap, keytrap_ds, summary) = build_keytrap(tools, dir);
    let (nsec3, nsec3_ds) = build_nsec3(tools, dir, NSEC3_ZONE, NSEC3_ITERATIONS);
    let (control, control_ds) = build_nsec3(tools, dir, NSEC3_CONTROL, CONTROL_ITERATIONS);
    Zones {
        files: vec![
            (KEYTRAP, keytrap),
            (NSEC3_ZONE, nsec3),
            (NSEC3_CONTROL, control),
        ],
        anchors: vec![keytrap_ds, nsec3_ds, control_ds],
        summary: format!(
            "{summary}; {NSEC3_ZONE}: NSEC3, {NSEC3_ITERATIONS} iterations, no salt, and \
             {NSEC3_CONTROL}: {CONTROL_ITERATIONS} iterations (ldns-signzone)"
        ),
    }
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// NSD serving both zones on 127.0.0.1 at a free port, once both are
/// served authoritatively (a new port if the first was taken meanwhile).
fn start_nsd(tools: &Tools, zones: &Zones, dir: &Path) -> (ChildGuard, SocketAddr) {
    let mut attempt = 1;
    loop {
        let port = support::free_port();
        let run_dir = dir.join(format!("nsd-{attempt}"));
        fs::create_dir_all(&run_dir).unwrap();
        let r = run_dir.display();
        let conf = format!(
            "server:\n    server-count: 1\n    port: {port}\n    do-ip6: no\n    \
             ip-address: 127.0.0.1\n    username: \"\"\n    chroot: \"\"\n    database: \"\"\n    \
             zonesdir: \"{r}\"\n    zonelistfile: \"{r}/zone.list\"\n    \
             xfrdfile: \"{r}/xfrd.state\"\n    xfrdir: \"{r}\"\n    pidfile: \"{r}/nsd.pid\"\n    \
             logfile: \"{r}/nsd.log\"\n    cookie-secret-file: \"{r}/cookie-secrets.txt\"\n    \
             zonefiles-write: 0\n    zonefiles-check: no\n    hide-version: yes\n    \
             hide-identity: yes\n    verbosity: 1\n    rrl-ratelimit: 0\n    \
             rrl-whitelist-ratelimit: 0\n\nremote-control:\n    control-enable: no\n\n"
        );
        let mut conf = conf;
        for (zone, file) in &zones.files {
            writeln!(
                conf,
                "zone:\n    name: \"{zone}\"\n    zonefile: \"{}\"",
                file.display()
            )
            .unwrap();
        }
        let conf_path = run_dir.join("nsd.conf");
        fs::write(&conf_path, conf).unwrap();
        let args = vec![
            "-d".to_string(),
            "-c".to_string(),
            conf_path.display().to_string(),
        ];
        let mut nsd = ChildGuard::spawn("nsd", &tools.nsd, &args, run_dir.join("output.log"));
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + support::STARTUP_DEADLINE;
        let mut pending: Vec<&str> = zones.files.iter().map(|(zone, _)| *zone).collect();
        let mut exited = None;
        while Instant::now() < deadline {
            pending.retain(|zone| {
                let spec = QuerySpec::new(zone, RecordType::SOA);
                !matches!(
                    support::query(addr, &spec, Transport::Udp, Duration::from_millis(200)),
                    Ok(a) if a.rcode == RCODE_NOERROR && a.aa && !a.answer.is_empty()
                )
            });
            if pending.is_empty() {
                break;
            }
            // A pause that ends at once if NSD exits.
            exited = nsd.wait_exit(Duration::from_millis(20));
            if exited.is_some() {
                break;
            }
        }
        if pending.is_empty() {
            return (nsd, addr);
        }
        let text = format!(
            "{}{}",
            nsd.log(),
            fs::read_to_string(run_dir.join("nsd.log")).unwrap_or_default()
        );
        if exited.is_some() && text.to_ascii_lowercase().contains("in use") && attempt < 3 {
            attempt += 1;
            continue;
        }
        panic!("NSD does not serve {pending:?} (exited: {exited:?}); its log:\n{text}");
    }
}

/// Polls `addr` until it gives any response at all.
fn wait_answers(process: &mut ChildGuard, addr: SocketAddr) {
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let spec = QuerySpec::new(&format!("ns.{NSEC3_ZONE}"), RecordType::A);
    loop {
        if let Some(status) = process.exited() {
            panic!(
                "{} exited with {status}; its log:\n{}",
                process.name(),
                process.log()
            );
        }
        if support::query(addr, &spec, Transport::Udp, Duration::from_millis(200)).is_ok() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} does not answer on {addr}; its log:\n{}",
            process.name(),
            process.log()
        );
        // Not listening yet (port unreachable comes back at once): a pause
        // that ends if the process exits.
        let _ = process.wait_exit(Duration::from_millis(20));
    }
}

/// bulwark, validating, and the address of its metrics.
fn start_bulwark(
    zones: &Zones,
    nsd: SocketAddr,
    dir: &Path,
) -> (ChildGuard, SocketAddr, SocketAddr) {
    let anchors: Vec<String> = zones.anchors.iter().map(|a| format!("\"{a}\"")).collect();
    let mut config = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n\
         [prometheus]\nlisten = \"127.0.0.1:0\"\n\n\
         [resolver]\nroot_hints = [\"127.0.0.1:9\"]\nquery_localhost = true\n\
         dnssec_validation = true\nkey_tag_signaling = false\ntrust_anchors = [{}]\n\n",
        anchors.join(", ")
    );
    for (zone, _) in &zones.files {
        writeln!(
            config,
            "[[resolver.stub]]\nzone = \"{zone}\"\naddresses = [\"{nsd}\"]\n"
        )
        .unwrap();
    }
    let path = dir.join("bulwark.toml");
    fs::write(&path, config).unwrap();
    let args = vec![
        "serve".to_string(),
        "--config".to_string(),
        path.display().to_string(),
    ];
    let (mut process, bound) = support::start_bulwark(&args, &[], dir, "bulwark");
    let addr = bound.dns[0];
    wait_answers(&mut process, addr);
    let metrics = bound.prometheus.expect("prometheus bound");
    (process, addr, metrics)
}

fn start_unbound(
    tools: &Tools,
    zones: &Zones,
    nsd: SocketAddr,
    dir: &Path,
) -> (ChildGuard, SocketAddr) {
    let port = support::free_port();
    let d = dir.display();
    let mut conf = format!(
        "server:\n    interface: 127.0.0.1\n    port: {port}\n    \
         access-control: 127.0.0.0/8 allow\n    do-not-query-localhost: no\n    do-ip6: no\n    \
         module-config: \"validator iterator\"\n    local-zone: \"test.\" nodefault\n    \
         val-log-level: 2\n    ede: yes\n    num-threads: 1\n    so-reuseport: no\n    \
         chroot: \"\"\n    username: \"\"\n    directory: \"{d}\"\n    pidfile: \"\"\n    \
         use-syslog: no\n    logfile: \"\"\n    verbosity: 1\n"
    );
    for anchor in &zones.anchors {
        writeln!(conf, "    trust-anchor: \"{anchor}\"").unwrap();
    }
    conf.push_str("\nremote-control:\n    control-enable: no\n\n");
    for (zone, _) in &zones.files {
        writeln!(
            conf,
            "stub-zone:\n    name: \"{zone}\"\n    stub-addr: {}@{}",
            nsd.ip(),
            nsd.port()
        )
        .unwrap();
    }
    let path = dir.join("unbound.conf");
    fs::write(&path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let mut process = ChildGuard::spawn("unbound", &tools.unbound, &args, dir.join("unbound.log"));
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_answers(&mut process, addr);
    (process, addr)
}

/// A process's CPU time so far, user and system, all its threads (fields
/// 14 and 15 of /proc/PID/stat, in clock ticks).
fn cpu_time(pid: u32, ticks_per_second: u64) -> Duration {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may hold spaces: count after its ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_micros(ticks * 1_000_000 / ticks_per_second)
}

fn clock_ticks() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

// ---------------------------------------------------------------------------
// Questions
// ---------------------------------------------------------------------------

/// What a validator said, and how long it took.
#[derive(Clone, Debug)]
struct Verdict {
    rcode: u16,
    ad: bool,
    answers: usize,
    ede: Option<(u16, String)>,
    took: Duration,
}

fn cell(v: &Result<Verdict, String>) -> String {
    match v {
        Err(e) => format!("({e})"),
        Ok(v) => {
            let mut s = support::rcode_name(v.rcode);
            if v.ad {
                s.push_str(" AD");
            }
            if let Some((code, text)) = &v.ede {
                write!(s, " ede={code} {text:?}").unwrap();
            }
            write!(s, " {:.1?}", v.took).unwrap();
            s
        }
    }
}

/// Asks `addr` once, with RD and DO, over TCP when the UDP answer is
/// truncated; the whole exchange within [`QUERY_TIMEOUT`].
fn ask(addr: SocketAddr, qname: &str, qtype: RecordType, id: u16) -> Result<Verdict, String> {
    let mut spec = QuerySpec::new(qname, qtype);
    spec.rd = true;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let wire = spec.to_wire(id);
    let started = Instant::now();
    let mut raw = support::exchange_udp(addr, &wire, id, QUERY_TIMEOUT)
        .map_err(|e| format!("no answer in {QUERY_TIMEOUT:?}: {e}"))?;
    let mut answer = Answer::parse(&raw).ok_or("response shorter than a header")?;
    if answer.tc {
        let left = QUERY_TIMEOUT.saturating_sub(started.elapsed());
        raw = support::exchange_tcp(addr, &wire, left.max(Duration::from_millis(1)))
            .map_err(|e| format!("no TCP answer: {e}"))?;
        answer = Answer::parse(&raw).ok_or("TCP response shorter than a header")?;
    }
    Ok(Verdict {
        rcode: answer.rcode,
        ad: answer.ad,
        answers: answer.counts[1].into(),
        ede: support::extended_error(&raw),
        took: started.elapsed(),
    })
}

/// What a question must come to at bulwark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// NOERROR or NXDOMAIN, as given, with AD.
    Secure(u16),
    /// NOERROR or NXDOMAIN, as given, without AD.
    Insecure(u16),
    /// SERVFAIL.
    Bogus,
    /// Bogus, or secure with the data: the real signature is among the
    /// garbage, and whether a validator meets it within its budget depends
    /// on the order it tries them in.
    BogusOrSecure,
}

impl Expect {
    fn holds(self, v: &Verdict) -> bool {
        match self {
            Expect::Secure(rcode) => v.rcode == rcode && v.ad,
            Expect::Insecure(rcode) => v.rcode == rcode && !v.ad,
            Expect::Bogus => v.rcode == RCODE_SERVFAIL && !v.ad,
            Expect::BogusOrSecure => {
                Expect::Bogus.holds(v) || (Expect::Secure(RCODE_NOERROR).holds(v) && v.answers > 0)
            }
        }
    }

    fn name(self) -> String {
        match self {
            Expect::Secure(rcode) => format!("{} secure", support::rcode_name(rcode)),
            Expect::Insecure(rcode) => format!("{} insecure", support::rcode_name(rcode)),
            Expect::Bogus => "SERVFAIL bogus".to_string(),
            Expect::BogusOrSecure => "SERVFAIL or secure".to_string(),
        }
    }
}

struct Question {
    qname: String,
    qtype: RecordType,
    expect: Expect,
    /// Unbound must give this answer too (the controls).
    control: bool,
}

fn questions() -> Vec<Question> {
    let q = |label: &str, zone: &str, qtype, expect, control| Question {
        qname: format!("{label}.{zone}"),
        qtype,
        expect,
        control,
    };
    use Expect::{Bogus, BogusOrSecure, Insecure, Secure};
    use RecordType::{A, TXT};
    vec![
        q("good", KEYTRAP, A, Secure(RCODE_NOERROR), true),
        q("under-the-wildcard", CLEAN, A, Secure(RCODE_NOERROR), true),
        q("www", KEYTRAP, A, Bogus, false),
        q("mixed", KEYTRAP, A, BogusOrSecure, false),
        q("under-the-wildcard", KEYTRAP, A, Bogus, false),
        q("www", NSEC3_ZONE, A, Secure(RCODE_NOERROR), true),
        q("nope", NSEC3_ZONE, A, Insecure(RCODE_NXDOMAIN), false),
        q("www", NSEC3_ZONE, TXT, Insecure(RCODE_NOERROR), false),
        q("nope", NSEC3_CONTROL, A, Insecure(RCODE_NXDOMAIN), false),
    ]
}

/// The CPU per question, the slowest answer, and the answers that were not
/// as expected (for the peer, recorded; for bulwark, failures).
struct Measured {
    cpu_per_question: Duration,
    slowest: Duration,
    wrong: Vec<String>,
}

/// CPU time per question over [`MEASURED_NAMES`] distinct names of the
/// workload, asked one after another, each to be answered as it expects
/// within the timeout.
fn measure(process: &ChildGuard, addr: SocketAddr, w: &Workload, hz: u64) -> Measured {
    let before = cpu_time(process.pid(), hz);
    let mut slowest = Duration::ZERO;
    let mut wrong = Vec::new();
    for i in 0..MEASURED_NAMES {
        let qname = format!("m{i:04}-{}.{}", std::process::id(), w.zone);
        match ask(addr, &qname, RecordType::A, 0x4000 + i as u16) {
            Ok(v) => {
                slowest = slowest.max(v.took);
                if !w.expect.holds(&v) {
                    wrong.push(format!("{qname}: {}", cell(&Ok(v))));
                }
            }
            Err(e) => wrong.push(format!("{qname}: {e}")),
        }
    }
    let spent = cpu_time(process.pid(), hz).saturating_sub(before);
    Measured {
        cpu_per_question: spent / MEASURED_NAMES as u32,
        slowest,
        wrong,
    }
}

/// What is measured: names `RANDOM.{zone}`, answered as `expect` says.
struct Workload {
    name: &'static str,
    zone: &'static str,
    expect: Expect,
}

const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "poisoned wildcard (64 garbage RRSIGs x 64 keys, one tag): SERVFAIL",
        zone: KEYTRAP,
        expect: Expect::Bogus,
    },
    Workload {
        name: "clean wildcard (control; RFC 8198 lets the cache answer it): NOERROR secure",
        zone: CLEAN,
        expect: Expect::Secure(RCODE_NOERROR),
    },
    Workload {
        name: "NXDOMAIN, NSEC3 2,500 iterations: insecure",
        zone: NSEC3_ZONE,
        expect: Expect::Insecure(RCODE_NXDOMAIN),
    },
    Workload {
        name: "NXDOMAIN, NSEC3 151 iterations (control): insecure",
        zone: NSEC3_CONTROL,
        expect: Expect::Insecure(RCODE_NXDOMAIN),
    },
];
const POISONED: usize = 0;

#[test]
fn keytrap_and_nsec3_iterations_answer_as_the_rfcs_say() {
    let Some(tools) = Tools::find() else { return };
    let started = Instant::now();
    let dir = support::temp_dir("resolver-keytrap-");
    let zones = build_zones(&tools, dir.path());
    let built = started.elapsed();
    let (nsd, nsd_addr) = start_nsd(&tools, &zones, dir.path());
    let bulwark_dir = dir.path().join("bulwark");
    let unbound_dir = dir.path().join("unbound");
    fs::create_dir_all(&bulwark_dir).unwrap();
    fs::create_dir_all(&unbound_dir).unwrap();
    let (bulwark, bulwark_addr, bulwark_metrics) = start_bulwark(&zones, nsd_addr, &bulwark_dir);
    let (unbound, unbound_addr) = start_unbound(&tools, &zones, nsd_addr, &unbound_dir);

    let mut table = String::new();
    writeln!(
        table,
        "{:<42} {:<20} {:<58} unbound",
        "question", "expected", "bulwark"
    )
    .unwrap();
    let mut failures = Vec::new();
    for (n, question) in questions().iter().enumerate() {
        let id = 0x6b00 + n as u16;
        let b = ask(bulwark_addr, &question.qname, question.qtype, id);
        let u = ask(unbound_addr, &question.qname, question.qtype, id);
        let key = format!("{} {}", question.qname, support::type_name(question.qtype));
        writeln!(
            table,
            "{key:<42} {:<20} {:<58} {}",
            question.expect.name(),
            cell(&b),
            cell(&u)
        )
        .unwrap();
        match &b {
            Ok(v) if question.expect.holds(v) => {}
            _ => failures.push(format!(
                "bulwark: {key}: expected {}, got {}",
                question.expect.name(),
                cell(&b)
            )),
        }
        if question.control && !matches!(&u, Ok(v) if question.expect.holds(v)) {
            failures.push(format!(
                "unbound: {key} (control): expected {}, got {} (the zones are not as built)",
                question.expect.name(),
                cell(&u)
            ));
        }
    }

    let hz = clock_ticks();
    let mut report = format!(
        "CPU per question (utime+stime, {MEASURED_NAMES} distinct names each, one at a time, \
         {hz} ticks/s):\n"
    );
    let mut ours = Vec::new();
    for (i, w) in WORKLOADS.iter().enumerate() {
        let checks = || {
            support::metric(
                &support::scrape_metrics(bulwark_metrics),
                "bulwark_resolver_signature_checks_total",
            )
        };
        let checked_before = checks();
        let b = measure(&bulwark, bulwark_addr, w, hz);
        if i == POISONED {
            // Each poisoned answer is checked, and no more than the budget
            // allows (32 signature checks a validation, docs/resolver.md):
            // counted by the server itself, not inferred from its CPU.
            let checked = checks().saturating_sub(checked_before);
            let most = 32 * MEASURED_NAMES as u64;
            writeln!(
                report,
                "  signature checks for {MEASURED_NAMES} poisoned answers: {checked}"
            )
            .unwrap();
            if checked < MEASURED_NAMES as u64 || checked > most {
                failures.push(format!(
                    "bulwark checked {checked} signatures for {MEASURED_NAMES} poisoned \
                     answers: at least one and at most 32 each expected"
                ));
            }
        }
        let u = measure(&unbound, unbound_addr, w, hz);
        writeln!(
            report,
            "  RANDOM.{} A, {}: bulwark {:?} (slowest answer {:.1?}), unbound {:?} (slowest \
             {:.1?}){}",
            w.zone,
            w.name,
            b.cpu_per_question,
            b.slowest,
            u.cpu_per_question,
            u.slowest,
            if u.wrong.is_empty() {
                String::new()
            } else {
                format!(
                    "; unbound: {} answers not as bulwark's must be, e.g. {}",
                    u.wrong.len(),
                    u.wrong[0]
                )
            }
        )
        .unwrap();
        if !b.wrong.is_empty() {
            failures.push(format!(
                "bulwark, {} under {}: {} of {MEASURED_NAMES} answers not as expected, e.g. {:?}",
                w.name,
                w.zone,
                b.wrong.len(),
                &b.wrong[..b.wrong.len().min(3)]
            ));
        }
        ours.push(b);
    }
    println!(
        "resolver_keytrap: {}\n{table}\n{report}poisoned wildcard / clean wildcard: bulwark {:.1}x; \
         zones built in {built:.1?}; {:.1?} in all",
        zones.summary,
        ours[POISONED].cpu_per_question.as_secs_f64()
            / ours[1].cpu_per_question.as_secs_f64().max(1e-9),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{}\n--- bulwark log ---\n{}\n--- unbound log ---\n{}\n--- nsd ---\n{}",
        failures.join("\n"),
        bulwark.log(),
        unbound.log(),
        nsd.log()
    );
}
