//! The validated model the server runs with: what a zone, a key, a policy, a
//! remote, an ACL set or a limit is once checked. It knows nothing of TOML or
//! of the command line (`config` reads those into it) and nothing of the
//! runtime that uses it: a leaf, depending only on the workspace's library
//! crates. Split by subject; everything is named from here.

mod defences;
mod dnssec;
mod observability;
mod replication;
mod resolver;
mod tls;
mod zone;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bulwark_auth::ChaosIdentity;
use bulwark_guard::{Acl, RrlConfig};
use bulwark_proto::Name;

pub use defences::{default_rrl, CookieSettings, TcpLimits, ZoneAcls, COOKIE_SECRET_LEN};
pub use dnssec::{DnssecPolicy, Keystore, Pkcs11Settings, ZoneSigning};
pub use observability::{
    Destination, DnstapSettings, LogFormat, PrometheusSettings, StatsSettings,
};
pub use replication::{
    CatalogRole, KeyedAcl, Remote, ZoneReplication, ZoneTemplate, DEFAULT_JOURNAL_MAX_BYTES,
};
pub use resolver::{ResolverSettings, TlsUpstream, IANA_ROOT_HINTS, SYSTEM_CA_FILE};
pub use tls::{Encrypted, TlsLimits, TlsListener};
pub use zone::ZoneSpec;

/// How UDP workers wait for queries (`[server] udp_workers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UdpWorkerMode {
    /// A thread each, asleep in recvmmsg: the cheapest wait there is, and
    /// what cache hits and authoritative answers want.
    #[default]
    Threads,
    /// Tasks on the async runtime, beside the resolver's driver: no thread
    /// to wake per datagram while the driver holds the core, which pays
    /// when most questions miss the cache on few cores.
    Runtime,
}

/// What the server runs with, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub config_file: Option<PathBuf>,
    pub listen: Vec<SocketAddr>,
    /// Whether `listen` came from the user (else the defaults).
    pub listen_given: bool,
    pub threads: usize,
    pub udp_workers: UdpWorkerMode,
    pub max_udp_payload: u16,
    /// Slots of each UDP worker's response cache (0: off).
    pub response_cache: usize,
    pub tcp_idle_timeout: Duration,
    pub tcp_max_connections: usize,
    pub chaos: ChaosIdentity,
    pub control_socket: Option<PathBuf>,
    pub log_format: LogFormat,
    pub log_level: String,
    pub zones: Vec<ZoneSpec>,
    /// Applied on every listener before a query is parsed; `None` allows all.
    pub listener_acl: Option<Arc<Acl>>,
    /// `[[listener]]` addresses with their own ACL, overriding `listener_acl`.
    pub listener_acls: Vec<(SocketAddr, Arc<Acl>)>,
    pub zone_acls: ZoneAcls,
    pub rrl: RrlConfig,
    pub cookies: CookieSettings,
    pub nsid: Option<Vec<u8>>,
    pub tcp_limits: TcpLimits,
    /// Permissions of the control socket file.
    pub control_mode: u32,
    pub statistics: StatsSettings,
    pub prometheus: Option<PrometheusSettings>,
    pub dnstap: Option<DnstapSettings>,
    pub run_as: Option<RunAs>,
    pub query_log: bool,
    /// Every TSIG key, for checking signed requests.
    pub keyring: Arc<bulwark_xfr::tsig::KeyRing>,
    /// The database file; `None` runs without one (no journal, no
    /// persistence of secondary zones, no dynamic updates).
    pub storage: Option<PathBuf>,
    /// `[[listener]]` addresses with `recursion = false`: their clients are
    /// answered from local zones only.
    pub listeners_without_recursion: Vec<SocketAddr>,
    /// Recursion; `None` when `[resolver]` is absent (authoritative only).
    pub resolver: Option<ResolverSettings>,
    /// Primaries transferred from over TLS (XoT), by address.
    pub tls_remotes: Vec<TlsUpstream>,
    /// DNS over TLS and HTTPS listeners (`[[listener]] transport = "tls"`
    /// or `"https"`).
    pub tls_listeners: Vec<TlsListener>,
    pub tls_limits: TlsLimits,
    /// Interfaces whose UDP DNS port is served through AF_XDP (`[[xdp]]`).
    pub xdp: Vec<bulwark_net::XdpConfig>,
}

/// The user and group to run as after binding, resolved to numeric ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub user: String,
    /// The group named in the configuration; `None` means the user's own group.
    pub group: Option<String>,
    pub uid: u32,
    pub gid: u32,
}

/// A zone origin: a domain name, taken as absolute whether or not it ends in a dot.
pub fn parse_origin(text: &str) -> Result<Name, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the name is empty".to_string());
    }
    text.parse::<Name>()
        .map(|n| n.to_lowercase())
        .map_err(|e| e.to_string())
}

/// `14d`, `2h`, `30m`, `45s`, `1w`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (like 14d, 2h, 30m, 45s)"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (s, m, h, d, w)")),
    };
    value
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("14d"), Ok(14 * 86_400));
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("1w"), Ok(604_800));
        assert!(parse_duration("3y").is_err());
        assert!(parse_duration("h").is_err());
    }
}
