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
    #[error("algorithm {0} cannot be kept in a PKCS#11 token: no mechanism for it")]
    NoPkcs11Mechanism(u8),
    #[error("the private key is kept in a PKCS#11 token and cannot be read out")]
    PrivateKeyInToken,
    #[error("PKCS#11 library {module}: {reason}")]
    Pkcs11Module { module: String, reason: String },
    #[error("no initialised PKCS#11 token is labelled `{label}` (tokens present: {present})")]
    TokenNotFound { label: String, present: String },
    #[error("PKCS#11 token `{0}`: wrong PIN")]
    WrongPin(String),
    #[error("PKCS#11 token `{0}`: the PIN is locked")]
    PinLocked(String),
    #[error("PKCS#11 token `{token}` holds no key pair with id {id}")]
    KeyNotInToken { token: String, id: String },
    #[error("PKCS#11 token `{token}`: the key is not one for algorithm {algorithm}")]
    TokenKeyMismatch { token: String, algorithm: u8 },
    #[error("PKCS#11 {operation} failed: {reason}")]
    Pkcs11 {
        operation: &'static str,
        reason: String,
    },
    #[error("bad PKCS#11 URI {0}")]
    BadPkcs11Uri(String),
    #[error("a lock was poisoned by a thread that panicked")]
    Poisoned,
}
