//! The replication part of the configuration: TSIG keys (`[tsig_key.NAME]`),
//! the servers a zone talks to (`[remote.NAME]`), who may transfer, notify
//! and update (ACLs with keys), and each zone's role, as written and as
//! validated.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bulwark_guard::Acl;
use bulwark_proto::Name;
use bulwark_xfr::serial::SerialPolicy;
use bulwark_xfr::tsig::{KeyRing, TsigAlgorithm, TsigKey};
use serde::Deserialize;
use toml::Spanned;

use crate::defences::Locate;

/// A remote server and the replication ACLs are pure policy, in
/// `bulwark_xfr`; named here too, where the configuration builds them.
pub use bulwark_xfr::acl::KeyedAcl;
pub use bulwark_xfr::remote::Remote;

/// Journal space per zone before the oldest differences go (Knot's
/// `journal-max-usage` default is 80 MiB; a zone's changes rarely need more
/// to serve IXFR to secondaries a day behind).
pub const DEFAULT_JOURNAL_MAX_BYTES: u64 = 64 << 20;

/// `[tsig_key.NAME]`: a key given inline, or read from a file in the formats
/// `tsig-keygen` (BIND) and `keymgr -t` (Knot) print.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TsigKeySection {
    /// The key's DNS name, when it differs from the table's name.
    pub name: Option<Spanned<String>>,
    pub algorithm: Option<Spanned<String>>,
    /// Base64, as `tsig-keygen` prints it.
    pub secret: Option<Spanned<String>>,
    /// A key file; its key named like this table (or `name`) is used.
    pub file: Option<Spanned<String>>,
}

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
}

/// What a zone's catalog setting makes it (RFC 9432).
#[derive(Debug, Clone, Default)]
pub enum CatalogRole {
    #[default]
    None,
    /// A catalog zone bulwark writes from the zones that name it.
    Generate,
    /// A catalog zone received from a primary: its members become secondary
    /// zones made from `template`.
    Consume { template: Arc<ZoneTemplate> },
    /// A zone listed in the generated catalog `catalog`.
    Member {
        catalog: Box<Name>,
        group: Option<String>,
    },
}

/// What a zone does beside answering: where it comes from, who gets it.
#[derive(Debug, Clone)]
pub struct ZoneReplication {
    /// Set for a secondary zone: the primaries, tried in order.
    pub primaries: Vec<Arc<Remote>>,
    /// Told of each new version (RFC 1996).
    pub notify: Vec<Arc<Remote>>,
    /// Also notify the zone's NS targets (but the primary's own name, RFC
    /// 1996 §3.6), on port 53.
    pub notify_ns: bool,
    pub allow_transfer: Vec<Arc<KeyedAcl>>,
    /// For a secondary, NOTIFY is also accepted from its primaries' addresses.
    pub allow_notify: Vec<Arc<KeyedAcl>>,
    pub allow_update: Vec<Arc<KeyedAcl>>,
    pub serial_policy: SerialPolicy,
    pub journal_max_bytes: u64,
    /// How long after a change the zone file is rewritten; `None`: never.
    pub zonefile_sync: Option<Duration>,
    pub catalog: CatalogRole,
}

impl Default for ZoneReplication {
    fn default() -> Self {
        ZoneReplication {
            primaries: Vec::new(),
            notify: Vec::new(),
            notify_ns: false,
            allow_transfer: Vec::new(),
            allow_notify: Vec::new(),
            allow_update: Vec::new(),
            serial_policy: SerialPolicy::Increment,
            journal_max_bytes: DEFAULT_JOURNAL_MAX_BYTES,
            zonefile_sync: Some(Duration::ZERO),
            catalog: CatalogRole::None,
        }
    }
}

impl ZoneReplication {
    pub fn is_secondary(&self) -> bool {
        !self.primaries.is_empty()
    }

    /// A catalog zone bulwark writes (`catalog_role = "generate"`).
    pub fn generates_catalog(&self) -> bool {
        matches!(self.catalog, CatalogRole::Generate)
    }
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

/// `[template.NAME]`: the settings of zones made from a consumed catalog.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSection {
    /// Where each member zone's copy is written: `{zone}` is replaced by the
    /// zone name without its final dot. Optional: members live in the store.
    pub file: Option<Spanned<String>>,
    pub dnssec_policy: Option<Spanned<String>>,
    pub primaries: Option<Vec<Spanned<String>>>,
    pub notify: Option<Vec<Spanned<String>>>,
    pub allow_transfer: Option<Vec<Spanned<String>>>,
    pub allow_notify: Option<Vec<Spanned<String>>>,
    pub journal_max_size: Option<Spanned<u64>>,
    pub zonefile_sync: Option<Spanned<toml::Value>>,
}

/// A validated template: what every member zone of a consumed catalog gets.
#[derive(Debug, Clone)]
pub struct ZoneTemplate {
    /// With `{zone}` still in it.
    pub file: Option<PathBuf>,
    pub signing: Option<crate::config::ZoneSigning>,
    pub replication: ZoneReplication,
}

impl ZoneTemplate {
    /// The file of member zone `zone`, if members have files.
    pub fn file_for(&self, zone: &Name) -> Option<PathBuf> {
        let text = zone.to_string();
        let bare = text.strip_suffix('.').unwrap_or(&text);
        // A member name comes from the catalog, i.e. from another server:
        // it must not reach outside the template's directory.
        let safe: String = bare
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let pattern = self.file.as_ref()?.to_string_lossy().into_owned();
        Some(PathBuf::from(pattern.replace("{zone}", &safe)))
    }
}

/// The tables the replication settings refer to, validated once.
#[derive(Debug, Default)]
pub struct Registry {
    pub keys: HashMap<String, Arc<TsigKey>>,
    pub remotes: HashMap<String, Arc<Remote>>,
    pub acls: HashMap<String, Arc<KeyedAcl>>,
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
    acls: &BTreeMap<String, crate::defences::AclSection>,
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

fn build_key(
    table: &str,
    s: &TsigKeySection,
    base_dir: &Path,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<TsigKey> {
    let key_name = match &s.name {
        Some(n) => match crate::config::parse_origin(n.get_ref()) {
            Ok(name) => name,
            Err(e) => {
                problems.push(loc.at(n.span(), format!("name: `{}`: {e}", n.get_ref())));
                return None;
            }
        },
        None => match crate::config::parse_origin(table) {
            Ok(name) => name,
            Err(e) => {
                problems.push(format!(
                    "[tsig_key.{table}]: `{table}` is not a key name ({e}); give `name`"
                ));
                return None;
            }
        },
    };
    if let Some(file) = &s.file {
        if s.secret.is_some() || s.algorithm.is_some() {
            problems.push(loc.at(
                file.span(),
                "file: give either `file` or `algorithm` and `secret`, not both".to_string(),
            ));
            return None;
        }
        let path = base_dir.join(file.get_ref());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(loc.at(
                    file.span(),
                    format!("file: cannot read {}: {e}", path.display()),
                ));
                return None;
            }
        };
        let keys = match bulwark_xfr::tsig_keyfile::parse_key_file(&text) {
            Ok(k) => k,
            Err(e) => {
                problems.push(format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    e.line,
                    e.column,
                    e.kind
                ));
                return None;
            }
        };
        let found = keys.iter().find(|k| k.name() == &key_name).cloned();
        if found.is_none() {
            let names: Vec<String> = keys.iter().map(|k| k.name().to_string()).collect();
            problems.push(loc.at(
                file.span(),
                format!(
                    "file: {} holds no key named {key_name} (it holds: {})",
                    path.display(),
                    names.join(", ")
                ),
            ));
        }
        return found;
    }
    let (Some(algorithm), Some(secret)) = (&s.algorithm, &s.secret) else {
        problems.push(format!(
            "[tsig_key.{table}]: give `algorithm` and `secret`, or `file`"
        ));
        return None;
    };
    let Ok(alg) = TsigAlgorithm::from_config_name(algorithm.get_ref()) else {
        problems.push(loc.at(
            algorithm.span(),
            format!(
                "algorithm: `{}` is not one of hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512",
                algorithm.get_ref()
            ),
        ));
        return None;
    };
    let Some(bytes) = bulwark_proto::encoding::base64_decode(secret.get_ref().trim()) else {
        problems.push(loc.at(
            secret.span(),
            "secret: not base64 (as tsig-keygen prints it)".to_string(),
        ));
        return None;
    };
    if bytes.is_empty() {
        problems.push(loc.at(secret.span(), "secret: empty".to_string()));
        return None;
    }
    Some(TsigKey::new(key_name, alg, bytes))
}

fn find_key(
    reference: &Spanned<String>,
    keys: &HashMap<String, Arc<TsigKey>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Arc<TsigKey>> {
    let found = keys.get(reference.get_ref()).cloned();
    if found.is_none() {
        problems.push(loc.at(
            reference.span(),
            format!(
                "key: no [tsig_key.{}] ({})",
                reference.get_ref(),
                defined(keys.keys())
            ),
        ));
    }
    found
}

fn defined<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let mut v: Vec<&str> = names.map(String::as_str).collect();
    v.sort_unstable();
    if v.is_empty() {
        "none is defined".to_string()
    } else {
        format!("defined: {}", v.join(", "))
    }
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
        toml::Value::String(s) => match crate::signing::parse_duration(s) {
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

/// The replication settings a template gives its member zones.
pub fn build_template_replication(
    t: &TemplateSection,
    reg: &Registry,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> ZoneReplication {
    let fields = ReplicationFields {
        primaries: t.primaries.clone(),
        notify: t.notify.clone(),
        notify_ns: None,
        allow_transfer: t.allow_transfer.clone(),
        allow_notify: t.allow_notify.clone(),
        allow_update: None,
        serial_policy: None,
        journal_max_size: t.journal_max_size.clone(),
        zonefile_sync: t.zonefile_sync.clone(),
    };
    build_zone_replication(&fields, reg, loc, problems)
}
