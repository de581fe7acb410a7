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
//! NSEC lacks (RFC 8198 §5.3). NSEC3 spans are used the same way, over
//! hashed names with the closest-encloser proof (RFC 5155 §8.3), except
//! under an opt-out span (a name there may be an unsigned delegation) or
//! past 150 iterations (RFC 9276, as validation itself); the hashes one
//! lookup computes are bounded.

use std::collections::{BTreeMap, HashMap};

use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Name, Rcode, Rtype};

use crate::cache::Flushed;
use crate::forget::related;
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::validate::nsec::{blocks_below, closest_encloser, covers, wildcard_at, NsecRecord};
use crate::validate::nsec3::{Nsec3Record, MAX_ITERATIONS};
use crate::Millis;
use bulwark_crypto::nsec3_hash;

/// The share of the cache's octets the spans and wildcards may take (they
/// are data the cache holds too, kept in another order).
const SHARE_OF_CACHE: usize = 8;
/// NSEC3 hashes one lookup may compute (the name, its ancestors down to
/// the closest encloser, the wildcard): CVE-2023-50868's lesson.
const MAX_HASHES: u32 = 16;

/// One zone's secure denials.
#[derive(Debug, Default)]
struct ZoneSpans {
    /// The zone's SOA (with its signatures) and until when it holds.
    soa: Option<(RrSet, Millis)>,
    /// NSEC records by owner, in canonical order (RFC 4034 §6.1): the
    /// RRset as received (signatures kept, for DO clients), and until when.
    nsec: BTreeMap<Name, (RrSet, NsecRecord, Millis)>,
    /// NSEC3 records by hash, in hash order, likewise.
    nsec3: BTreeMap<Vec<u8>, (RrSet, Nsec3Record, Millis)>,
}

/// The spans of every zone learned from.
#[derive(Debug)]
pub(crate) struct Aggressive {
    zones: HashMap<Name, ZoneSpans>,
    /// Wildcards' RRsets, under the wildcard's own name (`*.` and its
    /// closest encloser), with their signatures, and until when.
    wildcards: HashMap<(Name, Rtype), (RrSet, Millis)>,
    /// Octets held (as [`RrSet::weight`] counts them), and the most.
    bytes: usize,
    max_bytes: usize,
}

impl Aggressive {
    /// Spans and wildcards within a share of `cache_bytes`.
    pub(crate) fn new(cache_bytes: usize) -> Aggressive {
        Aggressive {
            zones: HashMap::new(),
            wildcards: HashMap::new(),
            bytes: 0,
            max_bytes: cache_bytes / SHARE_OF_CACHE,
        }
    }

    /// Keeps the NSEC records of `authority`, the proof of a denial in
    /// `zone` that validation found secure, and the zone's SOA.
    pub(crate) fn learn(&mut self, zone: &Name, authority: &[RrSet], now: Millis) {
        let nsecs: Vec<&RrSet> = authority
            .iter()
            .filter(|s| matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3) && s.owner.ends_with(zone))
            .collect();
        if nsecs.is_empty() {
            return;
        }
        if self.bytes >= self.max_bytes {
            self.zones.clear();
            self.wildcards.clear();
            self.bytes = 0;
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
            if let Some(Rdata::Nsec3(n3)) = set.typed().next() {
                let Some(record) = Nsec3Record::new(&owner, n3) else {
                    continue;
                };
                let hash = record.hash.clone();
                if spans
                    .nsec3
                    .insert(hash, (set.clone(), record, until(set.ttl)))
                    .is_none()
                {
                    self.bytes = self.bytes.saturating_add(set.weight());
                }
                continue;
            }
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
                self.bytes = self.bytes.saturating_add(set.weight());
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
        if self.bytes >= self.max_bytes {
            self.zones.clear();
            self.wildcards.clear();
            self.bytes = 0;
        }
        self.bytes = self.bytes.saturating_add(set.weight());
        let mut kept = set.clone();
        kept.owner = wildcard.clone();
        let until = now.saturating_add(u64::from(set.ttl).saturating_mul(1000));
        self.wildcards.insert((wildcard, set.rtype), (kept, until));
        true
    }

    /// Forgets what could speak for a flushed name: the spans of every
    /// zone at or above it (an ancestor's span may deny a name a zone's
    /// operator has just added) and below it, and the wildcards whose
    /// closest encloser is so placed. A zone flush reaches the zones below
    /// it too; flushing one name, only those that hold it.
    pub(crate) fn forget(&mut self, flushed: &Flushed) {
        match flushed {
            Flushed::All => {
                self.zones.clear();
                self.wildcards.clear();
            }
            Flushed::Zone(zone) => {
                self.zones.retain(|z, _| !related(z, zone));
                self.wildcards
                    .retain(|(w, _), _| w.parent().is_none_or(|e| !related(&e, zone)));
            }
            Flushed::Name(name) => {
                self.zones.retain(|z, _| !name.ends_with(z));
                self.wildcards
                    .retain(|(w, _), _| w.parent().is_none_or(|e| !name.ends_with(&e)));
            }
        }
        let spans = self.zones.values().flat_map(|z| {
            z.nsec
                .values()
                .map(|(set, ..)| set.weight())
                .chain(z.nsec3.values().map(|(set, ..)| set.weight()))
        });
        let wildcards = self.wildcards.values().map(|(set, _)| set.weight());
        self.bytes = spans.chain(wildcards).fold(0, usize::saturating_add);
    }

    /// The answer the spans give to `qname`/`qtype`, if they give one: a
    /// secure NXDOMAIN or NODATA with the SOA and the NSEC records that
    /// prove it, or a wildcard's data (or CNAME) made for the name, with
    /// the NSEC that proves the name itself does not exist (RFC 8198
    /// §5.3).
    pub(crate) fn answer(&self, qname: &Name, qtype: Rtype, now: Millis) -> Option<Resolution> {
        let qname = qname.to_lowercase();
        // A DS set lives in the parent (RFC 4035 §2.4): a zone's own apex
        // records never deny it (RFC 6840 §4.1).
        let (zone, spans) = if qtype == Rtype::DS {
            let (zone, spans) = self.zone_of(&qname.parent()?)?;
            (zone, spans)
        } else {
            self.zone_of(&qname)?
        };
        // A denial needs the SOA; a wildcard's data does not.
        let soa = spans.soa.as_ref().filter(|(_, until)| *until > now);
        if spans.nsec.is_empty() {
            return self.answer_hashed(zone, spans, &qname, qtype, now);
        }
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
        if let Some(rtype) = self.held_wildcard(&wildcard, qtype, now) {
            return self.expand(&wildcard, rtype, &qname, cover_set, *cover_until, now);
        }
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

    /// The answer NSEC3 spans give (RFC 5155 §8.3–8.7 over what is held):
    /// NODATA from the record matching the name; NXDOMAIN from a closest
    /// encloser, the next closer name covered and the wildcard covered; a
    /// wildcard's data or NODATA when the wildcard's record matches.
    fn answer_hashed(
        &self,
        zone: &Name,
        spans: &ZoneSpans,
        qname: &Name,
        qtype: Rtype,
        now: Millis,
    ) -> Option<Resolution> {
        let (_, first, _) = spans.nsec3.values().next()?;
        let (salt, iterations) = (first.nsec3.salt.clone(), first.nsec3.iterations);
        if iterations > MAX_ITERATIONS || !qname.ends_with(zone) {
            return None;
        }
        let soa = spans.soa.as_ref().filter(|(_, until)| *until > now);
        let mut hashes = 0u32;
        let mut hash = |name: &Name| -> Option<Vec<u8>> {
            hashes = hashes.saturating_add(1);
            (hashes <= MAX_HASHES).then(|| nsec3_hash(name.as_wire(), &salt, iterations).to_vec())
        };
        let fresh = |h: &[u8]| spans.nsec3.get(h).filter(|(_, _, until)| *until > now);
        // The record whose span holds `h`: the last one before it in hash
        // order, or the last of all (the chain wraps).
        let covering = |h: &[u8]| {
            spans
                .nsec3
                .range(..h.to_vec())
                .next_back()
                .or_else(|| spans.nsec3.iter().next_back())
                .map(|(_, e)| e)
                .filter(|(_, r, until)| *until > now && r.covers(h))
        };
        let q = hash(qname)?;
        // A wildcard whose data was seen secure answers a name its span
        // hides: the next closer name below the wildcard's parent covered
        // is the whole proof (RFC 5155 §8.8); an expansion's proof carries
        // no record of the wildcard or its parent, so none is needed here.
        if fresh(&q).is_none() {
            let mut next_closer = qname.clone();
            let mut at = qname.parent();
            while let Some(parent) = at.filter(|p| p.ends_with(zone)) {
                let held = wildcard_at(&parent)
                    .and_then(|w| self.held_wildcard(&w, qtype, now).map(|t| (w, t)));
                if let Some((wildcard, rtype)) = held {
                    let nc = covering(&hash(&next_closer)?).filter(|nc| !nc.1.opt_out());
                    if let Some(nc) = nc {
                        return self.expand(&wildcard, rtype, qname, &nc.0, nc.2, now);
                    }
                }
                next_closer = parent.clone();
                at = parent.parent();
            }
        }
        if let Some((set, record, until)) = fresh(&q) {
            let t = &record.nsec3.types;
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
        // The closest encloser: the longest ancestor whose hash a record
        // matches; the next closer name, one label longer, must be covered.
        let mut next_closer = qname.clone();
        let mut at = qname.parent();
        let (encloser, ce) = loop {
            let candidate = at?;
            if !candidate.ends_with(zone) {
                return None;
            }
            if let Some(found) = fresh(&hash(&candidate)?) {
                break (candidate, found);
            }
            next_closer = candidate.clone();
            at = candidate.parent();
        };
        let t = &ce.1.nsec3.types;
        if t.contains(Rtype::DNAME) || (t.contains(Rtype::NS) && !t.contains(Rtype::SOA)) {
            return None;
        }
        let nc = covering(&hash(&next_closer)?)?;
        if nc.1.opt_out() {
            // An unsigned delegation may be there: not for this cache.
            return None;
        }
        let wildcard = wildcard_at(&encloser)?;
        let w = hash(&wildcard)?;
        if let Some((wild_set, wild, wild_until)) = fresh(&w) {
            let t = &wild.nsec3.types;
            if t.contains(qtype) || t.contains(Rtype::CNAME) {
                let rtype = if t.contains(qtype) {
                    qtype
                } else {
                    Rtype::CNAME
                };
                return self.expand(&wildcard, rtype, qname, &nc.0, nc.2, now);
            }
            let (soa, soa_until) = soa?;
            let until = nc.2.min(ce.2).min(*wild_until).min(*soa_until);
            let proof = distinct(&[&ce.0, &nc.0, wild_set]);
            return Some(negative(Rcode::NOERROR, soa, &proof, until, now));
        }
        let wc = covering(&w)?;
        let (soa, soa_until) = soa?;
        let until = nc.2.min(ce.2).min(wc.2).min(*soa_until);
        let proof = distinct(&[&ce.0, &nc.0, &wc.0]);
        Some(negative(Rcode::NXDOMAIN, soa, &proof, until, now))
    }

    /// The type of the held RRset of `wildcard` that answers `qtype`: the
    /// type itself, or a CNAME.
    fn held_wildcard(&self, wildcard: &Name, qtype: Rtype, now: Millis) -> Option<Rtype> {
        [qtype, Rtype::CNAME].into_iter().find(|t| {
            self.wildcards
                .get(&(wildcard.clone(), *t))
                .is_some_and(|(_, until)| *until > now)
        })
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

/// The sets, each once (one record may prove two things).
fn distinct<'a>(sets: &[&'a RrSet]) -> Vec<&'a RrSet> {
    let mut out: Vec<&RrSet> = Vec::new();
    for s in sets {
        if !out.iter().any(|o| o.owner == s.owner) {
            out.push(s);
        }
    }
    out
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
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
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
        let mut a = Aggressive::new(1 << 20);
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
        // The zone's own apex NSEC cannot deny its DS (RFC 6840 §4.1): that
        // is the parent's to say.
        assert!(a.answer(&name("example."), Rtype::DS, 1000).is_none());
        // Out of the zone, or once the records expire: nothing.
        assert!(a.answer(&name("b.other."), Rtype::A, 1000).is_none());
        assert!(a.answer(&name("b.example."), Rtype::A, 301_000).is_none());
    }

    /// An NSEC3 chain (no opt-out, no salt, no iterations) over `names`,
    /// each with `types`, and the SOA: as a secure denial brings them.
    fn nsec3_chain(names: &[(&str, &[Rtype])], flags: u8) -> Vec<RrSet> {
        use bulwark_proto::encoding::base32hex_encode;
        use bulwark_proto::rdata::Nsec3;
        let mut hashed: Vec<(Vec<u8>, &[Rtype])> = names
            .iter()
            .map(|(n, t)| (nsec3_hash(name(n).as_wire(), &[], 0).to_vec(), *t))
            .collect();
        hashed.sort();
        let mut sets = vec![soa()];
        for (i, (h, types)) in hashed.iter().enumerate() {
            let next = &hashed[(i + 1) % hashed.len()].0;
            let owner = format!("{}.example.", base32hex_encode(h).to_lowercase());
            let mut set = RrSet::new(name(&owner), Rtype::NSEC3, 300);
            let data = Rdata::Nsec3(Nsec3 {
                hash_algorithm: 1,
                flags,
                iterations: 0,
                salt: Vec::new(),
                next_hashed: next.clone(),
                types: TypeBitmap::new(types.iter().copied()),
            });
            set.push(data.to_wire(), 300);
            sets.push(set);
        }
        sets
    }

    #[test]
    fn nsec3_spans_deny_what_they_prove_and_opt_out_spans_nothing() {
        let zone: &[(&str, &[Rtype])] = &[
            ("example.", &[Rtype::SOA, Rtype::NS]),
            ("a.example.", &[Rtype::A]),
            ("w.example.", &[]),
            ("*.w.example.", &[Rtype::TXT]),
        ];
        let mut a = Aggressive::new(1 << 20);
        a.learn(&name("example."), &nsec3_chain(zone, 0), 0);
        let nx = a.answer(&name("b.example."), Rtype::A, 1000).unwrap();
        assert_eq!(nx.rcode, Rcode::NXDOMAIN);
        // The SOA and the closest encloser's, the next closer's and the
        // wildcard's records (some may be one and the same).
        assert!((2..=4).contains(&nx.authority.len()), "{:?}", nx.authority);
        let nodata = a.answer(&name("a.example."), Rtype::AAAA, 1000).unwrap();
        assert_eq!((nodata.rcode, nodata.answer.len()), (Rcode::NOERROR, 0));
        assert!(a.answer(&name("a.example."), Rtype::A, 1000).is_none());
        // Under *.w.example.: a TXT question is the wildcard's to answer,
        // an A question a wildcard NODATA.
        assert!(a.answer(&name("x.w.example."), Rtype::TXT, 1000).is_none());
        let wild = a.answer(&name("x.w.example."), Rtype::A, 1000).unwrap();
        assert_eq!((wild.rcode, wild.answer.len()), (Rcode::NOERROR, 0));

        let mut opt_out = Aggressive::new(1 << 20);
        opt_out.learn(&name("example."), &nsec3_chain(zone, 1), 0);
        assert!(opt_out
            .answer(&name("b.example."), Rtype::A, 1000)
            .is_none());
        // A name's own record still says what it lacks.
        assert!(opt_out
            .answer(&name("a.example."), Rtype::AAAA, 1000)
            .is_some());
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

    /// A wildcard expansion of `*.w.example.`, learned as validation does.
    fn with_wildcard(mut a: Aggressive) -> Aggressive {
        let mut txt = RrSet::new(name("x.w.example."), Rtype::TXT, 300);
        txt.push(vec![2, b'h', b'i'], 300);
        assert!(a.learn_wildcard(&txt, 2, 0));
        a
    }

    #[test]
    fn a_flush_forgets_the_spans_and_wildcards_that_speak_for_it() {
        let denied = |a: &Aggressive, n: &str| a.answer(&name(n), Rtype::A, 1000).is_some();
        // Another zone's spans are not the flushed one's business.
        let mut a = with_wildcard(learned());
        a.forget(&Flushed::Zone(name("other.")));
        a.forget(&Flushed::Name(name("b.other.")));
        assert!(denied(&a, "b.example."));
        assert!(a.answer(&name("y.w.example."), Rtype::TXT, 1000).is_some());
        // A zone below example. is in example.'s spans: they go, and with
        // them the proof a wildcard answer needs; the wildcard, whose
        // encloser is elsewhere, stays, and only its octets are counted.
        a.forget(&Flushed::Zone(name("sub.example.")));
        assert!(!denied(&a, "b.example."));
        assert!(a.answer(&name("y.w.example."), Rtype::TXT, 1000).is_none());
        assert_eq!(a.bytes, with_wildcard(Aggressive::new(1 << 20)).bytes);
        a.forget(&Flushed::Zone(name("w.example.")));
        assert_eq!(a.bytes, 0);

        let mut a = with_wildcard(learned());
        a.forget(&Flushed::Name(name("b.example.")));
        assert!(!denied(&a, "b.example."));
        assert_eq!(a.bytes, with_wildcard(Aggressive::new(1 << 20)).bytes);
        // The wildcard's own name flushed: it goes too.
        a.forget(&Flushed::Name(name("*.w.example.")));
        assert_eq!(a.bytes, 0);

        let mut a = with_wildcard(learned());
        a.forget(&Flushed::All);
        assert!(!denied(&a, "b.example."));
        assert_eq!(a.bytes, 0);
    }
}
