#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! bulwark as the primary of real secondaries: knotd, NSD and BIND's named
//! take a zone from it under TSIG (hmac-sha256), first by AXFR, then by IXFR
//! after a signed dynamic update and after a zone-file edit with SIGHUP,
//! each time told by a signed NOTIFY. Every copy is compared with bulwark's,
//! record for record, through AXFRs that kdig (not our code) signs and parses.
//!
//! Each secondary fetches from its own loopback source address, so bulwark's
//! "transfer sent ... client=ADDR kind=IXFR" line says which peer got what;
//! NSD 4.6 logs no transfer kind at all, so for NSD that line is the evidence.
//! The peers' own wording relied on:
//! - knotd 3.2: `[example.com.] IXFR, incoming, remote 127.0.0.1@PORT, finished`
//! - named 9.18 (`-d 3`): `transfer of 'example.com/IN' from 127.0.0.1#PORT: got incremental response`
//! - NSD 4.6: `zone example.com. received update to serial N ... TSIG verified with key xfr.key`

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{ChildGuard, QuerySpec, Transport};

const ORIGIN: &str = "example.com.";
const KEY_NAME: &str = "xfr.key";
/// 32 random bytes, base64: the key all four servers share.
const SECRET: &str = "q3Vh8yJ3m0cYI1cQ2b6bJ1mXbT2vN6o9d1XzY0c4pWk=";
/// Same length, different bytes: a client that has the wrong secret.
const WRONG_SECRET: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/// How long a server gets to come up, or a change to reach every secondary.
const DEADLINE: Duration = Duration::from_secs(30);
/// Pause between polls of a condition (not a synchronisation by itself).
const POLL_PAUSE: Duration = Duration::from_millis(100);
const QUERY_TIMEOUT: Duration = Duration::from_millis(500);

/// Refresh 10 s (small, so a lost NOTIFY would only delay things), retry 5 s.
/// The records cover a few types and a TXT with two strings.
const ZONE_SERIAL_1: &str = "$ORIGIN example.com.\n$TTL 300\n\
@    IN SOA ns1 hostmaster 1 10 5 604800 300\n\
@    IN NS ns1\n\
@    IN MX 10 mail\n\
ns1  IN A 192.0.2.1\n\
mail IN A 192.0.2.25\n\
www  IN A 192.0.2.80\n\
www  IN AAAA 2001:db8::80\n\
txt  IN TXT \"hello world\" \"two\"\n";

/// The zone after the UPDATE (new A added, www's AAAA deleted), with the
/// serial bumped by hand to 3 and www's address changed: what an operator
/// editing the file bulwark wrote back would produce.
const ZONE_SERIAL_3: &str = "$ORIGIN example.com.\n$TTL 300\n\
@    IN SOA ns1 hostmaster 3 10 5 604800 300\n\
@    IN NS ns1\n\
@    IN MX 10 mail\n\
ns1  IN A 192.0.2.1\n\
mail IN A 192.0.2.25\n\
www  IN A 192.0.2.81\n\
new  IN A 192.0.2.50\n\
txt  IN TXT \"hello world\" \"two\"\n";

/// The UPDATE of the first change (RFC 2136), as nsupdate reads it.
fn update_script(port: u16) -> String {
    format!(
        "server 127.0.0.1 {port}\nzone {ORIGIN}\n\
         update add new.example.com. 300 IN A 192.0.2.50\n\
         update delete www.example.com. AAAA\nsend\n"
    )
}

fn key_arg(secret: &str) -> String {
    format!("hmac-sha256:{KEY_NAME}:{secret}")
}

/// The external programs these tests drive; `None` when one is missing
/// outside CI (the test is then skipped).
struct Tools {
    knotd: PathBuf,
    nsd: PathBuf,
    named: PathBuf,
    kdig: PathBuf,
    nsupdate: PathBuf,
}

impl Tools {
    fn find() -> Option<Tools> {
        Some(Tools {
            knotd: support::require_tool("knotd")?,
            nsd: support::require_tool("nsd")?,
            named: support::require_tool("named")?,
            kdig: support::require_tool("kdig")?,
            nsupdate: support::require_tool("nsupdate")?,
        })
    }
}

// ---------------------------------------------------------------------------
// The primary
// ---------------------------------------------------------------------------

struct Primary {
    process: ChildGuard,
    addr: SocketAddr,
    zone_file: PathBuf,
    dir: tempfile::TempDir,
}

/// A secondary as bulwark's config names it: `[remote.NAME]` at `port`.
struct RemoteSpec<'a> {
    name: &'a str,
    port: u16,
}

/// Starts bulwark serving ORIGIN from a file, transfers and updates allowed
/// only with the key, NOTIFY (signed) to every remote, the file written back
/// at once after an update. It listens on port 0: the secondaries, started
/// after it, are given the port it reports.
fn start_primary(remotes: &[RemoteSpec<'_>]) -> Primary {
    let dir = support::temp_dir("bulwark-repl-primary-");
    let zone_file = dir.path().join("example.com.zone");
    std::fs::write(&zone_file, ZONE_SERIAL_1).unwrap();
    let mut conf = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\nstorage = \"bulwark.db\"\n\n\
         [tsig_key.\"{KEY_NAME}\"]\nalgorithm = \"hmac-sha256\"\nsecret = \"{SECRET}\"\n\n\
         [acl.keyed]\nallow = [\"127.0.0.0/8\"]\nkeys = [\"{KEY_NAME}\"]\n\n"
    );
    for r in remotes {
        writeln!(
            conf,
            "[remote.{}]\naddress = \"127.0.0.1:{}\"\nkey = \"{KEY_NAME}\"\n",
            r.name, r.port
        )
        .unwrap();
    }
    let notify: Vec<String> = remotes.iter().map(|r| format!("\"{}\"", r.name)).collect();
    write!(
        conf,
        "[[zone]]\norigin = \"{ORIGIN}\"\nfile = \"example.com.zone\"\n\
         allow_transfer = [\"keyed\"]\nallow_update = [\"keyed\"]\n\
         notify = [{}]\nzonefile_sync = 0\n",
        notify.join(", ")
    )
    .unwrap();
    let conf_path = dir.path().join("bulwark.toml");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec![
        "serve".to_string(),
        "--config".to_string(),
        conf_path.display().to_string(),
    ];
    let (process, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let addr = bound.dns[0];
    // Ready means the zones are loaded: it serves serial 1 now, or never.
    assert_eq!(
        soa_serial(addr),
        Some(1),
        "bulwark does not serve {ORIGIN}:\n{}",
        process.log()
    );
    Primary {
        process,
        addr,
        zone_file,
        dir,
    }
}

// ---------------------------------------------------------------------------
// The secondaries
// ---------------------------------------------------------------------------

struct Secondary {
    name: &'static str,
    process: ChildGuard,
    addr: SocketAddr,
    /// The address it fetches from, so bulwark's log tells the peers apart.
    source: Ipv4Addr,
    _dir: tempfile::TempDir,
}

impl Secondary {
    /// What the secondary logged after `offset` bytes.
    fn log_since(&self, offset: usize) -> String {
        self.process.log().get(offset..).unwrap_or("").to_string()
    }
}

/// knotd (knot.conf(5), Knot 3.2): ORIGIN from `primary`, fetched from
/// `source`; NOTIFY and transfers accepted from 127.0.0.1 with the key only.
fn start_knotd(knotd: &Path, port: u16, source: Ipv4Addr, primary: SocketAddr) -> Secondary {
    let dir = support::temp_dir("knotd-secondary-");
    let d = dir.path().display();
    let conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    \
         tcp-workers: 1\n    background-workers: 1\n\n\
         database:\n    storage: {d}\n\n\
         log:\n  - target: stderr\n    any: info\n\n\
         key:\n  - id: {KEY_NAME}\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\n\
         remote:\n  - id: bulwark\n    address: {}@{}\n    via: {source}\n    key: {KEY_NAME}\n\n\
         acl:\n  - id: keyed\n    address: 127.0.0.0/8\n    key: {KEY_NAME}\n    \
         action: [notify, transfer]\n\n\
         zone:\n  - domain: {ORIGIN}\n    storage: {d}\n    master: bulwark\n    acl: keyed\n",
        primary.ip(),
        primary.port()
    );
    let conf_path = dir.path().join("knot.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec!["-c".to_string(), conf_path.display().to_string()];
    let process = ChildGuard::spawn("knotd", knotd, &args, dir.path().join("knotd.log"));
    Secondary {
        name: "knotd",
        process,
        addr: ([127, 0, 0, 1], port).into(),
        source,
        _dir: dir,
    }
}

/// NSD (nsd.conf(5), NSD 4.6) in the foreground (-d, logging to stderr),
/// one server process, every file in its own directory, no control socket.
fn start_nsd(nsd: &Path, port: u16, source: Ipv4Addr, primary: SocketAddr) -> Secondary {
    let dir = support::temp_dir("nsd-secondary-");
    let d = dir.path().display();
    let conf = format!(
        "server:\n    ip-address: 127.0.0.1@{port}\n    do-ip6: no\n    server-count: 1\n    \
         username: \"\"\n    chroot: \"\"\n    zonesdir: \"{d}\"\n    database: \"\"\n    \
         zonelistfile: \"{d}/zone.list\"\n    xfrdfile: \"{d}/xfrd.state\"\n    \
         xfrdir: \"{d}\"\n    pidfile: \"{d}/nsd.pid\"\n    \
         verbosity: 2\n\n\
         remote-control:\n    control-enable: no\n\n\
         key:\n    name: \"{KEY_NAME}\"\n    algorithm: hmac-sha256\n    secret: \"{SECRET}\"\n\n\
         zone:\n    name: \"{ORIGIN}\"\n    zonefile: \"example.com.zone\"\n    \
         request-xfr: {}@{} {KEY_NAME}\n    outgoing-interface: {source}\n    allow-notify: 127.0.0.1 {KEY_NAME}\n    \
         provide-xfr: 127.0.0.1 {KEY_NAME}\n",
        primary.ip(),
        primary.port()
    );
    let conf_path = dir.path().join("nsd.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        conf_path.display().to_string(),
    ];
    let process = ChildGuard::spawn("nsd", nsd, &args, dir.path().join("nsd.log"));
    Secondary {
        name: "nsd",
        process,
        addr: ([127, 0, 0, 1], port).into(),
        source,
        _dir: dir,
    }
}

/// named (named.conf(5), BIND 9.18) in the foreground with one worker;
/// `-d 3` makes it say whether a transfer's response was incremental.
fn start_named(named: &Path, port: u16, source: Ipv4Addr, primary: SocketAddr) -> Secondary {
    let dir = support::temp_dir("named-secondary-");
    let d = dir.path().display();
    let conf = format!(
        "options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  listen-on port {port} {{ 127.0.0.1; }};\n  \
         listen-on-v6 {{ none; }};\n  recursion no;\n  dnssec-validation no;\n  notify no;\n}};\n\
         controls {{ }};\n\
         key \"{KEY_NAME}\" {{ algorithm hmac-sha256; secret \"{SECRET}\"; }};\n\
         zone \"{ORIGIN}\" {{\n  type secondary;\n  file \"example.com.db\";\n  \
         primaries port {} {{ {} key \"{KEY_NAME}\"; }};\n  transfer-source {source};\n  \
         allow-notify {{ key \"{KEY_NAME}\"; }};\n  allow-transfer {{ key \"{KEY_NAME}\"; }};\n}};\n",
        primary.port(),
        primary.ip()
    );
    let conf_path = dir.path().join("named.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec![
        "-g".to_string(),
        "-d".to_string(),
        "3".to_string(),
        "-n".to_string(),
        "1".to_string(),
        "-c".to_string(),
        conf_path.display().to_string(),
    ];
    let process = ChildGuard::spawn("named", named, &args, dir.path().join("named.log"));
    Secondary {
        name: "named",
        process,
        addr: ([127, 0, 0, 1], port).into(),
        source,
        _dir: dir,
    }
}

// ---------------------------------------------------------------------------
// Observing
// ---------------------------------------------------------------------------

/// Polls `check` until it yields a value; after DEADLINE the test fails with
/// `logs()`.
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>, logs: impl Fn() -> String) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "waited {DEADLINE:?} for {what}; logs:\n{}",
            logs()
        );
        std::thread::sleep(POLL_PAUSE);
    }
}

/// The SOA serial `addr` serves authoritatively for ORIGIN, if any.
fn soa_serial(addr: SocketAddr) -> Option<u32> {
    let answer = support::query(
        addr,
        &QuerySpec::new(ORIGIN, RecordType::SOA),
        Transport::Udp,
        QUERY_TIMEOUT,
    )
    .ok()?;
    if answer.rcode != 0 || !answer.aa {
        return None;
    }
    let soa = answer.rdata_of("SOA");
    soa.first()?.split_whitespace().nth(2)?.parse().ok()
}

/// ORIGIN as `addr` transfers it to kdig with the key: every record once
/// (the closing SOA dropped, no TSIG), whitespace collapsed, lowercased,
/// sorted. kdig is the parser here, so bulwark's own wire code is not
/// trusted to judge itself.
fn axfr(kdig: &Path, addr: SocketAddr) -> Vec<String> {
    let out = support::run_tool(
        kdig,
        &[
            format!("@{}", addr.ip()),
            "-p".to_string(),
            addr.port().to_string(),
            "-y".to_string(),
            key_arg(SECRET),
            ORIGIN.to_string(),
            "AXFR".to_string(),
        ],
    );
    let mut records: Vec<String> = out
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
        .map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase()
        })
        .filter(|l| l.split(' ').nth(3) != Some("tsig"))
        .collect();
    // RFC 5936 §2.2: the transfer opens and closes with the same SOA.
    let first = records.first().cloned();
    let last = records.pop();
    assert!(
        first.is_some() && first == last && first.as_deref().unwrap().contains(" soa "),
        "AXFR from {addr} does not open and close with the same SOA:\n{out}"
    );
    records.sort();
    records
}

/// Waits until every secondary serves `serial`, then checks that each one's
/// copy equals bulwark's record for record.
fn assert_all_have(
    kdig: &Path,
    primary: &Primary,
    secondaries: &[Secondary],
    serial: u32,
) -> Vec<String> {
    for s in secondaries {
        wait_for(
            &format!("{} to serve serial {serial}", s.name),
            || (soa_serial(s.addr) == Some(serial)).then_some(()),
            || all_logs(primary, secondaries),
        );
    }
    let reference = axfr(kdig, primary.addr);
    for s in secondaries {
        assert_eq!(
            axfr(kdig, s.addr),
            reference,
            "{}'s copy of serial {serial} differs from bulwark's",
            s.name
        );
    }
    reference
}

fn all_logs(primary: &Primary, secondaries: &[Secondary]) -> String {
    let mut text = format!("--- bulwark ---\n{}", primary.process.log());
    for s in secondaries {
        write!(text, "\n--- {} ---\n{}", s.name, s.process.log()).unwrap();
    }
    text
}

/// Log lengths now, so a later check reads only what came after.
fn log_marks(primary: &Primary, secondaries: &[Secondary]) -> (usize, Vec<usize>) {
    (
        primary.process.log().len(),
        secondaries.iter().map(|s| s.process.log().len()).collect(),
    )
}

/// After a change to `serial` (from `previous`), each secondary was told by a
/// signed NOTIFY and fetched the difference by IXFR: checked in its own log
/// where it says so, and in bulwark's, which names the fetching address.
fn assert_ixfr_to_all(
    primary: &Primary,
    secondaries: &[Secondary],
    marks: &(usize, Vec<usize>),
    previous: u32,
    serial: u32,
) {
    let bulwark_log = primary
        .process
        .log()
        .get(marks.0..)
        .unwrap_or("")
        .to_string();
    let context = || all_logs(primary, secondaries);
    for (s, &mark) in secondaries.iter().zip(&marks.1) {
        let log = s.log_since(mark);
        let sent = format!(
            "client={} kind=IXFR client_serial={previous} serial={serial}",
            s.source
        );
        assert!(
            bulwark_log
                .lines()
                .any(|l| l.contains("transfer sent") && l.contains(&sent)),
            "bulwark did not log an IXFR {previous} -> {serial} to {} ({}):\n{}",
            s.name,
            s.source,
            context()
        );
        let (notified, ixfr, no_axfr) = match s.name {
            "knotd" => (
                log.lines().any(|l| {
                    l.contains("notify, incoming, remote 127.0.0.1@")
                        && l.ends_with(&format!(", serial {serial}"))
                }),
                log.lines().any(|l| {
                    l.contains(&format!(
                        "IXFR, incoming, remote 127.0.0.1@{}, finished",
                        primary.addr.port()
                    ))
                }) && log.contains(&format!("serial {previous} -> {serial}, expires")),
                !log.contains("AXFR, incoming"),
            ),
            "nsd" => (
                log.contains(&format!(
                    "notify for {ORIGIN} from 127.0.0.1 serial {serial}"
                )),
                log.lines().any(|l| {
                    l.contains(&format!(
                        "zone {ORIGIN} received update to serial {serial} "
                    )) && l.contains(&format!("TSIG verified with key {KEY_NAME}"))
                }),
                !log.contains("starting AXFR"),
            ),
            "named" => (
                log.contains(&format!(
                    "received notify for zone '{}': TSIG '{KEY_NAME}'",
                    ORIGIN.trim_end_matches('.')
                )) && log.lines().any(|l| {
                    l.contains("notify from 127.0.0.1#")
                        && l.ends_with(&format!(": serial {serial}"))
                }),
                log.contains("got incremental response")
                    && log.contains(&format!("transferred serial {serial}: TSIG '{KEY_NAME}'")),
                !log.contains("got nonincremental response"),
            ),
            other => panic!("no log checks for {other}"),
        };
        assert!(
            notified,
            "{} did not log a NOTIFY for serial {serial}:\n{}",
            s.name,
            context()
        );
        assert!(
            ixfr,
            "{} did not log an incremental transfer to serial {serial}:\n{}",
            s.name,
            context()
        );
        assert!(
            no_axfr,
            "{} fell back to a full transfer for serial {serial}:\n{}",
            s.name,
            context()
        );
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn knotd_nsd_and_named_follow_bulwark_by_axfr_then_ixfr_under_tsig() {
    let Some(tools) = Tools::find() else { return };
    let ports = [
        support::free_port(),
        support::free_port(),
        support::free_port(),
    ];
    let remotes = [
        RemoteSpec {
            name: "knotd",
            port: ports[0],
        },
        RemoteSpec {
            name: "nsd",
            port: ports[1],
        },
        RemoteSpec {
            name: "named",
            port: ports[2],
        },
    ];
    let primary = start_primary(&remotes);
    let pa = primary.addr;
    let secondaries = [
        start_knotd(&tools.knotd, ports[0], Ipv4Addr::new(127, 0, 0, 12), pa),
        start_nsd(&tools.nsd, ports[1], Ipv4Addr::new(127, 0, 0, 13), pa),
        start_named(&tools.named, ports[2], Ipv4Addr::new(127, 0, 0, 14), pa),
    ];

    // The first copy: a full transfer to each, signed.
    let v1 = assert_all_have(&tools.kdig, &primary, &secondaries, 1);
    assert_eq!(v1.len(), 8, "bulwark's AXFR of serial 1: {v1:#?}");
    let bulwark_log = primary.process.log();
    for s in &secondaries {
        assert!(
            bulwark_log.lines().any(|l| l.contains("transfer sent")
                && l.contains(&format!("client={} kind=AXFR", s.source))
                && l.contains("serial=1 ")),
            "bulwark did not log an AXFR of serial 1 to {}:\n{bulwark_log}",
            s.name
        );
    }

    // Change 1: an UPDATE signed with the key; serial_policy "increment".
    let marks = log_marks(&primary, &secondaries);
    let script = primary.dir.path().join("update.txt");
    std::fs::write(&script, update_script(primary.addr.port())).unwrap();
    support::run_tool(
        &tools.nsupdate,
        &[
            "-y".to_string(),
            key_arg(SECRET),
            script.display().to_string(),
        ],
    );
    let v2 = assert_all_have(&tools.kdig, &primary, &secondaries, 2);
    assert!(
        v2.contains(&"new.example.com. 300 in a 192.0.2.50".to_string())
            && !v2.iter().any(|r| r.contains(" aaaa ")),
        "the UPDATE is not in bulwark's serial 2: {v2:#?}"
    );
    assert_ixfr_to_all(&primary, &secondaries, &marks, 1, 2);

    // Change 2: the file edited by hand and SIGHUP. The UPDATE must be in the
    // file first (zonefile_sync = 0), or bulwark rightly refuses to reload a
    // file that would drop it.
    wait_for(
        "bulwark to write serial 2 to its zone file",
        || {
            primary
                .process
                .log()
                .lines()
                .any(|l| l.contains("zone file written") && l.contains("serial=2"))
                .then_some(())
        },
        || primary.process.log(),
    );
    let marks = log_marks(&primary, &secondaries);
    std::fs::write(&primary.zone_file, ZONE_SERIAL_3).unwrap();
    primary.process.signal("HUP");
    let v3 = assert_all_have(&tools.kdig, &primary, &secondaries, 3);
    assert!(
        v3.contains(&"www.example.com. 300 in a 192.0.2.81".to_string())
            && !v3.contains(&"www.example.com. 300 in a 192.0.2.80".to_string())
            && v3.contains(&"new.example.com. 300 in a 192.0.2.50".to_string()),
        "the edited file is not bulwark's serial 3: {v3:#?}"
    );
    assert_ixfr_to_all(&primary, &secondaries, &marks, 2, 3);
}

/// The result of a kdig AXFR that is expected to fail: what it said.
fn kdig_axfr_failure(kdig: &Path, addr: SocketAddr, key: &str) -> String {
    let out = Command::new(kdig)
        .args([
            format!("@{}", addr.ip()),
            "-p".to_string(),
            addr.port().to_string(),
            "-y".to_string(),
            key.to_string(),
            ORIGIN.to_string(),
            "AXFR".to_string(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "kdig AXFR with {key} succeeded:\n{text}"
    );
    text
}

#[test]
fn transfers_without_the_key_are_notauth_and_with_a_wrong_key_get_a_tsig_error() {
    let Some(kdig) = support::require_tool("kdig") else {
        return;
    };
    // A remote on a port nobody listens on: NOTIFY goes nowhere, harmlessly.
    let primary = start_primary(&[RemoteSpec {
        name: "nobody",
        port: support::free_port(),
    }]);

    // RFC 5936 §6: a transfer the primary does not allow is refused; bulwark
    // answers NOTAUTH, as for any unauthorised transfer.
    let unsigned = support::query(
        primary.addr,
        &QuerySpec::new(ORIGIN, RecordType::AXFR),
        Transport::Tcp,
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(unsigned.rcode_name(), "NOTAUTH", "{unsigned}");
    assert!(unsigned.answer.is_empty(), "{unsigned}");

    // RFC 8945 §5.2.2: a MAC that does not verify is BADSIG, in the TSIG
    // error field of an (unsigned) NOTAUTH response.
    let wrong_secret = kdig_axfr_failure(&kdig, primary.addr, &key_arg(WRONG_SECRET));
    assert!(
        wrong_secret.contains("server replied with error 'BADSIG'"),
        "{wrong_secret}"
    );
    // RFC 8945 §5.2.1: an unknown key name is BADKEY.
    let unknown_key = kdig_axfr_failure(
        &kdig,
        primary.addr,
        &format!("hmac-sha256:other.key:{SECRET}"),
    );
    assert!(
        unknown_key.contains("server replied with error 'BADKEY'"),
        "{unknown_key}"
    );
    // The right key gets the zone: the refusals above were about the key.
    assert_eq!(axfr(&kdig, primary.addr).len(), 8);
}
