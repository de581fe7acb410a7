//! The control socket: a Unix stream socket taking one command per connection
//! (`reload`, `stop`, `status`, a line each) and answering with lines of text, the
//! first `ok` or `error: ...`, then the details.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::cli::CtlArgs;
use crate::server::App;

pub const DEFAULT_SOCKET: &str = "/run/bulwark/control.sock";
/// A command is one short word; anything longer is not one.
const MAX_COMMAND: u64 = 256;
/// A client that does not send its command in this long is dropped.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the control socket, replacing a stale one left by an earlier run, and
/// makes it reachable by its owner only: whoever can write to it can stop the server.
pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    if path.exists() {
        if StdUnixStream::connect(path).is_ok() {
            anyhow::bail!(
                "{}: another server is listening on this control socket",
                path.display()
            );
        }
        std::fs::remove_file(path).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot remove stale control socket: {e}",
                path.display()
            )
        })?;
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot bind control socket: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(listener)
}

/// Serves control connections until the server shuts down.
pub async fn serve(listener: UnixListener, app: Arc<App>) {
    loop {
        let stream = tokio::select! {
            _ = app.shutdown().wait() => return,
            s = listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "control socket accept failed");
                    continue;
                }
            },
        };
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut line = String::new();
            let mut reader = BufReader::new(tokio::io::AsyncReadExt::take(r, MAX_COMMAND));
            let read = tokio::time::timeout(COMMAND_TIMEOUT, reader.read_line(&mut line)).await;
            if !matches!(read, Ok(Ok(_))) {
                return;
            }
            let (ok, lines) = app.command(line.trim()).await;
            let mut reply = if ok {
                "ok\n".to_string()
            } else {
                String::new()
            };
            for l in lines {
                reply.push_str(&l);
                reply.push('\n');
            }
            let _ = w.write_all(reply.as_bytes()).await;
            let _ = w.shutdown().await;
        });
    }
}

/// `bulwark ctl`: sends one command and prints the reply. Exits 0 on `ok`.
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
    match send(&socket, args.command.wire_name()) {
        Ok(reply) => {
            let mut lines = reply.lines();
            let first = lines.next().unwrap_or("error: empty reply");
            let rest: Vec<&str> = lines.collect();
            if first == "ok" {
                for l in rest {
                    println!("{l}");
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
            eprintln!("{}: {e}", socket.display());
            ExitCode::FAILURE
        }
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

fn send(socket: &Path, command: &str) -> std::io::Result<String> {
    let mut s = StdUnixStream::connect(socket)?;
    // A reload may load large zones; the server answers when it is done.
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}
