//! All zones served, found by the longest matching suffix.

use std::sync::Arc;

use bulwark_proto::Name;

use crate::zone::Zone;

/// Immutable once built; a change builds a new set (sharing unchanged zones) and
/// the server swaps it in whole.
#[derive(Debug, Clone, Default)]
pub struct ZoneSet {
    zones: Vec<Arc<Zone>>,
}

impl ZoneSet {
    pub fn new(zones: Vec<Arc<Zone>>) -> ZoneSet {
        ZoneSet { zones }
    }

    /// The zone with the longest apex that `qname` is at or below.
    pub fn find(&self, qname: &Name) -> Option<&Arc<Zone>> {
        self.zones
            .iter()
            .filter(|z| qname.ends_with(z.apex()))
            .max_by_key(|z| z.apex().wire_len())
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
