//! Keeping signatures that are still good: a signing pass re-signs only the
//! RRsets that changed, whose signatures are due for refresh, or that lack a
//! signature from a key that should sign them. The cache holds what the
//! last pass made, compactly, keyed by owner and type.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use bulwark_proto::Name;

use crate::plan::SignJob;
use crate::rrsig::CanonicalRrset;
use crate::signature::{Signature, SignatureFields};

#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedRrset {
    /// A hash of the canonical RRset the signatures were made over.
    fingerprint: u64,
    ttl: u32,
    signatures: Vec<SignatureFields>,
}

/// The signatures of the last pass, by (owner, type covered).
#[derive(Clone, Debug, Default)]
pub struct SignatureCache {
    rrsets: HashMap<(Name, u16), CachedRrset>,
}

pub(crate) fn fingerprint(rrset: &CanonicalRrset) -> u64 {
    let mut hasher = DefaultHasher::new();
    rrset.hash(&mut hasher);
    hasher.finish()
}

/// RFC 4034 §3.1.5 serial arithmetic: whether `a` is at or after `b`.
fn not_before(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) < (1 << 31)
}

impl SignatureCache {
    /// The cache of a finished pass: its jobs and the signatures it made
    /// (or kept), in any order.
    pub fn from_pass(jobs: &[SignJob], signatures: &[Signature]) -> SignatureCache {
        let mut by_first_record: HashMap<usize, Vec<SignatureFields>> = HashMap::new();
        for signature in signatures {
            by_first_record
                .entry(signature.covers)
                .or_default()
                .push(signature.fields.clone());
        }
        let mut rrsets = HashMap::with_capacity(jobs.len());
        for job in jobs {
            let key = (job.rrset.owner.clone(), job.rrset.rtype.0);
            if let Some(signatures) = by_first_record.remove(&job.first_record) {
                rrsets.insert(
                    key,
                    CachedRrset {
                        fingerprint: fingerprint(&job.rrset),
                        ttl: job.rrset.ttl,
                        signatures,
                    },
                );
            }
        }
        SignatureCache { rrsets }
    }

    pub fn len(&self) -> usize {
        self.rrsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rrsets.is_empty()
    }

    /// A kept signature of `rrset` by key (`key_tag`, `algorithm`) when the
    /// RRset is unchanged and the signature is valid now and stays valid for
    /// at least `refresh` seconds.
    pub(crate) fn reusable(
        &self,
        rrset: &CanonicalRrset,
        rrset_fingerprint: u64,
        key_tag: u16,
        algorithm: u8,
        now: u32,
        refresh: u32,
    ) -> Option<SignatureFields> {
        let cached = self.rrsets.get(&(rrset.owner.clone(), rrset.rtype.0))?;
        if cached.fingerprint != rrset_fingerprint || cached.ttl != rrset.ttl {
            return None;
        }
        let sig = cached
            .signatures
            .iter()
            .find(|s| s.key_tag == key_tag && s.algorithm == algorithm)?;
        let fresh_until = now.wrapping_add(refresh);
        if !not_before(now, sig.inception) || !not_before(sig.expiration, fresh_until) {
            return None;
        }
        Some(sig.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_time_comparison_wraps() {
        assert!(not_before(5, 5));
        assert!(not_before(6, 5));
        assert!(!not_before(4, 5));
        assert!(not_before(2, u32::MAX - 2));
        assert!(!not_before(u32::MAX - 2, 2));
    }
}
