#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Running bulwark as a service: dropping root after binding, systemd's
//! readiness protocol and unit file, JSON logs and the query log.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hickory_proto::rr::RecordType;
use serde_json::Value;

use crate::support;
use crate::support::{QuerySpec, Server, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);
const ZONE_ORIGIN: &str = "diff.test.";

fn zone_file() -> PathBuf {
    support::data_dir().join("diff.zone")
}

/// The dist/ directory at the top of the repository.
fn dist_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist")
}

/// Serves the test zone with a configuration file holding `config` (the
/// address and zone come from flags), plus `extra` flags.
fn serve_with(config: &str, extra: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = support::temp_dir("bulwark-ops-");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(&conf, config).unwrap();
    let conf = conf.display().to_string();
    let mut args = vec!["--config", conf.as_str()];
    args.extend_from_slice(extra);
    let server = support::spawn_bulwark(&[(ZONE_ORIGIN, &zone_file())], &args);
    (server, dir)
}

fn ask(server: &Server, qname: &str, qtype: RecordType, transport: Transport) -> support::Answer {
    support::query(
        server.addr,
        &QuerySpec::new(qname, qtype),
        transport,
        TIMEOUT,
    )
    .unwrap_or_else(|e| panic!("no {transport:?} answer: {e}\n{}", server.process.log()))
}

/// Stops the server with SIGTERM, waits for it to exit and returns its log.
fn stop(mut server: Server) -> String {
    server.process.signal("TERM");
    let status = server
        .process
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("no exit after SIGTERM:\n{}", server.process.log()));
    assert!(status.success(), "{status}\n{}", server.process.log());
    server.process.log()
}

/// Every line of `log` as a JSON object; fails on any line that is not one.
fn json_lines(log: &str) -> Vec<serde_json::Map<String, Value>> {
    log.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(o)) => o,
            other => panic!("not a JSON object: {l:?} ({other:?})\nwhole log:\n{log}"),
        })
        .collect()
}

/// The `Name:` line of a /proc status file, split into its fields.
fn status_field(status_file: &Path, name: &str) -> Vec<u32> {
    let status = std::fs::read_to_string(status_file).unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name}: in {}", status_file.display()));
    line.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// The status file of every thread of process `pid`.
fn thread_status_files(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| e.unwrap().path().join("status"))
        .collect()
}

#[test]
fn started_as_root_it_runs_as_the_configured_user_and_still_answers() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: dropping privileges needs the test to run as root");
        return;
    }
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let (server, dir) = serve_with(
        "[server]\nuser = \"nobody\"\n\n[control]\nsocket = \"control.sock\"\n",
        &[],
    );
    let pid = server.process.pid();

    // Real, effective, saved and filesystem ids alike: there is no way back.
    // Every thread, including those started before the switch (the async
    // runtime's), runs with them.
    let uid = nobody.uid.as_raw();
    let gid = nobody.gid.as_raw();
    let threads = thread_status_files(pid);
    assert!(threads.len() > 1, "{threads:?}");
    let process = PathBuf::from(format!("/proc/{pid}/status"));
    for status in std::iter::once(process).chain(threads) {
        assert_eq!(status_field(&status, "Uid"), vec![uid; 4], "{status:?}");
        assert_eq!(status_field(&status, "Gid"), vec![gid; 4], "{status:?}");
        // root's supplementary groups are gone too.
        assert_eq!(status_field(&status, "Groups"), vec![gid], "{status:?}");
    }

    for transport in [Transport::Udp, Transport::Tcp] {
        let a = ask(&server, ZONE_ORIGIN, RecordType::SOA, transport);
        assert_eq!(a.rcode_name(), "NOERROR", "{transport:?}: {a}");
        assert!(a.aa && !a.answer.is_empty(), "{transport:?}: {a}");
    }
    // The control socket, made as root, now belongs to the user, so `bulwark
    // ctl` run as that user (or its group, with mode 0660) can connect.
    use std::os::unix::fs::MetadataExt;
    let socket = std::fs::metadata(dir.path().join("control.sock")).unwrap();
    assert_eq!((socket.uid(), socket.gid()), (uid, gid));

    let log = stop(server);
    assert!(log.contains("dropped root privileges"), "{log}");
}

#[test]
fn unknown_user_and_bad_module_level_are_config_errors_where_written() {
    let dir = support::temp_dir("bulwark-ops-");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        "[server]\nuser = \"no-such-user-here\"\n[log]\nmodules = { bulwark_net = \"chatty\" }\n",
    )
    .unwrap();
    let out = Command::new(support::bulwark_bin())
        .args(["serve", "--listen", "127.0.0.1:1", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let c = conf.display();
    assert!(
        stderr.contains(&format!("{c}:2:8: user: no user `no-such-user-here`")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{c}:4:27: modules: `bulwark_net`: `chatty` is not a level"
        )),
        "{stderr}"
    );
}

/// A child killed by PID when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The next notification datagram, split into its `KEY=VALUE` lines.
fn notification(socket: &UnixDatagram) -> Vec<String> {
    let mut buf = [0u8; 4096];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the deadline");
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn notify_socket_hears_ready_reloading_and_stopping_with_the_main_pid() {
    let dir = support::temp_dir("bulwark-ops-");
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(support::STARTUP_DEADLINE))
        .unwrap();
    let ready_file = dir.path().join("ready");
    let child = Command::new(support::bulwark_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--zone"])
        .arg(format!("{ZONE_ORIGIN}={}", zone_file().display()))
        .args(support::ready_file_args(&ready_file))
        .env("NOTIFY_SOCKET", &socket_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Killed(child);
    let pid = server.0.id();
    let main_pid = format!("MAINPID={pid}");

    let ready = notification(&socket);
    assert!(ready.contains(&"READY=1".to_string()), "{ready:?}");
    assert!(ready.contains(&main_pid), "{ready:?}");
    // The ready file is complete before READY=1 is sent, and READY=1 means
    // serving: a query to the port it names is answered at once.
    let bound = std::fs::read_to_string(&ready_file)
        .ok()
        .and_then(|text| support::Bound::parse(&text))
        .expect("a complete ready file by READY=1");
    assert_eq!(bound.pid, pid);
    let addr = bound.dns[0];
    let a = support::query(
        addr,
        &QuerySpec::new(ZONE_ORIGIN, RecordType::SOA),
        Transport::Udp,
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(a.rcode_name(), "NOERROR");

    let kill = |signal: &str| {
        let status = Command::new("sh")
            .args(["-c", "kill -s \"$0\" \"$1\""])
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success());
    };
    kill("HUP");
    let reloading = notification(&socket);
    assert!(
        reloading.contains(&"RELOADING=1".to_string()),
        "{reloading:?}"
    );
    assert!(
        reloading.iter().any(|l| l.starts_with("MONOTONIC_USEC=")),
        "{reloading:?}"
    );
    let ready_again = notification(&socket);
    assert!(
        ready_again.contains(&"READY=1".to_string()),
        "{ready_again:?}"
    );

    kill("TERM");
    let stopping = notification(&socket);
    assert!(stopping.contains(&"STOPPING=1".to_string()), "{stopping:?}");
    assert!(stopping.contains(&main_pid), "{stopping:?}");
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    let Some(analyze) = support::require_tool("systemd-analyze") else {
        return;
    };
    let unit = std::fs::read_to_string(dist_dir().join("systemd/bulwark.service")).unwrap();
    for line in [
        "Type=notify",
        "User=bulwark",
        "ExecStart=/usr/sbin/bulwark serve --config /etc/bulwark/bulwark.toml",
        "ExecReload=/usr/sbin/bulwark ctl --config /etc/bulwark/bulwark.toml reload",
        "RuntimeDirectory=bulwark",
        "AmbientCapabilities=CAP_NET_BIND_SERVICE",
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "SystemCallFilter=@system-service",
        "MemoryDenyWriteExecute=yes",
        "Restart=on-failure",
    ] {
        assert!(unit.lines().any(|l| l == line), "the unit lacks `{line}`");
    }
    // verify checks that ExecStart's program exists and that the user is
    // not a special one: point it at this build and an ordinary system user.
    let bin = support::bulwark_bin();
    let local = unit
        .replace("/usr/sbin/bulwark", &bin.display().to_string())
        .replace("User=bulwark", "User=daemon")
        .replace("Group=bulwark", "Group=daemon");
    let dir = support::temp_dir("bulwark-unit-");
    let path = dir.path().join("bulwark.service");
    std::fs::write(&path, local).unwrap();
    let out = Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    // Unknown directives and bad values are only warnings: none may name the unit.
    let about_unit: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("bulwark.service"))
        .collect();
    assert!(about_unit.is_empty(), "{stderr}");
}

#[test]
fn example_production_config_is_valid() {
    // Its zone files are not installed here: only the zones may fail.
    let out = Command::new(support::bulwark_bin())
        .arg("check-config")
        .arg(dist_dir().join("bulwark.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .all(|l| !l.contains("bulwark.toml:") || l.contains("zone(s) failed to load")),
        "{stderr}"
    );
    assert!(stderr.contains("2 zone(s) failed to load"), "{stderr}");
}

#[test]
fn json_logs_are_one_object_per_line_with_timestamp_level_and_message() {
    let server = support::spawn_bulwark(&[(ZONE_ORIGIN, &zone_file())], &["--log-format", "json"]);
    for transport in [Transport::Udp, Transport::Tcp] {
        ask(&server, ZONE_ORIGIN, RecordType::SOA, transport);
        ask(&server, "nope.diff.test.", RecordType::A, transport);
    }
    let log = stop(server);
    let lines = json_lines(&log);
    assert!(lines.len() >= 3, "{log}");
    for l in &lines {
        for field in ["timestamp", "level", "message", "target"] {
            assert!(l.contains_key(field), "no `{field}` in {l:?}");
        }
    }
    let messages: Vec<&str> = lines.iter().filter_map(|l| l["message"].as_str()).collect();
    assert!(messages.contains(&"ready"), "{messages:?}");
    assert!(messages.contains(&"stopped"), "{messages:?}");
}

#[test]
fn query_log_has_one_event_per_query_when_on() {
    let (server, _dir) = serve_with("[log]\nqueries = true\n", &["--log-format", "json"]);
    ask(&server, ZONE_ORIGIN, RecordType::SOA, Transport::Udp);
    ask(&server, "nope.diff.test.", RecordType::AAAA, Transport::Tcp);
    // A question cut short: answered FORMERR, logged as malformed.
    let cut_short = [0x0b, 0xad, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff];
    let formerr = support::exchange_udp(server.addr, &cut_short, 0x0bad, TIMEOUT).unwrap();
    assert_eq!(formerr[3] & 0x0f, 1, "{formerr:?}");
    let log = stop(server);
    let queries: Vec<_> = json_lines(&log)
        .into_iter()
        .filter(|l| l["target"] == "bulwark::query")
        .collect();
    let find = |qname: &str| {
        queries
            .iter()
            .find(|l| l.get("qname").and_then(Value::as_str) == Some(qname))
            .unwrap_or_else(|| panic!("no query event for {qname}:\n{log}"))
    };
    let soa = find("diff.test.");
    assert_eq!(soa["level"], "INFO");
    assert_eq!(soa["transport"], "udp");
    assert_eq!(soa["qtype"], "SOA");
    assert_eq!(soa["rcode"], "NOERROR");
    assert!(soa["client"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert!(soa["size"].as_u64().unwrap() > 12, "{soa:?}");
    let nx = find("nope.diff.test.");
    assert_eq!(nx["transport"], "tcp");
    assert_eq!(nx["qtype"], "AAAA");
    assert_eq!(nx["rcode"], "NXDOMAIN");
    let malformed = queries
        .iter()
        .find(|l| l["message"] == "malformed query")
        .unwrap_or_else(|| panic!("no malformed query event:\n{log}"));
    assert_eq!(malformed["rcode"], "FORMERR");
    assert!(malformed["error"].as_str().is_some_and(|e| !e.is_empty()));
    // One event per query: the readiness probes ask for the apex only.
    let nx_events = queries
        .iter()
        .filter(|l| l.get("qname").and_then(Value::as_str) == Some("nope.diff.test."))
        .count();
    assert_eq!(nx_events, 1, "{log}");
}

#[test]
fn query_log_is_silent_when_off() {
    let (server, _dir) = serve_with("[log]\nqueries = false\n", &["--log-format", "json"]);
    ask(&server, ZONE_ORIGIN, RecordType::SOA, Transport::Udp);
    ask(&server, ZONE_ORIGIN, RecordType::SOA, Transport::Tcp);
    let log = stop(server);
    let lines = json_lines(&log);
    assert!(
        lines.iter().all(|l| l["target"] != "bulwark::query"),
        "{log}"
    );
    // The log itself works: the server's own events are there.
    assert!(lines.iter().any(|l| l["message"] == "ready"), "{log}");
}

/// The ```toml blocks of a document, in order.
fn toml_blocks(doc: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_bulwark_snippet_in_the_migration_guide_is_a_valid_configuration() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/migration.md");
    let blocks = toml_blocks(&std::fs::read_to_string(doc).unwrap());
    assert!(blocks.len() >= 10, "found {} toml blocks", blocks.len());
    let dir = support::temp_dir("bulwark-doc-");
    for (i, block) in blocks.iter().enumerate() {
        let path = dir.path().join(format!("snippet{i}.toml"));
        std::fs::write(&path, block).unwrap();
        let out = Command::new(support::bulwark_bin())
            .arg("check-config")
            .arg(&path)
            .output()
            .unwrap();
        // Zone files named in the snippets do not exist here; nothing else may fail.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let name = format!("snippet{i}.toml:");
        assert!(
            stderr
                .lines()
                .all(|l| !l.contains(&name) || l.contains("zone(s) failed to load")),
            "snippet {i}:\n{block}\n{stderr}"
        );
    }
}

/// `bulwark serve` run as `nobody` through setpriv(1), with `config` as its
/// configuration file (readable by nobody) and the test zone, on port 0.
/// With `ready`, returns once its ready file names the port it got (kept in
/// a directory nobody may write); otherwise at once, `addr` unknown.
fn serve_as_nobody(setpriv: &Path, config: &str, ready: bool) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let dir = support::temp_dir("bulwark-ops-");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(&conf, config).unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ready_file = run.join("ready");
    let mut args: Vec<String> = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        .map(String::from)
        .to_vec();
    args.push(support::bulwark_bin().display().to_string());
    args.extend(["serve", "--config"].map(String::from));
    args.push(conf.display().to_string());
    args.extend([
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
        "--zone".to_string(),
    ]);
    args.push(format!("{ZONE_ORIGIN}={}", zone_file().display()));
    args.extend(support::ready_file_args(&ready_file));
    let log = dir.path().join("bulwark.log");
    let mut process = support::ChildGuard::spawn("bulwark", setpriv, &args, log);
    let addr = if ready {
        support::wait_ready_file(&mut process, &ready_file).dns[0]
    } else {
        ([127, 0, 0, 1], 0).into()
    };
    Server { process, addr, dir }
}

#[test]
fn started_as_another_user_it_keeps_its_own_identity_and_refuses_a_different_one() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: starting bulwark as nobody needs the test to run as root");
        return;
    }
    let Some(setpriv) = support::require_tool("setpriv") else {
        return;
    };
    // Already the configured user: nothing to switch, it serves.
    let mut server = serve_as_nobody(&setpriv, "[server]\nuser = \"nobody\"\n", true);
    server.wait_ready(ZONE_ORIGIN, RecordType::SOA, |a| a.rcode == 0);
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let status = PathBuf::from(format!("/proc/{}/status", server.process.pid()));
    assert_eq!(status_field(&status, "Uid"), vec![nobody.uid.as_raw(); 4]);
    drop(server);

    // Someone else: only root can switch, so it stops with a clear error.
    let mut server = serve_as_nobody(&setpriv, "[server]\nuser = \"daemon\"\n", false);
    let status = server
        .process
        .wait_exit(support::STARTUP_DEADLINE)
        .unwrap_or_else(|| panic!("still running:\n{}", server.process.log()));
    assert_eq!(status.code(), Some(1));
    let log = server.process.log();
    assert!(
        log.contains("[server] user is `daemon`") && log.contains("cannot switch users"),
        "{log}"
    );
}

#[test]
fn module_levels_are_laid_over_the_base_level() {
    // Base level warn hides the server's info events; the query log's own
    // module level lets its events through.
    let config =
        "[log]\nlevel = \"warn\"\nqueries = true\nmodules = { \"bulwark::query\" = \"info\" }\n";
    let (server, _dir) = serve_with(config, &["--log-format", "json"]);
    ask(&server, "nope.diff.test.", RecordType::A, Transport::Udp);
    let log = stop(server);
    let lines = json_lines(&log);
    assert!(
        lines
            .iter()
            .any(|l| l.get("qname").and_then(Value::as_str) == Some("nope.diff.test.")),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["target"] == "bulwark::query" || l["level"] != "INFO"),
        "{log}"
    );
}
