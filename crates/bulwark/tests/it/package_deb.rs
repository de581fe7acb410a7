#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The Debian package: `scripts/package-deb.sh` packages the binary these
//! tests already have (no second build), and the result is checked twice: its
//! contents and lintian's verdict, then installed on this machine with dpkg,
//! looked at where an operator would look, and purged.
//!
//! Only `package_installs_and_purges_cleanly` installs. It holds a lock on
//! the machine meanwhile, so two runs of the suite cannot install at once, and
//! a guard purges the package (and removes the user, if the test made it)
//! even when the test fails.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::support;

const PACKAGE: &str = "bulwark";
const INSTALLED_BINARY: &str = "/usr/sbin/bulwark";
const CONFFILE: &str = "/etc/bulwark/bulwark.toml";
const STATE_DIR: &str = "/var/lib/bulwark";
/// Where the unit may land: bookworm's systemd looks in /lib, later ones in /usr/lib.
const UNIT_DIRS: [&str; 2] = ["/usr/lib/systemd/system", "/lib/systemd/system"];
const MAN_PAGE: &str = "/usr/share/man/man8/bulwark.8.gz";
const COMPLETIONS: [&str; 3] = [
    "/usr/share/bash-completion/completions/bulwark",
    "/usr/share/zsh/vendor-completions/_bulwark",
    "/usr/share/fish/vendor_completions.d/bulwark.fish",
];
/// Taken (with flock(1)) by whoever installs the package on this machine.
const MACHINE_LOCK: &str = "bulwark-package-deb.lock";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// Runs `program`, fails the test unless it succeeds, returns its stdout.
fn run_ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {} failed ({}):\n{}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// True when every tool is there; outside CI, prints why the test is skipped.
fn tools_present(tools: &[&str]) -> bool {
    tools
        .iter()
        .all(|tool| support::require_tool(tool).is_some())
}

/// Builds the package from the test binary into `out`; returns its path.
fn build_package(out: &Path) -> PathBuf {
    let script = repo_root().join("scripts/package-deb.sh");
    let bin = support::bulwark_bin();
    let stdout = run_ok(
        "bash",
        &[
            script.to_str().unwrap(),
            "--binary",
            bin.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            // Faster than xz, and as ordinary to dpkg and lintian.
            "--compression",
            "gzip",
        ],
    );
    let deb = PathBuf::from(stdout.lines().last().expect("the script prints the path"));
    assert!(deb.is_file(), "{}", deb.display());
    deb
}

fn package_installed() -> bool {
    let out = run("dpkg-query", &["-W", "-f=${db:Status-Status}", PACKAGE]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() != "not-installed"
}

fn user_exists(name: &str) -> bool {
    run("getent", &["passwd", name]).status.success()
}

fn installed_unit() -> Option<PathBuf> {
    UNIT_DIRS
        .iter()
        .map(|dir| Path::new(dir).join("bulwark.service"))
        .find(|unit| unit.is_file())
}

/// An exclusive lock on this machine's package database for this test,
/// held by an flock(1) child until its stdin closes: when this guard drops,
/// or when the test process dies however it dies.
struct MachineLock {
    holder: Child,
}

impl MachineLock {
    fn acquire() -> MachineLock {
        let path = std::env::temp_dir().join(MACHINE_LOCK);
        let mut holder = Command::new("flock")
            .arg("--exclusive")
            .arg(&path)
            .args(["-c", "echo locked; exec cat >/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run flock");
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "flock {}", path.display());
        MachineLock { holder }
    }
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        drop(self.holder.stdin.take());
        let _ = self.holder.wait();
    }
}

/// Purges the package when dropped, and removes the `bulwark` user and group
/// if this test is what made them, so a failed run leaves the machine as it
/// found it.
struct InstalledPackage {
    remove_user: bool,
}

impl Drop for InstalledPackage {
    fn drop(&mut self) {
        let out = run("dpkg", &["--purge", PACKAGE]);
        if !out.status.success() {
            eprintln!(
                "cleanup: dpkg --purge {PACKAGE} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if self.remove_user {
            // userdel also removes the user's own group when no one else is in it.
            let _ = run("userdel", &[PACKAGE]);
            if run("getent", &["group", PACKAGE]).status.success() {
                let _ = run("groupdel", &[PACKAGE]);
            }
        }
    }
}

/// Processes running the installed binary (others run the test build).
fn processes_of(binary: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(exe) = std::fs::read_link(entry.path().join("exe")) {
            if exe == Path::new(binary) {
                found.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[test]
fn package_has_debian_layout_and_passes_lintian() {
    if !tools_present(&["dpkg-deb", "lintian"]) {
        return;
    }
    let dir = support::temp_dir("bulwark-deb-");
    let deb = build_package(dir.path());
    let deb = deb.to_str().unwrap();

    let control = run_ok("dpkg-deb", &["--field", deb]);
    let arch = run_ok("dpkg", &["--print-architecture"]);
    for field in [
        "Package: bulwark".to_string(),
        format!("Version: {}", env!("CARGO_PKG_VERSION")),
        format!("Architecture: {}", arch.trim()),
        "Section: net".to_string(),
        "Priority: optional".to_string(),
    ] {
        assert!(
            control.lines().any(|l| l == field),
            "no `{field}`:\n{control}"
        );
    }
    let depends = control
        .lines()
        .find_map(|l| l.strip_prefix("Depends: "))
        .unwrap_or_else(|| panic!("no Depends:\n{control}"));
    assert!(
        depends.contains("libc6") && depends.contains("adduser"),
        "{depends}"
    );
    let conffiles = run_ok("dpkg-deb", &["--info", deb, "conffiles"]);
    assert_eq!(conffiles.trim(), CONFFILE);

    let listing = run_ok("dpkg-deb", &["--contents", deb]);
    let files: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(|p| p.trim_start_matches('.'))
        .collect();
    for wanted in [
        INSTALLED_BINARY,
        CONFFILE,
        MAN_PAGE,
        "/usr/share/man/man8/bulwark-serve.8.gz",
        "/usr/share/man/man8/bulwark-ctl-zone-reload.8.gz",
        "/usr/share/doc/bulwark/copyright",
        "/usr/share/doc/bulwark/changelog.gz",
        "/usr/lib/sysusers.d/bulwark.conf",
        "/usr/lib/tmpfiles.d/bulwark.conf",
    ]
    .into_iter()
    .chain(COMPLETIONS)
    {
        assert!(files.contains(&wanted), "no {wanted} in\n{listing}");
    }
    assert!(
        UNIT_DIRS
            .iter()
            .any(|d| files.contains(&format!("{d}/bulwark.service").as_str())),
        "no unit in\n{listing}"
    );
    // Nothing enables the unit behind the operator's back.
    assert!(!listing.contains(".wants/"), "{listing}");
    assert!(
        listing.lines().all(|l| l.contains(" root/root ")),
        "{listing}"
    );

    let lintian = run("lintian", &["--fail-on", "error", deb]);
    let report = String::from_utf8_lossy(&lintian.stdout);
    println!("lintian:\n{report}");
    assert!(
        lintian.status.success(),
        "lintian found errors:\n{report}\n{}",
        String::from_utf8_lossy(&lintian.stderr)
    );
}

#[test]
fn package_installs_and_purges_cleanly() {
    if !tools_present(&[
        "dpkg",
        "dpkg-deb",
        "adduser",
        "man",
        "systemd-analyze",
        "systemctl",
        "setpriv",
        "flock",
    ]) {
        return;
    }
    if !nix::unistd::Uid::effective().is_root() {
        assert!(
            !support::in_ci(),
            "installing a package needs root, and CI is set"
        );
        eprintln!("SKIPPED: installing a package needs root");
        return;
    }
    let _lock = MachineLock::acquire();
    if package_installed() || Path::new(INSTALLED_BINARY).exists() || Path::new(CONFFILE).exists() {
        // Someone's own bulwark (packaged or installed by hand): not ours to
        // replace, nor to purge.
        assert!(
            !support::in_ci(),
            "bulwark is already installed on this CI machine"
        );
        eprintln!("SKIPPED: bulwark is already installed here ({INSTALLED_BINARY} or the package)");
        return;
    }
    let dir = support::temp_dir("bulwark-deb-");
    let deb = build_package(dir.path());

    let _installed = InstalledPackage {
        remove_user: !user_exists(PACKAGE),
    };
    // Slim Debian images tell dpkg to leave man pages out; this test wants them.
    let out = run_ok(
        "dpkg",
        &[
            "--path-include=/usr/share/man/man8/bulwark*",
            "--install",
            deb.to_str().unwrap(),
        ],
    );
    println!("dpkg --install:\n{out}");

    // The binary, where the unit runs it from.
    let version = run_ok(INSTALLED_BINARY, &["--version"]);
    assert_eq!(
        version.trim(),
        format!("bulwark {}", env!("CARGO_PKG_VERSION"))
    );

    // The man pages, found by man and rendered.
    let page = run_ok("man", &["-w", "bulwark"]);
    assert_eq!(page.trim(), MAN_PAGE);
    let serve_page = run_ok("man", &["-w", "8", "bulwark-serve"]);
    assert!(serve_page.contains("bulwark-serve.8"), "{serve_page}");
    let rendered = run_ok("man", &["-l", MAN_PAGE]);
    for section in [
        "SYNOPSIS",
        "SUBCOMMANDS",
        "FILES",
        "/etc/bulwark/bulwark.toml",
    ] {
        assert!(rendered.contains(section), "no {section} in\n{rendered}");
    }
    for completion in COMPLETIONS {
        assert!(Path::new(completion).is_file(), "{completion}");
    }
    run_ok("bash", &["-n", COMPLETIONS[0]]);

    // The system user, owning its state directory.
    assert!(user_exists(PACKAGE), "no user {PACKAGE}");
    let passwd = run_ok("getent", &["passwd", PACKAGE]);
    assert!(
        passwd
            .trim_end()
            .ends_with(":/var/lib/bulwark:/usr/sbin/nologin"),
        "{passwd}"
    );
    let uid = nix::unistd::User::from_name(PACKAGE)
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    let state = std::fs::metadata(STATE_DIR).unwrap();
    assert_eq!(state.uid(), uid, "{STATE_DIR} owner");
    assert_eq!(
        state.permissions().mode() & 0o7777,
        0o750,
        "{STATE_DIR} mode"
    );

    // The unit: valid (its man: documentation included), neither enabled nor running.
    let unit = installed_unit().expect("the unit is installed");
    let unit = unit.to_str().unwrap();
    let verify = run("systemd-analyze", &["verify", unit]);
    let complaints = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success(), "{complaints}");
    assert!(
        !complaints.contains("bulwark.service"),
        "systemd-analyze verify {unit}:\n{complaints}"
    );
    let enabled = run("systemctl", &["is-enabled", "bulwark.service"]);
    assert_eq!(
        String::from_utf8_lossy(&enabled.stdout).trim(),
        "disabled",
        "{}",
        String::from_utf8_lossy(&enabled.stderr)
    );
    if Path::new("/run/systemd/system").is_dir() {
        let active = run("systemctl", &["is-active", "bulwark.service"]);
        assert_eq!(String::from_utf8_lossy(&active.stdout).trim(), "inactive");
    }
    assert_eq!(processes_of(INSTALLED_BINARY), Vec::<String>::new());

    // The conffile: registered, readable by the service's group only, and
    // accepted by check-config run as the service user.
    let conffiles = run_ok("dpkg-query", &["-W", "-f=${Conffiles}", PACKAGE]);
    assert!(conffiles.contains(CONFFILE), "{conffiles}");
    let conf = std::fs::metadata(CONFFILE).unwrap();
    assert_eq!(conf.uid(), 0);
    assert_eq!(conf.permissions().mode() & 0o7777, 0o640, "{CONFFILE} mode");
    let checked = run_ok(
        "setpriv",
        &[
            "--reuid",
            PACKAGE,
            "--regid",
            PACKAGE,
            "--init-groups",
            INSTALLED_BINARY,
            "check-config",
            CONFFILE,
        ],
    );
    assert!(checked.contains("0 zone(s)"), "{checked}");

    // Purge: every file goes; the user stays, as Debian leaves system users.
    let out = run_ok("dpkg", &["--purge", PACKAGE]);
    println!("dpkg --purge:\n{out}");
    assert!(!package_installed());
    for gone in [
        INSTALLED_BINARY,
        CONFFILE,
        "/etc/bulwark",
        STATE_DIR,
        MAN_PAGE,
    ]
    .into_iter()
    .chain(COMPLETIONS)
    {
        assert!(!Path::new(gone).exists(), "{gone} is left after purge");
    }
    assert_eq!(installed_unit(), None);
    assert!(user_exists(PACKAGE));
}
