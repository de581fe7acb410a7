//! `bulwark ctl`: one command to the running server's control socket, its
//! reply printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bulwark_net::control_request;

use crate::cli::CtlArgs;

/// Where the server puts its control socket unless configured otherwise.
pub const DEFAULT_SOCKET: &str = "/run/bulwark/control.sock";

/// How long `bulwark ctl` waits for the reply: a reload may load large zones;
/// the server answers when it is done.
const REPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// `bulwark ctl`: sends one command and prints the reply: details to stdout on
/// `ok` (exit 0), the error and its details to stderr otherwise (exit 1).
pub fn run(args: &CtlArgs) -> ExitCode {
    let socket = match socket_path(args) {
        Ok(p) => p,
        Err(problems) => {
            for p in problems {
                eprintln!("{p}");
            }
            return ExitCode::FAILURE;
        }
    };
    match control_request(&socket, &args.command.wire_line(), REPLY_TIMEOUT) {
        Ok(reply) => {
            let mut lines = reply.lines();
            let first = lines.next().unwrap_or("error: empty reply from the server");
            let rest: Vec<&str> = lines.collect();
            if first == "ok" {
                let mut out = std::io::stdout().lock();
                for l in rest {
                    let _ = writeln!(out, "{l}");
                }
                ExitCode::SUCCESS
            } else {
                eprintln!("{first}");
                for l in rest {
                    eprintln!("{l}");
                }
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("{}", connect_error(&socket, &e));
            ExitCode::FAILURE
        }
    }
}

/// What a failure to talk to the socket means for the person typing.
fn connect_error(socket: &Path, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::ConnectionRefused => format!(
            "error: bulwark is not running (no control socket at {})",
            socket.display()
        ),
        ErrorKind::PermissionDenied => format!(
            "error: permission denied on {}: run as the server's user or root",
            socket.display()
        ),
        _ => format!("error: {}: {e}", socket.display()),
    }
}

/// `--socket`, else the configuration file's `[control] socket`, else the default.
fn socket_path(args: &CtlArgs) -> Result<PathBuf, Vec<String>> {
    if let Some(s) = &args.socket {
        return Ok(s.clone());
    }
    let Some(config) = &args.config else {
        return Ok(PathBuf::from(DEFAULT_SOCKET));
    };
    let serve = crate::cli::ServeArgs {
        config: Some(config.clone()),
        ..crate::cli::ServeArgs::default()
    };
    let settings = crate::config::load(&serve).map_err(|e| e.problems)?;
    settings.control_socket.ok_or_else(|| {
        vec![format!(
            "{}: no [control] socket is configured",
            config.display()
        )]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_explained() {
        let p = Path::new("/run/x.sock");
        let e = |k| connect_error(p, &std::io::Error::from(k));
        let not_running = "error: bulwark is not running (no control socket at /run/x.sock)";
        assert_eq!(e(std::io::ErrorKind::NotFound), not_running);
        assert_eq!(e(std::io::ErrorKind::ConnectionRefused), not_running);
        assert_eq!(
            e(std::io::ErrorKind::PermissionDenied),
            "error: permission denied on /run/x.sock: run as the server's user or root"
        );
    }
}
