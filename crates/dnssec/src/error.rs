use bulwark_proto::Rtype;
use thiserror::Error;

/// Why a zone could not be signed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignError {
    #[error("the zone has no SOA record at its apex {0}")]
    NoSoa(String),
    #[error("{owner} is outside the zone {apex}")]
    OutOfZone { owner: String, apex: String },
    #[error("no key is active to sign {0} records")]
    NoActiveKey(Rtype),
    #[error("NSEC3 owner names of {0} and {1} collide; change the salt")]
    Nsec3Collision(String, String),
    #[error("{0}")]
    Crypto(#[from] bulwark_crypto::CryptoError),
    #[error("the name {0} plus an NSEC3 hash label is too long")]
    NameTooLong(String),
}
