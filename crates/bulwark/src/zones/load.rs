//! Where a zone's content comes from when it is (re)loaded: a primary's file
//! (with the journal's later changes on the first load after a start), a
//! secondary's copy in the store (or its file), and where it goes back to:
//! the zone file, rewritten atomically.

use std::sync::Arc;

use super::read_zone_file;
use bulwark_proto::Record;
use bulwark_xfr::serial::serial_gt;
use bulwark_zone::{apply_to_zone, diff_zones, Problem, Zone};

use super::version::{build_lenient, reload_serial, serial_of, set_serial, Cause};
use super::{ZoneEntry, ZoneOutcome, ZoneTable, Zones};
use crate::settings::ZoneSpec;

impl Zones {
    /// Loads one zone in place in `table`. Returns the outcome and the new
    /// served serial when a new version is served.
    pub(super) fn load_one(
        &self,
        table: &mut ZoneTable,
        spec: &ZoneSpec,
        now: u64,
    ) -> (ZoneOutcome, Option<u32>) {
        if spec.replication.is_secondary() {
            return self.load_secondary(table, spec, now);
        }
        let origin = spec.origin.clone();
        let Some(path) = spec.path.clone() else {
            return failed(table, spec, vec![format!("zone {origin}: no file")]);
        };
        let old = table.entries.get(&origin).cloned();
        if old.as_ref().is_some_and(|o| o.dirty_since.is_some()) {
            // Reading the file now would drop changes it does not hold yet.
            return kept_old(
                spec,
                vec![format!(
                    "{}: not reloaded: the zone has changes (dynamic updates) not yet written to its file; it can be reloaded once they are",
                    path.display()
                )],
            );
        }
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let started = std::time::Instant::now();
        let loaded = match read_zone_file(&origin, &path, LOGGED_WARNINGS) {
            Ok(l) => l,
            Err(e) => {
                for p in &e.problems {
                    tracing::error!(zone = %origin, "{p}");
                }
                return match old {
                    Some(o) if o.served.is_some() => {
                        tracing::warn!(zone = %origin, "zone failed to load; keeping the previous copy");
                        kept_old(spec, e.problems)
                    }
                    _ => failed(table, spec, e.problems),
                };
            }
        };
        tracing::info!(
            zone = %origin,
            names = loaded.zone.node_count(),
            ms = started.elapsed().as_millis(),
            "zone file read"
        );
        log_warnings(&origin, &path, &loaded.warnings, loaded.unkept_warnings);
        let file_serial = serial_of(&loaded.zone);
        let mut zone = loaded.zone;
        let cause = match old.as_ref().and_then(|o| o.unsigned.clone()) {
            None => match self.replay_journal(spec, &zone, file_serial) {
                Ok(Some(replayed)) => {
                    zone = replayed;
                    Cause::Restore
                }
                Ok(None) => Cause::File,
                Err(problems) => return failed(table, spec, problems),
            },
            Some(current) => {
                let current_serial = serial_of(&current).unwrap_or(0);
                let same = diff_zones(&current, &zone).is_ok_and(|d| d.is_empty());
                if same && file_serial == Some(current_serial) {
                    if let Some(e) = table.entries.get_mut(&origin) {
                        e.modified = modified;
                    }
                    return (loaded_outcome(&origin, table), None);
                }
                let file_serial = file_serial.unwrap_or(0);
                if !serial_gt(file_serial, current_serial) {
                    let serial = reload_serial(spec, file_serial, current_serial, now);
                    let mut records: Vec<Record> = zone.records().collect();
                    set_serial(&mut records, serial);
                    match build_lenient(&origin, records) {
                        Ok(z) => zone = z,
                        Err(p) => return kept_old(spec, p),
                    }
                }
                Cause::File
            }
        };
        let entry = table
            .entries
            .entry(origin.clone())
            .or_insert_with(ZoneEntry::empty);
        entry.file_serial = file_serial;
        entry.modified = modified;
        match self.commit(table, spec, Arc::new(zone), cause, now) {
            Ok(serial) => {
                log_loaded(spec, table);
                (loaded_outcome(&origin, table), serial)
            }
            Err(e) => {
                let problems = vec![e.to_string()];
                match table.entries.get(&origin) {
                    Some(o) if o.served.is_some() => kept_old(spec, problems),
                    _ => failed(table, spec, problems),
                }
            }
        }
    }

    /// The zone of `file_zone` with the changes the journal holds after the
    /// file's serial (dynamic updates not yet written to the file when the
    /// server stopped). `Ok(None)` when there are none.
    fn replay_journal(
        &self,
        spec: &ZoneSpec,
        file_zone: &Zone,
        file_serial: Option<u32>,
    ) -> Result<Option<Zone>, Vec<String>> {
        let (Some(journal), Some(serial)) = (&self.journal, file_serial) else {
            return Ok(None);
        };
        let diffs = match journal.source_diffs_since(spec, serial) {
            Some(d) if !d.is_empty() => d,
            _ => return Ok(None),
        };
        let mut zone: Option<Zone> = None;
        for d in &diffs {
            match apply_to_zone(zone.as_ref().unwrap_or(file_zone), d) {
                Ok(z) => zone = Some(z),
                Err(e) => {
                    tracing::warn!(zone = %spec.origin, error = %e, "the journal does not apply to the zone file; serving the file and dropping the journal");
                    journal.clear_source(spec);
                    return Ok(None);
                }
            }
        }
        let Some(zone) = zone else {
            return Ok(None);
        };
        tracing::info!(
            zone = %spec.origin,
            changes = diffs.len(),
            file_serial = serial,
            serial = serial_of(&zone),
            "changes from the journal applied over the zone file"
        );
        Ok(Some(zone))
    }

    /// A secondary zone's first load: its copy from the store, else from its
    /// file, else none until a primary sends one. A reload keeps the copy.
    fn load_secondary(
        &self,
        table: &mut ZoneTable,
        spec: &ZoneSpec,
        now: u64,
    ) -> (ZoneOutcome, Option<u32>) {
        let origin = spec.origin.clone();
        if table.entries.contains_key(&origin) {
            return (loaded_outcome(&origin, table), None);
        }
        let stored = self.journal.as_ref().and_then(|j| j.restore_source(spec));
        let (zone, cause) = match stored {
            Some(records) => match build_lenient(&origin, records) {
                Ok(z) => (Some(z), Cause::Restore),
                Err(p) => {
                    tracing::error!(zone = %origin, "the stored copy is unusable: {}", p.join("; "));
                    (None, Cause::Restore)
                }
            },
            None => match &spec.path {
                Some(path) if path.exists() => match read_zone_file(&origin, path, LOGGED_WARNINGS)
                {
                    Ok(l) => (Some(l.zone), Cause::File),
                    Err(e) => {
                        for p in &e.problems {
                            tracing::warn!(zone = %origin, "{p}");
                        }
                        (None, Cause::File)
                    }
                },
                _ => (None, Cause::File),
            },
        };
        let mut entry = ZoneEntry::empty();
        entry.served = Some(super::unavailable(&origin));
        table.entries.insert(origin.clone(), entry);
        let Some(zone) = zone else {
            tracing::info!(zone = %origin, "secondary zone has no copy yet; waiting for a transfer");
            return (ZoneOutcome::Pending { origin }, None);
        };
        if let Some(e) = table.entries.get_mut(&origin) {
            e.file_serial = matches!(cause, Cause::File)
                .then(|| serial_of(&zone))
                .flatten();
        }
        let serial = match self.commit(table, spec, Arc::new(zone), cause, now) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(zone = %origin, "{e}");
                return (ZoneOutcome::Pending { origin }, None);
            }
        };
        let expired = self
            .journal
            .as_ref()
            .and_then(|j| j.timers(&origin))
            .is_some_and(|t| t.expire_at != 0 && t.expire_at <= now);
        if expired {
            if let Some(e) = table.entries.get_mut(&origin) {
                e.served = Some(super::unavailable(&origin));
            }
            tracing::warn!(zone = %origin, "the stored copy has expired; not served until a primary sends a fresh one");
            return (ZoneOutcome::Pending { origin }, None);
        }
        log_loaded(spec, table);
        (loaded_outcome(&origin, table), serial)
    }
}

fn log_loaded(spec: &ZoneSpec, table: &ZoneTable) {
    if let Some(z) = table
        .entries
        .get(&spec.origin)
        .and_then(|e| e.served.as_ref())
    {
        tracing::info!(
            zone = %spec.origin,
            file = %spec.file_label(),
            serial = serial_of(z).map(u64::from),
            names = z.node_count(),
            "zone loaded"
        );
    }
}

fn loaded_outcome(origin: &bulwark_proto::Name, table: &ZoneTable) -> ZoneOutcome {
    match table
        .entries
        .get(origin)
        .and_then(|e| e.served.as_ref())
        .filter(|z| super::is_available(z))
    {
        Some(z) => ZoneOutcome::Loaded {
            origin: origin.clone(),
            serial: serial_of(z),
            nodes: z.node_count(),
        },
        None => ZoneOutcome::Pending {
            origin: origin.clone(),
        },
    }
}

fn kept_old(spec: &ZoneSpec, problems: Vec<String>) -> (ZoneOutcome, Option<u32>) {
    (
        ZoneOutcome::KeptOld {
            origin: spec.origin.clone(),
            problems,
        },
        None,
    )
}

fn failed(
    table: &mut ZoneTable,
    spec: &ZoneSpec,
    problems: Vec<String>,
) -> (ZoneOutcome, Option<u32>) {
    tracing::warn!(zone = %spec.origin, "zone failed to load; not serving it");
    table.entries.remove(&spec.origin);
    (
        ZoneOutcome::Failed {
            origin: spec.origin.clone(),
            problems,
        },
        None,
    )
}

/// How many of one load's warnings the log shows one by one; the loader keeps
/// no more than these and counts the rest. A generated zone can have tens of
/// thousands of the same kind (an MX target with no address on every eighth
/// name): logging each cost a tenth of a 1M-record load and buried everything
/// else, and building each message 30 ms more. `bulwark check-zone` lists
/// them all.
const LOGGED_WARNINGS: usize = 20;

fn log_warnings(
    origin: &bulwark_proto::Name,
    path: &std::path::Path,
    warnings: &[Problem],
    unkept: usize,
) {
    let file = path.display();
    for w in warnings.iter().take(LOGGED_WARNINGS) {
        tracing::warn!(zone = %origin, "{file}: {w}");
    }
    let more = warnings
        .len()
        .saturating_sub(LOGGED_WARNINGS)
        .saturating_add(unkept);
    if more > 0 {
        tracing::warn!(
            zone = %origin,
            "{file}: {more} more warnings not logged; `bulwark check-zone {origin} {file}` lists every one"
        );
    }
}
