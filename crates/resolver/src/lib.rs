//! Recursive and forwarding resolution as a sans-I/O engine, shaped like
//! quinn-proto: the edge hands it client questions ([`Resolver::handle_query`]),
//! the answers of the servers it asked ([`Resolver::handle_response`]) and the
//! passing of time ([`Resolver::handle_timeout`]); it hands back the queries to
//! send ([`Resolver::poll_transmit`]), the answers for clients
//! ([`Resolver::poll_answer`]) and when to wake it next
//! ([`Resolver::poll_timeout`]). It never opens a socket, reads the clock or
//! starts a thread: `now` (Unix milliseconds) and randomness are arguments.
//!
//! The pieces, each in its own module:
//! - [`cache`]: RRsets and negative answers with their TTLs and trust rank
//!   (RFC 2181 §5.4.1), shared with the edge's workers, which answer cache
//!   hits without the engine ([`cache::Cache::answer`]);
//! - [`infra`]: what is known of each server: smoothed RTT, time-outs and
//!   back-off, lameness per zone, EDNS support;
//! - [`classify`]: what a server's response says (an answer, a CNAME, a
//!   referral, NXDOMAIN, NODATA, lameness), with out-of-bailiwick records
//!   scrubbed;
//! - `task`: one question's resolution, step by step: the closest known zone
//!   cut, QNAME minimisation (RFC 9156), the servers' addresses, the query,
//!   the response;
//! - [`engine`]: the tasks, their exchanges, identical questions shared, the
//!   budgets that bound what one client question may cost;
//! - [`validate`] and `validator`: DNSSEC validation (RFC 4035 §5), the
//!   judgements that need no network and the walk down the chain of trust
//!   that fetches what they need;
//! - [`response`]: the answer a client gets, written into a buffer.
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

mod aggressive;
mod anchor_upkeep;
pub mod cache;
pub mod classify;
pub mod config;
pub mod engine;
mod forget;
pub mod infra;
pub mod negative_anchors;
pub mod packed;
pub mod response;
pub mod rrset;
mod task;
mod upstream;
pub mod validate;
mod validator;

pub use cache::{Cache, CacheStats, CachedReply, Trust};
pub use config::{ForwardZone, Limits, ResolverConfig, StaleConfig, StubZone, ValidationConfig};
pub use engine::{
    Answer, ClientQuestion, ClientToken, ExchangeError, ExchangeId, Randomness, Resolver, Transmit,
    Transport,
};
pub use response::{write_response, Resolution, Security};
pub use rrset::RrSet;

/// Unix time in milliseconds, as the edge's clock gives it.
pub type Millis = u64;

/// RFC 8914 §4: the Extended DNS Error info codes the resolver gives.
pub mod ede {
    /// Other: a failure no other code names (the text says which).
    pub const OTHER: u16 = 0;
    /// The zone signs with an algorithm the resolver does not implement.
    pub const UNSUPPORTED_DNSKEY_ALGORITHM: u16 = 1;
    /// The DS set uses only digests the resolver does not implement.
    pub const UNSUPPORTED_DS_DIGEST_TYPE: u16 = 2;
    /// An answer served from stale cache data (RFC 8767).
    pub const STALE_ANSWER: u16 = 3;
    /// Validation failed for a reason no finer code names.
    pub const DNSSEC_BOGUS: u16 = 6;
    /// Every signature has expired.
    pub const SIGNATURE_EXPIRED: u16 = 7;
    /// Every signature's inception is still to come.
    pub const SIGNATURE_NOT_YET_VALID: u16 = 8;
    /// No key of the zone matches the DS set or the signatures.
    pub const DNSKEY_MISSING: u16 = 9;
    /// Signed data came without signatures.
    pub const RRSIGS_MISSING: u16 = 10;
    /// The key that signed is not a zone key.
    pub const NO_ZONE_KEY_BIT_SET: u16 = 11;
    /// A denial came without the NSEC or NSEC3 records that prove it.
    pub const NSEC_MISSING: u16 = 12;
    /// A cached failure repeated without asking again.
    pub const CACHED_ERROR: u16 = 13;
    /// The client is not allowed to ask.
    pub const PROHIBITED: u16 = 18;
    /// A stale NXDOMAIN (RFC 8767).
    pub const STALE_NXDOMAIN: u16 = 19;
    /// Every server of a zone answered without authority (lame).
    pub const NOT_AUTHORITATIVE: u16 = 20;
    /// No server of a zone could be reached.
    pub const NO_REACHABLE_AUTHORITY: u16 = 22;
    /// The servers' answers could not be used (malformed, or refusals).
    pub const NETWORK_ERROR: u16 = 23;
    /// A server's answer made no sense (a referral that goes nowhere).
    pub const INVALID_DATA: u16 = 24;
}
