//! An RRset as the cache keeps it: two small allocations instead of an
//! inline 256-octet name and one allocation per record. A cache holds
//! hundreds of thousands of sets, so their size is most of its memory
//! (and of how many fit in the processor's caches when it answers).

use bulwark_proto::{Class, Name, Rtype};

use crate::rrset::RrSet;

/// An [`RrSet`] packed: the owner in wire form (case kept), and every
/// record's data one after another, each behind its two-octet length, then
/// its signatures the same way, in the same allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedSet {
    owner: Box<[u8]>,
    pub rtype: Rtype,
    pub class: Class,
    pub ttl: u32,
    /// The records, then the signatures, in one allocation.
    rdata: Box<[u8]>,
    /// Where the signatures start in `rdata`.
    sigs_at: u32,
}

impl PackedSet {
    /// Packs `set`.
    pub fn pack(set: &RrSet) -> PackedSet {
        let mut rdata = pack_records(&set.rdata);
        let sigs_at = u32::try_from(rdata.len()).unwrap_or(u32::MAX);
        rdata.extend_from_slice(&pack_records(&set.sigs));
        PackedSet {
            owner: set.owner.as_wire().into(),
            rtype: set.rtype,
            class: set.class,
            ttl: set.ttl,
            rdata: rdata.into_boxed_slice(),
            sigs_at,
        }
    }

    /// The set again, as the rest of the resolver uses it. `None` only if
    /// the owner cannot be read back, which packing never causes.
    pub fn unpack(&self) -> Option<RrSet> {
        let owner = Name::from_wire(&self.owner).ok()?;
        let mut set = RrSet::new(owner, self.rtype, self.ttl);
        set.class = self.class;
        set.rdata = self.records().map(<[u8]>::to_vec).collect();
        set.sigs = records(self.split().1).map(<[u8]>::to_vec).collect();
        Some(set)
    }

    /// The owner, without unpacking the records.
    pub fn owner(&self) -> Option<Name> {
        Name::from_wire(&self.owner).ok()
    }

    /// Each record's data, in order.
    pub fn records(&self) -> impl Iterator<Item = &[u8]> + '_ {
        records(self.split().0)
    }

    /// Whether signatures are kept with it.
    pub fn signed(&self) -> bool {
        !self.split().1.is_empty()
    }

    /// The records' part of `rdata`, and the signatures'.
    fn split(&self) -> (&[u8], &[u8]) {
        let at = usize::try_from(self.sigs_at).unwrap_or(usize::MAX);
        self.rdata
            .split_at_checked(at)
            .unwrap_or((&self.rdata, &[]))
    }

    /// What it costs the cache in memory, as counted against `cache_size`:
    /// itself and its two allocations with the allocator's overhead.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<PackedSet>()
            .saturating_add(self.owner.len())
            .saturating_add(self.rdata.len())
            .saturating_add(2 * ALLOCATION_OVERHEAD)
    }
}

/// Records' data one after another, each behind its two-octet length. A
/// record's data is at most 65535 octets (RFC 1035 §3.2.1's RDLENGTH), so
/// each length fits its two octets; one that would not is left out.
fn pack_records(data: &[Vec<u8>]) -> Vec<u8> {
    let total: usize = data.iter().map(|d| d.len().saturating_add(2)).sum();
    let mut out = Vec::with_capacity(total);
    for d in data {
        if let Ok(n) = u16::try_from(d.len()) {
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(d);
        }
    }
    out
}

/// The records [`pack_records`] packed, in order.
fn records(packed: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut rest: &[u8] = packed;
    std::iter::from_fn(move || {
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let n = usize::from(u16::from_be_bytes(*len));
        let (data, after) = tail.split_at_checked(n)?;
        rest = after;
        Some(data)
    })
}

/// What the allocator adds to each allocation (glibc's malloc: a header of
/// 8 octets, rounded to 16).
pub const ALLOCATION_OVERHEAD: usize = 16;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_set_comes_back_as_it_was_packed() {
        let mut set = RrSet::new("WWW.Example.".parse().unwrap(), Rtype::A, 300);
        set.push(vec![192, 0, 2, 1], 300);
        set.push(vec![192, 0, 2, 2], 200);
        set.push(Vec::new(), 300);
        let packed = PackedSet::pack(&set);
        assert!(!packed.signed());
        assert_eq!(packed.unpack(), Some(set.clone()));
        assert_eq!(packed.records().count(), 3);
        assert!(packed.weight() < 128, "{}", packed.weight());
        set.push_sig(vec![0, 1, 2]);
        set.push_sig(vec![3; 40]);
        let signed = PackedSet::pack(&set);
        assert!(signed.signed());
        assert_eq!(signed.unpack(), Some(set));
    }
}
