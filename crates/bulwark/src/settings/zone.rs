//! A zone to serve, validated: its name, its file, how it is signed and how
//! it replicates.

use std::path::PathBuf;

use bulwark_proto::Name;

use super::dnssec::ZoneSigning;
use super::replication::ZoneReplication;

/// A zone to serve.
#[derive(Debug, Clone)]
pub struct ZoneSpec {
    pub origin: Name,
    /// The master file; `None` for a secondary kept only in the store, or a
    /// generated catalog.
    pub path: Option<PathBuf>,
    /// Set when bulwark signs the zone itself.
    pub signing: Option<ZoneSigning>,
    pub replication: ZoneReplication,
}

impl ZoneSpec {
    /// A primary zone read from `path`, with no replication: the flags' and
    /// the demo's kind.
    pub fn from_file(origin: Name, path: PathBuf) -> ZoneSpec {
        ZoneSpec {
            origin,
            path: Some(path),
            signing: None,
            replication: ZoneReplication::default(),
        }
    }

    /// The file for messages, or what stands in for it.
    pub fn file_label(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None if self.replication.is_secondary() => "(secondary, in the store)".to_string(),
            None => "(generated)".to_string(),
        }
    }
}
