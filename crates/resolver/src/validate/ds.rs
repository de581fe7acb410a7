//! Which of a zone's keys its parent vouches for (RFC 4035 §5.2): a DS
//! record whose key tag, algorithm and digest match a DNSKEY.
//!
//! - A DS set none of whose records the resolver can use (algorithms or
//!   digests it does not implement) makes the zone insecure, not bogus
//!   (RFC 4035 §5.2, RFC 6840 §5.2).
//! - Only DS records of the strongest digest present are used (RFC 4509
//!   §3: a SHA-1 DS is ignored beside a SHA-256 one, so a forged SHA-1
//!   record cannot downgrade the zone).

use bulwark_crypto::{can_verify, ds_digest, DigestType};
use bulwark_dnssec::key_tag;
use bulwark_proto::rdata::{Dnskey, Ds};
use bulwark_proto::{Name, Rdata};

use super::{Bogus, Budget, PROTOCOL, REVOKED, ZONE_KEY};
use crate::ede;

/// What a DS set says of a DNSKEY set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DsVerdict {
    /// These keys (indexes into the DNSKEY set) are vouched for: the DNSKEY
    /// set is secure once one of them has signed it.
    Vouched(Vec<usize>),
    /// Nothing in the DS set can be used: the zone is treated as unsigned,
    /// with this Extended DNS Error code to say why where it is reported.
    Insecure {
        ede: u16,
    },
    Bogus(Bogus),
}

/// Matches `ds_set`, the DS records for `owner`, against `keys`, its
/// DNSKEY records. Digest checks are cheap beside signature checks but are
/// bounded all the same: at most the budget's keys-per-signature bound of
/// keys per DS record.
pub fn keys_vouched_for(
    owner: &Name,
    ds_set: &[Ds],
    keys: &[Dnskey],
    budget: &Budget,
) -> DsVerdict {
    // A private algorithm number (PRIVATEOID) is usable only when allowed
    // and a key it names says, by its object identifier, that it is one
    // implemented here; otherwise the DS is of an unknown algorithm.
    let usable_algorithm = |ds: &&Ds| {
        can_verify(ds.algorithm)
            || (budget.experimental()
                && keys.iter().any(|k| {
                    k.algorithm == ds.algorithm
                        && budget.can_verify(k)
                        && key_tag(&Rdata::Dnskey(k.clone()).to_wire()) == ds.key_tag
                }))
    };
    if !ds_set.iter().any(|ds| usable_algorithm(&ds)) {
        return DsVerdict::Insecure {
            ede: ede::UNSUPPORTED_DNSKEY_ALGORITHM,
        };
    }
    let Some(digest) = ds_set
        .iter()
        .filter(usable_algorithm)
        .filter_map(|ds| DigestType::from_number(ds.digest_type).ok())
        .max_by_key(|d| strength(*d))
    else {
        return DsVerdict::Insecure {
            ede: ede::UNSUPPORTED_DS_DIGEST_TYPE,
        };
    };
    let owner_wire = owner.to_lowercase();
    let max_keys = usize::try_from(budget.limits().keys_per_signature).unwrap_or(usize::MAX);
    let mut vouched: Vec<usize> = Vec::new();
    let mut not_zone_key = false;
    for ds in ds_set
        .iter()
        .filter(usable_algorithm)
        .filter(|ds| ds.digest_type == digest.number())
    {
        let candidates = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.algorithm == ds.algorithm)
            .filter(|(_, k)| key_tag(&Rdata::Dnskey((*k).clone()).to_wire()) == ds.key_tag)
            .take(max_keys);
        for (i, key) in candidates {
            let rdata = Rdata::Dnskey(key.clone()).to_wire();
            if ds_digest(digest, owner_wire.as_wire(), &rdata) != ds.digest {
                continue;
            }
            if key.flags & ZONE_KEY == 0 || key.protocol != PROTOCOL {
                not_zone_key = true;
                continue;
            }
            if key.flags & REVOKED == 0 && !vouched.contains(&i) {
                vouched.push(i);
            }
        }
    }
    if !vouched.is_empty() {
        return DsVerdict::Vouched(vouched);
    }
    DsVerdict::Bogus(if not_zone_key {
        Bogus::new(
            ede::NO_ZONE_KEY_BIT_SET,
            "the key the DS names is not a zone key",
        )
    } else {
        Bogus::new(ede::DNSKEY_MISSING, "no key of the zone matches its DS set")
    })
}

fn strength(d: DigestType) -> u8 {
    match d {
        DigestType::Sha1 => 1,
        DigestType::Sha256 => 2,
        DigestType::Sha384 => 3,
        _ => 0,
    }
}
