//! The defences, validated: per-zone ACLs, DNS cookies, response rate
//! limiting's defaults and the TCP connection limits.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bulwark_auth::ZoneAccess;
use bulwark_guard::{Access, Acl, Network, RrlConfig};
use bulwark_proto::Name;

/// RFC 9018 §4.4 rotates the secret "on a regular basis"; a day keeps a stolen
/// secret useful for a bounded time while clients rarely see a BADCOOKIE.
pub const DEFAULT_COOKIE_ROTATE_SECS: u64 = 86_400;
/// Identical responses per second per client network: BIND's ARM suggests 5–20
/// for an authoritative server; 20 leaves room for a busy resolver behind a /24.
pub const DEFAULT_RRL_RESPONSES_PER_SECOND: u32 = 20;
/// Loopback sources cannot be spoofed from outside (the kernel drops martians),
/// and local monitoring should never be limited.
pub const DEFAULT_RRL_EXEMPT: [&str; 2] = ["127.0.0.0/8", "::1/128"];
/// The TCP limits' defaults are the transport's own (bulwark-net documents why).
pub const DEFAULT_TCP_MAX_CONNECTIONS_PER_CLIENT: usize =
    bulwark_net::tcp::DEFAULT_MAX_CONNECTIONS_PER_CLIENT;
pub const DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION: u32 =
    bulwark_net::tcp::DEFAULT_MAX_QUERIES_PER_CONNECTION;
pub const DEFAULT_TCP_MESSAGE_TIMEOUT: Duration = bulwark_net::tcp::DEFAULT_MESSAGE_TIMEOUT;
/// RFC 7873 §5.2.3: a server cookie secret of at least 64 bits; SipHash-2-4 takes 128.
pub const COOKIE_SECRET_LEN: usize = 16;

/// DNS cookie settings, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieSettings {
    pub enabled: bool,
    /// A fixed secret (shared by an anycast set); `None` = random at start.
    pub secret: Option<[u8; COOKIE_SECRET_LEN]>,
    /// A random secret is replaced this often (the old one still validates).
    pub rotate_after: Duration,
    pub require_for_udp_above: Option<u16>,
}

impl Default for CookieSettings {
    fn default() -> Self {
        CookieSettings {
            enabled: true,
            secret: None,
            rotate_after: Duration::from_secs(DEFAULT_COOKIE_ROTATE_SECS),
            require_for_udp_above: None,
        }
    }
}

/// TCP limits beyond the total connection cap and idle timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpLimits {
    pub max_connections_per_client: usize,
    pub max_queries_per_connection: u32,
    pub message_timeout: Duration,
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            max_connections_per_client: DEFAULT_TCP_MAX_CONNECTIONS_PER_CLIENT,
            max_queries_per_connection: DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
            message_timeout: DEFAULT_TCP_MESSAGE_TIMEOUT,
        }
    }
}

/// The default RRL configuration: on, loopback exempt.
pub fn default_rrl() -> RrlConfig {
    RrlConfig {
        responses_per_second: DEFAULT_RRL_RESPONSES_PER_SECOND,
        exempt: DEFAULT_RRL_EXEMPT
            .iter()
            .filter_map(|n| n.parse::<Network>().ok())
            .collect(),
        ..RrlConfig::default()
    }
}

/// Per-zone ACLs, keyed by lowercased apex; what auth asks through [`ZoneAccess`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ZoneAcls(pub HashMap<Name, Arc<Acl>>);

impl ZoneAcls {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ZoneAccess for ZoneAcls {
    fn access(&self, apex: &Name, client: IpAddr) -> Access {
        self.0
            .get(apex)
            .map_or(Access::Allow, |acl| acl.check(client))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn zone_acls_allow_zones_without_an_acl() {
        let acls = ZoneAcls::default();
        let apex: Name = "example.".parse().unwrap();
        assert_eq!(
            acls.access(&apex, "192.0.2.1".parse().unwrap()),
            Access::Allow
        );
    }
}
