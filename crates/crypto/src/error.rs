use thiserror::Error;

/// What went wrong with a key or a signature.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptoError {
    #[error("algorithm {0} is not supported")]
    UnsupportedAlgorithm(u8),
    #[error("RSA keys of {0} bits cannot be generated (2048, 3072, 4096 or 8192)")]
    UnsupportedKeySize(u32),
    #[error("key generation failed")]
    KeyGeneration,
    #[error("the private key is missing the field {0}")]
    MissingField(&'static str),
    #[error("the private key was rejected: {0}")]
    KeyRejected(String),
    #[error("the public key is malformed")]
    MalformedPublicKey,
    #[error("signing failed")]
    Signing,
    #[error("the signature does not verify")]
    BadSignature,
    #[error("digest type {0} is not supported")]
    UnsupportedDigest(u8),
}
