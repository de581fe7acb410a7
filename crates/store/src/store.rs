//! The store: one redb database file per server.

use std::collections::BTreeSet;
use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use bulwark_proto::{Name, Record};
use bulwark_zone::ZoneDiff;
use redb::{Database, DatabaseError, ReadableTable, StorageError};

use crate::commit::{self, Commit, CommitOutcome, WriteTables};
use crate::error::StoreError;
use crate::journal::{JournalBounds, JournalKind, StoredJournal};
use crate::keys::{
    journal_key, meta_key, prefix_end, prefix_range, zone_key, zone_of_key, ALL_TABLES,
    DIFF_CHUNKS, DIFF_INDEX, JOURNAL_HEADS, LAYOUT, LAYOUT_KEY, META, SNAPSHOT_CHUNKS, TIMERS,
    ZONE_TABLES,
};
use crate::read::Context;
use crate::timers::ZoneTimers;

/// The layout of tables and keys this build writes (stored under `layout`).
const LAYOUT_VERSION: u8 = 1;

/// redb's page cache. The server answers from its zones in memory and reads
/// the store at start-up and for IXFR, so a large cache would mostly hold a
/// second copy of zone data; redb's own default is 1 GiB.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The server's embedded database.
///
/// Every change goes through [`Store::commit`], one redb write transaction
/// each; reads see the last commit whole. The store may be shared between
/// threads (`&self` everywhere): redb runs one write transaction at a time
/// and reads alongside it.
pub struct Store {
    db: Database,
    path: PathBuf,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the store at `path`, creating the file if it does not exist.
    ///
    /// New files use redb's v3 file format, the only one redb 3 reads. After a
    /// crash, opening repairs the file to its last complete commit first.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        let db = redb::Builder::new()
            .create_with_file_format_v3(true)
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| open_error(&path, e))?;
        let store = Store { db, path };
        store.prepare_layout()?;
        Ok(store)
    }

    /// The file the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates every table, so readers never meet a missing one, and checks
    /// that the file's layout is the one this build writes.
    fn prepare_layout(&self) -> Result<(), StoreError> {
        let root = Name::root();
        let cx = self.cx(&root);
        let txn = self.begin_write(&cx)?;
        {
            for def in ALL_TABLES {
                txn.open_table(def).map_err(|e| cx.db(e))?;
            }
            let mut layout = txn.open_table(LAYOUT).map_err(|e| cx.db(e))?;
            let stored = layout
                .get(LAYOUT_KEY)
                .map_err(|e| cx.db(e))?
                .map(|v| v.value().first().copied());
            match stored {
                None => {
                    layout
                        .insert(LAYOUT_KEY, [LAYOUT_VERSION].as_slice())
                        .map_err(|e| cx.db(e))?;
                }
                Some(Some(LAYOUT_VERSION)) => {}
                Some(version) => {
                    return Err(StoreError::UnsupportedLayout {
                        path: self.path.clone(),
                        version: version.unwrap_or(0),
                        supported: LAYOUT_VERSION,
                    })
                }
            }
        }
        txn.commit().map_err(|e| cx.db(e))
    }

    fn cx<'a>(&'a self, zone: &'a Name) -> Context<'a> {
        Context {
            path: &self.path,
            zone,
        }
    }

    fn begin_write(&self, cx: &Context<'_>) -> Result<redb::WriteTransaction, StoreError> {
        let mut txn = self.db.begin_write().map_err(|e| cx.db(e))?;
        // Two-phase commit: the commit slot is switched only after the data
        // it points at is synced, so a torn write is never taken for a
        // commit, even when its content came from a remote server (redb's
        // default 1PC+C would rely on a checksum alone). It costs a second
        // fsync: 0.4 ms per small commit here, against 8 ms for redb's quick
        // repair, which would also save the allocator state each time; without
        // it, opening after a crash walks the file (31 ms for 68 MB here).
        txn.set_two_phase_commit(true);
        Ok(txn)
    }

    /// Runs `write` in one write transaction and commits it, or leaves the
    /// store as it was if `write` fails.
    fn write<T>(
        &self,
        zone: &Name,
        write: impl FnOnce(&mut WriteTables<'_>, &[u8], &Context<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let cx = self.cx(zone);
        let key = zone_key(zone);
        let txn = self.begin_write(&cx)?;
        let out = {
            let mut tables = WriteTables::open(&txn, &cx)?;
            write(&mut tables, &key, &cx)?
        };
        txn.commit().map_err(|e| cx.db(e))?;
        Ok(out)
    }

    fn read(&self, cx: &Context<'_>) -> Result<redb::ReadTransaction, StoreError> {
        self.db.begin_read().map_err(|e| cx.db(e))
    }

    /// Stores `changes` for `zone` in one write transaction: all of it, or —
    /// on any error, such as a diff that does not continue its journal
    /// (`StoreError::Discontinuous`) — none of it.
    ///
    /// Durable when it returns: redb commits with `Durability::Immediate`,
    /// which writes the transaction's pages and `fsync`s (`fdatasync` on
    /// Linux) the file before and after switching the commit slot that points
    /// at them. A crash (of the process or the machine) at any moment leaves
    /// either this commit whole or the one before it. So the server may
    /// acknowledge an UPDATE (RFC 2136 §3.7) or a finished transfer once
    /// this returns, and not before.
    pub fn commit(&self, zone: &Name, changes: Commit) -> Result<CommitOutcome, StoreError> {
        self.write(zone, |tables, key, cx| {
            commit::apply(tables, key, changes, cx)
        })
    }

    /// Stores a zone's refresh timers (a commit of its own).
    pub fn put_timers(&self, zone: &Name, timers: ZoneTimers) -> Result<(), StoreError> {
        self.commit(zone, Commit::new().set_timers(timers))
            .map(|_| ())
    }

    /// Stores one metadata value of a zone (a commit of its own).
    pub fn put_meta(&self, zone: &Name, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.commit(zone, Commit::new().put_meta(key, value))
            .map(|_| ())
    }

    /// Removes one metadata value of a zone (a commit of its own).
    pub fn delete_meta(&self, zone: &Name, key: &str) -> Result<(), StoreError> {
        self.commit(zone, Commit::new().delete_meta(key))
            .map(|_| ())
    }

    /// Removes everything stored for `zone`, in one transaction.
    pub fn remove_zone(&self, zone: &Name) -> Result<(), StoreError> {
        self.write(zone, |tables, key, cx| {
            for table in [
                &mut tables.heads,
                &mut tables.index,
                &mut tables.diff_chunks,
                &mut tables.snapshot_chunks,
                &mut tables.timers,
                &mut tables.meta,
            ] {
                commit::remove_prefix(table, key, cx)?;
            }
            Ok(())
        })
    }

    /// Removes one journal of `zone`: its snapshot, diffs and limit.
    pub fn clear_journal(&self, zone: &Name, kind: JournalKind) -> Result<(), StoreError> {
        self.write(zone, |tables, key, cx| {
            commit::clear_journal(tables, key, kind, cx)
        })
    }

    /// Where a journal starts and ends and what it holds, read from its head
    /// alone.
    pub fn journal_bounds(
        &self,
        zone: &Name,
        kind: JournalKind,
    ) -> Result<Option<JournalBounds>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let heads = txn.open_table(JOURNAL_HEADS).map_err(|e| cx.db(e))?;
        let journal = journal_key(&zone_key(zone), kind);
        Ok(cx.head(&heads, &journal)?.and_then(|h| h.bounds()))
    }

    /// A whole journal: its snapshot and every diff, checked to form one chain.
    pub fn load(
        &self,
        zone: &Name,
        kind: JournalKind,
    ) -> Result<Option<StoredJournal>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let heads = txn.open_table(JOURNAL_HEADS).map_err(|e| cx.db(e))?;
        let journal = journal_key(&zone_key(zone), kind);
        // A journal that was only given a limit holds nothing yet.
        let Some(head) = cx.head(&heads, &journal)?.filter(|h| h.end.is_some()) else {
            return Ok(None);
        };
        let snapshot = match &head.snapshot {
            Some(s) => {
                let chunks = txn.open_table(SNAPSHOT_CHUNKS).map_err(|e| cx.db(e))?;
                Some(cx.snapshot(&chunks, &journal, s)?)
            }
            None => None,
        };
        let index = txn.open_table(DIFF_INDEX).map_err(|e| cx.db(e))?;
        let chunks = txn.open_table(DIFF_CHUNKS).map_err(|e| cx.db(e))?;
        let diffs = cx.diffs(&index, &chunks, &journal, head.first_seq, head.next_seq)?;
        let replay_from = head.snapshot.map_or(0, |s| {
            usize::try_from(s.after_seq.saturating_sub(head.first_seq)).unwrap_or(usize::MAX)
        });
        Ok(Some(StoredJournal {
            snapshot,
            snapshot_serial: head.snapshot.map(|s| s.serial),
            replay_from: replay_from.min(diffs.len()),
            diffs,
        }))
    }

    /// A journal's snapshot alone. With [`Store::diffs_since`] from its
    /// serial, this is what recovery reads: diffs older than the snapshot
    /// are not decoded.
    pub fn snapshot(
        &self,
        zone: &Name,
        kind: JournalKind,
    ) -> Result<Option<Vec<Record>>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let heads = txn.open_table(JOURNAL_HEADS).map_err(|e| cx.db(e))?;
        let journal = journal_key(&zone_key(zone), kind);
        let Some(snapshot) = cx.head(&heads, &journal)?.and_then(|h| h.snapshot) else {
            return Ok(None);
        };
        let chunks = txn.open_table(SNAPSHOT_CHUNKS).map_err(|e| cx.db(e))?;
        cx.snapshot(&chunks, &journal, &snapshot).map(Some)
    }

    /// The chain of diffs from version `serial` to the journal's end, oldest
    /// first: empty when the journal ends at `serial`, `None` when it does not
    /// reach back to `serial` (RFC 1995 §4: the server then sends the whole
    /// zone instead). Only the diffs returned are decoded.
    pub fn diffs_since(
        &self,
        zone: &Name,
        kind: JournalKind,
        serial: u32,
    ) -> Result<Option<Vec<ZoneDiff>>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let heads = txn.open_table(JOURNAL_HEADS).map_err(|e| cx.db(e))?;
        let journal = journal_key(&zone_key(zone), kind);
        let Some(head) = cx.head(&heads, &journal)? else {
            return Ok(None);
        };
        if head.end == Some(serial) {
            return Ok(Some(Vec::new()));
        }
        let index = txn.open_table(DIFF_INDEX).map_err(|e| cx.db(e))?;
        let Some(from) = cx.find_diff(&index, &journal, serial, |e| e.old_serial)? else {
            return Ok(None);
        };
        let chunks = txn.open_table(DIFF_CHUNKS).map_err(|e| cx.db(e))?;
        cx.diffs(&index, &chunks, &journal, from, head.next_seq)
            .map(Some)
    }

    /// A zone's refresh timers.
    pub fn timers(&self, zone: &Name) -> Result<Option<ZoneTimers>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let table = txn.open_table(TIMERS).map_err(|e| cx.db(e))?;
        cx.get(&table, &zone_key(zone), ZoneTimers::decode)
    }

    /// One metadata value of a zone.
    pub fn get_meta(&self, zone: &Name, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let table = txn.open_table(META).map_err(|e| cx.db(e))?;
        cx.get(&table, &meta_key(&zone_key(zone), key), commit::decode_meta)
    }

    /// Every metadata value of a zone, by key.
    pub fn meta(&self, zone: &Name) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let cx = self.cx(zone);
        let txn = self.read(&cx)?;
        let table = txn.open_table(META).map_err(|e| cx.db(e))?;
        let zkey = zone_key(zone);
        let range = prefix_range(&zkey);
        let mut out = Vec::new();
        for item in table
            .range::<&[u8]>(range.start.as_slice()..range.end.as_slice())
            .map_err(|e| cx.db(e))?
        {
            let (key, value) = item.map_err(|e| cx.db(e))?;
            let name = key
                .value()
                .get(zkey.len()..)
                .and_then(|k| core::str::from_utf8(k).ok())
                .ok_or_else(|| StoreError::CorruptKey {
                    path: self.path.clone(),
                    table: "zone_meta",
                })?;
            let value = commit::decode_meta(value.value()).map_err(|e| cx.corrupt(e))?;
            out.push((name.to_string(), value));
        }
        Ok(out)
    }

    /// Every zone with anything stored, in canonical order (RFC 4034 §6.1).
    pub fn zones(&self) -> Result<Vec<Name>, StoreError> {
        let root = Name::root();
        let cx = self.cx(&root);
        let txn = self.read(&cx)?;
        let mut zones = BTreeSet::new();
        for (def, name) in ZONE_TABLES {
            let table = txn.open_table(def).map_err(|e| cx.db(e))?;
            let corrupt = || StoreError::CorruptKey {
                path: self.path.clone(),
                table: name,
            };
            // Skip from one zone's keys to the next: one lookup per zone,
            // not one per key.
            let mut from = Vec::new();
            loop {
                let next = table
                    .range::<&[u8]>(from.as_slice()..)
                    .map_err(|e| cx.db(e))?
                    .next();
                let Some(item) = next else { break };
                let (key, _) = item.map_err(|e| cx.db(e))?;
                let zone = zone_of_key(key.value()).ok_or_else(corrupt)?;
                zones.insert(Name::from_wire(zone).map_err(|_| corrupt())?);
                match prefix_end(zone) {
                    Some(end) => from = end,
                    None => break,
                }
            }
        }
        Ok(zones.into_iter().collect())
    }
}

fn open_error(path: &Path, e: DatabaseError) -> StoreError {
    let path = path.to_path_buf();
    match e {
        DatabaseError::DatabaseAlreadyOpen => StoreError::Locked { path },
        DatabaseError::Storage(StorageError::Io(io)) if io.kind() == ErrorKind::InvalidData => {
            StoreError::NotADatabase { path }
        }
        source => StoreError::Open {
            path,
            source: Box::new(source),
        },
    }
}
