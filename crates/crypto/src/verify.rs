//! Checking a DNSSEC signature against a DNSKEY's public key: what the test
//! suite and, later, the validating resolver use.

use aws_lc_rs::signature::{
    RsaPublicKeyComponents, UnparsedPublicKey, VerificationAlgorithm, ECDSA_P256_SHA256_FIXED,
    ECDSA_P384_SHA384_FIXED, ED25519, RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
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

/// Verifies `signature` over `data` with a DNSKEY of algorithm `algorithm`.
pub fn verify(
    algorithm: u8,
    public_key: &[u8],
    data: &[u8],
    signature: &[u8],
) -> Result<(), CryptoError> {
    let alg =
        Algorithm::from_number(algorithm).ok_or(CryptoError::UnsupportedAlgorithm(algorithm))?;
    let checked = match alg {
        Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
            let (e, n) =
                rsa_public_components(public_key).ok_or(CryptoError::MalformedPublicKey)?;
            // Old zones still carry 1024-bit keys; validation accepts them.
            let params = if alg == Algorithm::RsaSha512 {
                &RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY
            } else {
                &RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY
            };
            RsaPublicKeyComponents { n, e }.verify(params, data, signature)
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
    };
    checked.map_err(|_| CryptoError::BadSignature)
}

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
            verify(5, &[1], b"x", b"y"),
            Err(CryptoError::UnsupportedAlgorithm(5))
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
