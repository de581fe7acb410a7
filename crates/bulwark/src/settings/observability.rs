//! What the server tells, validated: the log's format, statistics, the
//! Prometheus endpoint and dnstap.

use std::net::SocketAddr;
use std::path::PathBuf;

use bulwark_dnstap::KindSet;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// For a person: one line per event.
    #[default]
    Human,
    /// One JSON object per line, for journald, Loki and the like.
    Json,
}

/// `[statistics]`, validated.
#[derive(Debug, Clone)]
pub struct StatsSettings {
    /// Off: handlers skip counting entirely (the benchmark's baseline).
    pub enabled: bool,
}

/// `[prometheus]`, validated; `None` in `Settings` when off.
#[derive(Debug, Clone)]
pub struct PrometheusSettings {
    pub listen: SocketAddr,
}

/// Where the dnstap frames go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Unidirectional Frame Streams to a file; rotated by `TapWriter::rotate`
    /// and, when set, after `max_bytes`.
    File {
        path: PathBuf,
        max_bytes: Option<u64>,
    },
    /// Bidirectional Frame Streams to a Unix socket, reconnecting with back-off.
    Unix(PathBuf),
    /// Bidirectional Frame Streams over TCP, reconnecting with back-off.
    Tcp(SocketAddr),
}

/// `[dnstap]` (or `--dnstap`), validated; `None` in `Settings` when off.
#[derive(Debug, Clone)]
pub struct DnstapSettings {
    pub destination: Destination,
    pub kinds: KindSet,
    pub identity: Option<Vec<u8>>,
    pub version: Option<Vec<u8>>,
    pub queue_size: usize,
}
