//! The server's one embedded database (redb): what must survive a crash.
//!
//! Per zone (keyed by its apex, lowercased):
//! - two journals of zone versions, [`JournalKind::Served`] (the diffs IXFR
//!   sends, RFC 1995, and the served zone's recovery) and
//!   [`JournalKind::Unsigned`] (a signed zone's unsigned content, so dynamic
//!   updates survive a crash). A journal is an optional snapshot (every record
//!   at one serial) and a chain of [`bulwark_zone::ZoneDiff`]s, each starting
//!   where the one before ended;
//! - a secondary zone's refresh timers ([`ZoneTimers`]);
//! - small metadata values by key.
//!
//! Every change is one [`Commit`], written in one redb write transaction and
//! durable when [`Store::commit`] returns: the server acknowledges a change
//! only after that.
//!
//! The values are this crate's own format, versioned by their first octet;
//! records in DNS wire form (see `encoding`).
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

mod commit;
mod encoding;
mod error;
mod journal;
mod keys;
mod read;
mod store;
mod timers;

pub use commit::{Commit, CommitOutcome};
pub use error::{DecodeError, StoreError};
pub use journal::{
    JournalBounds, JournalChange, JournalKind, JournalLimit, JournalStatus, Snapshot,
    SnapshotHistory, StoredJournal,
};
pub use store::Store;
pub use timers::ZoneTimers;
