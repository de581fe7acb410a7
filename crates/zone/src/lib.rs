//! Zone files and zone data: the master-file parser and printer, the in-memory
//! `Zone` shaped for answering, the `ZoneSet` of all zones, and load-time checks;
//! also the tokenizer for BIND's named.conf syntax that key and anchor files share.
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

pub mod bind_conf;
pub mod build;
pub mod check;
pub mod diagnostic;
pub mod diff;
pub mod fork;
pub mod load;
mod node_index;
pub mod nsec3;
pub mod parse;
pub mod printer;
pub mod zone;
pub mod zoneset;

pub use build::ZoneBuilder;
pub use check::{Problem, Severity};
pub use diagnostic::Diagnostic;
pub use diff::{apply_diff, apply_to_zone, diff_zones, DiffError, ZoneDiff};
pub use fork::{Fork, InTurn};
pub use load::{load_zone_file, LoadError};
pub use parse::{parse_file, parse_str};
pub use printer::print_zone;
pub use zone::Zone;
pub use zoneset::ZoneSet;
