//! A zone's keys, trusted (RFC 4035 §5.2): the DNSKEY set is secure when
//! one of its keys that the parent's DS set (or a trust anchor) vouches for
//! has signed it. The keys that may then sign the zone's data are all the
//! zone keys of that set.

use bulwark_proto::rdata::{Dnskey, Ds, Rrsig};
use bulwark_proto::{Name, Rdata, Rtype};

use super::anchors::{AnchorData, TrustAnchor};
use super::ds::{keys_vouched_for, DsVerdict};
use super::rrset::verify_rrset;
use super::{Bogus, Budget, SigTime};
use crate::ede;
use crate::rrset::RrSet;

/// What is known of a zone's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZoneKeys {
    /// The DNSKEY set, secure, and how long it may be kept.
    Secure { keys: Vec<Dnskey>, ttl: u32 },
    /// Nothing the parent or the anchors say can be used (unknown
    /// algorithms or digests): the zone is treated as unsigned, with this
    /// Extended DNS Error code where it is reported.
    Insecure { ede: u16 },
}

/// Checks `dnskeys` (the zone's DNSKEY RRset as received) and `rrsigs` (its
/// signatures) against `ds_set`, the parent's DS records for `zone`.
pub fn trust_by_ds(
    zone: &Name,
    dnskeys: &RrSet,
    rrsigs: &[Rrsig],
    ds_set: &[Ds],
    now: SigTime,
    budget: &mut Budget,
) -> Result<ZoneKeys, Bogus> {
    let keys = keys_of(dnskeys)?;
    let vouched = match keys_vouched_for(zone, ds_set, &keys, budget) {
        DsVerdict::Vouched(v) => v,
        DsVerdict::Insecure { ede } => return Ok(ZoneKeys::Insecure { ede }),
        DsVerdict::Bogus(b) => return Err(b),
    };
    let signers: Vec<Dnskey> = vouched
        .iter()
        .filter_map(|i| keys.get(*i).cloned())
        .collect();
    let verified = verify_rrset(dnskeys, rrsigs, zone, &signers, now, budget)?;
    Ok(ZoneKeys::Secure {
        keys,
        ttl: verified.ttl,
    })
}

/// Checks `dnskeys` against the trust anchors for `zone`: DS anchors as a
/// parent's DS set, DNSKEY anchors as keys that must sign the set
/// themselves (RFC 4035 §4.4).
pub fn trust_by_anchors(
    zone: &Name,
    dnskeys: &RrSet,
    rrsigs: &[Rrsig],
    anchors: &[TrustAnchor],
    now: SigTime,
    budget: &mut Budget,
) -> Result<ZoneKeys, Bogus> {
    let mine: Vec<&TrustAnchor> = anchors.iter().filter(|a| a.owner == *zone).collect();
    let ds_set: Vec<Ds> = mine
        .iter()
        .filter_map(|a| match &a.data {
            AnchorData::Ds(ds) => Some(ds.clone()),
            AnchorData::Dnskey(_) => None,
        })
        .collect();
    let anchor_keys: Vec<Dnskey> = mine
        .iter()
        .filter_map(|a| match &a.data {
            AnchorData::Dnskey(k) => Some(k.clone()),
            AnchorData::Ds(_) => None,
        })
        .collect();
    if !anchor_keys.is_empty() {
        let keys = keys_of(dnskeys)?;
        // The anchored key must be in the set it signs.
        let signers: Vec<Dnskey> = anchor_keys
            .into_iter()
            .filter(|k| keys.contains(k))
            .collect();
        if let Ok(v) = verify_rrset(dnskeys, rrsigs, zone, &signers, now, budget) {
            return Ok(ZoneKeys::Secure { keys, ttl: v.ttl });
        }
        if ds_set.is_empty() {
            return Err(Bogus::new(
                ede::DNSKEY_MISSING,
                "no trust anchor key signs the zone's keys",
            ));
        }
    }
    if ds_set.is_empty() {
        return Err(Bogus::new(
            ede::DNSKEY_MISSING,
            "no trust anchor for the zone",
        ));
    }
    trust_by_ds(zone, dnskeys, rrsigs, &ds_set, now, budget)
}

/// The DNSKEY records of a DNSKEY RRset; one that cannot be read makes the
/// set bogus.
fn keys_of(set: &RrSet) -> Result<Vec<Dnskey>, Bogus> {
    if set.rtype != Rtype::DNSKEY || set.rdata.is_empty() {
        return Err(Bogus::new(ede::DNSKEY_MISSING, "no DNSKEY records"));
    }
    let keys: Vec<Dnskey> = set
        .typed()
        .filter_map(|r| match r {
            Rdata::Dnskey(k) => Some(k),
            _ => None,
        })
        .collect();
    if keys.len() != set.rdata.len() {
        return Err(Bogus::new(
            ede::DNSSEC_BOGUS,
            "a DNSKEY record that cannot be read",
        ));
    }
    Ok(keys)
}
