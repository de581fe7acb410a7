//! Applying one UPDATE message to a [`ZoneEdit`], in the steps and order of
//! RFC 2136 §3: zone section (§3.1), prerequisites (§3.2), prescan of the
//! update section (§3.4.1), then the updates (§3.4.2).
//!
//! All or nothing: every check that can turn a message down runs before the
//! first change, and the update step itself cannot fail (what RFC 2136 says
//! to ignore is ignored, and reported), so a refused message leaves the edit
//! exactly as it was.

use std::collections::BTreeMap;

use bulwark_proto::rdata::canonical_wire;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rdata, Rtype};

use super::edit::ZoneEdit;
use super::request::{UpdateRecord, UpdateRequest};
use super::{Malformation, UpdateError};
use crate::serial::serial_gt;

/// RFC 2181 §8: a TTL is 0..=2^31-1; one with the top bit set counts as 0.
const MAX_TTL: u32 = 0x7fff_ffff;

/// The DNSSEC records a server that signs a zone keeps for itself: the
/// signatures and denial chain it computes (RRSIG, NSEC, NSEC3, NSEC3PARAM)
/// and what its key management publishes (DNSKEY, and CDS/CDNSKEY for the
/// parent, RFC 7344).
const SIGNER_MANAGED: [Rtype; 7] = [
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::NSEC3,
    Rtype::NSEC3PARAM,
    Rtype::DNSKEY,
    Rtype::CDS,
    Rtype::CDNSKEY,
];

/// The records a signer attaches to the data at a name: they do not make a
/// name exist on their own, and go when the signer next passes over a name
/// whose data is gone.
const SIGNER_RECORDS: [Rtype; 3] = [Rtype::RRSIG, Rtype::NSEC, Rtype::NSEC3];

/// Types that may sit beside a CNAME: RFC 2136 §3.4.2.2 allows nothing, RFC
/// 4035 §2.5 the CNAME's own RRSIG and NSEC.
const BESIDE_CNAME: [Rtype; 3] = [Rtype::CNAME, Rtype::RRSIG, Rtype::NSEC];

/// How the server treats an UPDATE for one zone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    /// The server signs this zone itself. RFC 3007 has the server sign what
    /// an update changes and leaves to its policy which DNSSEC records a
    /// client may touch. The policy here: a client adds and deletes the
    /// zone's data, never the records the server computes or publishes from
    /// its keys (RRSIG, NSEC, NSEC3, NSEC3PARAM, DNSKEY, CDS, CDNSKEY). A
    /// message naming one of them in its update section is REFUSED whole,
    /// as BIND refuses explicit NSEC, NSEC3 and RRSIG updates: a client's
    /// version would be overwritten by the next signing, or would break the
    /// chain and keys the server answers for. Prerequisites may still test
    /// them.
    ///
    /// The edit then changes only data; signatures and the denial chain are
    /// the signer's to bring in line afterwards (RRSIGs of deleted RRsets,
    /// NSEC at names left empty). Until it has, those leftovers do not count:
    /// deleting all RRsets at a name leaves them be, and a name holding only
    /// RRSIG, NSEC or NSEC3 is not "in use" (RFC 2136 §2.4.4), so a batch
    /// sees the zone as the signer will leave it after each message.
    pub signed_by_server: bool,
    /// Whether a client may replace the SOA.
    pub client_soa: ClientSoa,
}

/// What a client's SOA in the update section does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientSoa {
    /// RFC 2136 §3.4.2.2: it replaces the zone's SOA when its serial is newer
    /// (RFC 1982), and is ignored otherwise.
    #[default]
    WhenNewer,
    /// It is always ignored: the server alone keeps the SOA.
    Ignored,
}

/// What applying one message did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Update records that changed the zone (the others were no-ops or ignored).
    pub changed: usize,
    /// Update records RFC 2136 §3.4.2 says to ignore, for the log.
    pub ignored: Vec<Ignored>,
}

/// One update record that was ignored, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Position in the update section, from 0.
    pub index: usize,
    pub owner: Name,
    pub rtype: Rtype,
    pub reason: IgnoreReason,
}

/// Why RFC 2136 §3.4.2 ignores an update record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IgnoreReason {
    #[error("a CNAME cannot join other data (RFC 2136 §3.4.2.2, RFC 4035 §2.5)")]
    CnameBesideData,
    #[error("data cannot join a CNAME (RFC 2136 §3.4.2.2, RFC 4035 §2.5)")]
    DataBesideCname,
    #[error("a SOA can only replace the apex SOA (RFC 2136 §3.4.2.2)")]
    SoaNotAtApex,
    #[error("the SOA's serial is not newer than the zone's (RFC 2136 §3.4.2.2, RFC 1982)")]
    SoaSerialNotNewer,
    #[error("clients may not change this zone's SOA")]
    ClientSoaRefused,
    #[error("the SOA is never deleted (RFC 2136 §3.4.2.3, §3.4.2.4)")]
    SoaDeletion,
    #[error("the apex NS RRset is never deleted whole (RFC 2136 §3.4.2.3)")]
    ApexNsDeletion,
    #[error("the last apex NS is never deleted (RFC 2136 §3.4.2.4)")]
    LastApexNs,
}

impl ZoneEdit<'_> {
    /// Applies one UPDATE message: all of it, or (on `Err`) none of it. The
    /// error's [`rcode`](UpdateError::rcode) is the response's.
    pub fn apply(
        &mut self,
        request: &UpdateRequest,
        options: &UpdateOptions,
    ) -> Result<Applied, UpdateError> {
        self.check_zone_section(request)?;
        self.check_prerequisites(&request.prerequisites, options)?;
        self.prescan(&request.updates, options)?;
        Ok(self.perform_updates(&request.updates, options))
    }

    /// RFC 2136 §3.1: the zone section must name this zone, in its class.
    fn check_zone_section(&self, request: &UpdateRequest) -> Result<(), UpdateError> {
        let zone = self.zone();
        if request.zone != *zone.apex() || request.zone_class != zone.class() {
            return Err(UpdateError::NotAuthoritative {
                zone: Box::new(request.zone.clone()),
                class: request.zone_class,
            });
        }
        Ok(())
    }

    /// RFC 2136 §3.2: every prerequisite, in order (the first failing one
    /// gives the rcode), then the value-dependent ones, each gathered into
    /// the RRset it describes and compared whole (§3.2.3).
    fn check_prerequisites(
        &self,
        prerequisites: &[UpdateRecord],
        options: &UpdateOptions,
    ) -> Result<(), UpdateError> {
        let apex = self.zone().apex();
        let zone_class = self.zone().class();
        let mut expected: BTreeMap<(Name, Rtype), Vec<&[u8]>> = BTreeMap::new();
        for rr in prerequisites {
            let malformed = |rule| malformed(rr, rule);
            // RFC 2136 §3.2.1: prerequisites carry TTL 0.
            if rr.ttl != 0 {
                return Err(malformed(Malformation::PrerequisiteTtl));
            }
            if !rr.owner.ends_with(apex) {
                return Err(not_in_zone(rr));
            }
            let owner = rr.owner.to_lowercase();
            match rr.class {
                Class::ANY | Class::NONE if !rr.rdata.is_empty() => {
                    return Err(malformed(Malformation::DataNotEmpty));
                }
                // §2.4.4 name is in use; §2.4.1 RRset exists (value independent).
                Class::ANY if rr.rtype == Rtype::ANY => {
                    if !self.name_in_use(&owner, options) {
                        return Err(UpdateError::NameNotInUse(Box::new(rr.owner.clone())));
                    }
                }
                Class::ANY => {
                    if !self.has_rrset(&owner, rr.rtype) {
                        return Err(UpdateError::RrsetMissing {
                            owner: Box::new(rr.owner.clone()),
                            rtype: rr.rtype,
                        });
                    }
                }
                // §2.4.5 name is not in use; §2.4.3 RRset does not exist.
                Class::NONE if rr.rtype == Rtype::ANY => {
                    if self.name_in_use(&owner, options) {
                        return Err(UpdateError::NameInUse(Box::new(rr.owner.clone())));
                    }
                }
                Class::NONE => {
                    if self.has_rrset(&owner, rr.rtype) {
                        return Err(UpdateError::RrsetExists {
                            owner: Box::new(rr.owner.clone()),
                            rtype: rr.rtype,
                        });
                    }
                }
                // §2.4.2 RRset exists (value dependent): gathered for below.
                c if c == zone_class => {
                    if !well_formed(rr.rtype, &rr.rdata) {
                        return Err(malformed(Malformation::BadRdata));
                    }
                    expected
                        .entry((owner, rr.rtype))
                        .or_default()
                        .push(&rr.rdata);
                }
                _ => return Err(malformed(Malformation::BadClass)),
            }
        }
        for ((owner, rtype), rdatas) in expected {
            // RRsets are sets (RFC 2181 §5): order and repeats do not count,
            // nor do TTLs (RFC 2136 §1.1.1).
            let mut want: Vec<_> = rdatas.iter().map(|rd| canonical_wire(rtype, rd)).collect();
            want.sort();
            want.dedup();
            let current = self.records(&owner, rtype);
            let mut have: Vec<_> = current
                .iter()
                .map(|(_, rd)| canonical_wire(rtype, rd))
                .collect();
            have.sort();
            have.dedup();
            if want != have {
                return Err(UpdateError::RrsetDiffers {
                    owner: Box::new(owner),
                    rtype,
                });
            }
        }
        Ok(())
    }

    /// RFC 2136 §2.4.4: at least one RR with this name exists (an empty
    /// non-terminal has none). See [`UpdateOptions::signed_by_server`] for the
    /// signer's records.
    fn name_in_use(&self, owner: &Name, options: &UpdateOptions) -> bool {
        self.types(owner)
            .into_iter()
            .any(|t| !(options.signed_by_server && SIGNER_RECORDS.contains(&t)))
    }

    /// RFC 2136 §3.4.1: every update record is checked before any is applied.
    fn prescan(
        &self,
        updates: &[UpdateRecord],
        options: &UpdateOptions,
    ) -> Result<(), UpdateError> {
        let apex = self.zone().apex();
        let zone_class = self.zone().class();
        for rr in updates {
            let malformed = |rule| Err(malformed(rr, rule));
            if !rr.owner.ends_with(apex) {
                return Err(not_in_zone(rr));
            }
            // RFC 6895 §3.1: meta and query types, and the reserved type 0,
            // are never zone data.
            let meta = rr.rtype.is_meta() || rr.rtype.0 == 0;
            match rr.class {
                c if c == zone_class => {
                    if meta {
                        return malformed(Malformation::MetaType);
                    }
                    if !well_formed(rr.rtype, &rr.rdata) {
                        return malformed(Malformation::BadRdata);
                    }
                }
                Class::ANY => {
                    if rr.ttl != 0 {
                        return malformed(Malformation::DeletionTtl);
                    }
                    if !rr.rdata.is_empty() {
                        return malformed(Malformation::DataNotEmpty);
                    }
                    if meta && rr.rtype != Rtype::ANY {
                        return malformed(Malformation::MetaType);
                    }
                }
                Class::NONE => {
                    if rr.ttl != 0 {
                        return malformed(Malformation::DeletionTtl);
                    }
                    if meta {
                        return malformed(Malformation::MetaType);
                    }
                    if !well_formed(rr.rtype, &rr.rdata) {
                        return malformed(Malformation::BadRdata);
                    }
                }
                _ => return malformed(Malformation::BadClass),
            }
            if options.signed_by_server && SIGNER_MANAGED.contains(&rr.rtype) {
                return Err(UpdateError::SignerManaged {
                    owner: Box::new(rr.owner.clone()),
                    rtype: rr.rtype,
                });
            }
        }
        Ok(())
    }

    /// RFC 2136 §3.4.2: the updates, in order, each seeing the ones before.
    /// The prescan has vouched for every record, so this cannot fail.
    fn perform_updates(&mut self, updates: &[UpdateRecord], options: &UpdateOptions) -> Applied {
        let zone_class = self.zone().class();
        let mut applied = Applied::default();
        for (index, rr) in updates.iter().enumerate() {
            let owner = rr.owner.to_lowercase();
            let outcome = match rr.class {
                c if c == zone_class => self.add(&owner, rr, options),
                Class::ANY if rr.rtype == Rtype::ANY => Ok(self.delete_name(&owner, options)),
                Class::ANY => self.delete_rrset(&owner, rr.rtype),
                _ => self.delete_rr(&owner, rr),
            };
            match outcome {
                Ok(true) => applied.changed = applied.changed.saturating_add(1),
                Ok(false) => {}
                Err(reason) => applied.ignored.push(Ignored {
                    index,
                    owner: rr.owner.clone(),
                    rtype: rr.rtype,
                    reason,
                }),
            }
        }
        applied
    }

    /// RFC 2136 §3.4.2.2: add to an RRset. `Ok(changed)`, or why it is ignored.
    fn add(
        &mut self,
        owner: &Name,
        rr: &UpdateRecord,
        options: &UpdateOptions,
    ) -> Result<bool, IgnoreReason> {
        let ttl = if rr.ttl > MAX_TTL { 0 } else { rr.ttl };
        let (rtype, rdata) = (rr.rtype, rr.rdata.as_slice());
        match rtype {
            Rtype::SOA => {
                if owner != self.zone().apex() {
                    return Err(IgnoreReason::SoaNotAtApex);
                }
                if options.client_soa == ClientSoa::Ignored {
                    return Err(IgnoreReason::ClientSoaRefused);
                }
                let current = self
                    .records(owner, Rtype::SOA)
                    .first()
                    .and_then(|&(_, rd)| soa_serial(rd));
                let newer = matches!((soa_serial(rdata), current), (Some(new), Some(old)) if serial_gt(new, old));
                if !newer {
                    return Err(IgnoreReason::SoaSerialNotNewer);
                }
                Ok(self.replace_set(owner, rtype, ttl, rdata))
            }
            Rtype::CNAME => {
                if self.types(owner).iter().any(|t| !BESIDE_CNAME.contains(t)) {
                    return Err(IgnoreReason::CnameBesideData);
                }
                // One alias per name (RFC 2181 §10.1): the new one replaces it.
                Ok(self.replace_set(owner, rtype, ttl, rdata))
            }
            _ if !BESIDE_CNAME.contains(&rtype) && self.has_rrset(owner, Rtype::CNAME) => {
                Err(IgnoreReason::DataBesideCname)
            }
            // RFC 6672 §2.4: one DNAME per name; the new one replaces it, as
            // a CNAME does.
            Rtype::DNAME => Ok(self.replace_set(owner, rtype, ttl, rdata)),
            Rtype::WKS => {
                // RFC 2136 §3.4.2.2: a WKS with the same address and protocol
                // (the first five octets, RFC 1035 §3.4.2) replaces the old one.
                let service = rdata.get(..5);
                let replaced =
                    self.delete_records(owner, rtype, |rd| rd.get(..5) == service && rd != rdata);
                Ok(self.add_record(owner, rtype, ttl, rdata) || replaced > 0)
            }
            _ => Ok(self.add_record(owner, rtype, ttl, rdata)),
        }
    }

    /// RFC 2136 §3.4.2.3: delete all RRsets at a name, except the apex SOA and
    /// NS, and in a zone the server signs, what its signer keeps (see
    /// [`UpdateOptions::signed_by_server`]; BIND leaves DNSSEC types too).
    fn delete_name(&mut self, owner: &Name, options: &UpdateOptions) -> bool {
        let at_apex = owner == self.zone().apex();
        let mut changed = false;
        for rtype in self.types(owner) {
            let kept = (at_apex && (rtype == Rtype::SOA || rtype == Rtype::NS))
                || (options.signed_by_server && SIGNER_MANAGED.contains(&rtype));
            if !kept {
                changed |= self.delete_set(owner, rtype);
            }
        }
        changed
    }

    /// RFC 2136 §3.4.2.3: delete an RRset, but never the apex SOA or NS.
    fn delete_rrset(&mut self, owner: &Name, rtype: Rtype) -> Result<bool, IgnoreReason> {
        if rtype == Rtype::SOA {
            return Err(IgnoreReason::SoaDeletion);
        }
        if rtype == Rtype::NS && owner == self.zone().apex() {
            return Err(IgnoreReason::ApexNsDeletion);
        }
        Ok(self.delete_set(owner, rtype))
    }

    /// RFC 2136 §3.4.2.4: delete one RR, but never the SOA nor the last
    /// apex NS.
    fn delete_rr(&mut self, owner: &Name, rr: &UpdateRecord) -> Result<bool, IgnoreReason> {
        let rtype = rr.rtype;
        if rtype == Rtype::SOA {
            return Err(IgnoreReason::SoaDeletion);
        }
        let target = canonical_wire(rtype, &rr.rdata);
        let matches = |rd: &[u8]| canonical_wire(rtype, rd) == target;
        if rtype == Rtype::NS && owner == self.zone().apex() {
            let ns = self.records(owner, rtype);
            if let [(_, only)] = ns.as_slice() {
                if matches(only) {
                    return Err(IgnoreReason::LastApexNs);
                }
            }
        }
        Ok(self.delete_records(owner, rtype, matches) > 0)
    }
}

fn malformed(rr: &UpdateRecord, rule: Malformation) -> UpdateError {
    UpdateError::Malformed {
        owner: Box::new(rr.owner.clone()),
        class: rr.class,
        rtype: rr.rtype,
        rule,
    }
}

fn not_in_zone(rr: &UpdateRecord) -> UpdateError {
    UpdateError::NotInZone {
        owner: Box::new(rr.owner.clone()),
        rtype: rr.rtype,
    }
}

/// Whether `rdata` is valid record data of `rtype` (RDLENGTH 0 included,
/// which only some types allow).
fn well_formed(rtype: Rtype, rdata: &[u8]) -> bool {
    Rdata::read(rtype, &mut Reader::new(rdata), rdata.len()).is_ok()
}

/// The serial of SOA rdata in wire form (RFC 1035 §3.3.13).
fn soa_serial(rdata: &[u8]) -> Option<u32> {
    match Rdata::read(Rtype::SOA, &mut Reader::new(rdata), rdata.len()).ok()? {
        Rdata::Soa(soa) => Some(soa.serial),
        _ => None,
    }
}
