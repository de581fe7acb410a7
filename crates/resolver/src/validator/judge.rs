//! Judging one resolution: each RRset of its answer with the keys of the
//! zone that signed it, a wildcard expansion with its proof, a denial with
//! its NSEC or NSEC3 records (RFC 4035 §5.3, §5.4; RFC 5155 §8).

use bulwark_proto::rdata::Dnskey;
use bulwark_proto::{Name, Rcode, Rdata, Rtype};

use crate::cache::NXDOMAIN;
use crate::engine::Resolver;
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::task::Task;
use crate::validate::nsec::NsecRecord;
use crate::validate::nsec3::{Nsec3Proof, Nsec3Record};
use crate::validate::{nsec, nsec3, Bogus, Budget};
use crate::{ede, Millis};

use super::{Eval, Judged, SignatureMemo, Verdict, ZoneTrust, NSEC_MISSING, RRSIGS_MISSING};

impl Resolver {
    /// The verdict on `r`: its answer's RRsets one by one (a CNAME a DNAME
    /// synthesised stands with the DNAME), a wildcard answer's proof, and
    /// a denial's proof.
    pub(super) fn judge(
        &mut self,
        task: &Task,
        r: &Resolution,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Verdict> {
        let mut verdict = Verdict {
            security: Security::Secure,
            why: None,
            marks: Vec::new(),
        };
        for set in &r.answer {
            let synthesised = set.rtype == Rtype::CNAME
                && set.sigs.is_empty()
                && r.answer
                    .iter()
                    .any(|d| d.rtype == Rtype::DNAME && set.owner.is_below(&d.owner));
            if synthesised {
                continue;
            }
            // RRSIG records are not signed (RFC 4035 §2.2): an answer of
            // them cannot be secure, nor shown bogus.
            if set.rtype == Rtype::RRSIG {
                verdict.add(&set.owner, set.rtype, Judged::insecure());
                continue;
            }
            let judged = self.judge_set(task, set, &r.authority, now, budget)?;
            verdict.add(&set.owner, set.rtype, judged);
        }
        let negative = r.rcode == Rcode::NXDOMAIN
            || r.authority.iter().any(|s| s.rtype == Rtype::SOA)
            || (r.rcode == Rcode::NOERROR && r.answer.is_empty());
        if negative {
            let name = denied_name(&task.qname, &r.answer);
            let nxdomain = r.rcode == Rcode::NXDOMAIN;
            let judged = self.judge_denial(task, &name, nxdomain, &r.authority, now, budget)?;
            let key = if nxdomain { NXDOMAIN } else { task.qtype };
            verdict.add(&name, key, judged);
        }
        Ok(verdict)
    }

    /// One RRset: signed by a zone whose keys are trusted, or unsigned in
    /// an insecure zone. A wildcard expansion also needs `authority`'s
    /// proof that the name itself does not exist.
    pub(super) fn judge_set(
        &mut self,
        task: &Task,
        set: &RrSet,
        authority: &[RrSet],
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Judged> {
        let sigs = set.rrsigs();
        let owner = set.owner.to_lowercase();
        let signer = sigs
            .iter()
            .map(|s| s.signer.to_lowercase())
            .find(|z| owner.ends_with(z));
        let Some(zone) = signer else {
            let at = parent_side(&owner, set.rtype);
            let trust = self.trust_at(task, &at, now, budget)?;
            return Ok(Judged::unsigned_in(trust, RRSIGS_MISSING));
        };
        let keys = match self.zone_trust(task, &zone, now, budget, 0)? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok(Judged::insecure()),
            ZoneTrust::Bogus(b) => return Ok(Judged::bogus(b)),
        };
        let mine: Vec<_> = sigs.into_iter().filter(|s| s.signer == zone).collect();
        let verified = match self.sig_memo.verify(set, &mine, &zone, &keys, now, budget) {
            Ok(v) => v,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        if !verified.wildcard {
            return Ok(Judged::secure(verified.ttl));
        }
        // RFC 4035 §5.3.4: the labels of the signature that held say where
        // the wildcard was.
        let labels = mine
            .iter()
            .filter(|s| s.key_tag == verified.key_tag)
            .map(|s| s.labels)
            .min()
            .unwrap_or(0);
        let proof = match verified_proofs(
            &mut self.sig_memo,
            None,
            authority,
            &zone,
            &keys,
            now,
            budget,
        ) {
            Ok(p) => p,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        let proven = if !proof.nsec.is_empty() {
            nsec::prove_wildcard_answer(&owner, labels, &proof.nsec).map(|()| Nsec3Proof::Proven)
        } else if !proof.nsec3.is_empty() {
            nsec3::prove_wildcard_answer(&owner, labels, &zone, &proof.nsec3, budget)
        } else {
            Err(Bogus::new(
                ede::NSEC_MISSING,
                "a wildcard answer without the proof that the name does not exist",
            ))
        };
        Ok(match proven {
            Ok(Nsec3Proof::Proven) => Judged::secure(verified.ttl),
            Ok(Nsec3Proof::Insecure) => Judged::insecure(),
            Err(b) => Judged::bogus(b),
        })
    }

    /// NXDOMAIN or NODATA for `name`: the SOA signed by its zone, and the
    /// NSEC or NSEC3 records, signed too, proving it.
    pub(super) fn judge_denial(
        &mut self,
        task: &Task,
        name: &Name,
        nxdomain: bool,
        authority: &[RrSet],
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Judged> {
        let soa = authority.iter().find(|s| s.rtype == Rtype::SOA);
        let Some(zone) = denial_signer(soa, authority) else {
            let at = parent_side(name, task.qtype);
            let trust = self.trust_at(task, &at, now, budget)?;
            return Ok(Judged::unsigned_in(trust, NSEC_MISSING));
        };
        // A DS is the parent's to deny (RFC 4035 §2.4, RFC 6840 §4.1): a
        // zone's own apex cannot say it has none.
        if task.qtype == Rtype::DS && zone == *name && !name.is_root() {
            return Ok(Judged::bogus(Bogus::new(
                ede::DNSSEC_BOGUS,
                "a DS denial from the zone itself, not its parent",
            )));
        }
        let keys = match self.zone_trust(task, &zone, now, budget, 0)? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok(Judged::insecure()),
            ZoneTrust::Bogus(b) => return Ok(Judged::bogus(b)),
        };
        let proof = match verified_proofs(
            &mut self.sig_memo,
            soa,
            authority,
            &zone,
            &keys,
            now,
            budget,
        ) {
            Ok(p) => p,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        let qtype = task.qtype;
        let proven = if !proof.nsec.is_empty() {
            let records = &proof.nsec;
            if nxdomain {
                nsec::prove_nxdomain(name, records).map(|_| Nsec3Proof::Proven)
            } else {
                nsec::prove_nodata(name, qtype, records)
                    .or_else(|_| nsec::prove_wildcard_nodata(name, qtype, records))
                    .map(|()| Nsec3Proof::Proven)
            }
        } else if !proof.nsec3.is_empty() {
            let records = &proof.nsec3;
            if nxdomain {
                nsec3::prove_nxdomain(name, &zone, records, budget)
            } else {
                match nsec3::prove_nodata(name, qtype, &zone, records, budget) {
                    Ok(p) => Ok(p),
                    Err(_) => nsec3::prove_wildcard_nodata(name, qtype, &zone, records, budget),
                }
            }
        } else {
            Err(NSEC_MISSING)
        };
        Ok(match proven {
            Ok(Nsec3Proof::Proven) => Judged::secure(proof.ttl),
            Ok(Nsec3Proof::Insecure) => Judged::insecure(),
            Err(b) => Judged::bogus(b),
        })
    }
}

/// The verified NSEC and NSEC3 records of a denial, and how long the
/// proof may be kept.
pub(super) struct Proofs {
    pub(super) nsec: Vec<NsecRecord>,
    pub(super) nsec3: Vec<Nsec3Record>,
    pub(super) ttl: u32,
}

/// The NSEC and NSEC3 sets among `sets` (and `soa`, when given), each
/// verified with `zone`'s keys: one that does not verify makes the denial
/// bogus.
pub(super) fn verified_proofs(
    memo: &mut SignatureMemo,
    soa: Option<&RrSet>,
    sets: &[RrSet],
    zone: &Name,
    keys: &[Dnskey],
    now: Millis,
    budget: &mut Budget,
) -> Result<Proofs, Bogus> {
    let mut proofs = Proofs {
        nsec: Vec::new(),
        nsec3: Vec::new(),
        ttl: u32::MAX,
    };
    if let Some(soa) = soa {
        let v = memo.verify(soa, &soa.rrsigs(), zone, keys, now, budget)?;
        proofs.ttl = v.ttl;
    }
    for set in sets {
        if !matches!(set.rtype, Rtype::NSEC | Rtype::NSEC3) || !set.owner.ends_with(zone) {
            continue;
        }
        let v = memo.verify(set, &set.rrsigs(), zone, keys, now, budget)?;
        proofs.ttl = proofs.ttl.min(v.ttl);
        for r in set.typed() {
            match r {
                Rdata::Nsec(nsec) => proofs.nsec.push(NsecRecord {
                    owner: set.owner.to_lowercase(),
                    nsec,
                }),
                Rdata::Nsec3(n3) => {
                    if let Some(rec) = Nsec3Record::new(&set.owner, n3) {
                        proofs.nsec3.push(rec);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(proofs)
}

/// The zone that signed a denial: its SOA's signer, or without a SOA (a
/// bare DS denial, a referral's proof) the signer of its NSEC or NSEC3
/// records. `None` when what should be signed is not.
pub(super) fn denial_signer(soa: Option<&RrSet>, sets: &[RrSet]) -> Option<Name> {
    let signer_of = |set: &RrSet| {
        set.rrsigs()
            .into_iter()
            .map(|s| s.signer.to_lowercase())
            .find(|z| set.owner.ends_with(z))
    };
    match soa {
        Some(soa) => signer_of(soa).filter(|z| *z == soa.owner),
        None => sets
            .iter()
            .filter(|s| matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3))
            .find_map(signer_of),
    }
}

/// Where data of `rtype` at `name` lives: a DS set (or its absence) in
/// the parent's zone (RFC 4035 §2.4), all else at the name.
pub(super) fn parent_side(name: &Name, rtype: Rtype) -> Name {
    match name.parent() {
        Some(parent) if rtype == Rtype::DS => parent,
        _ => name.clone(),
    }
}

/// The name a denial is about: where the answer's chain ends.
pub(super) fn denied_name(qname: &Name, answer: &[RrSet]) -> Name {
    answer
        .iter()
        .rev()
        .find(|s| s.rtype == Rtype::CNAME)
        .and_then(|s| s.target_names().into_iter().next())
        .unwrap_or_else(|| qname.clone())
        .to_lowercase()
}
