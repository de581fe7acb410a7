//! The served zones: loading them, and reloading them without ever leaving the
//! server with less than it had. The current set is one immutable `ZoneSet` in an
//! `ArcSwap`; a reload builds a whole new set and swaps it in at once, so queries
//! in flight finish on the old snapshot.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use bulwark_proto::wire::Reader;
use bulwark_proto::Name;
use bulwark_zone::load::load_zone_file_with_warnings;
use bulwark_zone::{Zone, ZoneSet};

use crate::config::ZoneSpec;

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

/// The served zones and what they were loaded from.
#[derive(Debug)]
pub struct Zones {
    current: Arc<ArcSwap<ZoneSet>>,
    /// The zones of `current` by origin; the lock also keeps reloads one at a time.
    loaded: Mutex<HashMap<Name, (PathBuf, Arc<Zone>)>>,
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
            loaded: Mutex::new(HashMap::new()),
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
        let mut loaded = match self.loaded.lock() {
            Ok(g) => g,
            // A panic in an earlier reload left the map as it was before it.
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut next: HashMap<Name, (PathBuf, Arc<Zone>)> = HashMap::with_capacity(specs.len());
        let mut report = LoadReport::default();
        for spec in specs {
            let origin = spec.origin.clone();
            match load_zone_file_with_warnings(&spec.origin, &spec.path) {
                Ok(loaded) => {
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
                    next.insert(origin.clone(), (spec.path.clone(), Arc::new(zone)));
                    report.outcomes.push(ZoneOutcome::Loaded {
                        origin,
                        serial,
                        nodes,
                    });
                }
                Err(e) => {
                    for p in &e.problems {
                        tracing::error!(zone = %origin, "{p}");
                    }
                    if let Some(old) = loaded.get(&origin) {
                        tracing::warn!(zone = %origin, "zone failed to load; keeping the previous copy");
                        next.insert(origin.clone(), old.clone());
                        report.outcomes.push(ZoneOutcome::KeptOld {
                            origin,
                            problems: e.problems,
                        });
                    } else {
                        tracing::warn!(zone = %origin, "zone failed to load; not serving it");
                        report.outcomes.push(ZoneOutcome::Failed {
                            origin,
                            problems: e.problems,
                        });
                    }
                }
            }
        }
        for origin in loaded.keys() {
            if !next.contains_key(origin) {
                tracing::info!(zone = %origin, "zone removed");
                report.removed.push(origin.clone());
            }
        }
        let set = ZoneSet::new(next.values().map(|(_, z)| Arc::clone(z)).collect());
        self.current.store(Arc::new(set));
        *loaded = next;
        report
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
        };
        let report = zones.load(&[spec]);
        assert!(!report.all_loaded());
        assert!(matches!(report.outcomes[0], ZoneOutcome::Failed { .. }));
        assert!(report.lines()[0].starts_with("failed nowhere.test.: not served"));
        assert!(zones.current().is_empty());
    }
}
