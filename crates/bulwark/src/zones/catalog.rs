//! Catalog zones (RFC 9432) as the zone table sees them: a generated catalog
//! is written from the zones that name it, and a consumed catalog's members
//! become secondary zones made from its template.

use std::collections::HashMap;
use std::sync::Arc;

use bulwark_proto::rdata::Soa;
use bulwark_proto::{Name, Record};
use bulwark_xfr::catalog::{catalog_changes, catalog_records, read_catalog, Catalog, MemberSpec};
use bulwark_zone::diff_zones;

use super::version::{build_lenient, serial_of, set_serial, Cause};
use super::{ZoneEntry, ZoneEvent, ZoneOutcome, ZoneTable, Zones};
use crate::settings::ZoneSpec;
use crate::settings::{CatalogRole, ZoneReplication};
use crate::signing::unix_now;

/// RFC 9432 §4.1: the SOA's values are not used by consumers; these are the
/// ones Knot writes, with a zero negative TTL.
const CATALOG_SOA_REFRESH: u32 = 3600;
const CATALOG_SOA_RETRY: u32 = 600;
const CATALOG_SOA_EXPIRE: u32 = 2_147_483_646;
/// RFC 9432 §4.1: a catalog is not meant to be queried; a TTL of 0 keeps
/// what escapes from being cached.
const CATALOG_TTL: u32 = 0;

/// The catalog a member zone is listed in, when it came from one.
pub(super) fn member_of(spec: &ZoneSpec) -> Option<&Name> {
    match &spec.replication.catalog {
        CatalogRole::Member { catalog, .. } => Some(&**catalog),
        _ => None,
    }
}

impl Zones {
    /// Writes the generated catalog `spec` from the configured zones that
    /// name it; its serial moves on when its members do.
    pub(super) fn generate_catalog(
        &self,
        table: &mut ZoneTable,
        spec: &ZoneSpec,
        now: u64,
    ) -> (ZoneOutcome, Option<u32>) {
        let members: Vec<MemberSpec> = table
            .specs
            .iter()
            .filter_map(|s| match &s.replication.catalog {
                CatalogRole::Member { catalog, group } if **catalog == spec.origin => {
                    let mut m = MemberSpec::new(s.origin.clone());
                    m.groups.extend(group.iter().cloned());
                    Some(m)
                }
                _ => None,
            })
            .collect();
        let old = table
            .entries
            .get(&spec.origin)
            .and_then(|e| e.served.clone());
        let last_serial = old
            .as_ref()
            .and_then(|z| serial_of(z))
            .or_else(|| self.journal.as_ref()?.served_serial(&spec.origin));
        let soa = Soa {
            mname: "invalid.".parse::<Name>().unwrap_or_else(|_| Name::root()),
            rname: "invalid.".parse::<Name>().unwrap_or_else(|_| Name::root()),
            serial: last_serial.unwrap_or(1),
            refresh: CATALOG_SOA_REFRESH,
            retry: CATALOG_SOA_RETRY,
            expire: CATALOG_SOA_EXPIRE,
            minimum: 0,
        };
        let mut records: Vec<Record> =
            match catalog_records(&spec.origin, &members, &soa, CATALOG_TTL) {
                Ok(r) => r,
                Err(e) => {
                    return (
                        ZoneOutcome::Failed {
                            origin: spec.origin.clone(),
                            problems: vec![format!("catalog {}: {e}", spec.origin)],
                        },
                        None,
                    )
                }
            };
        let zone = match build_lenient(&spec.origin, records.clone()) {
            Ok(z) => z,
            Err(p) => {
                return (
                    ZoneOutcome::Failed {
                        origin: spec.origin.clone(),
                        problems: p,
                    },
                    None,
                )
            }
        };
        // RFC 9432 §4.1: every change of the catalog takes a new serial.
        let changed = match &old {
            Some(o) => !diff_zones(o, &zone).is_ok_and(|d| d.is_empty()),
            None => true,
        };
        let zone = if changed && last_serial.is_some() {
            let next = spec
                .replication
                .serial_policy
                .next(last_serial.unwrap_or(0), now);
            set_serial(&mut records, next);
            match build_lenient(&spec.origin, records) {
                Ok(z) => z,
                Err(p) => {
                    return (
                        ZoneOutcome::Failed {
                            origin: spec.origin.clone(),
                            problems: p,
                        },
                        None,
                    )
                }
            }
        } else if changed {
            zone
        } else {
            return (
                ZoneOutcome::Loaded {
                    origin: spec.origin.clone(),
                    serial: last_serial,
                    nodes: zone.node_count(),
                },
                None,
            );
        };
        table
            .entries
            .entry(spec.origin.clone())
            .or_insert_with(ZoneEntry::empty);
        match self.commit(table, spec, Arc::new(zone), Cause::Catalog, now) {
            Ok(serial) => {
                let served = table
                    .entries
                    .get(&spec.origin)
                    .and_then(|e| e.served.clone());
                tracing::info!(zone = %spec.origin, members = members.len(), serial = served.as_ref().and_then(|z| serial_of(z)), "catalog zone generated");
                (
                    ZoneOutcome::Loaded {
                        origin: spec.origin.clone(),
                        serial: served.as_ref().and_then(|z| serial_of(z)),
                        nodes: served.map_or(0, |z| z.node_count()),
                    },
                    serial,
                )
            }
            Err(e) => (
                ZoneOutcome::Failed {
                    origin: spec.origin.clone(),
                    problems: vec![e.to_string()],
                },
                None,
            ),
        }
    }

    /// Reads the consumed catalog `origin` as served now and brings its
    /// member zones in line: new members become secondary zones from the
    /// template, removed ones go with their stored copies, and a member
    /// whose unique ID changed starts afresh (RFC 9432 §5.4).
    pub fn consume_catalog(&self, origin: &Name) {
        let Some(spec) = self.spec(origin) else {
            return;
        };
        let CatalogRole::Consume { template } = &spec.replication.catalog else {
            return;
        };
        let Some(zone) = self.current().get(origin).cloned() else {
            return;
        };
        let catalog = match read_catalog(&zone) {
            Ok(c) => c,
            Err(e) => {
                // RFC 9432 §5.1: an invalid catalog is not processed; the
                // members stay as the last valid version left them.
                tracing::error!(catalog = %origin, error = %e, "catalog zone is invalid; its members are left as they were");
                return;
            }
        };
        let previous = self.last_catalog(origin);
        let changes = catalog_changes(&previous, &catalog);
        let reset: Vec<Name> = changes.reset.iter().map(|m| m.zone.clone()).collect();
        let members: Vec<ZoneSpec> = catalog
            .members
            .iter()
            .map(|m| ZoneSpec {
                origin: m.zone.to_lowercase(),
                path: template.file_for(&m.zone),
                signing: template.signing.clone(),
                replication: ZoneReplication {
                    catalog: CatalogRole::Member {
                        catalog: Box::new(origin.clone()),
                        group: m.groups.first().cloned(),
                    },
                    ..template.replication.clone()
                },
            })
            .collect();
        tracing::info!(
            catalog = %origin,
            members = members.len(),
            added = changes.added.len(),
            removed = changes.removed.len(),
            reset = reset.len(),
            "catalog zone read"
        );
        self.set_catalog_members(origin, members, &reset);
        self.remember_catalog(origin, catalog);
    }

    fn last_catalog(&self, origin: &Name) -> Catalog {
        self.catalogs
            .lock()
            .ok()
            .and_then(|c| c.get(origin).cloned())
            .unwrap_or_default()
    }

    fn remember_catalog(&self, origin: &Name, catalog: Catalog) {
        if let Ok(mut c) = self.catalogs.lock() {
            c.insert(origin.clone(), catalog);
        }
    }

    /// Replaces the member zones of the consumed catalog `catalog` with
    /// `members` (their specs made from its template): zones no longer
    /// listed stop being served and their stored copies are removed.
    pub fn set_catalog_members(&self, catalog: &Name, members: Vec<ZoneSpec>, reset: &[Name]) {
        let mut table = self.lock();
        let configured: Vec<Name> = table.specs.iter().map(|s| s.origin.clone()).collect();
        let wanted: HashMap<Name, ZoneSpec> = members
            .into_iter()
            .filter(|m| {
                let clash = configured.contains(&m.origin);
                if clash {
                    tracing::warn!(catalog = %catalog, zone = %m.origin, "catalog member is also configured as a zone; the configuration wins");
                }
                !clash
            })
            .map(|m| (m.origin.clone(), m))
            .collect();
        let gone: Vec<Name> = table
            .members
            .iter()
            .filter(|(origin, spec)| {
                member_of(spec) == Some(catalog) && !wanted.contains_key(*origin)
            })
            .map(|(o, _)| o.clone())
            .collect();
        let mut changed = false;
        for origin in gone.iter().chain(reset.iter()) {
            table.members.remove(origin);
            if table.entries.remove(origin).is_some() {
                changed = true;
            }
            if let Some(j) = &self.journal {
                j.remove_zone(origin);
            }
            tracing::info!(catalog = %catalog, zone = %origin, "catalog member zone removed");
        }
        for (origin, spec) in wanted {
            if !table.members.contains_key(&origin) {
                tracing::info!(catalog = %catalog, zone = %origin, "catalog member zone added");
                table.members.insert(origin.clone(), spec.clone());
                let _ = self.load_one(&mut table, &spec, unix_now());
                changed = true;
            }
            table.members.insert(origin, spec);
        }
        if changed {
            self.publish(&table);
        }
        drop(table);
        if changed {
            self.emit(ZoneEvent::ListChanged);
        }
    }
}
