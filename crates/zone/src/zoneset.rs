//! All zones served, found by the longest matching suffix.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use foldhash::fast::RandomState;

use bulwark_proto::Name;

use crate::zone::{suffixes, Zone};

/// Immutable once built; a change builds a new set (sharing unchanged zones) and
/// the server swaps it in whole.
#[derive(Debug, Clone, Default)]
pub struct ZoneSet {
    zones: Vec<Arc<Zone>>,
    /// Index into `zones` by lowercased apex wire form.
    /// Keys are the operator's apexes, so a fast hash is safe (see `NodeIndex`).
    by_apex: HashMap<Box<[u8]>, usize, RandomState>,
    /// The longest apex in wire octets: longer suffixes of a qname cannot match.
    longest_apex: usize,
    /// Unique to this set's contents (a clone shares it): whatever was computed
    /// from a set with another generation may be stale.
    generation: u64,
}

/// Generations handed out so far; 0 is left to the empty default set.
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

impl ZoneSet {
    /// A set of `zones`. Of several zones with the same apex, the first is served.
    pub fn new(zones: Vec<Arc<Zone>>) -> ZoneSet {
        let mut by_apex = HashMap::with_capacity_and_hasher(zones.len(), RandomState::default());
        let mut longest_apex = 0;
        for (i, z) in zones.iter().enumerate() {
            by_apex.entry(z.apex().as_wire().into()).or_insert(i);
            longest_apex = longest_apex.max(z.apex().wire_len());
        }
        ZoneSet {
            zones,
            by_apex,
            longest_apex,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed).wrapping_add(1),
        }
    }

    /// Differs between any two sets built separately, even from the same zones,
    /// so answers remembered from one set are never served from another.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The zone with the longest apex that `qname` is at or below.
    ///
    /// Walks `qname`'s suffixes longest first, one hash lookup each, on one
    /// lowercased copy: no allocation, cost independent of the number of zones.
    pub fn find(&self, qname: &Name) -> Option<&Arc<Zone>> {
        if self.zones.is_empty() {
            return None;
        }
        self.find_by_lowercase_wire(qname.to_lowercase().as_wire())
    }

    /// [`ZoneSet::find`] for a name the caller has already lowercased, in
    /// wire form: the query path lowercases the question once for every step.
    pub fn find_by_lowercase_wire(&self, lower: &[u8]) -> Option<&Arc<Zone>> {
        let index = suffixes(lower)
            .filter(|s| s.len() <= self.longest_apex)
            .find_map(|s| self.by_apex.get(s).copied())?;
        self.zones.get(index)
    }

    /// The zone whose apex is exactly `apex`.
    pub fn get(&self, apex: &Name) -> Option<&Arc<Zone>> {
        let lower = apex.to_lowercase();
        self.by_apex
            .get(lower.as_wire())
            .and_then(|&i| self.zones.get(i))
    }

    /// A new set with `zone` added, or replacing the zone with the same apex;
    /// every other zone is shared, not copied.
    pub fn with_zone(&self, zone: Arc<Zone>) -> ZoneSet {
        let mut zones: Vec<Arc<Zone>> = self
            .zones
            .iter()
            .filter(|z| z.apex() != zone.apex())
            .cloned()
            .collect();
        zones.push(zone);
        ZoneSet::new(zones)
    }

    /// A new set without the zone whose apex is `apex` (sharing the others).
    pub fn without_zone(&self, apex: &Name) -> ZoneSet {
        ZoneSet::new(
            self.zones
                .iter()
                .filter(|z| z.apex() != apex)
                .cloned()
                .collect(),
        )
    }

    pub fn zones(&self) -> impl Iterator<Item = &Arc<Zone>> {
        self.zones.iter()
    }

    pub fn len(&self) -> usize {
        self.zones.len()
    }

    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }
}
