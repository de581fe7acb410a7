//! Signatures already checked: an RRset whose signatures held with a
//! zone's keys is not checked again while the verdict lasts. A denial's SOA
//! and NSEC3 records come back with answer after answer for names of one
//! zone (each NXDOMAIN carries the same few), a zone's DS set with every
//! chain through it: without this, each costs its signature checks every
//! time (Unbound keeps validated RRsets in its cache for the same reason).
//!
//! An entry is keyed by a 128-bit fingerprint, under per-process random
//! seeds, of everything the verdict depends on: the RRset (owner, type,
//! class, records), its signatures, the zone, and the zone's keys. A
//! forger cannot aim at a fingerprint without the seeds.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use bulwark_proto::rdata::{Dnskey, Rrsig};
use bulwark_proto::Name;

use crate::rrset::RrSet;
use crate::validate::{verify_rrset, Bogus, Budget, Verified};
use crate::Millis;

use super::sig_time;

/// Verdicts kept at most: past it, all go (each is a few dozen octets).
const MAX_ENTRIES: usize = 100_000;

#[derive(Default)]
pub(crate) struct SignatureMemo {
    held: HashMap<u128, (Verified, Millis)>,
    seeds: (foldhash::fast::RandomState, foldhash::fast::RandomState),
}

impl std::fmt::Debug for SignatureMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureMemo")
            .field("entries", &self.held.len())
            .finish_non_exhaustive()
    }
}

impl SignatureMemo {
    /// [`verify_rrset`], unless the same RRset, signatures, zone and keys
    /// were found secure before and the verdict still holds at `now`.
    pub(crate) fn verify(
        &mut self,
        set: &RrSet,
        sigs: &[Rrsig],
        zone: &Name,
        keys: &[Dnskey],
        now: Millis,
        budget: &mut Budget,
    ) -> Result<Verified, Bogus> {
        let print = self.fingerprint(set, zone, keys);
        if let Some((v, until)) = self.held.get(&print) {
            if *until > now {
                // What is left of the verdict's time, not what it was.
                let left = u32::try_from(until.saturating_sub(now) / 1000).unwrap_or(u32::MAX);
                return Ok(Verified {
                    ttl: v.ttl.min(left),
                    ..*v
                });
            }
        }
        let v = verify_rrset(set, sigs, zone, keys, sig_time(now), budget)?;
        if self.held.len() >= MAX_ENTRIES {
            self.held.retain(|_, (_, until)| *until > now);
            if self.held.len() >= MAX_ENTRIES / 2 {
                self.held.clear();
            }
        }
        let until = now.saturating_add(u64::from(v.ttl).saturating_mul(1000));
        self.held.insert(print, (v, until));
        Ok(v)
    }

    /// Forgets every verdict (a flush of the whole cache: the next
    /// answers cost what a fresh resolver's do).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }

    /// Two 64-bit hashes under independent seeds of what the verdict
    /// depends on (`sigs` are `set.sigs` parsed: the raw ones are hashed).
    fn fingerprint(&self, set: &RrSet, zone: &Name, keys: &[Dnskey]) -> u128 {
        let one = |seed: &foldhash::fast::RandomState| {
            let mut h = seed.build_hasher();
            h.write(set.owner.to_lowercase().as_wire());
            h.write_u16(set.rtype.0);
            h.write_u16(set.class.0);
            for part in [&set.rdata, &set.sigs] {
                h.write_usize(part.len());
                for d in part {
                    h.write_usize(d.len());
                    h.write(d);
                }
            }
            h.write(zone.to_lowercase().as_wire());
            h.write_usize(keys.len());
            for k in keys {
                h.write_u16(k.flags);
                h.write_u8(k.protocol);
                h.write_u8(k.algorithm);
                h.write_usize(k.public_key.len());
                h.write(&k.public_key);
            }
            h.finish()
        };
        (u128::from(one(&self.seeds.0)) << 64) | u128::from(one(&self.seeds.1))
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing
    )]
    use super::*;
    use bulwark_dnssec::rrsig::CanonicalRrset;
    use bulwark_dnssec::{
        Algorithm, KeyRole, KeyTiming, RrsetSigner, SignatureValidity, SigningKey, ZoneKey,
    };
    use bulwark_proto::{Class, Rdata, Rtype};

    use crate::validate::WorkLimits;

    /// One Ed25519 key of `example.`, and `www.example. A` signed by it
    /// from second 1,000 to 100,000 (the set's TTL 300).
    fn signed() -> (RrSet, Dnskey) {
        let key = ZoneKey::new(
            KeyRole::Zsk,
            SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
            KeyTiming::starting_at(0),
        );
        let zone: Name = "example.".parse().unwrap();
        let mut set = RrSet::new("www.example.".parse().unwrap(), Rtype::A, 300);
        set.push(vec![192, 0, 2, 1], 300);
        let rdatas: Vec<Rdata> = set.typed().collect();
        let canonical = CanonicalRrset::new(&set.owner, Class::IN, set.rtype, 300, rdatas.iter());
        let validity = SignatureValidity {
            inception: 1_000,
            expiration: 100_000,
        };
        let f = RrsetSigner::new(&zone, validity)
            .sign(&canonical, &key)
            .unwrap();
        let sig = Rrsig {
            type_covered: set.rtype,
            algorithm: f.algorithm,
            labels: f.labels,
            original_ttl: 300,
            expiration: f.expiration,
            inception: f.inception,
            key_tag: f.key_tag,
            signer: zone,
            signature: f.signature,
        };
        set.push_sig(Rdata::Rrsig(sig).to_wire());
        (set, key.dnskey().clone())
    }

    #[test]
    fn a_set_found_secure_is_not_checked_again_until_its_verdict_ends() {
        let (set, key) = signed();
        let zone: Name = "example.".parse().unwrap();
        let mut memo = SignatureMemo::default();
        let mut budget = Budget::new(WorkLimits::default());
        let at = 2_000_000; // Unix ms: second 2,000.
        let first = memo
            .verify(
                &set,
                &set.rrsigs(),
                &zone,
                std::slice::from_ref(&key),
                at,
                &mut budget,
            )
            .unwrap();
        assert_eq!(budget.used(), 1);
        let again = memo
            .verify(
                &set,
                &set.rrsigs(),
                &zone,
                std::slice::from_ref(&key),
                at + 100_000,
                &mut budget,
            )
            .unwrap();
        assert_eq!(budget.used(), 1, "the second time costs no check");
        assert_eq!(again.ttl, first.ttl - 100, "and the time left shrinks");
        // Other keys, or records changed: checked (and here refused).
        let mut other = set.clone();
        other.rdata[0] = vec![192, 0, 2, 9];
        assert!(memo
            .verify(
                &other,
                &other.rrsigs(),
                &zone,
                std::slice::from_ref(&key),
                at,
                &mut budget
            )
            .is_err());
        assert_eq!(budget.used(), 2);
        // Past the verdict's end: checked again.
        memo.verify(
            &set,
            &set.rrsigs(),
            &zone,
            &[key],
            at + 301_000,
            &mut budget,
        )
        .unwrap();
        assert_eq!(budget.used(), 3);
    }
}
