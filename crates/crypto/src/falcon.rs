//! Falcon-512, experimental, as a PRIVATEOID algorithm (RFC 4034 Appendix
//! A.1.1: algorithm 254, whose public key and signature fields each begin
//! with a length octet and the DER encoding of an object identifier naming
//! the real algorithm).
//!
//! The scheme is Falcon-512 as submitted to NIST's third round (the
//! compressed, variable-length signature of up to 752 octets, about 655 in
//! practice; an 897-octet public key), the one liboqs and the published
//! post-quantum DNSSEC experiments used, named by the Open Quantum Safe
//! project's object identifier 1.3.9999.3.6.
//!
//! Why `pqcrypto-falcon` (PQClean's C code, MIT or Apache-2.0) and not
//! `fn-dsa` (pure Rust, Unlicense): fn-dsa implements a guess at the coming
//! FN-DSA standard and says that its keys and signatures will not stay
//! compatible before its 1.0, so a zone signed today could stop validating
//! with the next release. Round-3 Falcon's encodings have been fixed since
//! 2020 and are what other implementations speak. When FIPS 206 is final,
//! FN-DSA will want an algorithm number and object identifier of its own;
//! this one keeps meaning round-3 Falcon.

use pqcrypto_falcon::falcon512;
use pqcrypto_traits::sign::{DetachedSignature as _, PublicKey as _, SecretKey as _};

use crate::CryptoError;

/// RFC 4034 Appendix A.1.1.
pub(crate) const PRIVATEOID: u8 = 254;

/// The prefix of both fields: the length (7), then the DER encoding of
/// 1.3.9999.3.6 (tag 6, length 5, arcs 1.3 = 43, 9999, 3, 6).
pub(crate) const FALCON512_OID_PREFIX: [u8; 8] = [0x07, 0x06, 0x05, 0x2b, 0xce, 0x0f, 0x03, 0x06];

/// The key file field for the public key: PQClean's secret key does not
/// hold it, and recomputing it is not in its interface.
pub(crate) const PUBLIC_KEY_FIELD: &str = "PublicKey";

/// A Falcon-512 key pair.
pub(crate) struct FalconKey {
    public: falcon512::PublicKey,
    secret: falcon512::SecretKey,
}

impl FalconKey {
    pub(crate) fn generate() -> FalconKey {
        let (public, secret) = falcon512::keypair();
        FalconKey { public, secret }
    }

    /// From the key file's two fields, the secret and the public key.
    pub(crate) fn from_parts(secret: &[u8], public: &[u8]) -> Result<FalconKey, CryptoError> {
        let secret = falcon512::SecretKey::from_bytes(secret).map_err(|_| {
            CryptoError::KeyRejected("a Falcon-512 secret key is 1281 octets".into())
        })?;
        let public = falcon512::PublicKey::from_bytes(public).map_err(|_| {
            CryptoError::KeyRejected("a Falcon-512 public key is 897 octets".into())
        })?;
        let key = FalconKey { public, secret };
        // A secret key paired with another key's public half would sign
        // what nobody can verify: check the pair before using it.
        let probe = key.sign_raw(b"bulwark key pair check");
        falcon512::verify_detached_signature(&probe, b"bulwark key pair check", &key.public)
            .map_err(|_| CryptoError::KeyRejected("the Falcon-512 keys are not a pair".into()))?;
        Ok(key)
    }

    fn sign_raw(&self, data: &[u8]) -> falcon512::DetachedSignature {
        falcon512::detached_sign(data, &self.secret)
    }

    /// The DNSKEY Public Key field: the prefix, then the key.
    pub(crate) fn dnskey_public_key(&self) -> Vec<u8> {
        with_prefix(self.public.as_bytes())
    }

    /// The RRSIG Signature field: the prefix, then the signature.
    pub(crate) fn sign(&self, data: &[u8]) -> Vec<u8> {
        with_prefix(self.sign_raw(data).as_bytes())
    }

    pub(crate) fn secret_bytes(&self) -> &[u8] {
        self.secret.as_bytes()
    }

    pub(crate) fn public_bytes(&self) -> &[u8] {
        self.public.as_bytes()
    }
}

fn with_prefix(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len().saturating_add(FALCON512_OID_PREFIX.len()));
    out.extend_from_slice(&FALCON512_OID_PREFIX);
    out.extend_from_slice(raw);
    out
}

/// Whether a PRIVATEOID DNSKEY's public key field names Falcon-512.
pub(crate) fn is_falcon512_key(public_key: &[u8]) -> bool {
    public_key.starts_with(&FALCON512_OID_PREFIX)
}

/// Checks a PRIVATEOID signature whose key names Falcon-512; any other
/// object identifier is an algorithm not implemented.
pub(crate) fn verify(public_key: &[u8], data: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
    let key = public_key
        .strip_prefix(&FALCON512_OID_PREFIX[..])
        .ok_or(CryptoError::UnsupportedAlgorithm(PRIVATEOID))?;
    let signature = signature
        .strip_prefix(&FALCON512_OID_PREFIX[..])
        .ok_or(CryptoError::BadSignature)?;
    let key = falcon512::PublicKey::from_bytes(key).map_err(|_| CryptoError::MalformedPublicKey)?;
    let signature = falcon512::DetachedSignature::from_bytes(signature)
        .map_err(|_| CryptoError::BadSignature)?;
    falcon512::verify_detached_signature(&signature, data, &key)
        .map_err(|_| CryptoError::BadSignature)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn the_prefix_is_the_der_of_the_oid() {
        // 1.3 -> 40 * 1 + 3; 9999 = 78 * 128 + 15 -> 0xce 0x0f.
        assert_eq!(FALCON512_OID_PREFIX[0], 7);
        assert_eq!(&FALCON512_OID_PREFIX[1..3], &[0x06, 0x05]);
        assert_eq!(&FALCON512_OID_PREFIX[3..], &[43, 0x80 | 78, 15, 3, 6]);
    }

    #[test]
    fn signatures_verify_and_a_changed_octet_or_oid_does_not() {
        let key = FalconKey::generate();
        let public = key.dnskey_public_key();
        assert_eq!(public.len(), 8 + 897);
        let signature = key.sign(b"data");
        assert!(signature.len() <= 8 + 752, "{}", signature.len());
        verify(&public, b"data", &signature).unwrap();
        assert_eq!(
            verify(&public, b"other", &signature),
            Err(CryptoError::BadSignature)
        );
        let mut bad = signature.clone();
        let middle = bad.len() / 2;
        bad[middle] ^= 1;
        assert_eq!(
            verify(&public, b"data", &bad),
            Err(CryptoError::BadSignature)
        );
        let mut other_oid = public.clone();
        other_oid[7] = 7;
        assert_eq!(
            verify(&other_oid, b"data", &signature),
            Err(CryptoError::UnsupportedAlgorithm(PRIVATEOID))
        );
        assert!(!is_falcon512_key(&other_oid) && is_falcon512_key(&public));
    }

    #[test]
    fn parts_from_two_keys_are_refused() {
        let (a, b) = (FalconKey::generate(), FalconKey::generate());
        assert!(FalconKey::from_parts(a.secret_bytes(), a.public_bytes()).is_ok());
        assert!(matches!(
            FalconKey::from_parts(a.secret_bytes(), b.public_bytes()),
            Err(CryptoError::KeyRejected(_))
        ));
        assert!(FalconKey::from_parts(&a.secret_bytes()[1..], a.public_bytes()).is_err());
    }
}
