//! A private network namespace for a test that must bind addresses it does
//! not own (a simulated internet: root servers, TLD servers, any address a
//! scenario names) without touching the machine's real network.
//!
//! Namespaces belong to a thread, not a process (`unshare(2)` moves only the
//! calling thread), and a thread or process started from that thread starts in
//! the same namespace. So [`isolated`] runs its closure on a new thread that
//! first moves into a fresh network namespace; every socket the closure opens,
//! every thread it starts and every program it spawns (`ip`, a resolver under
//! test) live in that namespace and see only its loopback interface. The
//! caller's thread, and the rest of the test process, never change namespace.
//! The namespace disappears with the last thread and process inside it.
//!
//! Inside, `lo` is up and is also the default route for IPv4 and IPv6: a
//! packet to an address nobody bound leaves on `lo` and is dropped on arrival
//! (nothing there owns it), so the sender sees a timeout, as it would on the
//! internet, rather than "network unreachable".
//!
//! Creating a network namespace needs `CAP_SYS_ADMIN` (root; the tests run as
//! root here and in CI). Without it [`isolated`] returns an error and the
//! caller decides, by the peer rule ([`crate::in_ci`]), whether that fails or
//! skips the test; [`isolated_or_skip`] is that decision made once.
//!
//! `unshare` comes from `nix`, whose wrapper is safe: this module needs no
//! `unsafe`.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use nix::sched::{setns, unshare, CloneFlags};

thread_local! {
    /// Set on the thread [`isolated`] moved into a private namespace, so that
    /// [`add_address`] can refuse to change the real network's `lo`.
    static ISOLATED: Cell<bool> = const { Cell::new(false) };
}

/// Why a private network namespace could not be set up.
#[derive(Debug)]
pub enum NetnsError {
    /// `unshare(CLONE_NEWNET)` failed: usually not root (`EPERM`).
    Unshare(nix::Error),
    /// `ip` is missing or one of its commands failed.
    Ip(String),
}

impl fmt::Display for NetnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetnsError::Unshare(e) => write!(
                f,
                "cannot create a network namespace (unshare(CLONE_NEWNET): {e}); this needs root"
            ),
            NetnsError::Ip(e) => write!(f, "cannot set up the network namespace: {e}"),
        }
    }
}

impl std::error::Error for NetnsError {}

/// Runs `f` on a new thread inside a new, private network namespace whose
/// `lo` is up and is the default route (see the module documentation), and
/// returns what `f` returns. A panic in `f` is resumed on the caller's thread.
///
/// `f` may borrow from the caller: the thread is scoped.
pub fn isolated<T, F>(f: F) -> Result<T, NetnsError>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("netns".to_string())
            .spawn_scoped(scope, || {
                unshare(CloneFlags::CLONE_NEWNET).map_err(NetnsError::Unshare)?;
                ISOLATED.with(|i| i.set(true));
                bring_up_loopback()?;
                Ok(f())
            })
            .map_err(|e| NetnsError::Ip(format!("cannot start the namespace's thread: {e}")))?;
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// What a closure given to [`isolated_or_skip`] returns: nothing, or whether
/// the setup it does inside the namespace (an MTU, a link, a BPF program)
/// worked.
pub trait Setup {
    /// Why the setup failed, if it did.
    fn failure(self) -> Option<String>;
}

impl Setup for () {
    fn failure(self) -> Option<String> {
        None
    }
}

impl<E: fmt::Display> Setup for Result<(), E> {
    fn failure(self) -> Option<String> {
        self.err().map(|e| e.to_string())
    }
}

/// Runs a test in a private namespace, as [`isolated`] does. When the
/// namespace cannot be made, or the closure reports that its own setup in
/// it failed, the peer rule decides ([`crate::in_ci`]): outside CI the test
/// is skipped, saying why on stderr; under `CI=true` it fails.
pub fn isolated_or_skip<S, F>(f: F)
where
    F: FnOnce() -> S + Send,
    S: Setup + Send,
{
    let failure = match isolated(f) {
        Ok(setup) => setup.failure(),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = failure {
        assert!(!crate::in_ci(), "{why}");
        eprintln!("SKIPPED: {why}");
    }
}

/// Whether the calling thread is the one [`isolated`] moved into a private
/// namespace (threads it starts are in the namespace too, but only this one
/// may change its addresses).
pub fn is_isolated() -> bool {
    ISOLATED.with(Cell::get)
}

/// Adds `address` (a /32 or /128) to the namespace's `lo`, so that a socket
/// can bind it and packets to it arrive. Adding an address twice is not an
/// error. Only on the thread [`isolated`] runs: anywhere else this would
/// change the real machine's loopback interface, and it refuses.
pub fn add_address(address: IpAddr) -> Result<(), NetnsError> {
    if !is_isolated() {
        return Err(NetnsError::Ip(format!(
            "refusing to add {address} to lo outside a private network namespace"
        )));
    }
    let (family, prefix) = match address {
        IpAddr::V4(_) => ("-4", 32),
        IpAddr::V6(_) => ("-6", 128),
    };
    let cidr = format!("{address}/{prefix}");
    let mut args = vec![family, "addr", "add", cidr.as_str(), "dev", "lo"];
    if address.is_ipv6() {
        // Duplicate address detection would hold the address back for a
        // while; nobody else is on this link.
        args.push("nodad");
    }
    match ip(&args) {
        Ok(()) => Ok(()),
        // iproute2 says so in either of two ways, depending on version and family.
        Err(e) if e.contains("File exists") || e.contains("already assigned") => Ok(()),
        Err(e) => Err(NetnsError::Ip(e)),
    }
}

/// Sets the namespace's `lo` MTU, so a test can make a datagram too big for
/// its link. Only on the thread [`isolated`] runs, as [`add_address`].
pub fn set_loopback_mtu(mtu: u32) -> Result<(), NetnsError> {
    if !is_isolated() {
        return Err(NetnsError::Ip(format!(
            "refusing to set lo's MTU to {mtu} outside a private network namespace"
        )));
    }
    let mtu = mtu.to_string();
    ip(&["link", "set", "lo", "mtu", mtu.as_str()]).map_err(NetnsError::Ip)
}

/// A second network namespace, a host of its own at the far end of a
/// [`veth`] link, held open by a file for as long as this lives. A thread
/// joins it with [`Namespace::enter`]; programs it then starts run there.
#[derive(Debug)]
pub struct Namespace {
    file: File,
}

impl Namespace {
    /// A fresh namespace with `lo` up.
    pub fn new() -> Result<Namespace, NetnsError> {
        let maker = std::thread::Builder::new()
            .name("netns-new".to_string())
            .spawn(|| -> Result<File, NetnsError> {
                unshare(CloneFlags::CLONE_NEWNET).map_err(NetnsError::Unshare)?;
                ip(&["link", "set", "lo", "up"]).map_err(NetnsError::Ip)?;
                File::open("/proc/thread-self/ns/net")
                    .map_err(|e| NetnsError::Ip(format!("/proc/thread-self/ns/net: {e}")))
            })
            .map_err(|e| NetnsError::Ip(format!("cannot start a thread: {e}")))?;
        let file = maker
            .join()
            .map_err(|_| NetnsError::Ip("the namespace's thread panicked".to_string()))??;
        Ok(Namespace { file })
    }

    /// Moves the calling thread into this namespace, for good: call it on a
    /// thread of its own.
    pub fn enter(&self) -> Result<(), NetnsError> {
        setns(&self.file, CloneFlags::CLONE_NEWNET).map_err(NetnsError::Unshare)
    }

    /// A path naming the namespace, as `ip link set ... netns` takes it.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.file.as_raw_fd()
        ))
    }
}

/// One end of a [`veth`] link: its name and its addresses (with prefix).
#[derive(Debug, Clone, Copy)]
pub struct LinkEnd<'a> {
    pub name: &'a str,
    pub addresses: &'a [&'a str],
}

/// A veth pair from the calling thread's namespace (one [`isolated`] made)
/// to `far_ns`, both ends up with their addresses. IPv6 addresses skip
/// duplicate address detection, so they work at once.
pub fn veth(near: LinkEnd<'_>, far_ns: &Namespace, far: LinkEnd<'_>) -> Result<(), NetnsError> {
    if !is_isolated() {
        return Err(NetnsError::Ip(
            "refusing to add a veth link outside a private network namespace".to_string(),
        ));
    }
    ip(&[
        "link", "add", near.name, "type", "veth", "peer", "name", far.name,
    ])
    .map_err(NetnsError::Ip)?;
    let path = far_ns.path();
    let path = path.to_string_lossy();
    ip(&["link", "set", far.name, "netns", &path]).map_err(NetnsError::Ip)?;
    configure(near)?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                far_ns.enter()?;
                configure(far)
            })
            .join()
            .map_err(|_| NetnsError::Ip("the far end's thread panicked".to_string()))?
    })
}

fn configure(end: LinkEnd<'_>) -> Result<(), NetnsError> {
    for a in end.addresses {
        let mut args = vec!["addr", "add", a, "dev", end.name];
        if a.contains(':') {
            args.push("nodad");
        }
        ip(&args).map_err(NetnsError::Ip)?;
    }
    ip(&["link", "set", end.name, "up"]).map_err(NetnsError::Ip)
}

fn bring_up_loopback() -> Result<(), NetnsError> {
    ip(&["link", "set", "lo", "up"]).map_err(NetnsError::Ip)?;
    // Unowned destinations go out on lo and are dropped there: a timeout,
    // not ENETUNREACH (see the module documentation).
    ip(&["-4", "route", "add", "default", "dev", "lo"]).map_err(NetnsError::Ip)?;
    // A kernel without IPv6 has no IPv6 route to add; IPv4 still works.
    let _ = ip(&["-6", "route", "add", "default", "dev", "lo"]);
    Ok(())
}

/// Runs `ip ARGS`; `Err` carries the command and what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let program = ip_program();
    let out = Command::new(&program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e} (Debian package iproute2)", program.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn ip_program() -> PathBuf {
    crate::find_tool("ip").unwrap_or_else(|| PathBuf::from("ip"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::time::Duration;

    #[test]
    fn addresses_are_added_only_inside_the_namespace() {
        let outside = add_address(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53)));
        assert!(outside.is_err(), "must refuse outside a namespace");
    }

    #[test]
    fn an_address_added_inside_is_bindable_there_and_unowned_ones_time_out() {
        let addr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53));
        isolated_or_skip(|| {
            add_address(addr).unwrap();
            add_address(addr).unwrap(); // twice is fine
            let server = UdpSocket::bind((addr, 5353)).unwrap();
            let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            client.send_to(b"ping", (addr, 5353)).unwrap();
            let mut buf = [0u8; 8];
            let (n, _) = server.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"ping");
            // Nobody owns 198.51.100.1: the datagram leaves and is lost.
            client
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            client.send_to(b"lost", ("198.51.100.1", 53)).unwrap();
            assert!(client.recv_from(&mut buf).is_err(), "an answer from nobody");
        });
        // The test's own thread never left the real namespace.
        assert!(!is_isolated());
    }

    #[test]
    fn a_setup_that_fails_in_the_namespace_skips_outside_ci_and_fails_in_it() {
        let outcome = std::panic::catch_unwind(|| {
            isolated_or_skip(|| Err::<(), _>("the link would not come up"));
        });
        assert_eq!(outcome.is_err(), crate::in_ci());
        let worked = std::panic::catch_unwind(|| isolated_or_skip(|| Ok::<(), String>(())));
        assert!(
            worked.is_ok(),
            "a setup that works is neither a skip nor a failure"
        );
    }
}
