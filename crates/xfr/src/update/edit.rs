//! A working copy of a zone that UPDATE messages change: an overlay of the
//! RRsets they touched over the zone, which is never copied (it may hold a
//! million records), and the diff to the next version when the batch is done.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use bulwark_proto::rdata::canonical_wire;
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rdata, Record, Rtype};
use bulwark_zone::diff::soa_record;
use bulwark_zone::zone::Node;
use bulwark_zone::{Zone, ZoneDiff};

use crate::serial::{serial_gt, SerialPolicy};

/// One record of an edited RRset: its TTL and uncompressed wire rdata.
///
/// The records of an RRset share one TTL (RFC 2181 §5.2), which every record
/// here carries; RRSIGs are the exception, as each takes the TTL of the RRset
/// it covers (RFC 4034 §3) and all RRSIGs at a name are one RRset here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EditedRecord {
    pub ttl: u32,
    pub rdata: Box<[u8]>,
}

/// A zone with the changes of the UPDATE messages applied so far.
///
/// Create one per batch with [`ZoneEdit::new`], [`apply`](ZoneEdit::apply)
/// each message in order, then [`finish`](ZoneEdit::finish).
#[derive(Debug, Clone)]
pub struct ZoneEdit<'z> {
    zone: &'z Zone,
    /// The RRsets changed so far, by lowercased owner and type, in canonical
    /// owner order; each holds its records in RFC 4034 §6.3 canonical order.
    /// No records: the RRset is gone.
    changed: BTreeMap<Name, BTreeMap<Rtype, Vec<EditedRecord>>>,
}

impl<'z> ZoneEdit<'z> {
    /// A working copy of `zone` with no changes.
    pub fn new(zone: &'z Zone) -> ZoneEdit<'z> {
        ZoneEdit {
            zone,
            changed: BTreeMap::new(),
        }
    }

    /// The zone the edit started from.
    pub fn zone(&self) -> &'z Zone {
        self.zone
    }

    /// The nodes of the zone holding `owner`'s records (lowercased): its node
    /// in the namespace and, for a hashed owner, its entry in the NSEC3
    /// chain, which the zone keeps apart (see `bulwark_zone::nsec3`).
    fn base_nodes(&self, owner: &Name) -> [Option<&'z Node>; 2] {
        [self.zone.node(owner), self.chain_node(owner)]
    }

    /// The NSEC3 chain's entry for `owner`, when `owner` is a direct child of
    /// the apex whose label is a base32hex hash (RFC 5155 §3.3) in the chain.
    fn chain_node(&self, owner: &Name) -> Option<&'z Node> {
        self.zone.nsec3_node(owner)
    }

    /// The records of `rtype` at `owner` (lowercased) as the edit stands, with
    /// their TTLs, in canonical order.
    pub(super) fn records(&self, owner: &Name, rtype: Rtype) -> Vec<(u32, &[u8])> {
        if let Some(set) = self.changed.get(owner).and_then(|sets| sets.get(&rtype)) {
            return set.iter().map(|r| (r.ttl, &*r.rdata)).collect();
        }
        self.base_records(owner, rtype)
    }

    /// The zone's own records of `rtype` at `owner`, with the TTL each is
    /// served with.
    fn base_records(&self, owner: &Name, rtype: Rtype) -> Vec<(u32, &'z [u8])> {
        let mut out = Vec::new();
        for node in self.base_nodes(owner).into_iter().flatten() {
            if let Some(set) = node.rrset(rtype) {
                out.extend(set.rdatas().map(|rd| (node.record_ttl(set, rd), rd)));
            }
        }
        out
    }

    /// Whether `owner` (lowercased) has an RRset of `rtype`.
    pub(super) fn has_rrset(&self, owner: &Name, rtype: Rtype) -> bool {
        match self.changed.get(owner).and_then(|sets| sets.get(&rtype)) {
            Some(set) => !set.is_empty(),
            None => self
                .base_nodes(owner)
                .into_iter()
                .flatten()
                .any(|n| n.has(rtype)),
        }
    }

    /// The types of the RRsets at `owner` (lowercased), ascending.
    pub(super) fn types(&self, owner: &Name) -> Vec<Rtype> {
        let mut types: BTreeSet<Rtype> = self
            .base_nodes(owner)
            .into_iter()
            .flatten()
            .flat_map(|n| n.rrsets().iter().map(|s| s.rtype()))
            .collect();
        if let Some(sets) = self.changed.get(owner) {
            for (&rtype, set) in sets {
                if set.is_empty() {
                    types.remove(&rtype);
                } else {
                    types.insert(rtype);
                }
            }
        }
        types.into_iter().collect()
    }

    /// The RRset of `rtype` at `owner` (lowercased) to change, copied from
    /// the zone the first time.
    fn set_mut(&mut self, owner: &Name, rtype: Rtype) -> &mut Vec<EditedRecord> {
        if !self
            .changed
            .get(owner)
            .is_some_and(|sets| sets.contains_key(&rtype))
        {
            let mut copy: Vec<EditedRecord> = self
                .base_records(owner, rtype)
                .into_iter()
                .map(|(ttl, rd)| EditedRecord {
                    ttl,
                    rdata: rd.into(),
                })
                .collect();
            // The NSEC3 chain's RRSIGs join the name's own: keep one order.
            copy.sort_by(|a, b| {
                canonical_wire(rtype, &a.rdata).cmp(&canonical_wire(rtype, &b.rdata))
            });
            self.changed
                .entry(owner.clone())
                .or_default()
                .insert(rtype, copy);
        }
        self.changed
            .entry(owner.clone())
            .or_default()
            .entry(rtype)
            .or_default()
    }

    /// Adds one record to an RRset (RFC 2136 §3.4.2.2). A record already there
    /// (compared as RFC 2136 §1.1.1 says, names without case) with the same
    /// TTL is a no-op. Otherwise the RRset takes the new record's TTL, as BIND
    /// and Knot do: RFC 2181 §5.2 gives all records of an RRset one TTL, and
    /// the client's latest word is the one to keep. An RRSIG changes only its
    /// own TTL (see [`EditedRecord`]). Returns whether anything changed.
    pub(super) fn add_record(
        &mut self,
        owner: &Name,
        rtype: Rtype,
        ttl: u32,
        rdata: &[u8],
    ) -> bool {
        let key = canonical_wire(rtype, rdata);
        let current = self.records(owner, rtype);
        let found = current
            .iter()
            .position(|(_, rd)| canonical_wire(rtype, rd) == key);
        let unchanged = match found.and_then(|i| current.get(i)) {
            Some(&(old_ttl, _)) if rtype == Rtype::RRSIG => old_ttl == ttl,
            Some(_) => current.iter().all(|&(t, _)| t == ttl),
            None => false,
        };
        if unchanged {
            return false;
        }
        let set = self.set_mut(owner, rtype);
        let at = set.partition_point(|r| canonical_wire(rtype, &r.rdata) < key);
        let present = set
            .get(at)
            .is_some_and(|r| canonical_wire(rtype, &r.rdata) == key);
        if !present {
            set.insert(
                at,
                EditedRecord {
                    ttl,
                    rdata: rdata.into(),
                },
            );
        }
        if rtype == Rtype::RRSIG {
            if let Some(r) = set.get_mut(at) {
                r.ttl = ttl;
            }
        } else {
            for r in set.iter_mut() {
                r.ttl = ttl;
            }
        }
        true
    }

    /// Makes `rdata` the only record of an RRset that holds one record at most
    /// (SOA, CNAME, DNAME), replacing what was there. Returns whether
    /// anything changed.
    pub(super) fn replace_set(
        &mut self,
        owner: &Name,
        rtype: Rtype,
        ttl: u32,
        rdata: &[u8],
    ) -> bool {
        let current = self.records(owner, rtype);
        let same = matches!(current.as_slice(), [(t, rd)] if *t == ttl && canonical_wire(rtype, rd) == canonical_wire(rtype, rdata));
        if same {
            return false;
        }
        let set = self.set_mut(owner, rtype);
        set.clear();
        set.push(EditedRecord {
            ttl,
            rdata: rdata.into(),
        });
        true
    }

    /// Deletes an RRset (RFC 2136 §3.4.2.3). Returns whether it was there.
    pub(super) fn delete_set(&mut self, owner: &Name, rtype: Rtype) -> bool {
        if !self.has_rrset(owner, rtype) {
            return false;
        }
        // Nothing of the old RRset is needed: no copy.
        self.changed
            .entry(owner.clone())
            .or_default()
            .insert(rtype, Vec::new());
        true
    }

    /// Deletes the records of `rtype` at `owner` that `matches` accepts
    /// (given their rdata). Returns how many went.
    pub(super) fn delete_records(
        &mut self,
        owner: &Name,
        rtype: Rtype,
        matches: impl Fn(&[u8]) -> bool,
    ) -> usize {
        let doomed = self
            .records(owner, rtype)
            .iter()
            .filter(|(_, rd)| matches(rd))
            .count();
        if doomed == 0 {
            return 0;
        }
        self.set_mut(owner, rtype).retain(|r| !matches(&r.rdata));
        doomed
    }

    /// Ends the batch: the diff from the zone's version to the new one, or
    /// `None` when the edit leaves the zone as it was.
    ///
    /// The new SOA is the edit's SOA with the serial `policy` picks after the
    /// zone's at time `now`, unless an update set a newer serial itself (RFC
    /// 2136 §3.4.2.2), which is then kept. `removed` and `added` hold the
    /// net change, without the SOA: a record added and deleted again within
    /// the batch is in neither. A TTL change replaces the whole RRset, and
    /// RRSIGs whose covered RRset changed TTL are replaced too (they take its
    /// TTL, RFC 4034 §3), as `bulwark_zone::diff_zones` would say it.
    pub fn finish(self, policy: SerialPolicy, now: u64) -> Option<ZoneDiff> {
        let old_soa = soa_record(self.zone)?;
        let Rdata::Soa(old_fields) = &old_soa.rdata else {
            return None;
        };
        let old_serial = old_fields.serial;
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for (owner, sets) in &self.changed {
            let mut rtypes: BTreeSet<Rtype> = sets.keys().copied().collect();
            rtypes.insert(Rtype::RRSIG);
            rtypes.remove(&Rtype::SOA);
            for rtype in rtypes {
                self.diff_rrset(owner, rtype, &mut removed, &mut added);
            }
        }
        let apex = self.zone.apex();
        let (soa_ttl, soa_rdata) = self.records(apex, Rtype::SOA).first().copied()?;
        let soa_changed =
            self.base_records(apex, Rtype::SOA).first() != Some(&(soa_ttl, soa_rdata));
        if removed.is_empty() && added.is_empty() && !soa_changed {
            return None;
        }
        let Rdata::Soa(mut soa) = decode(Rtype::SOA, soa_rdata) else {
            return None;
        };
        if !serial_gt(soa.serial, old_serial) {
            soa.serial = policy.next(old_serial, now);
        }
        let new_soa = Record {
            owner: apex.clone(),
            class: self.zone.class(),
            ttl: soa_ttl,
            rdata: Rdata::Soa(soa),
        };
        Some(ZoneDiff {
            old_soa,
            new_soa,
            removed,
            added,
        })
    }

    /// The net change of one RRset: compared by canonical rdata (RFC 4034
    /// §6.2), a TTL change replacing every record.
    fn diff_rrset(
        &self,
        owner: &Name,
        rtype: Rtype,
        removed: &mut Vec<Record>,
        added: &mut Vec<Record>,
    ) {
        let old = self.base_records(owner, rtype);
        let new: Vec<(u32, &[u8])> = self
            .records(owner, rtype)
            .into_iter()
            .map(|(ttl, rd)| (self.served_ttl(owner, rtype, ttl, rd), rd))
            .collect();
        let whole_set_ttl_changed = rtype != Rtype::RRSIG
            && matches!((old.first(), new.first()), (Some(a), Some(b)) if a.0 != b.0);
        // RRSIGs carry their covered RRset's TTL, so theirs is part of what
        // they are; any other RRset's TTL is the set's.
        fn key<'a>(rtype: Rtype, &(ttl, rd): &(u32, &'a [u8])) -> (u32, Cow<'a, [u8]>) {
            let ttl = if rtype == Rtype::RRSIG { ttl } else { 0 };
            (ttl, canonical_wire(rtype, rd))
        }
        let old_keys: BTreeSet<_> = old.iter().map(|r| key(rtype, r)).collect();
        let new_keys: BTreeSet<_> = new.iter().map(|r| key(rtype, r)).collect();
        let class = self.zone.class();
        let record = |&(ttl, rd): &(u32, &[u8])| Record {
            owner: owner.clone(),
            class,
            ttl,
            rdata: decode(rtype, rd),
        };
        removed.extend(
            old.iter()
                .filter(|r| whole_set_ttl_changed || !new_keys.contains(&key(rtype, r)))
                .map(record),
        );
        added.extend(
            new.iter()
                .filter(|r| whole_set_ttl_changed || !old_keys.contains(&key(rtype, r)))
                .map(record),
        );
    }

    /// The TTL a record of the edited zone is served with: its own, except
    /// that an RRSIG takes the TTL of the RRset it covers when there is one
    /// (RFC 4034 §3), as `Node::record_ttl` gives it once the zone is built.
    fn served_ttl(&self, owner: &Name, rtype: Rtype, ttl: u32, rdata: &[u8]) -> u32 {
        if rtype != Rtype::RRSIG {
            return ttl;
        }
        let Some(covered) = rdata.get(..2).and_then(|c| <[u8; 2]>::try_from(c).ok()) else {
            return ttl;
        };
        self.records(owner, Rtype(u16::from_be_bytes(covered)))
            .first()
            .map_or(ttl, |&(t, _)| t)
    }
}

/// Typed rdata from wire form; what does not parse stays opaque (RFC 3597).
fn decode(rtype: Rtype, rd: &[u8]) -> Rdata {
    let mut r = Reader::new(rd);
    Rdata::read(rtype, &mut r, rd.len()).unwrap_or_else(|_| Rdata::Unknown {
        rtype,
        data: rd.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn zone(text: &str) -> Zone {
        let origin: Name = "example.".parse().unwrap();
        let records = bulwark_zone::parse_str(text, &origin, "test").unwrap();
        Zone::build(origin, records).unwrap().0
    }

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    const ZONE: &str = "$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\n";

    #[test]
    fn an_untouched_edit_has_no_diff() {
        let z = zone(ZONE);
        assert!(ZoneEdit::new(&z)
            .finish(SerialPolicy::Increment, 0)
            .is_none());
    }

    #[test]
    fn overlay_answers_from_the_zone_until_a_set_is_touched() {
        let z = zone(ZONE);
        let mut e = ZoneEdit::new(&z);
        let www = n("www.example.");
        assert_eq!(e.records(&www, Rtype::A).len(), 1);
        assert!(e.add_record(&www, Rtype::A, 300, &[192, 0, 2, 9]));
        assert_eq!(e.records(&www, Rtype::A).len(), 2);
        assert!(e.delete_set(&www, Rtype::A));
        assert!(!e.has_rrset(&www, Rtype::A));
        assert!(e.types(&www).is_empty());
        assert!(!e.delete_set(&www, Rtype::A));
        // The zone itself is untouched.
        assert!(z.node(&www).unwrap().has(Rtype::A));
    }

    #[test]
    fn a_change_undone_in_the_same_batch_leaves_no_diff() {
        let z = zone(ZONE);
        let mut e = ZoneEdit::new(&z);
        let www = n("www.example.");
        e.add_record(&www, Rtype::A, 300, &[192, 0, 2, 9]);
        e.delete_records(&www, Rtype::A, |rd| rd == [192, 0, 2, 9]);
        assert!(e.finish(SerialPolicy::Increment, 0).is_none());
    }
}
