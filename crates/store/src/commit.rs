//! One commit: everything a zone's change needs stored, applied inside one
//! redb write transaction.

use bulwark_proto::Rtype;
use bulwark_zone::ZoneDiff;
use redb::Table;

use crate::encoding::{ChunkTotals, ChunkWriter, FieldWriter};
use crate::error::StoreError;
use crate::journal::{
    DiffEntry, JournalChange, JournalHead, JournalKind, JournalStatus, Snapshot, SnapshotHead,
    SnapshotHistory,
};
use crate::keys::{
    chunk_key, diff_key, journal_key, meta_key, prefix_range, DIFF_CHUNKS, DIFF_INDEX,
    JOURNAL_HEADS, META, SNAPSHOT_CHUNKS, TIMERS,
};
use crate::read::Context;
use crate::timers::ZoneTimers;

/// Everything to store for one zone at once: all of it or none of it is
/// written (see [`crate::Store::commit`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commit {
    served: Option<JournalChange>,
    unsigned: Option<JournalChange>,
    timers: Option<Option<ZoneTimers>>,
    meta: Vec<(String, Option<Vec<u8>>)>,
}

impl Commit {
    pub fn new() -> Commit {
        Commit::default()
    }

    /// The change to one journal, replacing any given before for that kind.
    pub fn journal(mut self, kind: JournalKind, change: JournalChange) -> Commit {
        *self.change_mut(kind) = Some(change);
        self
    }

    /// Diffs to append to a journal, oldest first.
    pub fn append(
        mut self,
        kind: JournalKind,
        diffs: impl IntoIterator<Item = ZoneDiff>,
    ) -> Commit {
        self.change_mut(kind)
            .get_or_insert_with(JournalChange::default)
            .diffs
            .extend(diffs);
        self
    }

    /// A new snapshot for a journal, written before the diffs of this commit.
    pub fn snapshot(mut self, kind: JournalKind, snapshot: Snapshot) -> Commit {
        self.change_mut(kind)
            .get_or_insert_with(JournalChange::default)
            .snapshot = Some(snapshot);
        self
    }

    /// The size limit of a journal, kept for later commits too.
    pub fn limit(mut self, kind: JournalKind, limit: crate::JournalLimit) -> Commit {
        self.change_mut(kind)
            .get_or_insert_with(JournalChange::default)
            .limit = Some(limit);
        self
    }

    pub fn set_timers(mut self, timers: ZoneTimers) -> Commit {
        self.timers = Some(Some(timers));
        self
    }

    pub fn clear_timers(mut self) -> Commit {
        self.timers = Some(None);
        self
    }

    pub fn put_meta(mut self, key: impl Into<String>, value: impl Into<Vec<u8>>) -> Commit {
        self.meta.push((key.into(), Some(value.into())));
        self
    }

    pub fn delete_meta(mut self, key: impl Into<String>) -> Commit {
        self.meta.push((key.into(), None));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.served.is_none()
            && self.unsigned.is_none()
            && self.timers.is_none()
            && self.meta.is_empty()
    }

    fn change_mut(&mut self, kind: JournalKind) -> &mut Option<JournalChange> {
        match kind {
            JournalKind::Served => &mut self.served,
            JournalKind::Unsigned => &mut self.unsigned,
        }
    }
}

/// What a commit left each journal it changed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitOutcome {
    pub served: Option<JournalStatus>,
    pub unsigned: Option<JournalStatus>,
}

impl CommitOutcome {
    pub fn journal(&self, kind: JournalKind) -> Option<&JournalStatus> {
        match kind {
            JournalKind::Served => self.served.as_ref(),
            JournalKind::Unsigned => self.unsigned.as_ref(),
        }
    }

    /// Whether a journal is over its limit with nothing more that may go.
    pub fn over_limit(&self, kind: JournalKind) -> bool {
        self.journal(kind).is_some_and(|s| s.over_limit)
    }
}

type BytesTable<'t> = Table<'t, &'static [u8], &'static [u8]>;

/// The tables a commit writes, open in its transaction.
pub(crate) struct WriteTables<'t> {
    pub heads: BytesTable<'t>,
    pub index: BytesTable<'t>,
    pub diff_chunks: BytesTable<'t>,
    pub snapshot_chunks: BytesTable<'t>,
    pub timers: BytesTable<'t>,
    pub meta: BytesTable<'t>,
}

impl<'t> WriteTables<'t> {
    pub fn open(txn: &'t redb::WriteTransaction, cx: &Context<'_>) -> Result<Self, StoreError> {
        let open = |def| txn.open_table(def).map_err(|e| cx.db(e));
        Ok(WriteTables {
            heads: open(JOURNAL_HEADS)?,
            index: open(DIFF_INDEX)?,
            diff_chunks: open(DIFF_CHUNKS)?,
            snapshot_chunks: open(SNAPSHOT_CHUNKS)?,
            timers: open(TIMERS)?,
            meta: open(META)?,
        })
    }
}

/// Removes every key that begins with `prefix`.
pub(crate) fn remove_prefix(
    table: &mut BytesTable<'_>,
    prefix: &[u8],
    cx: &Context<'_>,
) -> Result<(), StoreError> {
    let range = prefix_range(prefix);
    remove_range(table, &range.start, &range.end, cx)
}

fn remove_range(
    table: &mut BytesTable<'_>,
    from: &[u8],
    to: &[u8],
    cx: &Context<'_>,
) -> Result<(), StoreError> {
    table
        .retain_in::<&[u8], _>(from..to, |_, _| false)
        .map_err(|e| cx.db(e))
}

/// Applies `commit` to the zone whose keys begin with `zone`.
pub(crate) fn apply(
    tables: &mut WriteTables<'_>,
    zone: &[u8],
    commit: Commit,
    cx: &Context<'_>,
) -> Result<CommitOutcome, StoreError> {
    let mut outcome = CommitOutcome::default();
    if let Some(change) = commit.served {
        outcome.served = Some(apply_journal(
            tables,
            zone,
            JournalKind::Served,
            change,
            cx,
        )?);
    }
    if let Some(change) = commit.unsigned {
        outcome.unsigned = Some(apply_journal(
            tables,
            zone,
            JournalKind::Unsigned,
            change,
            cx,
        )?);
    }
    match commit.timers {
        Some(Some(timers)) => {
            tables
                .timers
                .insert(zone, timers.encode().as_slice())
                .map_err(|e| cx.db(e))?;
        }
        Some(None) => {
            tables.timers.remove(zone).map_err(|e| cx.db(e))?;
        }
        None => {}
    }
    for (key, value) in commit.meta {
        let k = meta_key(zone, &key);
        match value {
            Some(v) => {
                let stored = FieldWriter::new().bytes(&v).finish();
                tables
                    .meta
                    .insert(k.as_slice(), stored.as_slice())
                    .map_err(|e| cx.db(e))?;
            }
            None => {
                tables.meta.remove(k.as_slice()).map_err(|e| cx.db(e))?;
            }
        }
    }
    Ok(outcome)
}

/// Removes one journal whole.
pub(crate) fn clear_journal(
    tables: &mut WriteTables<'_>,
    zone: &[u8],
    kind: JournalKind,
    cx: &Context<'_>,
) -> Result<(), StoreError> {
    let journal = journal_key(zone, kind);
    tables
        .heads
        .remove(journal.as_slice())
        .map_err(|e| cx.db(e))?;
    remove_prefix(&mut tables.index, &journal, cx)?;
    remove_prefix(&mut tables.diff_chunks, &journal, cx)?;
    remove_prefix(&mut tables.snapshot_chunks, &journal, cx)
}

fn apply_journal(
    tables: &mut WriteTables<'_>,
    zone: &[u8],
    kind: JournalKind,
    change: JournalChange,
    cx: &Context<'_>,
) -> Result<JournalStatus, StoreError> {
    let journal = journal_key(zone, kind);
    let before = cx.head(&tables.heads, &journal)?;
    let mut head = before.unwrap_or_default();
    if let Some(snapshot) = &change.snapshot {
        write_snapshot(tables, &journal, kind, &mut head, snapshot, cx)?;
    }
    for diff in &change.diffs {
        append_diff(tables, &journal, kind, &mut head, diff, cx)?;
    }
    if let Some(limit) = change.limit {
        head.limit = Some(limit);
    }
    let trimmed = trim(tables, &journal, &mut head, cx)?;
    // An empty change to an empty journal leaves no head behind.
    if before.is_some() || head != JournalHead::default() {
        tables
            .heads
            .insert(journal.as_slice(), head.encode().as_slice())
            .map_err(|e| cx.db(e))?;
    }
    let over_limit = head.limit.is_some_and(|l| head.diff_bytes > l.max_bytes);
    Ok(JournalStatus {
        bounds: head.bounds(),
        trimmed,
        over_limit,
    })
}

/// Writes `records` in chunks under `prefix`.
fn write_chunks<'r>(
    table: &mut BytesTable<'_>,
    prefix: &[u8],
    records: impl IntoIterator<Item = &'r bulwark_proto::Record>,
    cx: &Context<'_>,
) -> Result<ChunkTotals, StoreError> {
    let mut sink = |n: u32, chunk: &[u8]| {
        let key = chunk_key(prefix, n);
        table
            .insert(key.as_slice(), chunk)
            .map(|_| ())
            .map_err(|e| cx.db(e))
    };
    let mut writer = ChunkWriter::new(cx.zone);
    for record in records {
        writer.push(record, &mut sink)?;
    }
    writer.finish(&mut sink)
}

fn write_snapshot(
    tables: &mut WriteTables<'_>,
    journal: &[u8],
    kind: JournalKind,
    head: &mut JournalHead,
    snapshot: &Snapshot,
    cx: &Context<'_>,
) -> Result<(), StoreError> {
    let serial = snapshot.serial().ok_or_else(|| StoreError::NoSerial {
        zone: cx.zone.to_string(),
        kind,
        what: "snapshot",
    })?;
    match snapshot.history {
        SnapshotHistory::Keep => {
            if let Some(end) = head.end.filter(|e| *e != serial) {
                return Err(StoreError::Discontinuous {
                    zone: cx.zone.to_string(),
                    kind,
                    journal_end: end,
                    change_start: serial,
                });
            }
        }
        SnapshotHistory::Drop => {
            remove_prefix(&mut tables.index, journal, cx)?;
            remove_prefix(&mut tables.diff_chunks, journal, cx)?;
            head.first_seq = head.next_seq;
            head.diff_bytes = 0;
        }
    }
    remove_prefix(&mut tables.snapshot_chunks, journal, cx)?;
    let totals = write_chunks(&mut tables.snapshot_chunks, journal, &snapshot.records, cx)?;
    head.snapshot = Some(SnapshotHead {
        serial,
        chunks: totals.chunks,
        records: totals.records,
        bytes: totals.bytes,
        after_seq: head.next_seq,
    });
    if head.diff_count() == 0 {
        head.first = serial;
    }
    head.end = Some(serial);
    Ok(())
}

fn append_diff(
    tables: &mut WriteTables<'_>,
    journal: &[u8],
    kind: JournalKind,
    head: &mut JournalHead,
    diff: &ZoneDiff,
    cx: &Context<'_>,
) -> Result<(), StoreError> {
    if diff.old_soa.rtype() != Rtype::SOA || diff.new_soa.rtype() != Rtype::SOA {
        return Err(StoreError::NoSerial {
            zone: cx.zone.to_string(),
            kind,
            what: "diff",
        });
    }
    let (old, new) = (diff.old_serial(), diff.new_serial());
    // RFC 1995 §4: each diff applies to the version the previous one made.
    if let Some(end) = head.end.filter(|e| *e != old) {
        return Err(StoreError::Discontinuous {
            zone: cx.zone.to_string(),
            kind,
            journal_end: end,
            change_start: old,
        });
    }
    let seq = head.next_seq;
    let prefix = diff_key(journal, seq);
    // IXFR order (RFC 1995 §4): old SOA, removed, new SOA, added.
    let records = core::iter::once(&diff.old_soa)
        .chain(&diff.removed)
        .chain(core::iter::once(&diff.new_soa))
        .chain(&diff.added);
    let totals = write_chunks(&mut tables.diff_chunks, &prefix, records, cx)?;
    let entry = DiffEntry {
        old_serial: old,
        new_serial: new,
        removed: crate::encoding::len_u64(diff.removed.len()),
        added: crate::encoding::len_u64(diff.added.len()),
        chunks: totals.chunks,
        bytes: totals.bytes,
    };
    tables
        .index
        .insert(prefix.as_slice(), entry.encode().as_slice())
        .map_err(|e| cx.db(e))?;
    if head.diff_count() == 0 {
        head.first = old;
    }
    head.end = Some(new);
    head.next_seq = seq.saturating_add(1);
    head.diff_bytes = head.diff_bytes.saturating_add(totals.bytes);
    Ok(())
}

/// Drops the oldest diffs while the journal is over its limit and they may
/// go: diffs before the snapshot, and diffs up to `keep_from`. Returns how
/// many went.
fn trim(
    tables: &mut WriteTables<'_>,
    journal: &[u8],
    head: &mut JournalHead,
    cx: &Context<'_>,
) -> Result<u64, StoreError> {
    let Some(limit) = head.limit else {
        return Ok(0);
    };
    if head.diff_bytes <= limit.max_bytes {
        return Ok(0);
    }
    let mut droppable_to = head.first_seq;
    if let Some(snapshot) = head.snapshot {
        droppable_to = droppable_to.max(snapshot.after_seq);
    }
    if let Some(keep_from) = limit.keep_from {
        // The newest diff that ends at `keep_from`: it and all before it are
        // written out. A serial can recur over a long history (RFC 1982
        // arithmetic wraps); the newest occurrence is the version written last.
        let found = cx.find_diff(&tables.index, journal, keep_from, |e| e.new_serial)?;
        if let Some(seq) = found {
            droppable_to = droppable_to.max(seq.saturating_add(1));
        }
    }
    let droppable_to = droppable_to.min(head.next_seq);
    if droppable_to <= head.first_seq {
        return Ok(0);
    }
    let entries = cx.entries(&tables.index, journal, head.first_seq, droppable_to)?;
    let mut bytes = head.diff_bytes;
    let mut stop = head.first_seq;
    let mut first = head.first;
    for (seq, entry) in &entries {
        if bytes <= limit.max_bytes {
            break;
        }
        bytes = bytes.saturating_sub(entry.bytes);
        stop = seq.saturating_add(1);
        first = entry.new_serial;
    }
    let dropped = stop.saturating_sub(head.first_seq);
    if dropped == 0 {
        return Ok(0);
    }
    let from = diff_key(journal, head.first_seq);
    let to = diff_key(journal, stop);
    remove_range(&mut tables.index, &from, &to, cx)?;
    remove_range(&mut tables.diff_chunks, &from, &to, cx)?;
    head.first_seq = stop;
    head.first = first;
    head.diff_bytes = bytes;
    Ok(dropped)
}

/// A stored metadata value without its version octet.
pub(crate) fn decode_meta(value: &[u8]) -> Result<Vec<u8>, crate::error::DecodeError> {
    let mut r = bulwark_proto::wire::Reader::new(value);
    crate::encoding::read_version(&mut r, "metadata")?;
    Ok(r.read_rest().to_vec())
}
