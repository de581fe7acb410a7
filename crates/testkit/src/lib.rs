//! Test-only helpers shared by every crate's tests, used as a
//! `[dev-dependencies]` entry and never published.
//!
//! The one rule for peer tools (knotd, named, kdig, dnspython, fstrm_capture
//! ...): under CI (`CI` set, as `scripts/test.sh` sets it) a missing tool
//! fails the test, naming the Debian package that provides it; outside CI the
//! test prints a `SKIPPED:` line saying what to install and returns early.
//! A test that did not run must never pass silently where it is supposed to
//! run.
//!
//! To see that a test does not pass without its peer, hide the peer:
//! `BULWARK_TESTKIT_HIDE=knotd,dns` makes `knotd` and the Python module `dns`
//! (and so every `dns.*`) count as missing; with `CI=true` the tests that
//! need them must then fail.
//!
//! Being test code, this crate may panic (that is how a test fails): it does
//! not take the panic-free lints of the library crates.
//!
//! Beside the peer rule, it holds what several crates' tests would otherwise
//! each write again: [`CountingAllocator`], a global allocator that counts
//! (for the tests that prove a path does not allocate), [`wire`], raw
//! query bytes and TCP framing, and [`netns`], a private network namespace
//! for tests that must bind addresses the machine does not own, and
//! [`free_port`], a port outside the ephemeral range for peer daemons.
//!
//! `unsafe` is denied (the workspace lint, restated here) everywhere but in
//! the counting allocator's module: `GlobalAlloc` is an `unsafe` trait.
#![deny(unsafe_code)]

mod alloc;
pub mod netns;
mod ports;
pub mod wire;

pub use alloc::CountingAllocator;
pub use ports::free_port;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where Debian puts programs, searched after `PATH`: daemons live in the
/// sbin directories, which a non-root `PATH` often leaves out.
const SYSTEM_DIRS: [&str; 3] = ["/usr/sbin", "/usr/bin", "/sbin"];

/// Debian's own interpreter: the `python3-*` packages install for it alone,
/// so it is tried even when another `python3` (pyenv, say) comes first on
/// `PATH`.
const DEBIAN_PYTHON: &str = "/usr/bin/python3";

/// Names of tools and Python modules to treat as missing, comma-separated.
const HIDE_VARIABLE: &str = "BULWARK_TESTKIT_HIDE";

/// True when running in CI, where a missing peer is a failure, not a skip.
/// `CI` counts as set unless it is empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Finds an external program on `PATH` or in /usr/sbin, /usr/bin, /sbin.
///
/// Absent: under CI the test fails (naming the Debian package to install);
/// otherwise this prints why the test is skipped and returns `None`.
pub fn require_tool(name: &str) -> Option<PathBuf> {
    if let Some(found) = find_tool(name).filter(|_| !hidden(name)) {
        return Some(found);
    }
    missing(&format!("`{name}`"), debian_package_of_tool(name))
}

/// Finds a `python3` that can `import module` (e.g. `dns` for dnspython,
/// `dns.xfr` for one of its modules): Debian's /usr/bin/python3 first, then
/// every `python3` on `PATH`.
///
/// Absent: under CI the test fails (naming the Debian package to install);
/// otherwise this prints why the test is skipped and returns `None`.
pub fn require_python_module(module: &str) -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from(DEBIAN_PYTHON)];
    candidates.extend(search_dirs().into_iter().map(|d| d.join("python3")));
    // What Debian lacks (aioquic) scripts/test.sh installs from PyPI here.
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyquic/bin/python3"));
    let top = module.split('.').next().unwrap_or(module);
    let found = candidates
        .into_iter()
        .filter(|p| p.is_file() && !hidden(module) && !hidden(top))
        .find(|python| imports(python, module));
    if found.is_some() {
        return found;
    }
    missing(
        &format!("python3 with the module `{module}`"),
        debian_package_of_python_module(module),
    )
}

/// A file that a Debian package installs where no `PATH` lookup finds it
/// (a PKCS#11 module, say), by its absolute path.
///
/// Absent: under CI the test fails (naming `package`); otherwise this prints
/// why the test is skipped and returns `None`.
pub fn require_file(path: &str, package: &str) -> Option<PathBuf> {
    let file = PathBuf::from(path);
    if file.is_file() && !hidden(path) {
        return Some(file);
    }
    missing(&format!("`{path}`"), Some(package))
}

/// The path of `name` in `PATH` or the system directories, if it is there.
/// For tests that only adapt to a tool (nothing is skipped without it).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    search_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The Debian package that ships a program the tests run, when known.
pub fn debian_package_of_tool(name: &str) -> Option<&'static str> {
    Some(match name {
        "knotd" | "knotc" | "keymgr" | "kjournalprint" => "knot",
        "kdig" | "knsupdate" | "kxdpgun" => "knot-dnsutils",
        "named" | "tsig-keygen" | "rndc" | "named-checkconf" => "bind9",
        "dig" | "nsupdate" | "delv" | "host" => "bind9-dnsutils",
        "dnssec-keygen" | "dnssec-signzone" | "dnssec-verify" | "dnssec-dsfromkey"
        | "named-checkzone" | "named-compilezone" => "bind9-utils",
        "nsd" | "nsd-control" | "nsd-checkconf" => "nsd",
        "unbound" | "unbound-checkconf" | "unbound-control" => "unbound",
        "fstrm_capture" | "fstrm_replay" | "fstrm_dump" => "fstrm-bin",
        "dnstap-ldns" => "dnstap-ldns",
        "softhsm2-util" => "softhsm2",
        "pkcs11-tool" => "opensc",
        "systemd-analyze" => "systemd",
        "setpriv" => "util-linux",
        "clang" => "clang",
        "llvm-strip" => "llvm",
        "ip" => "iproute2",
        "python3" => "python3",
        ldns if ldns.starts_with("ldns-") || ldns == "drill" => "ldnsutils",
        _ => return None,
    })
}

/// The Debian package that ships a Python module the tests import, when
/// known; only the module's first component counts (`dns.xfr` is `dns`).
pub fn debian_package_of_python_module(module: &str) -> Option<&'static str> {
    let top = module.split('.').next().unwrap_or(module);
    Some(match top {
        "dns" => "python3-dnspython",
        "cryptography" => "python3-cryptography",
        "prometheus_client" => "python3-prometheus-client",
        _ => return None,
    })
}

/// Whether `name` is listed in `BULWARK_TESTKIT_HIDE`.
fn hidden(name: &str) -> bool {
    std::env::var(HIDE_VARIABLE).is_ok_and(|list| list.split(',').any(|h| h.trim() == name))
}

/// `PATH`, then the system directories.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(SYSTEM_DIRS.map(PathBuf::from));
    dirs
}

fn imports(python: &Path, module: &str) -> bool {
    Command::new(python)
        .arg("-c")
        .arg(format!("import {module}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Fails under CI, else says the test is skipped: the shared rule.
fn missing<T>(what: &str, package: Option<&str>) -> Option<T> {
    let install = match package {
        Some(p) => format!("apt-get install {p}, or run scripts/test.sh, which installs the peers"),
        None => "run scripts/test.sh, which installs the peers".to_string(),
    };
    if in_ci() {
        panic!("{what} is not installed, and CI is set: {install}");
    }
    eprintln!("SKIPPED: {what} is not installed ({install}); set CI=true to make this a failure");
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_is_found_on_the_system_path() {
        assert!(find_tool("sh").is_some());
    }

    #[test]
    fn peers_name_their_debian_package() {
        assert_eq!(debian_package_of_tool("knotd"), Some("knot"));
        assert_eq!(debian_package_of_tool("kdig"), Some("knot-dnsutils"));
        assert_eq!(
            debian_package_of_tool("ldns-verify-zone"),
            Some("ldnsutils")
        );
        assert_eq!(debian_package_of_tool("no-such-tool"), None);
        assert_eq!(
            debian_package_of_python_module("dns.tsig"),
            Some("python3-dnspython")
        );
    }

    #[test]
    fn an_absent_file_skips_outside_ci_and_fails_under_ci() {
        let path = "/nonexistent/bulwark-testkit/module.so";
        if in_ci() {
            let caught = std::panic::catch_unwind(|| require_file(path, "softhsm2"));
            assert!(caught.is_err(), "CI is set: a missing file must fail");
        } else {
            assert_eq!(require_file(path, "softhsm2"), None);
        }
    }

    #[test]
    fn an_absent_tool_skips_outside_ci_and_fails_under_ci() {
        let name = "bulwark-testkit-no-such-tool";
        if in_ci() {
            let caught = std::panic::catch_unwind(|| require_tool(name));
            assert!(caught.is_err(), "CI is set: a missing tool must fail");
        } else {
            assert_eq!(require_tool(name), None);
        }
    }
}
