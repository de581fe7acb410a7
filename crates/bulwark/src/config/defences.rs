//! `[acl.NAME]`, `[rrl]`, `[cookies]` and `[server] nsid`: the defences'
//! tables as written, and their validation into the settings' ACLs, RRL
//! configuration, cookie settings and NSID.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bulwark_guard::{Access, Acl, Network, RrlConfig};
use serde::Deserialize;
use toml::Spanned;

use super::source::Locate;
use crate::settings::{default_rrl, CookieSettings, COOKIE_SECRET_LEN};

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
    use super::*;

    #[test]
    fn hex_decodes_pairs_and_rejects_odd_or_bad_digits() {
        assert_eq!(decode_hex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex(""), Some(vec![]));
    }
}
