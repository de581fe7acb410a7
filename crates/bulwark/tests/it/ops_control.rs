#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `bulwark ctl` against a running server: every command, its output and its
//! exit status, and the errors an operator meets when something is off.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use hickory_proto::rr::RecordType;
use serde_json::Value;

use crate::support;
use crate::support::{QuerySpec, Server, Transport};

const TIMEOUT: Duration = Duration::from_secs(5);
const ORIGIN: &str = "example.test.";

fn zone_text(serial: u32, extra: &str) -> String {
    format!(
        "$ORIGIN example.test.\n$TTL 300\n@ IN SOA ns1 hostmaster {serial} 3600 900 604800 300\n  IN NS ns1\nns1 IN A 192.0.2.1\nwww IN A 192.0.2.80\n{extra}"
    )
}

/// A server from a configuration file with a control socket, serving
/// `example.test.` from `zone.db` in the same directory.
struct Controlled {
    server: Server,
    socket: PathBuf,
    zone: PathBuf,
    config: PathBuf,
    /// Holds the configuration, zone and socket; removed when dropped.
    _dir: tempfile::TempDir,
}

/// The control socket is bound before the server writes its ready file, and
/// `spawn_bulwark` waits for that file: the socket is there on return.
fn start() -> Controlled {
    let dir = support::temp_dir("bulwark-ctl-");
    let zone = dir.path().join("zone.db");
    std::fs::write(&zone, zone_text(7, "")).unwrap();
    let socket = dir.path().join("control.sock");
    let config = dir.path().join("bulwark.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n[[zone]]\norigin = \"{ORIGIN}\"\nfile = \"zone.db\"\n",
            socket.display()
        ),
    )
    .unwrap();
    let config_arg = config.display().to_string();
    let server = support::spawn_bulwark(&[], &["--config", config_arg.as_str()]);
    assert!(
        socket.exists(),
        "no control socket at {}:\n{}",
        socket.display(),
        server.process.log()
    );
    Controlled {
        server,
        socket,
        zone,
        config,
        _dir: dir,
    }
}

fn ctl(socket: &Path, words: &[&str]) -> Output {
    Command::new(support::bulwark_bin())
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a command that must succeed and returns its output.
fn ok(c: &Controlled, words: &[&str]) -> String {
    let out = ctl(&c.socket, words);
    assert!(
        out.status.success(),
        "ctl {words:?}: {}\nstdout: {}\nstderr: {}\nserver log:\n{}",
        out.status,
        stdout(&out),
        stderr(&out),
        c.server.process.log()
    );
    stdout(&out)
}

fn ask(c: &Controlled, qname: &str) -> support::Answer {
    support::query_retry(
        c.server.addr,
        &QuerySpec::new(qname, RecordType::A),
        Transport::Udp,
        TIMEOUT,
        3,
    )
    .unwrap()
}

/// The value of the sample `name{labels}` in Prometheus text, 0 when absent.
fn sample(text: &str, name_and_labels: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn status_describes_the_server() {
    let c = start();
    let out = ok(&c, &["status"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("version {}", env!("CARGO_PKG_VERSION")));
    assert!(
        lines[1].starts_with("uptime ") && lines[1].ends_with('s'),
        "{out}"
    );
    assert!(
        lines.contains(&format!("listen {} udp tcp", c.server.addr).as_str()),
        "{out}"
    );
    assert!(lines.contains(&"udp workers 1"), "{out}");
    assert!(lines.contains(&"zones 1 loaded of 1"), "{out}");
    assert!(
        lines.contains(&format!("control {}", c.socket.display()).as_str()),
        "{out}"
    );
    assert!(lines.contains(&"prometheus off"), "{out}");
}

#[test]
fn zone_list_and_zone_status_show_serial_and_file() {
    let c = start();
    let list = ok(&c, &["zone", "list"]);
    let line = list.trim();
    assert!(
        line.starts_with("example.test. 7 ")
            && line.ends_with("zone.db")
            && list.lines().count() == 1,
        "{list}"
    );
    let status = ok(&c, &["zone", "status", ORIGIN]);
    for line in [
        "zone: example.test.",
        "serial: 7",
        "loaded from: file",
        "names: 3",
        "dnssec: unsigned",
    ] {
        assert!(status.lines().any(|l| l == line), "{line:?} in\n{status}");
    }
    assert!(
        status.lines().any(|l| l.starts_with("loaded at: 20")),
        "{status}"
    );
    // A name is a name with or without its final dot, in any case.
    let again = ok(&c, &["zone", "status", "EXAMPLE.test"]);
    assert!(again.contains("serial: 7"), "{again}");
}

#[test]
fn unknown_zone_and_unknown_command_fail_with_a_clear_error() {
    let c = start();
    let out = ctl(&c.socket, &["zone", "status", "nope.test."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown zone nope.test.: it is not in the configuration"),
        "{}",
        stderr(&out)
    );
    let out = ctl(&c.socket, &["zone", "reload", "nope.test."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown zone nope.test."),
        "{}",
        stderr(&out)
    );
    let out = ctl(&c.socket, &["zone", "status", "bad..name"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a zone name"),
        "{}",
        stderr(&out)
    );
    // Not a command at all: the command line parser names it.
    let out = ctl(&c.socket, &["frobnicate"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("frobnicate"), "{}", stderr(&out));
}

#[test]
fn zone_reload_serves_the_new_copy_and_keeps_the_old_one_when_the_file_is_broken() {
    let c = start();
    assert_eq!(ask(&c, "new.example.test.").rcode_name(), "NXDOMAIN");

    std::fs::write(&c.zone, zone_text(8, "new IN A 192.0.2.99\n")).unwrap();
    let out = ok(&c, &["zone", "reload", ORIGIN]);
    assert!(out.contains("example.test."), "{out}");
    let answer = ask(&c, "new.example.test.");
    assert_eq!(answer.rcode_name(), "NOERROR");
    assert_eq!(answer.rdata_of("A"), vec!["192.0.2.99".to_string()]);
    assert!(ok(&c, &["zone", "status", ORIGIN]).contains("serial: 8"));

    // A broken file: the command fails, naming the problem; the last good
    // copy stays in service.
    std::fs::write(&c.zone, zone_text(9, "broken IN A not-an-address\n")).unwrap();
    let out = ctl(&c.socket, &["zone", "reload", ORIGIN]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("zone example.test. failed to load"), "{err}");
    assert!(err.contains("zone.db"), "the error names the file: {err}");
    assert_eq!(ask(&c, "new.example.test.").rcode_name(), "NOERROR");
    assert!(ok(&c, &["zone", "status", ORIGIN]).contains("serial: 8"));
}

#[test]
fn reload_rereads_configuration_and_zones() {
    let c = start();
    std::fs::write(&c.zone, zone_text(10, "added IN A 192.0.2.10\n")).unwrap();
    let other = c.config.parent().unwrap().join("other.db");
    std::fs::write(
        &other,
        "$ORIGIN other.test.\n$TTL 300\n@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  IN NS ns1\nns1 IN A 192.0.2.1\n",
    )
    .unwrap();
    let mut text = std::fs::read_to_string(&c.config).unwrap();
    text.push_str("\n[[zone]]\norigin = \"other.test.\"\nfile = \"other.db\"\n");
    std::fs::write(&c.config, text).unwrap();

    ok(&c, &["reload"]);
    assert_eq!(ask(&c, "added.example.test.").rcode_name(), "NOERROR");
    let list = ok(&c, &["zone", "list"]);
    assert!(
        list.lines().any(|l| l.starts_with("other.test. 1 ")),
        "{list}"
    );
    assert!(ok(&c, &["status"]).contains("zones 2 loaded of 2"));
}

#[test]
fn stats_counts_what_was_sent_in_text_and_json() {
    let c = start();
    let before = ok(&c, &["stats"]);
    let key_a = "bulwark_queries_total{transport=\"udp\",opcode=\"QUERY\",qtype=\"A\"}";
    let key_nx = "bulwark_responses_total{transport=\"udp\",rcode=\"NXDOMAIN\"}";
    for _ in 0..20 {
        assert_eq!(ask(&c, "www.example.test.").rcode_name(), "NOERROR");
    }
    for _ in 0..5 {
        assert_eq!(ask(&c, "missing.example.test.").rcode_name(), "NXDOMAIN");
    }
    let after = ok(&c, &["stats"]);
    assert!(
        sample(&after, key_a) >= sample(&before, key_a) + 25,
        "before:\n{before}\nafter:\n{after}"
    );
    assert!(
        sample(&after, key_nx) >= sample(&before, key_nx) + 5,
        "{after}"
    );
    // Every line of the text form is `name{labels} value` or `name value`.
    for line in after.lines() {
        let (name, value) = line.rsplit_once(' ').unwrap();
        assert!(name.starts_with("bulwark_"), "{line}");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }

    let json = ok(&c, &["stats", "--json"]);
    let doc: Value = serde_json::from_str(json.trim()).unwrap();
    let samples = doc["bulwark_queries_total"]["samples"].as_array().unwrap();
    let a = samples
        .iter()
        .find(|s| s["labels"]["transport"] == "udp" && s["labels"]["qtype"] == "A")
        .unwrap();
    assert!(a["value"].as_u64().unwrap() >= sample(&before, key_a) + 25);
    assert_eq!(doc["bulwark_queries_total"]["type"], "counter");

    let out = ctl(&c.socket, &["stats", "--yaml"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--yaml"), "{}", stderr(&out));
}

#[test]
fn stop_ends_the_server_cleanly_and_removes_the_socket() {
    let mut c = start();
    let out = ok(&c, &["stop"]);
    assert!(out.contains("stopping"), "{out}");
    let status = c
        .server
        .process
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("still running:\n{}", c.server.process.log()));
    assert!(status.success(), "{status}");
    assert!(!c.socket.exists());
    // Now nothing listens: a clear error naming the socket, exit status 1.
    let out = ctl(&c.socket, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&c.socket.display().to_string()), "{err}");
}

#[test]
fn a_socket_nobody_listens_on_and_a_path_that_is_no_socket_are_reported() {
    let dir = support::temp_dir("bulwark-ctl-none-");
    // A socket file left behind by a server that is gone.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let out = ctl(&stale, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&stale.display().to_string()), "{err}");
    assert!(
        err.to_lowercase().contains("not running") || err.contains("refused"),
        "{err}"
    );

    let plain = dir.path().join("plain-file");
    std::fs::write(&plain, "not a socket").unwrap();
    let out = ctl(&plain, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&plain.display().to_string()),
        "{}",
        stderr(&out)
    );

    let missing = dir.path().join("missing.sock");
    let out = ctl(&missing, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&missing.display().to_string()),
        "{}",
        stderr(&out)
    );
}
