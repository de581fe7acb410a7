//! systemd's readiness protocol (`Type=notify`, sd_notify(3)): `READY=1` once
//! serving, `RELOADING=1`/`READY=1` around a reload, `STOPPING=1` on the way
//! out. Each state is one datagram to the Unix socket named by `NOTIFY_SOCKET`;
//! nothing is sent when it is not set (not started by systemd).
//!
//! A failure to notify is logged and otherwise ignored: systemd would then
//! time the service out, which says more than a server that refuses to start.

use std::ffi::OsStr;
use std::io;

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
    bulwark_net::sd_notify(socket, message(state).as_bytes())
}

fn message(state: &str) -> String {
    format!("{state}\nMAINPID={}\n", std::process::id())
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_relative_socket_path_is_refused_with_the_pid_added() {
        let e = notify_to(OsStr::new("notify.sock"), "READY=1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn every_message_names_the_main_pid() {
        let m = message("READY=1");
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines,
            ["READY=1", &format!("MAINPID={}", std::process::id())]
        );
    }

    #[test]
    fn monotonic_time_is_readable() {
        assert!(monotonic_usec().is_some_and(|t| t > 0));
    }
}
