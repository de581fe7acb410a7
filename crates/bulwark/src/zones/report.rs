//! What the zone table tells operators: `ctl zone list` / `zone status`,
//! and the zone gauges of the metrics.

use std::time::SystemTime;

use bulwark_proto::Name;
use bulwark_store::ZoneTimers;

use super::{is_available, soa_serial, Zones};
use crate::settings::CatalogRole;
use crate::settings::ZoneSpec;
use crate::zone_signer::SignedState;

/// What `ctl zone list` and `ctl zone status` show of one configured zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneInfo {
    pub origin: Name,
    /// The file, or what stands for it (a secondary kept in the store).
    pub file: String,
    pub role: &'static str,
    /// `None` when no copy of the zone is served.
    pub served: Option<ServedCopy>,
    pub timers: Option<ZoneTimers>,
}

/// The copy of a zone being served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedCopy {
    pub serial: Option<u32>,
    pub names: usize,
    pub loaded_at: SystemTime,
    pub file_modified: Option<SystemTime>,
    pub signed: Option<SignedState>,
}

fn role_name(spec: &ZoneSpec) -> &'static str {
    match (&spec.replication.catalog, spec.replication.is_secondary()) {
        (CatalogRole::Generate, _) => "catalog (generated)",
        (CatalogRole::Consume { .. }, _) => "catalog (consumed)",
        (_, true) => "secondary",
        (_, false) => "primary",
    }
}

impl Zones {
    /// Each signed zone with the expiry of its earliest signature.
    pub fn signature_expiries(&self) -> Vec<(Name, u64)> {
        let table = self.lock();
        let mut v: Vec<(Name, u64)> = table
            .entries
            .iter()
            .filter(|(_, e)| e.served.as_ref().is_some_and(|z| is_available(z)))
            .filter_map(|(apex, e)| Some((apex.clone(), e.signed.as_ref()?.state.expires)))
            .collect();
        v.sort();
        v
    }

    /// Each secondary zone with the time its copy expires (0: no copy yet).
    pub fn secondary_expiries(&self) -> Vec<(Name, u64)> {
        let mut v: Vec<(Name, u64)> = self
            .specs()
            .iter()
            .filter(|s| s.replication.is_secondary())
            .map(|s| {
                let at = self.timers(&s.origin).map_or(0, |t| t.expire_at);
                (s.origin.clone(), at)
            })
            .collect();
        v.sort();
        v
    }

    /// Every configured zone, sorted by origin.
    pub fn infos(&self) -> Vec<ZoneInfo> {
        let table = self.lock();
        let mut v: Vec<ZoneInfo> = table
            .all_specs()
            .iter()
            .map(|spec| {
                let entry = table.entries.get(&spec.origin);
                ZoneInfo {
                    origin: spec.origin.clone(),
                    file: spec.file_label(),
                    role: role_name(spec),
                    served: entry.and_then(|e| {
                        let z = e.served.as_ref().filter(|z| is_available(z))?;
                        Some(ServedCopy {
                            serial: soa_serial(z),
                            names: z.node_count(),
                            loaded_at: e.loaded_at,
                            file_modified: e.modified,
                            signed: e.signed.as_ref().map(|c| c.state.clone()),
                        })
                    }),
                    timers: spec
                        .replication
                        .is_secondary()
                        .then(|| self.timers(&spec.origin))
                        .flatten(),
                }
            })
            .collect();
        v.sort_by(|a, b| a.origin.cmp(&b.origin));
        v
    }

    /// One configured zone, or `None` when it is not configured.
    pub fn info(&self, origin: &Name) -> Option<ZoneInfo> {
        self.infos().into_iter().find(|i| &i.origin == origin)
    }

    /// Origin, serial and size of each served zone, sorted by origin.
    pub fn summaries(&self) -> Vec<(Name, Option<u32>, usize)> {
        let set = self.current();
        let mut v: Vec<_> = set
            .zones()
            .map(|z| (z.apex().clone(), soa_serial(z), z.node_count()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}
