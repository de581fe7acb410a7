//! Negative trust anchors (RFC 7646): zones an operator has told the
//! resolver not to validate, for a while, because their operators broke
//! them (an expired signature, a botched key roll) and the resolver's
//! users must still reach them. Set in the configuration (for good) or at
//! run time with a lifetime (`bulwark ctl nta add`); shared by the engine,
//! which consults them before judging any zone's keys, and the control
//! socket.

use std::sync::{PoisonError, RwLock};

use bulwark_proto::Name;

use crate::Millis;

/// The anchors: each zone, and when it stops being one (`None`: never).
#[derive(Debug, Default)]
pub struct NegativeAnchors {
    zones: RwLock<Vec<(Name, Option<Millis>)>>,
}

/// The most anchors kept: enough for any operator, and a bound on the walk
/// each validation makes over them.
pub const MAX_NEGATIVE_ANCHORS: usize = 1000;

impl NegativeAnchors {
    /// Anchors for good, from the configuration.
    pub fn new(zones: &[Name]) -> NegativeAnchors {
        NegativeAnchors {
            zones: RwLock::new(zones.iter().map(|z| (z.to_lowercase(), None)).collect()),
        }
    }

    /// Makes `zone` an anchor until `until` (replacing what it was).
    /// `false` when there are too many anchors already.
    pub fn add(&self, zone: &Name, until: Option<Millis>, now: Millis) -> bool {
        let zone = zone.to_lowercase();
        let mut zones = self.zones.write().unwrap_or_else(PoisonError::into_inner);
        zones.retain(|(z, end)| *z != zone && end.is_none_or(|e| e > now));
        if zones.len() >= MAX_NEGATIVE_ANCHORS {
            return false;
        }
        zones.push((zone, until));
        true
    }

    /// Removes `zone`'s anchor; whether there was one.
    pub fn remove(&self, zone: &Name) -> bool {
        let mut zones = self.zones.write().unwrap_or_else(PoisonError::into_inner);
        let before = zones.len();
        zones.retain(|(z, _)| z != zone);
        zones.len() != before
    }

    /// The anchors in force at `now`, and when each ends.
    pub fn list(&self, now: Millis) -> Vec<(Name, Option<Millis>)> {
        let zones = self.zones.read().unwrap_or_else(PoisonError::into_inner);
        zones
            .iter()
            .filter(|(_, end)| end.is_none_or(|e| e > now))
            .cloned()
            .collect()
    }

    /// Whether an anchor in force at `now` covers `name`.
    pub fn covers(&self, name: &Name, now: Millis) -> bool {
        let zones = self.zones.read().unwrap_or_else(PoisonError::into_inner);
        zones
            .iter()
            .any(|(z, end)| name.ends_with(z) && end.is_none_or(|e| e > now))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_anchor_covers_its_zone_below_until_it_ends() {
        let zone: Name = "broken.example.".parse().unwrap();
        let anchors = NegativeAnchors::new(&["forever.example.".parse().unwrap()]);
        assert!(anchors.add(&zone, Some(10_000), 0));
        let below: Name = "www.Broken.example.".parse().unwrap();
        assert!(anchors.covers(&below, 9_999));
        assert!(!anchors.covers(&below, 10_000));
        assert!(!anchors.covers(&"example.".parse().unwrap(), 0));
        assert!(anchors.covers(&"a.forever.example.".parse().unwrap(), u64::MAX));
        assert_eq!(anchors.list(10_000).len(), 1);
        assert!(anchors.remove(&"forever.example.".parse().unwrap()));
        assert!(anchors.list(0).iter().all(|(z, _)| *z == zone));
    }
}
