//! The chain of trust: a zone's keys trusted from its anchor, or from its
//! parent's DS set, or found unsigned by the parent's proof that it has
//! none (RFC 4035 §5.2), and the zone unsigned data belongs to; each
//! verdict kept for its keys' TTL.

use bulwark_proto::rdata::Ds;
use bulwark_proto::{Name, Rdata, Rtype};

use crate::cache::{Data, NXDOMAIN};
use crate::engine::Resolver;
use crate::response::Security;
use crate::rrset::RrSet;
use crate::task::Task;
use crate::validate::{
    nsec, nsec3, trust_by_anchors, trust_by_ds, Bogus, Budget, DsDenial, ZoneKeys,
};
use crate::{ede, Millis};

use super::judge::{denial_signer, verified_proofs};
use super::{
    sig_time, Eval, Held, Judged, KeyEntry, Need, ZoneTrust, MAX_KEYS, MAX_WALK, NSEC_MISSING,
    RRSIGS_MISSING,
};

impl Resolver {
    /// The trust of the zone `name` is in, for data that came unsigned:
    /// the zone cut followed to it, or for a forwarded name the zone its
    /// DS question finds.
    pub(super) fn trust_at(
        &mut self,
        task: &Task,
        name: &Name,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<ZoneTrust> {
        if self.insecure_above(name, now) {
            return Ok(ZoneTrust::Insecure);
        }
        let forwarded = self.config.forward_for(name).is_some();
        let cut = self
            .cache
            .closest_ns(name, now)
            .map(|ns| ns.owner.to_lowercase());
        match cut {
            Some(cut) if !forwarded => self.zone_trust(task, &cut, now, budget, 0),
            _ => self.zone_trust(task, name, now, budget, 0),
        }
    }

    /// Whether a zone at or above `name`, below its trust anchor, is known
    /// insecure: everything below it is then insecure too.
    pub(super) fn insecure_above(&self, name: &Name, now: Millis) -> bool {
        let Some(anchor) = self
            .config
            .validation
            .as_ref()
            .and_then(|v| v.anchor_for(name))
        else {
            return true;
        };
        let mut at = Some(name.to_lowercase());
        while let Some(zone) = at {
            if !zone.is_below(anchor) {
                break;
            }
            let known = self.keys.get(&zone).filter(|e| e.expires > now);
            if known.is_some_and(|e| matches!(e.trust, ZoneTrust::Insecure)) {
                return true;
            }
            at = zone.parent();
        }
        false
    }

    /// The trust of `zone`'s keys: from its trust anchor, or from its
    /// parent's DS set (or the proof that it has none), kept once known.
    pub(super) fn zone_trust(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<ZoneTrust> {
        let zone = zone.to_lowercase();
        // Before anything known of the zone: an anchor set at run time
        // applies at once.
        if self.cache.negative_anchors().covers(&zone, now) {
            return Ok(ZoneTrust::Insecure);
        }
        if let Some(e) = self.keys.get(&zone).filter(|e| e.expires > now) {
            if matches!(e.trust, ZoneTrust::Bogus(_)) {
                self.bogus_zones.push(zone.clone());
            }
            return Ok(e.trust.clone());
        }
        if depth > MAX_WALK {
            return Ok(ZoneTrust::Bogus(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the chain of trust is too long",
            )));
        }
        let Some(v) = self.config.validation.as_ref() else {
            return Ok(ZoneTrust::Insecure);
        };
        let Some(anchor) = v.anchor_for(&zone).cloned() else {
            return Ok(ZoneTrust::Insecure);
        };
        let bogus_ttl = v.bogus_ttl;
        let (trust, ttl) = if zone == anchor {
            let found = self.trust_from_anchor(task, &zone, now, budget)?;
            if zone.is_root() && matches!(found.0, ZoneTrust::Secure(_)) {
                self.signal_key_tags(now);
            }
            found
        } else {
            if self.insecure_above(&zone, now) {
                return Ok(ZoneTrust::Insecure);
            }
            self.trust_from_parent(task, &zone, now, budget, depth)?
        };
        let ttl = match trust {
            ZoneTrust::Bogus(_) => ttl.min(bogus_ttl),
            _ => ttl,
        };
        if matches!(trust, ZoneTrust::Bogus(_)) {
            self.bogus_zones.push(zone.clone());
        }
        self.remember(zone, trust.clone(), ttl, now);
        Ok(trust)
    }

    pub(super) fn remember(&mut self, zone: Name, trust: ZoneTrust, ttl: u32, now: Millis) {
        if self.keys.len() >= MAX_KEYS {
            self.keys.retain(|_, e| e.expires > now);
            if self.keys.len() >= MAX_KEYS {
                self.keys.clear();
            }
        }
        let expires = now.saturating_add(u64::from(ttl).saturating_mul(1000));
        self.keys.insert(zone, KeyEntry { trust, expires });
    }

    /// A zone with a trust anchor: its DNSKEY set, signed by an anchored
    /// key or by one an anchored DS vouches for (RFC 4035 §5, §4.4).
    pub(super) fn trust_from_anchor(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<(ZoneTrust, u32)> {
        let Some((Held::Positive(dnskey), _)) = self.fetch(task, zone, Rtype::DNSKEY, now)? else {
            return Ok(bogus(
                ede::DNSKEY_MISSING,
                "no DNSKEY set for the trust anchor's zone",
            ));
        };
        let anchors = self.anchors_of(zone);
        let sigs = dnskey.rrsigs();
        Ok(
            match trust_by_anchors(zone, &dnskey, &sigs, &anchors, sig_time(now), budget) {
                Ok(keys) => {
                    // RFC 5011: a managed zone's secure key set is what its
                    // anchors are kept up to date from.
                    if matches!(keys, ZoneKeys::Secure { .. }) {
                        self.saw_anchor_keys(zone, &dnskey, now, budget);
                    }
                    from_keys(keys, dnskey.ttl)
                }
                Err(b) => (ZoneTrust::Bogus(b), 0),
            },
        )
    }

    /// A zone below its trust anchor: the parent's DS set for it, signed by
    /// the parent and vouching for a key that signs the zone's DNSKEY set;
    /// or the parent's proof that there is no DS (an unsigned delegation,
    /// or no zone cut at the name at all).
    pub(super) fn trust_from_parent(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<(ZoneTrust, u32)> {
        let Some((held, ttl)) = self.fetch(task, zone, Rtype::DS, now)? else {
            return Ok(bogus(
                ede::DNSSEC_BOGUS,
                "the zone's DS set could not be had",
            ));
        };
        let (soa, extra) = match held {
            Held::Positive(ds_set) => {
                return self.trust_by_ds_set(task, zone, &ds_set, now, budget, depth)
            }
            Held::NoData(soa, extra) | Held::NxDomain(soa, extra) => (soa, extra),
        };
        let Some(prover) = denial_signer(soa.as_ref(), &extra) else {
            let parent = zone.parent().unwrap_or_else(Name::root);
            let trust = self.zone_trust(task, &parent, now, budget, depth.saturating_add(1))?;
            return Ok(match Judged::unsigned_in(trust, NSEC_MISSING) {
                j if j.security == Security::Insecure => (ZoneTrust::Insecure, ttl),
                j => (ZoneTrust::Bogus(j.why.unwrap_or(NSEC_MISSING)), 0),
            });
        };
        if !zone.is_below(&prover) {
            return Ok(bogus(
                ede::DNSSEC_BOGUS,
                "the DS denial did not come from the parent zone",
            ));
        }
        let keys = match self.zone_trust(task, &prover, now, budget, depth.saturating_add(1))? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok((ZoneTrust::Insecure, ttl)),
            ZoneTrust::Bogus(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let proof = match verified_proofs(
            &mut self.sig_memo,
            soa.as_ref(),
            &extra,
            &prover,
            &keys,
            now,
            budget,
        ) {
            Ok(p) => p,
            Err(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let denial = if !proof.nsec.is_empty() {
            nsec::ds_denial(zone, &proof.nsec)
        } else if !proof.nsec3.is_empty() {
            nsec3::ds_denial(zone, &prover, &proof.nsec3, budget)
        } else {
            Err(NSEC_MISSING)
        };
        let ttl = ttl.min(proof.ttl);
        Ok(match denial {
            Ok(DsDenial::Unsigned) => (ZoneTrust::Insecure, ttl),
            // No cut at the name: it is in the zone that proved so.
            Ok(DsDenial::NoCut) => (ZoneTrust::Secure(keys), ttl),
            Err(b) => (ZoneTrust::Bogus(b), 0),
        })
    }

    /// A DS set for `zone`: signed by the parent (whose keys must be
    /// trusted), then matched against the zone's DNSKEY set.
    pub(super) fn trust_by_ds_set(
        &mut self,
        task: &Task,
        zone: &Name,
        ds_set: &RrSet,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<(ZoneTrust, u32)> {
        let sigs = ds_set.rrsigs();
        let signer = sigs
            .iter()
            .map(|s| s.signer.to_lowercase())
            .find(|s| zone.is_below(s));
        let parent = signer
            .clone()
            .or_else(|| zone.parent())
            .unwrap_or_else(Name::root);
        let keys = match self.zone_trust(task, &parent, now, budget, depth.saturating_add(1))? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok((ZoneTrust::Insecure, ds_set.ttl)),
            ZoneTrust::Bogus(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let Some(signer) = signer else {
            return Ok((ZoneTrust::Bogus(RRSIGS_MISSING), 0));
        };
        let mine: Vec<_> = sigs.into_iter().filter(|s| s.signer == signer).collect();
        if let Err(b) = self
            .sig_memo
            .verify(ds_set, &mine, &signer, &keys, now, budget)
        {
            return Ok((ZoneTrust::Bogus(b), 0));
        }
        let ds: Vec<Ds> = ds_set
            .typed()
            .filter_map(|r| match r {
                Rdata::Ds(d) => Some(d),
                _ => None,
            })
            .collect();
        let Some((Held::Positive(dnskey), _)) = self.fetch(task, zone, Rtype::DNSKEY, now)? else {
            return Ok(bogus(
                ede::DNSKEY_MISSING,
                "the zone's DNSKEY set could not be had",
            ));
        };
        let sigs = dnskey.rrsigs();
        Ok(
            match trust_by_ds(zone, &dnskey, &sigs, &ds, sig_time(now), budget) {
                Ok(keys) => from_keys(keys, dnskey.ttl.min(ds_set.ttl)),
                Err(b) => (ZoneTrust::Bogus(b), 0),
            },
        )
    }

    /// What the cache holds for `name`/`rtype`, whatever its validation
    /// state (the chain checks it itself): `Err` to have it resolved
    /// first, `None` when it was resolved and is still not held.
    pub(super) fn fetch(
        &self,
        task: &Task,
        name: &Name,
        rtype: Rtype,
        now: Millis,
    ) -> Eval<Option<(Held, u32)>> {
        for key in [rtype, NXDOMAIN] {
            let Some(found) = self.cache.get(name, key, now, false) else {
                continue;
            };
            let ttl = found.ttl_left(now);
            let held = match &found.entry.data {
                Data::Positive(set) => set.unpack().map(Held::Positive),
                Data::NoData(n) => {
                    let (soa, extra) = n.unpack();
                    Some(Held::NoData(soa, extra))
                }
                Data::NxDomain(n) => {
                    let (soa, extra) = n.unpack();
                    Some(Held::NxDomain(soa, extra))
                }
            };
            if let Some(held) = held {
                return Ok(Some((held, ttl)));
            }
        }
        let name = name.to_lowercase();
        if task.fetched.iter().any(|(n, t)| *n == name && *t == rtype) {
            return Ok(None);
        }
        Err(Box::new(Need { name, rtype }))
    }
}

/// A zone's keys as [`crate::validate::zone_keys`] judged them.
pub(super) fn from_keys(keys: ZoneKeys, ttl: u32) -> (ZoneTrust, u32) {
    match keys {
        ZoneKeys::Secure { keys, ttl: secure } => (ZoneTrust::Secure(keys.into()), secure.min(ttl)),
        ZoneKeys::Insecure { .. } => (ZoneTrust::Insecure, ttl),
    }
}

pub(super) fn bogus(code: u16, why: &'static str) -> (ZoneTrust, u32) {
    (ZoneTrust::Bogus(Bogus::new(code, why)), 0)
}
