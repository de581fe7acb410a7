//! What NSEC3 records prove (RFC 5155 §8): the same denials as NSEC, over
//! hashed names, with the closest-encloser proof and opt-out.
//!
//! Two costs are bounded, both attacks on validators: a response whose
//! NSEC3 records ask for more hash iterations than RFC 9276's advice allows
//! is treated as insecure, not computed (as Unbound does past 150), and the
//! hashes one validation computes draw on its [`Budget`] (CVE-2023-50868:
//! a long name under an NSEC3 zone made validators hash every ancestor).

use bulwark_crypto::nsec3_hash;
use bulwark_proto::encoding::base32hex_decode;
use bulwark_proto::rdata::Nsec3;
use bulwark_proto::{Name, Rtype};

use super::{Bogus, Budget, DsDenial};
use crate::ede;

/// The most iterations honoured (RFC 9276 §3.2; Unbound's limit).
pub const MAX_ITERATIONS: u16 = 150;

/// SHA-1, the only NSEC3 hash there is (RFC 5155 §11).
const SHA1: u8 = 1;
/// The opt-out flag (RFC 5155 §3.1.2.1).
const OPT_OUT: u8 = 0x01;

/// One NSEC3 record: its owner's hash (the first label, decoded), its zone
/// and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nsec3Record {
    pub hash: Vec<u8>,
    pub zone: Name,
    pub nsec3: Nsec3,
}

impl Nsec3Record {
    /// `None` when the owner's first label is not a base32hex hash.
    pub fn new(owner: &Name, nsec3: Nsec3) -> Option<Nsec3Record> {
        let label = owner.labels().next()?;
        let hash = base32hex_decode(std::str::from_utf8(label).ok()?)?;
        Some(Nsec3Record {
            hash,
            zone: owner.parent()?.to_lowercase(),
            nsec3,
        })
    }

    pub(crate) fn matches(&self, h: &[u8]) -> bool {
        self.hash == h
    }

    pub(crate) fn covers(&self, h: &[u8]) -> bool {
        let (owner, next) = (self.hash.as_slice(), self.nsec3.next_hashed.as_slice());
        if owner < next {
            owner < h && h < next
        } else {
            h > owner || h < next
        }
    }

    pub(crate) fn opt_out(&self) -> bool {
        self.nsec3.flags & OPT_OUT != 0
    }
}

/// What the records prove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nsec3Proof {
    /// The denial holds.
    Proven,
    /// The answer cannot be called secure, nor bogus: an opt-out span
    /// covers the name (an unsigned delegation may be there), or the zone
    /// hashes more than [`MAX_ITERATIONS`] times.
    Insecure,
}

const MISSING: Bogus = Bogus::new(ede::NSEC_MISSING, "the denial is not proven");

/// Hashes names for one set of records, within the budget.
struct Hasher<'a> {
    records: Vec<&'a Nsec3Record>,
    budget: &'a mut Budget,
}

impl<'a> Hasher<'a> {
    /// The records of `zone` that can be used, or why there are none to
    /// use: `Ok(None)` means insecure (too many iterations).
    fn new(
        zone: &Name,
        records: &'a [Nsec3Record],
        budget: &'a mut Budget,
    ) -> Result<Option<Hasher<'a>>, Bogus> {
        let zone = zone.to_lowercase();
        let usable: Vec<&Nsec3Record> = records
            .iter()
            .filter(|r| r.zone == zone && r.nsec3.hash_algorithm == SHA1)
            .collect();
        if usable.is_empty() {
            return Err(MISSING);
        }
        if usable.iter().any(|r| r.nsec3.iterations > MAX_ITERATIONS) {
            return Ok(None);
        }
        Ok(Some(Hasher {
            records: usable,
            budget,
        }))
    }

    /// The hash of `name` under the first record's parameters (a zone has
    /// one set: RFC 5155 §7.1).
    fn hash(&mut self, name: &Name) -> Result<Vec<u8>, Bogus> {
        let first = self.records.first().ok_or(MISSING)?;
        self.budget.take_hash()?;
        let p = &first.nsec3;
        Ok(nsec3_hash(name.to_lowercase().as_wire(), &p.salt, p.iterations).to_vec())
    }

    fn matching(&mut self, name: &Name) -> Result<Option<&'a Nsec3Record>, Bogus> {
        let h = self.hash(name)?;
        Ok(self.records.iter().copied().find(|r| r.matches(&h)))
    }

    fn covering(&mut self, name: &Name) -> Result<Option<&'a Nsec3Record>, Bogus> {
        let h = self.hash(name)?;
        Ok(self.records.iter().copied().find(|r| r.covers(&h)))
    }

    /// RFC 5155 §8.3: the closest encloser (an ancestor of `qname` whose
    /// hash an NSEC3 matches), and the record covering the next closer name
    /// (one label longer, towards `qname`).
    fn closest_encloser(
        &mut self,
        qname: &Name,
        zone: &Name,
    ) -> Result<(Name, &'a Nsec3Record), Bogus> {
        let mut next_closer = qname.to_lowercase();
        let mut at = next_closer.parent();
        while let Some(candidate) = at {
            if !candidate.ends_with(zone) {
                break;
            }
            if let Some(m) = self.matching(&candidate)? {
                let t = &m.nsec3.types;
                // RFC 5155 §8.3: not from the parent's side of a cut, nor
                // at a DNAME.
                if t.contains(Rtype::DNAME) || (t.contains(Rtype::NS) && !t.contains(Rtype::SOA)) {
                    return Err(Bogus::new(
                        ede::DNSSEC_BOGUS,
                        "an NSEC3 from above a cut or at a DNAME denies a name below it",
                    ));
                }
                let cover = self.covering(&next_closer)?.ok_or(MISSING)?;
                return Ok((candidate, cover));
            }
            next_closer = candidate.clone();
            at = candidate.parent();
        }
        Err(MISSING)
    }
}

/// The name does not exist (RFC 5155 §8.4): a closest encloser, the next
/// closer name covered, and the wildcard at the closest encloser covered.
pub fn prove_nxdomain(
    qname: &Name,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<Nsec3Proof, Bogus> {
    with_hasher(zone, records, budget, |h| {
        if h.matching(qname)?.is_some() {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "an NSEC3 shows the name exists",
            ));
        }
        let (encloser, cover) = h.closest_encloser(qname, zone)?;
        let wildcard = wildcard_at(&encloser).ok_or(MISSING)?;
        if h.covering(&wildcard)?.is_none() {
            return Err(Bogus::new(
                ede::NSEC_MISSING,
                "no proof that a wildcard could not have answered",
            ));
        }
        // RFC 5155 §9.2: under an opt-out span the name may be an unsigned
        // delegation: not secure.
        Ok(if cover.opt_out() {
            Nsec3Proof::Insecure
        } else {
            Nsec3Proof::Proven
        })
    })
}

/// The name exists without the type (RFC 5155 §8.5), or, insecurely, the
/// name is under an opt-out span (§8.6).
pub fn prove_nodata(
    qname: &Name,
    qtype: Rtype,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<Nsec3Proof, Bogus> {
    with_hasher(zone, records, budget, |h| {
        if let Some(m) = h.matching(qname)? {
            let t = &m.nsec3.types;
            if t.contains(qtype) || t.contains(Rtype::CNAME) {
                return Err(Bogus::new(
                    ede::DNSSEC_BOGUS,
                    "the NSEC3 at the name lists the type denied",
                ));
            }
            if qtype != Rtype::DS && t.contains(Rtype::NS) && !t.contains(Rtype::SOA) {
                return Err(Bogus::new(
                    ede::DNSSEC_BOGUS,
                    "a delegation's NSEC3 cannot deny the child's data",
                ));
            }
            return Ok(Nsec3Proof::Proven);
        }
        // No NSEC3 at the name: under an opt-out span, the name may be an
        // unsigned delegation (RFC 5155 §8.6 for DS; for other types
        // Unbound reads it so too, and Deckard's val_nsec3_optout_ad
        // expects it): insecure, not bogus.
        let (_, cover) = h.closest_encloser(qname, zone)?;
        if cover.opt_out() {
            return Ok(Nsec3Proof::Insecure);
        }
        Err(MISSING)
    })
}

/// The wildcard exists without the type (RFC 5155 §8.7); insecurely when
/// the next closer name is under an opt-out span.
pub fn prove_wildcard_nodata(
    qname: &Name,
    qtype: Rtype,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<Nsec3Proof, Bogus> {
    with_hasher(zone, records, budget, |h| {
        let (encloser, cover) = h.closest_encloser(qname, zone)?;
        let wildcard = wildcard_at(&encloser).ok_or(MISSING)?;
        let m = h.matching(&wildcard)?.ok_or(MISSING)?;
        let t = &m.nsec3.types;
        if t.contains(qtype) || t.contains(Rtype::CNAME) {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the wildcard's NSEC3 lists the type denied",
            ));
        }
        // RFC 5155 §9.2: the next closer name under an opt-out span may be
        // an unsigned delegation (RFC 5155 Appendix B.5's example).
        Ok(if cover.opt_out() {
            Nsec3Proof::Insecure
        } else {
            Nsec3Proof::Proven
        })
    })
}

/// A wildcard answer was the right one (RFC 5155 §8.8): the next closer
/// name, below the wildcard's parent (`labels`, the RRSIG's count), is
/// covered; by an opt-out span, only insecurely.
pub fn prove_wildcard_answer(
    qname: &Name,
    labels: u8,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<Nsec3Proof, Bogus> {
    with_hasher(zone, records, budget, |h| {
        let mut next_closer = qname.to_lowercase();
        let wanted = usize::from(labels).saturating_add(1);
        while next_closer.label_count() > wanted {
            next_closer = next_closer.parent().ok_or(MISSING)?;
        }
        if next_closer.label_count() != wanted {
            return Err(MISSING);
        }
        let cover = h.covering(&next_closer)?.ok_or(Bogus::new(
            ede::NSEC_MISSING,
            "a wildcard answer without the proof that the name does not exist",
        ))?;
        // RFC 5155 §9.2: an opt-out span may hide an unsigned delegation
        // at the next closer name, which would own the name instead (as
        // Unbound reads it).
        Ok(if cover.opt_out() {
            Nsec3Proof::Insecure
        } else {
            Nsec3Proof::Proven
        })
    })
}

/// The delegation to `child` is unsigned (RFC 5155 §8.9): the NSEC3 at it
/// lists NS but neither DS nor SOA, or an opt-out span covers it.
pub fn prove_insecure_delegation(
    child: &Name,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<Nsec3Proof, Bogus> {
    with_hasher(zone, records, budget, |h| {
        if let Some(m) = h.matching(child)? {
            let t = &m.nsec3.types;
            if t.contains(Rtype::NS) && !t.contains(Rtype::DS) && !t.contains(Rtype::SOA) {
                return Ok(Nsec3Proof::Proven);
            }
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the NSEC3 at the delegation does not show it unsigned",
            ));
        }
        let (_, cover) = h.closest_encloser(child, zone)?;
        if cover.opt_out() {
            Ok(Nsec3Proof::Proven)
        } else {
            Err(MISSING)
        }
    })
}

/// What the zone's NSEC3 records say of `name`, asked for its DS and
/// denied: an unsigned delegation (the NSEC3 at it lists NS without DS or
/// SOA, or an opt-out span covers it, RFC 5155 §8.6), or no cut at all.
/// A zone hashing past [`MAX_ITERATIONS`] is taken as unsigned below.
pub fn ds_denial(
    name: &Name,
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
) -> Result<DsDenial, Bogus> {
    let Some(mut h) = Hasher::new(zone, records, budget)? else {
        return Ok(DsDenial::Unsigned);
    };
    if let Some(m) = h.matching(name)? {
        let t = &m.nsec3.types;
        if t.contains(Rtype::DS) || t.contains(Rtype::SOA) {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the NSEC3 at the name cannot deny its DS",
            ));
        }
        return Ok(if t.contains(Rtype::NS) {
            DsDenial::Unsigned
        } else {
            DsDenial::NoCut
        });
    }
    let (_, cover) = h.closest_encloser(name, zone)?;
    Ok(if cover.opt_out() {
        DsDenial::Unsigned
    } else {
        DsDenial::NoCut
    })
}

/// Runs `proof` over the usable records of `zone`; a zone hashing past
/// [`MAX_ITERATIONS`] is insecure without a hash computed.
fn with_hasher(
    zone: &Name,
    records: &[Nsec3Record],
    budget: &mut Budget,
    proof: impl FnOnce(&mut Hasher<'_>) -> Result<Nsec3Proof, Bogus>,
) -> Result<Nsec3Proof, Bogus> {
    match Hasher::new(zone, records, budget)? {
        Some(mut h) => proof(&mut h),
        None => Ok(Nsec3Proof::Insecure),
    }
}

/// `*.` and `name`.
fn wildcard_at(name: &Name) -> Option<Name> {
    let mut wire = vec![1u8, b'*'];
    wire.extend_from_slice(name.as_wire());
    Name::from_wire(&wire).ok()
}
