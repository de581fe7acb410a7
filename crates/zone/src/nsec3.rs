//! The NSEC3 chain of a signed zone (RFC 5155), kept apart from the zone's names.
//!
//! NSEC3 owners are hashes: they are not names of the zone's namespace, and a
//! query for one must be answered as for any name that does not exist (as Knot
//! does). So [`Zone`](crate::Zone) takes every NSEC3 RRset (and the RRSIGs
//! covering it) out of its node index into this chain, ordered by hash, where
//! the answer path finds the NSEC3 that matches or covers a hash with one
//! binary search and no allocation.

use bulwark_proto::Rtype;

use crate::zone::{Node, RRset};

/// RFC 5155 §3.1.2.1: the Opt-Out flag is the least significant bit of Flags.
const OPT_OUT: u8 = 0x01;

/// How a signed zone denies existence (RFC 4035 §3.1.3, RFC 5155 §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// NSEC records at the zone's names.
    Nsec,
    /// An NSEC3 chain hashed with the apex NSEC3PARAM's salt and iterations.
    Nsec3 { salt: Box<[u8]>, iterations: u16 },
}

/// One NSEC3 RRset with its owner and signatures.
#[derive(Debug, Clone)]
struct Nsec3Entry {
    /// The owner's first label, base32hex-decoded (RFC 5155 §3.3).
    hash: Box<[u8]>,
    /// The owner, lowercased wire form.
    owner: Box<[u8]>,
    /// The NSEC3 RRset and an RRSIG RRset of the signatures covering it.
    node: Node,
}

/// The NSEC3 RRsets of a zone, by hash.
#[derive(Debug, Clone, Default)]
pub(crate) struct Nsec3Chain {
    entries: Box<[Nsec3Entry]>,
    /// Each entry's hash as a number: its first 8 octets, big-endian, zero
    /// padded. Searched instead of the hashes themselves, which live each in
    /// an allocation of its own: a binary search over a million of those
    /// was half of an NSEC3 NXDOMAIN's cost, a cache miss per step.
    keys: Box<[u64]>,
    /// `starts[p]`: the first entry whose key's top `prefix_bits` bits are
    /// `p` or more (one past the end for `p` = 2^bits), so a lookup searches
    /// only the few keys sharing its prefix. Sized to the chain (about one
    /// entry per slot, at most 2^16 slots), so a small zone pays little.
    starts: Box<[u32]>,
    prefix_bits: u32,
}

/// The most prefix bits: 256 KiB of starts for chains of 65,536 and more.
const MAX_PREFIX_BITS: u32 = 16;

fn key_of(hash: &[u8]) -> u64 {
    let mut octets = [0u8; 8];
    for (o, h) in octets.iter_mut().zip(hash) {
        *o = *h;
    }
    u64::from_be_bytes(octets)
}

/// An NSEC3 RRset found in the chain.
#[derive(Debug, Clone, Copy)]
pub struct Nsec3Record<'z> {
    /// The hashed owner name, lowercased wire form.
    pub owner: &'z [u8],
    /// The NSEC3 RRset and the RRSIGs covering it.
    pub node: &'z Node,
}

impl Nsec3Record<'_> {
    /// RFC 5155 §6: whether this NSEC3 may skip insecure delegations.
    pub fn opt_out(&self) -> bool {
        self.node
            .rrset(Rtype::NSEC3)
            .and_then(RRset::first)
            .and_then(|rd| rd.get(1))
            .is_some_and(|flags| flags & OPT_OUT != 0)
    }
}

/// What the chain holds for one hash.
#[derive(Debug, Clone, Copy)]
pub enum Nsec3Lookup<'z> {
    /// The NSEC3 whose owner hash is the hash: the name exists (RFC 5155 §7.2.3).
    Matching(Nsec3Record<'z>),
    /// The NSEC3 whose owner hash precedes the hash, its next hash following
    /// it (the last one wraps around): the name does not exist.
    Covering(Nsec3Record<'z>),
}

impl<'z> Nsec3Lookup<'z> {
    pub fn record(&self) -> Nsec3Record<'z> {
        match *self {
            Nsec3Lookup::Matching(r) | Nsec3Lookup::Covering(r) => r,
        }
    }
}

impl Nsec3Chain {
    /// Takes the NSEC3 RRsets (with the RRSIGs covering them) out of `nodes`:
    /// those at a direct child of the apex whose label decodes as base32hex.
    /// A node left with nothing else is dropped, so the hashed name does not exist.
    pub(crate) fn split<'a>(
        nodes: Vec<(&'a [u8], Node)>,
        apex: &[u8],
    ) -> (Vec<(&'a [u8], Node)>, Nsec3Chain) {
        let mut kept = Vec::with_capacity(nodes.len());
        let mut entries = Vec::new();
        for (owner, node) in nodes {
            let hash = node
                .rrset(Rtype::NSEC3)
                .and_then(|_| hashed_label(owner, apex));
            let Some(hash) = hash else {
                kept.push((owner, node));
                continue;
            };
            let mut chain_sets = Vec::with_capacity(2);
            let mut rest = Vec::new();
            for set in node.rrsets() {
                match set.rtype() {
                    Rtype::NSEC3 => chain_sets.push(set.clone()),
                    Rtype::RRSIG => {
                        let covers =
                            |rd: &[u8]| rd.get(..2) == Some(&Rtype::NSEC3.0.to_be_bytes()[..]);
                        let (chain_sigs, other_sigs): (Vec<&[u8]>, Vec<&[u8]>) =
                            set.rdatas().partition(|rd| covers(rd));
                        if !chain_sigs.is_empty() {
                            chain_sets.push(RRset::from_rdatas(
                                Rtype::RRSIG,
                                set.ttl(),
                                chain_sigs,
                            ));
                        }
                        if !other_sigs.is_empty() {
                            rest.push(RRset::from_rdatas(Rtype::RRSIG, set.ttl(), other_sigs));
                        }
                    }
                    _ => rest.push(set.clone()),
                }
            }
            entries.push(Nsec3Entry {
                hash: hash.into_boxed_slice(),
                owner: owner.into(),
                node: Node::new(chain_sets),
            });
            if !rest.is_empty() {
                kept.push((owner, Node::new(rest)));
            }
        }
        entries.sort_unstable_by(|a, b| a.hash.cmp(&b.hash));
        (kept, Nsec3Chain::indexed(entries))
    }

    /// The chain of `entries` (in hash order) with its search index.
    fn indexed(entries: Vec<Nsec3Entry>) -> Nsec3Chain {
        let keys: Box<[u64]> = entries.iter().map(|e| key_of(&e.hash)).collect();
        let prefix_bits = usize::BITS
            .saturating_sub(entries.len().leading_zeros())
            .min(MAX_PREFIX_BITS);
        let slots = 1usize << prefix_bits;
        let mut starts = Vec::with_capacity(slots.saturating_add(1));
        let mut at = 0usize;
        for p in 0..slots {
            let p = u64::try_from(p).unwrap_or(u64::MAX);
            while keys.get(at).is_some_and(|&k| prefix(k, prefix_bits) < p) {
                at = at.saturating_add(1);
            }
            starts.push(u32::try_from(at).unwrap_or(u32::MAX));
        }
        starts.push(u32::try_from(keys.len()).unwrap_or(u32::MAX));
        Nsec3Chain {
            entries: entries.into_boxed_slice(),
            keys,
            starts: starts.into_boxed_slice(),
            prefix_bits,
        }
    }

    /// The first entry whose hash is `hash` or sorts after it.
    fn first_not_below(&self, hash: &[u8]) -> usize {
        let key = key_of(hash);
        let p = usize::try_from(prefix(key, self.prefix_bits)).unwrap_or(0);
        let bounds = |i: usize| {
            self.starts
                .get(i)
                .and_then(|&s| usize::try_from(s).ok())
                .unwrap_or(self.keys.len())
        };
        let (lo, hi) = (bounds(p), bounds(p.saturating_add(1)));
        let bucket = self.keys.get(lo..hi).unwrap_or_default();
        let mut i = lo.saturating_add(bucket.partition_point(|&k| k < key));
        // Keys tie only where hashes share their first 8 octets.
        while self.keys.get(i) == Some(&key) && self.entries.get(i).is_some_and(|e| &*e.hash < hash)
        {
            i = i.saturating_add(1);
        }
        i
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The NSEC3 matching `hash`, or else the one covering it.
    pub(crate) fn lookup(&self, hash: &[u8]) -> Option<Nsec3Lookup<'_>> {
        fn record(e: &Nsec3Entry) -> Nsec3Record<'_> {
            Nsec3Record {
                owner: &e.owner,
                node: &e.node,
            }
        }
        let i = self.first_not_below(hash);
        // The key first: a covering lookup then never touches entry `i`
        // (another two cache misses), only the one before it.
        let same_key = self.keys.get(i) == Some(&key_of(hash));
        match self.entries.get(i) {
            Some(e) if same_key && *e.hash == *hash => Some(Nsec3Lookup::Matching(record(e))),
            // Before the first hash: the last NSEC3 wraps around and covers it.
            _ => i
                .checked_sub(1)
                .and_then(|p| self.entries.get(p))
                .or_else(|| self.entries.last())
                .map(|e| Nsec3Lookup::Covering(record(e))),
        }
    }

    /// Owners (lowercased wire) and nodes, in hash order, which is also their
    /// canonical order: base32hex keeps the order of the octets it encodes.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &Node)> {
        self.entries.iter().map(|e| (&*e.owner, &e.node))
    }
}

/// The top `bits` bits of `key`.
fn prefix(key: u64, bits: u32) -> u64 {
    key.checked_shr(64u32.saturating_sub(bits)).unwrap_or(0)
}

/// The hash in `owner`'s first label when `owner` is a direct child of `apex`.
pub(crate) fn hashed_label(owner: &[u8], apex: &[u8]) -> Option<Vec<u8>> {
    let len = usize::from(*owner.first()?);
    let rest = owner.get(len.checked_add(1)?..)?;
    if rest != apex {
        return None;
    }
    decode_base32hex(owner.get(1..len.checked_add(1)?)?)
}

/// RFC 4648 §7 base32hex, lowercase or uppercase, without padding (RFC 5155 §3.3).
fn decode_base32hex(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len().saturating_mul(5) / 8);
    let mut buffer: u32 = 0;
    let mut bits: u32 = 0;
    for &c in text {
        let v = match c {
            b'0'..=b'9' => c.checked_sub(b'0')?,
            b'a'..=b'v' => c.checked_sub(b'a')?.checked_add(10)?,
            b'A'..=b'V' => c.checked_sub(b'A')?.checked_add(10)?,
            _ => return None,
        };
        buffer = (buffer << 5) | u32::from(v);
        bits = bits.checked_add(5)?;
        if bits >= 8 {
            bits = bits.checked_sub(8)?;
            out.push(u8::try_from((buffer >> bits) & 0xff).ok()?);
            buffer &= (1u32 << bits).checked_sub(1)?;
        }
    }
    // Left-over bits must be padding: fewer than a whole octet, all zero.
    (bits < 5 && buffer == 0 && !out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation
    )]
    use super::*;

    #[test]
    fn base32hex_decodes_an_nsec3_label() {
        // RFC 5155 Appendix A: the hash of example. is 0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.
        let h = decode_base32hex(b"0p9mhaveqvm6t7vbl5lop2u3t2rp3tom").unwrap();
        assert_eq!(h.len(), 20);
        assert_eq!(h[0], 0x06);
        assert_eq!(
            decode_base32hex(b"0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM").unwrap(),
            h
        );
        assert!(decode_base32hex(b"www").is_none());
        assert!(decode_base32hex(b"").is_none());
    }

    fn entry(hash: u8) -> Nsec3Entry {
        Nsec3Entry {
            hash: vec![hash; 20].into_boxed_slice(),
            owner: vec![hash].into_boxed_slice(),
            node: Node::default(),
        }
    }

    #[test]
    fn lookup_finds_the_match_or_the_predecessor_wrapping_around() {
        let chain = Nsec3Chain::indexed(vec![entry(10), entry(20), entry(30)]);
        let owner = |l: Option<Nsec3Lookup<'_>>| l.unwrap().record().owner[0];
        assert!(matches!(
            chain.lookup(&[20; 20]),
            Some(Nsec3Lookup::Matching(_))
        ));
        assert_eq!(owner(chain.lookup(&[25; 20])), 20);
        assert_eq!(owner(chain.lookup(&[35; 20])), 30);
        assert_eq!(owner(chain.lookup(&[5; 20])), 30);
        assert!(Nsec3Chain::default().lookup(&[1; 20]).is_none());
    }

    /// The indexed search against a plain binary search over the hashes, on
    /// chains of every size class, with hashes that tie in their first 8
    /// octets and hashes of other lengths among them.
    #[test]
    fn the_indexed_search_agrees_with_a_binary_search() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for size in [1usize, 2, 3, 7, 64, 1000, 70_000] {
            let mut hashes: Vec<Vec<u8>> = Vec::with_capacity(size);
            while hashes.len() < size {
                let mut h: Vec<u8> = (0..20).map(|_| (next() & 0xff) as u8).collect();
                match next() % 8 {
                    // A tie in the first 8 octets with the last hash.
                    0 if !hashes.is_empty() => {
                        let last = hashes.last().unwrap().clone();
                        let n = last.len().min(8);
                        h[..n].copy_from_slice(&last[..n]);
                    }
                    1 => h.truncate(5),
                    _ => {}
                }
                hashes.push(h);
            }
            hashes.sort();
            hashes.dedup();
            let entries = hashes
                .iter()
                .map(|h| Nsec3Entry {
                    hash: h.clone().into_boxed_slice(),
                    owner: h.clone().into_boxed_slice(),
                    node: Node::default(),
                })
                .collect();
            let chain = Nsec3Chain::indexed(entries);
            let mut probes: Vec<Vec<u8>> = hashes.iter().take(500).cloned().collect();
            for _ in 0..2000 {
                let mut h: Vec<u8> = (0..20).map(|_| (next() & 0xff) as u8).collect();
                if next() % 4 == 0 {
                    let near = &hashes[(next() as usize) % hashes.len()];
                    h[..8.min(near.len())].copy_from_slice(&near[..8.min(near.len())]);
                }
                probes.push(h);
            }
            probes.extend([vec![0; 20], vec![0xff; 20], vec![0; 3]]);
            for probe in probes {
                let want = match hashes.binary_search(&probe) {
                    Ok(i) => (true, hashes[i].clone()),
                    Err(0) => (false, hashes.last().unwrap().clone()),
                    Err(i) => (false, hashes[i - 1].clone()),
                };
                let got = match chain.lookup(&probe).unwrap() {
                    Nsec3Lookup::Matching(r) => (true, r.owner.to_vec()),
                    Nsec3Lookup::Covering(r) => (false, r.owner.to_vec()),
                };
                assert_eq!(got, want, "size {size}, probe {probe:02x?}");
            }
        }
    }
}
