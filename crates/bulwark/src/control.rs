//! The control socket: a Unix stream socket taking one command per connection
//! (a line of words, e.g. `zone status example.com.`; see `commands.rs` for the
//! list) and answering with lines of text, the first `ok` or `error: ...`, then
//! the details. `bulwark ctl` (`tools::ctl`) is its client. The socket itself
//! (binding, reading the line, writing the reply) is `bulwark_net`'s; the
//! commands are ours.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bulwark_net::{bind_control, serve_control, ControlListener, Shutdown};

use crate::commands::ControlPlane;

/// The control socket this process serves, for `ctl status`.
static SOCKET_IN_USE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The control socket this process bound, if any.
pub fn socket_in_use() -> Option<&'static Path> {
    SOCKET_IN_USE.get().map(PathBuf::as_path)
}

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
