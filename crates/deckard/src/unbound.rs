//! Unbound as the resolver under test, configured as Deckard's
//! `template/unbound.j2` and `template/hints_zone.j2` configure it, and run
//! as `configs/unbound.yaml` runs it (`unbound -d -c unbound.conf`). Its
//! clock is libfaketime's (Debian's `faketime` package), read from a
//! timestamp file that `TIME_PASSES` rewrites, as Deckard does.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::resolver::{faketime_spec, Daemon, Resolver, ResolverSettings, RunningResolver};
use crate::scenario::Scenario;

/// Where Debian installs libfaketime (`faketime` depends on `libfaketime`).
const LIBFAKETIME_DIRS: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime",
    "/usr/lib/aarch64-linux-gnu/faketime",
    "/usr/lib/faketime",
];

/// The library to preload for a faked clock, if installed.
pub fn find_libfaketime() -> Option<PathBuf> {
    LIBFAKETIME_DIRS
        .iter()
        .map(|d| Path::new(d).join("libfaketime.so.1"))
        .find(|p| p.is_file())
}

/// Unbound, found on the system.
#[derive(Debug, Clone)]
pub struct Unbound {
    pub binary: PathBuf,
    pub libfaketime: PathBuf,
    /// Lines added to the `server:` clause after the template's, for
    /// experiments (`harden-referral-path: no`, say); empty in the tests.
    pub extra: Vec<String>,
}

impl Unbound {
    pub fn new(binary: PathBuf, libfaketime: PathBuf) -> Unbound {
        Unbound {
            binary,
            libfaketime,
            extra: Vec::new(),
        }
    }
}

impl Resolver for Unbound {
    fn name(&self) -> &str {
        "unbound"
    }

    fn skip_reason(&self, scenario: &Scenario) -> Option<String> {
        let features = &scenario.config.features;
        (!features.is_empty()).then(|| {
            format!(
                "Knot Resolver features ({}) that Deckard's Unbound template does not carry",
                features.join("; ")
            )
        })
    }

    fn start(&self, settings: &ResolverSettings) -> Result<Box<dyn RunningResolver>, String> {
        let dir = &settings.work_dir;
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok::<PathBuf, String>(path)
        };
        let anchors = trust_anchor_files(settings)?;
        if !settings.root_hints.is_empty() {
            write("hints.zone", &hints_zone(settings))?;
        }
        let mut text = config(settings, &anchors);
        if !self.extra.is_empty() {
            // A second `server:` clause adds to (and overrides) the first.
            text.push_str("server:\n");
            for l in &self.extra {
                text.push_str(&format!("\t{l}\n"));
            }
        }
        write("unbound.conf", &text)?;
        let clock = write(".time", &faketime_spec(settings.start_time))?;
        let env = [
            (
                "LD_PRELOAD".to_string(),
                self.libfaketime.display().to_string(),
            ),
            (
                "FAKETIME_TIMESTAMP_FILE".to_string(),
                clock.display().to_string(),
            ),
            ("FAKETIME_NO_CACHE".to_string(), "1".to_string()),
            // The timestamp file is UTC.
            ("TZ".to_string(), "UTC".to_string()),
        ];
        let args = [
            "-d".to_string(),
            "-c".to_string(),
            "unbound.conf".to_string(),
        ];
        let daemon = Daemon::spawn("unbound", &self.binary, &args, &env, dir)?;
        Ok(Box::new(RunningUnbound {
            daemon,
            clock,
            now: settings.start_time,
        }))
    }
}

struct RunningUnbound {
    daemon: Daemon,
    clock: PathBuf,
    now: u64,
}

impl RunningResolver for RunningUnbound {
    fn pid(&self) -> u32 {
        self.daemon.pid()
    }

    /// Rewrites the timestamp file (atomically, as Deckard does): with
    /// `FAKETIME_NO_CACHE` libfaketime reads it at every clock call, and the
    /// clock jumps by the difference.
    fn advance_time(&mut self, seconds: u64) -> Result<(), String> {
        self.now = self.now.saturating_add(seconds);
        let next = self.clock.with_extension("next");
        fs::write(&next, faketime_spec(self.now))
            .map_err(|e| format!("{}: {e}", next.display()))?;
        fs::rename(&next, &self.clock).map_err(|e| format!("{}: {e}", self.clock.display()))
    }

    fn exited(&mut self) -> Option<String> {
        self.daemon.exited()
    }

    fn log_tail(&self, lines: usize) -> String {
        self.daemon.log_tail(lines)
    }

    fn stop(&mut self) -> Result<(), String> {
        self.daemon.stop()
    }
}

/// `template/hints_zone.j2`: the root's NS and its address.
fn hints_zone(settings: &ResolverSettings) -> String {
    let mut out = String::new();
    for (name, address) in &settings.root_hints {
        let _ = writeln!(out, ".\t3600000\tNS\t{name}");
        let rtype = if address.is_ipv6() { "AAAA" } else { "A" };
        let _ = writeln!(out, "{name}\t3600000\t{rtype}\t{address}");
    }
    out
}

/// Deckard writes the trust anchors of each domain into `ta/DOMAIN.key`
/// and gives each file to `auto-trust-anchor-file`.
fn trust_anchor_files(settings: &ResolverSettings) -> Result<Vec<PathBuf>, String> {
    let mut by_domain: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for ta in &settings.trust_anchors {
        let owner = ta
            .split_whitespace()
            .next()
            .unwrap_or(".")
            .to_ascii_lowercase();
        by_domain.entry(owner).or_default().push(ta);
    }
    let dir = settings.work_dir.join("ta");
    if !by_domain.is_empty() {
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut files = Vec::new();
    for (domain, lines) in by_domain {
        let stem = domain.trim_end_matches('.');
        let path = dir.join(format!(
            "{}.key",
            if stem.is_empty() { "root" } else { stem }
        ));
        let mut text = lines.join("\n");
        text.push('\n');
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(path);
    }
    Ok(files)
}

fn yes(on: bool) -> &'static str {
    if on {
        "yes"
    } else {
        "no"
    }
}

/// `template/unbound.j2`, without its comments and the settings it leaves
/// at their defaults.
fn config(s: &ResolverSettings, anchors: &[PathBuf]) -> String {
    let mut c = String::new();
    let mut line = |text: &str| {
        c.push_str(text);
        c.push('\n');
    };
    let address = |a: &IpAddr| a.to_string();
    line("server:");
    line("\ttrust-anchor-signaling: no");
    line("\tverbosity: 3");
    line("\tstatistics-interval: 0");
    line("\tstatistics-cumulative: no");
    line("\textended-statistics: yes");
    line("\tnum-threads: 1");
    line(&format!("\tinterface: {}", address(&s.listen)));
    line("\tinterface-automatic: no");
    line(&format!("\toutgoing-interface: {}", address(&s.listen)));
    line("\tedns-buffer-size: 4096");
    line("\tmax-udp-size: 4096");
    line(&format!("\tdo-ip6: {}", yes(s.do_ip6)));
    line(&format!("\tdo-ip4: {}", yes(s.do_ip4)));
    line("\tdo-daemonize: no");
    line("\taccess-control: ::0/0 allow_snoop");
    line("\tchroot: \"\"");
    line("\tusername: \"\"");
    line(&format!("\tdirectory: \"{}\"", s.work_dir.display()));
    line("\tuse-syslog: no");
    line("\tlog-time-ascii: yes");
    line("\tlog-queries: yes");
    line("\tpidfile: \"unbound.pid\"");
    if !s.root_hints.is_empty() {
        line("\troot-hints: \"hints.zone\"");
    }
    line("\ttarget-fetch-policy: \"0 0 0 0 0\"");
    line(&format!("\tharden-glue: {}", yes(s.harden_glue)));
    line("\tharden-dnssec-stripped: yes");
    line("\tharden-below-nxdomain: yes");
    line("\tharden-referral-path: yes");
    line("\tharden-algo-downgrade: yes");
    line(&format!(
        "\tqname-minimisation: {}",
        yes(s.qname_minimisation)
    ));
    line("\tuse-caps-for-id: yes");
    line("\tunwanted-reply-threshold: 10000000");
    line(&format!(
        "\tdo-not-query-localhost: {}",
        yes(!s.query_localhost)
    ));
    line("\tprefetch: no");
    line("\tprefetch-key: no");
    line("\trrset-roundrobin: yes");
    line("\tminimal-responses: no");
    for f in anchors {
        line(&format!("\tauto-trust-anchor-file: \"{}\"", f.display()));
    }
    for n in &s.negative_trust_anchors {
        line(&format!("\tdomain-insecure: \"{n}\""));
    }
    line("\tval-clean-additional: yes");
    line("\tval-permissive-mode: no");
    line("\tval-log-level: 2");
    for zone in LOCAL_ZONES_NODEFAULT {
        line(&format!("\tlocal-zone: \"{zone}\" nodefault"));
    }
    line("\tunblock-lan-zones: yes");
    line("remote-control:");
    line("\tcontrol-enable: no");
    if let Some(f) = &s.forward {
        line("forward-zone:");
        line("\tname: \".\"");
        line(&format!("\tforward-addr: {f}"));
        line("\tforward-first: no");
    }
    c
}

/// The template's `local-zone: "..." nodefault` lines: Unbound answers these
/// itself unless told not to, and scenarios use some of them.
const LOCAL_ZONES_NODEFAULT: &[&str] = &[
    "test.",
    "localhost.",
    "127.in-addr.arpa.",
    "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa.",
    "onion.",
    "10.in-addr.arpa.",
    "16.172.in-addr.arpa.",
    "17.172.in-addr.arpa.",
    "18.172.in-addr.arpa.",
    "19.172.in-addr.arpa.",
    "20.172.in-addr.arpa.",
    "21.172.in-addr.arpa.",
    "22.172.in-addr.arpa.",
    "23.172.in-addr.arpa.",
    "24.172.in-addr.arpa.",
    "25.172.in-addr.arpa.",
    "26.172.in-addr.arpa.",
    "27.172.in-addr.arpa.",
    "28.172.in-addr.arpa.",
    "29.172.in-addr.arpa.",
    "30.172.in-addr.arpa.",
    "31.172.in-addr.arpa.",
    "168.192.in-addr.arpa.",
    "0.in-addr.arpa.",
    "254.169.in-addr.arpa.",
    "2.0.192.in-addr.arpa.",
    "100.51.198.in-addr.arpa.",
    "113.0.203.in-addr.arpa.",
    "255.255.255.255.in-addr.arpa.",
    "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa.",
    "d.f.ip6.arpa.",
    "8.e.f.ip6.arpa.",
    "9.e.f.ip6.arpa.",
    "a.e.f.ip6.arpa.",
    "b.e.f.ip6.arpa.",
    "8.b.d.0.1.0.0.2.ip6.arpa.",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::RESOLVER_V4;

    fn settings() -> ResolverSettings {
        ResolverSettings {
            listen: RESOLVER_V4,
            root_hints: vec![(
                "K.ROOT-SERVERS.NET.".parse().unwrap(),
                "193.0.14.129".parse().unwrap(),
            )],
            qname_minimisation: false,
            trust_anchors: vec![". 3600 IN DS 10000 13 4 ABCDEF0123456789".to_string()],
            negative_trust_anchors: vec!["net.".parse().unwrap()],
            forward: Some("192.0.2.1".parse().unwrap()),
            forward_zones: Vec::new(),
            stub_zones: Vec::new(),
            serve_stale: None,
            query_localhost: true,
            harden_glue: false,
            do_ip4: true,
            do_ip6: false,
            start_time: 0,
            work_dir: PathBuf::from("/w"),
        }
    }

    #[test]
    fn the_configuration_follows_the_template() {
        let c = config(&settings(), &[PathBuf::from("/w/ta/root.key")]);
        for expected in [
            "\tinterface: 127.127.0.2\n",
            "\toutgoing-interface: 127.127.0.2\n",
            "\troot-hints: \"hints.zone\"\n",
            "\tqname-minimisation: no\n",
            "\tharden-glue: no\n",
            "\tdo-not-query-localhost: no\n",
            "\tdo-ip6: no\n",
            "\tauto-trust-anchor-file: \"/w/ta/root.key\"\n",
            "\tdomain-insecure: \"net.\"\n",
            "forward-zone:\n\tname: \".\"\n\tforward-addr: 192.0.2.1\n\tforward-first: no\n",
            "\tlocal-zone: \"d.f.ip6.arpa.\" nodefault\n",
        ] {
            assert!(c.contains(expected), "missing {expected:?} in\n{c}");
        }
    }

    #[test]
    fn hints_name_the_root_server_with_its_address() {
        assert_eq!(
            hints_zone(&settings()),
            ".\t3600000\tNS\tK.ROOT-SERVERS.NET.\nK.ROOT-SERVERS.NET.\t3600000\tA\t193.0.14.129\n"
        );
    }
}
