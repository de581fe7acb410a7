//! Shared harness for the end-to-end tests: bulwark on port 0 with the port
//! read from its ready file, free ports for peers, child processes that die
//! with the test, peer servers (knotd, named) and a small DNS client.
//!
//! Responses are parsed with `hickory-proto`, an implementation independent
//! of bulwark's own, so a bug in our wire code cannot hide itself here.
//! Declared once, in `main.rs`; each test module uses a subset of it as
//! `crate::support`. All the tests of a `cargo test` run share this module's
//! globals in one process (nextest runs each test in a process of its own).
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RecordType};

/// How long a process gets to come up and answer before the test fails.
pub const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// Receive timeout for one poll while waiting for a server to come up.
const READY_POLL_TIMEOUT: Duration = Duration::from_millis(100);

// ---------------------------------------------------------------------------
// Ports, temp dirs, external tools
// ---------------------------------------------------------------------------

/// A port free for both UDP and TCP on 127.0.0.1 at the time of the call,
/// for peers (knotd, named, nsd, unbound) that cannot report the port they
/// bound; bulwark binds port 0 and reports it instead (see [`start_bulwark`]).
///
/// The port lies below the ephemeral range (`bulwark_testkit::free_port`),
/// so no test's outgoing connection can be given it while a peer that a
/// test stopped is down: restarting on it works.
pub fn free_port() -> u16 {
    bulwark_testkit::free_port()
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create temp dir")
}

/// The directory holding the test zones: `tests/data`, outside `tests/it`
/// because other crates' tests and the fuzzers read the same files.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// True when running in CI, where a missing peer is a failure, not a skip
/// (`bulwark_testkit::in_ci`, the workspace's one rule).
pub fn in_ci() -> bool {
    bulwark_testkit::in_ci()
}

/// Finds an external program on PATH (or in /usr/sbin, /usr/bin, /sbin, where
/// Debian puts daemons). Returns `None` after printing why the test is skipped
/// when the tool is absent outside CI; in CI a missing tool fails the test,
/// naming the Debian package to install (`bulwark_testkit::require_tool`).
pub fn require_tool(name: &str) -> Option<PathBuf> {
    bulwark_testkit::require_tool(name)
}

/// A python3 that can `import module` (Debian's /usr/bin/python3 first, where
/// the python3-* packages install), under the same rule as [`require_tool`].
pub fn require_python_module(module: &str) -> Option<PathBuf> {
    bulwark_testkit::require_python_module(module)
}

/// A file a Debian package installs (a PKCS#11 module), under the same rule
/// as [`require_tool`].
pub fn require_file(path: &str, package: &str) -> Option<PathBuf> {
    bulwark_testkit::require_file(path, package)
}

// ---------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------

/// A running child process, killed (by PID) when dropped. Its stdout and
/// stderr go to a log file so a failing test can show what it said.
pub struct ChildGuard {
    name: String,
    child: Child,
    log: PathBuf,
}

impl ChildGuard {
    /// Starts `program` with `args`, logging into `log`.
    pub fn spawn(name: &str, program: &Path, args: &[String], log: PathBuf) -> ChildGuard {
        ChildGuard::spawn_with_env(name, program, args, &[], log)
    }

    /// Like [`ChildGuard::spawn`], with `env` added to the child's environment.
    pub fn spawn_with_env(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(&str, &Path)],
        log: PathBuf,
    ) -> ChildGuard {
        let out = fs::File::create(&log).expect("create log file");
        let err = out.try_clone().expect("clone log file");
        let child = Command::new(program)
            .envs(env.iter().copied())
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        ChildGuard {
            name: name.to_string(),
            child,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (by name, e.g. "HUP") to this PID. The shell's
    /// built-in kill is used: it needs no `unsafe` here and, unlike
    /// /bin/kill (procps), is present on every Debian system.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("sh")
            .args(["-c", "kill -s \"$0\" \"$1\""])
            .arg(signal)
            .arg(self.pid().to_string())
            .status()
            .expect("run sh");
        assert!(status.success(), "kill -s {signal} {} failed", self.pid());
    }

    /// `Some(status)` if the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Everything the process has written so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits up to `limit` for the process to exit (polling, no fixed sleep).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            // Block on something that can end early instead of sleeping.
            let _ = UdpSocket::bind("127.0.0.1:0").and_then(|s| {
                s.set_read_timeout(Some(Duration::from_millis(20)))?;
                s.recv(&mut [0u8; 1])
            });
        }
        None
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DNS server under test: its process, its address and its scratch dir.
pub struct Server {
    pub process: ChildGuard,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

/// Why a server did not become ready.
#[derive(Debug)]
pub enum NotReady {
    /// It exited; its log is attached.
    Exited(String),
    /// It kept running without giving an accepted answer.
    Timeout(String),
}

impl NotReady {
    /// The port was taken between `free_port` and the server's bind: worth
    /// another try on a new port.
    fn port_was_taken(&self) -> bool {
        matches!(self, NotReady::Exited(log) if log.to_ascii_lowercase().contains("in use"))
    }
}

/// Attempts at starting a server when its port turns out to be taken.
const START_ATTEMPTS: u32 = 3;

impl Server {
    /// Polls the server with `qname`/`qtype` until `ready` accepts an answer.
    pub fn try_ready(
        &mut self,
        qname: &str,
        qtype: RecordType,
        ready: impl Fn(&Answer) -> bool,
    ) -> Result<(), NotReady> {
        let deadline = Instant::now() + STARTUP_DEADLINE;
        let spec = QuerySpec::new(qname, qtype);
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            if let Some(status) = self.process.exited() {
                return Err(NotReady::Exited(format!(
                    "{} exited with {status} before answering; its log:\n{}",
                    self.process.name(),
                    self.process.log()
                )));
            }
            match query(self.addr, &spec, Transport::Udp, READY_POLL_TIMEOUT) {
                Ok(answer) if ready(&answer) => return Ok(()),
                Ok(answer) => last = answer.to_string(),
                Err(e) => last = e.to_string(),
            }
        }
        Err(NotReady::Timeout(format!(
            "{} did not become ready within {STARTUP_DEADLINE:?}; last: {last}\nits log:\n{}",
            self.process.name(),
            self.process.log()
        )))
    }

    /// Like [`Server::try_ready`], failing the test if the server is not ready.
    pub fn wait_ready(&mut self, qname: &str, qtype: RecordType, ready: impl Fn(&Answer) -> bool) {
        if let Err(NotReady::Exited(why) | NotReady::Timeout(why)) =
            self.try_ready(qname, qtype, ready)
        {
            panic!("{why}");
        }
    }
}

/// Starts a server with `start(port)` and waits until every probe is
/// accepted, trying a new port when the chosen one was taken meanwhile.
fn start_server(
    mut start: impl FnMut(u16) -> Server,
    probes: &[(&str, RecordType)],
    ready: impl Fn(&Answer) -> bool,
) -> Server {
    let mut attempt = 1;
    loop {
        let mut server = start(free_port());
        let outcome = probes
            .iter()
            .try_for_each(|(qname, qtype)| server.try_ready(qname, *qtype, &ready));
        match outcome {
            Ok(()) => return server,
            Err(e) if e.port_was_taken() && attempt < START_ATTEMPTS => attempt += 1,
            Err(NotReady::Exited(why) | NotReady::Timeout(why)) => panic!("{why}"),
        }
    }
}

/// The path of the bulwark binary built for these tests.
pub fn bulwark_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bulwark"))
}

/// Starts `bulwark serve` on 127.0.0.1 port 0 with `--zone ORIGIN=PATH` for
/// each zone, reads the port it got from its `--ready-file`, and waits until
/// it answers the SOA of the first zone with any response at all (REFUSED
/// counts: that is for the test to judge). `extra_args` may add listen
/// addresses (`--listen [::1]:0`); `addr` is the first, 127.0.0.1.
pub fn spawn_bulwark(zones: &[(&str, &Path)], extra_args: &[&str]) -> Server {
    spawn_bulwark_with_env(zones, extra_args, &[])
}

/// Like [`spawn_bulwark`], with `env` added to the server's environment.
pub fn spawn_bulwark_with_env(
    zones: &[(&str, &Path)],
    extra_args: &[&str],
    env: &[(&str, &Path)],
) -> Server {
    let probe = zones.first().map_or(".", |z| z.0);
    let dir = temp_dir("bulwark-test-");
    let mut args = vec![
        "serve".to_string(),
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
    ];
    for (origin, path) in zones {
        args.push("--zone".to_string());
        args.push(format!("{origin}={}", path.display()));
    }
    args.extend(extra_args.iter().map(|s| s.to_string()));
    let (process, bound) = start_bulwark(&args, env, dir.path(), "bulwark");
    let mut server = Server {
        process,
        addr: bound.dns[0],
        dir,
    };
    server.wait_ready(probe, RecordType::SOA, |_| true);
    server
}

/// What `bulwark serve --ready-file FILE` reported once ready: its PID and
/// the addresses it bound (a port 0 resolved). See docs/operations.md.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bound {
    pub pid: u32,
    /// One per listen address, in the configured order; UDP and TCP share it.
    pub dns: Vec<SocketAddr>,
    /// DNS over TLS listeners.
    pub dot: Vec<SocketAddr>,
    /// DNS over HTTPS listeners.
    pub doh: Vec<SocketAddr>,
    /// DNS over QUIC listeners.
    pub doq: Vec<SocketAddr>,
    /// DNS over HTTPS on HTTP/3 listeners.
    pub doh3: Vec<SocketAddr>,
    pub prometheus: Option<SocketAddr>,
    pub control: Option<PathBuf>,
}

impl Bound {
    /// Reads a ready file's text: `None` until it is complete (its last
    /// line is `ready`).
    pub fn parse(text: &str) -> Option<Bound> {
        if text.lines().last() != Some("ready") {
            return None;
        }
        let mut bound = Bound::default();
        for line in text.lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "pid" => bound.pid = value.parse().ok()?,
                "dns" => bound.dns.push(value.parse().ok()?),
                "dot" => bound.dot.push(value.parse().ok()?),
                "doh" => bound.doh.push(value.parse().ok()?),
                "doq" => bound.doq.push(value.parse().ok()?),
                "doh3" => bound.doh3.push(value.parse().ok()?),
                "prometheus" => bound.prometheus = Some(value.parse().ok()?),
                "control" => bound.control = Some(PathBuf::from(value)),
                _ => {}
            }
        }
        Some(bound)
    }
}

/// `--ready-file PATH`, for `bulwark serve` arguments; a file left at `path`
/// by an earlier run is removed first, so it cannot pass for this one.
pub fn ready_file_args(path: &Path) -> [String; 2] {
    let _ = fs::remove_file(path);
    ["--ready-file".to_string(), path.display().to_string()]
}

/// Waits until `process` has written a complete ready file at `path` that
/// names its PID, and returns what it bound. Fails the test with the log if
/// the process exits first or [`STARTUP_DEADLINE`] passes.
pub fn wait_ready_file(process: &mut ChildGuard, path: &Path) -> Bound {
    let deadline = Instant::now() + STARTUP_DEADLINE;
    loop {
        let bound = fs::read_to_string(path)
            .ok()
            .and_then(|text| Bound::parse(&text))
            .filter(|b| b.pid == process.pid());
        if let Some(bound) = bound {
            return bound;
        }
        assert!(
            Instant::now() < deadline,
            "{} wrote no ready file {} within {STARTUP_DEADLINE:?}; its log:\n{}",
            process.name(),
            path.display(),
            process.log()
        );
        // A pause that ends at once if the process exits.
        if let Some(status) = process.wait_exit(Duration::from_millis(20)) {
            panic!(
                "{} exited with {status} before it was ready; its log:\n{}",
                process.name(),
                process.log()
            );
        }
    }
}

/// Starts `bulwark ARGS` (`serve ...`, typically with a configuration whose
/// listen addresses have port 0) with `--ready-file` in `dir`, logging to
/// `dir/NAME.log`, and returns once it is ready, with the addresses it got.
/// For tests that start bulwark themselves; [`spawn_bulwark`] does it for the
/// common case.
pub fn start_bulwark(
    args: &[String],
    env: &[(&str, &Path)],
    dir: &Path,
    name: &str,
) -> (ChildGuard, Bound) {
    let ready = dir.join(format!("{name}.ready"));
    let mut args = args.to_vec();
    args.extend(ready_file_args(&ready));
    let log = dir.join(format!("{name}.log"));
    let mut process = ChildGuard::spawn_with_env(name, &bulwark_bin(), &args, env, log);
    let bound = wait_ready_file(&mut process, &ready);
    (process, bound)
}

/// Starts knotd (foreground, not a daemon) serving `zones` on a free
/// loopback port, and waits until every zone's SOA is served
/// authoritatively (knotd loads zones in the background after binding).
/// `None` only when knotd is absent outside CI.
pub fn spawn_knotd(zones: &[(&str, &Path)]) -> Option<Server> {
    let knotd = require_tool("knotd")?;
    let probes: Vec<(&str, RecordType)> = zones.iter().map(|z| (z.0, RecordType::SOA)).collect();
    Some(start_server(
        |port| knotd_at(&knotd, zones, port),
        &probes,
        serves_soa,
    ))
}

/// An authoritative, non-empty NOERROR answer: the zone is loaded.
fn serves_soa(a: &Answer) -> bool {
    a.rcode == 0 && a.aa && !a.answer.is_empty()
}

fn knotd_at(knotd: &Path, zones: &[(&str, &Path)], port: u16) -> Server {
    let dir = temp_dir("knotd-test-");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let d = dir.path().display();
    // Knot 3.x syntax (knot.conf(5)). CHAOS identity/version are disabled
    // because bulwark does not answer them; one worker of each kind keeps
    // the 2-core CI machine free for the server under test.
    let mut conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    identity: \"\"\n    \
         version: \"\"\n    nsid: \"\"\n    udp-workers: 1\n    tcp-workers: 1\n    \
         background-workers: 1\n\ndatabase:\n    storage: {d}\n\n\
         log:\n  - target: stderr\n    any: info\n\n\
         template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    \
         zonefile-load: whole\n    journal-content: none\n\nzone:\n"
    );
    for (origin, path) in zones {
        writeln!(conf, "  - domain: {origin}\n    file: {}", path.display()).unwrap();
    }
    let conf_path = dir.path().join("knot.conf");
    fs::write(&conf_path, conf).expect("write knot.conf");
    let args = vec!["-c".to_string(), conf_path.display().to_string()];
    let process = ChildGuard::spawn("knotd", knotd, &args, dir.path().join("knotd.log"));
    Server { process, addr, dir }
}

/// Starts BIND's named in the foreground (-g) serving `zones`, and waits
/// until every zone's SOA is served. `None` only when named is absent
/// outside CI.
pub fn spawn_named(zones: &[(&str, &Path)]) -> Option<Server> {
    let named = require_tool("named")?;
    let probes: Vec<(&str, RecordType)> = zones.iter().map(|z| (z.0, RecordType::SOA)).collect();
    Some(start_server(
        |port| named_at(&named, zones, port),
        &probes,
        serves_soa,
    ))
}

fn named_at(named: &Path, zones: &[(&str, &Path)], port: u16) -> Server {
    let dir = temp_dir("named-test-");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let d = dir.path().display();
    let mut conf = format!(
        "options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  listen-on port {port} {{ 127.0.0.1; }};\n  \
         listen-on-v6 {{ none; }};\n  recursion no;\n  minimal-responses no;\n  \
         version none;\n  hostname none;\n  server-id none;\n}};\ncontrols {{ }};\n"
    );
    for (origin, path) in zones {
        writeln!(
            conf,
            "zone \"{origin}\" {{ type primary; file \"{}\"; }};",
            path.display()
        )
        .unwrap();
    }
    let conf_path = dir.path().join("named.conf");
    fs::write(&conf_path, conf).expect("write named.conf");
    let args = vec![
        "-g".to_string(),
        "-n".to_string(),
        "1".to_string(),
        "-c".to_string(),
        conf_path.display().to_string(),
    ];
    let process = ChildGuard::spawn("named", named, &args, dir.path().join("named.log"));
    Server { process, addr, dir }
}

// ---------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------

/// EDNS(0) parameters of a query (RFC 6891 §6.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdnsSpec {
    pub payload: u16,
    pub dnssec_ok: bool,
    pub version: u8,
}

/// Everything that varies between the test queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuerySpec {
    /// Absolute name, in the exact case to send.
    pub qname: String,
    pub qtype: u16,
    pub qclass: u16,
    /// Raw 4-bit opcode (RFC 1035 §4.1.1), including ones hickory has no name for.
    pub opcode: u8,
    pub rd: bool,
    pub cd: bool,
    pub ad: bool,
    pub edns: Option<EdnsSpec>,
}

impl QuerySpec {
    /// A plain IN query with RD clear and no EDNS.
    pub fn new(qname: &str, qtype: RecordType) -> QuerySpec {
        QuerySpec {
            qname: qname.to_string(),
            qtype: u16::from(qtype),
            qclass: 1,
            opcode: 0,
            rd: false,
            cd: false,
            ad: false,
            edns: None,
        }
    }

    /// The query in wire form with the given message ID.
    pub fn to_wire(&self, id: u16) -> Vec<u8> {
        let name = Name::from_ascii(&self.qname)
            .unwrap_or_else(|e| panic!("bad test name {:?}: {e}", self.qname));
        let mut q = Query::query(name, RecordType::from(self.qtype));
        q.set_query_class(DNSClass::from(self.qclass));
        let mut msg = Message::new();
        msg.set_id(id)
            .set_message_type(MessageType::Query)
            .set_op_code(OpCode::Query)
            .set_recursion_desired(self.rd)
            .set_checking_disabled(self.cd)
            .set_authentic_data(self.ad)
            .add_query(q);
        if let Some(e) = self.edns {
            let mut edns = Edns::new();
            edns.set_max_payload(e.payload)
                .set_dnssec_ok(e.dnssec_ok)
                .set_version(e.version);
            msg.set_edns(edns);
        }
        let mut wire = msg.to_vec().expect("encode query");
        // hickory has no names for some opcodes (IQUERY, unassigned), so the
        // opcode bits (RFC 1035 §4.1.1: bits 1-4 of byte 2) are written here.
        wire[2] = (wire[2] & 0b1000_0111) | ((self.opcode & 0x0f) << 3);
        wire
    }
}

impl std::fmt::Display for QuerySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = match DNSClass::from(self.qclass) {
            DNSClass::Unknown(code) => format!("CLASS{code}"),
            known => known.to_string(),
        };
        write!(
            f,
            "{} {} {class}",
            self.qname,
            type_name(RecordType::from(self.qtype))
        )?;
        if self.opcode != 0 {
            write!(f, " opcode={}", self.opcode)?;
        }
        for (set, flag) in [(self.rd, "rd"), (self.cd, "cd"), (self.ad, "ad")] {
            if set {
                write!(f, " +{flag}")?;
            }
        }
        match self.edns {
            None => write!(f, " noedns"),
            Some(e) => write!(
                f,
                " edns(v{} bufsize={}{})",
                e.version,
                e.payload,
                if e.dnssec_ok { " do" } else { "" }
            ),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// What came back, reduced to the parts the tests compare. Header fields
/// are read from the raw bytes so that even a message hickory refuses to
/// parse (an unknown opcode echoed back, say) can still be compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub id: u16,
    pub qr: bool,
    pub opcode: u8,
    pub aa: bool,
    pub tc: bool,
    pub rd: bool,
    pub ra: bool,
    pub ad: bool,
    pub cd: bool,
    /// Full 12-bit RCODE: header bits plus the OPT extension (RFC 6891 §6.1.3).
    pub rcode: u16,
    /// Section counts from the header: question, answer, authority, additional.
    pub counts: [u16; 4],
    pub has_opt: bool,
    /// The question section exactly as echoed, case included.
    pub question: Vec<String>,
    /// Records as "owner ttl class type rdata", owner lowercased, sorted
    /// (a multiset: a duplicated record shows up).
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    /// Additional section without the OPT pseudo-record.
    pub additional: Vec<String>,
    /// Set when hickory could not parse the message; sections are then empty.
    pub parse_error: Option<String>,
}

impl Answer {
    /// Parses a response; `None` if it is shorter than a DNS header.
    pub fn parse(wire: &[u8]) -> Option<Answer> {
        let header = wire.get(..12)?;
        let b2 = header[2];
        let b3 = header[3];
        let count = |i: usize| u16::from_be_bytes([header[i], header[i + 1]]);
        let mut answer = Answer {
            id: count(0),
            qr: b2 & 0x80 != 0,
            opcode: (b2 >> 3) & 0x0f,
            aa: b2 & 0x04 != 0,
            tc: b2 & 0x02 != 0,
            rd: b2 & 0x01 != 0,
            ra: b3 & 0x80 != 0,
            ad: b3 & 0x20 != 0,
            cd: b3 & 0x10 != 0,
            rcode: u16::from(b3 & 0x0f),
            counts: [count(4), count(6), count(8), count(10)],
            has_opt: false,
            question: Vec::new(),
            answer: Vec::new(),
            authority: Vec::new(),
            additional: Vec::new(),
            parse_error: None,
        };
        match Message::from_vec(wire) {
            Err(e) => answer.parse_error = Some(e.to_string()),
            Ok(msg) => {
                if let Some(edns) = msg.extensions() {
                    answer.has_opt = true;
                    answer.rcode |= u16::from(edns.rcode_high()) << 4;
                }
                answer.question = msg
                    .queries()
                    .iter()
                    .map(|q| {
                        format!(
                            "{} {} {}",
                            q.name().to_ascii(),
                            type_name(q.query_type()),
                            q.query_class()
                        )
                    })
                    .collect();
                answer.answer = render_records(msg.answers());
                answer.authority = render_records(msg.name_servers());
                answer.additional = render_records(
                    msg.additionals()
                        .iter()
                        .filter(|r| r.record_type() != RecordType::OPT),
                );
            }
        }
        Some(answer)
    }

    /// Every record of the answer section whose type is `rtype`, as rdata text.
    pub fn rdata_of(&self, rtype: &str) -> Vec<String> {
        records_of(&self.answer, rtype)
    }

    pub fn rcode_name(&self) -> String {
        rcode_name(self.rcode)
    }
}

/// Whether the answer section holds an RRSIG covering `covered`. hickory
/// renders RRSIG rdata as RFC 3597 hex (`\# LEN 0001...`) when built
/// without its DNSSEC support and as text (`a rsasha256 ...`) when another
/// crate of the workspace turned that on: cargo unifies features over the
/// whole test run, so either may come.
pub fn rrsig_covers(answer: &Answer, covered: RecordType) -> bool {
    let hex = format!("{:04x}", u16::from(covered));
    let text = type_name(covered);
    answer.rdata_of("RRSIG").iter().any(|r| {
        let mut fields = r.split(' ');
        match fields.next() {
            Some("\\#") => fields.nth(1).is_some_and(|f| f.starts_with(&hex)),
            Some(first) => first.eq_ignore_ascii_case(&text),
            None => false,
        }
    })
}

/// The rdata of the records of type `rtype` among rendered records.
pub fn records_of(records: &[String], rtype: &str) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| {
            let mut parts = r.splitn(5, ' ');
            let (_owner, _ttl, _class) = (parts.next()?, parts.next()?, parts.next()?);
            (parts.next()? == rtype).then(|| parts.next().unwrap_or("").to_string())
        })
        .collect()
}

pub fn rcode_name(rcode: u16) -> String {
    match rcode {
        0 => "NOERROR".into(),
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        3 => "NXDOMAIN".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        6 => "YXDOMAIN".into(),
        7 => "YXRRSET".into(),
        8 => "NXRRSET".into(),
        9 => "NOTAUTH".into(),
        10 => "NOTZONE".into(),
        16 => "BADVERS".into(),
        other => format!("RCODE{other}"),
    }
}

/// Renders records for comparison. Owners are lowercased (RFC 4343: names
/// compare case-insensitively, and servers may echo the question's case).
/// Rdata is lowercased too: a server may legitimately compress a name in
/// rdata against the question's spelling, which changes its case on the wire.
fn render_records<'a>(
    records: impl IntoIterator<Item = &'a hickory_proto::rr::Record>,
) -> Vec<String> {
    let mut out: Vec<String> = records
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {} {} {}",
                r.name().to_ascii().to_ascii_lowercase(),
                r.ttl(),
                r.dns_class(),
                type_name(r.record_type()),
                render_rdata(r)
            )
        })
        .collect();
    out.sort();
    out
}

/// The mnemonic of a type, or RFC 3597's TYPEnnn where hickory has none.
pub fn type_name(rtype: RecordType) -> String {
    match rtype {
        RecordType::Unknown(39) => "DNAME".to_string(),
        RecordType::Unknown(code) => format!("TYPE{code}"),
        known => known.to_string(),
    }
}

/// DNAME's rdata code for rendering; hickory 0.24 has no DNAME type.
const DNAME_CODE: u16 = 39;

fn render_rdata(r: &hickory_proto::rr::Record) -> String {
    use hickory_proto::rr::RData;
    use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
    match r.data() {
        None => String::new(),
        Some(RData::Unknown { code, rdata }) => {
            let bytes = rdata.anything();
            if u16::from(*code) == DNAME_CODE {
                // RFC 6672 §2.5: the target is never compressed, so it reads
                // on its own; a compressed one falls through to hex and shows.
                let mut decoder = BinDecoder::new(bytes);
                if let Ok(target) = Name::read(&mut decoder) {
                    if decoder.is_empty() {
                        return target.to_ascii().to_ascii_lowercase();
                    }
                }
            }
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("\\# {} {hex}", bytes.len())
        }
        // hickory's Display runs TXT strings together; keep the boundaries.
        Some(RData::TXT(txt)) => txt
            .iter()
            .map(|s| format!("{:?}", String::from_utf8_lossy(s)))
            .collect::<Vec<_>>()
            .join(" "),
        Some(data) => data.to_string().to_ascii_lowercase(),
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} opcode={}", self.rcode_name(), self.opcode)?;
        for (set, flag) in [
            (self.qr, "qr"),
            (self.aa, "aa"),
            (self.tc, "tc"),
            (self.rd, "rd"),
            (self.ra, "ra"),
            (self.ad, "ad"),
            (self.cd, "cd"),
        ] {
            if set {
                write!(f, " {flag}")?;
            }
        }
        write!(
            f,
            " counts={:?}{}",
            self.counts,
            if self.has_opt { " opt" } else { "" }
        )?;
        if let Some(e) = &self.parse_error {
            write!(f, " (hickory cannot parse it: {e})")?;
        }
        for (title, records) in [
            ("QUESTION", &self.question),
            ("ANSWER", &self.answer),
            ("AUTHORITY", &self.authority),
            ("ADDITIONAL", &self.additional),
        ] {
            for r in records {
                write!(f, "\n      {title:<10} {r}")?;
            }
        }
        Ok(())
    }
}

/// Sends one query and waits up to `timeout` for the response with the
/// matching ID (stray datagrams are ignored).
pub fn query(
    addr: SocketAddr,
    spec: &QuerySpec,
    transport: Transport,
    timeout: Duration,
) -> io::Result<Answer> {
    let id = next_id();
    let wire = spec.to_wire(id);
    let raw = match transport {
        Transport::Udp => exchange_udp(addr, &wire, id, timeout)?,
        Transport::Tcp => exchange_tcp(addr, &wire, timeout)?,
    };
    Answer::parse(&raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "response shorter than a header"))
}

/// Like [`query`], retrying on timeout up to `attempts` times in all.
pub fn query_retry(
    addr: SocketAddr,
    spec: &QuerySpec,
    transport: Transport,
    timeout: Duration,
    attempts: u32,
) -> io::Result<Answer> {
    let mut last = io::Error::new(io::ErrorKind::TimedOut, "no attempt made");
    for _ in 0..attempts {
        match query(addr, spec, transport, timeout) {
            Ok(a) => return Ok(a),
            Err(e) if is_timeout(&e) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

pub fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

fn next_id() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0x4b1d);
    NEXT.fetch_add(7919, Ordering::Relaxed)
}

/// One UDP exchange from a fresh socket.
/// The client's own ephemeral port is the server's: until the server binds
/// it (the port `free_port` released may be handed straight back), such a
/// socket gets its own query back, which must not pass for an answer.
fn self_connected() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "the client socket got the server's port: not listening yet",
    )
}

pub fn exchange_udp(
    addr: SocketAddr,
    wire: &[u8],
    id: u16,
    timeout: Duration,
) -> io::Result<Vec<u8>> {
    let bind: SocketAddr = if addr.is_ipv4() {
        ([127, 0, 0, 1], 0).into()
    } else {
        (std::net::Ipv6Addr::LOCALHOST, 0).into()
    };
    let sock = UdpSocket::bind(bind)?;
    if sock.local_addr()? == addr {
        return Err(self_connected());
    }
    sock.connect(addr)?;
    sock.send(wire)?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 65535];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no UDP response"));
        }
        sock.set_read_timeout(Some(left))?;
        match sock.recv(&mut buf) {
            Ok(n) => {
                let got = &buf[..n];
                if got.len() >= 2 && u16::from_be_bytes([got[0], got[1]]) == id {
                    return Ok(got.to_vec());
                }
            }
            // A connected UDP socket reports ICMP port-unreachable as
            // ConnectionRefused: the server is not (yet) listening.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "UDP port unreachable",
                ))
            }
            Err(e) if is_timeout(&e) => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no UDP response"))
            }
            Err(e) => return Err(e),
        }
    }
}

/// One TCP exchange on a fresh connection (RFC 1035 §4.2.2 length prefix).
pub fn exchange_tcp(addr: SocketAddr, wire: &[u8], timeout: Duration) -> io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    // TCP simultaneous open lets a socket connect to itself (RFC 793 §3.4).
    if stream.local_addr()? == addr {
        return Err(self_connected());
    }
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&bulwark_testkit::wire::framed(wire))?;
    bulwark_testkit::wire::read_framed(&mut stream)
}

/// Runs an external client (dig, kdig) and returns its stdout, failing the
/// test with its stderr if it exits non-zero.
/// A self-signed certificate for `localhost` (its own CA), written to
/// `dir` as `cert.pem` and `key.pem`, whose paths are returned.
pub fn write_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    fs::write(&cert, made.cert.pem()).unwrap();
    fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

/// A dnstap file as `bulwark dnstap read --format yaml` prints it, which
/// names every `socket_protocol` (dnstap-ldns's schema predates DOT, DOH
/// and DOQ).
pub fn dnstap_yaml(tap: &Path) -> String {
    run_tool(
        &bulwark_bin(),
        &[
            "dnstap".to_string(),
            "read".to_string(),
            "--format".to_string(),
            "yaml".to_string(),
            tap.display().to_string(),
        ],
    )
}

pub fn run_tool(program: &Path, args: &[String]) -> String {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {} failed ({}):\n{}\n{}",
        program.display(),
        args.join(" "),
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

// ---------------------------------------------------------------------------
// DNSSEC zone verifiers
// ---------------------------------------------------------------------------

/// ldns-verify-zone and BIND's dnssec-verify: the signed-zone checkers
/// no one here wrote.
pub struct ZoneVerifiers {
    ldns: PathBuf,
    bind: PathBuf,
}

/// Exit status and output of a program.
fn status_and_output(program: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run verifier");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

impl ZoneVerifiers {
    /// `None` (after saying why) when a verifier is missing outside CI.
    pub fn find() -> Option<ZoneVerifiers> {
        Some(ZoneVerifiers {
            ldns: require_tool("ldns-verify-zone")?,
            bind: require_tool("dnssec-verify")?,
        })
    }

    /// Both verifiers' verdicts on `signed`, the zone `origin`; `csk` tells
    /// dnssec-verify to ignore the KSK flag, as when one key signs everything.
    pub fn check(&self, signed: &Path, origin: &str, csk: bool) -> [(bool, String); 2] {
        let file = signed.to_str().unwrap();
        let mut bind_args = vec!["-o", origin];
        if csk {
            bind_args.push("-z");
        }
        bind_args.push(file);
        [
            status_and_output(&self.ldns, &[file]),
            status_and_output(&self.bind, &bind_args),
        ]
    }

    pub fn assert_valid(&self, signed: &Path, origin: &str, csk: bool, what: &str) {
        for (ok, output) in self.check(signed, origin, csk) {
            assert!(
                ok,
                "{what}: a verifier rejected {}:\n{output}",
                signed.display()
            );
        }
    }
}

/// The first Extended DNS Error (RFC 8914) of a raw response: its info
/// code and its extra text.
pub fn extended_error(raw: &[u8]) -> Option<(u16, String)> {
    let view = bulwark_proto::message::MessageView::parse(raw).ok()?;
    let edns = view.edns()?;
    let opts = edns.option_bytes();
    let mut at = 0;
    while at + 4 <= opts.len() {
        let code = u16::from_be_bytes([opts[at], opts[at + 1]]);
        let len = usize::from(u16::from_be_bytes([opts[at + 2], opts[at + 3]]));
        let value = opts.get(at + 4..at + 4 + len)?;
        if code == bulwark_proto::message::OPTION_EDE && len >= 2 {
            let info = u16::from_be_bytes([value[0], value[1]]);
            return Some((info, String::from_utf8_lossy(&value[2..]).into_owned()));
        }
        at += 4 + len;
    }
    None
}

/// The Prometheus text a server's `[prometheus]` listener serves.
pub fn scrape_metrics(addr: SocketAddr) -> String {
    use std::io::Read;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    body
}

/// The value of the unlabelled sample `name` in Prometheus text.
pub fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}
