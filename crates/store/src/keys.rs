//! The tables and how their keys are built.
//!
//! Every key begins with the zone's apex in lowercased uncompressed wire form
//! (RFC 4343: names compare without regard to ASCII case). A wire-form name
//! ends at its root label and so is never a proper prefix of another name's
//! wire form: all of one zone's keys form one contiguous key range, and the
//! octets after the name (journal kind, big-endian sequence and chunk
//! numbers) sort numerically.

use std::ops::Range;

use bulwark_proto::Name;
use redb::TableDefinition;

use crate::journal::JournalKind;

pub(crate) type Table = TableDefinition<'static, &'static [u8], &'static [u8]>;

/// The store's layout version (key `layout`), checked on open.
pub(crate) const LAYOUT: Table = TableDefinition::new("layout");
/// Per zone and journal kind: the journal's head (bounds, snapshot, limit).
pub(crate) const JOURNAL_HEADS: Table = TableDefinition::new("journal_heads");
/// Per zone, kind and diff sequence number: the diff's serials, counts, size.
pub(crate) const DIFF_INDEX: Table = TableDefinition::new("journal_diff_index");
/// Per zone, kind, diff sequence number and chunk number: the diff's records.
pub(crate) const DIFF_CHUNKS: Table = TableDefinition::new("journal_diff_chunks");
/// Per zone, kind and chunk number: the snapshot's records.
pub(crate) const SNAPSHOT_CHUNKS: Table = TableDefinition::new("journal_snapshot_chunks");
/// Per zone: refresh timers of a secondary zone.
pub(crate) const TIMERS: Table = TableDefinition::new("zone_timers");
/// Per zone and key: small values the server keeps about a zone.
pub(crate) const META: Table = TableDefinition::new("zone_meta");

/// Every table, so that opening creates them all and readers never meet a
/// missing one.
pub(crate) const ALL_TABLES: [Table; 7] = [
    LAYOUT,
    JOURNAL_HEADS,
    DIFF_INDEX,
    DIFF_CHUNKS,
    SNAPSHOT_CHUNKS,
    TIMERS,
    META,
];

/// Tables whose keys begin with a zone, for listing and removing zones.
pub(crate) const ZONE_TABLES: [(Table, &str); 6] = [
    (JOURNAL_HEADS, "journal_heads"),
    (DIFF_INDEX, "journal_diff_index"),
    (DIFF_CHUNKS, "journal_diff_chunks"),
    (SNAPSHOT_CHUNKS, "journal_snapshot_chunks"),
    (TIMERS, "zone_timers"),
    (META, "zone_meta"),
];

pub(crate) const LAYOUT_KEY: &[u8] = b"layout";

/// The key prefix of everything stored for `zone`.
pub(crate) fn zone_key(zone: &Name) -> Vec<u8> {
    zone.to_lowercase().as_wire().to_vec()
}

/// The key prefix of one journal of a zone (and the key of its head).
pub(crate) fn journal_key(zone: &[u8], kind: JournalKind) -> Vec<u8> {
    let mut k = zone.to_vec();
    k.push(kind.code());
    k
}

/// The key of one diff in the index (and the prefix of its chunks).
pub(crate) fn diff_key(journal: &[u8], seq: u64) -> Vec<u8> {
    let mut k = journal.to_vec();
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// The key of one chunk, under a diff key or a journal key (snapshot chunks).
pub(crate) fn chunk_key(prefix: &[u8], chunk: u32) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&chunk.to_be_bytes());
    k
}

/// The key of one metadata value.
pub(crate) fn meta_key(zone: &[u8], key: &str) -> Vec<u8> {
    let mut k = zone.to_vec();
    k.extend_from_slice(key.as_bytes());
    k
}

/// The keys that begin with `prefix`: `prefix` up to (not including) the
/// first key past all of them. `None` when no key is past them (all 0xff).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if let Some(next) = last.checked_add(1) {
            end.push(next);
            return Some(end);
        }
    }
    None
}

/// The range of keys that begin with `prefix`, for prefixes that end in a
/// zone name or a number (never all 0xff: a name ends with its root label).
pub(crate) fn prefix_range(prefix: &[u8]) -> Range<Vec<u8>> {
    let end = prefix_end(prefix).unwrap_or_else(|| vec![0xff; prefix.len().saturating_add(1)]);
    prefix.to_vec()..end
}

/// The zone name at the start of a key, as stored (lowercased wire form).
pub(crate) fn zone_of_key(key: &[u8]) -> Option<&[u8]> {
    let mut at = 0usize;
    loop {
        let len = usize::from(*key.get(at)?);
        if len > 63 {
            return None;
        }
        at = at.checked_add(len)?.checked_add(1)?;
        if len == 0 {
            return key.get(..at);
        }
    }
}

/// The sequence number at the end of a diff index key.
pub(crate) fn seq_of_diff_key(key: &[u8]) -> Option<u64> {
    let start = key.len().checked_sub(8)?;
    let bytes: [u8; 8] = key.get(start..)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn zone_keys_are_lowercased_wire_form() {
        let zone: Name = "Example.COM.".parse().unwrap();
        assert_eq!(zone_key(&zone), b"\x07example\x03com\x00");
    }

    #[test]
    fn prefix_range_holds_the_zone_and_nothing_else() {
        let a = zone_key(&"a.example.".parse().unwrap());
        let child = zone_key(&"x.a.example.".parse().unwrap());
        let sibling = zone_key(&"a.example.net.".parse().unwrap());
        let range = prefix_range(&a);
        assert!(range.contains(&journal_key(&a, JournalKind::Served)));
        assert!(range.contains(&meta_key(&a, "\u{10ffff}")));
        assert!(range.contains(&diff_key(&a, u64::MAX)));
        assert!(!range.contains(&journal_key(&child, JournalKind::Served)));
        assert!(!range.contains(&journal_key(&sibling, JournalKind::Served)));
        assert_eq!(prefix_end(&[1, 0xff, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff]), None);
    }

    #[test]
    fn zone_of_key_finds_the_name_before_the_rest() {
        let a = zone_key(&"a.example.".parse().unwrap());
        assert_eq!(zone_of_key(&meta_key(&a, "serial")), Some(&a[..]));
        assert_eq!(zone_of_key(&[0, 1, 2]), Some(&[0u8][..]));
        assert_eq!(zone_of_key(&[3, b'a']), None);
        assert_eq!(zone_of_key(&[0x40, 0]), None);
    }
}
