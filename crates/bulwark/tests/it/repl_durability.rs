#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! "kill -9 at any moment loses nothing that was acknowledged": a primary
//! takes a stream of dynamic updates (RFC 2136) from two concurrent
//! clients and is SIGKILLed while updates are in flight, round after round.
//! Every update whose NOERROR arrived must be served after each restart, and
//! must be in the zone file the server writes back when it stops cleanly.
//! An update whose response never came may or may not have been applied.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bulwark_testkit::wire::name as wire_name;
use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{ChildGuard, QuerySpec, Transport};

const ORIGIN: &str = "example.com.";
/// The zone file's serial before any update.
const INITIAL_SERIAL: u32 = 1;
/// Kill-and-restart rounds per test.
const ROUNDS: u32 = 8;
/// Updates each round may send at most: bounds the test's run time.
const UPDATES_PER_ROUND: u32 = 60;
/// Clients sending updates at once, so that several are in flight (and
/// queued behind the zone's lock) when the kill lands.
const SENDERS: usize = 2;
/// How long one update may wait for its response before it counts as
/// unacknowledged.
const UPDATE_WAIT: Duration = Duration::from_secs(5);
/// How long a round may take to reach its kill point.
const ROUND_DEADLINE: Duration = Duration::from_secs(30);

/// A random number below `bound` (the test needs no reproducible stream:
/// the seed is printed, and what matters is that kill points vary).
fn random_below(seed: &mut u64, bound: u32) -> u32 {
    // xorshift64*: enough to spread kill points.
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    let x = seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    u32::try_from(x >> 32).unwrap() % bound.max(1)
}

fn fresh_seed() -> u64 {
    RandomState::new().hash_one(Instant::now()) | 1
}

/// The address update `n` adds to `r<n>.example.com.`.
fn address_of(n: u32) -> [u8; 4] {
    let [_, _, hi, lo] = n.to_be_bytes();
    [10, 0, hi, lo]
}

fn address_text(n: u32) -> String {
    let a = address_of(n);
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// RFC 2136 §2: an UPDATE for `example.com.` (zone section: the apex, SOA,
/// IN) with no prerequisites, adding `r<n>.example.com. 300 IN A 10.0.x.y`.
/// Written byte by byte so the message does not depend on bulwark's code.
fn update_message(id: u16, n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    // QR=0, OPCODE=5 (UPDATE), all other flags clear.
    m.extend_from_slice(&[5 << 3, 0]);
    // ZOCOUNT=1, PRCOUNT=0, UPCOUNT=1, ADCOUNT=0.
    m.extend_from_slice(&[0, 1, 0, 0, 0, 1, 0, 0]);
    m.extend_from_slice(&wire_name(ORIGIN));
    m.extend_from_slice(&[0, 6, 0, 1]); // SOA, IN
    m.extend_from_slice(&wire_name(&format!("r{n}.{ORIGIN}")));
    m.extend_from_slice(&[0, 1, 0, 1]); // A, IN
    m.extend_from_slice(&300u32.to_be_bytes());
    m.extend_from_slice(&[0, 4]);
    m.extend_from_slice(&address_of(n));
    m
}

/// What became of one update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// A NOERROR response to it arrived.
    Acknowledged,
    /// Sent (or maybe sent), but no NOERROR came back.
    Unacknowledged,
    /// The connection was refused: the server is down.
    Refused,
}

/// Sends update `n` over a fresh TCP connection.
fn send_update(addr: SocketAddr, n: u32) -> Sent {
    // Distinct IDs per update; the connection is the update's own anyway.
    let id = u16::try_from(n % 0xffff).unwrap();
    let response = match support::exchange_tcp(addr, &update_message(id, n), UPDATE_WAIT) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Sent::Refused,
        Err(_) => return Sent::Unacknowledged,
    };
    match support::Answer::parse(&response) {
        // A response to this update (ID, QR, opcode UPDATE) saying NOERROR.
        Some(a) if a.id == id && a.qr && a.opcode == 5 && a.rcode == 0 => Sent::Acknowledged,
        _ => Sent::Unacknowledged,
    }
}

/// What every round shares with its senders.
struct Stream {
    addr: SocketAddr,
    /// The next update number to send.
    next: AtomicU32,
    /// No number at or past this is sent this round.
    limit: AtomicU32,
    /// Set once the server is killed: senders stop.
    stop: AtomicBool,
    state: Mutex<StreamState>,
    changed: Condvar,
}

#[derive(Default)]
struct StreamState {
    /// Every update acknowledged with NOERROR, over all rounds.
    acked: BTreeSet<u32>,
    /// Updates sent (at least in part) whose NOERROR never came.
    unacked: BTreeSet<u32>,
    acked_this_round: u32,
    senders_done: usize,
}

impl Stream {
    fn run_sender(&self) {
        while !self.stop.load(Ordering::SeqCst) {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            if n >= self.limit.load(Ordering::SeqCst) {
                break;
            }
            match send_update(self.addr, n) {
                Sent::Acknowledged => {
                    let mut s = self.state.lock().unwrap();
                    s.acked.insert(n);
                    s.acked_this_round += 1;
                    self.changed.notify_all();
                }
                Sent::Unacknowledged => {
                    self.state.lock().unwrap().unacked.insert(n);
                }
                // The kill landed; whatever this sender would send next
                // could not reach the server anyway.
                Sent::Refused => break,
            }
        }
        let mut s = self.state.lock().unwrap();
        s.senders_done += 1;
        self.changed.notify_all();
    }
}

/// The primary's files: configuration, zone file, storage, logs.
struct Primary {
    dir: tempfile::TempDir,
    addr: SocketAddr,
    config: PathBuf,
    zone_file: PathBuf,
    /// Every log written so far, one per start, for failure messages.
    logs: Vec<PathBuf>,
    /// The zone's `zonefile_sync`, for rewriting the configuration.
    zonefile_sync: String,
}

impl Primary {
    fn new(zonefile_sync: &str) -> Primary {
        let dir = support::temp_dir("bulwark-durability-");
        let zone_file = dir.path().join("example.com.zone");
        std::fs::write(
            &zone_file,
            format!(
                "$ORIGIN {ORIGIN}\n$TTL 300\n@ IN SOA ns1 hostmaster {INITIAL_SERIAL} 3600 900 604800 300\n  IN NS ns1\nns1 IN A 192.0.2.1\n"
            ),
        )
        .unwrap();
        let config = dir.path().join("bulwark.toml");
        let primary = Primary {
            dir,
            // Port 0 until the first start reports the port it got.
            addr: ([127, 0, 0, 1], 0).into(),
            config,
            zone_file,
            logs: Vec::new(),
            zonefile_sync: zonefile_sync.to_string(),
        };
        primary.write_config();
        primary
    }

    /// Updates from loopback need no key: what is tested is durability,
    /// not authorisation. One thread, as the CI machine has two cores.
    fn write_config(&self) {
        let (addr, zonefile_sync) = (self.addr, &self.zonefile_sync);
        std::fs::write(
            &self.config,
            format!(
                "[server]\nlisten = [\"{addr}\"]\nthreads = 1\nstorage = \"bulwark.db\"\n\n\
                 [acl.loopback]\nallow = [\"127.0.0.0/8\"]\n\n\
                 [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"example.com.zone\"\n\
                 allow_update = [\"loopback\"]\nallow_transfer = [\"loopback\"]\n\
                 zonefile_sync = {zonefile_sync}\n"
            ),
        )
        .unwrap();
    }

    /// Starts the server on its configuration and waits until it answers the
    /// zone's SOA authoritatively. The first start binds port 0 and the port
    /// it got goes into the configuration: the update senders keep sending
    /// to it, so every restart comes back on that port.
    fn start(&mut self) -> ChildGuard {
        let name = format!("bulwark-{}", self.logs.len());
        self.logs.push(self.dir.path().join(format!("{name}.log")));
        let args = vec![
            "serve".to_string(),
            "--config".to_string(),
            self.config.display().to_string(),
        ];
        let (mut process, bound) = support::start_bulwark(&args, &[], self.dir.path(), &name);
        if self.addr.port() == 0 {
            self.addr = bound.dns[0];
            self.write_config();
        }
        assert_eq!(bound.dns, [self.addr], "{}", self.logs());
        let deadline = Instant::now() + support::STARTUP_DEADLINE;
        let spec = QuerySpec::new(ORIGIN, RecordType::SOA);
        loop {
            if let Some(status) = process.exited() {
                panic!(
                    "bulwark exited with {status} before answering\n{}",
                    self.logs()
                );
            }
            if let Ok(a) =
                support::query(self.addr, &spec, Transport::Udp, Duration::from_millis(200))
            {
                if a.rcode == 0 && a.aa && !a.answer.is_empty() {
                    return process;
                }
            }
            assert!(
                Instant::now() < deadline,
                "bulwark did not serve {ORIGIN} within {:?}\n{}",
                support::STARTUP_DEADLINE,
                self.logs()
            );
        }
    }

    /// Every log so far, each under its file name.
    fn logs(&self) -> String {
        self.logs
            .iter()
            .map(|p| {
                format!(
                    "==== {} ====\n{}",
                    p.file_name().unwrap().to_string_lossy(),
                    std::fs::read_to_string(p).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn soa_serial(&self) -> u32 {
        let a = ask(self.addr, ORIGIN, RecordType::SOA);
        let soa = a.rdata_of("SOA");
        let fields: Vec<&str> = soa
            .first()
            .unwrap_or_else(|| panic!("no SOA in {a}\n{}", self.logs()))
            .split_whitespace()
            .collect();
        fields[2].parse().unwrap()
    }

    /// Fails the test, naming every durable update (acknowledged, or seen
    /// served after a restart) the server does not serve.
    fn assert_serves_all(&self, durable: &BTreeSet<u32>, when: &str) {
        let mut missing = Vec::new();
        for &n in durable {
            let a = ask(self.addr, &format!("r{n}.{ORIGIN}"), RecordType::A);
            if a.rcode != 0 || !a.rdata_of("A").contains(&address_text(n)) {
                missing.push(format!("r{n}: {a}"));
            }
        }
        assert!(
            missing.is_empty(),
            "{when}: {} of {} durable updates are not served:\n{}\n{}",
            missing.len(),
            durable.len(),
            missing.join("\n"),
            self.logs()
        );
        let serial = self.soa_serial();
        // Each applied update moved the serial on by one ("increment").
        let at_least = INITIAL_SERIAL + u32::try_from(durable.len()).unwrap();
        assert!(
            serial >= at_least,
            "{when}: SOA serial {serial}, but {} updates were applied on serial {INITIAL_SERIAL}\n{}",
            durable.len(),
            self.logs()
        );
    }
}

fn ask(addr: SocketAddr, qname: &str, qtype: RecordType) -> support::Answer {
    support::query_retry(
        addr,
        &QuerySpec::new(qname, qtype),
        Transport::Udp,
        Duration::from_secs(2),
        3,
    )
    .unwrap_or_else(|e| panic!("{qname} {qtype}: {e}"))
}

/// The records of a zone file as bulwark writes it (one record per line,
/// absolute owner, then optional TTL and class, type and rdata): owner
/// (lowercased) to the rdata of each A record it has.
fn a_records_in_file(path: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.split(';').next().unwrap_or("");
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with(char::is_whitespace) || tokens.is_empty() || tokens[0].starts_with('$')
        {
            continue;
        }
        // The type is the first token after the owner that is not a TTL or class.
        let rest = tokens[1..]
            .iter()
            .skip_while(|t| t.chars().all(|c| c.is_ascii_digit()) || **t == "IN")
            .copied()
            .collect::<Vec<_>>();
        if rest.first() == Some(&"A") {
            out.entry(tokens[0].to_ascii_lowercase())
                .or_default()
                .push(rest[1..].join(" "));
        }
    }
    out
}

/// Runs the kill rounds with the zone's `zonefile_sync` set as given.
fn acknowledged_updates_survive_sigkill(zonefile_sync: &str) {
    let mut seed = fresh_seed();
    eprintln!("zonefile_sync = {zonefile_sync}; random seed {seed:#x}");
    let mut primary = Primary::new(zonefile_sync);
    let mut server = primary.start();
    // Acknowledged updates, and unacknowledged ones seen served after a
    // restart (so read back from disk): none of them may be lost.
    let mut durable: BTreeSet<u32> = BTreeSet::new();
    let stream = Arc::new(Stream {
        addr: primary.addr,
        next: AtomicU32::new(0),
        limit: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        state: Mutex::new(StreamState::default()),
        changed: Condvar::new(),
    });
    for round in 0..ROUNDS {
        let first = stream.next.load(Ordering::SeqCst);
        // Kill after 0..=UPDATES_PER_ROUND*3/4 acknowledgements: sometimes
        // at once, sometimes deep into the stream, always with the other
        // sender (and often this one's next update) in flight.
        let kill_after = random_below(&mut seed, UPDATES_PER_ROUND * 3 / 4 + 1);
        stream
            .limit
            .store(first + UPDATES_PER_ROUND, Ordering::SeqCst);
        stream.stop.store(false, Ordering::SeqCst);
        {
            let mut s = stream.state.lock().unwrap();
            s.acked_this_round = 0;
            s.senders_done = 0;
        }
        let senders: Vec<_> = (0..SENDERS)
            .map(|_| {
                let stream = Arc::clone(&stream);
                std::thread::spawn(move || stream.run_sender())
            })
            .collect();
        {
            let s = stream.state.lock().unwrap();
            let (s, timeout) = stream
                .changed
                .wait_timeout_while(s, ROUND_DEADLINE, |s| {
                    s.acked_this_round < kill_after && s.senders_done < SENDERS
                })
                .unwrap();
            assert!(
                !timeout.timed_out(),
                "round {round}: {} of {kill_after} updates acknowledged within {ROUND_DEADLINE:?}\n{}",
                s.acked_this_round,
                primary.logs()
            );
        }
        // SIGKILL by PID: no handler runs, nothing is flushed.
        server.signal("KILL");
        let status = server
            .wait_exit(Duration::from_secs(10))
            .expect("bulwark did not die of SIGKILL");
        assert_eq!(
            status.signal(),
            Some(9),
            "bulwark ended otherwise: {status}"
        );
        stream.stop.store(true, Ordering::SeqCst);
        for s in senders {
            s.join().unwrap();
        }
        let (acked, unacked) = {
            let s = stream.state.lock().unwrap();
            (s.acked.clone(), s.unacked.clone())
        };
        server = primary.start();
        durable.extend(acked.iter().copied());
        primary.assert_serves_all(&durable, &format!("after kill {round}"));
        // The updates in flight at the kill: either outcome is right, but
        // one served after the restart came from disk, so it must stay.
        let in_flight: Vec<u32> = unacked.range(first..).copied().collect();
        let applied: Vec<u32> = in_flight
            .iter()
            .copied()
            .filter(|&n| {
                ask(primary.addr, &format!("r{n}.{ORIGIN}"), RecordType::A)
                    .rdata_of("A")
                    .contains(&address_text(n))
            })
            .collect();
        durable.extend(applied.iter().copied());
        eprintln!(
            "round {round}: killed after {kill_after} acknowledgements; {} acknowledged in all; in flight at the kill: {in_flight:?}, applied: {applied:?}",
            acked.len()
        );
    }
    let acked = stream.state.lock().unwrap().acked.clone();
    assert!(
        acked.len() >= usize::try_from(ROUNDS).unwrap(),
        "too few updates were acknowledged ({}) for the test to mean anything\n{}",
        acked.len(),
        primary.logs()
    );
    let sent = stream.next.load(Ordering::SeqCst);

    // A clean stop writes every change back to the zone file.
    server.signal("TERM");
    let status = server
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("bulwark did not stop on SIGTERM\n{}", primary.logs()));
    assert!(
        status.success(),
        "bulwark stopped with {status}\n{}",
        primary.logs()
    );
    let in_file = a_records_in_file(&primary.zone_file);
    let missing: Vec<u32> = durable
        .iter()
        .copied()
        .filter(|&n| {
            !in_file
                .get(&format!("r{n}.{ORIGIN}"))
                .is_some_and(|v| v.contains(&address_text(n)))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the zone file written at the stop lacks durable updates {missing:?}:\n{}\n{}",
        std::fs::read_to_string(&primary.zone_file).unwrap(),
        primary.logs()
    );
    // Nothing appears that no one sent.
    let strays: Vec<&String> = in_file
        .keys()
        .filter(|owner| {
            owner
                .strip_prefix('r')
                .and_then(|o| o.strip_suffix(&format!(".{ORIGIN}")))
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n >= sent)
        })
        .collect();
    assert!(strays.is_empty(), "records no update added: {strays:?}");

    // And the file (with whatever the journal still holds) serves it all.
    let _server = primary.start();
    primary.assert_serves_all(&durable, "after the clean stop and a start");
    eprintln!(
        "{} of {sent} updates acknowledged and {} more applied over {ROUNDS} kills; all served and written back",
        acked.len(),
        durable.len() - acked.len()
    );
}

/// The zone file is rewritten after every change, so kills also land
/// between the file's rename and the journal's trimming.
#[test]
fn acknowledged_updates_survive_sigkill_when_the_file_is_written_after_every_change() {
    acknowledged_updates_survive_sigkill("0");
}

/// The zone file is not written while the server runs: after each kill the
/// acknowledged updates can only come back from the journal.
#[test]
fn acknowledged_updates_survive_sigkill_when_only_the_journal_holds_them() {
    acknowledged_updates_survive_sigkill("\"1h\"");
}
