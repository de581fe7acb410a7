//! The served zones: loading them, and reloading them without ever leaving the
//! server with less than it had. The current set is one immutable `ZoneSet` in an
//! `ArcSwap`; a reload builds a whole new set and swaps it in at once, so queries
//! in flight finish on the old snapshot.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Record};
use bulwark_zone::load::{load_records, load_zone_file_with_warnings, LoadError, Loaded};
use bulwark_zone::{Zone, ZoneSet};

use crate::config::{ZoneSigning, ZoneSpec};
use crate::signing::unix_now;
use crate::zone_signer::{sign_for_serving, SignedState};
use bulwark_dnssec::SignatureCache;

/// What became of one zone in a (re)load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZoneOutcome {
    Loaded {
        origin: Name,
        serial: Option<u32>,
        nodes: usize,
    },
    /// The file failed; the copy loaded before is still served.
    KeptOld { origin: Name, problems: Vec<String> },
    /// The file failed and there was no earlier copy: the zone is not served.
    Failed { origin: Name, problems: Vec<String> },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub outcomes: Vec<ZoneOutcome>,
    /// Zones served before, no longer configured.
    pub removed: Vec<Name>,
}

impl LoadReport {
    pub fn all_loaded(&self) -> bool {
        self.outcomes
            .iter()
            .all(|o| matches!(o, ZoneOutcome::Loaded { .. }))
    }

    /// One line per zone (problems indented below it), for `ctl reload`.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for o in &self.outcomes {
            match o {
                ZoneOutcome::Loaded {
                    origin,
                    serial,
                    nodes,
                } => lines.push(format!(
                    "loaded {origin} serial {} names {nodes}",
                    serial.map_or_else(|| "-".to_string(), |s| s.to_string())
                )),
                ZoneOutcome::KeptOld { origin, problems } => {
                    lines.push(format!("failed {origin}: keeping the previous copy"));
                    lines.extend(problems.iter().map(|p| format!("  {p}")));
                }
                ZoneOutcome::Failed { origin, problems } => {
                    lines.push(format!("failed {origin}: not served"));
                    lines.extend(problems.iter().map(|p| format!("  {p}")));
                }
            }
        }
        lines.extend(self.removed.iter().map(|o| format!("removed {o}")));
        lines
    }
}

/// One served zone and where and when it came from.
#[derive(Debug, Clone)]
struct LoadedZone {
    zone: Arc<Zone>,
    /// When this copy was read.
    loaded_at: SystemTime,
    /// The file's modification time when this copy was read.
    modified: Option<SystemTime>,
    /// For a zone bulwark signs: the unsigned records the signatures were
    /// made over (re-signing starts from them) and what the last pass made.
    signed: Option<SignedCopy>,
}

impl LoadedZone {
    fn read(spec: &ZoneSpec, zone: Zone) -> LoadedZone {
        LoadedZone {
            zone: Arc::new(zone),
            loaded_at: SystemTime::now(),
            modified: std::fs::metadata(&spec.path)
                .and_then(|m| m.modified())
                .ok(),
            signed: None,
        }
    }
}

/// What `ctl zone list` and `ctl zone status` show of one configured zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneInfo {
    pub origin: Name,
    pub file: PathBuf,
    /// `None` when the zone is configured but no copy of it ever loaded.
    pub served: Option<ServedCopy>,
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

/// Why a single-zone reload did not happen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ZoneReloadError {
    #[error("the zone is not in the configuration")]
    NotConfigured,
}

/// The state behind the lock: what was asked for and what is served.
#[derive(Debug, Default)]
struct ZoneTable {
    /// The zone list of the last full (re)load, in configuration order.
    specs: Vec<ZoneSpec>,
    /// The zones of `current` by origin.
    loaded: HashMap<Name, LoadedZone>,
}

/// The served zones and what they were loaded from.
#[derive(Debug)]
pub struct Zones {
    current: Arc<ArcSwap<ZoneSet>>,
    /// The lock also keeps reloads, full or single-zone, one at a time.
    table: Mutex<ZoneTable>,
}

impl Default for Zones {
    fn default() -> Self {
        Zones::new()
    }
}

impl Zones {
    pub fn new() -> Zones {
        Zones {
            current: Arc::new(ArcSwap::from_pointee(ZoneSet::default())),
            table: Mutex::new(ZoneTable::default()),
        }
    }

    /// The handle every query path reads from.
    pub fn snapshot(&self) -> Arc<ArcSwap<ZoneSet>> {
        Arc::clone(&self.current)
    }

    pub fn current(&self) -> Arc<ZoneSet> {
        self.current.load_full()
    }

    /// Loads every zone in `specs` (blocking: call off the async runtime), keeps
    /// the old copy of any that fails, drops zones no longer listed, and swaps the
    /// new set in.
    pub fn load(&self, specs: &[ZoneSpec]) -> LoadReport {
        let mut table = self.lock();
        let mut next: HashMap<Name, LoadedZone> = HashMap::with_capacity(specs.len());
        let mut report = LoadReport::default();
        for spec in specs {
            let (outcome, copy) = load_one(spec, table.loaded.get(&spec.origin));
            if let Some(copy) = copy {
                next.insert(spec.origin.clone(), copy);
            }
            report.outcomes.push(outcome);
        }
        for origin in table.loaded.keys() {
            if !next.contains_key(origin) {
                tracing::info!(zone = %origin, "zone removed");
                report.removed.push(origin.clone());
            }
        }
        table.loaded = next;
        table.specs = specs.to_vec();
        self.publish(&table);
        report
    }

    /// Reloads one configured zone from its file (blocking), keeping the copy
    /// served so far if the file fails; the other zones are left as they are.
    pub fn reload_one(&self, origin: &Name) -> Result<ZoneOutcome, ZoneReloadError> {
        let mut table = self.lock();
        let spec = table
            .specs
            .iter()
            .find(|s| &s.origin == origin)
            .cloned()
            .ok_or(ZoneReloadError::NotConfigured)?;
        let (outcome, copy) = load_one(&spec, table.loaded.get(origin));
        if let Some(copy) = copy {
            table.loaded.insert(spec.origin.clone(), copy);
        }
        self.publish(&table);
        Ok(outcome)
    }

    /// Each signed zone with the expiry of its earliest signature.
    pub fn signature_expiries(&self) -> Vec<(Name, u64)> {
        let table = self.lock();
        let mut v: Vec<(Name, u64)> = table
            .loaded
            .iter()
            .filter_map(|(apex, l)| Some((apex.clone(), l.signed.as_ref()?.state.expires)))
            .collect();
        v.sort();
        v
    }

    /// When the earliest signed zone wants its next signing pass.
    pub fn next_resign(&self) -> Option<u64> {
        let table = self.lock();
        table
            .loaded
            .values()
            .filter_map(|l| l.signed.as_ref().map(|c| c.state.next_resign))
            .min()
    }

    /// Re-signs every signed zone whose pass is due at `now` from the unsigned
    /// records it was loaded with; a zone that fails keeps the copy it has.
    pub fn resign_due(&self, now: u64) -> usize {
        let mut table = self.lock();
        let due: Vec<(ZoneSpec, SignedCopy)> = table
            .specs
            .iter()
            .filter_map(|spec| {
                let copy = table.loaded.get(&spec.origin)?.signed.as_ref()?;
                (copy.state.next_resign <= now).then(|| (spec.clone(), copy.clone()))
            })
            .collect();
        let mut resigned: usize = 0;
        for (spec, copy) in due {
            let Some(signing) = &spec.signing else {
                continue;
            };
            match sign_and_build(&spec, signing, &copy, now) {
                Ok(copy) => {
                    table.loaded.insert(spec.origin.clone(), copy);
                    resigned = resigned.saturating_add(1);
                }
                Err(problems) => {
                    for p in &problems {
                        tracing::error!(zone = %spec.origin, "re-signing: {p}");
                    }
                    // Try again in a minute rather than spin.
                    if let Some(l) = table.loaded.get_mut(&spec.origin) {
                        if let Some(copy) = l.signed.as_mut() {
                            copy.state.next_resign = now.saturating_add(60);
                        }
                    }
                }
            }
        }
        if resigned > 0 {
            self.publish(&table);
        }
        resigned
    }

    /// A signing pass for one zone now. `Ok(None)` when bulwark does not
    /// sign it; the problems when the pass failed (the old copy stays).
    pub fn resign_now(&self, origin: &Name) -> Result<Option<()>, Vec<String>> {
        let mut table = self.lock();
        let Some(spec) = table.specs.iter().find(|s| &s.origin == origin).cloned() else {
            return Ok(None);
        };
        let (Some(signing), Some(signed)) = (
            spec.signing.as_ref(),
            table.loaded.get(origin).and_then(|l| l.signed.clone()),
        ) else {
            return Ok(None);
        };
        let copy = sign_and_build(&spec, signing, &signed, unix_now())?;
        table.loaded.insert(origin.clone(), copy);
        self.publish(&table);
        Ok(Some(()))
    }

    /// Every configured zone, sorted by origin.
    pub fn infos(&self) -> Vec<ZoneInfo> {
        let table = self.lock();
        let mut v: Vec<ZoneInfo> = table
            .specs
            .iter()
            .map(|spec| ZoneInfo {
                origin: spec.origin.clone(),
                file: spec.path.clone(),
                served: table.loaded.get(&spec.origin).map(|l| ServedCopy {
                    serial: soa_serial(&l.zone),
                    names: l.zone.node_count(),
                    loaded_at: l.loaded_at,
                    file_modified: l.modified,
                    signed: l.signed.as_ref().map(|c| c.state.clone()),
                }),
            })
            .collect();
        v.sort_by(|a, b| a.origin.cmp(&b.origin));
        v
    }

    /// One configured zone, or `None` when it is not configured.
    pub fn info(&self, origin: &Name) -> Option<ZoneInfo> {
        self.infos().into_iter().find(|i| &i.origin == origin)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ZoneTable> {
        match self.table.lock() {
            Ok(g) => g,
            // A panic in an earlier reload left the table as it was before it.
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Builds a set from the table's zones and swaps it in at once.
    fn publish(&self, table: &ZoneTable) {
        let set = ZoneSet::new(table.loaded.values().map(|l| Arc::clone(&l.zone)).collect());
        self.current.store(Arc::new(set));
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

/// Reads one zone's file: the outcome, and the copy to serve (the new one, the
/// old one when the file fails, or none).
fn load_one(spec: &ZoneSpec, old: Option<&LoadedZone>) -> (ZoneOutcome, Option<LoadedZone>) {
    let origin = spec.origin.clone();
    let loaded = match &spec.signing {
        None => load_zone_file_with_warnings(&spec.origin, &spec.path).map(|l| (l, None)),
        Some(signing) => load_and_sign(
            spec,
            signing,
            old.and_then(|o| o.signed.as_ref()).map(|c| &*c.cache),
        ),
    };
    match loaded {
        Ok((loaded, signed)) => {
            for w in loaded.warning_lines(&spec.path.display().to_string()) {
                tracing::warn!(zone = %origin, "{w}");
            }
            let zone = loaded.zone;
            let serial = soa_serial(&zone);
            let nodes = zone.node_count();
            tracing::info!(
                zone = %origin,
                file = %spec.path.display(),
                serial = serial.map(u64::from),
                names = nodes,
                "zone loaded"
            );
            (
                ZoneOutcome::Loaded {
                    origin,
                    serial,
                    nodes,
                },
                Some(LoadedZone {
                    signed,
                    ..LoadedZone::read(spec, zone)
                }),
            )
        }
        Err(e) => {
            for p in &e.problems {
                tracing::error!(zone = %origin, "{p}");
            }
            if let Some(old) = old {
                tracing::warn!(zone = %origin, "zone failed to load; keeping the previous copy");
                (
                    ZoneOutcome::KeptOld {
                        origin,
                        problems: e.problems,
                    },
                    Some(old.clone()),
                )
            } else {
                tracing::warn!(zone = %origin, "zone failed to load; not serving it");
                (
                    ZoneOutcome::Failed {
                        origin,
                        problems: e.problems,
                    },
                    None,
                )
            }
        }
    }
}

/// Threads a signing pass may use: all but one core, so answering goes on.
fn signing_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// What a zone bulwark signs keeps beside its served copy.
#[derive(Debug, Clone)]
struct SignedCopy {
    /// The unsigned records: re-signing starts from them.
    unsigned: Arc<Vec<Record>>,
    state: SignedState,
    /// The last pass's signatures, for the next pass to keep what it can.
    cache: Arc<SignatureCache>,
}

/// Reads and signs a zone bulwark signs itself.
fn load_and_sign(
    spec: &ZoneSpec,
    signing: &ZoneSigning,
    previous: Option<&SignatureCache>,
) -> Result<(Loaded, Option<SignedCopy>), LoadError> {
    let file = spec.path.display().to_string();
    let records =
        bulwark_zone::parse_file(&spec.path, &spec.origin).map_err(|diagnostics| LoadError {
            problems: diagnostics.iter().map(ToString::to_string).collect(),
        })?;
    // The unsigned zone is checked on its own first, so its problems are
    // reported against the file, not the signer's output.
    load_records(&spec.origin, records.clone(), &file)?;
    let unsigned = Arc::new(records);
    let (signed, state, cache) = sign_records(spec, signing, &unsigned, unix_now(), previous)?;
    let loaded = load_records(&spec.origin, signed, &file)?;
    Ok((
        loaded,
        Some(SignedCopy {
            unsigned,
            state,
            cache: Arc::new(cache),
        }),
    ))
}

fn sign_records(
    spec: &ZoneSpec,
    signing: &ZoneSigning,
    unsigned: &[Record],
    now: u64,
    previous: Option<&SignatureCache>,
) -> Result<(Vec<Record>, SignedState, SignatureCache), LoadError> {
    sign_for_serving(
        &spec.origin,
        signing,
        unsigned.to_vec(),
        now,
        signing_threads(),
        previous,
    )
    .map_err(|e| LoadError {
        problems: vec![format!("{}: signing: {e:#}", spec.path.display())],
    })
}

/// A re-signing pass: sign the kept unsigned records, build the zone.
fn sign_and_build(
    spec: &ZoneSpec,
    signing: &ZoneSigning,
    previous: &SignedCopy,
    now: u64,
) -> Result<LoadedZone, Vec<String>> {
    let (signed, state, cache) = sign_records(
        spec,
        signing,
        &previous.unsigned,
        now,
        Some(&previous.cache),
    )
    .map_err(|e| e.problems)?;
    let loaded = load_records(&spec.origin, signed, &spec.path.display().to_string())
        .map_err(|e| e.problems)?;
    Ok(LoadedZone {
        zone: Arc::new(loaded.zone),
        loaded_at: SystemTime::now(),
        modified: std::fs::metadata(&spec.path)
            .and_then(|m| m.modified())
            .ok(),
        signed: Some(SignedCopy {
            unsigned: Arc::clone(&previous.unsigned),
            state,
            cache: Arc::new(cache),
        }),
    })
}

/// The serial from the apex SOA's rdata: after MNAME and RNAME (RFC 1035 §3.3.13).
pub fn soa_serial(zone: &Zone) -> Option<u32> {
    let rdata = zone.soa()?.rdatas().next()?;
    let mut r = Reader::new(rdata);
    Name::read_uncompressed(&mut r).ok()?;
    Name::read_uncompressed(&mut r).ok()?;
    r.read_u32().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn a_zone_that_never_loaded_is_reported_failed_not_kept() {
        let zones = Zones::new();
        let spec = ZoneSpec {
            origin: "nowhere.test.".parse().unwrap(),
            path: PathBuf::from("/nonexistent/bulwark/zone"),
            signing: None,
        };
        let report = zones.load(&[spec]);
        assert!(!report.all_loaded());
        assert!(matches!(report.outcomes[0], ZoneOutcome::Failed { .. }));
        assert!(report.lines()[0].starts_with("failed nowhere.test.: not served"));
        assert!(zones.current().is_empty());
    }
}
