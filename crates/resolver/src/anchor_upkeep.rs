//! Keeping managed trust anchors up to date (RFC 5011), the engine's side:
//! which zones' anchors are managed, their state restored from the edge's
//! store at start and handed back to it when it changes, the DNSKEY set of
//! each fetched again when RFC 5011 §2.3 says, and every secure DNSKEY set
//! of such a zone given to its state machine ([`AutoTrust`]).
//!
//! The anchors validation starts from are then, for a managed zone, the
//! keys its state machine holds valid (or its initial DS records before
//! the first key set is seen); for any other zone, the configured ones.

use bulwark_proto::{Name, Rtype};

use crate::engine::Resolver;
use crate::rrset::RrSet;
use crate::validate::rfc5011::{AutoTrust, Updated};
use crate::validate::{Budget, TrustAnchor};
use crate::Millis;

/// One managed zone: its state machine, and when its keys are fetched next.
#[derive(Debug)]
pub(crate) struct Managed {
    trust: AutoTrust,
    refresh_at: Millis,
    /// The state changed and the edge has not taken it yet.
    unsaved: bool,
}

/// The managed zones, built from the configuration's anchors marked
/// managed (BIND's `initial-key`/`initial-ds`, Unbound's
/// `auto-trust-anchor-file`).
pub(crate) fn managed_from(anchors: &[TrustAnchor]) -> Vec<Managed> {
    let mut zones: Vec<Name> = anchors
        .iter()
        .filter(|a| a.managed)
        .map(|a| a.owner.to_lowercase())
        .collect();
    zones.sort();
    zones.dedup();
    zones
        .into_iter()
        .map(|zone| {
            let initial: Vec<TrustAnchor> = anchors
                .iter()
                .filter(|a| a.managed && a.owner == zone)
                .cloned()
                .collect();
            Managed {
                trust: AutoTrust::new(&zone, &initial),
                refresh_at: 0,
                unsaved: false,
            }
        })
        .collect()
}

impl Resolver {
    /// The zones whose anchors RFC 5011 keeps up to date: the edge loads
    /// each one's saved state with [`Resolver::restore_trust_state`].
    pub fn managed_anchor_zones(&self) -> Vec<Name> {
        self.managed
            .iter()
            .map(|m| m.trust.zone().clone())
            .collect()
    }

    /// Resumes a managed zone's state as the edge saved it. Whether it was
    /// taken (`false`: not ours, or unreadable: the configured anchors
    /// stand).
    pub fn restore_trust_state(&mut self, bytes: &[u8]) -> bool {
        let Some(trust) = AutoTrust::decode(bytes) else {
            return false;
        };
        let Some(m) = self
            .managed
            .iter_mut()
            .find(|m| m.trust.zone() == trust.zone())
        else {
            return false;
        };
        let zone = trust.zone().clone();
        m.refresh_at = trust.next_refresh();
        m.trust = trust;
        self.keys.remove(&zone);
        true
    }

    /// The managed anchors' keys, one line each: zone, key tag, state,
    /// since when (Unix seconds), and for a key waiting out its add
    /// hold-down, when it ends.
    pub fn trust_anchor_report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for m in &self.managed {
            let zone = m.trust.zone();
            if m.trust.keys().is_empty() {
                lines.push(format!("{zone} - initial DS, no key seen yet"));
            }
            for k in m.trust.keys() {
                let mut line = format!("{zone} {} {:?} since {}", k.tag, k.state, k.since / 1000);
                if let Some(end) = k.hold_down_end {
                    line.push_str(&format!(" until {}", end / 1000));
                }
                lines.push(line);
            }
        }
        lines
    }

    /// A managed zone whose state changed, and the state to save (the
    /// edge writes it to its store, so a restart resumes it).
    pub fn poll_trust_state(&mut self) -> Option<(Name, Vec<u8>)> {
        let m = self.managed.iter_mut().find(|m| m.unsaved)?;
        m.unsaved = false;
        Some((m.trust.zone().clone(), m.trust.encode()))
    }

    /// The anchors of `zone` now: its state machine's when managed, else
    /// the configured ones.
    pub(crate) fn anchors_of(&self, zone: &Name) -> Vec<TrustAnchor> {
        if let Some(m) = self.managed.iter().find(|m| m.trust.zone() == zone) {
            return m.trust.anchors();
        }
        self.config
            .validation
            .as_ref()
            .map(|v| {
                v.anchors
                    .iter()
                    .filter(|a| a.owner == *zone)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Gives a managed zone's secure DNSKEY set to its state machine.
    pub(crate) fn saw_anchor_keys(
        &mut self,
        zone: &Name,
        dnskeys: &RrSet,
        now: Millis,
        budget: &mut Budget,
    ) {
        let Some(m) = self.managed.iter_mut().find(|m| m.trust.zone() == zone) else {
            return;
        };
        if m.trust.update(dnskeys, now, budget) == Updated::Changed {
            m.unsaved = true;
        }
        m.refresh_at = m.trust.next_refresh();
    }

    /// The soonest a managed zone's keys are due to be fetched again.
    pub(crate) fn next_anchor_refresh(&self) -> Option<Millis> {
        self.managed.iter().map(|m| m.refresh_at).min()
    }

    /// Fetches again the DNSKEY sets that are due (RFC 5011 §2.3 active
    /// refresh): what was known of the zone's keys is forgotten, so the
    /// set comes from its servers and is judged with the anchors anew. Till
    /// it comes, the next try is at the retry time.
    pub(crate) fn refresh_anchors(&mut self, now: Millis) {
        let due: Vec<Name> = self
            .managed
            .iter_mut()
            .filter(|m| m.refresh_at <= now)
            .map(|m| {
                m.refresh_at = m.trust.retry_at(now);
                m.trust.zone().clone()
            })
            .collect();
        for zone in due {
            self.keys.remove(&zone);
            self.cache.remove(&zone, Rtype::DNSKEY);
            self.prefetch(&zone, Rtype::DNSKEY, now);
        }
    }
}
