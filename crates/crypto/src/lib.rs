//! bulwark's cryptography, all of it from aws-lc-rs: DNSSEC signing and
//! verification, key generation, DS and NSEC3 digests. Nothing here is
//! hand-written cryptography; what this crate adds is the DNS encodings of keys
//! and signatures (RFC 3110, RFC 6605, RFC 8080) and BIND's key file format.
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

pub mod nsec3;

pub use nsec3::{nsec3_hash, Nsec3Hash, NSEC3_HASH_LEN};
