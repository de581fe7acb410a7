#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Seed 002's deployment, end to end: a hidden primary (knotd) holds the
//! unsigned zone and NOTIFYs the signer; the signer (bulwark, a secondary
//! with a `dnssec_policy`: the "bump in the wire") pulls it, signs it and
//! NOTIFYs the public secondary (nsd), which pulls the signed zone. Every
//! NOTIFY and transfer carries TSIG HMAC-SHA256, as in the seed.
//!
//! What the public secondary serves is checked by peers no one here wrote:
//! ldns-verify-zone and BIND's dnssec-verify on nsd's AXFR, and the zone as
//! nsd holds it must be record for record what bulwark serves. A change at
//! the hidden primary must then reach nsd signed, with the serial moved on.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bulwark_xfr::serial::serial_gt;
use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{
    free_port, query, require_tool, start_bulwark, temp_dir, Answer, ChildGuard, EdnsSpec,
    QuerySpec, Transport, ZoneVerifiers,
};

const ZONE: &str = "city.test.";
/// The TSIG key every hop uses (seed 002: "encrypted with HMAC-SHA256 TSIG").
const KEY_NAME: &str = "xfr.key";
const KEY_SECRET: &str = "dHBRJQxIb4qDoljeh9QLaF7UF4RzI0CErbZJ4D10zi4=";
const FIRST_SERIAL: u32 = 2024010101;
/// How long a change may take to travel the pipeline before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

/// The zone as the hidden primary holds it: unsigned, with an unsigned
/// delegation (its NS and glue must stay unsigned once signed, RFC 4035
/// §2.2) and a name `old` the change removes.
fn unsigned_zone(serial: u32, changed: bool) -> String {
    let mut text = format!(
        "$TTL 300\n@ IN SOA ns1.city.test. hostmaster.city.test. {serial} 3600 900 604800 300\n\
         \x20 NS ns1\n  NS ns2\n  MX 10 mail\nns1 A 192.0.2.1\nns2 A 192.0.2.2\n\
         www A 192.0.2.80\n    AAAA 2001:db8::80\nmail A 192.0.2.25\n\
         branch NS ns.branch\nns.branch A 192.0.2.53\n"
    );
    if changed {
        text.push_str("new A 192.0.2.99\n    TXT \"added at the hidden primary\"\n");
    } else {
        text.push_str("old A 192.0.2.10\n");
    }
    text
}

/// The three servers of the deployment and the directory they work in.
struct Pipeline {
    dir: tempfile::TempDir,
    knotc: PathBuf,
    dig: PathBuf,
    signer: SocketAddr,
    public: SocketAddr,
    // Dropped (killed by PID) in reverse order of start.
    nsd: Option<ChildGuard>,
    knotd: Option<ChildGuard>,
    bulwark: Option<ChildGuard>,
}

impl Pipeline {
    /// Every log, for a failure message.
    fn logs(&self) -> String {
        [&self.knotd, &self.bulwark, &self.nsd]
            .into_iter()
            .flatten()
            .map(|p| format!("--- {} log:\n{}", p.name(), p.log()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Polls `check` until it returns Some, failing with every log after
    /// `DEADLINE`. A short pause between polls only paces them.
    fn wait_for<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let last = match check() {
                Ok(v) => return v,
                Err(last) => last,
            };
            assert!(
                Instant::now() < deadline,
                "{what}: not within {DEADLINE:?}; last: {last}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The zone by AXFR from `addr`, signed with the pipeline's key, as
    /// dig prints it (one SOA: the closing one is dropped).
    fn axfr(&self, addr: SocketAddr) -> String {
        let out = Command::new(&self.dig)
            .args([
                "-p",
                &addr.port().to_string(),
                &format!("@{}", addr.ip()),
                "-y",
                &format!("hmac-sha256:{KEY_NAME}:{KEY_SECRET}"),
                ZONE,
                "AXFR",
                "+onesoa",
                "+noall",
                "+answer",
                "+nocookie",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run dig");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // dig reports a failed transfer in a comment and may still exit 0.
        assert!(
            out.status.success() && text.lines().any(|l| l.contains("\tSOA\t")),
            "AXFR of {ZONE} from {addr} failed:\n{text}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        text
    }

    /// AXFRs the zone from nsd into `name`, runs both zone verifiers on it,
    /// and checks nsd holds exactly what bulwark serves.
    fn check_public_copy(&self, verifiers: &ZoneVerifiers, name: &str) -> String {
        let public = self.axfr(self.public);
        let path = self.dir.path().join(name);
        fs::write(&path, &public).unwrap();
        verifiers.assert_valid(&path, ZONE, false, "the zone nsd serves");
        let signed = self.axfr(self.signer);
        assert_eq!(
            sorted_lines(&public),
            sorted_lines(&signed),
            "nsd's copy differs from what bulwark serves"
        );
        public
    }
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    lines.sort();
    lines
}

/// A DNSSEC OK query over TCP (RSA-signed answers outgrow 512 octets).
fn ask(addr: SocketAddr, qname: &str, qtype: RecordType) -> Result<Answer, String> {
    let mut spec = QuerySpec::new(qname, qtype);
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    query(addr, &spec, Transport::Tcp, QUERY_TIMEOUT).map_err(|e| format!("{qname} {qtype}: {e}"))
}

fn signs(answer: &Answer, covered: RecordType) -> bool {
    support::rrsig_covers(answer, covered)
}

/// Flags, protocol and algorithm of DNSKEY rdata as 8 hex digits, from
/// either of hickory's renderings (see `support::rrsig_covers`): RFC 3597
/// `\# LENGTH HEX`, or text `FLAGS PROTOCOL ALGORITHM KEY` with the
/// algorithm as a number or a mnemonic.
fn dnskey_head(rdata: &str) -> String {
    let fields: Vec<&str> = rdata.split(' ').collect();
    if fields.first() == Some(&"\\#") {
        return fields.get(2).unwrap_or(&"").chars().take(8).collect();
    }
    let flags: u16 = fields.first().and_then(|f| f.parse().ok()).unwrap_or(0);
    let protocol: u8 = fields.get(1).and_then(|f| f.parse().ok()).unwrap_or(0);
    let algorithm: u8 = match fields.get(2).map(|a| a.to_ascii_uppercase()) {
        Some(a) if a == "RSASHA256" => 8,
        Some(a) if a == "ECDSAP256SHA256" => 13,
        Some(a) => a.parse().unwrap_or(0),
        None => 0,
    };
    format!("{flags:04x}{protocol:02x}{algorithm:02x}")
}

/// The serial of an SOA answer (RFC 1035 §3.3.13: the third rdata field).
fn soa_serial(answer: &Answer) -> Option<u32> {
    answer
        .rdata_of("SOA")
        .first()?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// An authoritative answer with `rtype` records signed by an RRSIG.
fn signed_answer(addr: SocketAddr, qname: &str, rtype: RecordType) -> Result<Answer, String> {
    let a = ask(addr, qname, rtype)?;
    let name = support::type_name(rtype);
    if a.rcode == 0 && a.aa && !a.rdata_of(&name).is_empty() && signs(&a, rtype) {
        Ok(a)
    } else {
        Err(a.to_string())
    }
}

fn knot_conf(dir: &Path, primary: SocketAddr, signer: SocketAddr) -> String {
    let d = dir.display();
    // Knot 3.x (knot.conf(5)). `difference` + journal: a reload with a new
    // serial is served as IXFR, so the signer gets an incremental change.
    format!(
        "server:\n    rundir: {d}\n    listen: {ip}@{port}\n    identity: \"\"\n    version: \"\"\n\
         \x20   udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\n\
         key:\n  - id: {KEY_NAME}\n    algorithm: hmac-sha256\n    secret: {KEY_SECRET}\n\n\
         remote:\n  - id: signer\n    address: {sip}@{sport}\n    key: {KEY_NAME}\n\n\
         acl:\n  - id: signer_transfer\n    address: {sip}\n    key: {KEY_NAME}\n    action: transfer\n\n\
         database:\n    storage: {d}\n\n\
         log:\n  - target: stderr\n    any: info\n\n\
         zone:\n  - domain: {ZONE}\n    file: {d}/city.zone\n    storage: {d}\n    \
         notify: signer\n    acl: signer_transfer\n    zonefile-sync: -1\n    \
         zonefile-load: difference\n    journal-content: changes\n",
        ip = primary.ip(),
        port = primary.port(),
        sip = signer.ip(),
        sport = signer.port(),
    )
}

fn bulwark_conf(signer: SocketAddr, primary: SocketAddr, public: SocketAddr) -> String {
    // Seed 002's signer: RSA/SHA-256 KSK and ZSK, NSEC3, 14-day signatures
    // with a one-hour inception offset, re-signed every 2 hours (the
    // policy's defaults, spelled out). Only the TSIG-signed public
    // secondary may transfer.
    format!(
        "[server]\nlisten = [\"{signer}\"]\nthreads = 1\nstorage = \"signer.db\"\n\
         key_directory = \"keys\"\n\n\
         [tsig_key.\"{KEY_NAME}\"]\nalgorithm = \"hmac-sha256\"\nsecret = \"{KEY_SECRET}\"\n\n\
         [acl.public]\nallow = [\"127.0.0.0/8\"]\nkeys = [\"{KEY_NAME}\"]\n\n\
         [remote.hidden]\naddress = \"{primary}\"\nkey = \"{KEY_NAME}\"\n\n\
         [remote.ns1]\naddress = \"{public}\"\nkey = \"{KEY_NAME}\"\n\n\
         [dnssec_policy.city]\nalgorithm = \"RSASHA256\"\nnsec3 = true\n\
         signature_validity = \"14d\"\nsignature_inception_offset = \"1h\"\nresign_interval = \"2h\"\n\n\
         [[zone]]\norigin = \"{ZONE}\"\nprimaries = [\"hidden\"]\ndnssec_policy = \"city\"\n\
         allow_transfer = [\"public\"]\nnotify = [\"ns1\"]\n"
    )
}

fn nsd_conf(dir: &Path, public: SocketAddr, signer: SocketAddr) -> String {
    let d = dir.display();
    // NSD 4 (nsd.conf(5)): in the foreground, one server process, no
    // privilege drop or chroot, every state file in the test's directory.
    // The zone is pulled from the signer (IXFR first, as nsd does) and
    // NOTIFY is accepted from it, both only with the key.
    format!(
        "server:\n    ip-address: {ip}@{port}\n    port: {port}\n    do-ip6: no\n    \
         server-count: 1\n    username: \"\"\n    chroot: \"\"\n    zonesdir: \"{d}\"\n    \
         database: \"\"\n    pidfile: \"{d}/nsd.pid\"\n    xfrdfile: \"{d}/xfrd.state\"\n    \
         xfrdir: \"{d}\"\n    zonelistfile: \"{d}/zone.list\"\n    verbosity: 2\n    \
         hide-version: yes\n\nremote-control:\n    control-enable: no\n\n\
         key:\n    name: \"{KEY_NAME}\"\n    algorithm: hmac-sha256\n    secret: \"{KEY_SECRET}\"\n\n\
         zone:\n    name: \"{ZONE}\"\n    zonefile: \"nsd-city.zone\"\n    \
         allow-notify: {sip} {KEY_NAME}\n    request-xfr: {sip}@{sport} {KEY_NAME}\n    \
         provide-xfr: 127.0.0.0/8 {KEY_NAME}\n",
        ip = public.ip(),
        port = public.port(),
        sip = signer.ip(),
        sport = signer.port(),
    )
}

/// Starts bulwark (the signer), then knotd, then nsd. bulwark goes first:
/// it listens on port 0, and knotd must be told the port it got to NOTIFY
/// it; knotd's and nsd's ports (peers cannot report theirs) are picked
/// before. bulwark asks knotd for the zone until knotd is up.
fn start_pipeline() -> Option<Pipeline> {
    let knotd = require_tool("knotd")?;
    let knotc = require_tool("knotc")?;
    let nsd = require_tool("nsd")?;
    let dig = require_tool("dig")?;
    let local = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let (primary, public) = (local(free_port()), local(free_port()));
    let dir = temp_dir("repl-pipeline-");

    let signer_dir = dir.path().join("signer");
    fs::create_dir(&signer_dir).unwrap();
    let config = signer_dir.join("signer.toml");
    fs::write(&config, bulwark_conf(local(0), primary, public)).unwrap();
    let args = vec![
        "serve".to_string(),
        "--config".to_string(),
        config.display().to_string(),
    ];
    let (bulwark, bound) = start_bulwark(&args, &[], &signer_dir, "bulwark");
    let signer = bound.dns[0];
    let mut p = Pipeline {
        knotc,
        dig,
        signer,
        public,
        nsd: None,
        knotd: None,
        bulwark: Some(bulwark),
        dir,
    };

    let knot_dir = p.dir.path().join("knot");
    fs::create_dir(&knot_dir).unwrap();
    fs::write(
        knot_dir.join("city.zone"),
        unsigned_zone(FIRST_SERIAL, false),
    )
    .unwrap();
    fs::write(
        knot_dir.join("knot.conf"),
        knot_conf(&knot_dir, primary, signer),
    )
    .unwrap();
    let args = vec![
        "-c".to_string(),
        knot_dir.join("knot.conf").display().to_string(),
    ];
    p.knotd = Some(ChildGuard::spawn(
        "knotd",
        &knotd,
        &args,
        knot_dir.join("knotd.log"),
    ));
    p.wait_for("knotd serves the unsigned zone", || {
        let a = ask(primary, ZONE, RecordType::SOA)?;
        (a.rcode == 0 && a.aa && soa_serial(&a) == Some(FIRST_SERIAL))
            .then_some(())
            .ok_or(a.to_string())
    });
    p.wait_for("bulwark transfers the zone from knotd and signs it", || {
        signed_answer(signer, ZONE, RecordType::SOA).map(|_| ())
    });

    let nsd_dir = p.dir.path().join("nsd");
    fs::create_dir(&nsd_dir).unwrap();
    fs::write(nsd_dir.join("nsd.conf"), nsd_conf(&nsd_dir, public, signer)).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        nsd_dir.join("nsd.conf").display().to_string(),
    ];
    p.nsd = Some(ChildGuard::spawn(
        "nsd",
        &nsd,
        &args,
        nsd_dir.join("nsd.log"),
    ));
    p.wait_for("nsd transfers the signed zone from bulwark", || {
        signed_answer(public, ZONE, RecordType::SOA).map(|_| ())
    });
    Some(p)
}

#[test]
fn hidden_primary_to_signer_to_public_secondary_serves_a_valid_signed_zone_and_its_changes() {
    let Some(p) = start_pipeline() else { return };
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };

    // The public secondary serves the zone signed: the DNSKEY RRset (a KSK
    // and a ZSK, RSA/SHA-256 = algorithm 8) and RRSIGs over the data.
    let dnskey = signed_answer(p.public, ZONE, RecordType::DNSKEY).unwrap();
    // RFC 4034 §2.1: flags (256 a ZSK, 257 with SEP a KSK), protocol 3,
    // algorithm 8.
    let mut keys: Vec<String> = dnskey
        .rdata_of("DNSKEY")
        .iter()
        .map(|k| dnskey_head(k))
        .collect();
    keys.sort();
    assert_eq!(keys, ["01000308", "01010308"], "a ZSK and a KSK: {dnskey}");
    let www = signed_answer(p.public, "www.city.test.", RecordType::A)
        .unwrap_or_else(|e| panic!("www A at nsd: {e}\n{}", p.logs()));
    assert_eq!(www.rdata_of("A"), ["192.0.2.80"]);
    let soa = ask(p.public, ZONE, RecordType::SOA).unwrap();
    let first_serial = soa_serial(&soa).unwrap();

    // TSIG is required on the wire: an unsigned AXFR from the signer is
    // refused (RFC 5936 §6: the transfer ACL names the key).
    let unsigned = query(
        p.signer,
        &QuerySpec::new(ZONE, RecordType::AXFR),
        Transport::Tcp,
        QUERY_TIMEOUT,
    )
    .unwrap();
    assert_eq!(unsigned.rcode_name(), "NOTAUTH", "{unsigned}");

    let before = p.check_public_copy(&verifiers, "public-1.zone");
    assert!(before.contains("NSEC3PARAM"), "the policy asks for NSEC3");
    assert!(before.contains("old.city.test."));

    // A change at the hidden primary: `new` added, `old` removed, serial
    // bumped, and knotd told to reload (it then NOTIFYs the signer).
    let knot_dir = p.dir.path().join("knot");
    fs::write(
        knot_dir.join("city.zone"),
        unsigned_zone(FIRST_SERIAL + 1, true),
    )
    .unwrap();
    let socket = knot_dir.join("knot.sock");
    let out = Command::new(&p.knotc)
        .args(["-s", socket.to_str().unwrap(), "zone-reload", ZONE])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "knotc zone-reload: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The new records reach nsd signed, carried by NOTIFY alone (the SOA
    // refresh is an hour).
    let new_a = p.wait_for("the new record reaches nsd, signed", || {
        signed_answer(p.public, "new.city.test.", RecordType::A)
    });
    assert_eq!(new_a.rdata_of("A"), ["192.0.2.99"]);
    signed_answer(p.public, "new.city.test.", RecordType::TXT)
        .unwrap_or_else(|e| panic!("new TXT at nsd: {e}"));
    let gone = ask(p.public, "old.city.test.", RecordType::A).unwrap();
    assert_eq!(gone.rcode_name(), "NXDOMAIN", "{gone}");
    assert!(
        gone.authority.iter().any(|r| r.contains(" NSEC3 ")),
        "the denial is proven with NSEC3: {gone}"
    );
    let soa = ask(p.public, ZONE, RecordType::SOA).unwrap();
    let second_serial = soa_serial(&soa).unwrap();
    assert!(
        serial_gt(second_serial, first_serial),
        "nsd's serial went from {first_serial} to {second_serial}"
    );

    let after = p.check_public_copy(&verifiers, "public-2.zone");
    assert!(after.contains("new.city.test."));
    assert!(!after.contains("old.city.test."));

    // Both hops carried the change incrementally (RFC 1995): knotd to
    // bulwark, and bulwark's re-signed difference to nsd.
    let log = p.bulwark.as_ref().unwrap().log();
    for (what, event) in [
        ("from knotd", "zone transferred"),
        ("to nsd", "transfer sent"),
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(event) && l.contains("kind=IXFR")),
            "no IXFR {what} in bulwark's log:\n{log}"
        );
    }
}
