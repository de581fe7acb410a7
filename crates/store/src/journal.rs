//! Journals of zone versions: what a caller asks to store, what it reads
//! back, and the small values that describe a journal (its head, and one
//! index entry per diff) so reads find their way without decoding records.

use core::fmt;

use bulwark_proto::{Record, Rtype};
use bulwark_zone::ZoneDiff;

use crate::encoding::{FieldReader, FieldWriter};
use crate::error::DecodeError;

/// Which of a zone's journals. Each kind is a chain of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum JournalKind {
    /// The zone as served: the diffs IXFR sends to secondaries (RFC 1995) and
    /// that rebuild the served zone after a restart.
    Served,
    /// For a zone the server signs: the unsigned content, so that dynamic
    /// updates (RFC 2136) survive a crash and signing can start again from them.
    Unsigned,
}

impl JournalKind {
    pub const ALL: [JournalKind; 2] = [JournalKind::Served, JournalKind::Unsigned];

    /// The octet that stands for this kind in keys. Part of the stored format.
    pub(crate) fn code(self) -> u8 {
        match self {
            JournalKind::Served => 1,
            JournalKind::Unsigned => 2,
        }
    }
}

impl fmt::Display for JournalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JournalKind::Served => "served",
            JournalKind::Unsigned => "unsigned",
        })
    }
}

/// How big a journal's diffs may grow, and which of them must stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalLimit {
    /// The octets the diffs may take as stored (the snapshot not counted).
    /// Past it, the oldest diffs that may go are dropped.
    pub max_bytes: u64,
    /// The serial of the last version written out elsewhere (a primary's zone
    /// file): diffs after it are its only copy and are kept whatever their size.
    /// Diffs up to it, and diffs before the journal's snapshot, may go.
    pub keep_from: Option<u32>,
}

/// What to do with the diffs a journal already holds when a snapshot is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotHistory {
    /// Keep them (they become history before the snapshot, droppable under the
    /// size limit). The snapshot must be the version the journal ends at.
    Keep,
    /// Drop them: the snapshot need not follow from them (a full transfer,
    /// RFC 5936, or a zone file loaded anew).
    Drop,
}

/// A full copy of a zone's records at one serial, the base a journal's later
/// diffs apply to. It must hold exactly one SOA record; its serial is the
/// snapshot's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub records: Vec<Record>,
    pub history: SnapshotHistory,
}

impl Snapshot {
    /// The journal's current version written whole, so recovery need not replay
    /// the diffs before it (compaction). The diffs stay for IXFR until the size
    /// limit drops them.
    pub fn compaction(records: Vec<Record>) -> Snapshot {
        Snapshot {
            records,
            history: SnapshotHistory::Keep,
        }
    }

    /// A new base that replaces the journal's history.
    pub fn replacement(records: Vec<Record>) -> Snapshot {
        Snapshot {
            records,
            history: SnapshotHistory::Drop,
        }
    }

    /// The serial of the snapshot's only SOA record.
    pub(crate) fn serial(&self) -> Option<u32> {
        let mut soas = self.records.iter().filter(|r| r.rtype() == Rtype::SOA);
        let soa = soas.next()?;
        if soas.next().is_some() {
            return None;
        }
        bulwark_zone::diff::soa_serial_of(soa)
    }
}

/// A change to one journal. Applied in this order: the snapshot, then the
/// diffs (the first starting where the journal, snapshot included, ends), then
/// the limit, then trimming to the limit (a limit set once stays).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalChange {
    pub snapshot: Option<Snapshot>,
    pub diffs: Vec<ZoneDiff>,
    pub limit: Option<JournalLimit>,
}

/// Where a journal starts and ends, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalBounds {
    /// The oldest serial a chain of diffs can start from (the snapshot's
    /// serial when no diff is older).
    pub first_serial: u32,
    /// The serial the journal ends at: the zone's latest stored version.
    pub last_serial: u32,
    pub snapshot_serial: Option<u32>,
    pub diff_count: u64,
    /// The diffs' size as stored, in octets: what the limit counts.
    pub diff_bytes: u64,
    pub snapshot_records: u64,
    pub snapshot_bytes: u64,
    pub limit: Option<JournalLimit>,
}

/// What a commit left a journal as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalStatus {
    /// `None` when the journal holds nothing (a limit set on an empty journal).
    pub bounds: Option<JournalBounds>,
    /// Diffs dropped by this commit to keep within the limit.
    pub trimmed: u64,
    /// The diffs still take more than the limit, because the ones left may not
    /// go: the caller should write a snapshot (compaction) or write its zone
    /// file and move `keep_from` on.
    pub over_limit: bool,
}

/// A whole journal as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJournal {
    pub snapshot: Option<Vec<Record>>,
    pub snapshot_serial: Option<u32>,
    /// The whole chain, oldest first, including diffs older than the snapshot.
    pub diffs: Vec<ZoneDiff>,
    /// `diffs[replay_from..]` are the diffs that apply to the snapshot (all of
    /// them when there is none).
    pub replay_from: usize,
}

/// Where a journal's snapshot is and what it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SnapshotHead {
    pub serial: u32,
    pub chunks: u32,
    pub records: u64,
    pub bytes: u64,
    /// The sequence number of the first diff after the snapshot: diffs before
    /// it precede the snapshot.
    pub after_seq: u64,
}

/// The small value that describes one journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct JournalHead {
    /// The serial the journal ends at; `None` while it has never held anything.
    /// It stays when trimming drops every diff: the zone is still at that version.
    pub end: Option<u32>,
    pub first: u32,
    pub first_seq: u64,
    pub next_seq: u64,
    pub diff_bytes: u64,
    pub snapshot: Option<SnapshotHead>,
    pub limit: Option<JournalLimit>,
}

const HEAD_HAS_END: u8 = 1;
const HEAD_HAS_SNAPSHOT: u8 = 2;
const HEAD_HAS_LIMIT: u8 = 4;
const HEAD_HAS_KEEP_FROM: u8 = 8;

impl JournalHead {
    pub fn diff_count(&self) -> u64 {
        self.next_seq.saturating_sub(self.first_seq)
    }

    pub fn bounds(&self) -> Option<JournalBounds> {
        let last = self.end?;
        Some(JournalBounds {
            first_serial: self.first,
            last_serial: last,
            snapshot_serial: self.snapshot.map(|s| s.serial),
            diff_count: self.diff_count(),
            diff_bytes: self.diff_bytes,
            snapshot_records: self.snapshot.map_or(0, |s| s.records),
            snapshot_bytes: self.snapshot.map_or(0, |s| s.bytes),
            limit: self.limit,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut flags = 0u8;
        if self.end.is_some() {
            flags |= HEAD_HAS_END;
        }
        if self.snapshot.is_some() {
            flags |= HEAD_HAS_SNAPSHOT;
        }
        if let Some(limit) = self.limit {
            flags |= HEAD_HAS_LIMIT;
            if limit.keep_from.is_some() {
                flags |= HEAD_HAS_KEEP_FROM;
            }
        }
        let snap = self.snapshot.unwrap_or(SnapshotHead {
            serial: 0,
            chunks: 0,
            records: 0,
            bytes: 0,
            after_seq: 0,
        });
        FieldWriter::new()
            .u8(flags)
            .u32(self.end.unwrap_or(0))
            .u32(self.first)
            .u64(self.first_seq)
            .u64(self.next_seq)
            .u64(self.diff_bytes)
            .u32(snap.serial)
            .u32(snap.chunks)
            .u64(snap.records)
            .u64(snap.bytes)
            .u64(snap.after_seq)
            .u64(self.limit.map_or(0, |l| l.max_bytes))
            .u32(self.limit.and_then(|l| l.keep_from).unwrap_or(0))
            .finish()
    }

    pub fn decode(value: &[u8]) -> Result<JournalHead, DecodeError> {
        let mut f = FieldReader::new(value, "journal head")?;
        let flags = f.u8()?;
        let end = f.u32()?;
        let first = f.u32()?;
        let first_seq = f.u64()?;
        let next_seq = f.u64()?;
        let diff_bytes = f.u64()?;
        let snapshot = SnapshotHead {
            serial: f.u32()?,
            chunks: f.u32()?,
            records: f.u64()?,
            bytes: f.u64()?,
            after_seq: f.u64()?,
        };
        let max_bytes = f.u64()?;
        let keep_from = f.u32()?;
        f.end()?;
        if first_seq > next_seq {
            return Err(DecodeError::Inconsistent {
                what: "journal head",
            });
        }
        Ok(JournalHead {
            end: (flags & HEAD_HAS_END != 0).then_some(end),
            first,
            first_seq,
            next_seq,
            diff_bytes,
            snapshot: (flags & HEAD_HAS_SNAPSHOT != 0).then_some(snapshot),
            limit: (flags & HEAD_HAS_LIMIT != 0).then_some(JournalLimit {
                max_bytes,
                keep_from: (flags & HEAD_HAS_KEEP_FROM != 0).then_some(keep_from),
            }),
        })
    }
}

/// The index entry of one diff: enough to walk the chain and size the
/// journal without reading its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiffEntry {
    pub old_serial: u32,
    pub new_serial: u32,
    pub removed: u64,
    pub added: u64,
    pub chunks: u32,
    pub bytes: u64,
}

impl DiffEntry {
    pub fn encode(&self) -> Vec<u8> {
        FieldWriter::new()
            .u32(self.old_serial)
            .u32(self.new_serial)
            .u64(self.removed)
            .u64(self.added)
            .u32(self.chunks)
            .u64(self.bytes)
            .finish()
    }

    pub fn decode(value: &[u8]) -> Result<DiffEntry, DecodeError> {
        let mut f = FieldReader::new(value, "diff index entry")?;
        let entry = DiffEntry {
            old_serial: f.u32()?,
            new_serial: f.u32()?,
            removed: f.u64()?,
            added: f.u64()?,
            chunks: f.u32()?,
            bytes: f.u64()?,
        };
        f.end()?;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn head_round_trips_with_and_without_its_parts() {
        let heads = [
            JournalHead::default(),
            JournalHead {
                end: Some(u32::MAX),
                first: 7,
                first_seq: 3,
                next_seq: 9,
                diff_bytes: 1 << 40,
                snapshot: Some(SnapshotHead {
                    serial: 5,
                    chunks: 2,
                    records: 10,
                    bytes: 99,
                    after_seq: 4,
                }),
                limit: Some(JournalLimit {
                    max_bytes: 1000,
                    keep_from: Some(0),
                }),
            },
            JournalHead {
                end: Some(0),
                limit: Some(JournalLimit {
                    max_bytes: 0,
                    keep_from: None,
                }),
                ..JournalHead::default()
            },
        ];
        for head in heads {
            assert_eq!(JournalHead::decode(&head.encode()), Ok(head));
        }
    }

    #[test]
    fn head_with_a_byte_missing_or_extra_is_an_error() {
        let value = JournalHead::default().encode();
        let short = value.get(..value.len() - 1).unwrap();
        assert!(JournalHead::decode(short).is_err());
        let mut long = value.clone();
        long.push(0);
        assert!(JournalHead::decode(&long).is_err());
    }
}
