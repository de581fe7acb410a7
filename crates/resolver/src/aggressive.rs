//! Aggressive use of the DNSSEC-validated cache (RFC 8198): the NSEC
//! records of secure denials are kept in each zone's canonical order, and
//! a question they already answer (a name inside a span they cover, a type
//! the NSEC at the name does not list) is answered from them, NXDOMAIN or
//! NODATA, without asking. Random-subdomain floods against a signed zone
//! then cost its servers one query per span, not one per name.
//!
//! Only what validation found secure is kept, and only while the records
//! and the zone's SOA live (RFC 8198 §5.4: the answer's TTL is the lowest
//! of the SOA's TTL, its MINIMUM and the NSEC's). A name the span covers
//! is only denied if the wildcard its closest encloser would have is
//! covered too; a wildcard known to exist answers a NODATA for a type its
//! NSEC lacks (RFC 8198 §5.3). NSEC3 spans are not used here yet.

use std::collections::{BTreeMap, HashMap};

use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Name, Rcode, Rtype};

use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::validate::nsec::{blocks_below, closest_encloser, covers, wildcard_at, NsecRecord};
use crate::Millis;

/// NSEC records kept at most, over every zone: past it, all go.
const MAX_RECORDS: usize = 200_000;

/// One zone's secure denials.
#[derive(Debug, Default)]
struct ZoneSpans {
    /// The zone's SOA (with its signatures) and until when it holds.
    soa: Option<(RrSet, Millis)>,
    /// NSEC records by owner, in canonical order (RFC 4034 §6.1): the
    /// RRset as received (signatures kept, for DO clients), and until when.
    nsec: BTreeMap<Name, (RrSet, NsecRecord, Millis)>,
}

/// The spans of every zone learned from.
#[derive(Debug, Default)]
pub(crate) struct Aggressive {
    zones: HashMap<Name, ZoneSpans>,
    /// Wildcards' RRsets, under the wildcard's own name (`*.` and its
    /// closest encloser), with their signatures, and until when.
    wildcards: HashMap<(Name, Rtype), (RrSet, Millis)>,
    records: usize,
}

impl Aggressive {
    /// Keeps the NSEC records of `authority`, the proof of a denial in
    /// `zone` that validation found secure, and the zone's SOA.
    pub(crate) fn learn(&mut self, zone: &Name, authority: &[RrSet], now: Millis) {
        let nsecs: Vec<&RrSet> = authority
            .iter()
            .filter(|s| s.rtype == Rtype::NSEC && s.owner.ends_with(zone))
            .collect();
        if nsecs.is_empty() {
            return;
        }
        if self.records >= MAX_RECORDS {
            self.zones.clear();
            self.wildcards.clear();
            self.records = 0;
        }
        let spans = self.zones.entry(zone.to_lowercase()).or_default();
        let until = |ttl: u32| now.saturating_add(u64::from(ttl).saturating_mul(1000));
        if let Some(soa) = authority
            .iter()
            .find(|s| s.rtype == Rtype::SOA && s.owner == *zone)
        {
            spans.soa = Some((soa.clone(), until(soa.ttl)));
        }
        for set in nsecs {
            let owner = set.owner.to_lowercase();
            let Some(Rdata::Nsec(nsec)) = set.typed().next() else {
                continue;
            };
            let record = NsecRecord {
                owner: owner.clone(),
                nsec,
            };
            if spans
                .nsec
                .insert(owner, (set.clone(), record, until(set.ttl)))
                .is_none()
            {
                self.records = self.records.saturating_add(1);
            }
        }
    }

    /// Keeps `set`, found secure, if its signature's `labels` say it is a
    /// wildcard's expansion (RFC 4035 §5.3.4): under the wildcard's name.
    /// Whether it was one.
    pub(crate) fn learn_wildcard(&mut self, set: &RrSet, labels: u8, now: Millis) -> bool {
        let mut suffix = set.owner.to_lowercase();
        if suffix.is_wildcard() || suffix.label_count() <= usize::from(labels) {
            return false;
        }
        while suffix.label_count() > usize::from(labels) {
            let Some(parent) = suffix.parent() else {
                return false;
            };
            suffix = parent;
        }
        let Some(wildcard) = wildcard_at(&suffix) else {
            return false;
        };
        if self.wildcards.len() >= MAX_RECORDS {
            self.wildcards.clear();
        }
        let mut kept = set.clone();
        kept.owner = wildcard.clone();
        let until = now.saturating_add(u64::from(set.ttl).saturating_mul(1000));
        self.wildcards.insert((wildcard, set.rtype), (kept, until));
        true
    }

    /// The answer the spans give to `qname`/`qtype`, if they give one: a
    /// secure NXDOMAIN or NODATA with the SOA and the NSEC records that
    /// prove it, or a wildcard's data (or CNAME) made for the name, with
    /// the NSEC that proves the name itself does not exist (RFC 8198
    /// §5.3).
    pub(crate) fn answer(&self, qname: &Name, qtype: Rtype, now: Millis) -> Option<Resolution> {
        let qname = qname.to_lowercase();
        let (zone, spans) = self.zone_of(&qname)?;
        // A denial needs the SOA; a wildcard's data does not.
        let soa = spans.soa.as_ref().filter(|(_, until)| *until > now);
        let fresh = |owner: &Name| spans.nsec.get(owner).filter(|(_, _, until)| *until > now);
        // The NSEC before the name (or at it), in canonical order; the
        // zone's last NSEC, whose next name wraps to the apex, covers what
        // comes after it.
        let before = |name: &Name| {
            spans
                .nsec
                .range(..=name.clone())
                .next_back()
                .filter(|(_, (_, _, until))| *until > now)
                .map(|(_, e)| e)
        };
        if let Some((set, record, until)) = fresh(&qname) {
            // NODATA: the name exists; the type, and a CNAME instead of
            // it, do not. A delegation's NSEC speaks only for DS.
            let t = &record.nsec.types;
            let parent_side = t.contains(Rtype::NS) && !t.contains(Rtype::SOA);
            if t.contains(qtype) || t.contains(Rtype::CNAME) || (parent_side && qtype != Rtype::DS)
            {
                return None;
            }
            let (soa, soa_until) = soa?;
            return Some(negative(
                Rcode::NOERROR,
                soa,
                &[set],
                (*until).min(*soa_until),
                now,
            ));
        }
        let (cover_set, cover, cover_until) = before(&qname)?;
        if !covers(cover, &qname) || blocks_below(cover, &qname) || !qname.is_below(zone) {
            return None;
        }
        let encloser = closest_encloser(&qname, cover);
        let wildcard = wildcard_at(&encloser)?;
        if let Some((wild_set, wild, wild_until)) = fresh(&wildcard) {
            // The wildcard exists: it answers, unless it lacks the type
            // (a wildcard NODATA, RFC 4035 §3.1.3.4).
            let t = &wild.nsec.types;
            if t.contains(qtype) || t.contains(Rtype::CNAME) {
                let rtype = if t.contains(qtype) {
                    qtype
                } else {
                    Rtype::CNAME
                };
                return self.expand(&wildcard, rtype, &qname, cover_set, *cover_until, now);
            }
            let (soa, soa_until) = soa?;
            let until = (*cover_until).min(*wild_until).min(*soa_until);
            let mut proof = vec![cover_set];
            if wild_set.owner != cover_set.owner {
                proof.push(wild_set);
            }
            return Some(negative(Rcode::NOERROR, soa, &proof, until, now));
        }
        let (wild_set, wild_cover, wild_until) = before(&wildcard)?;
        if !covers(wild_cover, &wildcard) {
            return None;
        }
        let (soa, soa_until) = soa?;
        let until = (*cover_until).min(*wild_until).min(*soa_until);
        let mut proof = vec![cover_set];
        if wild_set.owner != cover_set.owner {
            proof.push(wild_set);
        }
        Some(negative(Rcode::NXDOMAIN, soa, &proof, until, now))
    }

    /// The wildcard's `rtype` RRset made for `qname` (the signatures are
    /// the wildcard's: their label count says so), with `cover`, the NSEC
    /// proving `qname` itself does not exist.
    fn expand(
        &self,
        wildcard: &Name,
        rtype: Rtype,
        qname: &Name,
        cover: &RrSet,
        cover_until: Millis,
        now: Millis,
    ) -> Option<Resolution> {
        let (set, until) = self
            .wildcards
            .get(&(wildcard.clone(), rtype))
            .filter(|(_, until)| *until > now)?;
        let left = (*until).min(cover_until).saturating_sub(now) / 1000;
        let left = u32::try_from(left).unwrap_or(u32::MAX);
        let mut data = set.clone();
        data.owner = qname.clone();
        data.ttl = data.ttl.min(left);
        let mut proof = cover.clone();
        proof.ttl = proof.ttl.min(left);
        let mut r = Resolution::answer(vec![data]).security(Security::Secure);
        r.authority = vec![proof];
        Some(r)
    }

    /// The closest zone enclosing `name` that spans were learned for.
    fn zone_of(&self, name: &Name) -> Option<(&Name, &ZoneSpans)> {
        let mut at = Some(name.clone());
        while let Some(n) = at {
            if let Some((zone, spans)) = self.zones.get_key_value(&n) {
                return Some((zone, spans));
            }
            at = n.parent();
        }
        None
    }
}

/// A synthesised negative answer: the SOA, its TTL the lowest of the
/// SOA's, its MINIMUM and the records' time left (RFC 8198 §5.4), then
/// the proof.
fn negative(rcode: Rcode, soa: &RrSet, proof: &[&RrSet], until: Millis, now: Millis) -> Resolution {
    let left = u32::try_from(until.saturating_sub(now) / 1000).unwrap_or(u32::MAX);
    let minimum = soa
        .typed()
        .find_map(|r| match r {
            Rdata::Soa(s) => Some(s.minimum),
            _ => None,
        })
        .unwrap_or(0);
    let ttl = left.min(minimum).min(soa.ttl);
    let extra: Vec<RrSet> = proof.iter().map(|s| (*s).clone()).collect();
    Resolution::negative(rcode, Vec::new(), &Some(soa.clone()), &extra, ttl)
        .security(Security::Secure)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use bulwark_proto::rdata::{Nsec, Soa, TypeBitmap};

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn nsec(owner: &str, next: &str, types: &[Rtype]) -> RrSet {
        let mut set = RrSet::new(name(owner), Rtype::NSEC, 300);
        let data = Rdata::Nsec(Nsec {
            next: name(next),
            types: TypeBitmap::new(types.iter().copied()),
        });
        set.push(data.to_wire(), 300);
        set
    }

    fn soa() -> RrSet {
        let mut set = RrSet::new(name("example."), Rtype::SOA, 3600);
        let data = Rdata::Soa(Box::new(Soa {
            mname: name("ns.example."),
            rname: name("host.example."),
            serial: 1,
            refresh: 1,
            retry: 1,
            expire: 1,
            minimum: 600,
        }));
        set.push(data.to_wire(), 3600);
        set
    }

    /// example. holds a, d (A only), *.w (TXT), z; the spans learned cover
    /// everything.
    fn learned() -> Aggressive {
        let mut a = Aggressive::default();
        let proof = vec![
            soa(),
            nsec(
                "example.",
                "a.example.",
                &[Rtype::SOA, Rtype::NS, Rtype::NSEC],
            ),
            nsec("a.example.", "d.example.", &[Rtype::A, Rtype::NSEC]),
            nsec("d.example.", "*.w.example.", &[Rtype::A, Rtype::NSEC]),
            nsec("*.w.example.", "z.example.", &[Rtype::TXT, Rtype::NSEC]),
            nsec("z.example.", "example.", &[Rtype::A, Rtype::NSEC]),
        ];
        a.learn(&name("example."), &proof, 0);
        a
    }

    #[test]
    fn a_covered_name_is_nxdomain_and_a_missing_type_nodata() {
        let a = learned();
        let nx = a.answer(&name("b.example."), Rtype::A, 1000).unwrap();
        assert_eq!(nx.rcode, Rcode::NXDOMAIN);
        assert_eq!(nx.security, Security::Secure);
        // The SOA's MINIMUM bounds the TTL (RFC 8198 §5.4).
        assert_eq!(nx.authority[0].ttl, 299);
        let nodata = a.answer(&name("d.example."), Rtype::AAAA, 1000).unwrap();
        assert_eq!((nodata.rcode, nodata.answer.len()), (Rcode::NOERROR, 0));
        // What the NSEC lists is not denied.
        assert!(a.answer(&name("d.example."), Rtype::A, 1000).is_none());
        // Out of the zone, or once the records expire: nothing.
        assert!(a.answer(&name("b.other."), Rtype::A, 1000).is_none());
        assert!(a.answer(&name("b.example."), Rtype::A, 301_000).is_none());
    }

    #[test]
    fn a_name_a_wildcard_would_answer_is_not_denied() {
        let a = learned();
        // x.w.example. is covered, but *.w.example. exists with TXT.
        assert!(a.answer(&name("x.w.example."), Rtype::TXT, 1000).is_none());
        // For a type the wildcard lacks, a wildcard NODATA: the SOA and
        // the wildcard's NSEC, which also covers the name.
        let r = a.answer(&name("x.w.example."), Rtype::A, 1000).unwrap();
        assert_eq!(r.rcode, Rcode::NOERROR);
        assert_eq!(r.authority.len(), 2);
    }
}
