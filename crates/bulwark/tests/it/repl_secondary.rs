#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! bulwark as the secondary of real primaries: Knot DNS and BIND.
//!
//! Each test starts a primary (knotd or named) and a bulwark whose zone
//! names it in `primaries`, all on loopback ports of their own, and checks
//! what RFC 1034 §4.3.5, RFC 1995 (IXFR), RFC 1996 (NOTIFY), RFC 5936 (AXFR)
//! and RFC 8945 (TSIG) ask of a secondary: the first copy comes by AXFR, a
//! NOTIFY brings the next by IXFR (or by a full zone where the primary has no
//! increment), a wrong key gets nothing, an expired copy is not served, and
//! the stored copy outlives a restart. The zone is compared record by record
//! with the primary's own AXFR, read by `dig`.

use std::fmt::Write as _;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{Answer, ChildGuard, QuerySpec, Transport};

const ORIGIN: &str = "example.test.";
const KEY_NAME: &str = "xfr.key";
/// The TSIG secret both sides share (32 random octets, base64).
const SECRET: &str = "dHBRJQxIb4qDoljeh9QLaF7UF4RzI0CErbZJ4D10zi4=";
/// Another secret under the same key name: signatures made with it fail.
const WRONG_SECRET: &str = "q4YDf6aV9kzWq2ryyU8EJx3b7DRTxqJ2c1ypuD9iUuI=";

/// How long anything a test waits for may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);
/// Between two polls.
const POLL_PAUSE: Duration = Duration::from_millis(100);
/// One query's wait for its answer.
const QUERY_WAIT: Duration = Duration::from_millis(500);

/// SOA REFRESH, RETRY and EXPIRE of a test zone.
#[derive(Clone, Copy)]
struct SoaTimers {
    refresh: u32,
    retry: u32,
    expire: u32,
}

/// Long enough that only a NOTIFY (or the first load) can cause a refresh
/// while a test runs.
const SLOW: SoaTimers = SoaTimers {
    refresh: 3600,
    retry: 600,
    expire: 604_800,
};

/// As short as bulwark allows (it clamps the timers to 2 s at least): the
/// copy expires a few seconds after the primary goes away.
const FAST: SoaTimers = SoaTimers {
    refresh: 2,
    retry: 2,
    expire: 6,
};

/// The test zone at `serial`. Version 2 changes a record, removes one and
/// adds one, so an IXFR carries deletions and additions.
fn zone_text(serial: u32, timers: SoaTimers, version: u32) -> String {
    let SoaTimers {
        refresh,
        retry,
        expire,
    } = timers;
    let mut z = format!(
        "$ORIGIN {ORIGIN}\n$TTL 300\n\
         @       IN SOA  ns1 hostmaster {serial} {refresh} {retry} {expire} 300\n\
         @       IN NS   ns1\n\
         @       IN NS   ns2\n\
         @       IN MX   10 mail\n\
         ns1     IN A    192.0.2.1\n\
         ns2     IN A    192.0.2.2\n\
         mail    IN A    192.0.2.25\n\
         www     IN AAAA 2001:db8::80\n\
         sub     IN NS   ns.sub\n\
         ns.sub  IN A    192.0.2.53\n"
    );
    if version == 1 {
        z.push_str("www     IN A    192.0.2.80\ntxt     IN TXT  \"hello\" \"world\"\n");
    } else {
        z.push_str("www     IN A    192.0.2.81\nnew     IN A    192.0.2.99\n");
    }
    z
}

/// Writes a zone file and dates it a little ahead, so a primary that compares
/// modification times (named on SIGHUP) sees it as newer than its last load
/// even within the same second.
fn write_zone_file(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(2))
        .unwrap();
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// A server that can be stopped and started again with the same arguments
/// (same port, same files). Each run logs to a file of its own.
struct Daemon {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    runs: u32,
    process: Option<ChildGuard>,
}

impl Daemon {
    fn new(name: &'static str, program: PathBuf, args: Vec<String>, dir: &Path) -> Daemon {
        Daemon {
            name,
            program,
            args,
            dir: dir.to_path_buf(),
            runs: 0,
            process: None,
        }
    }

    fn log_path(&self, run: u32) -> PathBuf {
        self.dir.join(format!("{}-{run}.log", self.name))
    }

    fn start(&mut self) {
        assert!(self.process.is_none(), "{} is already running", self.name);
        self.runs += 1;
        self.process = Some(ChildGuard::spawn(
            self.name,
            &self.program,
            &self.args,
            self.log_path(self.runs),
        ));
    }

    /// Sends `signal` to the process (by its PID) and waits for it to exit;
    /// the guard kills it if it does not.
    fn stop(&mut self, signal: &str) -> Option<std::process::ExitStatus> {
        let mut process = self.process.take()?;
        if process.exited().is_none() {
            process.signal(signal);
        }
        process.wait_exit(DEADLINE)
    }

    /// The log of the current (or last) run.
    fn current_log(&self) -> String {
        fs::read_to_string(self.log_path(self.runs)).unwrap_or_default()
    }

    /// The logs of every run, for a failure message.
    fn logs(&self) -> String {
        let mut all = String::new();
        for run in 1..=self.runs {
            let text = fs::read_to_string(self.log_path(run)).unwrap_or_default();
            writeln!(all, "----- {} run {run} -----\n{text}", self.name).unwrap();
        }
        all
    }

    /// Fails the test if the process exited.
    fn assert_running(&mut self) {
        if let Some(status) = self.process.as_mut().and_then(ChildGuard::exited) {
            panic!("{} exited with {status}:\n{}", self.name, self.logs());
        }
    }
}

/// The primary in a test: knotd or named, with its zone file.
struct Primary {
    daemon: Daemon,
    addr: SocketAddr,
    zone_file: PathBuf,
    /// knotd's configuration, for knotc.
    knot_conf: Option<PathBuf>,
}

/// How a Knot primary keeps (or does not keep) the increments IXFR needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KnotJournal {
    /// `zonefile-load: difference` + `journal-content: changes`: a reload
    /// computes the difference and journals it, so IXFR is served.
    Differences,
    /// `journal-content: none`: IXFR can only be answered with the full zone.
    None,
}

impl Primary {
    /// knotd serving `zone` with TSIG required for transfers and, when
    /// `notify` is given, NOTIFY (signed) sent to that address.
    /// `port` comes from `support::free_port` (knotd cannot report one).
    fn knot(
        dir: &Path,
        port: u16,
        zone: &str,
        journal: KnotJournal,
        notify: Option<SocketAddr>,
    ) -> Option<Primary> {
        let knotd = support::require_tool("knotd")?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let zone_file = dir.join("example.test.zone");
        write_zone_file(&zone_file, zone);
        let d = dir.display();
        let (load, content) = match journal {
            KnotJournal::Differences => ("difference", "changes"),
            KnotJournal::None => ("whole", "none"),
        };
        // knot.conf(5), Knot 3.x. One worker of each kind: the CI machine has
        // two cores and bulwark needs them.
        let mut conf = format!(
            "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    \
             tcp-workers: 1\n    background-workers: 1\n\n\
             database:\n    storage: {d}\n\n\
             control:\n    listen: {d}/knot.sock\n\n\
             log:\n  - target: stderr\n    any: info\n\n\
             key:\n  - id: {KEY_NAME}\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\n\
             acl:\n  - id: transfer\n    address: 127.0.0.0/8\n    key: {KEY_NAME}\n    \
             action: transfer\n\n"
        );
        if let Some(sec) = notify {
            write!(
                conf,
                "remote:\n  - id: bulwark\n    address: {}@{}\n    key: {KEY_NAME}\n\n",
                sec.ip(),
                sec.port()
            )
            .unwrap();
        }
        write!(
            conf,
            "template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    \
             zonefile-load: {load}\n    journal-content: {content}\n\n\
             zone:\n  - domain: {ORIGIN}\n    file: {}\n    acl: transfer\n",
            zone_file.display()
        )
        .unwrap();
        if notify.is_some() {
            conf.push_str("    notify: bulwark\n");
        }
        let conf_path = dir.join("knot.conf");
        fs::write(&conf_path, conf).unwrap();
        let args = vec!["-c".to_string(), conf_path.display().to_string()];
        Some(Primary {
            daemon: Daemon::new("knotd", knotd, args, dir),
            addr,
            zone_file,
            knot_conf: Some(conf_path),
        })
    }

    /// named serving `zone` with TSIG required for transfers, NOTIFY (signed)
    /// sent to `notify`, and `ixfr-from-differences no`: a reloaded zone
    /// file leaves no increment, so named answers IXFR with the whole zone.
    fn named(dir: &Path, port: u16, zone: &str, notify: SocketAddr) -> Option<Primary> {
        let named = support::require_tool("named")?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let zone_file = dir.join("example.test.zone");
        write_zone_file(&zone_file, zone);
        let d = dir.display();
        // notify-delay 0: BIND otherwise holds NOTIFY back 5 s after a change.
        let conf = format!(
            "key \"{KEY_NAME}\" {{ algorithm hmac-sha256; secret \"{SECRET}\"; }};\n\
             options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
             session-keyfile \"{d}/session.key\";\n  listen-on port {port} {{ 127.0.0.1; }};\n  \
             listen-on-v6 {{ none; }};\n  recursion no;\n  ixfr-from-differences no;\n  \
             notify explicit;\n  notify-delay 0;\n}};\ncontrols {{ }};\n\
             zone \"{ORIGIN}\" {{\n  type primary;\n  file \"{}\";\n  \
             allow-transfer {{ key \"{KEY_NAME}\"; }};\n  \
             also-notify {{ {} port {} key \"{KEY_NAME}\"; }};\n}};\n",
            zone_file.display(),
            notify.ip(),
            notify.port()
        );
        let conf_path = dir.join("named.conf");
        fs::write(&conf_path, conf).unwrap();
        let args = ["-g", "-n", "1", "-c", conf_path.to_str().unwrap()]
            .map(String::from)
            .to_vec();
        Some(Primary {
            daemon: Daemon::new("named", named, args, dir),
            addr,
            zone_file,
            knot_conf: None,
        })
    }

    /// Starts the primary and waits until it serves the zone.
    fn start(&mut self) {
        self.daemon.start();
        let addr = self.addr;
        wait_until(
            &format!("{} serves {ORIGIN}", self.daemon.name),
            &mut [&mut self.daemon],
            || ask_soa(addr).is_some_and(|a| serves(&a)),
        );
    }

    /// Replaces the zone and has the primary load it (which NOTIFYs).
    fn change_zone(&mut self, text: &str) {
        write_zone_file(&self.zone_file, text);
        match &self.knot_conf {
            Some(conf) => {
                let knotc = support::require_tool("knotc").unwrap();
                // zone-reload reads the file whatever its modification time;
                // with `zonefile-load: difference` the change is journaled.
                let args = ["-c", conf.to_str().unwrap(), "zone-reload", ORIGIN].map(String::from);
                support::run_tool(&knotc, &args);
            }
            // named(8): SIGHUP reloads the configuration and changed zones.
            None => self.daemon.process.as_ref().unwrap().signal("HUP"),
        }
    }
}

/// Writes `dir/bulwark.toml`: port 0 (the port bulwark gets is read from its
/// ready file), `primary` as the zone's only primary, the key with `secret`,
/// and transfers out allowed with the key (for the comparison with the
/// primary's copy).
fn write_secondary_config(dir: &Path, primary: SocketAddr, secret: &str) -> PathBuf {
    let conf = format!(
        "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nstorage = \"bulwark.db\"\n\n\
         [tsig_key.\"{KEY_NAME}\"]\nalgorithm = \"hmac-sha256\"\nsecret = \"{secret}\"\n\n\
         [acl.xfr]\nallow = [\"127.0.0.0/8\"]\nkeys = [\"{KEY_NAME}\"]\n\n\
         [remote.pri]\naddress = \"{primary}\"\nkey = \"{KEY_NAME}\"\n\n\
         [[zone]]\norigin = \"{ORIGIN}\"\nprimaries = [\"pri\"]\nallow_transfer = [\"xfr\"]\n"
    );
    let path = dir.join("bulwark.toml");
    fs::write(&path, conf).unwrap();
    path
}

/// bulwark as the secondary of `example.test.`, with its own directory,
/// configuration and storage.
struct Secondary {
    daemon: Daemon,
    /// Where it reports the port it got; `addr` is valid once started.
    ready: PathBuf,
    addr: SocketAddr,
}

impl Secondary {
    /// bulwark on port 0 with `primary` as the zone's only primary, the key
    /// holding `secret`.
    fn new(dir: &Path, primary: SocketAddr, secret: &str) -> Secondary {
        let conf_path = write_secondary_config(dir, primary, secret);
        let ready = dir.join("bulwark.ready");
        let mut args = vec![
            "serve".to_string(),
            "--config".to_string(),
            conf_path.display().to_string(),
        ];
        args.extend(support::ready_file_args(&ready));
        Secondary {
            daemon: Daemon::new("bulwark", support::bulwark_bin(), args, dir),
            ready,
            addr: ([127, 0, 0, 1], 0).into(),
        }
    }

    /// Starts bulwark, reads the port it got (a new one at each start), and
    /// waits until it answers at all (SERVFAIL included: it may not hold the
    /// zone yet). Returns that first answer.
    fn start(&mut self) -> Answer {
        let _ = fs::remove_file(&self.ready);
        self.daemon.start();
        let process = self.daemon.process.as_mut().unwrap();
        self.addr = support::wait_ready_file(process, &self.ready).dns[0];
        let addr = self.addr;
        let mut first = None;
        wait_until("bulwark answers queries", &mut [&mut self.daemon], || {
            first = ask_soa(addr);
            first.is_some()
        });
        first.unwrap()
    }
}

/// A loopback address.
fn local(port: u16) -> SocketAddr {
    ([127, 0, 0, 1], port).into()
}

// ---------------------------------------------------------------------------
// Queries and waiting
// ---------------------------------------------------------------------------

/// The zone's SOA over UDP, `None` when nothing answers.
fn ask_soa(addr: SocketAddr) -> Option<Answer> {
    let spec = QuerySpec::new(ORIGIN, RecordType::SOA);
    support::query(addr, &spec, Transport::Udp, QUERY_WAIT).ok()
}

fn ask(addr: SocketAddr, qname: &str, qtype: RecordType) -> Answer {
    let spec = QuerySpec::new(qname, qtype);
    support::query_retry(addr, &spec, Transport::Udp, QUERY_WAIT, 10)
        .unwrap_or_else(|e| panic!("{qname} {qtype} to {addr}: {e}"))
}

/// An authoritative NOERROR answer holding the SOA: the zone is served.
fn serves(a: &Answer) -> bool {
    a.rcode == 0 && a.aa && !a.rdata_of("SOA").is_empty()
}

/// The serial of the SOA in the answer section.
fn serial_of(a: &Answer) -> Option<u32> {
    a.rdata_of("SOA")
        .first()?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Whether `addr` serves the zone at `serial`.
fn serves_serial(addr: SocketAddr, serial: u32) -> bool {
    ask_soa(addr).is_some_and(|a| serves(&a) && serial_of(&a) == Some(serial))
}

/// Polls `done` until it holds, failing the test with every log after
/// [`DEADLINE`] or as soon as one of the daemons exits.
fn wait_until(what: &str, daemons: &mut [&mut Daemon], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if done() {
            return;
        }
        for d in daemons.iter_mut() {
            d.assert_running();
        }
        if Instant::now() > deadline {
            let logs: String = daemons.iter().map(|d| d.logs()).collect();
            panic!("gave up waiting for: {what}\n{logs}");
        }
        std::thread::sleep(POLL_PAUSE);
    }
}

/// The zone as `dig` reads it by AXFR (signed with the key) from `addr`:
/// one line per record, whitespace normalised, sorted, the closing SOA left
/// out. Comparing two servers' lists compares their zones.
fn axfr(addr: SocketAddr) -> Vec<String> {
    let dig = support::require_tool("dig").unwrap();
    let args = [
        format!("@{}", addr.ip()),
        "-p".to_string(),
        addr.port().to_string(),
        "-y".to_string(),
        format!("hmac-sha256:{KEY_NAME}:{SECRET}"),
        ORIGIN.to_string(),
        "AXFR".to_string(),
        "+noall".to_string(),
        "+answer".to_string(),
        "+onesoa".to_string(),
        "+tries=1".to_string(),
        "+time=5".to_string(),
    ];
    let out = support::run_tool(&dig, &args);
    let mut records: Vec<String> = out
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    records.sort();
    assert!(
        records.iter().any(|r| r.contains(" SOA ")),
        "no zone in the AXFR from {addr}:\n{out}"
    );
    records
}

fn assert_same_zone(primary: &Primary, secondary: &Secondary, when: &str) {
    let theirs = axfr(primary.addr);
    let ours = axfr(secondary.addr);
    assert_eq!(
        ours,
        theirs,
        "{when}: bulwark's copy differs from {}'s zone\n{}",
        primary.daemon.name,
        secondary.daemon.logs()
    );
}

/// The "zone transferred" lines of a log, to say which kind was used.
fn transfers(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("zone transferred"))
        .collect()
}

/// Tools every test needs besides the primary; `None` skips the test
/// outside CI.
fn have_clients() -> Option<()> {
    support::require_tool("dig")?;
    Some(())
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// RFC 5936 first copy, RFC 1996 NOTIFY, RFC 1995 IXFR from Knot's journal.
#[test]
fn knot_primary_gives_the_first_copy_by_axfr_and_a_notified_change_by_ixfr() {
    if have_clients().is_none() || support::require_tool("knotc").is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-knot-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    // bulwark first: Knot must be told the port it got, to NOTIFY it.
    let primary_port = support::free_port();
    let mut secondary = Secondary::new(&sdir, local(primary_port), SECRET);
    secondary.start();
    let sec_addr = secondary.addr;
    let Some(mut primary) = Primary::knot(
        &pdir,
        primary_port,
        &zone_text(1, SLOW, 1),
        KnotJournal::Differences,
        Some(sec_addr),
    ) else {
        return;
    };
    primary.start();

    wait_until(
        "bulwark serves serial 1",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    let log = secondary.daemon.current_log();
    let kinds = transfers(&log);
    assert!(
        kinds.len() == 1 && kinds[0].contains("kind=AXFR"),
        "the first copy should come by one AXFR: {kinds:?}\n{log}"
    );
    let www = ask(sec_addr, "www.example.test.", RecordType::A);
    assert!(www.aa, "not authoritative: {www}");
    assert_eq!(www.rdata_of("A"), ["192.0.2.80"], "{www}");
    assert_same_zone(&primary, &secondary, "after the AXFR");

    // SOA REFRESH is an hour: only Knot's NOTIFY can start this refresh.
    primary.change_zone(&zone_text(2, SLOW, 2));
    wait_until(
        "bulwark serves serial 2 after Knot's NOTIFY",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 2),
    );
    let log = secondary.daemon.current_log();
    assert!(log.contains("NOTIFY received"), "{log}");
    let kinds = transfers(&log);
    assert!(
        kinds.len() == 2 && kinds[1].contains("kind=IXFR"),
        "the change should come by IXFR: {kinds:?}\n{log}"
    );
    let www = ask(sec_addr, "www.example.test.", RecordType::A);
    assert_eq!(www.rdata_of("A"), ["192.0.2.81"], "{www}");
    let gone = ask(sec_addr, "txt.example.test.", RecordType::TXT);
    assert_eq!(gone.rcode_name(), "NXDOMAIN", "{gone}");
    let new = ask(sec_addr, "new.example.test.", RecordType::A);
    assert_eq!(new.rdata_of("A"), ["192.0.2.99"], "{new}");
    assert_same_zone(&primary, &secondary, "after the IXFR");
    // Knot answered from its journal, not with the whole zone.
    let knot_log = primary.daemon.current_log();
    assert!(
        knot_log
            .lines()
            .any(|l| l.contains("IXFR, outgoing") && l.contains("started, serial 1 -> 2")),
        "Knot did not log an incremental transfer:\n{knot_log}"
    );
}

/// Where the primary holds no increment, it answers IXFR with the whole
/// zone (RFC 1995 §4); bulwark must end with the same zone all the same.
/// `secondary` already runs (the primary's NOTIFY goes to the port it got).
fn check_full_zone_answer_to_ixfr(mut primary: Primary, mut secondary: Secondary) {
    let sec_addr = secondary.addr;
    primary.start();
    wait_until(
        "bulwark serves serial 1",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    assert_same_zone(&primary, &secondary, "after the first copy");

    primary.change_zone(&zone_text(2, SLOW, 2));
    wait_until(
        "bulwark serves serial 2",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 2),
    );
    let log = secondary.daemon.current_log();
    // One IXFR request, answered with the whole zone and taken as it came:
    // no second request by AXFR was needed.
    let kinds = transfers(&log);
    assert!(
        kinds.len() == 2 && kinds[1].contains("kind=IXFR"),
        "{kinds:?}\n{log}"
    );
    assert!(!log.contains("IXFR failed"), "{log}");
    assert_same_zone(&primary, &secondary, "after the full-zone answer");
    let gone = ask(sec_addr, "txt.example.test.", RecordType::TXT);
    assert_eq!(gone.rcode_name(), "NXDOMAIN", "{gone}");
}

#[test]
fn bind_primary_without_ixfr_from_differences_sends_the_whole_zone_and_bulwark_takes_it() {
    if have_clients().is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-bind-");
    let (pdir, sdir) = (dir.path().join("named"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    // bulwark first: named must be told the port it got, to NOTIFY it.
    let primary_port = support::free_port();
    let mut secondary = Secondary::new(&sdir, local(primary_port), SECRET);
    secondary.start();
    let Some(primary) = Primary::named(&pdir, primary_port, &zone_text(1, SLOW, 1), secondary.addr)
    else {
        return;
    };
    let named_log = pdir.join("named-1.log");
    let bulwark_log = sdir.join("bulwark-1.log");
    check_full_zone_answer_to_ixfr(primary, secondary);
    let named_log = fs::read_to_string(named_log).unwrap();
    let bulwark_log = fs::read_to_string(bulwark_log).unwrap();
    // bulwark asked for an increment, and named had none to give.
    assert!(
        named_log.contains("AXFR-style IXFR"),
        "named did not answer an IXFR with the whole zone:\n{named_log}\n{bulwark_log}"
    );
    assert!(bulwark_log.contains("NOTIFY received"), "{bulwark_log}");
}

#[test]
fn knot_primary_without_a_journal_sends_the_whole_zone_and_bulwark_takes_it() {
    if have_clients().is_none() || support::require_tool("knotc").is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-knot-nojournal-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    // bulwark first: Knot must be told the port it got, to NOTIFY it.
    let primary_port = support::free_port();
    let mut secondary = Secondary::new(&sdir, local(primary_port), SECRET);
    secondary.start();
    let Some(primary) = Primary::knot(
        &pdir,
        primary_port,
        &zone_text(1, SLOW, 1),
        KnotJournal::None,
        Some(secondary.addr),
    ) else {
        return;
    };
    let knot_log = pdir.join("knotd-1.log");
    check_full_zone_answer_to_ixfr(primary, secondary);
    let knot_log = fs::read_to_string(knot_log).unwrap();
    // Knot 3.2 says so in these words when it has no increment to send.
    assert!(
        knot_log.contains("incomplete history") && knot_log.contains("fallback to AXFR"),
        "Knot did not answer the IXFR with the whole zone:\n{knot_log}"
    );
}

/// RFC 8945 §5.3: a primary that cannot verify the request's signature
/// answers NOTAUTH and sends no zone; bulwark then has nothing to serve.
/// Once the operator puts the right secret in the file and reloads (SIGHUP),
/// the next retry gets the zone.
#[test]
fn a_wrong_tsig_key_gets_no_zone_and_the_right_one_after_a_reload_does() {
    if have_clients().is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-tsig-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    let Some(mut primary) = Primary::knot(
        &pdir,
        support::free_port(),
        &zone_text(1, SLOW, 1),
        KnotJournal::Differences,
        None,
    ) else {
        return;
    };
    primary.start();

    let mut secondary = Secondary::new(&sdir, primary.addr, WRONG_SECRET);
    secondary.start();
    let sec_addr = secondary.addr;
    let log_path = secondary.daemon.log_path(1);
    let mut failure = String::new();
    wait_until(
        "bulwark logs the refresh failure",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || {
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            match log
                .lines()
                .find(|l| l.contains("refresh from primary failed"))
            {
                Some(line) => {
                    failure = line.to_string();
                    true
                }
                None => false,
            }
        },
    );
    // It failed for the signature, not for a primary that was not there.
    assert!(failure.contains("TSIG"), "{failure}");
    let soa = ask(sec_addr, ORIGIN, RecordType::SOA);
    assert_eq!(
        soa.rcode_name(),
        "SERVFAIL",
        "{soa}\n{}",
        secondary.daemon.logs()
    );
    let www = ask(sec_addr, "www.example.test.", RecordType::A);
    assert_eq!(www.rcode_name(), "SERVFAIL", "{www}");
    assert!(
        transfers(&secondary.daemon.current_log()).is_empty(),
        "{}",
        secondary.daemon.logs()
    );

    // The same server, its key fixed in the file and reloaded.
    write_secondary_config(&sdir, primary.addr, SECRET);
    secondary.daemon.process.as_ref().unwrap().signal("HUP");
    wait_until(
        "bulwark with the right key serves the zone",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    assert_same_zone(&primary, &secondary, "with the right key");
}

/// RFC 1034 §4.3.5: once EXPIRE passes with no primary reachable the copy
/// is no longer authoritative (SERVFAIL); a primary back confirms it.
#[test]
fn a_copy_expires_without_its_primary_and_is_served_again_when_the_primary_returns() {
    if have_clients().is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-expire-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    let Some(mut primary) = Primary::knot(
        &pdir,
        support::free_port(),
        &zone_text(1, FAST, 1),
        KnotJournal::Differences,
        None,
    ) else {
        return;
    };
    primary.start();
    let mut secondary = Secondary::new(&sdir, primary.addr, SECRET);
    secondary.start();
    let sec_addr = secondary.addr;
    wait_until(
        "bulwark serves serial 1",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );

    // The primary dies (SIGKILL to its PID): no goodbye, no NOTIFY.
    primary.daemon.stop("KILL");
    let mut last = None;
    wait_until(
        "bulwark stops serving the expired copy",
        &mut [&mut secondary.daemon],
        || {
            last = ask_soa(sec_addr);
            last.as_ref().is_some_and(|a| a.rcode_name() == "SERVFAIL")
        },
    );
    let log = secondary.daemon.current_log();
    assert!(log.contains("zone expired"), "{log}");
    let expired_at = log.len();
    let www = ask(sec_addr, "www.example.test.", RecordType::A);
    assert_eq!(www.rcode_name(), "SERVFAIL", "{www}");

    // Back on the same port with the same serial: the copy is current again.
    primary.start();
    wait_until(
        "bulwark serves the zone again",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    // Revived, not transferred again: the serial had not changed.
    let log = secondary.daemon.current_log();
    let since = &log[expired_at..];
    assert!(since.contains("serving it again"), "{log}");
    assert!(transfers(since).is_empty(), "{log}");
    assert_same_zone(&primary, &secondary, "after the primary came back");
}

/// The copy and its timers live in bulwark's storage: a restarted bulwark
/// serves it with no primary to ask.
#[test]
fn a_restarted_secondary_serves_its_stored_copy_without_the_primary() {
    if have_clients().is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-restart-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    let Some(mut primary) = Primary::knot(
        &pdir,
        support::free_port(),
        &zone_text(1, SLOW, 1),
        KnotJournal::Differences,
        None,
    ) else {
        return;
    };
    primary.start();
    let mut secondary = Secondary::new(&sdir, primary.addr, SECRET);
    secondary.start();
    let sec_addr = secondary.addr;
    wait_until(
        "bulwark serves serial 1",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    let before = axfr(sec_addr);

    let status = secondary.daemon.stop("TERM");
    assert!(
        status.is_some_and(|s| s.success()),
        "bulwark did not exit cleanly on SIGTERM: {status:?}\n{}",
        secondary.daemon.logs()
    );
    primary.daemon.stop("TERM");

    // The very first answer of the new process is the stored zone.
    let first = secondary.start();
    assert!(
        serves(&first) && serial_of(&first) == Some(1),
        "the restarted bulwark did not serve its stored copy at once: {first}\n{}",
        secondary.daemon.logs()
    );
    // A new process, a new port.
    let after = axfr(secondary.addr);
    assert_eq!(after, before, "the stored copy differs from the one served");
    let log = secondary.daemon.current_log();
    assert!(
        transfers(&log).is_empty(),
        "a transfer with the primary stopped?\n{log}"
    );
}

/// Primaries are tried in order: with the first one down, the zone comes
/// from the second, and the log says what happened to each.
#[test]
fn a_primary_that_does_not_answer_is_passed_over_for_the_next() {
    if have_clients().is_none() {
        return;
    }
    let dir = support::temp_dir("repl-sec-order-");
    let (pdir, sdir) = (dir.path().join("knot"), dir.path().join("bulwark"));
    fs::create_dir_all(&pdir).unwrap();
    fs::create_dir_all(&sdir).unwrap();
    let Some(mut primary) = Primary::knot(
        &pdir,
        support::free_port(),
        &zone_text(1, SLOW, 1),
        KnotJournal::Differences,
        None,
    ) else {
        return;
    };
    primary.start();
    // A port nothing listens on: connections are refused at once.
    let dead: SocketAddr = ([127, 0, 0, 1], support::free_port()).into();
    let mut secondary = Secondary::new(&sdir, primary.addr, SECRET);
    let conf = fs::read_to_string(sdir.join("bulwark.toml")).unwrap();
    let conf = conf.replace("primaries = [\"pri\"]", "primaries = [\"dead\", \"pri\"]")
        + &format!("\n[remote.dead]\naddress = \"{dead}\"\nkey = \"{KEY_NAME}\"\n");
    fs::write(sdir.join("bulwark.toml"), conf).unwrap();
    secondary.start();
    let sec_addr = secondary.addr;
    wait_until(
        "bulwark serves serial 1 from the second primary",
        &mut [&mut secondary.daemon, &mut primary.daemon],
        || serves_serial(sec_addr, 1),
    );
    let log = secondary.daemon.current_log();
    let failed = log
        .lines()
        .position(|l| l.contains("refresh from primary failed") && l.contains(&dead.to_string()));
    let transferred = log.lines().position(|l| {
        l.contains("zone transferred") && l.contains(&format!("primary={}", primary.addr))
    });
    assert!(
        matches!((failed, transferred), (Some(f), Some(t)) if f < t),
        "the dead primary first, then the live one:\n{log}"
    );
    assert_same_zone(&primary, &secondary, "from the second primary");
}
