//! Reading journals back, from a read or a write transaction alike. A damaged
//! value is `StoreError::Corrupt` naming the zone; a redb failure is
//! `StoreError::Database` naming the file.

use std::path::Path;

use bulwark_proto::{Name, Record, Rtype};
use bulwark_zone::ZoneDiff;
use redb::ReadableTable;

use crate::encoding::read_chunk;
use crate::error::{DecodeError, StoreError};
use crate::journal::{DiffEntry, JournalHead, SnapshotHead};
use crate::keys::{chunk_key, diff_key, prefix_range, seq_of_diff_key};

pub(crate) trait Bytes: ReadableTable<&'static [u8], &'static [u8]> {}
impl<T: ReadableTable<&'static [u8], &'static [u8]>> Bytes for T {}

/// What reading needs to name its failures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub path: &'a Path,
    pub zone: &'a Name,
}

impl Context<'_> {
    pub fn db<E: Into<redb::Error>>(&self, e: E) -> StoreError {
        StoreError::Database {
            path: self.path.to_path_buf(),
            source: Box::new(e.into()),
        }
    }

    pub fn corrupt(&self, source: DecodeError) -> StoreError {
        StoreError::Corrupt {
            zone: self.zone.to_string(),
            source,
        }
    }

    /// The stored value at `key`, decoded.
    pub fn get<T: Bytes, V>(
        &self,
        table: &T,
        key: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<V, DecodeError>,
    ) -> Result<Option<V>, StoreError> {
        match table.get(key).map_err(|e| self.db(e))? {
            Some(guard) => decode(guard.value()).map(Some).map_err(|e| self.corrupt(e)),
            None => Ok(None),
        }
    }

    pub fn head<T: Bytes>(
        &self,
        heads: &T,
        journal: &[u8],
    ) -> Result<Option<JournalHead>, StoreError> {
        self.get(heads, journal, JournalHead::decode)
    }

    /// Every record stored in the chunks under `prefix`, numbered from 0, in order.
    fn chunks<T: Bytes>(
        &self,
        table: &T,
        prefix: &[u8],
        chunks: u32,
        what: &'static str,
        out: &mut impl FnMut(Record),
    ) -> Result<u64, StoreError> {
        let mut count = 0u64;
        for n in 0..chunks {
            let key = chunk_key(prefix, n);
            let guard = table
                .get(key.as_slice())
                .map_err(|e| self.db(e))?
                .ok_or_else(|| self.corrupt(DecodeError::MissingEntry { what }))?;
            let got = read_chunk(guard.value(), what, out).map_err(|e| self.corrupt(e))?;
            count = count.saturating_add(got);
        }
        Ok(count)
    }

    pub fn snapshot<T: Bytes>(
        &self,
        chunks: &T,
        journal: &[u8],
        head: &SnapshotHead,
    ) -> Result<Vec<Record>, StoreError> {
        let mut records = Vec::with_capacity(usize::try_from(head.records).unwrap_or(0));
        let found = self.chunks(chunks, journal, head.chunks, "snapshot", &mut |r| {
            records.push(r)
        })?;
        if found != head.records {
            return Err(self.corrupt(DecodeError::RecordCount {
                what: "snapshot",
                expected: head.records,
                found,
            }));
        }
        Ok(records)
    }

    /// One diff, from its index entry and its chunks. The chunks hold its
    /// records in IXFR order (RFC 1995 §4): old SOA, removed, new SOA, added.
    pub fn diff<T: Bytes>(
        &self,
        chunks: &T,
        journal: &[u8],
        seq: u64,
        entry: &DiffEntry,
    ) -> Result<ZoneDiff, StoreError> {
        let mut old_soa = None;
        let mut new_soa = None;
        let mut removed = Vec::with_capacity(usize::try_from(entry.removed).unwrap_or(0));
        let mut added = Vec::with_capacity(usize::try_from(entry.added).unwrap_or(0));
        let mut at = 0u64;
        let new_soa_at = entry.removed.saturating_add(1);
        let prefix = diff_key(journal, seq);
        let found = self.chunks(chunks, &prefix, entry.chunks, "diff", &mut |r| {
            if at == 0 {
                old_soa = Some(r);
            } else if at < new_soa_at {
                removed.push(r);
            } else if at == new_soa_at {
                new_soa = Some(r);
            } else {
                added.push(r);
            }
            at = at.saturating_add(1);
        })?;
        let expected = entry.removed.saturating_add(entry.added).saturating_add(2);
        if found != expected {
            return Err(self.corrupt(DecodeError::RecordCount {
                what: "diff",
                expected,
                found,
            }));
        }
        let soa = |r: Option<Record>| r.filter(|r| r.rtype() == Rtype::SOA);
        let (Some(old_soa), Some(new_soa)) = (soa(old_soa), soa(new_soa)) else {
            return Err(self.corrupt(DecodeError::MissingSoa { what: "diff" }));
        };
        Ok(ZoneDiff {
            old_soa,
            new_soa,
            removed,
            added,
        })
    }

    /// The sequence number of the newest diff whose `pick` serial is `serial`,
    /// searching back from the newest diff: the cost grows with how far back
    /// it is, not with the journal's length.
    pub fn find_diff<T: Bytes>(
        &self,
        index: &T,
        journal: &[u8],
        serial: u32,
        pick: impl Fn(&DiffEntry) -> u32,
    ) -> Result<Option<u64>, StoreError> {
        let range = prefix_range(journal);
        let iter = index
            .range::<&[u8]>(range.start.as_slice()..range.end.as_slice())
            .map_err(|e| self.db(e))?;
        for item in iter.rev() {
            let (key, value) = item.map_err(|e| self.db(e))?;
            let entry = DiffEntry::decode(value.value()).map_err(|e| self.corrupt(e))?;
            if pick(&entry) == serial {
                let seq = seq_of_diff_key(key.value()).ok_or_else(|| {
                    self.corrupt(DecodeError::MissingEntry {
                        what: "diff index key",
                    })
                })?;
                return Ok(Some(seq));
            }
        }
        Ok(None)
    }

    /// The index entries of diffs `from..to`, in order, with their sequence numbers.
    pub fn entries<T: Bytes>(
        &self,
        index: &T,
        journal: &[u8],
        from: u64,
        to: u64,
    ) -> Result<Vec<(u64, DiffEntry)>, StoreError> {
        let lo = diff_key(journal, from);
        let hi = diff_key(journal, to);
        let iter = index
            .range::<&[u8]>(lo.as_slice()..hi.as_slice())
            .map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        let mut expect = from;
        for item in iter {
            let (key, value) = item.map_err(|e| self.db(e))?;
            let seq = seq_of_diff_key(key.value())
                .filter(|s| *s == expect)
                .ok_or_else(|| self.corrupt(DecodeError::MissingEntry { what: "diff index" }))?;
            let entry = DiffEntry::decode(value.value()).map_err(|e| self.corrupt(e))?;
            out.push((seq, entry));
            expect = expect.saturating_add(1);
        }
        if expect != to {
            return Err(self.corrupt(DecodeError::MissingEntry { what: "diff index" }));
        }
        Ok(out)
    }

    /// The diffs `from..to`, decoded, checked to form one chain.
    pub fn diffs<T: Bytes, C: Bytes>(
        &self,
        index: &T,
        chunks: &C,
        journal: &[u8],
        from: u64,
        to: u64,
    ) -> Result<Vec<ZoneDiff>, StoreError> {
        let entries = self.entries(index, journal, from, to)?;
        let mut out = Vec::with_capacity(entries.len());
        let mut end: Option<u32> = None;
        for (seq, entry) in &entries {
            if let Some(ends) = end.filter(|e| *e != entry.old_serial) {
                return Err(self.corrupt(DecodeError::BrokenChain {
                    ends,
                    starts: entry.old_serial,
                }));
            }
            let diff = self.diff(chunks, journal, *seq, entry)?;
            if diff.old_serial() != entry.old_serial || diff.new_serial() != entry.new_serial {
                return Err(self.corrupt(DecodeError::IndexMismatch {
                    records_old: diff.old_serial(),
                    records_new: diff.new_serial(),
                    index_old: entry.old_serial,
                    index_new: entry.new_serial,
                }));
            }
            end = Some(entry.new_serial);
            out.push(diff);
        }
        Ok(out)
    }
}
