//! bulwark's cryptography, all of it from aws-lc-rs: DNSSEC signing and
//! verification, key generation, DS and NSEC3 digests. Nothing here is
//! hand-written cryptography; what this crate adds is the DNS encodings of keys
//! and signatures (RFC 3110, RFC 6605, RFC 8080) and the key material fields of
//! BIND's key files. Key storage other than memory (PKCS#11) joins as another
//! kind of `SigningKey`.
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

mod algorithm;
mod der;
mod digest;
mod error;
mod falcon;
mod hmac;
mod keys;
pub mod nsec3;
mod pkcs11;
mod verify;

pub use algorithm::Algorithm;
pub use digest::{ds_digest, sha256, DigestType};
pub use error::CryptoError;
pub use hmac::{hmac_verify, HmacAlgorithm, HmacContext, HmacKey, HmacTag};
pub use keys::{SigningKey, PRIVATE_KEY_FIELD, RSA_FIELDS};
pub use nsec3::{nsec3_hash, Nsec3Hash, NSEC3_HASH_LEN};
pub use pkcs11::{Pkcs11Token, Pkcs11Uri};
pub use verify::{can_verify, can_verify_key, rsa_public_components, verify};
