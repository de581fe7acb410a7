//! `serve --ready-file FILE`: where a supervisor or a test learns that the
//! server answers and which addresses it got, so that it can be started on
//! port 0 and never race another process for a port picked in advance.
//!
//! The file is opened (created or emptied) at start-up, before privileges
//! are dropped, so that a stale copy from an earlier run never passes for
//! this one and an unprivileged server can still fill it. Once every listener
//! is bound and the zones are loaded it gets, in one write:
//!
//! ```text
//! pid 4242
//! dns 127.0.0.1:53017
//! dns [::1]:53017
//! prometheus 127.0.0.1:40311
//! control /run/bulwark/control.sock
//! ready
//! ```
//!
//! One `dns` line per listen address, in the configured order (UDP and TCP
//! share the port); `prometheus` and `control` only when those are on. A
//! reader takes the file only once its last line is `ready` (and, to be
//! sure it is this run's, its `pid` is the process it started). On a clean
//! stop the file is emptied and, where the directory allows, removed.

use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The open ready file, waiting for the server to be ready.
#[derive(Debug)]
pub struct ReadyFile {
    path: PathBuf,
    file: File,
}

/// What the file reports.
#[derive(Debug, Default)]
pub struct Bound<'a> {
    pub dns: &'a [SocketAddr],
    /// The encrypted listeners, each with its kind (one of
    /// `crate::encrypted::KINDS`).
    pub encrypted: &'a [(SocketAddr, &'static str)],
    pub prometheus: Option<SocketAddr>,
    pub control: Option<&'a Path>,
}

impl ReadyFile {
    /// Creates `path`, or empties it if it is there.
    pub fn open(path: &Path) -> anyhow::Result<ReadyFile> {
        let file = File::create(path)
            .map_err(|e| anyhow::anyhow!("--ready-file {}: cannot create: {e}", path.display()))?;
        Ok(ReadyFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Writes the report; the server is ready. A failure is logged: the
    /// server serves all the same, and whoever waits for the file times out
    /// with this in the log.
    pub fn write_ready(&mut self, bound: &Bound<'_>) {
        let text = contents(std::process::id(), bound);
        if let Err(e) = self
            .file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
        {
            tracing::error!(file = %self.path.display(), error = %e, "cannot write the ready file");
        }
    }

    /// Empties the file and removes it where the directory lets us (after
    /// privileges were dropped it may not): the server is no longer ready.
    pub fn withdraw(self) {
        let _ = self.file.set_len(0);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The file's text: `KEY VALUE` lines, `ready` last.
fn contents(pid: u32, bound: &Bound<'_>) -> String {
    let mut text = format!("pid {pid}\n");
    for a in bound.dns {
        text.push_str(&format!("dns {a}\n"));
    }
    // DoT, DoH, DoQ, DoH over HTTP/3: each kind's lines together.
    for (kind, key) in crate::encrypted::KINDS
        .iter()
        .zip(["dot", "doh", "doq", "doh3"])
    {
        for (a, _) in bound.encrypted.iter().filter(|(_, k)| k == kind) {
            text.push_str(&format!("{key} {a}\n"));
        }
    }
    if let Some(a) = bound.prometheus {
        text.push_str(&format!("prometheus {a}\n"));
    }
    if let Some(p) = bound.control {
        text.push_str(&format!("control {}\n", p.display()));
    }
    text.push_str("ready\n");
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_address_is_one_line_and_ready_comes_last() {
        let dns: Vec<SocketAddr> = vec![
            "127.0.0.1:53017".parse().unwrap(),
            "[::1]:53018".parse().unwrap(),
        ];
        let bound = Bound {
            dns: &dns,
            encrypted: &[
                ("127.0.0.1:8853".parse().unwrap(), "quic"),
                ("127.0.0.1:8853".parse().unwrap(), "tls"),
            ],
            prometheus: Some("127.0.0.1:9153".parse().unwrap()),
            control: Some(Path::new("/run/bulwark/control.sock")),
        };
        assert_eq!(
            contents(42, &bound),
            "pid 42\ndns 127.0.0.1:53017\ndns [::1]:53018\ndot 127.0.0.1:8853\n\
             doq 127.0.0.1:8853\nprometheus 127.0.0.1:9153\n\
             control /run/bulwark/control.sock\nready\n"
        );
        assert_eq!(contents(7, &Bound::default()), "pid 7\nready\n");
    }

    #[test]
    fn opening_empties_a_stale_file_and_withdrawing_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready");
        std::fs::write(&path, "pid 1\ndns 127.0.0.1:53\nready\n").unwrap();
        let mut ready = ReadyFile::open(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        let dns: Vec<SocketAddr> = vec!["127.0.0.1:5300".parse().unwrap()];
        ready.write_ready(&Bound {
            dns: &dns,
            ..Bound::default()
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("dns 127.0.0.1:5300\nready\n"), "{text}");
        ready.withdraw();
        assert!(!path.exists());
    }
}
