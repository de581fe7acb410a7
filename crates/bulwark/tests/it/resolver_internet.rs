//! Differential test of the resolver: bulwark and Unbound, both iterating
//! from the same root hints over the same simulated internet, must give the
//! same answer to every question.
//!
//! The internet comes from `bench/lib/siminet.py` (the benchmark's
//! generator): a root, TLDs, hosting providers and second-level zones, most
//! delegated with glue, a share of them glueless to the hosters' name
//! servers (which a resolver must resolve first), CNAME chains across zones,
//! a few dangling ones, names below empty non-terminals, TXT sets too big
//! for UDP and a few name servers that never answer. knotd and NSD serve it
//! on addresses of 127.0.0.0/8 inside a private network namespace
//! (`bulwark_testkit::netns`), so nothing touches the machine's network and
//! every server can have port 53.
//!
//! Asked of both resolvers: every name and type that has data
//! (`names.txt`), plus names that do not exist under existing zones and
//! TLDs, names under TLDs that do not exist, types a name does not have and
//! the empty non-terminals, all in one seeded order on cold caches, then
//! all again in another order, answered mostly from the caches (a cached
//! CNAME met before and after its target). Compared: the RCODE
//! and the answer section as a set of owner/type/rdata (owner and rdata
//! lowercased; TTLs differ with the moment each resolver cached a record),
//! which for a CNAME chain is the whole chain. Unbound is the oracle: each
//! name with data must resolve there to NOERROR with records, or the
//! harness, not bulwark, is broken.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support::{self, Answer, ChildGuard, EdnsSpec, QuerySpec, Transport};

/// The size of the internet: small enough for CI's two cores, big enough for
/// every kind of delegation. NSD serves a third of the zones; one glued zone
/// in twenty has a third name server nobody answers on, which costs each
/// resolver a time-out or two.
const SIMINET_ARGS: [&str; 16] = [
    "--tlds",
    "5",
    "--zones",
    "300",
    "--hosters",
    "16",
    "--addresses",
    "64",
    "--servers",
    "knot,knot,nsd",
    "--names-per-zone",
    "3",
    "--seed",
    "1",
    "--unreachable-share",
    "0.05",
];

/// Where the resolvers under test listen (outside the servers' addresses,
/// which siminet keeps out of 127.0.0.0/24).
const BULWARK_ADDR: &str = "127.0.0.2:53";
const UNBOUND_ADDR: &str = "127.0.0.3:53";

/// Seed of the questions added to `names.txt` and of their order.
const QUESTION_SEED: u64 = 0x0005_eed0_fd15;
/// Questions in flight at once (each to both resolvers in turn).
const PARALLEL: usize = 8;
/// How long a resolver gets for one question (a cold resolution walks from
/// the root and may resolve name servers' names first).
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Differences printed in full when the test fails.
const SHOW: usize = 40;

#[test]
fn bulwark_resolves_like_unbound() {
    let Some(tools) = Tools::find() else { return };
    let dir = support::temp_dir("siminet-");
    let net = SimInternet::generate(&tools.python, dir.path());
    bulwark_testkit::netns::isolated_or_skip(|| compare(&tools, &net));
}

// ---------------------------------------------------------------------------
// The peers
// ---------------------------------------------------------------------------

struct Tools {
    python: PathBuf,
    knotd: PathBuf,
    nsd: PathBuf,
    unbound: PathBuf,
}

impl Tools {
    /// `None` (after saying why) when a peer is missing outside CI.
    fn find() -> Option<Tools> {
        Some(Tools {
            python: support::require_tool("python3")?,
            knotd: support::require_tool("knotd")?,
            nsd: support::require_tool("nsd")?,
            unbound: support::require_tool("unbound")?,
        })
    }
}

/// `bench/lib/siminet.py`, shared with the resolver benchmark.
fn siminet_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/lib/siminet.py")
}

// ---------------------------------------------------------------------------
// The simulated internet, as siminet.py wrote it
// ---------------------------------------------------------------------------

/// One authoritative server process: `knot` or `nsd`, and its configuration.
struct ServerSpec {
    kind: String,
    conf: PathBuf,
}

/// One zone: its origin, the index of the server process serving it, and an
/// address it is served on.
struct ZoneSpec {
    origin: String,
    server: usize,
    address: IpAddr,
}

struct SimInternet {
    dir: PathBuf,
    servers: Vec<ServerSpec>,
    zones: Vec<ZoneSpec>,
    addresses: Vec<IpAddr>,
    root_hints: Vec<IpAddr>,
    /// Every name and type with data, in the generator's (seeded) order.
    names: Vec<(String, String)>,
}

impl SimInternet {
    /// Runs siminet.py into `dir` and reads what it wrote.
    fn generate(python: &Path, dir: &Path) -> SimInternet {
        let out = Command::new(python)
            .arg(siminet_script())
            .arg("--out")
            .arg(dir)
            .args(SIMINET_ARGS)
            .stdin(Stdio::null())
            .output()
            .expect("run siminet.py");
        assert!(
            out.status.success(),
            "siminet.py failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        SimInternet::read(dir)
    }

    fn read(dir: &Path) -> SimInternet {
        let lines = |name: &str| -> Vec<Vec<String>> {
            let path = dir.join(name);
            fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(str::to_string).collect())
                .collect()
        };
        let ip = |text: &str| -> IpAddr {
            text.parse()
                .unwrap_or_else(|e| panic!("siminet wrote a bad address {text:?}: {e}"))
        };
        let servers = lines("servers.txt")
            .into_iter()
            .map(|f| ServerSpec {
                kind: f[0].clone(),
                conf: PathBuf::from(&f[1]),
            })
            .collect();
        let zones = lines("zones.txt")
            .into_iter()
            .map(|f| ZoneSpec {
                origin: f[0].clone(),
                server: f[1].parse().expect("server index"),
                address: ip(&f[2]),
            })
            .collect();
        let addresses = lines("addresses.txt").iter().map(|f| ip(&f[0])).collect();
        let root_hints = lines("root-hints.txt").iter().map(|f| ip(&f[0])).collect();
        let names = lines("names.txt")
            .into_iter()
            .map(|f| (f[0].clone(), f[1].clone()))
            .collect();
        SimInternet {
            dir: dir.to_path_buf(),
            servers,
            zones,
            addresses,
            root_hints,
            names,
        }
    }
}

// ---------------------------------------------------------------------------
// Authoritative servers: start from a configuration, wait until they serve
// ---------------------------------------------------------------------------

/// Starts one authoritative server in the foreground from its configuration
/// (`knotd -c CONF`, `nsd -d -c CONF`), logging its output to `log`. It is
/// killed by PID when the guard drops.
fn start_authoritative(tools: &Tools, kind: &str, conf: &Path, log: PathBuf) -> ChildGuard {
    let conf = conf.display().to_string();
    match kind {
        "knot" => ChildGuard::spawn("knotd", &tools.knotd, &["-c".to_string(), conf], log),
        "nsd" => ChildGuard::spawn(
            "nsd",
            &tools.nsd,
            &["-d".to_string(), "-c".to_string(), conf],
            log,
        ),
        other => panic!("siminet wrote an unknown server kind {other:?}"),
    }
}

/// An authoritative, non-empty NOERROR answer: the zone is loaded.
fn serves_zone(answer: &Answer) -> bool {
    answer.rcode == 0 && answer.aa && !answer.answer.is_empty()
}

/// Polls every zone's SOA at its server until each is served, failing the
/// test (with the servers' logs) if a server exits or the deadline passes.
/// knotd loads zones in the background after binding, so answering one
/// query says nothing about the rest.
fn wait_until_served(zones: &[ZoneSpec], servers: &mut [ChildGuard], run_logs: &[PathBuf]) {
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let mut pending: Vec<&ZoneSpec> = zones.iter().collect();
    let mut last = String::new();
    while !pending.is_empty() {
        for (server, run_log) in servers.iter_mut().zip(run_logs) {
            if let Some(status) = server.exited() {
                panic!(
                    "{} exited with {status} before serving its zones; its output:\n{}\n{}",
                    server.name(),
                    server.log(),
                    fs::read_to_string(run_log).unwrap_or_default()
                );
            }
        }
        pending.retain(|zone| {
            let spec = QuerySpec::new(&zone.origin, RecordType::SOA);
            let addr = SocketAddr::new(zone.address, 53);
            match support::query(addr, &spec, Transport::Udp, Duration::from_millis(200)) {
                Ok(answer) if serves_zone(&answer) => false,
                Ok(answer) => {
                    last = format!(
                        "{} (server-{}) at {addr}: {answer}",
                        zone.origin, zone.server
                    );
                    true
                }
                Err(e) => {
                    last = format!("{} (server-{}) at {addr}: {e}", zone.origin, zone.server);
                    true
                }
            }
        });
        if pending.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} zones not served within {:?}, e.g. {last}",
            pending.len(),
            support::STARTUP_DEADLINE
        );
        // A pause that ends at once if the first server exits.
        let _ = servers[0].wait_exit(Duration::from_millis(50));
    }
}

/// Polls `addr` until it gives any response at all (REFUSED counts).
fn wait_answers(process: &mut ChildGuard, addr: SocketAddr) {
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let spec = QuerySpec::new("localhost.", RecordType::A);
    loop {
        if let Some(status) = process.exited() {
            panic!(
                "{} exited with {status}; its log:\n{}",
                process.name(),
                process.log()
            );
        }
        if support::query(addr, &spec, Transport::Udp, Duration::from_millis(100)).is_ok() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} does not answer on {addr}; its log:\n{}",
            process.name(),
            process.log()
        );
    }
}

// ---------------------------------------------------------------------------
// The resolvers under test
// ---------------------------------------------------------------------------

fn start_bulwark(net: &SimInternet, dir: &Path) -> (ChildGuard, SocketAddr) {
    let hints: Vec<String> = net.root_hints.iter().map(|a| format!("\"{a}\"")).collect();
    // The servers are on 127.0.0.0/8, which a resolver refuses to ask by
    // default: query_localhost lets it. The UDP workers are tasks on the
    // runtime here (the other resolver tests run them as threads): this
    // test's thousands of questions over real sockets are the check that
    // they answer alike.
    let conf = format!(
        "[server]\nlisten = [\"{BULWARK_ADDR}\"]\nudp_workers = \"runtime\"\n\n[resolver]\nroot_hints = [{}]\ndnssec_validation = false\n\
         allow_recursion = [\"127.0.0.0/8\"]\nquery_localhost = true\n",
        hints.join(", ")
    );
    let path = dir.join("bulwark.toml");
    fs::write(&path, conf).expect("write bulwark.toml");
    let args = vec![
        "serve".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let (mut process, bound) = support::start_bulwark(&args, &[], dir, "bulwark");
    let addr = bound.dns[0];
    wait_answers(&mut process, addr);
    (process, addr)
}

fn start_unbound(tools: &Tools, net: &SimInternet, dir: &Path) -> (ChildGuard, SocketAddr) {
    let addr: SocketAddr = UNBOUND_ADDR.parse().unwrap();
    let d = dir.display();
    // Iterator only: the zones are unsigned. IPv6 off: no server has an
    // IPv6 address. Loopback servers allowed: they are all there.
    let conf = format!(
        "server:\n    interface: {ip}\n    port: {port}\n    access-control: 127.0.0.0/8 allow\n    \
         do-not-query-localhost: no\n    do-ip6: no\n    root-hints: {hints}\n    \
         num-threads: 1\n    chroot: \"\"\n    username: \"\"\n    directory: {d}\n    \
         pidfile: {d}/unbound.pid\n    use-syslog: no\n    logfile: \"\"\n    verbosity: 1\n    \
         module-config: \"iterator\"\n    qname-minimisation: yes\n\n\
         remote-control:\n    control-enable: no\n",
        ip = addr.ip(),
        port = addr.port(),
        hints = net.dir.join("root.hints").display(),
    );
    let path = dir.join("unbound.conf");
    fs::write(&path, conf).expect("write unbound.conf");
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let mut process = ChildGuard::spawn("unbound", &tools.unbound, &args, dir.join("unbound.log"));
    wait_answers(&mut process, addr);
    (process, addr)
}

// ---------------------------------------------------------------------------
// The questions
// ---------------------------------------------------------------------------

/// Why a question is asked, for the report and the oracle's sanity check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A name and type with data (`names.txt`).
    Data,
    /// A name below an existing zone or TLD that does not exist.
    NoName,
    /// A name under a TLD that does not exist.
    NoTld,
    /// An existing name (or an empty non-terminal) without the type.
    NoData,
}

struct Question {
    qname: String,
    qtype: String,
    kind: Kind,
}

/// xorshift64*: a few random numbers, seeded, without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Types asked of names that lack them.
const OTHER_TYPES: [&str; 9] = ["A", "AAAA", "MX", "TXT", "SRV", "NS", "SOA", "CAA", "PTR"];

/// names.txt plus the negative questions, in one seeded order.
fn questions(net: &SimInternet) -> Vec<Question> {
    let mut rng = Rng(QUESTION_SEED);
    let mut out: Vec<Question> = net
        .names
        .iter()
        .map(|(n, t)| Question {
            qname: n.clone(),
            qtype: t.clone(),
            kind: Kind::Data,
        })
        .collect();
    let mut have: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (n, t) in &net.names {
        have.entry(n).or_default().insert(t);
    }
    let child = |label: String, zone: &str| {
        if zone == "." {
            format!("{label}.")
        } else {
            format!("{label}.{zone}")
        }
    };
    let zones: Vec<&str> = net.zones.iter().map(|z| z.origin.as_str()).collect();
    let tlds: Vec<&str> = zones
        .iter()
        .copied()
        .filter(|z| z.matches('.').count() == 1 && *z != ".")
        .collect();
    let mut push = |qname: String, qtype: &str, kind: Kind| {
        out.push(Question {
            qname,
            qtype: qtype.to_string(),
            kind,
        });
    };
    for _ in 0..200 {
        let zone = rng.pick(&zones);
        push(
            child(format!("nx{}", rng.next() % 1_000_000_000), zone),
            "A",
            Kind::NoName,
        );
    }
    for _ in 0..60 {
        let zone = rng.pick(&zones);
        let qtype = rng.pick(&OTHER_TYPES[..4]);
        let label = format!("a.b.nx{}", rng.next() % 1_000_000_000);
        push(child(label, zone), qtype, Kind::NoName);
    }
    for _ in 0..40 {
        let tld = rng.pick(&tlds);
        push(
            child(format!("nx{}", rng.next() % 1_000_000_000), tld),
            "A",
            Kind::NoName,
        );
    }
    for _ in 0..40 {
        let label = format!("www.nosuch{}", rng.next() % 1_000_000);
        push(child(label, "."), "A", Kind::NoTld);
        let label = format!("nosuch{}", rng.next() % 1_000_000);
        push(
            child(label, "."),
            rng.pick(&["NS", "A", "SOA"]),
            Kind::NoTld,
        );
    }
    let owners: Vec<(&str, &BTreeSet<&str>)> = have.iter().map(|(n, t)| (*n, t)).collect();
    for _ in 0..200 {
        let (name, types) = rng.pick(&owners);
        let missing: Vec<&str> = OTHER_TYPES
            .iter()
            .copied()
            .filter(|t| !types.contains(t))
            .collect();
        push(name.to_string(), rng.pick(&missing), Kind::NoData);
    }
    // The empty non-terminals above the names one level down (dept.zoneN.).
    let ents: BTreeSet<&str> = have
        .keys()
        .filter(|n| n.contains(".dept."))
        .filter_map(|n| n.split_once('.').map(|(_, parent)| parent))
        .collect();
    for ent in ents {
        push(ent.to_string(), "A", Kind::NoData);
    }
    // Fisher-Yates: negative questions mixed with cold and warm caches.
    for i in (1..out.len()).rev() {
        let j = rng.below(i + 1);
        out.swap(i, j);
    }
    out
}

// ---------------------------------------------------------------------------
// Asking and comparing
// ---------------------------------------------------------------------------

/// What a resolver said, reduced to what is compared: the RCODE and the
/// answer section as a set of "owner type rdata", or why it said nothing.
type Outcome = Result<(String, BTreeSet<String>), String>;

fn ask(addr: SocketAddr, qname: &str, qtype: &str) -> Outcome {
    let rtype = RecordType::from_str(qtype).map_err(|e| format!("bad type {qtype}: {e}"))?;
    let mut spec = QuerySpec::new(qname, rtype);
    spec.rd = true;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: false,
        version: 0,
    });
    let mut answer = support::query_retry(addr, &spec, Transport::Udp, QUERY_TIMEOUT, 2)
        .map_err(|e| format!("no answer over UDP: {e}"))?;
    if answer.tc {
        answer = support::query(addr, &spec, Transport::Tcp, QUERY_TIMEOUT)
            .map_err(|e| format!("no answer over TCP after TC: {e}"))?;
    }
    if let Some(e) = &answer.parse_error {
        return Err(format!("unparsable response: {e}"));
    }
    let records = answer
        .answer
        .iter()
        .map(|r| {
            // "owner ttl class type rdata": the TTL and class go.
            let f: Vec<&str> = r.splitn(5, ' ').collect();
            format!("{} {} {}", f[0], f[3], f.get(4).unwrap_or(&""))
        })
        .collect();
    Ok((answer.rcode_name(), records))
}

fn show(outcome: &Outcome) -> String {
    match outcome {
        Err(e) => format!("({e})"),
        Ok((rcode, records)) if records.is_empty() => format!("{rcode}, no answer records"),
        Ok((rcode, records)) => {
            let mut s = rcode.clone();
            for r in records {
                write!(s, "\n      {r}").unwrap();
            }
            s
        }
    }
}

struct Compared {
    question: usize,
    /// 1: the first time it is asked; 2: again, after every question had
    /// been asked once (answered from the caches, mostly).
    pass: u8,
    bulwark: Outcome,
    unbound: Outcome,
}

/// Asks the questions of both resolvers in `order`, `PARALLEL` at a time.
fn ask_both(
    questions: &[Question],
    order: &[usize],
    pass: u8,
    bulwark: SocketAddr,
    unbound: SocketAddr,
) -> Vec<Compared> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(order.len()));
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let q = &questions[i];
                    let b = ask(bulwark, &q.qname, &q.qtype);
                    let u = ask(unbound, &q.qname, &q.qtype);
                    results.lock().unwrap().push(Compared {
                        question: i,
                        pass,
                        bulwark: b,
                        unbound: u,
                    });
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|c| c.question);
    results
}

/// Whether the oracle answered as the internet's data says it must: a name
/// with data resolves to NOERROR with records, a name that does not exist
/// to NXDOMAIN, a missing type to NOERROR.
fn oracle_agrees_with_data(q: &Question, unbound: &Outcome) -> bool {
    match (q.kind, unbound) {
        (Kind::Data, Ok((rcode, records))) => rcode == "NOERROR" && !records.is_empty(),
        (Kind::NoName | Kind::NoTld, Ok((rcode, _))) => rcode == "NXDOMAIN",
        (Kind::NoData, Ok((rcode, _))) => rcode == "NOERROR" || rcode == "NXDOMAIN",
        (_, Err(_)) => false,
    }
}

fn compare(tools: &Tools, net: &SimInternet) {
    let started = Instant::now();
    for address in &net.addresses {
        bulwark_testkit::netns::add_address(*address).expect("add an address to lo");
    }
    let mut servers = Vec::new();
    let mut run_logs = Vec::new();
    for (i, server) in net.servers.iter().enumerate() {
        let run = net.dir.join(format!("run-{i}"));
        servers.push(start_authoritative(
            tools,
            &server.kind,
            &server.conf,
            run.join("output.log"),
        ));
        run_logs.push(run.join("nsd.log"));
    }
    wait_until_served(&net.zones, &mut servers, &run_logs);
    let served = started.elapsed();

    let scratch = support::temp_dir("resolvers-");
    let (_bulwark, bulwark_addr) = start_bulwark(net, scratch.path());
    let (_unbound, unbound_addr) = start_unbound(tools, net, scratch.path());

    let questions = questions(net);
    let first: Vec<usize> = (0..questions.len()).collect();
    // The second pass in another order, so that a cached CNAME is met both
    // before and after its target.
    let mut second = first.clone();
    let mut rng = Rng(QUESTION_SEED ^ 2);
    for i in (1..second.len()).rev() {
        second.swap(i, rng.below(i + 1));
    }
    let asked = Instant::now();
    let mut results = ask_both(&questions, &first, 1, bulwark_addr, unbound_addr);
    let cold = asked.elapsed();
    results.extend(ask_both(&questions, &second, 2, bulwark_addr, unbound_addr));
    let warm = asked.elapsed() - cold;

    let mut per_kind: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut differences = Vec::new();
    let mut oracle_wrong = Vec::new();
    for c in &results {
        let q = &questions[c.question];
        if c.pass == 1 {
            *per_kind.entry(q.kind).or_default() += 1;
        }
        if !oracle_agrees_with_data(q, &c.unbound) {
            oracle_wrong.push(format!(
                "{} {} ({:?}, pass {}): {}",
                q.qname,
                q.qtype,
                q.kind,
                c.pass,
                show(&c.unbound)
            ));
        }
        let same = matches!((&c.bulwark, &c.unbound), (Ok(b), Ok(u)) if b == u);
        if !same {
            differences.push(c);
        }
    }
    println!(
        "resolver_internet: {} zones on {} server processes, served after {served:.1?}; \
         {} questions ({per_kind:?}) compared twice, cold in {cold:.1?}, warm in {warm:.1?}; \
         {} differences; {:.1?} in all",
        net.zones.len(),
        net.servers.len(),
        questions.len(),
        differences.len(),
        started.elapsed()
    );
    assert!(
        oracle_wrong.is_empty(),
        "Unbound does not resolve the simulated internet as its data says ({} questions): \
         the harness is broken, not bulwark. First ones:\n{}",
        oracle_wrong.len(),
        oracle_wrong
            .iter()
            .take(SHOW)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    if !differences.is_empty() {
        let mut report = format!(
            "bulwark and Unbound differ on {} of {} answers (the same internet: \
             python3 bench/lib/siminet.py --out DIR {}); first {}:\n",
            differences.len(),
            results.len(),
            SIMINET_ARGS.join(" "),
            SHOW.min(differences.len())
        );
        for (n, c) in differences.iter().take(SHOW).enumerate() {
            let q = &questions[c.question];
            write!(
                report,
                "#{} {} {} ({:?}, pass {})\n   bulwark: {}\n   unbound: {}\n",
                n + 1,
                q.qname,
                q.qtype,
                q.kind,
                c.pass,
                show(&c.bulwark),
                show(&c.unbound)
            )
            .unwrap();
        }
        panic!("{report}");
    }
}
