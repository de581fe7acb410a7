//! DNSSEC in answers (RFC 4035 §3.1): when the query sets the DO bit (RFC 3225)
//! and the zone is signed, each authoritative RRset placed in the answer or
//! authority section is followed by the RRSIGs covering it, with the RRset's
//! TTL (RFC 4034 §3). Without DO, or from an unsigned zone, nothing changes.
//!
//! Signatures are not made here: a signed zone carries them, and they are
//! copied from the node that holds the RRset. Glue and the NS RRset at a cut
//! have none (RFC 4035 §2.2), so copying what the node holds is always right.

use bulwark_proto::message::Section;
use bulwark_proto::{Name, Rtype};
use bulwark_zone::nsec3::Denial;
use bulwark_zone::zone::{Node, RRset, Zone};

use crate::response::{DoesNotFit, Response};

/// What a signed answer needs to know: the zone and how it denies existence.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signing<'z> {
    pub(crate) zone: &'z Zone,
    pub(crate) denial: &'z Denial,
}

impl<'z> Signing<'z> {
    /// RFC 4035 §3.1: signatures and proofs go to a client that set DO, from a
    /// signed zone only.
    pub(crate) fn for_query(zone: &'z Zone, dnssec_ok: bool) -> Option<Signing<'z>> {
        if !dnssec_ok {
            return None;
        }
        zone.denial().map(|denial| Signing { zone, denial })
    }
}

/// Writes the RRSIGs at `node` covering `covered`, owned by `owner` with `ttl`.
/// Nothing to write is not an error.
pub(crate) fn push_rrsigs(
    resp: &mut Response<'_>,
    section: Section,
    owner: &Name,
    node: &Node,
    covered: Rtype,
    ttl: u32,
) -> Result<(), DoesNotFit> {
    let sigs = node.rrsigs_covering(covered);
    if sigs.clone().next().is_none() {
        return Ok(());
    }
    resp.push_rrset(section, owner, Rtype::RRSIG, ttl, sigs)
}

/// Writes `rrset` (from `node`) at `owner` with `ttl`, then, when signing, its
/// RRSIGs. RFC 4035 §3.1.1 and RFC 2181 §9: in the answer and authority
/// sections a signature that does not fit is a required RRset cut, so the
/// caller sets TC on `Err` as for the RRset itself.
pub(crate) fn push_signed(
    resp: &mut Response<'_>,
    section: Section,
    owner: &Name,
    node: &Node,
    rrset: &RRset,
    ttl: u32,
    signing: Option<Signing<'_>>,
) -> Result<(), DoesNotFit> {
    resp.push_rrset(section, owner, rrset.rtype(), ttl, rrset.rdatas())?;
    if signing.is_some() {
        push_rrsigs(resp, section, owner, node, rrset.rtype(), ttl)?;
    }
    Ok(())
}

/// What a DO query for type RRSIG gets, as from Knot: not every signature at
/// the name (an RRSIG "RRset" mixes the signatures of all its RRsets, RFC
/// 4035 §3.1.5 leaves it open), but those covering the lowest type signed
/// there, with that RRset's TTL (RFC 4034 §3). `None` when the name has none.
pub(crate) fn rrsig_query_answer(node: &Node) -> Option<(Rtype, u32)> {
    let sigs = node.rrset(Rtype::RRSIG)?;
    // RFC 4034 §3.1: Type Covered opens the rdata; canonical order sorts by it.
    let first = sigs.first()?;
    let covered = Rtype(u16::from_be_bytes([*first.first()?, *first.get(1)?]));
    let ttl = node.rrset(covered).map_or(sigs.ttl(), RRset::ttl);
    Some((covered, ttl))
}
