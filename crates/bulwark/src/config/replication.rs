//! `[remote.NAME]` and the keyed form of `[acl.NAME]` as written, with the
//! `[tsig_key.NAME]`s they name: the registry of what zones refer to, and the
//! validation of a zone's replication fields (primaries, notify, who may
//! transfer, notify and update, serial policy, journal, zone file sync).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bulwark_guard::Acl;
use bulwark_xfr::serial::SerialPolicy;
use bulwark_xfr::tsig::{KeyRing, TsigKey};
use serde::Deserialize;
use toml::Spanned;

use super::defences::AclSection;
use super::source::{defined, Locate};
use super::tsig::{build_key, find_key, TsigKeySection};
use crate::settings::{
    parse_duration, CatalogRole, KeyedAcl, Remote, ZoneReplication, DEFAULT_JOURNAL_MAX_BYTES,
};

/// `[remote.NAME]`: another server: a primary to pull from, a secondary to
/// notify.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSection {
    /// `ADDRESS:PORT`, or a list tried in order.
    pub address: Spanned<toml::Value>,
    /// The TSIG key that signs what is sent to it and must sign what it sends.
    pub key: Option<Spanned<String>>,
    /// The local address to send from.
    pub via: Option<Spanned<String>>,
    /// As a primary: transfers (and SOA queries) over TLS (XoT, RFC 9103),
    /// the remote proving itself by a certificate for this name under the
    /// roots of `tls_ca_file` (the system's by default) ...
    pub tls_name: Option<String>,
    pub tls_ca_file: Option<String>,
    /// ... or by a public key with one of these SHA-256 pins.
    pub tls_pin_sha256: Option<Vec<Spanned<String>>>,
}

/// The replication fields of a `[[zone]]` (or `[template.NAME]`), as written
/// (copied out of the section: serde cannot flatten with unknown fields denied).
#[derive(Debug, Default, Clone)]
pub struct ReplicationFields {
    pub primaries: Option<Vec<Spanned<String>>>,
    pub notify: Option<Vec<Spanned<String>>>,
    pub notify_ns: Option<bool>,
    pub allow_transfer: Option<Vec<Spanned<String>>>,
    pub allow_notify: Option<Vec<Spanned<String>>>,
    pub allow_update: Option<Vec<Spanned<String>>>,
    pub serial_policy: Option<Spanned<String>>,
    pub journal_max_size: Option<Spanned<u64>>,
    /// Seconds (or `30s`, `5m`...) after a change; `-1` or `"never"`: never.
    pub zonefile_sync: Option<Spanned<toml::Value>>,
}

/// The tables the replication settings refer to, validated once.
#[derive(Debug, Default)]
pub struct Registry {
    pub keys: HashMap<String, Arc<TsigKey>>,
    pub remotes: HashMap<String, Arc<Remote>>,
    pub acls: HashMap<String, Arc<KeyedAcl>>,
    /// Remotes asked over TLS, by address.
    pub tls_remotes: Vec<crate::settings::TlsUpstream>,
}

impl Registry {
    /// Every key, for checking signed requests.
    pub fn keyring(&self) -> KeyRing {
        self.keys.values().map(|k| (**k).clone()).collect()
    }
}

/// Builds `[tsig_key.*]`, `[remote.*]` and the keyed form of `[acl.*]`.
pub fn build_registry(
    keys: &BTreeMap<String, TsigKeySection>,
    remotes: &BTreeMap<String, RemoteSection>,
    acls: &BTreeMap<String, AclSection>,
    network_acls: &HashMap<String, Arc<Acl>>,
    base_dir: &Path,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Registry {
    let mut reg = Registry::default();
    for (table, section) in keys {
        if let Some(key) = build_key(table, section, base_dir, loc, problems) {
            reg.keys.insert(table.clone(), Arc::new(key));
        }
    }
    for (name, section) in remotes {
        let mut addresses = Vec::new();
        let items: Vec<Option<&str>> = match section.address.get_ref() {
            toml::Value::String(s) => vec![Some(s.as_str())],
            toml::Value::Array(a) => a.iter().map(toml::Value::as_str).collect(),
            _ => vec![None],
        };
        for item in items {
            match item.map(str::parse::<SocketAddr>) {
                Some(Ok(a)) => addresses.push(a),
                _ => problems.push(loc.at(
                    section.address.span(),
                    format!(
                        "address: `{}` is not an address with a port, like 192.0.2.1:53 or [2001:db8::1]:53, or a list of them",
                        item.unwrap_or("(not a string)")
                    ),
                )),
            }
        }
        if addresses.is_empty() && problems.is_empty() {
            problems.push(loc.at(
                section.address.span(),
                "address: the list is empty".to_string(),
            ));
        }
        let key = section
            .key
            .as_ref()
            .and_then(|k| find_key(k, &reg.keys, loc, problems));
        let via = section
            .via
            .as_ref()
            .and_then(|v| match v.get_ref().parse() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    problems.push(loc.at(
                        v.span(),
                        format!("via: `{}` is not an IP address", v.get_ref()),
                    ));
                    None
                }
            });
        if section.tls_name.is_some() || section.tls_pin_sha256.is_some() {
            let pins = super::tls::pins(section.tls_pin_sha256.as_ref(), loc, problems);
            let ca_file = section.tls_ca_file.as_ref().map(|c| base_dir.join(c));
            reg.tls_remotes
                .extend(addresses.iter().map(|a| crate::settings::TlsUpstream {
                    address: *a,
                    name: section.tls_name.clone(),
                    pins: pins.clone(),
                    ca_file: ca_file.clone(),
                }));
        } else if section.tls_ca_file.is_some() {
            problems.push(loc.at(
                section.address.span(),
                format!("[remote.{name}] tls_ca_file: needs `tls_name` (the name to check)"),
            ));
        }
        reg.remotes.insert(
            name.clone(),
            Arc::new(Remote {
                name: name.clone(),
                addresses,
                key,
                via,
            }),
        );
    }
    for (name, section) in acls {
        let Some(networks) = network_acls.get(name) else {
            continue;
        };
        let mut names = Vec::new();
        for k in section.keys.iter().flatten() {
            if let Some(key) = find_key(k, &reg.keys, loc, problems) {
                names.push(key.name().to_lowercase());
            }
        }
        reg.acls.insert(
            name.clone(),
            Arc::new(KeyedAcl {
                networks: Arc::clone(networks),
                keys: names,
            }),
        );
    }
    reg
}

fn remotes(
    items: Option<&Vec<Spanned<String>>>,
    key: &str,
    reg: &Registry,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Vec<Arc<Remote>> {
    let mut out = Vec::new();
    for item in items.into_iter().flatten() {
        match reg.remotes.get(item.get_ref()) {
            Some(r) => out.push(Arc::clone(r)),
            None => problems.push(loc.at(
                item.span(),
                format!(
                    "{key}: no [remote.{}] ({})",
                    item.get_ref(),
                    defined(reg.remotes.keys())
                ),
            )),
        }
    }
    out
}

fn acls(
    items: Option<&Vec<Spanned<String>>>,
    key: &str,
    reg: &Registry,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Vec<Arc<KeyedAcl>> {
    let mut out = Vec::new();
    for item in items.into_iter().flatten() {
        match reg.acls.get(item.get_ref()) {
            Some(a) => out.push(Arc::clone(a)),
            None => problems.push(loc.at(
                item.span(),
                format!(
                    "{key}: no [acl.{}] ({})",
                    item.get_ref(),
                    defined(reg.acls.keys())
                ),
            )),
        }
    }
    out
}

/// `zonefile_sync`: seconds or a duration string; `-1` or `"never"` for never.
fn zonefile_sync(
    v: Option<&Spanned<toml::Value>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Duration> {
    let Some(v) = v else {
        return Some(Duration::ZERO);
    };
    let bad = |problems: &mut Vec<String>| {
        problems.push(loc.at(
            v.span(),
            "zonefile_sync: expected seconds (0 = at once), a duration like \"5m\", or -1 / \"never\""
                .to_string(),
        ));
        Some(Duration::ZERO)
    };
    match v.get_ref() {
        toml::Value::Integer(-1) => None,
        toml::Value::Integer(n) => match u64::try_from(*n) {
            Ok(s) => Some(Duration::from_secs(s)),
            Err(_) => bad(problems),
        },
        toml::Value::String(s) if s == "never" => None,
        toml::Value::String(s) => match parse_duration(s) {
            Ok(secs) => Some(Duration::from_secs(secs)),
            Err(_) => bad(problems),
        },
        _ => bad(problems),
    }
}

/// The replication settings of one zone from its fields.
pub fn build_zone_replication(
    f: &ReplicationFields,
    reg: &Registry,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> ZoneReplication {
    let serial_policy = match &f.serial_policy {
        None => SerialPolicy::Increment,
        Some(p) => SerialPolicy::from_name(p.get_ref()).unwrap_or_else(|| {
            problems.push(loc.at(
                p.span(),
                format!(
                    "serial_policy: `{}` is not one of increment, unixtime, dateserial",
                    p.get_ref()
                ),
            ));
            SerialPolicy::Increment
        }),
    };
    ZoneReplication {
        primaries: remotes(f.primaries.as_ref(), "primaries", reg, loc, problems),
        notify: remotes(f.notify.as_ref(), "notify", reg, loc, problems),
        notify_ns: f.notify_ns.unwrap_or(false),
        allow_transfer: acls(
            f.allow_transfer.as_ref(),
            "allow_transfer",
            reg,
            loc,
            problems,
        ),
        allow_notify: acls(f.allow_notify.as_ref(), "allow_notify", reg, loc, problems),
        allow_update: acls(f.allow_update.as_ref(), "allow_update", reg, loc, problems),
        serial_policy,
        journal_max_bytes: f
            .journal_max_size
            .as_ref()
            .map_or(DEFAULT_JOURNAL_MAX_BYTES, |v| *v.get_ref()),
        zonefile_sync: zonefile_sync(f.zonefile_sync.as_ref(), loc, problems),
        catalog: CatalogRole::None,
    }
}
