//! Zone files and zone data: the master-file parser and printer, the in-memory
//! `Zone` shaped for answering, the `ZoneSet` of all zones, and load-time checks.
//!
//! STUB: the contract the binary and `bulwark-auth` build against; bodies are being written.
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

pub mod load;
pub mod zone;
pub mod zoneset;

pub use load::{load_zone_file, LoadError};
pub use zone::Zone;
pub use zoneset::ZoneSet;
