//! The defences' configuration: named ACLs, response rate limiting, DNS cookies,
//! NSID and the TCP connection limits, as written in the file and as validated.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bulwark_auth::ZoneAccess;
use bulwark_guard::{Access, Acl, Network, RrlConfig};
use bulwark_proto::Name;
use serde::Deserialize;
use toml::Spanned;

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
const COOKIE_SECRET_LEN: usize = 16;
/// Auth's limit: the NSID must leave room for an answer in a 512-octet response.
const MAX_NSID_LEN: usize = bulwark_auth::MAX_NSID_LEN;

/// `[acl.NAME]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclSection {
    pub allow: Option<Vec<Spanned<String>>>,
    pub deny: Option<Vec<Spanned<String>>>,
    pub action: Option<AclAction>,
    /// For transfers, NOTIFY and UPDATE: requests must also be signed with
    /// one of these `[tsig_key.NAME]`s (RFC 8945). Queries ignore it.
    pub keys: Option<Vec<Spanned<String>>>,
}

/// What happens to a query an ACL denies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AclAction {
    #[default]
    Refuse,
    Drop,
}

/// `[rrl]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RrlSection {
    pub responses_per_second: Option<u32>,
    pub errors_per_second: Option<u32>,
    pub window: Option<u32>,
    pub slip: Option<u32>,
    pub ipv4_prefix: Option<Spanned<u8>>,
    pub ipv6_prefix: Option<Spanned<u8>>,
    pub exempt: Option<Vec<Spanned<String>>>,
    pub table_size: Option<Spanned<usize>>,
}

/// `[cookies]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CookiesSection {
    pub enabled: Option<bool>,
    pub secret: Option<Spanned<String>>,
    pub rotate_after: Option<Spanned<u64>>,
    pub require_for_udp_above: Option<Spanned<u16>>,
}

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

/// Reports a problem at a span: `FILE:LINE:COL: message`.
pub trait Locate {
    fn at(&self, span: std::ops::Range<usize>, message: String) -> String;
}

/// Parses one network, reporting where it is on failure.
fn network(
    item: &Spanned<String>,
    key: &str,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Network> {
    match item.get_ref().trim().parse::<Network>() {
        Ok(n) => Some(n),
        Err(e) => {
            problems.push(loc.at(
                item.span(),
                format!(
                    "{key}: `{}`: {e} (expected an address or ADDRESS/PREFIX, like 192.0.2.0/24 or 2001:db8::/32)",
                    item.get_ref()
                ),
            ));
            None
        }
    }
}

/// Builds every `[acl.NAME]`. Deny entries are checked first and win; then, when
/// an `allow` list is given, only the clients it names are allowed.
pub fn build_acls(
    sections: &BTreeMap<String, AclSection>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> HashMap<String, Arc<Acl>> {
    let mut acls = HashMap::new();
    for (name, s) in sections {
        let denied = match s.action.unwrap_or_default() {
            AclAction::Refuse => Access::Refuse,
            AclAction::Drop => Access::Drop,
        };
        let mut rules = Vec::new();
        for item in s.deny.iter().flatten() {
            if let Some(n) = network(item, "deny", loc, problems) {
                rules.push((n, denied));
            }
        }
        for item in s.allow.iter().flatten() {
            if let Some(n) = network(item, "allow", loc, problems) {
                rules.push((n, Access::Allow));
            }
        }
        let default = if s.allow.is_some() {
            denied
        } else {
            Access::Allow
        };
        acls.insert(name.clone(), Arc::new(Acl::new(rules, default)));
    }
    acls
}

/// Looks up an ACL by the name given at `reference`.
pub fn find_acl(
    reference: &Spanned<String>,
    acls: &HashMap<String, Arc<Acl>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Arc<Acl>> {
    let found = acls.get(reference.get_ref()).cloned();
    if found.is_none() {
        let mut known: Vec<&str> = acls.keys().map(String::as_str).collect();
        known.sort_unstable();
        let known = if known.is_empty() {
            "none is defined".to_string()
        } else {
            format!("defined: {}", known.join(", "))
        };
        problems.push(loc.at(
            reference.span(),
            format!("acl: no [acl.{}] ({known})", reference.get_ref()),
        ));
    }
    found
}

/// Validates `[rrl]` over the defaults.
pub fn build_rrl(s: &RrlSection, loc: &dyn Locate, problems: &mut Vec<String>) -> RrlConfig {
    let mut c = default_rrl();
    if let Some(v) = s.responses_per_second {
        c.responses_per_second = v;
    }
    c.errors_per_second = s.errors_per_second;
    if let Some(w) = s.window {
        // 0 is Knot's behaviour: no debt carried over from earlier seconds.
        c.window = w;
    }
    if let Some(v) = s.slip {
        c.slip = v;
    }
    if let Some(v) = &s.ipv4_prefix {
        if !(1..=32).contains(v.get_ref()) {
            problems.push(loc.at(v.span(), "ipv4_prefix: must be 1 to 32".to_string()));
        } else {
            c.ipv4_prefix = *v.get_ref();
        }
    }
    if let Some(v) = &s.ipv6_prefix {
        if !(1..=128).contains(v.get_ref()) {
            problems.push(loc.at(v.span(), "ipv6_prefix: must be 1 to 128".to_string()));
        } else {
            c.ipv6_prefix = *v.get_ref();
        }
    }
    if let Some(items) = &s.exempt {
        c.exempt = items
            .iter()
            .filter_map(|i| network(i, "exempt", loc, problems))
            .collect();
    }
    if let Some(v) = &s.table_size {
        if *v.get_ref() == 0 {
            problems.push(loc.at(v.span(), "table_size: must be at least 1".to_string()));
        } else {
            c.table_size = *v.get_ref();
        }
    }
    c
}

/// Validates `[cookies]` over the defaults.
pub fn build_cookies(
    s: &CookiesSection,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> CookieSettings {
    let mut c = CookieSettings::default();
    if let Some(v) = s.enabled {
        c.enabled = v;
    }
    if let Some(v) = &s.secret {
        match decode_hex(v.get_ref().trim()) {
            Some(bytes) => match <[u8; COOKIE_SECRET_LEN]>::try_from(bytes.as_slice()) {
                Ok(key) => c.secret = Some(key),
                Err(_) => problems.push(loc.at(
                    v.span(),
                    format!(
                        "secret: must be {} hex digits (128 bits), not {}",
                        COOKIE_SECRET_LEN.saturating_mul(2),
                        v.get_ref().trim().len()
                    ),
                )),
            },
            None => problems.push(loc.at(v.span(), "secret: not hexadecimal".to_string())),
        }
    }
    if let Some(v) = &s.rotate_after {
        if *v.get_ref() == 0 {
            problems.push(loc.at(
                v.span(),
                "rotate_after: must be at least 1 second".to_string(),
            ));
        } else {
            c.rotate_after = Duration::from_secs(*v.get_ref());
        }
    }
    c.require_for_udp_above = s.require_for_udp_above.as_ref().map(|v| *v.get_ref());
    c
}

/// The NSID payload from `nsid` (text) or `nsid_hex`; giving both is an error.
pub fn build_nsid(
    text: Option<&Spanned<String>>,
    hex: Option<&Spanned<String>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Vec<u8>> {
    let (bytes, span) = match (text, hex) {
        (Some(_), Some(h)) => {
            problems.push(loc.at(
                h.span(),
                "nsid_hex: give either nsid or nsid_hex, not both".to_string(),
            ));
            return None;
        }
        (Some(t), None) => (t.get_ref().as_bytes().to_vec(), t.span()),
        (None, Some(h)) => match decode_hex(h.get_ref().trim()) {
            Some(b) => (b, h.span()),
            None => {
                problems.push(loc.at(h.span(), "nsid_hex: not hexadecimal".to_string()));
                return None;
            }
        },
        (None, None) => return None,
    };
    if bytes.is_empty() || bytes.len() > MAX_NSID_LEN {
        problems.push(loc.at(span, format!("nsid: must be 1 to {MAX_NSID_LEN} octets")));
        return None;
    }
    Some(bytes)
}

/// Even-length hexadecimal to bytes.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn hex_decodes_pairs_and_rejects_odd_or_bad_digits() {
        assert_eq!(decode_hex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex(""), Some(vec![]));
    }

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
