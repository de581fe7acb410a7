//! What the zone table keeps in the store, and when (see `bulwark-store`).
//!
//! Two journals per zone. The *source* journal holds the zone's content
//! beyond its file: for a secondary, the last full copy (snapshot) and the
//! changes since; for a primary, the dynamic updates not yet written to its
//! file. It is what a restart rebuilds the zone from. The *served* journal
//! holds the differences of the zone as served, which IXFR sends to
//! secondaries. For a zone bulwark does not sign the two are the same and
//! only the served journal is kept; for a signed zone the source journal is
//! the unsigned one.

use std::sync::Arc;

use bulwark_proto::{Name, Record};
use bulwark_store::{Commit, JournalKind, JournalLimit, Snapshot, Store, StoreError, ZoneTimers};
use bulwark_zone::{apply_diff, Zone, ZoneDiff};

use super::version::{serial_of, Cause, Version};
use crate::settings::ZoneSpec;

/// The metadata key of the last serial a zone was served with, so a signed
/// zone's serial keeps moving forward across restarts.
const SERVED_SERIAL: &str = "served-serial";

/// The zone table's view of the store.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    store: Arc<Store>,
}

/// Where a zone's own content is journaled.
fn source_kind(spec: &ZoneSpec) -> JournalKind {
    if spec.signing.is_some() {
        JournalKind::Unsigned
    } else {
        JournalKind::Served
    }
}

impl Journal {
    pub(crate) fn new(store: Arc<Store>) -> Journal {
        Journal { store }
    }

    /// The last serial `origin` was served with, from an earlier run.
    pub(crate) fn served_serial(&self, origin: &Name) -> Option<u32> {
        let v = self.store.get_meta(origin, SERVED_SERIAL).ok()??;
        Some(u32::from_be_bytes(v.get(..4)?.try_into().ok()?))
    }

    /// A secondary zone's stored copy: its snapshot with the later changes
    /// applied.
    pub(crate) fn restore_source(&self, spec: &ZoneSpec) -> Option<Vec<Record>> {
        let kind = source_kind(spec);
        let origin = &spec.origin;
        let snapshot = match self.store.snapshot(origin, kind) {
            Ok(s) => s?,
            Err(e) => {
                tracing::error!(zone = %origin, error = %e, "cannot read the zone's stored copy");
                return None;
            }
        };
        let serial = super::version::records_serial(&snapshot)?;
        let diffs = match self.store.diffs_since(origin, kind, serial) {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => {
                tracing::error!(zone = %origin, error = %e, "cannot read the zone's journal; using its last full copy");
                Vec::new()
            }
        };
        let mut records = snapshot;
        for d in &diffs {
            records = match apply_diff(records.clone(), d) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(zone = %origin, error = %e, "the journal does not apply to the stored copy; using what applied");
                    break;
                }
            };
        }
        tracing::info!(zone = %origin, serial = super::version::records_serial(&records), changes = diffs.len(), "zone restored from the store");
        Some(records)
    }

    /// The changes of a primary zone's content after the file's `serial`.
    pub(crate) fn source_diffs_since(&self, spec: &ZoneSpec, serial: u32) -> Option<Vec<ZoneDiff>> {
        match self
            .store
            .diffs_since(&spec.origin, source_kind(spec), serial)
        {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(zone = %spec.origin, error = %e, "cannot read the zone's journal");
                None
            }
        }
    }

    /// Forgets a primary zone's source journal (it no longer follows from
    /// its file).
    pub(crate) fn clear_source(&self, spec: &ZoneSpec) {
        if let Err(e) = self.store.clear_journal(&spec.origin, source_kind(spec)) {
            tracing::error!(zone = %spec.origin, error = %e, "cannot clear the zone's journal");
        }
    }

    /// The served zone's changes from `serial` on, for IXFR.
    pub(crate) fn served_diffs_since(&self, origin: &Name, serial: u32) -> Option<Vec<ZoneDiff>> {
        match self.store.diffs_since(origin, JournalKind::Served, serial) {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(zone = %origin, error = %e, "cannot read the zone's journal; answering IXFR with the whole zone");
                None
            }
        }
    }

    pub(crate) fn timers(&self, origin: &Name) -> Option<ZoneTimers> {
        self.store.timers(origin).ok().flatten()
    }

    pub(crate) fn set_timers(&self, origin: &Name, timers: &ZoneTimers) -> Result<(), StoreError> {
        self.store.put_timers(origin, timers.clone())
    }

    pub(crate) fn remove_zone(&self, origin: &Name) {
        if let Err(e) = self.store.remove_zone(origin) {
            tracing::error!(zone = %origin, error = %e, "cannot remove the zone from the store");
        }
    }

    /// The zone file now holds version `serial` of the source: older
    /// changes may go when the journal is over its size.
    pub(crate) fn file_written(&self, spec: &ZoneSpec, serial: u32) {
        if spec.replication.is_secondary() {
            return;
        }
        let limit = JournalLimit {
            max_bytes: spec.replication.journal_max_bytes,
            keep_from: Some(serial),
        };
        let commit = Commit::new().limit(source_kind(spec), limit);
        if let Err(e) = self.store.commit(&spec.origin, commit) {
            tracing::error!(zone = %spec.origin, error = %e, "cannot update the journal's limit");
        }
    }

    /// Stores what a new version needs kept, in one durable transaction:
    /// the source change (an update's diff, a transfer's copy or diffs) and
    /// the served difference, with the served serial.
    pub(crate) fn record(
        &self,
        spec: &ZoneSpec,
        old_unsigned: &Option<Arc<Zone>>,
        version: &Version,
        cause: &Cause,
        file_serial: Option<u32>,
    ) -> Result<(), String> {
        let origin = &spec.origin;
        let signed = spec.signing.is_some();
        let source = source_kind(spec);
        let secondary = spec.replication.is_secondary();
        // The served serial is needed only where it does not follow from the
        // content: a signed zone (signing moves it) and a generated catalog.
        let keeps_serial = signed || spec.replication.generates_catalog();
        let mut commit = Commit::new();
        if keeps_serial {
            commit = commit.put_meta(SERVED_SERIAL, version.serial.to_be_bytes().to_vec());
        }
        let source_limit = JournalLimit {
            max_bytes: spec.replication.journal_max_bytes,
            // A primary's changes past its file are their only copy.
            keep_from: if secondary { None } else { file_serial },
        };
        let transfer = matches!(cause, Cause::TransferFull | Cause::TransferIncremental);
        let restart = matches!(cause, Cause::Restore | Cause::File) && old_unsigned.is_none();
        if transfer && old_unsigned.is_none() {
            // A secondary's first copy: the base of its source journal.
            commit = commit.snapshot(
                source,
                Snapshot::replacement(version.unsigned.records().collect()),
            );
        }
        if signed {
            // The unsigned content's own history.
            match (cause, old_unsigned) {
                (Cause::Update(diff), _) => commit = commit.append(source, [(**diff).clone()]),
                (Cause::TransferFull | Cause::TransferIncremental, Some(old)) => {
                    match bulwark_zone::diff_zones(old, &version.unsigned) {
                        Ok(d) if d.old_serial() != d.new_serial() => {
                            commit = commit.append(source, [d]);
                        }
                        _ => {}
                    }
                }
                // The file is the base again.
                (Cause::File, _) if !secondary => self.clear_source(spec),
                _ => {}
            }
            // The served zone's: after a restart every signature is new, and
            // no difference to what was served before is known.
            if restart {
                let _ = self.store.clear_journal(origin, JournalKind::Served);
            } else if let Some(d) = &version.served_diff {
                commit = commit.append(JournalKind::Served, [d.clone()]);
            }
            commit = commit.limit(
                JournalKind::Served,
                JournalLimit {
                    max_bytes: spec.replication.journal_max_bytes,
                    keep_from: None,
                },
            );
        } else {
            if restart && !secondary {
                // A start whose file the journal does not continue from
                // (edited while the server was down): the history is gone.
                let follows = self
                    .store
                    .journal_bounds(origin, JournalKind::Served)
                    .ok()
                    .flatten()
                    .is_some_and(|b| Some(b.last_serial) == serial_of(&version.served));
                if !follows {
                    let _ = self.store.clear_journal(origin, JournalKind::Served);
                }
            }
            if let (Some(d), false) = (&version.served_diff, transfer && old_unsigned.is_none()) {
                commit = commit.append(JournalKind::Served, [d.clone()]);
            }
        }
        if commit.is_empty() {
            // Nothing to keep (a zone loaded from its file, as it was): no
            // synced write, which matters for a server loading many zones.
            return Ok(());
        }
        commit = commit.limit(source, source_limit);
        match self.store.commit(origin, commit) {
            Ok(outcome) => {
                if outcome.over_limit(source) && secondary {
                    // Compaction: the current copy whole, so the oldest changes
                    // may go next time.
                    let compact = Commit::new().snapshot(
                        source,
                        Snapshot::compaction(version.unsigned.records().collect()),
                    );
                    if let Err(e) = self.store.commit(origin, compact) {
                        tracing::warn!(zone = %origin, error = %e, "journal compaction failed");
                    }
                }
                Ok(())
            }
            Err(bulwark_store::StoreError::Discontinuous { .. }) => {
                // The journal does not end where this change starts (it was
                // cleared, or made by another configuration): start it over.
                tracing::info!(zone = %origin, "the journal does not continue from this version; starting it anew");
                let _ = self.store.clear_journal(origin, JournalKind::Served);
                let mut retry = Commit::new();
                if keeps_serial {
                    retry = retry.put_meta(SERVED_SERIAL, version.serial.to_be_bytes().to_vec());
                }
                if secondary || matches!(cause, Cause::TransferFull) {
                    let _ = self.store.clear_journal(origin, source);
                    retry = retry.snapshot(
                        source,
                        Snapshot::replacement(version.unsigned.records().collect()),
                    );
                }
                self.store
                    .commit(origin, retry)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        }
    }
}
