//! bulwark as the resolver under test, through the interface its resolver
//! is being built to (the `[resolver]` section, `--test-clock` and
//! `bulwark ctl test-clock advance`):
//!
//! ```text
//! bulwark serve --config FILE --ready-file FILE --test-clock UNIX_SECONDS
//! bulwark ctl --socket SOCKET test-clock advance SECONDS
//! ```
//!
//! The configuration says where to listen, where the control socket is, and
//! what the scenario asks of the resolver: root hints (addresses only),
//! QNAME minimisation, a forwarder for `.`, recursion for everyone, whether
//! loopback servers may be asked; and for the project's own scenarios
//! (`crates/deckard/scenarios`), forward and stub zones and serve-stale.
//! The validation scenarios' trust anchors and `domain-insecure` names go
//! to `trust_anchors` and `negative_trust_anchors` (validation is on only
//! when a scenario has anchors). `harden-glue`, `do-ip4` and `do-ip6` have
//! no key yet and are not passed.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::resolver::{Daemon, Resolver, ResolverSettings, RunningResolver};
use crate::scenario::Scenario;

/// How long bulwark has to write its ready file.
const STARTUP: Duration = Duration::from_secs(10);

/// The bulwark binary to test.
#[derive(Debug, Clone)]
pub struct Bulwark {
    pub binary: PathBuf,
}

impl Bulwark {
    pub fn new(binary: PathBuf) -> Bulwark {
        Bulwark { binary }
    }
}

impl Resolver for Bulwark {
    fn name(&self) -> &str {
        "bulwark"
    }

    fn skip_reason(&self, scenario: &Scenario) -> Option<String> {
        if !scenario.config.harden_glue {
            // Unbound's `harden-glue: no` believes glue from outside the
            // server's bailiwick: the hole cache poisoning used. bulwark
            // has no such switch (RFC 2181 §5.4.1).
            return Some("harden-glue: no (out-of-bailiwick glue believed)".to_string());
        }
        let features = &scenario.config.features;
        (!features.is_empty()).then(|| {
            format!(
                "Knot Resolver features ({}) with no bulwark equivalent",
                features.join("; ")
            )
        })
    }

    fn start(&self, settings: &ResolverSettings) -> Result<Box<dyn RunningResolver>, String> {
        let dir = &settings.work_dir;
        let control = dir.join("control.sock");
        let config_path = dir.join("bulwark.toml");
        fs::write(&config_path, config(settings, &control))
            .map_err(|e| format!("{}: {e}", config_path.display()))?;
        let ready = dir.join("ready");
        let args = [
            "serve".to_string(),
            "--config".to_string(),
            config_path.display().to_string(),
            "--ready-file".to_string(),
            ready.display().to_string(),
            "--test-clock".to_string(),
            settings.start_time.to_string(),
        ];
        let mut daemon = Daemon::spawn("bulwark", &self.binary, &args, &[], dir)?;
        wait_ready(&mut daemon, &ready)?;
        Ok(Box::new(RunningBulwark {
            daemon,
            binary: self.binary.clone(),
            control,
        }))
    }
}

/// Waits for a complete ready file (last line `ready`) naming our PID.
fn wait_ready(daemon: &mut Daemon, ready: &Path) -> Result<(), String> {
    let deadline = Instant::now() + STARTUP;
    loop {
        let text = fs::read_to_string(ready).unwrap_or_default();
        let complete = text.lines().last() == Some("ready");
        let ours = text.lines().any(|l| {
            l.strip_prefix("pid ")
                .and_then(|p| p.trim().parse::<u32>().ok())
                == Some(daemon.pid())
        });
        if complete && ours {
            return Ok(());
        }
        if let Some(status) = daemon.exited() {
            let log = daemon.log_tail(40);
            let first = log.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(format!(
                "bulwark exited with {status} before it was ready: {first}\nits log:\n{log}"
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "bulwark wrote no ready file {} within {STARTUP:?}; its log:\n{}",
                ready.display(),
                daemon.log_tail(40)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct RunningBulwark {
    daemon: Daemon,
    binary: PathBuf,
    control: PathBuf,
}

impl RunningResolver for RunningBulwark {
    fn pid(&self) -> u32 {
        self.daemon.pid()
    }

    fn advance_time(&mut self, seconds: u64) -> Result<(), String> {
        let out = Command::new(&self.binary)
            .arg("ctl")
            .arg("--socket")
            .arg(&self.control)
            .args(["test-clock", "advance", &seconds.to_string()])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run bulwark ctl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "bulwark ctl test-clock advance {seconds}: {}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
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

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_list<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().map(|s| toml_string(&s)).collect();
    format!("[{}]", items.join(", "))
}

/// The configuration file for `settings`.
pub fn config(s: &ResolverSettings, control: &Path) -> String {
    let listen = match s.listen {
        std::net::IpAddr::V4(a) => format!("{a}:53"),
        std::net::IpAddr::V6(a) => format!("[{a}]:53"),
    };
    let mut c = String::new();
    let _ = writeln!(c, "[server]");
    let _ = writeln!(c, "listen = {}", toml_list([listen]));
    let _ = writeln!(c, "threads = 1");
    let _ = writeln!(c);
    let _ = writeln!(c, "[control]");
    let _ = writeln!(
        c,
        "socket = {}",
        toml_string(&control.display().to_string())
    );
    let _ = writeln!(c);
    let _ = writeln!(c, "[resolver]");
    if !s.root_hints.is_empty() {
        let _ = writeln!(
            c,
            "root_hints = {}",
            toml_list(s.root_hints.iter().map(|(_, a)| a.to_string()))
        );
    }
    let _ = writeln!(c, "qname_minimisation = {}", s.qname_minimisation);
    let zone_table = |zone: &str, addresses: &[std::net::IpAddr]| {
        format!(
            "{{ zone = {}, addresses = {} }}",
            toml_string(zone),
            toml_list(addresses.iter().map(ToString::to_string))
        )
    };
    let mut forwards: Vec<String> = s
        .forward
        .map(|f| zone_table(".", &[f]))
        .into_iter()
        .collect();
    forwards.extend(
        s.forward_zones
            .iter()
            .map(|z| zone_table(&z.zone.to_string(), &z.addresses)),
    );
    if !forwards.is_empty() {
        let _ = writeln!(c, "forward = [{}]", forwards.join(", "));
    }
    if !s.stub_zones.is_empty() {
        let stubs: Vec<String> = s
            .stub_zones
            .iter()
            .map(|z| zone_table(&z.zone.to_string(), &z.addresses))
            .collect();
        let _ = writeln!(c, "stub = [{}]", stubs.join(", "));
    }
    if let Some(stale) = &s.serve_stale {
        let _ = writeln!(c, "serve_stale = {}", toml_string(stale));
    }
    let _ = writeln!(
        c,
        "allow_recursion = {}",
        toml_list(["0.0.0.0/0".to_string(), "::/0".to_string()])
    );
    let _ = writeln!(c, "query_localhost = {}", s.query_localhost);
    // The scenario's trust anchors, or none: then nothing is validated
    // (a scenario without anchors expects no AD and no SERVFAIL for
    // signatures).
    if s.trust_anchors.is_empty() {
        let _ = writeln!(c, "dnssec_validation = false");
    } else {
        let _ = writeln!(c, "dnssec_validation = true");
        // Deckard's own configuration turns Unbound's off: the scenarios
        // script no `_ta-` query.
        let _ = writeln!(c, "key_tag_signaling = false");
        let _ = writeln!(
            c,
            "trust_anchors = {}",
            toml_list(s.trust_anchors.iter().cloned())
        );
        if !s.negative_trust_anchors.is_empty() {
            let _ = writeln!(
                c,
                "negative_trust_anchors = {}",
                toml_list(s.negative_trust_anchors.iter().map(ToString::to_string))
            );
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::RESOLVER_V6;

    #[test]
    fn the_configuration_carries_every_setting_of_the_interface() {
        let s = ResolverSettings {
            listen: RESOLVER_V6,
            root_hints: vec![(
                "K.ROOT-SERVERS.NET.".parse().unwrap(),
                "2001:dc3::35".parse().unwrap(),
            )],
            qname_minimisation: true,
            trust_anchors: vec![". IN DS 20326 8 2 E06D44B8".to_string()],
            negative_trust_anchors: vec!["mx-ns.mx.".parse().unwrap()],
            forward: Some("192.0.2.1".parse().unwrap()),
            forward_zones: Vec::new(),
            stub_zones: Vec::new(),
            serve_stale: None,
            query_localhost: false,
            harden_glue: true,
            do_ip4: false,
            do_ip6: true,
            start_time: 1_485_281_000,
            work_dir: PathBuf::from("/w"),
        };
        assert_eq!(
            config(&s, Path::new("/w/control.sock")),
            "[server]\nlisten = [\"[fd00:dec::2]:53\"]\nthreads = 1\n\n\
             [control]\nsocket = \"/w/control.sock\"\n\n\
             [resolver]\nroot_hints = [\"2001:dc3::35\"]\nqname_minimisation = true\n\
             forward = [{ zone = \".\", addresses = [\"192.0.2.1\"] }]\n\
             allow_recursion = [\"0.0.0.0/0\", \"::/0\"]\nquery_localhost = false\n\
             dnssec_validation = true\nkey_tag_signaling = false\ntrust_anchors = [\". IN DS 20326 8 2 E06D44B8\"]\n\
             negative_trust_anchors = [\"mx-ns.mx.\"]\n"
        );
    }

    #[test]
    fn forward_and_stub_zones_and_serve_stale_are_written() {
        let zone = |name: &str, addresses: &[&str]| crate::config::ZoneServers {
            zone: name.parse().unwrap(),
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
        };
        let s = ResolverSettings {
            listen: "127.127.0.2".parse().unwrap(),
            root_hints: Vec::new(),
            qname_minimisation: false,
            trust_anchors: Vec::new(),
            negative_trust_anchors: Vec::new(),
            forward: None,
            forward_zones: vec![zone("corp.example.", &["10.0.0.1", "10.0.0.2"])],
            stub_zones: vec![zone("lab.example.", &["fd00::53"])],
            serve_stale: Some("1d".to_string()),
            query_localhost: false,
            harden_glue: true,
            do_ip4: true,
            do_ip6: true,
            start_time: 0,
            work_dir: PathBuf::from("/w"),
        };
        let c = config(&s, Path::new("/w/control.sock"));
        for expected in [
            "forward = [{ zone = \"corp.example.\", addresses = [\"10.0.0.1\", \"10.0.0.2\"] }]\n",
            "stub = [{ zone = \"lab.example.\", addresses = [\"fd00::53\"] }]\n",
            "serve_stale = \"1d\"\n",
            // No trust anchor in the scenario: nothing is validated.
            "dnssec_validation = false\n",
        ] {
            assert!(c.contains(expected), "missing {expected:?} in\n{c}");
        }
    }

    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(toml_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
