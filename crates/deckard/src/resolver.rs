//! The resolver under test, as the runner sees it: started with a
//! scenario's settings, asked queries on its address, told that time passes,
//! stopped. [`crate::unbound::Unbound`] and [`crate::bulwark::Bulwark`]
//! implement it.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bulwark_proto::Name;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::config::ZoneServers;
use crate::scenario::Scenario;

/// Where the resolver listens and Deckard's client sends from, as Deckard
/// assigns them (`networking.py`: the first addresses of 127.127.0.0/16 and
/// fd00:dec::/32, kept apart from every address a scenario names).
pub const CLIENT_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 127, 0, 1));
pub const RESOLVER_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 127, 0, 2));
pub const CLIENT_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0xdec, 0, 0, 0, 0, 0, 1));
pub const RESOLVER_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0xdec, 0, 0, 0, 0, 0, 2));

/// What a scenario asks of the resolver, in resolver-neutral terms.
#[derive(Debug, Clone)]
pub struct ResolverSettings {
    /// Listen here, port 53, UDP and TCP (and send queries from here, where
    /// the resolver can choose).
    pub listen: IpAddr,
    /// Root hints for priming (RFC 8109): name and address of the root
    /// server. Empty: the resolver's built-in hints.
    pub root_hints: Vec<(Name, IpAddr)>,
    pub qname_minimisation: bool,
    /// DS or DNSKEY records in presentation format.
    pub trust_anchors: Vec<String>,
    /// Negative trust anchors (`domain-insecure`).
    pub negative_trust_anchors: Vec<Name>,
    /// Forward every query to this server instead of resolving.
    pub forward: Option<IpAddr>,
    /// Zones forwarded to servers of their own (`forward-zone`).
    pub forward_zones: Vec<ZoneServers>,
    /// Zones whose authoritative servers are given (`stub-zone`).
    pub stub_zones: Vec<ZoneServers>,
    /// Serve expired answers for this long past their TTL (`serve-stale`).
    pub serve_stale: Option<String>,
    /// Whether 127.0.0.0/8 and ::1 may be asked (`do-not-query-localhost: off`).
    pub query_localhost: bool,
    /// Unbound's `harden-glue`: out-of-zone glue is not trusted.
    pub harden_glue: bool,
    pub do_ip4: bool,
    pub do_ip6: bool,
    /// The resolver's clock at the start, in seconds since 1970.
    pub start_time: u64,
    /// An empty directory the resolver may use (configuration, logs, state).
    pub work_dir: PathBuf,
}

impl ResolverSettings {
    /// The settings for `scenario`, with QNAME minimisation `qmin` where
    /// the scenario does not decide, the clock at `now` where it does not
    /// fake one, and `work_dir` to work in.
    pub fn for_scenario(
        scenario: &Scenario,
        qmin: bool,
        now: u64,
        work_dir: PathBuf,
    ) -> ResolverSettings {
        let c = &scenario.config;
        let ipv6 = c.force_ipv6 || c.stub_addr.is_some_and(|a| a.is_ipv6());
        ResolverSettings {
            listen: if ipv6 { RESOLVER_V6 } else { RESOLVER_V4 },
            root_hints: c
                .stub_addr
                .map(|a| vec![(c.root_name(), a)])
                .unwrap_or_default(),
            qname_minimisation: c.query_minimization.unwrap_or(qmin),
            trust_anchors: c.trust_anchors.clone(),
            negative_trust_anchors: c.negative_trust_anchors.clone(),
            forward: c.forward_addr,
            forward_zones: c.forward_zones.clone(),
            stub_zones: c.stub_zones.clone(),
            serve_stale: c.serve_stale.clone(),
            query_localhost: !c.do_not_query_localhost,
            harden_glue: c.harden_glue,
            do_ip4: c.do_ip4,
            do_ip6: c.do_ip6,
            start_time: c.start_time.unwrap_or(now),
            work_dir,
        }
    }

    /// Deckard's client address, in the resolver's family.
    pub fn client(&self) -> IpAddr {
        if self.listen.is_ipv6() {
            CLIENT_V6
        } else {
            CLIENT_V4
        }
    }
}

/// A resolver implementation the runner can start.
pub trait Resolver: Sync {
    /// A short name for reports: `unbound`, `bulwark`.
    fn name(&self) -> &str;

    /// Why this resolver cannot play `scenario` at all, if it cannot (a
    /// configuration it has no equivalent for).
    fn skip_reason(&self, scenario: &Scenario) -> Option<String> {
        let _ = scenario;
        None
    }

    /// Starts it with `settings` and returns once it runs (the runner then
    /// waits until it accepts TCP connections). Called inside the scenario's
    /// network namespace.
    fn start(&self, settings: &ResolverSettings) -> Result<Box<dyn RunningResolver>, String>;
}

/// A started resolver.
pub trait RunningResolver {
    fn pid(&self) -> u32;

    /// Moves its clock `seconds` forward (`STEP n TIME_PASSES ELAPSE s`).
    fn advance_time(&mut self, seconds: u64) -> Result<(), String>;

    /// How it ended, if it has exited.
    fn exited(&mut self) -> Option<String>;

    /// The last `lines` lines of its log, for failure reports.
    fn log_tail(&self, lines: usize) -> String;

    /// Stops it (by PID) and waits for it; `Err` if it did not exit
    /// cleanly (Deckard fails a scenario whose resolver exits with a status
    /// other than 0 when stopped).
    fn stop(&mut self) -> Result<(), String>;
}

/// A child process with its log file, stopped by PID with SIGTERM (then
/// SIGKILL) when asked or dropped.
#[derive(Debug)]
pub struct Daemon {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

/// How long a daemon has to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(3);

impl Daemon {
    /// Starts `program args` in `dir` with `env` added, stdout and stderr to `dir/NAME.log`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<Daemon, String> {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        Ok(Daemon {
            name: name.to_string(),
            child,
            log,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot wait: {e}")),
        }
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let from = all.len().saturating_sub(lines);
        all.get(from..).unwrap_or(&[]).join("\n")
    }

    /// SIGTERM by PID, up to [`TERM_GRACE`] to exit, then SIGKILL. `Err`
    /// unless it exited with status 0 after SIGTERM.
    pub fn stop(&mut self) -> Result<(), String> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(format!("{} had already exited: {status}", self.name));
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + TERM_GRACE;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(format!("{} exited with {status} when stopped", self.name))
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("cannot wait for {}: {e}", self.name)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(format!(
            "{} did not stop within {TERM_GRACE:?} of SIGTERM and was killed",
            self.name
        ))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.stop();
        }
    }
}

/// `@YYYY-MM-DD HH:MM:SS` in UTC, libfaketime's "start at" form.
pub fn faketime_spec(unix: u64) -> String {
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let secs = unix % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "@{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Howard Hinnant's `civil_from_days`: the date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Seconds since 1970 now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faketime_specs_are_utc_dates() {
        assert_eq!(faketime_spec(0), "@1970-01-01 00:00:00");
        assert_eq!(faketime_spec(1_488_286_800), "@2017-02-28 13:00:00");
        assert_eq!(faketime_spec(951_868_799), "@2000-02-29 23:59:59");
    }
}
