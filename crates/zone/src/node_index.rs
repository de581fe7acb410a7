//! The owners of a zone's namespace and their nodes: the lookup every query
//! makes, by lowercased owner wire form, and the canonical order that NSEC
//! answers, transfers and printing walk.

use core::cmp::Ordering;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

use crate::fork::{join_if_large, Fork};
use crate::zone::{canonical_cmp_wire, label_at, label_offsets, suffixes, Node};

/// Where one node's owner sits in [`NodeIndex::names`], and the node.
#[derive(Debug, Clone)]
struct Slot {
    name_off: u32,
    name_len: u8,
    node: Node,
}

/// Nodes keyed by lowercased owner wire form.
///
/// Memory: owners are packed in one buffer and the hash table holds only
/// 4-octet slot numbers, so a node costs its slot (24 octets), its owner's
/// octets and about 5 octets of table, instead of a boxed key and a
/// 32-octet table entry. Slots are in canonical order (RFC 4034 §6.1), which
/// also gives ordered walks without sorting.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeIndex {
    names: Box<[u8]>,
    slots: Box<[Slot]>,
    table: HashTable<u32>,
    hasher: RandomState,
}

impl NodeIndex {
    /// Indexes `nodes` (owners lowercased, each once, all at or below the
    /// apex whose wire form is `apex_len` octets), adding a node with no
    /// RRsets for every empty non-terminal between the apex and an owner.
    /// Owners that do not fit the 4 GiB name buffer are returned instead of
    /// indexed.
    /// `nodes` must be in canonical order.
    pub(crate) fn build<'a>(
        nodes: Vec<(&'a [u8], Node)>,
        apex_len: usize,
        fork: &impl Fork,
    ) -> (NodeIndex, Vec<&'a [u8]>) {
        // Owners come from the zone, never from queries: a query only probes a
        // table whose layout the operator's data fixed, so collision flooding
        // is not possible and SipHash's cost (a fifth of a `www A` answer) buys
        // nothing. The seed is still random per table.
        let hasher = RandomState::default();
        // A first pass over the sorted owners finds which names fit the 4 GiB
        // name buffer, sizes it exactly (it lives as long as the zone) and
        // hashes each name in slot order, so that the table can be built on
        // one core while the other fills the slots.
        // Hashing is most of that pass, so a large zone's halves are hashed
        // on both cores; their offsets add up unless the names pass 4 GiB,
        // where the one pass over all of them decides what is left out.
        let first_pass = |from: usize, to: usize| {
            let mut total = 0usize;
            let mut hashes: Vec<u64> = Vec::with_capacity(to.saturating_sub(from));
            let mut prev = from
                .checked_sub(1)
                .and_then(|p| nodes.get(p))
                .map(|(o, _)| *o);
            for (owner, _) in nodes.get(from..to).unwrap_or(&[]) {
                for name in empty_nonterminals_before(prev, owner, apex_len)
                    .into_iter()
                    .chain([*owner])
                {
                    if slot_place(total, name).is_some() {
                        total = total.saturating_add(name.len());
                        hashes.push(hasher.hash_one(name));
                    }
                }
                prev = Some(owner);
            }
            (total, hashes)
        };
        let mid = nodes.len() / 2;
        let ((left_total, mut hashes), (right_total, right_hashes)) = join_if_large(
            fork,
            nodes.len(),
            || first_pass(0, mid),
            || first_pass(mid, nodes.len()),
        );
        let total = match left_total.checked_add(right_total) {
            Some(total) if u32::try_from(total).is_ok() => {
                hashes.extend(right_hashes);
                total
            }
            _ => {
                let (total, all) = first_pass(0, nodes.len());
                hashes = all;
                total
            }
        };
        let count = hashes.len();
        let ((names, slots, rejected), table) = join_if_large(
            fork,
            count,
            || fill_slots(nodes, apex_len, total, count),
            || {
                let mut table = HashTable::with_capacity(count);
                for (i, &h) in hashes.iter().enumerate() {
                    let Ok(i) = u32::try_from(i) else { break };
                    table.insert_unique(h, i, |&j| hashes.get(index(j)).copied().unwrap_or(0));
                }
                table
            },
        );
        (
            NodeIndex {
                names: names.into_boxed_slice(),
                slots: slots.into_boxed_slice(),
                table,
                hasher,
            },
            rejected,
        )
    }

    pub(crate) fn get(&self, wire: &[u8]) -> Option<&Node> {
        let h = self.hasher.hash_one(wire);
        let &i = self.table.find(h, |&j| {
            self.slots.get(index(j)).is_some_and(|s| {
                // The caller reads the node's RRsets next: start that read
                // now, so that it and the owner's octets come from memory
                // together rather than one after the other (at light load,
                // 0.1 to 0.2 µs per query on the benchmark's mix).
                core::hint::black_box(s.node.rrsets().first().map(|r| r.rtype()));
                slot_name(&self.names, s) == wire
            })
        })?;
        self.slots.get(index(i)).map(|s| &s.node)
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The first node in canonical order, with its owner: the apex's, when
    /// the zone has one, since every other owner is below it.
    pub(crate) fn first(&self) -> Option<(&[u8], &Node)> {
        self.slots
            .first()
            .map(|s| (slot_name(&self.names, s), &s.node))
    }

    /// The last node at or before `wire` (lowercased) in canonical order that
    /// `keep` accepts, with its owner: a binary search over the ordered slots,
    /// then a walk back. Allocates nothing.
    pub(crate) fn at_or_before(
        &self,
        wire: &[u8],
        keep: impl Fn(&Node) -> bool,
    ) -> Option<(&[u8], &Node)> {
        let end = self.slots.partition_point(|s| {
            canonical_cmp_wire(slot_name(&self.names, s), wire) != Ordering::Greater
        });
        self.slots
            .get(..end)?
            .iter()
            .rev()
            .find(|s| keep(&s.node))
            .map(|s| (slot_name(&self.names, s), &s.node))
    }

    /// Owners (lowercased wire) and nodes, in canonical order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &Node)> {
        self.slots
            .iter()
            .map(|s| (slot_name(&self.names, s), &s.node))
    }
}

/// Where `name` goes in the name buffer when `total` octets of names come
/// before it (offset and length), or `None` when its offset does not fit the
/// slot's 32 bits: such a name is not indexed.
fn slot_place(total: usize, name: &[u8]) -> Option<(u32, u8)> {
    Some((u32::try_from(total).ok()?, u8::try_from(name.len()).ok()?))
}

/// The name buffer and slots for `nodes` (sorted, with the empty
/// non-terminals added), and the names that do not fit: the same choice
/// [`slot_place`] made in [`NodeIndex::build`]'s first pass, which found
/// `total` octets in `count` names.
fn fill_slots(
    nodes: Vec<(&[u8], Node)>,
    apex_len: usize,
    total: usize,
    count: usize,
) -> (Vec<u8>, Vec<Slot>, Vec<&[u8]>) {
    let mut names = Vec::with_capacity(total);
    let mut slots = Vec::with_capacity(count);
    let mut rejected = Vec::new();
    let mut prev: Option<&[u8]> = None;
    for (owner, node) in nodes {
        let ents = empty_nonterminals_before(prev, owner, apex_len);
        prev = Some(owner);
        let entries = ents
            .into_iter()
            .map(|e| (e, Node::default()))
            .chain([(owner, node)]);
        for (name, node) in entries {
            let Some((name_off, name_len)) = slot_place(names.len(), name) else {
                rejected.push(name);
                continue;
            };
            names.extend_from_slice(name);
            slots.push(Slot {
                name_off,
                name_len,
                node,
            });
        }
    }
    (names, slots, rejected)
}

/// A stored 32-bit position as an index (never truncates on 32/64-bit targets).
fn index(i: u32) -> usize {
    usize::try_from(i).unwrap_or(usize::MAX)
}

/// The empty non-terminals that come just before `owner` in canonical order,
/// given the owner `prev` just before it: the ancestors of `owner`, at or below
/// the apex, that are not also ancestors of (or equal to) `prev`. An ancestor
/// sorts before its descendants, and an ancestor of `owner` that is not one of
/// `prev` sorts after `prev`; with nothing in between, it has no records.
/// Shortest (closest to the apex) first.
fn empty_nonterminals_before<'a>(
    prev: Option<&[u8]>,
    owner: &'a [u8],
    apex_len: usize,
) -> Vec<&'a [u8]> {
    // The common cases in a sorted zone, found without walking labels (the
    // index's two passes ask for every owner): a child of the apex, of the
    // owner before, or of that owner's parent has every ancestor in place.
    if let (Some(prev), Some(parent)) = (prev, parent_wire(owner)) {
        if parent.len() <= apex_len || parent == prev || parent_wire(prev) == Some(parent) {
            return Vec::new();
        }
    }
    unshared_ancestors(prev, owner, apex_len)
}

/// The wire form of a (non-root) name's parent.
fn parent_wire(wire: &[u8]) -> Option<&[u8]> {
    let len = usize::from(*wire.first().filter(|l| **l > 0)?);
    wire.get(len.saturating_add(1)..)
}

/// [`empty_nonterminals_before`] by walking the labels.
fn unshared_ancestors<'a>(prev: Option<&[u8]>, owner: &'a [u8], apex_len: usize) -> Vec<&'a [u8]> {
    let shared = prev.map_or(0, |p| common_suffix_len(p, owner));
    let mut out: Vec<&[u8]> = suffixes(owner)
        .skip(1)
        .take_while(|s| s.len() > shared && s.len() >= apex_len)
        .collect();
    out.reverse();
    out
}

/// Wire length of the closest common ancestor of two lowercased wire names.
fn common_suffix_len(a: &[u8], b: &[u8]) -> usize {
    let (oa, na) = label_offsets(a);
    let (ob, nb) = label_offsets(b);
    let la = oa.get(..na).unwrap_or(&[]);
    let lb = ob.get(..nb).unwrap_or(&[]);
    let mut shared = 1; // the root
    for (&x, &y) in la.iter().rev().zip(lb.iter().rev()) {
        let (ta, tb) = (label_at(a, x), label_at(b, y));
        if ta != tb {
            break;
        }
        shared = a.len().saturating_sub(usize::from(x));
    }
    shared
}

fn slot_name<'a>(names: &'a [u8], slot: &Slot) -> &'a [u8] {
    let start = index(slot.name_off);
    names
        .get(start..start.saturating_add(usize::from(slot.name_len)))
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use bulwark_proto::Name;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn common_ancestor_is_label_aligned() {
        let len = |a: &str, b: &str| common_suffix_len(n(a).as_wire(), n(b).as_wire());
        assert_eq!(len("a.example.", "b.example."), n("example.").wire_len());
        assert_eq!(len("a.example.", "a.example."), n("a.example.").wire_len());
        assert_eq!(len("xa.example.", "a.example."), n("example.").wire_len());
        assert_eq!(len("example.", "a.b.example."), n("example.").wire_len());
        assert_eq!(len("com.", "org."), 1);
    }

    #[test]
    fn empty_nonterminals_are_the_unshared_ancestors() {
        let apex = n("example.").wire_len();
        let names = |prev: Option<&str>, owner: &str| -> Vec<Name> {
            let p = prev.map(n);
            let o = n(owner);
            empty_nonterminals_before(p.as_ref().map(|p| p.as_wire()), o.as_wire(), apex)
                .into_iter()
                .map(|w| Name::from_wire(w).unwrap())
                .collect()
        };
        assert_eq!(
            names(Some("example."), "a.b.example."),
            vec![n("b.example.")]
        );
        assert_eq!(
            names(Some("z.b.example."), "a.c.example."),
            vec![n("c.example.")]
        );
        assert_eq!(names(Some("b.example."), "a.b.example."), vec![]);
        assert_eq!(
            names(None, "a.b.example."),
            vec![n("example."), n("b.example.")]
        );
    }

    #[test]
    fn the_shortcuts_find_the_empty_nonterminals_the_label_walk_finds() {
        let apex = n("example.");
        let mut names: Vec<Name> = [
            "example.",
            "a.example.",
            "b.example.",
            "a.b.example.",
            "b.b.example.",
            "x.a.b.example.",
            "c.example.",
            "x.c.example.",
            "y.d.c.example.",
            "\\000.example.",
            "z.example.",
            "*.z.example.",
            "q.y.z.example.",
        ]
        .iter()
        .map(|s| n(s))
        .collect();
        names.sort();
        for (i, owner) in names.iter().enumerate() {
            let earlier = names.get(..i).unwrap_or(&[]);
            for prev in earlier.iter().map(Some).chain([None]) {
                let prev = prev.map(Name::as_wire);
                assert_eq!(
                    empty_nonterminals_before(prev, owner.as_wire(), apex.wire_len()),
                    unshared_ancestors(prev, owner.as_wire(), apex.wire_len()),
                    "{owner} after {prev:?}"
                );
            }
        }
    }

    /// Lowercased wire form of each presentation name, in canonical order.
    fn owners(names: &[String]) -> Vec<Vec<u8>> {
        let mut wires: Vec<Vec<u8>> = names
            .iter()
            .map(|s| n(s).to_lowercase().as_wire().to_vec())
            .collect();
        wires.sort_by(|a, b| canonical_cmp_wire(a, b));
        wires.dedup();
        wires
    }

    /// A node told apart from others by the TTL of its one RRset.
    fn marked(i: usize) -> Node {
        let ttl = u32::try_from(i).unwrap();
        Node::new(vec![crate::zone::RRset::new(
            bulwark_proto::Rtype::A,
            ttl,
            vec![vec![192, 0, 2, 1].into()],
        )])
    }

    fn mark(node: &Node) -> Option<u32> {
        node.rrsets().first().map(crate::zone::RRset::ttl)
    }

    fn index_of(wires: &[Vec<u8>]) -> NodeIndex {
        let nodes = wires
            .iter()
            .enumerate()
            .map(|(i, w)| (&w[..], marked(i)))
            .collect();
        let apex = n("example.").wire_len();
        let (index, rejected) = NodeIndex::build(nodes, apex, &crate::fork::InTurn);
        assert!(rejected.is_empty());
        index
    }

    #[test]
    fn slots_stay_small() {
        // Millions of these live as long as the zone: a growing size is a regression.
        assert_eq!(core::mem::size_of::<Slot>(), 24);
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let index = NodeIndex::default();
        assert!(index.get(n("example.").as_wire()).is_none());
        assert!(index.first().is_none());
        assert_eq!(index.iter().count(), 0);
        assert!(index
            .at_or_before(n("example.").as_wire(), |_| true)
            .is_none());
        let built = index_of(&[]);
        assert!(built.get(n("example.").as_wire()).is_none());
        assert_eq!(built.len(), 0);
    }

    proptest::proptest! {
        #[test]
        fn every_owner_is_found_and_nothing_else(
            labels in proptest::collection::vec("[a-c]{1,3}(\\.[a-c]{1,2}){0,2}", 0..200),
            absent in proptest::collection::vec("[a-d]{1,3}(\\.[a-d]{1,2}){0,2}", 0..50),
        ) {
            let names: Vec<String> = std::iter::once("example.".to_string())
                .chain(labels.iter().map(|l| format!("{l}.example.")))
                .collect();
            let wires = owners(&names);
            let index = index_of(&wires);
            // The empty non-terminals the index adds are found too, as
            // nodes with no RRsets; every owner given keeps its own node.
            for (i, w) in wires.iter().enumerate() {
                let node = index.get(w);
                proptest::prop_assert_eq!(node.and_then(mark), Some(u32::try_from(i).unwrap()));
            }
            let indexed: Vec<&[u8]> = index.iter().map(|(o, _)| o).collect();
            proptest::prop_assert_eq!(indexed.len(), index.len());
            for pair in indexed.windows(2) {
                proptest::prop_assert_eq!(canonical_cmp_wire(pair[0], pair[1]), Ordering::Less);
            }
            for w in &indexed {
                proptest::prop_assert!(index.get(w).is_some());
            }
            proptest::prop_assert_eq!(index.first().map(|(o, _)| o), Some(&wires[0][..]));
            for a in &absent {
                let name = n(&format!("{a}.example.")).to_lowercase();
                let wire = name.as_wire();
                let listed = indexed.contains(&wire);
                proptest::prop_assert_eq!(index.get(wire).is_some(), listed);
                // The ordered search agrees with a walk over the whole order.
                let want = indexed
                    .iter()
                    .rev()
                    .find(|o| canonical_cmp_wire(o, wire) != Ordering::Greater)
                    .copied();
                let got = index.at_or_before(wire, |_| true).map(|(o, _)| o);
                proptest::prop_assert_eq!(got, want);
                let want_marked = indexed
                    .iter()
                    .rev()
                    .filter(|o| canonical_cmp_wire(o, wire) != Ordering::Greater)
                    .find(|o| index.get(o).and_then(mark).is_some())
                    .copied();
                let got_marked = index
                    .at_or_before(wire, |node| mark(node).is_some())
                    .map(|(o, _)| o);
                proptest::prop_assert_eq!(got_marked, want_marked);
            }
        }
    }
}
