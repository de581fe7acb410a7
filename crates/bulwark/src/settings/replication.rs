//! What a zone does beside answering, validated: where it comes from, who
//! gets it, who may change it, and its part in a catalog (RFC 9432),
//! including the template that consumed catalogs' member zones are made from.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bulwark_proto::Name;
use bulwark_xfr::serial::SerialPolicy;

use super::dnssec::ZoneSigning;

/// A remote server and the replication ACLs are pure policy, in
/// `bulwark_xfr`; named here too, as parts of the model.
pub use bulwark_xfr::acl::KeyedAcl;
pub use bulwark_xfr::remote::Remote;

/// Journal space per zone before the oldest differences go (Knot's
/// `journal-max-usage` default is 80 MiB; a zone's changes rarely need more
/// to serve IXFR to secondaries a day behind).
pub const DEFAULT_JOURNAL_MAX_BYTES: u64 = 64 << 20;

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

/// A validated template: what every member zone of a consumed catalog gets.
#[derive(Debug, Clone)]
pub struct ZoneTemplate {
    /// With `{zone}` still in it.
    pub file: Option<PathBuf>,
    pub signing: Option<ZoneSigning>,
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
