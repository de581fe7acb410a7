//! `[server]` and `[[listener]]` as written, and their validation: the
//! addresses to serve, worker threads, message and connection limits, the
//! user to run as, and where the database is.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bulwark_guard::Acl;
use nix::unistd::{Group, User};
use serde::Deserialize;
use toml::Spanned;

use super::defences::find_acl;
use super::source::{Locate, Source};
use crate::settings::{CatalogRole, Encrypted, RunAs, TcpLimits, TlsLimits, TlsListener, ZoneSpec};

/// DNS flag day 2020: a payload that avoids fragmentation on common paths.
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = bulwark_auth::DEFAULT_MAX_UDP_PAYLOAD;
/// RFC 6891 §6.2.5: values below 512 are treated as 512.
const MIN_UDP_PAYLOAD: u16 = 512;
/// Responses each UDP worker remembers by default: room for the busy names of
/// most zones at about 100 octets of slot each before any is filled.
pub const DEFAULT_RESPONSE_CACHE: usize = 16384;
/// A bound so a typo cannot ask for gigabytes per worker.
const MAX_RESPONSE_CACHE: usize = 1 << 22;
pub const DEFAULT_TCP_IDLE_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_TCP_MAX_CONNECTIONS: usize = 1000;
pub const DEFAULT_LISTEN: [&str; 2] = ["127.0.0.1:53", "[::1]:53"];

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: Option<Vec<Spanned<String>>>,
    pub threads: Option<Spanned<usize>>,
    /// How UDP workers wait: `threads` or `runtime`.
    pub udp_workers: Option<Spanned<String>>,
    pub max_udp_payload: Option<Spanned<u16>>,
    /// Responses each UDP worker remembers; 0 turns the cache off.
    pub response_cache: Option<Spanned<usize>>,
    pub tcp_idle_timeout: Option<Spanned<u64>>,
    pub tcp_max_connections: Option<Spanned<usize>>,
    pub tcp_max_connections_per_client: Option<usize>,
    pub tcp_max_queries_per_connection: Option<u32>,
    pub tcp_message_timeout: Option<u64>,
    /// DNS over TLS connections: idle timeout and handshake timeout (seconds),
    /// queries per connection (0: no cap).
    pub tls_idle_timeout: Option<Spanned<u64>>,
    pub tls_handshake_timeout: Option<Spanned<u64>>,
    pub tls_max_queries_per_connection: Option<u32>,
    /// The ACL every listener applies before parsing a query.
    pub acl: Option<Spanned<String>>,
    /// RFC 5001 NSID, as text or as hex.
    pub nsid: Option<Spanned<String>>,
    pub nsid_hex: Option<Spanned<String>>,
    /// CH TXT `id.server.` (RFC 4892).
    pub identity: Option<String>,
    /// CH TXT `hostname.bind.`.
    pub hostname: Option<String>,
    /// CH TXT `version.bind.`.
    pub version: Option<String>,
    /// Started as root: the user (and group) to switch to once bound.
    pub user: Option<Spanned<String>>,
    pub group: Option<Spanned<String>>,
    /// Where signed zones' keys live (default `keys` beside the config file).
    pub key_directory: Option<String>,
    /// The database of journals, secondary zones and timers (default
    /// `bulwark.db` beside the config file).
    pub storage: Option<String>,
}

/// `[[listener]]`: one address and the ACL its queries go through.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenerSection {
    pub address: Spanned<String>,
    pub acl: Option<Spanned<String>>,
    /// With `[resolver]`: whether clients on this address may recurse
    /// (default true, within `allow_recursion`).
    pub recursion: Option<bool>,
    /// `dns` (UDP and TCP, the default), `tls` (DNS over TLS, RFC 7858),
    /// `https` (DNS over HTTPS, RFC 8484) or `quic` (DNS over QUIC, RFC 9250).
    pub transport: Option<Spanned<String>>,
    /// With `tls`, `https` or `quic`: PEM files of the certificate chain and key.
    pub certificate: Option<String>,
    pub key: Option<String>,
    /// With `https`: the path queries are sent to (default `/dns-query`).
    pub path: Option<Spanned<String>>,
    /// With `https`: also serve HTTP/3 on UDP at the same address (and
    /// advertise it to HTTP/2 clients with `Alt-Svc`).
    pub http3: Option<Spanned<bool>>,
}

/// What `[[listener]]` tables add: their ACLs, and the addresses that
/// answer from local zones only.
#[derive(Debug, Default)]
pub struct Listeners {
    pub acls: Vec<(SocketAddr, Arc<Acl>)>,
    pub without_recursion: Vec<SocketAddr>,
    pub tls: Vec<TlsListener>,
}

/// The addresses to serve, and whether the user gave them (else the
/// defaults): the `--listen` flags replace the file's list. `[[listener]]`
/// tables (`listeners_written`) add theirs later, in [`listeners`].
pub fn listen_addresses(
    flags: &[SocketAddr],
    s: &ServerSection,
    listeners_written: bool,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> (Vec<SocketAddr>, bool) {
    let mut listen = Vec::new();
    let mut listen_given = true;
    if !flags.is_empty() {
        listen.extend(flags.iter().copied());
    } else if let Some(items) = &s.listen {
        for item in items {
            match item.get_ref().parse::<SocketAddr>() {
                Ok(a) => listen.push(a),
                Err(_) => problems.push(src.at(
                    item.span(),
                    format!(
                        "listen: `{}` is not an address with a port, like 127.0.0.1:53 or [::1]:53",
                        item.get_ref()
                    ),
                )),
            }
        }
        if items.is_empty() && !listeners_written {
            problems.push(format!("{}: listen: the list is empty", src.file.display()));
        }
    } else {
        listen_given = false;
        listen.extend(
            DEFAULT_LISTEN
                .iter()
                .filter_map(|a| a.parse::<SocketAddr>().ok()),
        );
    }
    let mut seen_addrs = HashMap::new();
    for a in &listen {
        if seen_addrs.insert(*a, ()).is_some() {
            problems.push(format!("listen: {a} is given twice"));
        }
    }
    (listen, listen_given)
}

/// UDP worker threads: the flag, else the file, else (or for 0) one per CPU.
pub fn threads(flag: Option<usize>, s: &ServerSection) -> usize {
    let threads = match (flag, &s.threads) {
        (Some(n), _) => n,
        (None, Some(n)) => *n.get_ref(),
        (None, None) => 0,
    };
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}

/// `udp_workers`: threads of their own (the default), or tasks on the
/// runtime the resolver's driver runs on.
pub fn udp_workers(
    s: &ServerSection,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> crate::settings::UdpWorkerMode {
    use crate::settings::UdpWorkerMode;
    let Some(mode) = &s.udp_workers else {
        return UdpWorkerMode::Threads;
    };
    match mode.get_ref().as_str() {
        "threads" => UdpWorkerMode::Threads,
        "runtime" => UdpWorkerMode::Runtime,
        other => {
            problems.push(loc.at(
                mode.span(),
                format!("[server] udp_workers: `{other}`: expected \"threads\" or \"runtime\""),
            ));
            UdpWorkerMode::Threads
        }
    }
}

/// The message and connection limits of `[server]`, validated.
pub struct Limits {
    pub max_udp_payload: u16,
    pub response_cache: usize,
    pub tcp_idle_timeout: Duration,
    pub tcp_max_connections: usize,
    pub tcp: TcpLimits,
}

/// Validates the limits over their defaults.
pub fn build_limits(s: &ServerSection, src: &Source<'_>, problems: &mut Vec<String>) -> Limits {
    let max_udp_payload = src.setting(
        s.max_udp_payload.as_ref(),
        DEFAULT_MAX_UDP_PAYLOAD,
        |v| v >= MIN_UDP_PAYLOAD,
        format!("max_udp_payload: must be at least {MIN_UDP_PAYLOAD}"),
        problems,
    );
    let response_cache = src.setting(
        s.response_cache.as_ref(),
        DEFAULT_RESPONSE_CACHE,
        |v| v <= MAX_RESPONSE_CACHE,
        format!("response_cache: at most {MAX_RESPONSE_CACHE} responses per worker"),
        problems,
    );
    let tcp_idle_timeout = src.setting(
        s.tcp_idle_timeout.as_ref(),
        DEFAULT_TCP_IDLE_TIMEOUT_SECS,
        |v| v > 0,
        "tcp_idle_timeout: must be at least 1 second",
        problems,
    );
    let tcp_max_connections = src.setting(
        s.tcp_max_connections.as_ref(),
        DEFAULT_TCP_MAX_CONNECTIONS,
        |v| v > 0,
        "tcp_max_connections: must be at least 1",
        problems,
    );
    Limits {
        max_udp_payload,
        response_cache,
        tcp_idle_timeout: Duration::from_secs(tcp_idle_timeout),
        tcp_max_connections,
        tcp: tcp_limits(s),
    }
}

/// `tcp_max_connections_per_client`, `tcp_max_queries_per_connection` and
/// `tcp_message_timeout` over their defaults.
fn tcp_limits(s: &ServerSection) -> TcpLimits {
    let mut limits = TcpLimits::default();
    // 0 means no per-client cap, as in bulwark-net.
    if let Some(v) = s.tcp_max_connections_per_client {
        limits.max_connections_per_client = v;
    }
    if let Some(v) = s.tcp_max_queries_per_connection {
        limits.max_queries_per_connection = v;
    }
    // 0 leaves only the idle timeout.
    if let Some(v) = s.tcp_message_timeout {
        limits.message_timeout = Duration::from_secs(v);
    }
    limits
}

/// `[[listener]]` addresses join `listen` (replacing the defaults), each
/// with its ACL if it names one. (The `--listen` flags replace both: the
/// caller does not ask then.)
pub fn listeners(
    sections: &[ListenerSection],
    acls: &HashMap<String, Arc<Acl>>,
    listen: &mut Vec<SocketAddr>,
    listen_given: &mut bool,
    base_dir: &Path,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Listeners {
    let mut out = Listeners::default();
    // Each address with the protocols it takes: a DoT and a DoQ listener
    // may share one (TCP and UDP 853).
    let mut seen: Vec<(SocketAddr, bool, bool)> = Vec::new();
    for l in sections {
        let Ok(a) = l.address.get_ref().parse::<SocketAddr>() else {
            problems.push(src.at(
                l.address.span(),
                format!(
                    "address: `{}` is not an address with a port, like 127.0.0.1:53 or [::1]:53",
                    l.address.get_ref()
                ),
            ));
            continue;
        };
        if !*listen_given {
            listen.clear();
            *listen_given = true;
        }
        let kind = match listener_transport(l, src, problems) {
            Some(ListenerTransport::Dns) => {
                if let Some(p) = &l.path {
                    problems.push(src.at(p.span(), "path: only for transport = \"https\""));
                }
                None
            }
            Some(ListenerTransport::Tls) => Some(Encrypted::Dot),
            Some(ListenerTransport::Https) => doh_path(l, src, problems),
            Some(ListenerTransport::Quic) => Some(Encrypted::Doq),
            None => continue,
        };
        if let Some(h) = &l.http3 {
            if !matches!(kind, Some(Encrypted::Doh { .. })) {
                problems.push(src.at(h.span(), "http3: only for transport = \"https\""));
            }
        }
        let (tcp, udp) = kind
            .as_ref()
            .map_or((true, true), |k| (k.uses_tcp(), k.uses_udp()));
        // Given twice for the same protocol, whatever either serves: TCP
        // and TLS would share a port. (Port 0 is a fresh port each time.)
        let clash = seen
            .iter()
            .any(|(b, t, u)| *b == a && ((*t && tcp) || (*u && udp)));
        if a.port() != 0 && (listen.contains(&a) || clash) {
            problems.push(src.at(l.address.span(), format!("address: {a} is given twice")));
            continue;
        }
        seen.push((a, tcp, udp));
        match kind {
            None => listen.push(a),
            Some(kind) => {
                if let Some(t) = tls_listener(a, kind, l, base_dir, src, problems) {
                    out.tls.push(t);
                }
            }
        }
        if let Some(acl) = l
            .acl
            .as_ref()
            .and_then(|r| find_acl(r, acls, src, problems))
        {
            out.acls.push((a, acl));
        }
        if l.recursion == Some(false) {
            out.without_recursion.push(a);
        }
    }
    out
}

/// What a `[[listener]]` serves.
enum ListenerTransport {
    Dns,
    Tls,
    Https,
    Quic,
}

fn listener_transport(
    l: &ListenerSection,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<ListenerTransport> {
    let Some(t) = &l.transport else {
        return Some(ListenerTransport::Dns);
    };
    match t.get_ref().as_str() {
        "dns" => Some(ListenerTransport::Dns),
        "tls" => Some(ListenerTransport::Tls),
        "https" => Some(ListenerTransport::Https),
        "quic" => Some(ListenerTransport::Quic),
        other => {
            problems.push(src.at(
                t.span(),
                format!("transport: `{other}` is not one of `dns` (UDP and TCP), `tls`, `https` or `quic`"),
            ));
            None
        }
    }
}

/// A `transport = "tls"` listener: its certificate and key, relative to the
/// configuration file's directory. The files are read when the server starts
/// (and on reload), where an unreadable one is an error naming it.
fn tls_listener(
    address: SocketAddr,
    kind: Encrypted,
    l: &ListenerSection,
    base_dir: &Path,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<TlsListener> {
    match (&l.certificate, &l.key) {
        (Some(certificate), Some(key)) => Some(TlsListener {
            address,
            kind,
            certificate: base_dir.join(certificate),
            key: base_dir.join(key),
        }),
        _ => {
            problems.push(src.at(
                l.address.span(),
                format!(
                    "listener {address}: an encrypted transport needs `certificate` and `key` (PEM files)"
                ),
            ));
            None
        }
    }
}

/// A DoH listener's path: absolute, without a query string.
fn doh_path(
    l: &ListenerSection,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<Encrypted> {
    let http3 = l.http3.as_ref().is_some_and(|h| *h.get_ref());
    let Some(p) = &l.path else {
        return Some(Encrypted::Doh {
            path: bulwark_net::doh::DEFAULT_PATH.to_string(),
            http3,
        });
    };
    let path = p.get_ref();
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        problems.push(src.at(
            p.span(),
            format!("path: `{path}` is not an absolute path like /dns-query (no query string)"),
        ));
        return None;
    }
    Some(Encrypted::Doh {
        path: path.clone(),
        http3,
    })
}

/// `[server] tls_idle_timeout`, `tls_handshake_timeout` and
/// `tls_max_queries_per_connection` over their defaults.
pub fn tls_limits(s: &ServerSection, src: &Source<'_>, problems: &mut Vec<String>) -> TlsLimits {
    let defaults = TlsLimits::default();
    let idle = src.setting(
        s.tls_idle_timeout.as_ref(),
        defaults.idle_timeout.as_secs(),
        |v| v > 0,
        "tls_idle_timeout: must be at least 1 second",
        problems,
    );
    let handshake = src.setting(
        s.tls_handshake_timeout.as_ref(),
        defaults.handshake_timeout.as_secs(),
        |v| v > 0,
        "tls_handshake_timeout: must be at least 1 second",
        problems,
    );
    TlsLimits {
        idle_timeout: Duration::from_secs(idle),
        handshake_timeout: Duration::from_secs(handshake),
        max_queries_per_connection: s
            .tls_max_queries_per_connection
            .unwrap_or(defaults.max_queries_per_connection),
    }
}

/// `[server] user` and `group`: looks up `user` (and `group`, else the
/// user's primary group) in the system's user database. `None` when no user
/// is configured or a name is unknown (then the problem is added, naming where
/// it was written).
pub fn build_run_as(
    user: Option<&Spanned<String>>,
    group: Option<&Spanned<String>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<RunAs> {
    let Some(user) = user else {
        if let Some(g) = group {
            problems.push(loc.at(
                g.span(),
                "group: needs `user` too (the group is the one the user runs with)".to_string(),
            ));
        }
        return None;
    };
    let name = user.get_ref();
    let found = match User::from_name(name) {
        Ok(Some(u)) => Some(u),
        Ok(None) => {
            problems.push(loc.at(
                user.span(),
                format!("user: no user `{name}` on this system"),
            ));
            None
        }
        Err(e) => {
            problems.push(loc.at(user.span(), format!("user: cannot look up `{name}`: {e}")));
            None
        }
    };
    let gid = match group {
        None => found.as_ref().map(|u| u.gid),
        Some(g) => match Group::from_name(g.get_ref()) {
            Ok(Some(grp)) => Some(grp.gid),
            Ok(None) => {
                problems.push(loc.at(
                    g.span(),
                    format!("group: no group `{}` on this system", g.get_ref()),
                ));
                None
            }
            Err(e) => {
                problems.push(loc.at(
                    g.span(),
                    format!("group: cannot look up `{}`: {e}", g.get_ref()),
                ));
                None
            }
        },
    };
    let (found, gid) = (found?, gid?);
    Some(RunAs {
        user: name.clone(),
        group: group.map(|g| g.get_ref().clone()),
        uid: found.uid.as_raw(),
        gid: gid.as_raw(),
    })
}

/// The database file: the flag, else `[server] storage`, else `bulwark.db`
/// beside the configuration file when a zone replicates. A server that only
/// answers from files writes nothing beside them.
pub fn storage(
    flag: Option<&PathBuf>,
    s: &ServerSection,
    zones: &[ZoneSpec],
    config_file_given: bool,
    base_dir: &Path,
) -> Option<PathBuf> {
    let replicates = zones.iter().any(|z| {
        let r = &z.replication;
        r.is_secondary()
            || !r.allow_update.is_empty()
            || !r.allow_transfer.is_empty()
            || !r.notify.is_empty()
            || !matches!(r.catalog, CatalogRole::None)
    });
    flag.cloned().or_else(|| match &s.storage {
        Some(p) => Some(base_dir.join(p)),
        None => (replicates && config_file_given).then(|| base_dir.join("bulwark.db")),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    struct At;
    impl Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f:{}: {message}", span.start)
        }
    }

    fn spanned(text: &str, at: usize) -> Spanned<String> {
        // A Spanned can only be made by deserializing; build one from TOML.
        #[derive(serde::Deserialize)]
        struct T {
            v: Spanned<String>,
        }
        let doc = format!("{}v = \"{text}\"", " ".repeat(at));
        toml::from_str::<T>(&doc).unwrap().v
    }

    #[test]
    fn root_resolves_to_uid_and_gid_zero() {
        let mut problems = Vec::new();
        let r = build_run_as(Some(&spanned("root", 0)), None, &At, &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((r.uid, r.gid), (0, 0));
    }

    #[test]
    fn unknown_user_and_group_are_reported_where_written() {
        let mut problems = Vec::new();
        let r = build_run_as(
            Some(&spanned("no-such-user-bulwark", 3)),
            Some(&spanned("no-such-group-bulwark", 5)),
            &At,
            &mut problems,
        );
        assert!(r.is_none());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("f:7: user: no user `no-such-user-bulwark`"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("f:9: group: no group"),
            "{problems:?}"
        );
    }

    #[test]
    fn group_without_user_is_an_error() {
        let mut problems = Vec::new();
        assert!(build_run_as(None, Some(&spanned("root", 0)), &At, &mut problems).is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("group: needs `user`"), "{problems:?}");
    }
}
