//! The control socket's transport: a Unix stream socket taking one command per
//! connection (one line of text) and answering with the text the edge's
//! handler returns, then closing. What the commands mean is the handler's
//! business; this module knows only lines and replies.

use std::future::Future;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::Shutdown;

/// A command is a few words and at most a domain name (255 octets in
/// presentation form, more with escapes); anything longer is not one.
pub const MAX_COMMAND: u64 = 2048;
/// A client that does not send its command in this long is dropped.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the control socket could not be bound. The messages leave out the
/// path: the caller puts it in front.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlBindError {
    #[error("another server is listening on this control socket")]
    InUse,
    #[error("cannot remove stale control socket: {0}")]
    RemoveStale(io::Error),
    #[error("cannot bind control socket: {0}")]
    Bind(io::Error),
    #[error("{0}")]
    Permissions(io::Error),
}

/// A bound control socket, ready for [`serve_control`].
#[derive(Debug)]
pub struct ControlListener {
    listener: UnixListener,
}

/// Binds the control socket at `path` with permissions `mode`, replacing a
/// stale socket left by an earlier run (one nobody answers on). Must be
/// called inside a tokio runtime.
pub fn bind_control(path: &Path, mode: u32) -> Result<ControlListener, ControlBindError> {
    if path.exists() {
        if StdUnixStream::connect(path).is_ok() {
            return Err(ControlBindError::InUse);
        }
        std::fs::remove_file(path).map_err(ControlBindError::RemoveStale)?;
    }
    let listener = UnixListener::bind(path).map_err(ControlBindError::Bind)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(ControlBindError::Permissions)?;
    Ok(ControlListener { listener })
}

/// Serves control connections until `shutdown`: each connection sends one
/// line (at most [`MAX_COMMAND`] octets, within 5 s, or it is dropped);
/// `handle` gets it without surrounding white space, and what it returns is
/// written back before the connection is closed. Connections are served
/// concurrently, each on its own task.
pub async fn serve_control<F, Fut>(listener: ControlListener, handle: F, shutdown: Shutdown)
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    let handle = Arc::new(handle);
    loop {
        let stream = tokio::select! {
            _ = shutdown.wait() => return,
            s = listener.listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "control socket accept failed");
                    continue;
                }
            },
        };
        let handle = Arc::clone(&handle);
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut line = String::new();
            let mut reader = BufReader::new(r.take(MAX_COMMAND));
            let read = tokio::time::timeout(COMMAND_TIMEOUT, reader.read_line(&mut line)).await;
            if !matches!(read, Ok(Ok(_))) {
                return;
            }
            let reply = handle(line.trim().to_string()).await;
            let _ = w.write_all(reply.as_bytes()).await;
            let _ = w.shutdown().await;
        });
    }
}

/// The client side: sends `command` as one line to the control socket at
/// `path` and returns the whole reply. `timeout` bounds the wait for it.
pub fn control_request(path: &Path, command: &str, timeout: Duration) -> io::Result<String> {
    let mut s = StdUnixStream::connect(path)?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::arithmetic_side_effects
    )]

    use super::*;
    use std::path::PathBuf;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("bulwark-net-control-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn one_line_in_the_handlers_reply_out() {
        let dir = scratch_dir("serve");
        let path = dir.join("control.sock");
        let rt = runtime();
        let shutdown = Shutdown::new().unwrap();
        let listener = {
            let _entered = rt.enter();
            bind_control(&path, 0o600).unwrap()
        };
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let server = rt.spawn(serve_control(
            listener,
            |line: String| async move { format!("ok\nyou said [{line}]\n") },
            shutdown.clone(),
        ));
        let reply =
            control_request(&path, "  zone status example.  ", Duration::from_secs(10)).unwrap();
        assert_eq!(reply, "ok\nyou said [zone status example.]\n");
        // A second server on the same socket is refused while this one answers.
        {
            let _entered = rt.enter();
            assert!(matches!(
                bind_control(&path, 0o600),
                Err(ControlBindError::InUse)
            ));
        }
        shutdown.trigger();
        rt.block_on(server).unwrap();
        drop(rt);
        // Nobody answers now: the stale socket is replaced.
        let rt = runtime();
        let _entered = rt.enter();
        bind_control(&path, 0o660).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_command_longer_than_the_limit_gets_no_reply() {
        let dir = scratch_dir("long");
        let path = dir.join("control.sock");
        let rt = runtime();
        let shutdown = Shutdown::new().unwrap();
        let listener = {
            let _entered = rt.enter();
            bind_control(&path, 0o600).unwrap()
        };
        rt.spawn(serve_control(
            listener,
            |line: String| async move { format!("{}\n", line.len()) },
            shutdown.clone(),
        ));
        // Without a newline within MAX_COMMAND octets, read_line stops at the
        // limit: the line handed over is cut there.
        let long = "x".repeat(MAX_COMMAND as usize * 2);
        let reply = control_request(&path, &long, Duration::from_secs(10));
        match reply {
            Ok(text) => assert_eq!(text, format!("{MAX_COMMAND}\n")),
            // The server may close before reading everything sent.
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ),
                "{e}"
            ),
        }
        shutdown.trigger();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
