//! Playing a scenario against a resolver: inside a private network
//! namespace, put every address on `lo`, start the simulated network and
//! the resolver, wait until it accepts TCP connections (Deckard's
//! connection check), then play the steps in order:
//!
//! - `QUERY`: the entry's message, with an id of its own, over UDP from
//!   Deckard's client address; the answer is awaited for 3 seconds (a `RAW`
//!   query is sent and nothing awaited);
//! - `CHECK_ANSWER`: the last answer against the entry (a `RAW` entry:
//!   octet for octet);
//! - `TIME_PASSES ELAPSE s`: the resolver's clock moves `s` seconds;
//! - `REPLY`, `CHECK_OUT_QUERY`: nothing but becoming the current step.
//!
//! The first step that fails ends the run. After the last step the run
//! fails if the resolver asked something the scenario has no answer for, if
//! a `MANDATORY` entry never answered, if the resolver died, or if it does
//! not exit with status 0 when stopped (as in Deckard), and (the project's
//! own addition, for its own scenarios) if it sent more queries than the
//! configuration's `check-max-queries`.

use std::fmt;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bulwark_testkit::netns;

use crate::matching::match_entry;
use crate::message::Message;
use crate::network::{Network, Outcome, QueryRecord};
use crate::resolver::{unix_now, Resolver, ResolverSettings, RunningResolver};
use crate::scenario::{Entry, Scenario, Step, StepKind};

/// How a run is played.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How long a `QUERY` waits for the answer (Deckard: 3 s).
    pub query_timeout: Duration,
    /// How long the resolver has to accept TCP connections (Deckard: 5 s).
    pub startup_timeout: Duration,
    /// How many lines of the resolver's log a failure shows.
    pub log_lines: usize,
    /// Where work directories go (a fresh one per run); the system's
    /// temporary directory if `None`.
    pub work_root: Option<PathBuf>,
    /// Keep the work directory of a failed run (its path is in the details).
    pub keep_failed: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            query_timeout: Duration::from_secs(3),
            startup_timeout: Duration::from_secs(5),
            log_lines: 30,
            work_root: None,
            keep_failed: false,
        }
    }
}

/// Why a run failed: at which step (none: after the steps, or before
/// them), in one line, and everything that helps to see why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub step: Option<u32>,
    pub summary: String,
    pub details: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary)?;
        write!(f, "{}", self.details)
    }
}

/// The end of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed(Failure),
    Skipped(String),
}

/// One play of a scenario, with QNAME minimisation on or off.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub qmin: bool,
    pub verdict: Verdict,
    pub elapsed: Duration,
}

/// Plays `scenario` once against `resolver`, QNAME minimisation `qmin`
/// (where the scenario does not set it).
pub fn run_once(
    scenario: &Scenario,
    resolver: &dyn Resolver,
    qmin: bool,
    options: &RunOptions,
) -> RunResult {
    let started = Instant::now();
    let verdict = match resolver.skip_reason(scenario) {
        Some(reason) => Verdict::Skipped(reason),
        None => match run_isolated(scenario, resolver, qmin, options) {
            Ok(()) => Verdict::Passed,
            Err(f) => Verdict::Failed(f),
        },
    };
    RunResult {
        qmin,
        verdict,
        elapsed: started.elapsed(),
    }
}

/// Whether this process can create network namespaces (root).
pub fn namespaces_available() -> Result<(), String> {
    netns::isolated(|| ()).map_err(|e| e.to_string())
}

/// A failure whose first line is the summary and the rest (a resolver's
/// log, say) the details.
fn failure(step: Option<u32>, text: impl Into<String>) -> Failure {
    let text = text.into();
    let (summary, details) = match text.split_once('\n') {
        Some((first, rest)) => (first.to_string(), format!("{rest}\n")),
        None => (text, String::new()),
    };
    Failure {
        step,
        summary,
        details,
    }
}

fn run_isolated(
    scenario: &Scenario,
    resolver: &dyn Resolver,
    qmin: bool,
    options: &RunOptions,
) -> Result<(), Failure> {
    let prefix = format!("deckard-{}-", scenario.name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    let work = match &options.work_root {
        Some(root) => builder.tempdir_in(root),
        None => builder.tempdir(),
    }
    .map_err(|e| failure(None, format!("cannot create a work directory: {e}")))?;
    let settings =
        ResolverSettings::for_scenario(scenario, qmin, unix_now(), work.path().to_path_buf());
    let result = netns::isolated(|| play(scenario, resolver, &settings, options))
        .unwrap_or_else(|e| Err(failure(None, e.to_string())));
    match result {
        Err(mut f) if options.keep_failed => {
            let kept = work.keep();
            f.details
                .push_str(&format!("\nwork directory kept: {}\n", kept.display()));
            Err(f)
        }
        other => other,
    }
}

/// Everything inside the namespace.
fn play(
    scenario: &Scenario,
    resolver: &dyn Resolver,
    settings: &ResolverSettings,
    options: &RunOptions,
) -> Result<(), Failure> {
    let mut addresses = vec![settings.listen, settings.client()];
    addresses.extend(scenario.server_addresses());
    for a in addresses {
        netns::add_address(a).map_err(|e| failure(None, e.to_string()))?;
    }
    let first_step = scenario.steps.first().map_or(0, |s| s.id);
    let mut network = Network::start(scenario, first_step)
        .map_err(|e| failure(None, format!("cannot start the simulated network: {e}")))?;
    let mut running = resolver
        .start(settings)
        .map_err(|e| failure(None, format!("cannot start {}: {e}", resolver.name())))?;
    let mut player = Player {
        scenario,
        settings,
        options,
        network: &network,
        resolver: running.as_mut(),
        last_answer: None,
        last_raw: None,
        queries_from: 0,
        next_id: seed_id(),
    };
    let result = player
        .wait_ready()
        .and_then(|()| player.play_steps())
        .and_then(|()| player.after_steps());
    let result = result.map_err(|mut f| {
        let tail = running.log_tail(options.log_lines);
        if !tail.is_empty() {
            f.details.push_str(&format!(
                "last {} lines of {}'s log:\n{}\n",
                options.log_lines,
                resolver.name(),
                indent(&tail)
            ));
        }
        f
    });
    // Deckard fails a scenario whose resolver does not exit cleanly when
    // stopped (a crash at the end would otherwise pass unnoticed).
    let stopped = running.stop();
    network.stop();
    result.and_then(|()| stopped.map_err(|e| failure(None, e)))
}

struct Player<'a> {
    scenario: &'a Scenario,
    settings: &'a ResolverSettings,
    options: &'a RunOptions,
    network: &'a Network,
    resolver: &'a mut dyn RunningResolver,
    last_answer: Option<Message>,
    last_raw: Option<Vec<u8>>,
    /// Where the queries of the current `QUERY` step start in the log.
    queries_from: usize,
    next_id: u16,
}

impl Player<'_> {
    fn server(&self) -> SocketAddr {
        SocketAddr::new(self.settings.listen, 53)
    }

    /// Deckard's connection check: TCP to port 53 until it is accepted.
    fn wait_ready(&mut self) -> Result<(), Failure> {
        let deadline = Instant::now() + self.options.startup_timeout;
        loop {
            if let Some(status) = self.resolver.exited() {
                return Err(failure(
                    None,
                    format!("the resolver exited at start: {status}"),
                ));
            }
            if TcpStream::connect_timeout(&self.server(), Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(failure(
                    None,
                    format!(
                        "the resolver does not accept TCP connections on {} after {:?}",
                        self.server(),
                        self.options.startup_timeout
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn play_steps(&mut self) -> Result<(), Failure> {
        for step in &self.scenario.steps {
            self.network.set_step(step.id);
            match step.kind {
                StepKind::Query => self.query(step)?,
                StepKind::CheckAnswer => self.check_answer(step)?,
                StepKind::TimePasses(seconds) => self
                    .resolver
                    .advance_time(seconds)
                    .map_err(|e| self.step_failure(step, &format!("cannot move the clock: {e}")))?,
                StepKind::Reply | StepKind::CheckOutQuery => {}
            }
        }
        Ok(())
    }

    fn step_failure(&self, step: &Step, what: &str) -> Failure {
        let mut f = failure(
            Some(step.id),
            format!(
                "STEP {} {} ({}): {}",
                step.id,
                step.kind,
                self.scenario.at(step.line),
                first_line(what)
            ),
        );
        if what.contains('\n') {
            f.details.push_str(what);
            if !what.ends_with('\n') {
                f.details.push('\n');
            }
        }
        f
    }

    fn query(&mut self, step: &Step) -> Result<(), Failure> {
        let Some(entry) = &step.entry else {
            return Ok(());
        };
        self.queries_from = self.network.query_count();
        self.last_answer = None;
        self.last_raw = None;
        let (wire, expect) = match &entry.raw {
            Some(raw) => (raw.clone(), false),
            None => {
                let mut m = entry.message.clone();
                self.next_id = self.next_id.wrapping_mul(31_421).wrapping_add(6_927);
                m.id = self.next_id;
                (m.to_wire(), true)
            }
        };
        match self.exchange(&wire, expect) {
            Ok(None) => Ok(()),
            Ok(Some(answer)) => {
                self.last_answer = Message::from_wire(&answer).ok();
                if self.last_answer.is_none() {
                    let e = Message::from_wire(&answer).err().unwrap_or_default();
                    let mut f = self.step_failure(step, &format!("the answer cannot be read: {e}"));
                    f.details
                        .push_str(&format!("answer octets: {}\n", hex(&answer)));
                    self.add_queries(&mut f);
                    return Err(f);
                }
                self.last_raw = Some(answer);
                Ok(())
            }
            Err(e) => {
                let mut f = self.step_failure(step, &e);
                f.details.push_str(&format!(
                    "query ({}):\n{}",
                    self.scenario.at(entry.line),
                    indent(&entry.message.to_string())
                ));
                self.add_queries(&mut f);
                Err(f)
            }
        }
    }

    /// Sends `wire` over UDP from the client address; waits for one answer if `expect`.
    fn exchange(&self, wire: &[u8], expect: bool) -> Result<Option<Vec<u8>>, String> {
        let socket = UdpSocket::bind((self.settings.client(), 0))
            .map_err(|e| format!("client socket: {e}"))?;
        socket
            .connect(self.server())
            .map_err(|e| format!("connect {}: {e}", self.server()))?;
        socket
            .send(wire)
            .map_err(|e| format!("send to {}: {e}", self.server()))?;
        if !expect {
            return Ok(None);
        }
        socket
            .set_read_timeout(Some(self.options.query_timeout))
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 65535];
        match socket.recv(&mut buf) {
            Ok(n) => Ok(Some(buf.get(..n).unwrap_or(&[]).to_vec())),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(format!("no answer within {:?}", self.options.query_timeout))
            }
            Err(e) => Err(format!("no answer: {e}")),
        }
    }

    fn check_answer(&mut self, step: &Step) -> Result<(), Failure> {
        let Some(entry) = &step.entry else {
            return Ok(());
        };
        if let Some(raw) = &entry.raw {
            if self.last_raw.as_deref() == Some(raw.as_slice()) {
                return Ok(());
            }
            let got = self.last_raw.as_deref().map_or("nothing".to_string(), hex);
            let mut f = self.step_failure(step, "the raw answer differs");
            f.details
                .push_str(&format!("expected: {}\ngot:      {got}\n", hex(raw)));
            return Err(f);
        }
        let Some(answer) = &self.last_answer else {
            let mut f = self.step_failure(step, "no answer from the preceding query");
            self.add_queries(&mut f);
            return Err(f);
        };
        match match_entry(entry, answer) {
            Ok(()) => Ok(()),
            Err(m) => {
                let mut f = self.step_failure(step, &m.to_string());
                f.details.push_str(&self.expected_text(entry));
                f.details
                    .push_str(&format!("received:\n{}", indent(&answer.to_string())));
                self.add_queries(&mut f);
                Err(f)
            }
        }
    }

    fn expected_text(&self, entry: &Entry) -> String {
        let matches: Vec<&str> = entry
            .matches
            .iter()
            .flatten()
            .map(|m| m.keyword())
            .collect();
        format!(
            "expected ({}, MATCH {}):\n{}",
            self.scenario.at(entry.line),
            matches.join(" "),
            indent(&entry.message.to_string())
        )
    }

    /// The resolver's queries since the current `QUERY` step began.
    fn add_queries(&self, f: &mut Failure) {
        let all = self.network.queries();
        let since = all.get(self.queries_from..).unwrap_or(&[]);
        if since.is_empty() {
            f.details
                .push_str("the resolver sent no query during this step\n");
        } else {
            f.details.push_str(&format!(
                "queries the resolver sent since the last QUERY step ({}):\n",
                since.len()
            ));
            for q in since {
                f.details.push_str(&format!("  {q}\n"));
            }
        }
    }

    fn after_steps(&mut self) -> Result<(), Failure> {
        let unanswered: Vec<QueryRecord> = self
            .network
            .queries()
            .into_iter()
            .filter(|q| matches!(q.outcome, Outcome::Unanswered(_)))
            .collect();
        if let Some(first) = unanswered.first() {
            let mut f = failure(
                None,
                format!(
                    "the scenario does not define all necessary answers: {} quer{} unanswered, the first at step {}: {}",
                    unanswered.len(),
                    if unanswered.len() == 1 { "y" } else { "ies" },
                    first.step,
                    first.query
                ),
            );
            for q in &unanswered {
                f.details.push_str(&format!("  {q}\n"));
            }
            return Err(f);
        }
        if let Some(f) = too_many_queries(self.scenario, &self.network.queries()) {
            return Err(f);
        }
        let not_fired = self.network.mandatory_not_fired();
        if !not_fired.is_empty() {
            return Err(failure(
                None,
                format!("MANDATORY entries never answered: {}", not_fired.join(", ")),
            ));
        }
        if let Some(status) = self.resolver.exited() {
            return Err(failure(
                None,
                format!("the resolver exited during the run: {status}"),
            ));
        }
        Ok(())
    }
}

/// The failure of a scenario whose `check-max-queries` the resolver
/// exceeded, with how many queries went to each server.
fn too_many_queries(scenario: &Scenario, queries: &[QueryRecord]) -> Option<Failure> {
    let max = scenario.config.max_queries?;
    if queries.len() <= max {
        return None;
    }
    let mut f = failure(
        None,
        format!(
            "the resolver sent {} queries to the simulated servers, more than check-max-queries {max}",
            queries.len()
        ),
    );
    let mut servers: Vec<(std::net::IpAddr, usize)> = Vec::new();
    for q in queries {
        match servers.iter_mut().find(|(a, _)| *a == q.server) {
            Some((_, n)) => *n += 1,
            None => servers.push((q.server, 1)),
        }
    }
    for (server, n) in servers {
        f.details.push_str(&format!("  {n} to {server}\n"));
    }
    Some(f)
}

fn seed_id() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    u16::try_from(nanos % 65_536).unwrap_or(0x1234)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_str;
    use std::path::Path;

    fn sent(n: usize, server: &str) -> Vec<QueryRecord> {
        (0..n)
            .map(|i| QueryRecord {
                step: 1,
                server: server.parse().unwrap(),
                client: "127.127.0.2:1000".parse().unwrap(),
                tcp: false,
                query: format!("n{i}.example. IN A"),
                outcome: Outcome::Answered(String::new()),
            })
            .collect()
    }

    #[test]
    fn check_max_queries_bounds_the_queries_sent() {
        let text = "check-max-queries: 3\nCONFIG_END\nSCENARIO_BEGIN t\nSCENARIO_END\n";
        let s = parse_str(Path::new("t.rpl"), text).unwrap();
        assert_eq!(too_many_queries(&s, &sent(3, "192.0.2.1")), None);
        let mut four = sent(3, "192.0.2.1");
        four.extend(sent(1, "192.0.2.2"));
        let f = too_many_queries(&s, &four).unwrap();
        assert_eq!(
            f.summary,
            "the resolver sent 4 queries to the simulated servers, more than check-max-queries 3"
        );
        assert_eq!(f.details, "  3 to 192.0.2.1\n  1 to 192.0.2.2\n");
        let unbounded = parse_str(
            Path::new("t.rpl"),
            "CONFIG_END\nSCENARIO_BEGIN t\nSCENARIO_END\n",
        )
        .unwrap();
        assert_eq!(too_many_queries(&unbounded, &four), None);
    }
}
