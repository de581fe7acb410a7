//! What can go wrong with the store, each error naming the file or the zone.

use std::path::PathBuf;

use crate::journal::JournalKind;

/// Why a stored value could not be read back. Every value begins with a format
/// version octet; anything else wrong with it is damage (or a newer format).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("the {what} value is empty")]
    Empty { what: &'static str },
    #[error("the {what} value has format version {version}, this build reads version {supported}")]
    UnsupportedVersion {
        what: &'static str,
        version: u8,
        supported: u8,
    },
    #[error("the {what} value ends early")]
    Truncated { what: &'static str },
    #[error("the {what} value has {extra} octets after its end")]
    TrailingData { what: &'static str, extra: usize },
    #[error("a stored record has a bad owner name: {0}")]
    BadOwner(bulwark_proto::wire::WireError),
    #[error("the {what} holds {found} records where its index says {expected}")]
    RecordCount {
        what: &'static str,
        expected: u64,
        found: u64,
    },
    #[error("a stored {what} does not have a SOA record where one belongs")]
    MissingSoa { what: &'static str },
    #[error("the stored diffs do not form a chain: one ends at serial {ends}, the next starts at {starts}")]
    BrokenChain { ends: u32, starts: u32 },
    #[error("a diff's records go from serial {records_old} to {records_new}, its index entry from {index_old} to {index_new}")]
    IndexMismatch {
        records_old: u32,
        records_new: u32,
        index_old: u32,
        index_new: u32,
    },
    #[error("the {what} names a chunk or entry that is not stored")]
    MissingEntry { what: &'static str },
    #[error("the {what} contradicts itself")]
    Inconsistent { what: &'static str },
    #[error("the stored primary address is not UTF-8")]
    NotUtf8,
}

/// What the store refuses or fails to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// redb locks the file (`flock`, exclusive) for as long as it is open: a
    /// second server, or a second `Store` in this process, cannot share it.
    #[error("{path}: the store is already open (its lock is held by another process, or by another Store in this one)")]
    Locked { path: PathBuf },
    #[error(
        "{path}: not a bulwark store (the file is not a redb database, or its header is damaged)"
    )]
    NotADatabase { path: PathBuf },
    #[error(
        "{path}: the store's layout is version {version}, this build reads version {supported}"
    )]
    UnsupportedLayout {
        path: PathBuf,
        version: u8,
        supported: u8,
    },
    #[error("{path}: cannot open the store: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: Box<redb::DatabaseError>,
    },
    #[error("{path}: database error: {source}")]
    Database {
        path: PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
    /// Zones are named in presentation form.
    ///
    /// A stored value of `zone` cannot be decoded: the file is damaged or was
    /// written by a newer build.
    #[error("stored data of zone {zone} is damaged: {source}")]
    Corrupt {
        zone: String,
        #[source]
        source: DecodeError,
    },
    /// A key in a table is not in the shape this build writes.
    #[error("{path}: a key in table {table} is damaged")]
    CorruptKey { path: PathBuf, table: &'static str },
    /// RFC 1995 §4: a diff applies only to the version it starts from, so a
    /// journal holds a chain. Nothing of the commit was written.
    #[error("zone {zone}: the {kind} journal ends at serial {journal_end}, the change starts at serial {change_start}")]
    Discontinuous {
        zone: String,
        kind: JournalKind,
        journal_end: u32,
        change_start: u32,
    },
    /// A snapshot must hold exactly one SOA record, and a diff's `old_soa` and
    /// `new_soa` must be SOA records: their serials place it in the chain.
    #[error("zone {zone}: the {kind} {what} has no single SOA record to take its serial from")]
    NoSerial {
        zone: String,
        kind: JournalKind,
        what: &'static str,
    },
    /// The record format keeps RFC 1035's 16-bit RDLENGTH.
    #[error(
        "zone {zone}: a record of {owner} has {len} octets of data, more than RDLENGTH can say"
    )]
    RdataTooLong {
        zone: String,
        owner: String,
        len: usize,
    },
}
