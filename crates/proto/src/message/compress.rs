//! Name compression for messages we build (RFC 1035 §4.1.4).
//!
//! The table remembers where names (and so all their suffixes) were written; it
//! is a fixed array, so building a message allocates nothing for it. Beside
//! each position it keeps the length of the name written there, uncompressed:
//! a suffix can only equal a name of its own length, so looking one up reads
//! the other names only where the lengths agree (in an answer, most names
//! share the zone's apex and differ in length below it).

use crate::ascii_case::eq_ignore_ascii_case;

/// How many name positions are remembered; later names are written in full.
const MAX_ENTRIES: usize = 64;
/// A pointer has 14 bits of offset.
const MAX_POINTER: usize = 0x3fff;
/// Bounds the walk through pointers when comparing (our own messages only ever
/// point backwards, so this is a guard, not a rule).
const MAX_HOPS: usize = 128;

#[derive(Debug, Clone)]
pub(crate) struct CompressionTable {
    offsets: [u16; MAX_ENTRIES],
    /// The uncompressed wire length of the name at each offset.
    name_lens: [u8; MAX_ENTRIES],
    len: usize,
}

impl CompressionTable {
    pub(crate) fn new() -> CompressionTable {
        CompressionTable {
            offsets: [0; MAX_ENTRIES],
            name_lens: [0; MAX_ENTRIES],
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forgets entries added after the table had `len` entries (used on rollback).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Remembers that a name of `name_len` octets (uncompressed) starts at `offset`.
    fn add(&mut self, offset: usize, name_len: usize) {
        if offset > MAX_POINTER {
            return;
        }
        let slots = (
            self.offsets.get_mut(self.len),
            self.name_lens.get_mut(self.len),
        );
        if let (Some(slot), Some(len_slot), Ok(off), Ok(name_len)) = (
            slots.0,
            slots.1,
            u16::try_from(offset),
            u8::try_from(name_len),
        ) {
            *slot = off;
            *len_slot = name_len;
            self.len = self.len.saturating_add(1);
        }
    }

    /// Finds the longest proper suffix (or the whole) of `name`, an uncompressed
    /// wire name, that `msg` already holds. Returns how many leading octets of
    /// `name` must still be written literally, and the pointer target.
    fn find(&self, msg: &[u8], name: &[u8]) -> Option<(usize, u16)> {
        let offsets = self.offsets.get(..self.len)?;
        let name_lens = self.name_lens.get(..self.len)?;
        let mut start = 0usize;
        loop {
            let len = usize::from(*name.get(start)?);
            // A pointer to the root saves nothing: the root is one octet.
            if len == 0 {
                return None;
            }
            let suffix = name.get(start..)?;
            let suffix_len = u8::try_from(suffix.len()).ok()?;
            let found = name_lens
                .iter()
                .zip(offsets)
                .filter(|&(&l, _)| l == suffix_len)
                .find(|&(_, &off)| name_at_equals(msg, usize::from(off), suffix));
            if let Some((_, &off)) = found {
                return Some((start, off));
            }
            start = start.checked_add(len)?.checked_add(1)?;
        }
    }

    /// Appends `name` (uncompressed wire form) to `out`, replacing its longest
    /// known suffix with a pointer, and remembers where its literal labels went.
    pub(crate) fn write_name(&mut self, out: &mut Vec<u8>, name: &[u8]) {
        let base = out.len();
        let (literal, pointer) = match self.find(out, name) {
            Some((lit, off)) => (lit, Some(off)),
            None => (name.len(), None),
        };
        let head = name.get(..literal).unwrap_or(name);
        out.extend_from_slice(head);
        // Remember each literal label's position: every suffix starting there
        // can be pointed to later.
        let mut pos = 0usize;
        while let Some(&l) = head.get(pos) {
            if l == 0 {
                break;
            }
            self.add(base.saturating_add(pos), name.len().saturating_sub(pos));
            pos = pos.saturating_add(usize::from(l)).saturating_add(1);
        }
        if let Some(off) = pointer {
            out.extend_from_slice(&(0xc000 | off).to_be_bytes());
        }
    }
}

/// Whether the (possibly compressed) name at `pos` in `msg` equals `name`,
/// ignoring ASCII case (RFC 4343).
fn name_at_equals(msg: &[u8], mut pos: usize, name: &[u8]) -> bool {
    // Most names we point to were written in full (the question's, an
    // owner's first labels): then one comparison of the whole name does.
    // Length octets are below 0x40 and pointers at or above 0xc0, neither
    // touched by case folding, so equal octets mean equal label structure.
    if msg
        .get(pos..pos.saturating_add(name.len()))
        .is_some_and(|at| eq_ignore_ascii_case(at, name))
    {
        return true;
    }
    let mut i = 0usize;
    let mut hops = 0usize;
    loop {
        let Some(&len) = msg.get(pos) else {
            return false;
        };
        if len & 0xc0 == 0xc0 {
            let Some(&lo) = msg.get(pos.saturating_add(1)) else {
                return false;
            };
            hops = hops.saturating_add(1);
            if hops > MAX_HOPS {
                return false;
            }
            pos = usize::from(u16::from_be_bytes([len & 0x3f, lo]));
            continue;
        }
        if name.get(i) != Some(&len) {
            return false;
        }
        if len == 0 {
            return true;
        }
        let step = usize::from(len).saturating_add(1);
        let (a, b) = (
            msg.get(pos.saturating_add(1)..pos.saturating_add(step)),
            name.get(i.saturating_add(1)..i.saturating_add(step)),
        );
        match (a, b) {
            (Some(a), Some(b)) if eq_ignore_ascii_case(a, b) => {}
            _ => return false,
        }
        pos = pos.saturating_add(step);
        i = i.saturating_add(step);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::name::Name;

    fn wire(s: &str) -> Vec<u8> {
        s.parse::<Name>().unwrap().as_wire().to_vec()
    }

    #[test]
    fn later_names_point_at_the_longest_known_suffix() {
        let mut t = CompressionTable::new();
        let mut out = vec![0u8; 12];
        t.write_name(&mut out, &wire("www.example.com."));
        assert_eq!(out.len(), 12 + 17);
        // Same name, other case: a pointer to 12.
        t.write_name(&mut out, &wire("WWW.Example.COM."));
        assert_eq!(&out[29..], &[0xc0, 12]);
        // Sibling: literal "mail" then a pointer to "example.com." at 16.
        t.write_name(&mut out, &wire("mail.example.com."));
        assert_eq!(&out[31..], &[4, b'm', b'a', b'i', b'l', 0xc0, 16]);
        // A name below the sibling: points to the sibling's literal label at 31.
        t.write_name(&mut out, &wire("a.mail.example.com."));
        assert_eq!(&out[38..], &[1, b'a', 0xc0, 31]);
        // Unrelated name and the root are written in full.
        t.write_name(&mut out, &wire("org."));
        assert_eq!(&out[42..], &[3, b'o', b'r', b'g', 0]);
        t.write_name(&mut out, &[0]);
        assert_eq!(out.last(), Some(&0));
    }

    #[test]
    fn offsets_past_the_pointer_range_are_not_remembered() {
        let mut t = CompressionTable::new();
        let mut out = vec![0u8; 0x4000];
        t.write_name(&mut out, &wire("example.com."));
        assert_eq!(t.len(), 0);
        let before = out.len();
        t.write_name(&mut out, &wire("example.com."));
        assert_eq!(out.len() - before, 13);
    }
}
