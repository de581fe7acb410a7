#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The binary's configuration and checking commands, run as a user would.

use std::path::Path;
use std::process::{Command, Output};

use hickory_proto::rr::RecordType;

use crate::support;

const BIN: &str = env!("CARGO_BIN_EXE_bulwark");

const ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 1 3600 900 604800 300
    IN NS  ns1
ns1 IN A   192.0.2.1
";

fn run(args: &[&str], file: &Path) -> Output {
    Command::new(BIN).args(args).arg(file).output().unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn serve_rejects_an_unknown_key_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        dir.path(),
        "bulwark.toml",
        "[server]\nlisten = [\"127.0.0.1:1\"]\n  threadz = 4\n",
    );
    let out = run(&["serve", "--config"], &conf);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:3: ", conf.display())),
        "{stderr}"
    );
    assert!(stderr.contains("threadz"), "{stderr}");
}

#[test]
fn check_config_accepts_a_good_file_with_relative_zone_paths() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "example.test.zone", ZONE);
    let conf = write(
        dir.path(),
        "bulwark.toml",
        "[server]\nlisten = [\"127.0.0.1:5353\", \"[::1]:5353\"]\nidentity = \"ns1\"\n\n\
         [log]\nformat = \"json\"\n\n[[zone]]\norigin = \"example.test.\"\nfile = \"example.test.zone\"\n",
    );
    let out = run(&["check-config"], &conf);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 zone(s)"));
}

#[test]
fn check_config_reports_every_bad_value_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        dir.path(),
        "bulwark.toml",
        "[server]\nlisten = [\"localhost\"]\n[[zone]]\norigin = \"a.test\"\nfile = \"a\"\n[[zone]]\norigin = \"a.test.\"\nfile = \"b\"\n",
    );
    let out = run(&["check-config"], &conf);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let c = conf.display().to_string();
    assert!(stderr.contains(&format!("{c}:2:11: listen")), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{c}:7:10: zone a.test. is already defined at {c}:4:10"
        )),
        "{stderr}"
    );
}

#[test]
fn check_zone_prints_problems_and_fails_on_a_broken_zone() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.zone", ZONE);
    let out = Command::new(BIN)
        .args(["check-zone", "example.test"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("serial 1"));

    let bad = write(
        dir.path(),
        "bad.zone",
        &format!("{ZONE}www IN A 300.1.1.1\n"),
    );
    let out = Command::new(BIN)
        .args(["check-zone", "example.test"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:6:", bad.display())),
        "{stderr}"
    );
}

#[test]
fn ctl_without_a_server_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["ctl", "--socket"])
        .arg(dir.path().join("none.sock"))
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn version_prints_the_package_version() {
    let out = Command::new(BIN).arg("version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn serve_logs_the_first_load_warnings_and_counts_the_rest() {
    // 25 MX records whose in-zone target has no address: 25 warnings.
    let mut text = String::from(ZONE);
    for i in 0..25 {
        text.push_str(&format!("m{i} IN MX 10 nohost\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let zone = write(dir.path(), "warned.zone", &text);
    let mut server = support::spawn_bulwark(&[("example.test.", &zone)], &[]);
    server.wait_ready("example.test.", RecordType::SOA, |a| {
        a.rcode_name() == "NOERROR"
    });
    let log = server.process.log();
    // Each read is logged with its size and time (docs/zone-files.md).
    assert!(
        log.lines()
            .any(|l| l.contains("zone file read") && l.contains("names=")),
        "{log}"
    );
    let one_by_one = log
        .lines()
        .filter(|l| l.contains("has no A or AAAA record"))
        .count();
    assert_eq!(one_by_one, 20, "{log}");
    assert!(
        log.contains("5 more warnings not logged; `bulwark check-zone example.test."),
        "{log}"
    );
    // check-zone still lists every one.
    let out = Command::new(BIN)
        .args(["check-zone", "example.test."])
        .arg(&zone)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("has no A or AAAA record").count(),
        25,
        "{stderr}"
    );
}
