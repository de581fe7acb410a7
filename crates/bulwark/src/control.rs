//! The control socket: a Unix stream socket taking one command per connection
//! (a line of words, e.g. `zone status example.com.`; see `commands.rs` for the
//! list) and answering with lines of text, the first `ok` or `error: ...`, then
//! the details. `bulwark ctl` is its client. The socket itself (binding,
//! reading the line, writing the reply) is `bulwark_net`'s; the commands are
//! ours.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::{bind_control, control_request, serve_control, ControlListener, Shutdown};

use crate::cli::CtlArgs;
use crate::commands::ControlPlane;

pub const DEFAULT_SOCKET: &str = "/run/bulwark/control.sock";
/// Owner only: whoever can write to the socket can stop the server.
pub const DEFAULT_MODE: u32 = 0o600;

/// `[control] mode`, an octal string like `"0660"`: the socket file's
/// permissions. The owner must keep read and write (the server's own user runs
/// `ctl`); others may not write, since whoever can write can stop the server.
pub fn resolve_mode(
    mode: Option<&toml::Spanned<String>>,
    loc: &dyn crate::defences::Locate,
    problems: &mut Vec<String>,
) -> u32 {
    let Some(mode) = mode else {
        return DEFAULT_MODE;
    };
    match parse_mode(mode.get_ref()) {
        Ok(m) => m,
        Err(why) => {
            problems.push(loc.at(
                mode.span(),
                format!("[control] mode: `{}`: {why}", mode.get_ref()),
            ));
            DEFAULT_MODE
        }
    }
}

fn parse_mode(text: &str) -> Result<u32, &'static str> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0o").unwrap_or(digits);
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Err("expected permissions in octal, like \"0600\" or \"0660\"");
    }
    let mode = u32::from_str_radix(digits, 8).map_err(|_| "not an octal number")?;
    if mode > 0o777 {
        return Err("only permission bits (at most 0777) apply to a socket");
    }
    if mode & 0o600 != 0o600 {
        return Err("the owner needs read and write (at least 0600)");
    }
    if mode & 0o002 != 0 {
        return Err("other users may not write: whoever can write can stop the server");
    }
    Ok(mode)
}

/// The control socket this process serves, for `ctl status`.
static SOCKET_IN_USE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The control socket this process bound, if any.
pub fn socket_in_use() -> Option<&'static Path> {
    SOCKET_IN_USE.get().map(PathBuf::as_path)
}

/// How long `bulwark ctl` waits for the reply: a reload may load large zones;
/// the server answers when it is done.
const REPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// Binds the control socket, replacing a stale one left by an earlier run, with
/// permissions `mode` (the owner's only by default: whoever can write to it can
/// stop the server).
pub fn bind(path: &Path, mode: u32) -> anyhow::Result<ControlListener> {
    let listener =
        bind_control(path, mode).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let _ = SOCKET_IN_USE.set(path.to_path_buf());
    Ok(listener)
}

/// Serves control connections until `shutdown`: each line is run as a
/// command against `plane` and its reply written back.
pub async fn serve(listener: ControlListener, plane: Arc<dyn ControlPlane>, shutdown: Shutdown) {
    serve_control(
        listener,
        move |line: String| {
            let plane = Arc::clone(&plane);
            async move { crate::commands::run(plane, &line).await.to_wire() }
        },
        shutdown,
    )
    .await;
}

/// `bulwark ctl`: sends one command and prints the reply: details to stdout on
/// `ok` (exit 0), the error and its details to stderr otherwise (exit 1).
pub fn ctl(args: &CtlArgs) -> ExitCode {
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
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn mode_is_octal_permission_bits_keeping_owner_rw() {
        assert_eq!(parse_mode("0600"), Ok(0o600));
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert_eq!(parse_mode("664"), Ok(0o664));
        assert_eq!(parse_mode("0o640"), Ok(0o640));
        for bad in [
            "",
            "rw-rw----",
            "0680",
            "10600",
            "4660",
            "0400",
            "0666",
            "0x1b0",
        ] {
            assert!(parse_mode(bad).is_err(), "{bad} accepted");
        }
    }

    struct At;
    impl crate::defences::Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f.toml:{}: {message}", span.start)
        }
    }

    #[test]
    fn bad_mode_is_reported_where_it_is_written() {
        let mode = toml::Spanned::new(7..13, "0777".to_string());
        let mut problems = Vec::new();
        assert_eq!(resolve_mode(Some(&mode), &At, &mut problems), DEFAULT_MODE);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("f.toml:7: [control] mode: `0777`: other users may not write"),
            "{problems:?}"
        );
        assert_eq!(resolve_mode(None, &At, &mut problems), DEFAULT_MODE);
    }

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
