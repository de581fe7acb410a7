//! What NSEC records prove (RFC 4035 §5.4, RFC 6840 §4): that a name does
//! not exist, that it has no records of a type, that a wildcard answer was
//! the right one, and that a delegation is unsigned. The records are taken
//! as already verified ([`super::verify_rrset`]); this is only the logic of
//! the chain, in the canonical order of names (RFC 4034 §6.1).
//!
//! The traps RFC 6840 §4.1 names are kept out: an NSEC from the parent's
//! side of a delegation (NS without SOA) says nothing below the cut, and one
//! at a DNAME says nothing below the DNAME.

use bulwark_proto::rdata::Nsec;
use bulwark_proto::{Name, Rtype};

use super::{Bogus, DsDenial};
use crate::ede;

/// One NSEC record: its owner and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsecRecord {
    pub owner: Name,
    pub nsec: Nsec,
}

const MISSING: Bogus = Bogus::new(ede::NSEC_MISSING, "the denial is not proven");

/// Whether `r` says `name` does not exist: it falls strictly between the
/// owner and the next name, or past the last name of the zone (whose next
/// name is the apex again).
pub fn covers(r: &NsecRecord, name: &Name) -> bool {
    let (owner, next) = (&r.owner, &r.nsec.next);
    if owner < next {
        owner < name && name < next
    } else {
        // The last NSEC of the zone: from its owner to the end, wrapping.
        name > owner || name < next
    }
}

/// Whether `r`, at an ancestor of `name`, is one that cannot speak for it:
/// a delegation seen from the parent (NS without SOA) or a DNAME.
pub(crate) fn blocks_below(r: &NsecRecord, name: &Name) -> bool {
    let t = &r.nsec.types;
    name.is_below(&r.owner)
        && (t.contains(Rtype::DNAME) || (t.contains(Rtype::NS) && !t.contains(Rtype::SOA)))
}

/// The name does not exist (RFC 4035 §5.4): an NSEC covers it, and another
/// (or the same) covers the wildcard at its closest encloser, so that no
/// wildcard could have answered. Returns the closest encloser.
pub fn prove_nxdomain(qname: &Name, records: &[NsecRecord]) -> Result<Name, Bogus> {
    let qname = qname.to_lowercase();
    let cover = records
        .iter()
        .find(|r| covers(r, &qname) && !blocks_below(r, &qname))
        .ok_or(MISSING)?;
    if records.iter().any(|r| blocks_below(r, &qname)) {
        return Err(Bogus::new(
            ede::DNSSEC_BOGUS,
            "an NSEC from above a zone cut or a DNAME denies a name below it",
        ));
    }
    let encloser = closest_encloser(&qname, cover);
    let wildcard = wildcard_at(&encloser).ok_or(MISSING)?;
    if !records.iter().any(|r| covers(r, &wildcard)) {
        return Err(Bogus::new(
            ede::NSEC_MISSING,
            "no proof that a wildcard could not have answered",
        ));
    }
    Ok(encloser)
}

/// The name exists without the type (RFC 4035 §5.4): the NSEC at the name
/// lacks the type (and CNAME, which would have answered instead), or the
/// name is an empty non-terminal (an NSEC covers it and the next name is
/// below it). An NSEC from the parent's side of a delegation proves only
/// the absence of a DS (RFC 6840 §4.4).
pub fn prove_nodata(qname: &Name, qtype: Rtype, records: &[NsecRecord]) -> Result<(), Bogus> {
    let qname = qname.to_lowercase();
    if let Some(r) = records.iter().find(|r| r.owner == qname) {
        let t = &r.nsec.types;
        if t.contains(qtype) || t.contains(Rtype::CNAME) {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the NSEC at the name lists the type denied",
            ));
        }
        let parent_side = t.contains(Rtype::NS) && !t.contains(Rtype::SOA);
        if parent_side && qtype != Rtype::DS {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "a delegation's NSEC cannot deny the child's data",
            ));
        }
        return Ok(());
    }
    let empty_non_terminal = records
        .iter()
        .any(|r| covers(r, &qname) && r.nsec.next.is_below(&qname));
    if empty_non_terminal {
        return Ok(());
    }
    Err(MISSING)
}

/// A wildcard answer was the right one (RFC 4035 §5.3.4): the name itself
/// does not exist, proven by an NSEC that covers it, the wildcard's owner
/// being `*.` and the closest encloser. `labels` is the RRSIG's label
/// count, which says where the wildcard was.
pub fn prove_wildcard_answer(
    qname: &Name,
    labels: u8,
    records: &[NsecRecord],
) -> Result<(), Bogus> {
    let qname = qname.to_lowercase();
    let mut encloser = qname.clone();
    while encloser.label_count() > usize::from(labels) {
        encloser = encloser.parent().ok_or(MISSING)?;
    }
    let proven = records.iter().any(|r| {
        covers(r, &qname) && !blocks_below(r, &qname) && closest_encloser(&qname, r) == encloser
    });
    if proven {
        Ok(())
    } else {
        Err(Bogus::new(
            ede::NSEC_MISSING,
            "a wildcard answer without the proof that the name does not exist",
        ))
    }
}

/// The wildcard exists without the type (RFC 4035 §5.4, wildcard NODATA):
/// an NSEC covers the name, and the NSEC at the wildcard of its closest
/// encloser lacks the type.
pub fn prove_wildcard_nodata(
    qname: &Name,
    qtype: Rtype,
    records: &[NsecRecord],
) -> Result<(), Bogus> {
    let qname = qname.to_lowercase();
    let cover = records
        .iter()
        .find(|r| covers(r, &qname) && !blocks_below(r, &qname))
        .ok_or(MISSING)?;
    let wildcard = wildcard_at(&closest_encloser(&qname, cover)).ok_or(MISSING)?;
    prove_nodata(&wildcard, qtype, records)
}

/// The delegation to `child` is unsigned (RFC 4035 §5.2): the parent's NSEC
/// at it lists NS but neither DS nor SOA. A covering NSEC proves it too
/// when the parent's zone is opt-out-free NSEC: no NSEC at the name means no
/// delegation there at all, which the caller learns from the referral.
pub fn prove_insecure_delegation(child: &Name, records: &[NsecRecord]) -> Result<(), Bogus> {
    let child = child.to_lowercase();
    let r = records.iter().find(|r| r.owner == child).ok_or(MISSING)?;
    let t = &r.nsec.types;
    if !t.contains(Rtype::NS) || t.contains(Rtype::SOA) {
        return Err(Bogus::new(
            ede::DNSSEC_BOGUS,
            "the NSEC at the delegation is not a delegation's",
        ));
    }
    if t.contains(Rtype::DS) {
        return Err(Bogus::new(
            ede::DNSSEC_BOGUS,
            "the delegation has a DS record: it is signed",
        ));
    }
    Ok(())
}

/// What the zone's NSEC records say of `name`, asked for its DS and denied:
/// an unsigned delegation (NS without DS or SOA at the name), or no cut at
/// all (the name has no NS, is an empty non-terminal, or does not exist).
pub fn ds_denial(name: &Name, records: &[NsecRecord]) -> Result<DsDenial, Bogus> {
    let name = name.to_lowercase();
    if let Some(r) = records.iter().find(|r| r.owner == name) {
        let t = &r.nsec.types;
        if t.contains(Rtype::DS) {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the NSEC at the name lists the DS denied",
            ));
        }
        if t.contains(Rtype::SOA) {
            return Err(Bogus::new(
                ede::DNSSEC_BOGUS,
                "a zone's own apex NSEC cannot deny its DS",
            ));
        }
        return Ok(if t.contains(Rtype::NS) {
            DsDenial::Unsigned
        } else {
            DsDenial::NoCut
        });
    }
    if prove_nodata(&name, Rtype::DS, records).is_ok() {
        return Ok(DsDenial::NoCut);
    }
    prove_nxdomain(&name, records).map(|_| DsDenial::NoCut)
}

/// The closest encloser a covering NSEC shows for `qname`: the longest
/// ancestor of `qname` that the owner or the next name is at or below
/// (both exist, so their ancestors do).
pub(crate) fn closest_encloser(qname: &Name, r: &NsecRecord) -> Name {
    let mut at = qname.parent();
    while let Some(a) = at {
        if r.owner.ends_with(&a) || r.nsec.next.ends_with(&a) {
            return a;
        }
        at = a.parent();
    }
    Name::root()
}

/// `*.` and `name`.
pub(crate) fn wildcard_at(name: &Name) -> Option<Name> {
    let mut wire = vec![1u8, b'*'];
    wire.extend_from_slice(name.as_wire());
    Name::from_wire(&wire).ok()
}
