#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! "A catalog with 1,000 member zones provisions a bulwark secondary from a
//! bulwark primary; removing a member removes it" (RFC 9432). The primary
//! generates the catalog from the zones that name it; the secondary consumes
//! it and makes each member a secondary zone from its template. Removing a
//! member from the primary's configuration (and reloading) must remove it
//! from the secondary; adding one must add it.
//!
//! How long provisioning takes is printed, not asserted.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{Answer, ChildGuard, QuerySpec, Transport};

const CATALOG: &str = "catalog.invalid.";
/// Member zones in the catalog at the start.
const MEMBERS: u32 = 1000;
/// How long provisioning may take before the test fails (a deadline for a
/// hung test, not a performance bound: the time taken is printed).
const PROVISION_DEADLINE: Duration = Duration::from_secs(180);
/// How long a removal or addition may take to reach the secondary.
const CHANGE_DEADLINE: Duration = Duration::from_secs(60);
const QUERY_WAIT: Duration = Duration::from_secs(1);

fn member(i: u32) -> String {
    format!("m{i:04}.test.")
}

/// Member `i`'s zone: its serial is `i` so that an answer shows which
/// zone it came from.
fn member_zone_text(i: u32) -> String {
    format!(
        "$ORIGIN {}\n$TTL 300\n@ IN SOA ns1 hostmaster {i} 3600 600 86400 300\n  IN NS ns1\nns1 IN A 192.0.2.1\n",
        member(i)
    )
}

/// One server's directory, address and process.
struct Node {
    name: &'static str,
    dir: tempfile::TempDir,
    addr: SocketAddr,
    config: PathBuf,
    process: Option<ChildGuard>,
}

impl Node {
    fn new(name: &'static str) -> Node {
        let dir = support::temp_dir(&format!("bulwark-catalog-{name}-"));
        Node {
            name,
            // Port 0 until it starts and reports the port it got.
            addr: ([127, 0, 0, 1], 0).into(),
            config: dir.path().join("bulwark.toml"),
            dir,
            process: None,
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join(format!("{}.log", self.name))
    }

    /// Starts the server (its configuration listens on port 0) and learns
    /// its address from the ready file.
    fn start(&mut self) {
        let args = vec![
            "serve".to_string(),
            "--config".to_string(),
            self.config.display().to_string(),
        ];
        let (process, bound) = support::start_bulwark(&args, &[], self.dir.path(), self.name);
        self.addr = bound.dns[0];
        self.process = Some(process);
    }

    fn process(&mut self) -> &mut ChildGuard {
        self.process.as_mut().expect("started")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Panics when the server has exited.
    fn assert_running(&mut self, logs: &dyn Fn() -> String) {
        if let Some(status) = self.process().exited() {
            panic!("{} exited with {status}\n{}", self.name, logs());
        }
    }

    fn soa(&self, zone: &str) -> Option<Answer> {
        support::query(
            self.addr,
            &QuerySpec::new(zone, RecordType::SOA),
            Transport::Udp,
            QUERY_WAIT,
        )
        .ok()
    }
}

/// Whether `a` is an authoritative answer with the SOA of member `i`.
fn serves_member(a: &Answer, i: u32) -> bool {
    a.rcode == 0
        && a.aa
        && a.rdata_of("SOA")
            .first()
            .is_some_and(|soa| soa.split_whitespace().nth(2) == Some(i.to_string().as_str()))
}

struct Setup {
    primary: Node,
    secondary: Node,
}

impl Setup {
    fn new() -> Setup {
        let primary = Node::new("primary");
        let secondary = Node::new("secondary");
        std::fs::create_dir(primary.dir.path().join("zones")).unwrap();
        Setup { primary, secondary }
    }

    /// The secondary's configuration, once the primary's port is known.
    fn write_secondary_config(&self) {
        assert_ne!(self.primary.addr.port(), 0, "the primary runs");
        std::fs::write(
            &self.secondary.config,
            format!(
                "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nstorage = \"secondary.db\"\n\n\
                 [remote.primary]\naddress = \"{}\"\n\n\
                 [template.member]\nprimaries = [\"primary\"]\n\n\
                 [[zone]]\norigin = \"{CATALOG}\"\nprimaries = [\"primary\"]\n\
                 catalog_role = \"consume\"\ncatalog_template = \"member\"\n",
                self.primary.addr
            ),
        )
        .unwrap();
    }

    fn logs(&self) -> String {
        format!(
            "==== primary log ====\n{}\n==== secondary log ====\n{}",
            tail(&self.primary.log(), 200),
            tail(&self.secondary.log(), 200)
        )
    }

    fn write_member_file(&self, i: u32) {
        let path = self
            .primary
            .dir
            .path()
            .join("zones")
            .join(format!("{}zone", member(i)));
        std::fs::write(path, member_zone_text(i)).unwrap();
    }

    /// The primary's configuration with `members` in the catalog. The
    /// catalog is NOTIFYed to the secondary on every change; the members
    /// need not be: a new member's first transfer comes from the catalog
    /// change, and they do not change here. The primary keeps its default
    /// TCP caps (20 connections per client): the secondary must queue its
    /// thousand first transfers rather than open them all at once.
    ///
    /// The primary starts first, on port 0, before the secondary has a port:
    /// until then there is no one to notify (the secondary's first refresh
    /// needs none). The reloads that change the members bring the NOTIFY.
    fn write_primary_config(&self, members: &BTreeSet<u32>) {
        let notify = if self.secondary.addr.port() == 0 {
            String::new()
        } else {
            format!(
                "[remote.secondary]\naddress = \"{}\"\n\n",
                self.secondary.addr
            )
        };
        let mut conf = format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nstorage = \"primary.db\"\n\n\
             [acl.loopback]\nallow = [\"127.0.0.0/8\"]\n\n\
             {notify}\
             [[zone]]\norigin = \"{CATALOG}\"\ncatalog_role = \"generate\"\n\
             allow_transfer = [\"loopback\"]\n"
        );
        if !notify.is_empty() {
            conf.push_str("notify = [\"secondary\"]\n");
        }
        for &i in members {
            write!(
                conf,
                "\n[[zone]]\norigin = \"{}\"\nfile = \"zones/{}zone\"\n\
                 catalog = \"{CATALOG}\"\nallow_transfer = [\"loopback\"]\n",
                member(i),
                member(i)
            )
            .unwrap();
        }
        std::fs::write(&self.primary.config, conf).unwrap();
    }

    /// Polls `pending` members on the secondary until each is served with
    /// its own SOA, removing them from `pending` as they come.
    fn wait_served(&mut self, pending: &mut BTreeSet<u32>, deadline: Duration, what: &str) {
        let until = Instant::now() + deadline;
        loop {
            pending.retain(|&i| {
                !self
                    .secondary
                    .soa(&member(i))
                    .is_some_and(|a| serves_member(&a, i))
            });
            if pending.is_empty() {
                return;
            }
            let logs = self.logs();
            self.primary.assert_running(&|| logs.clone());
            self.secondary.assert_running(&|| logs.clone());
            if Instant::now() > until {
                let sample: Vec<String> = pending
                    .iter()
                    .take(5)
                    .map(|&i| {
                        format!(
                            "{}: {}",
                            member(i),
                            self.secondary
                                .soa(&member(i))
                                .map_or_else(|| "no answer".to_string(), |a| a.to_string())
                        )
                    })
                    .collect();
                panic!(
                    "{what}: {} zones still not served by the secondary after {deadline:?}, e.g.\n{}\n{}",
                    pending.len(),
                    sample.join("\n"),
                    self.logs()
                );
            }
            // Between passes only: each pass already takes a while.
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Polls until the secondary answers `zone` with `rcode`.
    fn wait_rcode(&mut self, zone: &str, rcode: u16, what: &str) {
        let until = Instant::now() + CHANGE_DEADLINE;
        loop {
            let answer = self.secondary.soa(zone);
            if answer.as_ref().is_some_and(|a| a.rcode == rcode) {
                return;
            }
            let logs = self.logs();
            self.secondary.assert_running(&|| logs.clone());
            assert!(
                Instant::now() < until,
                "{what}: the secondary still answers {zone} SOA with {} after {CHANGE_DEADLINE:?}, not {}\n{}",
                answer.map_or_else(|| "nothing".to_string(), |a| a.to_string()),
                support::rcode_name(rcode),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Asserts that the secondary serves every member in `members` (one pass).
    fn assert_all_served(&self, members: &BTreeSet<u32>, what: &str) {
        let wrong: Vec<String> = members
            .iter()
            .filter_map(|&i| {
                let a = support::query_retry(
                    self.secondary.addr,
                    &QuerySpec::new(&member(i), RecordType::SOA),
                    Transport::Udp,
                    QUERY_WAIT,
                    3,
                );
                match a {
                    Ok(a) if serves_member(&a, i) => None,
                    Ok(a) => Some(format!("{}: {a}", member(i))),
                    Err(e) => Some(format!("{}: {e}", member(i))),
                }
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{what}: {} members not served as they should be:\n{}\n{}",
            wrong.len(),
            wrong
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
            self.logs()
        );
    }
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Lines of `log` containing `needle`.
fn count_lines(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// The first and last lines of `log` containing `needle`, for the report.
fn first_and_last(log: &str, needle: &str) -> String {
    let hits: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
    match (hits.first(), hits.last()) {
        (Some(f), Some(l)) => format!("  first: {f}\n  last:  {l}"),
        _ => "  (none)".to_string(),
    }
}

fn wait_primary_ready(primary: &mut Node, probe: &str, i: u32) {
    let until = Instant::now() + support::STARTUP_DEADLINE;
    loop {
        if primary.soa(probe).is_some_and(|a| serves_member(&a, i)) {
            return;
        }
        if let Some(status) = primary.process().exited() {
            panic!("primary exited with {status}\n{}", primary.log());
        }
        assert!(
            Instant::now() < until,
            "the primary did not serve {probe} within {:?}\n{}",
            support::STARTUP_DEADLINE,
            primary.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_catalog_of_a_thousand_members_provisions_a_secondary_and_follows_removal_and_addition() {
    let mut setup = Setup::new();
    let mut members: BTreeSet<u32> = (1..=MEMBERS).collect();
    for &i in &members {
        setup.write_member_file(i);
    }
    setup.write_primary_config(&members);

    let started = Instant::now();
    setup.primary.start();
    wait_primary_ready(&mut setup.primary, &member(MEMBERS), MEMBERS);
    let primary_up = started.elapsed();
    setup.write_secondary_config();
    let started = Instant::now();
    setup.secondary.start();
    let mut pending = members.clone();
    setup.wait_served(&mut pending, PROVISION_DEADLINE, "provisioning");
    let provisioned = started.elapsed();
    let slog = setup.secondary.log();
    let plog = setup.primary.log();
    eprintln!(
        "primary up with {MEMBERS} members in {primary_up:?}; secondary served all {MEMBERS} in {provisioned:?}\n\
         secondary (logged so far: 'zone transferred' is logged after the copy is served, and lags): {} 'catalog member zone added', {} 'zone transferred' ({} AXFR), {} 'refresh from primary failed'\n\
         primary: {} 'transfer sent'\n\
         secondary 'catalog zone read':\n{}\n\
         secondary 'catalog member zone added':\n{}\n\
         secondary 'zone transferred':\n{}\n\
         secondary 'refresh from primary failed':\n{}",
        count_lines(&slog, "catalog member zone added"),
        count_lines(&slog, "zone transferred"),
        count_lines(&slog, "kind=AXFR"),
        count_lines(&slog, "refresh from primary failed"),
        count_lines(&plog, "transfer sent"),
        first_and_last(&slog, "catalog zone read"),
        first_and_last(&slog, "catalog member zone added"),
        first_and_last(&slog, "zone transferred"),
        first_and_last(&slog, "refresh from primary failed"),
    );

    // Remove one member from the primary's configuration and reload it.
    let removed = 500;
    members.remove(&removed);
    setup.write_primary_config(&members);
    let started = Instant::now();
    setup.primary.process().signal("HUP");
    setup.wait_rcode(&member(removed), 5, "after the removal");
    let removal = started.elapsed();
    // The primary no longer serves it either.
    let on_primary = setup.primary.soa(&member(removed));
    assert!(
        on_primary.as_ref().is_some_and(|a| a.rcode == 5),
        "the primary answers the removed zone with {on_primary:?}"
    );
    setup.assert_all_served(&members, "after the removal");

    // Add a new member: the secondary picks it up from the catalog change.
    let added = MEMBERS + 1;
    setup.write_member_file(added);
    members.insert(added);
    setup.write_primary_config(&members);
    let started = Instant::now();
    setup.primary.process().signal("HUP");
    let mut pending = BTreeSet::from([added]);
    setup.wait_served(&mut pending, CHANGE_DEADLINE, "after the addition");
    let addition = started.elapsed();
    setup.wait_rcode(&member(removed), 5, "after the addition");
    setup.assert_all_served(&members, "after the addition");
    eprintln!("removal reached the secondary in {removal:?}, addition in {addition:?}");
}
