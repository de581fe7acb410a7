//! Replication between servers, as pure functions over bytes and zones: TSIG
//! (RFC 8945), outgoing and incoming AXFR (RFC 5936) and IXFR (RFC 1995),
//! NOTIFY (RFC 1996), dynamic UPDATE (RFC 2136), SOA serial arithmetic
//! (RFC 1982) and catalog zones (RFC 9432). Two engines drive them: the
//! requests a server serves ([`serve`]) and a secondary's refresh of its
//! zones from their primaries ([`refresh`]). No sockets, no clock, no files:
//! the server binary brings the time and moves the bytes.
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

pub mod acl;
pub mod catalog;
pub mod notify;
pub mod refresh;
pub mod remote;
pub mod serial;
pub mod serve;
pub mod transfer_in;
pub mod transfer_out;
pub mod tsig;
pub mod tsig_keyfile;
pub mod update;
