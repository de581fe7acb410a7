//! systemd's readiness protocol (`Type=notify`, sd_notify(3)): `READY=1` once
//! serving, `RELOADING=1`/`READY=1` around a reload, `STOPPING=1` on the way
//! out. Each state is one datagram to the Unix socket named by `NOTIFY_SOCKET`;
//! nothing is sent when it is not set (not started by systemd).
//!
//! A failure to notify is logged and otherwise ignored: systemd would then
//! time the service out, which says more than a server that refuses to start.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The variable systemd sets for `Type=notify` services.
const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// The server is up: every socket is bound and zones are loaded.
pub fn notify_ready() {
    notify("READY=1\nSTATUS=serving");
}

/// A reload has begun; `notify_ready` ends it. systemd ≥ 253 wants the
/// monotonic time with it to match the reload to its request.
pub fn notify_reloading() {
    let state = match monotonic_usec() {
        Some(usec) => format!("RELOADING=1\nMONOTONIC_USEC={usec}\nSTATUS=reloading"),
        None => "RELOADING=1\nSTATUS=reloading".to_string(),
    };
    notify(&state);
}

/// The server is shutting down.
pub fn notify_stopping() {
    notify("STOPPING=1\nSTATUS=stopping");
}

fn notify(state: &str) {
    let Some(socket) = std::env::var_os(NOTIFY_SOCKET) else {
        return;
    };
    if let Err(e) = notify_to(&socket, state) {
        tracing::warn!(
            socket = %socket.to_string_lossy(),
            error = %e,
            "cannot notify systemd"
        );
    }
}

/// Sends `state` to the notification socket at `socket` (a path, or `@name`
/// for the abstract namespace), with `MAINPID=` so that systemd credits the
/// message to the main process whoever sent it.
fn notify_to(socket: &OsStr, state: &str) -> io::Result<()> {
    let address = notify_address(socket)?;
    let message = format!("{state}\nMAINPID={}\n", std::process::id());
    let datagram = UnixDatagram::unbound()?;
    let sent = datagram.send_to_addr(message.as_bytes(), &address)?;
    if sent != message.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "notification datagram cut short",
        ));
    }
    Ok(())
}

/// sd_notify(3): a leading `@` names a socket in the abstract namespace; any
/// other value must be an absolute path.
fn notify_address(socket: &OsStr) -> io::Result<SocketAddr> {
    let bytes = socket.as_bytes();
    match bytes.split_first() {
        Some((b'@', name)) => SocketAddr::from_abstract_name(name),
        Some((b'/', _)) => SocketAddr::from_pathname(socket),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "NOTIFY_SOCKET is neither an absolute path nor an @abstract name",
        )),
    }
}

/// CLOCK_MONOTONIC in microseconds, as systemd reads it.
fn monotonic_usec() -> Option<u64> {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    let secs = u64::try_from(now.tv_sec()).ok()?;
    let micros = u64::try_from(now.tv_nsec()).ok()? / 1000;
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use std::time::Duration;

    fn received(listener: &UnixDatagram) -> String {
        listener
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 512];
        let n = listener.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn ready_reaches_a_socket_given_by_path_with_the_main_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let listener = UnixDatagram::bind(&path).unwrap();
        notify_to(path.as_os_str(), "READY=1").unwrap();
        let got = received(&listener);
        let lines: Vec<&str> = got.lines().collect();
        assert!(lines.contains(&"READY=1"), "{got:?}");
        assert!(
            lines.contains(&format!("MAINPID={}", std::process::id()).as_str()),
            "{got:?}"
        );
    }

    #[test]
    fn abstract_socket_names_start_with_an_at_sign() {
        let name = format!("bulwark-notify-test-{}", std::process::id());
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&address).unwrap();
        notify_to(OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        assert!(received(&listener).starts_with("STOPPING=1\n"));
    }

    #[test]
    fn relative_socket_path_is_refused() {
        let e = notify_to(OsStr::new("notify.sock"), "READY=1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn monotonic_time_is_readable() {
        assert!(monotonic_usec().is_some_and(|t| t > 0));
    }
}
