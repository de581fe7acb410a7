//! Checking a DNSSEC signature against a DNSKEY's public key: what the test
//! suite and, later, the validating resolver use.

use aws_lc_rs::signature::{
    RsaParameters, RsaPublicKeyComponents, UnparsedPublicKey, VerificationAlgorithm,
    ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, ED25519, ML_DSA_44,
    RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY, RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
    RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
};

use crate::{Algorithm, CryptoError};

/// RFC 3110 §2: splits an RSA DNSKEY public key into (exponent, modulus).
pub fn rsa_public_components(public_key: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = public_key.split_first()?;
    let (len, rest) = if first == 0 {
        let (len, rest) = rest.split_at_checked(2)?;
        (
            usize::from(u16::from_be_bytes([*len.first()?, *len.get(1)?])),
            rest,
        )
    } else {
        (usize::from(first), rest)
    };
    let (exponent, modulus) = rest.split_at_checked(len)?;
    (!exponent.is_empty() && !modulus.is_empty()).then_some((exponent, modulus))
}

/// RSASHA1 (5) and RSASHA1-NSEC3-SHA1 (7): nobody should sign with them
/// any more, but a validator must still check them (RFC 8624 §3.1), and
/// many zones still use them. Verified here; [`Algorithm`], which signs,
/// leaves them out.
const RSASHA1: u8 = 5;
const RSASHA1_NSEC3_SHA1: u8 = 7;
/// Ed448 (RFC 8080): checked, not signed with (aws-lc-rs, which signs,
/// has no Ed448).
const ED448: u8 = 16;

/// Whether [`verify`] checks signatures of DNSSEC algorithm `algorithm`,
/// experimental ones left out: a private algorithm number says nothing of
/// the algorithm until the key is read ([`can_verify_key`]).
pub fn can_verify(algorithm: u8) -> bool {
    matches!(algorithm, RSASHA1 | RSASHA1_NSEC3_SHA1 | ED448)
        || Algorithm::from_number(algorithm).is_some_and(|a| !a.is_experimental())
}

/// Whether [`verify`] checks signatures of this key: any algorithm
/// [`can_verify`] names, and with `experimental` a PRIVATEOID key naming
/// Falcon-512.
pub fn can_verify_key(algorithm: u8, public_key: &[u8], experimental: bool) -> bool {
    can_verify(algorithm)
        || (experimental
            && algorithm == crate::falcon::PRIVATEOID
            && crate::falcon::is_falcon512_key(public_key))
}

/// Verifies `signature` over `data` with a DNSKEY of algorithm `algorithm`.
pub fn verify(
    algorithm: u8,
    public_key: &[u8],
    data: &[u8],
    signature: &[u8],
) -> Result<(), CryptoError> {
    if matches!(algorithm, RSASHA1 | RSASHA1_NSEC3_SHA1) {
        return verify_rsa(
            &RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
            public_key,
            data,
            signature,
        );
    }
    if algorithm == ED448 {
        return verify_ed448(public_key, data, signature);
    }
    let alg =
        Algorithm::from_number(algorithm).ok_or(CryptoError::UnsupportedAlgorithm(algorithm))?;
    let checked = match alg {
        Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
            let params = if alg == Algorithm::RsaSha512 {
                &RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY
            } else {
                &RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY
            };
            return verify_rsa(params, public_key, data, signature);
        }
        Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 => {
            let curve: &'static dyn VerificationAlgorithm = if alg == Algorithm::EcdsaP256Sha256 {
                &ECDSA_P256_SHA256_FIXED
            } else {
                &ECDSA_P384_SHA384_FIXED
            };
            let mut point = Vec::with_capacity(public_key.len().saturating_add(1));
            point.push(0x04);
            point.extend_from_slice(public_key);
            UnparsedPublicKey::new(curve, &point).verify(data, signature)
        }
        Algorithm::Ed25519 => UnparsedPublicKey::new(&ED25519, public_key).verify(data, signature),
        // A malformed key or a signature of the wrong length fails here as
        // a bad signature: aws-lc-rs checks both lengths before verifying.
        Algorithm::MlDsa44 => {
            UnparsedPublicKey::new(&ML_DSA_44, public_key).verify(data, signature)
        }
        // PRIVATEOID: the key's object identifier says which algorithm.
        Algorithm::Falcon512 => return crate::falcon::verify(public_key, data, signature),
    };
    checked.map_err(|_| CryptoError::BadSignature)
}

/// An Ed448 signature (RFC 8080 §3: RFC 8032's Ed448, empty context) with
/// a 57-octet public key.
fn verify_ed448(public_key: &[u8], data: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
    use ed448_goldilocks_plus::{Signature, VerifyingKey};
    let key: &[u8; 57] = public_key
        .try_into()
        .map_err(|_| CryptoError::MalformedPublicKey)?;
    let key = VerifyingKey::from_bytes(key).map_err(|_| CryptoError::MalformedPublicKey)?;
    let signature = Signature::try_from(signature).map_err(|_| CryptoError::BadSignature)?;
    key.verify_raw(&signature, data)
        .map_err(|_| CryptoError::BadSignature)
}

/// An RSA signature with an RFC 3110 public key. Old zones still carry
/// 1024-bit keys; validation accepts them. Smaller ones, below what
/// aws-lc-rs takes, are checked with RustCrypto's `rsa`: RFC 4035's and
/// RFC 5155's own example zones sign with 512-bit keys, and Unbound and
/// BIND validate them (RFC 8624 sets no floor for validation).
fn verify_rsa(
    params: &'static RsaParameters,
    public_key: &[u8],
    data: &[u8],
    signature: &[u8],
) -> Result<(), CryptoError> {
    let (e, n) = rsa_public_components(public_key).ok_or(CryptoError::MalformedPublicKey)?;
    if modulus_bits(n) < AWS_LC_MIN_RSA_BITS {
        return verify_small_rsa(params, e, n, data, signature);
    }
    RsaPublicKeyComponents { n, e }
        .verify(params, data, signature)
        .map_err(|_| CryptoError::BadSignature)
}

/// The smallest modulus aws-lc-rs verifies with (its `1024_8192` rules).
const AWS_LC_MIN_RSA_BITS: usize = 1024;
/// The smallest modulus checked at all: below it a signature proves
/// nothing (512-bit keys were factored in 1999, and a key this small
/// would be a toy).
const MIN_RSA_BITS: usize = 512;

/// Bits in a big-endian modulus, leading zero octets aside.
fn modulus_bits(n: &[u8]) -> usize {
    let n = match n.iter().position(|&b| b != 0) {
        Some(i) => n.get(i..).unwrap_or_default(),
        None => return 0,
    };
    let lead = n
        .first()
        .map_or(0, |b| 8usize.saturating_sub(b.leading_zeros() as usize));
    n.len()
        .saturating_sub(1)
        .saturating_mul(8)
        .saturating_add(lead)
}

/// PKCS #1 v1.5 (RFC 8017 §8.2.2) with a key aws-lc-rs will not take:
/// the digest by aws-lc-rs, the RSA by `rsa`.
fn verify_small_rsa(
    params: &'static RsaParameters,
    e: &[u8],
    n: &[u8],
    data: &[u8],
    signature: &[u8],
) -> Result<(), CryptoError> {
    use aws_lc_rs::digest;
    if modulus_bits(n) < MIN_RSA_BITS {
        return Err(CryptoError::MalformedPublicKey);
    }
    // RFC 8017 §9.2 note 1: the DigestInfo prefix of each hash.
    let (algorithm, prefix): (&'static digest::Algorithm, &[u8]) =
        if std::ptr::eq(params, &RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY) {
            (&digest::SHA1_FOR_LEGACY_USE_ONLY, &SHA1_PREFIX)
        } else if std::ptr::eq(params, &RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY) {
            (&digest::SHA512, &SHA512_PREFIX)
        } else {
            (&digest::SHA256, &SHA256_PREFIX)
        };
    let hashed = digest::digest(algorithm, data);
    let key = rsa::RsaPublicKey::new(
        rsa::BigUint::from_bytes_be(n),
        rsa::BigUint::from_bytes_be(e),
    )
    .map_err(|_| CryptoError::MalformedPublicKey)?;
    let scheme = rsa::Pkcs1v15Sign {
        hash_len: Some(hashed.as_ref().len()),
        prefix: prefix.into(),
    };
    key.verify(scheme, hashed.as_ref(), signature)
        .map_err(|_| CryptoError::BadSignature)
}

const SHA1_PREFIX: [u8; 15] = [
    0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14,
];
const SHA256_PREFIX: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];
const SHA512_PREFIX: [u8; 19] = [
    0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05,
    0x00, 0x04, 0x40,
];

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::cast_possible_truncation
    )]
    use super::*;

    #[test]
    fn rsa_exponent_lengths_both_forms() {
        assert_eq!(
            rsa_public_components(&[1, 3, 9, 9]),
            Some((&[3][..], &[9, 9][..]))
        );
        assert_eq!(
            rsa_public_components(&[0, 0, 1, 3, 9]),
            Some((&[3][..], &[9][..]))
        );
        assert_eq!(rsa_public_components(&[3, 1, 1]), None);
        assert_eq!(rsa_public_components(&[]), None);
        assert_eq!(rsa_public_components(&[1, 3]), None);
    }

    #[test]
    fn unknown_algorithms_and_garbage_keys_fail_cleanly() {
        assert_eq!(
            verify(3, &[1], b"x", b"y"),
            Err(CryptoError::UnsupportedAlgorithm(3))
        );
        assert_eq!(
            verify(5, &[], b"x", b"y"),
            Err(CryptoError::MalformedPublicKey)
        );
        assert!(can_verify(5) && can_verify(7) && can_verify(15) && can_verify(16));
        assert!(!can_verify(3) && !can_verify(6) && !can_verify(17));
        assert_eq!(
            verify(16, &[1; 56], b"x", &[0; 114]),
            Err(CryptoError::MalformedPublicKey)
        );
        assert_eq!(
            verify(8, &[], b"x", b"y"),
            Err(CryptoError::MalformedPublicKey)
        );
        assert_eq!(
            verify(13, &[1, 2, 3], b"x", b"y"),
            Err(CryptoError::BadSignature)
        );
        assert_eq!(
            verify(15, &[7; 32], b"x", &[1; 64]),
            Err(CryptoError::BadSignature)
        );
    }
}
