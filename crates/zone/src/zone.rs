//! One zone's data, shaped for answering.
//!
//! Contract relied on by `bulwark-auth`:
//! - owners are stored lowercased; `node` looks up case-insensitively;
//! - every empty non-terminal between the apex and an owner exists as a node with
//!   no RRsets (so "does this name exist" is one lookup);
//! - RRsets hold their rdata in uncompressed wire form, ready to copy into answers,
//!   in RFC 4034 §6.3 canonical order, without duplicates (RFC 2181 §5);
//! - a zone made by [`Zone::build`](crate::build) always has exactly one SOA at the apex.
//!
//! Memory: a zone may hold millions of names, so owners are kept as lowercased
//! wire bytes packed in one buffer (not 256-octet inline `Name`s), the hash
//! table holds 4-octet slot numbers (both in the `node_index` module), a
//! node is one boxed slice of RRsets, and an
//! RRset packs all its rdata into one buffer, held inside the RRset when it is
//! as small as one AAAA (no allocation, and no further cache miss to answer).

use core::cmp::Ordering;

use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

use crate::fork::{Fork, InTurn};
use crate::node_index::NodeIndex;
use crate::nsec3::{Denial, Nsec3Chain, Nsec3Lookup};

/// Length prefix of each rdata inside an RRset's packed buffer.
const RDLEN_PREFIX: usize = 2;
/// The packed buffer starts with the record count (u32, big-endian).
const COUNT_PREFIX: usize = 4;

/// One RRset: a type, a TTL and the wire-form rdata of each record, in canonical order.
///
/// The rdata is packed as `count:u32` then `len:u16 bytes` per record. A
/// packing of at most [`INLINE`] octets (one A, one AAAA, a short NS or
/// CNAME target) is kept inside the RRset itself, so answering from the
/// most common RRsets reads no memory beyond the node's RRset list: under
/// load that read is a cache miss of its own. Larger ones take one allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RRset {
    rtype: Rtype,
    ttl: u32,
    packed: Packed,
}

/// The longest packing kept inline: a single AAAA (4 + 2 + 16 octets).
const INLINE: usize = 22;

/// Where an RRset's packed rdata lives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Packed {
    /// `len` octets at the start of `octets`; the rest are zero, so the
    /// derived equality compares only the packing.
    Inline {
        len: u8,
        octets: [u8; INLINE],
    },
    Heap(Box<[u8]>),
}

impl Default for Packed {
    fn default() -> Packed {
        Packed::Inline {
            len: 0,
            octets: [0; INLINE],
        }
    }
}

impl Packed {
    fn as_slice(&self) -> &[u8] {
        match self {
            Packed::Inline { len, octets } => octets.get(..usize::from(*len)).unwrap_or(&[]),
            Packed::Heap(octets) => octets,
        }
    }
}

/// Writes the count and each rdata, length-prefixed, into `out`, which the
/// caller sized for exactly that; returns whether anything was written.
fn pack_into<'a>(rdatas: impl Iterator<Item = &'a [u8]>, out: &mut [u8]) -> bool {
    let mut at = COUNT_PREFIX;
    let mut count: u32 = 0;
    for rd in rdatas {
        let Ok(len) = u16::try_from(rd.len()) else {
            continue;
        };
        let end = at.saturating_add(RDLEN_PREFIX).saturating_add(rd.len());
        let Some((prefix, data)) = out
            .get_mut(at..end)
            .and_then(|o| o.split_at_mut_checked(RDLEN_PREFIX))
        else {
            break;
        };
        prefix.copy_from_slice(&len.to_be_bytes());
        data.copy_from_slice(rd);
        at = end;
        count = count.saturating_add(1);
    }
    if let Some(head) = out.get_mut(..COUNT_PREFIX) {
        head.copy_from_slice(&count.to_be_bytes());
    }
    count > 0
}

impl RRset {
    /// An RRset holding `rdatas` in the order given. Rdata longer than 65535
    /// octets cannot exist on the wire (RFC 1035 §3.2.1 RDLENGTH) and is skipped.
    pub fn new(rtype: Rtype, ttl: u32, rdatas: Vec<Box<[u8]>>) -> RRset {
        RRset::from_rdatas(rtype, ttl, rdatas.iter().map(|r| &**r))
    }

    /// Packs wire-form rdatas, in the order given (see [`RRset::new`]).
    pub fn from_rdatas<'a, I>(rtype: Rtype, ttl: u32, rdatas: I) -> RRset
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let rdatas = rdatas
            .into_iter()
            .filter(|rd| rd.len() <= usize::from(u16::MAX));
        // Sized exactly up front: millions of these live as long as the zone.
        let size = rdatas.clone().fold(COUNT_PREFIX, |acc, rd| {
            acc.saturating_add(RDLEN_PREFIX).saturating_add(rd.len())
        });
        let packed = match u8::try_from(size) {
            Ok(len) if size <= INLINE => {
                let mut octets = [0; INLINE];
                if pack_into(rdatas, &mut octets) {
                    Packed::Inline { len, octets }
                } else {
                    Packed::default()
                }
            }
            _ => {
                let mut octets = vec![0; size].into_boxed_slice();
                if pack_into(rdatas, &mut octets) {
                    Packed::Heap(octets)
                } else {
                    Packed::default()
                }
            }
        };
        RRset { rtype, ttl, packed }
    }

    pub fn rtype(&self) -> Rtype {
        self.rtype
    }

    pub fn ttl(&self) -> u32 {
        self.ttl
    }

    pub fn len(&self) -> usize {
        self.packed
            .as_slice()
            .get(..COUNT_PREFIX)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .and_then(|b| usize::try_from(u32::from_be_bytes(b)).ok())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each record's rdata, uncompressed wire form.
    pub fn rdatas(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
        Rdatas {
            rest: self.packed.as_slice().get(COUNT_PREFIX..).unwrap_or(&[]),
            remaining: self.len(),
        }
    }

    /// The first record's rdata (the only one for SOA, CNAME and DNAME).
    pub fn first(&self) -> Option<&[u8]> {
        self.rdatas().next()
    }

    /// Bytes held by this RRset beyond its inline size, for memory accounting.
    pub fn heap_size(&self) -> usize {
        match &self.packed {
            Packed::Inline { .. } => 0,
            Packed::Heap(octets) => octets.len(),
        }
    }
}

/// Iterator over the rdatas packed in an [`RRset`].
#[derive(Debug, Clone)]
struct Rdatas<'a> {
    rest: &'a [u8],
    remaining: usize,
}

impl<'a> Iterator for Rdatas<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let head = self.rest.get(..RDLEN_PREFIX)?;
        let len = usize::from(u16::from_be_bytes([*head.first()?, *head.get(1)?]));
        let end = RDLEN_PREFIX.checked_add(len)?;
        let rd = self.rest.get(RDLEN_PREFIX..end)?;
        self.rest = self.rest.get(end..)?;
        self.remaining = self.remaining.saturating_sub(1);
        Some(rd)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Rdatas<'_> {}

/// The RRsets at one owner name. No RRsets: an empty non-terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    rrsets: Box<[RRset]>,
}

impl Node {
    /// A node holding `rrsets` (kept in the order given).
    pub fn new(rrsets: Vec<RRset>) -> Node {
        Node {
            rrsets: rrsets.into_boxed_slice(),
        }
    }

    pub fn rrset(&self, rtype: Rtype) -> Option<&RRset> {
        self.rrsets.iter().find(|r| r.rtype() == rtype)
    }

    pub fn rrsets(&self) -> &[RRset] {
        &self.rrsets
    }

    pub fn is_empty_nonterminal(&self) -> bool {
        self.rrsets.is_empty()
    }

    /// Whether the node has an RRset of `rtype`.
    pub fn has(&self, rtype: Rtype) -> bool {
        self.rrset(rtype).is_some()
    }

    /// The TTL to give one record of `set` (an RRset of this node) when the
    /// zone is written out: the RRset's own, except for an RRSIG, which takes
    /// the TTL of the RRset it covers (RFC 4034 §3) since all RRSIGs at a name
    /// are kept as one RRset here.
    pub fn record_ttl(&self, set: &RRset, rdata: &[u8]) -> u32 {
        if set.rtype() != Rtype::RRSIG {
            return set.ttl();
        }
        rdata
            .get(..2)
            .map(|c| {
                Rtype(u16::from_be_bytes([
                    c.first().copied().unwrap_or(0),
                    c.get(1).copied().unwrap_or(0),
                ]))
            })
            .and_then(|covered| self.rrset(covered))
            .map_or(set.ttl(), RRset::ttl)
    }

    /// The RRSIG rdatas whose Type Covered field (RFC 4034 §3.1.1) is `covered`.
    ///
    /// All RRSIGs at a name form one RRset here, with the TTL of the first one
    /// loaded; RFC 4034 §3 gives an RRSIG the TTL of the RRset it covers, so an
    /// answer should use the covered RRset's TTL.
    pub fn rrsigs_covering(&self, covered: Rtype) -> impl Iterator<Item = &[u8]> + Clone {
        let want = covered.0.to_be_bytes();
        self.rrset(Rtype::RRSIG)
            .into_iter()
            .flat_map(RRset::rdatas)
            .filter(move |rd| rd.get(..2) == Some(&want[..]))
    }
}

#[derive(Debug, Clone)]
pub struct Zone {
    apex: Name,
    class: Class,
    nodes: NodeIndex,
    has_wildcards: bool,
    /// NSEC3 RRsets, out of the namespace (see [`crate::nsec3`]).
    nsec3: Nsec3Chain,
    /// How the zone denies existence when it is signed; `None` when unsigned.
    denial: Option<Denial>,
}

/// `nodes` sorted by owner in canonical order (RFC 4034 §6.1).
///
/// Comparing wire names label by label from the root end costs two label scans
/// per comparison; a million-name zone spent a fifth of its load time there.
/// Each owner's [`canonical_key`] compares with plain `memcmp` instead, and
/// the stable sort finds the runs a zone file already has (names written in
/// order, or a signer's output) in linear time.
fn in_canonical_order(nodes: Vec<(&[u8], Node)>) -> Vec<(&[u8], Node)> {
    // A key is never longer than its wire name plus one escape per octet.
    let wire_total = nodes.iter().map(|(o, _)| o.len()).sum::<usize>();
    let mut keys = Vec::with_capacity(wire_total);
    let mut order: Vec<(usize, usize, usize)> = Vec::with_capacity(nodes.len());
    for (i, (owner, _)) in nodes.iter().enumerate() {
        let start = keys.len();
        canonical_key(owner, &mut keys);
        order.push((start, keys.len(), i));
    }
    let key = |&(start, end, _): &(usize, usize, usize)| keys.get(start..end).unwrap_or(&[]);
    if order.is_sorted_by(|a, b| key(a) <= key(b)) {
        return nodes;
    }
    order.sort_by(|a, b| key(a).cmp(key(b)));
    let mut slots: Vec<Option<(&[u8], Node)>> = nodes.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&(_, _, i)| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Appends to `out` an octet string whose `memcmp` order is the canonical
/// order of lowercased wire names: the labels from the root end, each followed
/// by a 0 terminator, with octets 0 and 1 inside a label written as 1 1 and
/// 1 2 so that the terminator sorts below every label octet (a label that is a
/// prefix of another sorts first, as does a name that is an ancestor).
pub(crate) fn canonical_key(wire: &[u8], out: &mut Vec<u8>) {
    let (offs, n) = label_offsets(wire);
    for &off in offs.get(..n).unwrap_or(&[]).iter().rev() {
        let label = label_at(wire, off);
        if label.iter().all(|&octet| octet > 1) {
            out.extend_from_slice(label);
        } else {
            for &octet in label {
                if octet <= 1 {
                    out.extend_from_slice(&[1, octet.saturating_add(1)]);
                } else {
                    out.push(octet);
                }
            }
        }
        out.push(0);
    }
}

impl Zone {
    /// A zone with no data at all (not even a SOA): for tests and placeholders.
    pub fn empty(apex: Name) -> Zone {
        Zone {
            apex: apex.to_lowercase(),
            class: Class::IN,
            nodes: NodeIndex::default(),
            has_wildcards: false,
            nsec3: Nsec3Chain::default(),
            denial: None,
        }
    }

    /// Assembles a zone from nodes keyed by lowercased owner wire form, each
    /// owner once and at or below the apex; adds the empty non-terminals.
    /// Returns the owners that could not be indexed (a zone whose names pass
    /// 4 GiB in total).
    pub(crate) fn from_parts(
        apex: Name,
        class: Class,
        nodes: Vec<(&[u8], Node)>,
    ) -> (Zone, Vec<&[u8]>) {
        Zone::from_sorted_parts(apex, class, in_canonical_order(nodes), &InTurn)
    }

    /// [`Zone::from_parts`] for nodes already in canonical order (RFC 4034
    /// §6.1): the index relies on it for ordered walks and searches.
    pub(crate) fn from_sorted_parts<'a>(
        apex: Name,
        class: Class,
        nodes: Vec<(&'a [u8], Node)>,
        fork: &impl Fork,
    ) -> (Zone, Vec<&'a [u8]>) {
        let apex = apex.to_lowercase();
        let (nodes, nsec3) = Nsec3Chain::split(nodes, apex.as_wire());
        let (nodes, rejected) = NodeIndex::build(nodes, apex.wire_len(), fork);
        let denial = nodes.get(apex.as_wire()).and_then(|a| denial_of(a, &nsec3));
        // After the empty non-terminals: `*.x` with only `a.*.x` below it is
        // still a wildcard (RFC 4592 §2.2.1).
        let has_wildcards = nodes.iter().any(|(k, _)| k.get(..2) == Some(&[1, b'*']));
        (
            Zone {
                apex,
                class,
                nodes,
                has_wildcards,
                nsec3,
                denial,
            },
            rejected,
        )
    }

    /// The zone's origin, lowercased.
    pub fn apex(&self) -> &Name {
        &self.apex
    }

    /// The class of the zone's records (IN in practice).
    pub fn class(&self) -> Class {
        self.class
    }

    /// The node at exactly `name` (any case), including empty non-terminals.
    pub fn node(&self, name: &Name) -> Option<&Node> {
        let lower = name.to_lowercase();
        self.nodes.get(lower.as_wire())
    }

    /// The node whose owner has exactly this wire form, which the caller has
    /// already lowercased: lets a caller walking a name's ancestors look each up
    /// as a slice of one lowercased copy, without building a `Name` per step.
    pub fn node_by_lowercase_wire(&self, wire: &[u8]) -> Option<&Node> {
        self.nodes.get(wire)
    }

    /// The apex node. Every answer reads it, so it is found as the first
    /// node in canonical order rather than by hashing its name.
    pub fn apex_node(&self) -> Option<&Node> {
        self.nodes
            .first()
            .filter(|(owner, _)| *owner == self.apex.as_wire())
            .map(|(_, node)| node)
    }

    /// The apex SOA RRset.
    pub fn soa(&self) -> Option<&RRset> {
        self.apex_node().and_then(|n| n.rrset(Rtype::SOA))
    }

    /// The SOA serial (RFC 1035 §3.3.13), read from the apex SOA.
    pub fn serial(&self) -> Option<u32> {
        let rd = self.soa()?.first()?;
        let mut r = Reader::new(rd);
        Name::read_uncompressed(&mut r).ok()?;
        Name::read_uncompressed(&mut r).ok()?;
        r.read_u32().ok()
    }

    /// Whether `name` (strictly below the apex) has an NS RRset: a zone cut.
    pub fn is_delegation(&self, name: &Name) -> bool {
        name != &self.apex
            && self
                .node(name)
                .is_some_and(|n| n.rrset(Rtype::NS).is_some())
    }

    /// The highest zone cut at or above `name`: the node strictly below the
    /// apex, nearest the apex, with an NS RRset, and its owner. Whatever lies at
    /// or below it is answered with a referral (RFC 1034 §4.3.2 step 3b).
    pub fn zone_cut_above(&self, name: &Name) -> Option<(Name, &Node)> {
        let lower = name.to_lowercase();
        if !lower.is_below(&self.apex) {
            return None;
        }
        let apex_len = self.apex.wire_len();
        let (wire, node) = suffixes(lower.as_wire())
            .take_while(|s| s.len() > apex_len)
            .filter_map(|s| Some((s, self.nodes.get(s)?)))
            .filter(|(_, n)| n.has(Rtype::NS))
            .last()?;
        Some((Name::from_wire(wire).ok()?, node))
    }

    /// Whether any owner's first label is `*` (RFC 4592): lets the answer path
    /// skip the wildcard search in the common zone without wildcards.
    pub fn has_wildcards(&self) -> bool {
        self.has_wildcards
    }

    /// How the zone denies existence when signed (RFC 4035 §3.1.3, RFC 5155
    /// §7.2): decided from the apex, which must hold DNSKEY and RRSIG records,
    /// and NSEC3PARAM (with an NSEC3 chain) for NSEC3 or else NSEC for NSEC.
    /// `None` for an unsigned zone.
    pub fn denial(&self) -> Option<&Denial> {
        self.denial.as_ref()
    }

    /// The NSEC3 whose owner hash matches `hash`, or else the one covering it
    /// (RFC 5155 §7.2); `None` when the zone has no NSEC3 chain.
    pub fn nsec3(&self, hash: &[u8]) -> Option<Nsec3Lookup<'_>> {
        self.nsec3.lookup(hash)
    }

    /// The node of `owner` when it is an NSEC3 owner name (the hash, in
    /// base32hex, as a label under the apex, RFC 5155 §3.3) in the zone's
    /// chain, which is kept apart from the namespace [`Zone::node`] searches.
    pub fn nsec3_node(&self, owner: &Name) -> Option<&Node> {
        let lower = owner.to_lowercase();
        let hash = crate::nsec3::hashed_label(lower.as_wire(), self.apex.as_wire())?;
        match self.nsec3(&hash)? {
            Nsec3Lookup::Matching(found) if found.owner == lower.as_wire() => Some(found.node),
            _ => None,
        }
    }

    /// The NSEC that matches or covers `lower_wire` (a lowercased wire name at
    /// or below the apex): the NSEC of the last name at or before it in
    /// canonical order that holds one (RFC 4034 §4.1.1), with that name's owner
    /// (lowercased wire). Empty non-terminals and glue hold none and are passed.
    pub fn nsec_covering(&self, lower_wire: &[u8]) -> Option<(&[u8], &Node)> {
        self.nodes.at_or_before(lower_wire, |n| n.has(Rtype::NSEC))
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Every node with its owner, in RFC 4034 §6.1 canonical order (the apex first).
    /// Builds a `Name` per node: meant for printing, transfers and signing, not
    /// the query path.
    /// NSEC3 owners are merged in at their place.
    pub fn nodes_canonical(&self) -> impl Iterator<Item = (Name, &Node)> {
        self.raw_nodes_canonical()
            .filter_map(|(k, n)| Some((Name::from_wire(k).ok()?, n)))
    }

    /// Every node with its lowercased owner wire form, NSEC3 owners merged in,
    /// in canonical order: [`Zone::nodes_canonical`] without building names.
    pub(crate) fn raw_nodes_canonical(&self) -> impl Iterator<Item = (&[u8], &Node)> {
        let mut names = self.nodes.iter().peekable();
        let mut hashed = self.nsec3.iter().peekable();
        core::iter::from_fn(move || {
            let take_hashed = match (names.peek(), hashed.peek()) {
                (Some((a, _)), Some((b, _))) => canonical_cmp_wire(b, a) == Ordering::Less,
                (None, Some(_)) => true,
                _ => false,
            };
            if take_hashed {
                hashed.next()
            } else {
                names.next()
            }
        })
    }

    /// Every record as typed data: owners in canonical order, each node's RRsets
    /// in stored order (by type number), rdata in canonical order. AXFR wants the
    /// SOA first and last (RFC 5936 §2.2): the caller emits `soa()` around this.
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        let class = self.class;
        self.nodes_canonical().flat_map(move |(owner, node)| {
            node.rrsets().iter().flat_map(move |set| {
                let owner = owner.clone();
                set.rdatas().map(move |rd| Record {
                    owner: owner.clone(),
                    class,
                    ttl: node.record_ttl(set, rd),
                    rdata: decode_rdata(set.rtype(), rd),
                })
            })
        })
    }

    /// Raw access for the checks: every node with its lowercased owner wire form.
    pub(crate) fn raw_nodes(&self) -> impl Iterator<Item = (&[u8], &Node)> {
        self.nodes.iter()
    }
}

/// The zone's denial of existence, from its apex node (see [`Zone::denial`]).
fn denial_of(apex: &Node, nsec3: &Nsec3Chain) -> Option<Denial> {
    if !apex.has(Rtype::DNSKEY) || !apex.has(Rtype::RRSIG) {
        return None;
    }
    // RFC 5155 §4.2: hash algorithm, flags, iterations, salt length, salt.
    let param = apex.rrset(Rtype::NSEC3PARAM).and_then(RRset::first);
    if let (Some(rd), false) = (param, nsec3.is_empty()) {
        let iterations = u16::from_be_bytes([*rd.get(2)?, *rd.get(3)?]);
        let salt_len = usize::from(*rd.get(4)?);
        let salt = rd.get(5..salt_len.checked_add(5)?)?;
        return Some(Denial::Nsec3 {
            salt: salt.into(),
            iterations,
        });
    }
    apex.has(Rtype::NSEC).then_some(Denial::Nsec)
}

/// Typed rdata from stored wire form; what does not parse stays opaque (RFC 3597).
fn decode_rdata(rtype: Rtype, rd: &[u8]) -> Rdata {
    let mut r = Reader::new(rd);
    match Rdata::read(rtype, &mut r, rd.len()) {
        Ok(d) => d,
        Err(_) => Rdata::Unknown {
            rtype,
            data: rd.to_vec(),
        },
    }
}

/// Offsets where each label of an uncompressed wire name starts, most specific
/// first, ending with the root label's offset. At most 128 labels fit in 255 octets.
pub(crate) fn label_starts(wire: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut pos = Some(0usize);
    core::iter::from_fn(move || {
        let here = pos?;
        let len = usize::from(*wire.get(here)?);
        pos = if len == 0 {
            None
        } else {
            here.checked_add(len).and_then(|p| p.checked_add(1))
        };
        Some(here)
    })
}

/// The name itself and each ancestor up to the root, as suffixes of `wire`.
pub(crate) fn suffixes(wire: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    label_starts(wire).filter_map(move |off| wire.get(off..))
}

/// RFC 4034 §6.1 order on lowercased uncompressed wire names: compare labels
/// from the root end, each as an unsigned octet string.
pub(crate) fn canonical_cmp_wire(a: &[u8], b: &[u8]) -> Ordering {
    let (oa, na) = label_offsets(a);
    let (ob, nb) = label_offsets(b);
    let la = oa.get(..na).unwrap_or(&[]);
    let lb = ob.get(..nb).unwrap_or(&[]);
    for (&x, &y) in la.iter().rev().zip(lb.iter().rev()) {
        let ord = label_at(a, x).cmp(label_at(b, y));
        if ord != Ordering::Equal {
            return ord;
        }
    }
    na.cmp(&nb)
}

/// Offsets of the non-root labels; 255 octets hold at most 127 of them.
pub(crate) fn label_offsets(wire: &[u8]) -> ([u8; 128], usize) {
    let mut offs = [0u8; 128];
    let mut n = 0usize;
    for off in label_starts(wire) {
        if wire.get(off).is_some_and(|&l| l == 0) {
            break;
        }
        if let (Some(slot), Ok(o)) = (offs.get_mut(n), u8::try_from(off)) {
            *slot = o;
            n = n.saturating_add(1);
        }
    }
    (offs, n)
}

pub(crate) fn label_at(wire: &[u8], off: u8) -> &[u8] {
    let off = usize::from(off);
    let len = wire.get(off).map_or(0, |&l| usize::from(l));
    let start = off.saturating_add(1);
    wire.get(start..start.saturating_add(len)).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn nsec3_owners_are_found_in_the_chain_by_name_not_in_the_namespace() {
        let text = "$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n\
                    0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM NSEC3 1 0 0 - 0p9mhaveqvm6t7vbl5lop2u3t2rp3tom NS SOA\n";
        let origin = n("example.");
        let records = crate::parse_str(text, &origin, "test").unwrap();
        let mut builder = crate::ZoneBuilder::new(&origin);
        for r in &records {
            builder.add(r);
        }
        let (zone, _) = builder.finish();
        let owner = n("0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM.example.");
        assert!(zone.node(&owner).is_none());
        assert!(zone.nsec3_node(&owner).is_some_and(|n| n.has(Rtype::NSEC3)));
        assert!(zone.nsec3_node(&n("ns.example.")).is_none());
        assert!(zone
            .nsec3_node(&n("0p9mhaveqvm6t7vbl5lop2u3t2rp3too.example."))
            .is_none());
    }

    #[test]
    fn packed_rrset_returns_each_rdata_in_order() {
        let set = RRset::new(
            Rtype::A,
            300,
            vec![
                vec![1, 2, 3, 4].into_boxed_slice(),
                Box::default(),
                vec![5; 300].into_boxed_slice(),
            ],
        );
        assert_eq!(set.len(), 3);
        let all: Vec<&[u8]> = set.rdatas().collect();
        assert_eq!(all[0], &[1, 2, 3, 4]);
        assert_eq!(all[1], &[] as &[u8]);
        assert_eq!(all[2], &[5; 300][..]);
        assert_eq!(set.rdatas().len(), 3);
    }

    #[test]
    fn nodes_and_rrsets_stay_small() {
        // Millions of these live as long as the zone: a growing size is a regression.
        assert_eq!(core::mem::size_of::<Node>(), 16);
        assert_eq!(core::mem::size_of::<RRset>(), 32);
    }

    #[test]
    fn small_rrsets_are_kept_inline_and_read_back_the_same() {
        // A packing of INLINE octets (one AAAA) stays in the RRset; one more
        // octet goes to the heap. Both read back what went in, and equal
        // RRsets compare equal whichever way they are held.
        let aaaa: Box<[u8]> = (1..=16).collect();
        let inline = RRset::new(Rtype::AAAA, 60, vec![aaaa.clone()]);
        assert_eq!(inline.heap_size(), 0);
        assert_eq!(inline.rdatas().collect::<Vec<_>>(), vec![&aaaa[..]]);
        let longer: Box<[u8]> = (1..=17).collect();
        let heap = RRset::new(Rtype::TXT, 60, vec![longer.clone()]);
        assert_eq!(heap.heap_size(), INLINE + 1);
        assert_eq!(heap.rdatas().collect::<Vec<_>>(), vec![&longer[..]]);
        let two = RRset::new(Rtype::A, 5, vec![vec![1; 4].into(), vec![2; 4].into()]);
        assert_eq!(two.heap_size(), 0);
        assert_eq!(two.len(), 2);
        assert_eq!(two.rdatas().nth(1), Some(&[2u8; 4][..]));
        assert_eq!(inline, RRset::from_rdatas(Rtype::AAAA, 60, [&aaaa[..]]));
        assert_ne!(inline, RRset::from_rdatas(Rtype::AAAA, 61, [&aaaa[..]]));
        // Rdata too long for the wire is skipped, inline or not.
        let huge = vec![0u8; 70_000].into_boxed_slice();
        let only_huge = RRset::new(Rtype::TXT, 1, vec![huge.clone()]);
        assert!(only_huge.is_empty());
        assert_eq!(only_huge, RRset::new(Rtype::TXT, 1, Vec::new()));
        let with_huge = RRset::new(Rtype::A, 1, vec![huge, vec![9; 4].into()]);
        assert_eq!(with_huge.rdatas().collect::<Vec<_>>(), vec![&[9u8; 4][..]]);
        assert_eq!(with_huge.heap_size(), 0);
    }

    #[test]
    fn empty_rrset_allocates_nothing() {
        let set = RRset::new(Rtype::A, 1, Vec::new());
        assert!(set.is_empty());
        assert_eq!(set.heap_size(), 0);
        assert_eq!(set.rdatas().count(), 0);
    }

    #[test]
    fn suffixes_walk_from_the_name_to_the_root() {
        let name = n("a.b.c.");
        let all: Vec<Name> = suffixes(name.as_wire())
            .map(|s| Name::from_wire(s).unwrap())
            .collect();
        assert_eq!(all, vec![n("a.b.c."), n("b.c."), n("c."), Name::root()]);
    }

    proptest::proptest! {
        #[test]
        fn canonical_key_orders_as_canonical_cmp_wire(
            a in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 2, b'a', b'b', 0xff]), 1..4), 0..4),
            b in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 2, b'a', b'b', 0xff]), 1..4), 0..4),
        ) {
            let wire = |labels: &Vec<Vec<u8>>| {
                let mut w = Vec::new();
                for l in labels {
                    w.push(u8::try_from(l.len()).unwrap());
                    w.extend_from_slice(l);
                }
                w.push(0);
                w
            };
            let (a, b) = (wire(&a), wire(&b));
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            canonical_key(&a, &mut ka);
            canonical_key(&b, &mut kb);
            proptest::prop_assert_eq!(ka.cmp(&kb), canonical_cmp_wire(&a, &b));
        }
    }

    #[test]
    fn nodes_come_out_in_canonical_order_from_any_order() {
        let owners = [
            "b.example.",
            "example.",
            "\\000.b.example.",
            "z.a.example.",
            "a.example.",
        ];
        let wires: Vec<Name> = owners.iter().map(|o| n(o).to_lowercase()).collect();
        let nodes = wires
            .iter()
            .map(|w| (w.as_wire(), Node::default()))
            .collect();
        let sorted: Vec<&[u8]> = in_canonical_order(nodes)
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        let mut want: Vec<&[u8]> = wires.iter().map(Name::as_wire).collect();
        want.sort_by(|a, b| canonical_cmp_wire(a, b));
        assert_eq!(sorted, want);
        assert_eq!(sorted.first(), Some(&n("example.").as_wire()));
    }

    #[test]
    fn wire_order_matches_name_order() {
        let names = [
            "example.",
            "a.example.",
            "z.a.example.",
            "b.example.",
            "\\000.b.example.",
        ];
        for x in names {
            for y in names {
                let (a, b) = (n(x).to_lowercase(), n(y).to_lowercase());
                assert_eq!(
                    canonical_cmp_wire(a.as_wire(), b.as_wire()),
                    a.cmp(&b),
                    "{x} {y}"
                );
            }
        }
    }
}
