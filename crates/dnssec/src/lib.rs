//! DNSSEC signing as pure functions: zone keys and their BIND key files, RRSIGs
//! over canonical RRsets (RFC 4034 §3.1.8.1, §6), NSEC (RFC 4034 §4) and NSEC3
//! (RFC 5155 §7.1) chains, and the plan that turns an unsigned zone into the
//! records of a signed one. The clock, the files and the threads belong to the
//! caller: signing jobs are independent, so the caller spreads them over cores.
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

pub mod denial;
pub mod error;
pub mod key;
pub mod keyfile;
pub mod plan;
pub mod reuse;
pub mod rollover;
pub mod rrsig;
pub mod signature;
pub mod time;

pub use bulwark_crypto::{Algorithm, DigestType, Pkcs11Token, Pkcs11Uri, SigningKey};
pub use denial::{Denial, Nsec3Settings};
pub use error::SignError;
pub use key::{key_tag, KeyRole, KeyTiming, ZoneKey};
pub use keyfile::{
    apply_state_text, key_file_text, parse_key_files, private_file_text, read_key_files,
    state_file_text, KeyFileError, KeyFileKey, TokenKeyRef,
};
pub use plan::{SignJob, SignerSettings, ZonePlan};
pub use reuse::SignatureCache;
pub use rollover::{plan_key_actions, KeyAction, KeyPolicy, RolloverTimes};
pub use rrsig::{verify_rrsig, RrsetSigner, SignatureValidity};
pub use signature::{Signature, SignatureFields, SignedRecords};
