//! Whether an RRset's signatures hold with its zone's keys (RFC 4035
//! §5.3): the RRSIG's fields against the RRset and the time, then the
//! cryptography, with each key whose tag and algorithm match, within the
//! validation's [`Budget`].

use bulwark_dnssec::rrsig::CanonicalRrset;
use bulwark_dnssec::{key_tag, verify_rrsig};
use bulwark_proto::rdata::{Dnskey, Rrsig};
use bulwark_proto::{Name, Rdata};

use super::{serial_le, Bogus, Budget, SigTime, PROTOCOL, REVOKED, ZONE_KEY};
use crate::ede;
use crate::rrset::RrSet;

/// An RRset found secure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The key that signed it.
    pub key_tag: u16,
    /// The longest it may be kept (RFC 4035 §5.3.3): its TTL, no more
    /// than the signature's original TTL, and not past its expiration.
    pub ttl: u32,
    /// It was synthesised from a wildcard (RFC 4035 §5.3.4): the answer
    /// also needs the proof that the name itself does not exist.
    pub wildcard: bool,
}

/// Checks `rrsigs` over `set` with `keys`, the DNSKEY set of `zone` (already
/// trusted), at `now`. The first signature that holds makes the RRset
/// secure; with none, the error says why, in the order a zone operator
/// would look: no signature, none by this zone's keys, none in its time,
/// then broken ones.
pub fn verify_rrset(
    set: &RrSet,
    rrsigs: &[Rrsig],
    zone: &Name,
    keys: &[Dnskey],
    now: SigTime,
    budget: &mut Budget,
) -> Result<Verified, Bogus> {
    let limits = budget.limits();
    // RFC 4034 §3.1.3: a leading `*` label is not counted; an owner that
    // is a wildcard itself (asked for by name) is no expansion.
    let owner_labels = set
        .owner
        .label_count()
        .saturating_sub(usize::from(set.owner.labels().next() == Some(&b"*"[..])));
    let mut failure = Bogus::new(ede::RRSIGS_MISSING, "no signature covers the records");
    let mut tried = 0u32;
    for sig in rrsigs.iter().filter(|s| s.type_covered == set.rtype) {
        // RFC 4035 §5.3.1: the signer is the zone whose keys we hold, the
        // owner is in it, and the label count fits the owner.
        if sig.signer != *zone || !set.owner.ends_with(zone) {
            failure = worse(
                failure,
                Bogus::new(ede::DNSKEY_MISSING, "signed by another zone"),
            );
            continue;
        }
        if usize::from(sig.labels) > owner_labels {
            failure = worse(
                failure,
                Bogus::new(
                    ede::DNSSEC_BOGUS,
                    "a signature's label count exceeds its owner's",
                ),
            );
            continue;
        }
        if !serial_le(now, sig.expiration) {
            failure = worse(
                failure,
                Bogus::new(ede::SIGNATURE_EXPIRED, "the signatures have expired"),
            );
            continue;
        }
        if !serial_le(sig.inception, now) {
            failure = worse(
                failure,
                Bogus::new(
                    ede::SIGNATURE_NOT_YET_VALID,
                    "the signatures are not valid yet",
                ),
            );
            continue;
        }
        if tried >= limits.signatures_per_rrset {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "too many signatures to try over one RRset",
            ));
        }
        tried = tried.saturating_add(1);
        let wildcard = usize::from(sig.labels) < owner_labels;
        let Some(signed) = canonical(set, sig, wildcard) else {
            failure = worse(
                failure,
                Bogus::new(ede::DNSSEC_BOGUS, "records that cannot be read"),
            );
            continue;
        };
        match try_keys(&signed, sig, keys, limits.keys_per_signature, budget)? {
            Ok(tag) => {
                let left = sig.expiration.wrapping_sub(now);
                return Ok(Verified {
                    key_tag: tag,
                    ttl: set.ttl.min(sig.original_ttl).min(left),
                    wildcard,
                });
            }
            Err(why) => failure = worse(failure, why),
        }
    }
    Err(failure)
}

/// The key among `keys` that makes `sig` hold, trying those with its tag
/// and algorithm, at most `max_keys` of them. The outer error is the budget
/// spent; the inner one why no key would do.
fn try_keys(
    signed: &CanonicalRrset,
    sig: &Rrsig,
    keys: &[Dnskey],
    max_keys: u32,
    budget: &mut Budget,
) -> Result<Result<u16, Bogus>, Bogus> {
    let mut outcome = Err(Bogus::new(
        ede::DNSKEY_MISSING,
        "no key of the zone made the signature",
    ));
    let mut tried = 0u32;
    for key in keys.iter().filter(|k| k.algorithm == sig.algorithm) {
        if key_tag(&Rdata::Dnskey(key.clone()).to_wire()) != sig.key_tag {
            continue;
        }
        // RFC 4034 §2.1.1: only zone keys sign zone data; RFC 5011 §3: a
        // revoked key signs nothing but its own revocation.
        if key.flags & ZONE_KEY == 0 || key.protocol != PROTOCOL {
            outcome = Err(Bogus::new(
                ede::NO_ZONE_KEY_BIT_SET,
                "the signing key is not a zone key",
            ));
            continue;
        }
        if key.flags & REVOKED != 0 {
            continue;
        }
        if !budget.can_verify(key) {
            outcome = Err(Bogus::new(
                ede::UNSUPPORTED_DNSKEY_ALGORITHM,
                "the zone signs with an algorithm not supported",
            ));
            continue;
        }
        if tried >= max_keys {
            return Err(Bogus::new(ede::DNSSEC_BOGUS, "too many keys share one tag"));
        }
        tried = tried.saturating_add(1);
        budget.take_verification()?;
        match verify_rrsig(signed, sig, key) {
            Ok(()) => return Ok(Ok(sig.key_tag)),
            Err(_) => {
                outcome = Err(Bogus::new(ede::DNSSEC_BOGUS, "a signature does not verify"));
            }
        }
    }
    Ok(outcome)
}

/// The RRset as signed: under its original TTL, and for a wildcard
/// expansion under the wildcard's own name (RFC 4035 §5.3.2).
fn canonical(set: &RrSet, sig: &Rrsig, wildcard: bool) -> Option<CanonicalRrset> {
    let owner = if wildcard {
        let mut suffix = set.owner.to_lowercase();
        while suffix.label_count() > usize::from(sig.labels) {
            suffix = suffix.parent()?;
        }
        let mut wire = vec![1u8, b'*'];
        wire.extend_from_slice(suffix.as_wire());
        Name::from_wire(&wire).ok()?
    } else {
        set.owner.clone()
    };
    let rdatas: Vec<Rdata> = set.typed().collect();
    if rdatas.len() != set.rdata.len() {
        return None;
    }
    Some(CanonicalRrset::new(
        &owner,
        set.class,
        set.rtype,
        sig.original_ttl,
        rdatas.iter(),
    ))
}

/// Of two reasons, the one that says more: a signature that fails outranks
/// one merely missing, as Unbound reports it.
fn worse(a: Bogus, b: Bogus) -> Bogus {
    let rank = |x: &Bogus| match x.ede {
        ede::RRSIGS_MISSING => 0,
        ede::DNSKEY_MISSING => 1,
        ede::SIGNATURE_EXPIRED | ede::SIGNATURE_NOT_YET_VALID => 2,
        ede::UNSUPPORTED_DNSKEY_ALGORITHM | ede::NO_ZONE_KEY_BIT_SET => 3,
        _ => 4,
    };
    if rank(&b) > rank(&a) {
        b
    } else {
        a
    }
}
