//! The difference between two versions of a zone, in the shape IXFR sends it
//! (RFC 1995 §4): the old SOA, the records removed, the new SOA, the records
//! added. Comparing two zones walks both in canonical order at once, so a diff
//! costs one pass over each and holds only what changed.

use core::cmp::Ordering;
use std::collections::BTreeSet;

use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

use crate::zone::{canonical_cmp_wire, Node, RRset, Zone};

/// What changed from one version of a zone to the next. `removed` and `added`
/// never hold the SOA: it is `old_soa` and `new_soa`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneDiff {
    pub old_soa: Record,
    pub new_soa: Record,
    pub removed: Vec<Record>,
    pub added: Vec<Record>,
}

/// Why a diff cannot be made or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiffError {
    #[error("the zone has no SOA record at its apex")]
    NoSoa,
    /// RFC 1995 §4: a diff applies only to the version it starts from.
    #[error("the diff starts at serial {diff}, the zone is at serial {zone}")]
    SerialMismatch { zone: u32, diff: u32 },
    #[error("the diff removes {0}, which the zone does not hold")]
    MissingRecord(String),
    #[error("the diff adds {0}, which the zone already holds")]
    DuplicateRecord(String),
}

impl ZoneDiff {
    pub fn old_serial(&self) -> u32 {
        soa_serial_of(&self.old_soa).unwrap_or(0)
    }

    pub fn new_serial(&self) -> u32 {
        soa_serial_of(&self.new_soa).unwrap_or(0)
    }

    /// Whether nothing but the SOA changed (or not even that).
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }

    /// Records in the diff, SOAs included: what a journal's size limit counts.
    pub fn record_count(&self) -> usize {
        self.removed
            .len()
            .saturating_add(self.added.len())
            .saturating_add(2)
    }
}

/// The serial of a SOA record (RFC 1035 §3.3.13).
pub fn soa_serial_of(record: &Record) -> Option<u32> {
    match &record.rdata {
        Rdata::Soa(soa) => Some(soa.serial),
        _ => None,
    }
}

/// The apex SOA of `zone` as a record.
pub fn soa_record(zone: &Zone) -> Option<Record> {
    let set = zone.soa()?;
    let rd = set.first()?;
    Some(Record {
        owner: zone.apex().clone(),
        class: zone.class(),
        ttl: set.ttl(),
        rdata: decode(Rtype::SOA, rd),
    })
}

/// What changed from `old` to `new`. A changed TTL is a removal of the whole
/// old RRset and an addition of the new one, as IXFR can only say it so.
pub fn diff_zones(old: &Zone, new: &Zone) -> Result<ZoneDiff, DiffError> {
    let old_soa = soa_record(old).ok_or(DiffError::NoSoa)?;
    let new_soa = soa_record(new).ok_or(DiffError::NoSoa)?;
    let mut diff = ZoneDiff {
        old_soa,
        new_soa,
        removed: Vec::new(),
        added: Vec::new(),
    };
    let class = new.class();
    let mut a = old.raw_nodes_canonical().peekable();
    let mut b = new.raw_nodes_canonical().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((x, _)), Some((y, _))) => canonical_cmp_wire(x, y),
        };
        match order {
            Ordering::Less => {
                if let Some((owner, node)) = a.next() {
                    push_node(&mut diff.removed, owner, node, class);
                }
            }
            Ordering::Greater => {
                if let Some((owner, node)) = b.next() {
                    push_node(&mut diff.added, owner, node, class);
                }
            }
            Ordering::Equal => {
                if let (Some((owner, x)), Some((_, y))) = (a.next(), b.next()) {
                    diff_node(&mut diff, owner, x, y, class);
                }
            }
        }
    }
    Ok(diff)
}

/// Every record of one node but the SOA.
fn push_node(out: &mut Vec<Record>, owner: &[u8], node: &Node, class: Class) {
    let Ok(name) = Name::from_wire(owner) else {
        return;
    };
    for set in node.rrsets() {
        push_rdatas(out, &name, node, set, set.rdatas(), class);
    }
}

fn push_rdatas<'a>(
    out: &mut Vec<Record>,
    owner: &Name,
    node: &Node,
    set: &RRset,
    rdatas: impl Iterator<Item = &'a [u8]>,
    class: Class,
) {
    if set.rtype() == Rtype::SOA {
        return;
    }
    for rd in rdatas {
        out.push(Record {
            owner: owner.clone(),
            class,
            ttl: node.record_ttl(set, rd),
            rdata: decode(set.rtype(), rd),
        });
    }
}

/// The changes at one owner present in both versions. RRsets are stored in
/// type order and their rdata in canonical order, so both are merged.
fn diff_node(diff: &mut ZoneDiff, owner: &[u8], old: &Node, new: &Node, class: Class) {
    if old == new {
        return;
    }
    let Ok(name) = Name::from_wire(owner) else {
        return;
    };
    let mut a = old.rrsets().iter().peekable();
    let mut b = new.rrsets().iter().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(x), Some(y)) => x.rtype().0.cmp(&y.rtype().0),
        };
        match order {
            Ordering::Less => {
                if let Some(set) = a.next() {
                    push_rdatas(&mut diff.removed, &name, old, set, set.rdatas(), class);
                }
            }
            Ordering::Greater => {
                if let Some(set) = b.next() {
                    push_rdatas(&mut diff.added, &name, new, set, set.rdatas(), class);
                }
            }
            Ordering::Equal => {
                let (Some(x), Some(y)) = (a.next(), b.next()) else {
                    break;
                };
                if x == y && (x.rtype() != Rtype::RRSIG || same_rrsig_ttls(old, new, x)) {
                    continue;
                }
                diff_rrset(diff, &name, (old, x), (new, y), class);
            }
        }
    }
}

/// Whether every RRSIG of `set` gets the same TTL in both nodes (they take
/// the covered RRset's TTL, which may have changed while the RRSIGs did not).
fn same_rrsig_ttls(old: &Node, new: &Node, set: &RRset) -> bool {
    set.rdatas()
        .all(|rd| old.record_ttl(set, rd) == new.record_ttl(set, rd))
}

fn diff_rrset(
    diff: &mut ZoneDiff,
    name: &Name,
    (old_node, old): (&Node, &RRset),
    (new_node, new): (&Node, &RRset),
    class: Class,
) {
    let old_rds: BTreeSet<(u32, &[u8])> = old
        .rdatas()
        .map(|rd| (old_node.record_ttl(old, rd), rd))
        .collect();
    let new_rds: BTreeSet<(u32, &[u8])> = new
        .rdatas()
        .map(|rd| (new_node.record_ttl(new, rd), rd))
        .collect();
    // RFC 2181 §5.2: the records of an RRset share one TTL, so a TTL change
    // replaces the RRset. For RRSIGs each record follows its own covered set.
    let ttl_changed = old.rtype() != Rtype::RRSIG && old.ttl() != new.ttl();
    for &(ttl, rd) in &old_rds {
        if ttl_changed || !new_rds.contains(&(ttl, rd)) {
            push_one(&mut diff.removed, name, old.rtype(), ttl, rd, class);
        }
    }
    for &(ttl, rd) in &new_rds {
        if ttl_changed || !old_rds.contains(&(ttl, rd)) {
            push_one(&mut diff.added, name, new.rtype(), ttl, rd, class);
        }
    }
}

fn push_one(out: &mut Vec<Record>, name: &Name, rtype: Rtype, ttl: u32, rd: &[u8], class: Class) {
    if rtype == Rtype::SOA {
        return;
    }
    out.push(Record {
        owner: name.clone(),
        class,
        ttl,
        rdata: decode(rtype, rd),
    });
}

/// Typed rdata from stored wire form; what does not parse stays opaque.
fn decode(rtype: Rtype, rd: &[u8]) -> Rdata {
    let mut r = Reader::new(rd);
    Rdata::read(rtype, &mut r, rd.len()).unwrap_or_else(|_| Rdata::Unknown {
        rtype,
        data: rd.to_vec(),
    })
}

/// The key a record is matched by when a diff is applied: owner (lowercase),
/// type and rdata in canonical form (RFC 4034 §6.2), as RFC 2136 §1.1.1 and
/// RFC 1995 compare records. TTLs are not part of a record's identity.
fn record_key(record: &Record) -> (Vec<u8>, u16, Vec<u8>) {
    let mut rdata = Vec::new();
    record.rdata.write_canonical(&mut rdata);
    (
        record.owner.to_lowercase().as_wire().to_vec(),
        record.rtype().0,
        rdata,
    )
}

/// Applies `diff` to the records of a zone at `diff.old_serial()` (SOA
/// included), giving the records of the new version. Strict: removing a
/// record that is not there, or adding one that is, means the two sides
/// disagree about the zone, and the caller should fall back to a full copy.
pub fn apply_diff(records: Vec<Record>, diff: &ZoneDiff) -> Result<Vec<Record>, DiffError> {
    let zone_serial = records
        .iter()
        .find(|r| r.rtype() == Rtype::SOA)
        .and_then(soa_serial_of)
        .ok_or(DiffError::NoSoa)?;
    if zone_serial != diff.old_serial() {
        return Err(DiffError::SerialMismatch {
            zone: zone_serial,
            diff: diff.old_serial(),
        });
    }
    let mut by_key: std::collections::HashMap<(Vec<u8>, u16, Vec<u8>), Record> = records
        .into_iter()
        .filter(|r| r.rtype() != Rtype::SOA)
        .map(|r| (record_key(&r), r))
        .collect();
    for r in &diff.removed {
        if by_key.remove(&record_key(r)).is_none() {
            return Err(DiffError::MissingRecord(r.to_string()));
        }
    }
    for r in &diff.added {
        if by_key.insert(record_key(r), r.clone()).is_some() {
            return Err(DiffError::DuplicateRecord(r.to_string()));
        }
    }
    let mut out: Vec<Record> = Vec::with_capacity(by_key.len().saturating_add(1));
    out.push(diff.new_soa.clone());
    out.extend(by_key.into_values());
    Ok(out)
}

/// One RRset being edited: its TTL and rdata keyed by canonical form.
struct EditedSet {
    ttl: u32,
    rdatas: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
}

/// Applies `diff` to `zone` itself, giving the new version as a zone: the
/// nodes the diff does not touch are copied as they are, so a small change
/// to a large zone costs a copy of its packed data, not a typed record per
/// name. As strict as [`apply_diff`].
pub fn apply_to_zone(zone: &Zone, diff: &ZoneDiff) -> Result<Zone, DiffError> {
    let zone_serial = zone.serial().ok_or(DiffError::NoSoa)?;
    if zone_serial != diff.old_serial() {
        return Err(DiffError::SerialMismatch {
            zone: zone_serial,
            diff: diff.old_serial(),
        });
    }
    // The changes, by lowercased owner.
    let mut by_owner: std::collections::HashMap<Vec<u8>, Vec<(bool, &Record)>> =
        std::collections::HashMap::new();
    for r in &diff.removed {
        by_owner
            .entry(r.owner.to_lowercase().as_wire().to_vec())
            .or_default()
            .push((false, r));
    }
    for r in &diff.added {
        by_owner
            .entry(r.owner.to_lowercase().as_wire().to_vec())
            .or_default()
            .push((true, r));
    }
    let soa_owner = zone.apex().as_wire().to_vec();
    by_owner.entry(soa_owner.clone()).or_default();
    let mut nodes: Vec<(Vec<u8>, Node)> = Vec::with_capacity(zone.node_count());
    for (owner, node) in zone.raw_nodes_canonical() {
        match by_owner.remove(owner) {
            None if node.is_empty_nonterminal() => {}
            None => nodes.push((owner.to_vec(), node.clone())),
            Some(changes) => {
                let edited = edit_node(Some(node), &changes, owner == soa_owner, &diff.new_soa)?;
                if !edited.is_empty_nonterminal() {
                    nodes.push((owner.to_vec(), edited));
                }
            }
        }
    }
    for (owner, changes) in by_owner {
        let edited = edit_node(None, &changes, owner == soa_owner, &diff.new_soa)?;
        if !edited.is_empty_nonterminal() {
            nodes.push((owner, edited));
        }
    }
    let parts: Vec<(&[u8], Node)> = nodes
        .iter()
        .map(|(o, n)| (o.as_slice(), n.clone()))
        .collect();
    let (zone, _rejected) = Zone::from_parts(zone.apex().clone(), zone.class(), parts);
    Ok(zone)
}

/// One node after its changes; `node` is `None` for a new owner.
fn edit_node(
    node: Option<&Node>,
    changes: &[(bool, &Record)],
    apex: bool,
    new_soa: &Record,
) -> Result<Node, DiffError> {
    let mut sets: std::collections::BTreeMap<u16, EditedSet> = std::collections::BTreeMap::new();
    for set in node.map(Node::rrsets).unwrap_or(&[]) {
        let rdatas = set
            .rdatas()
            .map(|rd| {
                (
                    crate::build::canonical_rdata(set.rtype(), rd).into_owned(),
                    rd.to_vec(),
                )
            })
            .collect();
        sets.insert(
            set.rtype().0,
            EditedSet {
                ttl: set.ttl(),
                rdatas,
            },
        );
    }
    for &(add, r) in changes {
        let rtype = r.rtype();
        let mut wire = Vec::new();
        r.rdata.write_wire(&mut wire);
        let key = crate::build::canonical_rdata(rtype, &wire).into_owned();
        if add {
            let set = sets.entry(rtype.0).or_insert_with(|| EditedSet {
                ttl: r.ttl,
                rdatas: std::collections::BTreeMap::new(),
            });
            // RRSIGs share one stored RRset whose TTL answers never use.
            if rtype != Rtype::RRSIG {
                set.ttl = r.ttl;
            }
            if set.rdatas.insert(key, wire).is_some() {
                return Err(DiffError::DuplicateRecord(r.to_string()));
            }
        } else {
            let removed = sets
                .get_mut(&rtype.0)
                .and_then(|set| set.rdatas.remove(&key));
            if removed.is_none() {
                return Err(DiffError::MissingRecord(r.to_string()));
            }
        }
    }
    if apex {
        let mut wire = Vec::new();
        new_soa.rdata.write_wire(&mut wire);
        let key = crate::build::canonical_rdata(Rtype::SOA, &wire).into_owned();
        let mut rdatas = std::collections::BTreeMap::new();
        rdatas.insert(key, wire);
        sets.insert(
            Rtype::SOA.0,
            EditedSet {
                ttl: new_soa.ttl,
                rdatas,
            },
        );
    }
    let rrsets: Vec<RRset> = sets
        .into_iter()
        .filter(|(_, s)| !s.rdatas.is_empty())
        .map(|(t, s)| RRset::from_rdatas(Rtype(t), s.ttl, s.rdatas.values().map(Vec::as_slice)))
        .collect();
    Ok(Node::new(rrsets))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::parse_str;

    fn zone(text: &str) -> Zone {
        let origin: Name = "example.".parse().unwrap();
        let records = parse_str(text, &origin, "test").unwrap();
        Zone::build(origin, records).unwrap().0
    }

    const V1: &str = "$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\nwww A 192.0.2.3\nold TXT gone\n";
    const V2: &str = "$TTL 300\n@ SOA ns h 2 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nwww A 192.0.2.2\nwww A 192.0.2.4\nnew 600 TXT here\n";

    fn lines(records: &[Record]) -> Vec<String> {
        let mut v: Vec<String> = records.iter().map(ToString::to_string).collect();
        v.sort();
        v
    }

    #[test]
    fn diff_lists_removed_and_added_records_without_the_soa() {
        let d = diff_zones(&zone(V1), &zone(V2)).unwrap();
        assert_eq!((d.old_serial(), d.new_serial()), (1, 2));
        assert_eq!(
            lines(&d.removed),
            [
                "old.example.\t300\tIN\tTXT\t\"gone\"",
                "www.example.\t300\tIN\tA\t192.0.2.3"
            ]
        );
        assert_eq!(
            lines(&d.added),
            [
                "new.example.\t600\tIN\tTXT\t\"here\"",
                "www.example.\t300\tIN\tA\t192.0.2.4"
            ]
        );
    }

    #[test]
    fn a_ttl_change_replaces_the_whole_rrset() {
        let a =
            zone("@ 300 SOA ns h 1 2 3 4 5\n@ 300 NS ns\nns 300 A 192.0.2.1\nns 300 A 192.0.2.9\n");
        let b =
            zone("@ 300 SOA ns h 2 2 3 4 5\n@ 300 NS ns\nns 60 A 192.0.2.1\nns 60 A 192.0.2.9\n");
        let d = diff_zones(&a, &b).unwrap();
        assert_eq!(d.removed.len(), 2);
        assert_eq!(d.added.len(), 2);
        assert!(d.added.iter().all(|r| r.ttl == 60));
    }

    #[test]
    fn identical_zones_differ_only_in_the_soa() {
        let d = diff_zones(&zone(V1), &zone(V1)).unwrap();
        assert!(d.is_empty());
        assert_eq!(d.record_count(), 2);
    }

    #[test]
    fn applying_a_diff_gives_the_new_version() {
        let (a, b) = (zone(V1), zone(V2));
        let d = diff_zones(&a, &b).unwrap();
        let applied = apply_diff(a.records().collect(), &d).unwrap();
        assert_eq!(lines(&applied), lines(&b.records().collect::<Vec<_>>()));
    }

    #[test]
    fn applying_a_diff_to_the_zone_itself_gives_the_new_version() {
        let (a, b) = (zone(V1), zone(V2));
        let d = diff_zones(&a, &b).unwrap();
        let applied = apply_to_zone(&a, &d).unwrap();
        assert_eq!(
            lines(&applied.records().collect::<Vec<_>>()),
            lines(&b.records().collect::<Vec<_>>())
        );
        assert!(diff_zones(&applied, &b).unwrap().is_empty());
        // The empty non-terminal above a new name exists, the old one's went.
        let deep =
            zone("$TTL 300\n@ SOA ns h 2 2 3 4 5\n@ NS ns\nns A 192.0.2.1\na.b.c A 192.0.2.5\n");
        let d = diff_zones(&a, &deep).unwrap();
        let applied = apply_to_zone(&a, &d).unwrap();
        assert!(applied
            .node(&"b.c.example.".parse().unwrap())
            .is_some_and(Node::is_empty_nonterminal));
        assert!(applied.node(&"old.example.".parse().unwrap()).is_none());
    }

    #[test]
    fn applying_a_stale_diff_to_a_zone_fails() {
        let (a, b) = (zone(V1), zone(V2));
        let d = diff_zones(&a, &b).unwrap();
        assert!(matches!(
            apply_to_zone(&b, &d),
            Err(DiffError::SerialMismatch { .. })
        ));
        let mut stale = d.clone();
        stale.removed.push(stale.added[0].clone());
        assert!(matches!(
            apply_to_zone(&a, &stale),
            Err(DiffError::MissingRecord(_))
        ));
    }

    #[test]
    fn a_diff_does_not_apply_to_another_version() {
        let (a, b) = (zone(V1), zone(V2));
        let d = diff_zones(&a, &b).unwrap();
        assert_eq!(
            apply_diff(b.records().collect(), &d),
            Err(DiffError::SerialMismatch { zone: 2, diff: 1 })
        );
        let mut stale = d.clone();
        stale.removed.push(stale.added[0].clone());
        assert!(matches!(
            apply_diff(a.records().collect(), &stale),
            Err(DiffError::MissingRecord(_))
        ));
    }
}
