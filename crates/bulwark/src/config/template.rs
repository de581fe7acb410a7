//! `[template.NAME]` as written, and its validation: the settings every
//! member zone of a consumed catalog (RFC 9432) is made with.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use super::dnssec::{find_policy, SigningDefaults};
use super::replication::{build_zone_replication, Registry, ReplicationFields};
use super::source::Locate;
use crate::settings::{ZoneReplication, ZoneSigning, ZoneTemplate};

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

/// Builds every `[template.NAME]`.
pub fn build_templates(
    file: &Path,
    sections: &BTreeMap<String, TemplateSection>,
    registry: &Registry,
    defaults: &SigningDefaults<'_>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> HashMap<String, Arc<ZoneTemplate>> {
    let mut out = HashMap::new();
    for (name, t) in sections {
        let replication = build_template_replication(t, registry, loc, problems);
        if !replication.is_secondary() {
            problems.push(format!(
                "{}: [template.{name}]: give primaries: the member zones of a consumed catalog are secondaries",
                file.display()
            ));
        }
        // Unlike a zone's, no `parent` and no `key_directory` of its own.
        let signing = t.dnssec_policy.as_ref().and_then(|p| {
            let policy = find_policy(p, defaults.policies, loc, problems)?;
            Some(ZoneSigning {
                policy,
                key_directory: defaults.key_directory.to_path_buf(),
                parents: Vec::new(),
                pkcs11: defaults.pkcs11.cloned(),
            })
        });
        out.insert(
            name.clone(),
            Arc::new(ZoneTemplate {
                file: t.file.as_ref().map(|f| defaults.base_dir.join(f.get_ref())),
                signing,
                replication,
            }),
        );
    }
    out
}

/// The replication settings a template gives its member zones.
fn build_template_replication(
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
