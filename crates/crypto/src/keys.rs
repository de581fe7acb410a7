//! Private keys held in memory (generated here or rebuilt from the fields of a
//! key file) or in a PKCS#11 token, and the DNS encodings of their public
//! halves and signatures.

use aws_lc_rs::encoding::{AsBigEndian, AsDer};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::rsa::{KeyPairComponents, KeySize, PublicKeyComponents};
use aws_lc_rs::signature::{
    EcdsaKeyPair, EcdsaSigningAlgorithm, Ed25519KeyPair, KeyPair, PqdsaKeyPair, RsaKeyPair,
    ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING, ML_DSA_44_SIGNING,
    RSA_PKCS1_SHA256, RSA_PKCS1_SHA512,
};

use crate::der;
use crate::falcon::{FalconKey, PUBLIC_KEY_FIELD};
use crate::pkcs11::{Pkcs11Uri, TokenKey};
use crate::{Algorithm, CryptoError};

/// The key material field names of BIND's `Private-key-format: v1.3` files,
/// in the order BIND writes them.
pub const RSA_FIELDS: [&str; 8] = [
    "Modulus",
    "PublicExponent",
    "PrivateExponent",
    "Prime1",
    "Prime2",
    "Exponent1",
    "Exponent2",
    "Coefficient",
];
/// ECDSA, EdDSA and ML-DSA keys have one field: the private scalar or seed.
pub const PRIVATE_KEY_FIELD: &str = "PrivateKey";

/// FIPS 204 §3.6.3: every ML-DSA key pair comes from a 32-octet seed ξ,
/// which is what the key file keeps (the expanded private key is 2,560
/// octets and derived from it).
const ML_DSA_SEED_LEN: usize = 32;

enum Material {
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
    /// The key pair and the seed it was expanded from: aws-lc-rs cannot hand
    /// the seed back out, and the key file stores only the seed.
    MlDsa {
        key: PqdsaKeyPair,
        seed: [u8; ML_DSA_SEED_LEN],
    },
    /// Boxed: its two keys are 2 KB, the other kinds a few words.
    Falcon(Box<FalconKey>),
    /// In a token: only a handle to the private key object is here.
    Token {
        key: TokenKey,
        bits: u32,
    },
}

/// A private key able to make DNSSEC signatures.
pub struct SigningKey {
    algorithm: Algorithm,
    material: Material,
    /// The DNSKEY Public Key field for this key (RFC 3110 §2, RFC 6605 §4,
    /// RFC 8080 §3), computed once.
    public_key: Vec<u8>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("bits", &self.bits())
            .finish_non_exhaustive()
    }
}

fn ecdsa_algorithm(algorithm: Algorithm) -> Option<&'static EcdsaSigningAlgorithm> {
    match algorithm {
        Algorithm::EcdsaP256Sha256 => Some(&ECDSA_P256_SHA256_FIXED_SIGNING),
        Algorithm::EcdsaP384Sha384 => Some(&ECDSA_P384_SHA384_FIXED_SIGNING),
        _ => None,
    }
}

/// RFC 3110 §2: exponent length (one octet, or zero then two octets), the
/// exponent, the modulus.
pub(crate) fn rsa_dnskey_public_key(n: &[u8], e: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(n.len().saturating_add(e.len()).saturating_add(3));
    match u8::try_from(e.len()) {
        Ok(len) => out.push(len),
        Err(_) => {
            out.push(0);
            out.extend_from_slice(&u16::try_from(e.len()).unwrap_or(u16::MAX).to_be_bytes());
        }
    }
    out.extend_from_slice(e);
    out.extend_from_slice(n);
    out
}

fn rsa_public_key(key: &RsaKeyPair) -> Vec<u8> {
    let public = key.public_key();
    rsa_dnskey_public_key(
        public.modulus().big_endian_without_leading_zero(),
        public.exponent().big_endian_without_leading_zero(),
    )
}

/// RFC 6605 §4: the point's X and Y without the uncompressed-form prefix.
fn ecdsa_public_key(key: &EcdsaKeyPair) -> Vec<u8> {
    let point = key.public_key().as_ref();
    point.get(1..).unwrap_or_default().to_vec()
}

fn rejected(e: impl std::fmt::Display) -> CryptoError {
    CryptoError::KeyRejected(e.to_string())
}

impl SigningKey {
    /// A new random key. `bits` matters for RSA only (2048, 3072, 4096, 8192).
    pub fn generate(algorithm: Algorithm, bits: Option<u32>) -> Result<SigningKey, CryptoError> {
        let material = match algorithm {
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
                let bits = bits.unwrap_or(algorithm.default_bits());
                let size = match bits {
                    2048 => KeySize::Rsa2048,
                    3072 => KeySize::Rsa3072,
                    4096 => KeySize::Rsa4096,
                    8192 => KeySize::Rsa8192,
                    other => return Err(CryptoError::UnsupportedKeySize(other)),
                };
                Material::Rsa(RsaKeyPair::generate(size).map_err(|_| CryptoError::KeyGeneration)?)
            }
            Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 => {
                let alg = ecdsa_algorithm(algorithm).ok_or(CryptoError::KeyGeneration)?;
                Material::Ecdsa(
                    EcdsaKeyPair::generate(alg).map_err(|_| CryptoError::KeyGeneration)?,
                )
            }
            Algorithm::Ed25519 => Material::Ed25519(
                Ed25519KeyPair::generate().map_err(|_| CryptoError::KeyGeneration)?,
            ),
            Algorithm::MlDsa44 => {
                let mut seed = [0u8; ML_DSA_SEED_LEN];
                SystemRandom::new()
                    .fill(&mut seed)
                    .map_err(|_| CryptoError::KeyGeneration)?;
                ml_dsa_from_seed(&seed).map_err(|_| CryptoError::KeyGeneration)?
            }
            Algorithm::Falcon512 => Material::Falcon(Box::new(FalconKey::generate())),
        };
        Ok(SigningKey::from_material(algorithm, material))
    }

    fn from_material(algorithm: Algorithm, material: Material) -> SigningKey {
        let public_key = match &material {
            Material::Rsa(key) => rsa_public_key(key),
            Material::Ecdsa(key) => ecdsa_public_key(key),
            Material::Ed25519(key) => key.public_key().as_ref().to_vec(),
            // FIPS 204 Algorithm 22, pkEncode: the encoding DNSKEY carries.
            Material::MlDsa { key, .. } => key.public_key().as_ref().to_vec(),
            Material::Falcon(key) => key.dnskey_public_key(),
            // Made by `from_token`, which reads the public key off the token.
            Material::Token { .. } => Vec::new(),
        };
        SigningKey {
            algorithm,
            material,
            public_key,
        }
    }

    /// A key pair in a token, its DNSKEY public key read from the token.
    pub(crate) fn from_token(
        algorithm: Algorithm,
        key: TokenKey,
        public_key: Vec<u8>,
        bits: u32,
    ) -> SigningKey {
        SigningKey {
            algorithm,
            material: Material::Token { key, bits },
            public_key,
        }
    }

    /// For a key in a PKCS#11 token, the RFC 7512 URI naming it.
    pub fn pkcs11_uri(&self) -> Option<Pkcs11Uri> {
        match &self.material {
            Material::Token { key, .. } => Some(key.uri().clone()),
            _ => None,
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The DNSKEY Public Key field.
    pub fn dnskey_public_key(&self) -> &[u8] {
        &self.public_key
    }

    /// Key size in bits (the RSA modulus, the curve's field size).
    pub fn bits(&self) -> u32 {
        match &self.material {
            Material::Rsa(key) => {
                u32::try_from(key.public_modulus_len().saturating_mul(8)).unwrap_or(u32::MAX)
            }
            Material::Token { bits, .. } => *bits,
            _ => self.algorithm.default_bits(),
        }
    }

    /// Signs `data` (the RRSIG RDATA without its signature followed by the
    /// canonical RRset, RFC 4034 §3.1.8.1) and returns the signature in its
    /// DNS encoding: PKCS#1 v1.5 for RSA (RFC 5702 §3), r||s for ECDSA
    /// (RFC 6605 §4), the 64-octet signature for Ed25519 (RFC 8080 §4), FIPS
    /// 204's 2,420-octet encoding for ML-DSA-44.
    pub fn sign(&self, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        match &self.material {
            Material::Rsa(key) => {
                let padding = if self.algorithm == Algorithm::RsaSha512 {
                    &RSA_PKCS1_SHA512
                } else {
                    &RSA_PKCS1_SHA256
                };
                let mut signature = vec![0u8; key.public_modulus_len()];
                key.sign(padding, &SystemRandom::new(), data, &mut signature)
                    .map_err(|_| CryptoError::Signing)?;
                Ok(signature)
            }
            Material::Ecdsa(key) => key
                .sign(&SystemRandom::new(), data)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| CryptoError::Signing),
            Material::Ed25519(key) => key
                .try_sign(data)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| CryptoError::Signing),
            // FIPS 204 Algorithm 2, ML-DSA.Sign with an empty context string,
            // hedged (fresh randomness per signature, as FIPS 204 prefers).
            Material::MlDsa { key, .. } => {
                let mut signature = vec![0u8; key.algorithm().signature_len()];
                let len = key
                    .sign(data, &mut signature)
                    .map_err(|_| CryptoError::Signing)?;
                signature.truncate(len);
                Ok(signature)
            }
            Material::Falcon(key) => Ok(key.sign(data)),
            Material::Token { key, .. } => key.sign(self.algorithm, data),
        }
    }

    /// The key material as BIND's key file names it: the eight RSA integers,
    /// or `PrivateKey` for ECDSA (the scalar), Ed25519 and ML-DSA (the seed),
    /// and for Falcon-512 `PrivateKey` and `PublicKey`.
    pub fn private_fields(&self) -> Result<Vec<(&'static str, Vec<u8>)>, CryptoError> {
        match &self.material {
            Material::Rsa(key) => {
                let pkcs8 = key.as_der().map_err(|_| CryptoError::KeyGeneration)?;
                let integers = der::rsa_private_integers(pkcs8.as_ref())
                    .ok_or_else(|| rejected("unexpected PKCS#8 layout"))?;
                Ok(RSA_FIELDS.into_iter().zip(integers).collect())
            }
            Material::Ecdsa(key) => {
                let scalar = key
                    .private_key()
                    .as_be_bytes()
                    .map_err(|_| CryptoError::KeyGeneration)?;
                Ok(vec![(PRIVATE_KEY_FIELD, scalar.as_ref().to_vec())])
            }
            Material::Ed25519(key) => {
                let seed = key
                    .seed()
                    .and_then(|s| s.as_be_bytes())
                    .map_err(|_| CryptoError::KeyGeneration)?;
                Ok(vec![(PRIVATE_KEY_FIELD, seed.as_ref().to_vec())])
            }
            Material::MlDsa { seed, .. } => Ok(vec![(PRIVATE_KEY_FIELD, seed.to_vec())]),
            Material::Falcon(key) => Ok(vec![
                (PRIVATE_KEY_FIELD, key.secret_bytes().to_vec()),
                (PUBLIC_KEY_FIELD, key.public_bytes().to_vec()),
            ]),
            Material::Token { .. } => Err(CryptoError::PrivateKeyInToken),
        }
    }

    /// Rebuilds a key from the fields `private_fields` names; `field(name)`
    /// returns a field's decoded bytes.
    pub fn from_private_fields<'a>(
        algorithm: Algorithm,
        field: impl Fn(&'static str) -> Option<&'a [u8]>,
    ) -> Result<SigningKey, CryptoError> {
        let get = |name: &'static str| field(name).ok_or(CryptoError::MissingField(name));
        let material = match algorithm {
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
                let components = KeyPairComponents {
                    public_key: PublicKeyComponents {
                        n: get("Modulus")?,
                        e: get("PublicExponent")?,
                    },
                    d: get("PrivateExponent")?,
                    p: get("Prime1")?,
                    q: get("Prime2")?,
                    dP: get("Exponent1")?,
                    dQ: get("Exponent2")?,
                    qInv: get("Coefficient")?,
                };
                Material::Rsa(RsaKeyPair::from_components(&components).map_err(rejected)?)
            }
            Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 => {
                let alg = ecdsa_algorithm(algorithm).ok_or(CryptoError::KeyGeneration)?;
                let der = ec_private_key_der(get(PRIVATE_KEY_FIELD)?)
                    .ok_or_else(|| rejected("private key too long"))?;
                Material::Ecdsa(EcdsaKeyPair::from_private_key_der(alg, &der).map_err(rejected)?)
            }
            Algorithm::Ed25519 => Material::Ed25519(
                Ed25519KeyPair::from_seed_unchecked(get(PRIVATE_KEY_FIELD)?).map_err(rejected)?,
            ),
            Algorithm::MlDsa44 => {
                let seed: &[u8; ML_DSA_SEED_LEN] = get(PRIVATE_KEY_FIELD)?
                    .try_into()
                    .map_err(|_| rejected("an ML-DSA seed is 32 octets"))?;
                ml_dsa_from_seed(seed).map_err(rejected)?
            }
            Algorithm::Falcon512 => Material::Falcon(Box::new(FalconKey::from_parts(
                get(PRIVATE_KEY_FIELD)?,
                get(PUBLIC_KEY_FIELD)?,
            )?)),
        };
        Ok(SigningKey::from_material(algorithm, material))
    }
}

fn ml_dsa_from_seed(
    seed: &[u8; ML_DSA_SEED_LEN],
) -> Result<Material, aws_lc_rs::error::KeyRejected> {
    let key = PqdsaKeyPair::from_seed(&ML_DSA_44_SIGNING, seed)?;
    Ok(Material::MlDsa { key, seed: *seed })
}

/// RFC 5915 ECPrivateKey with only the version and the scalar; the curve is
/// given separately and the public point is derived from the scalar.
fn ec_private_key_der(scalar: &[u8]) -> Option<Vec<u8>> {
    let scalar_len = u8::try_from(scalar.len()).ok().filter(|&l| l < 0x70)?;
    let mut out = vec![
        0x30,
        scalar_len.checked_add(5)?,
        0x02,
        0x01,
        0x01,
        0x04,
        scalar_len,
    ];
    out.extend_from_slice(scalar);
    Some(out)
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
    use crate::verify;

    #[test]
    fn every_algorithm_signs_and_verifies_and_survives_its_fields() {
        for algorithm in Algorithm::ALL {
            let key = SigningKey::generate(algorithm, None).unwrap();
            let data = b"rrsig rdata and rrset";
            let signature = key.sign(data).unwrap();
            verify(
                algorithm.number(),
                key.dnskey_public_key(),
                data,
                &signature,
            )
            .unwrap();
            assert_eq!(
                verify(
                    algorithm.number(),
                    key.dnskey_public_key(),
                    b"other",
                    &signature
                ),
                Err(CryptoError::BadSignature),
                "{algorithm}"
            );

            let fields = key.private_fields().unwrap();
            let again = SigningKey::from_private_fields(algorithm, |name| {
                fields
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.as_slice())
            })
            .unwrap();
            assert_eq!(
                again.dnskey_public_key(),
                key.dnskey_public_key(),
                "{algorithm}"
            );
            let signature = again.sign(data).unwrap();
            verify(
                algorithm.number(),
                key.dnskey_public_key(),
                data,
                &signature,
            )
            .unwrap();
        }
    }

    #[test]
    fn encodings_have_the_sizes_the_rfcs_give() {
        let sizes = [
            (Algorithm::EcdsaP256Sha256, 64, 64),
            (Algorithm::EcdsaP384Sha384, 96, 96),
            (Algorithm::Ed25519, 32, 64),
            // FIPS 204 Table 2: ML-DSA-44's public key and signature.
            (Algorithm::MlDsa44, 1312, 2420),
            // RFC 3110: 1 octet of exponent length, 3 of exponent (65537), 256 of modulus.
            (Algorithm::RsaSha256, 260, 256),
        ];
        for (algorithm, public, signature) in sizes {
            let key = SigningKey::generate(algorithm, None).unwrap();
            assert_eq!(key.dnskey_public_key().len(), public, "{algorithm}");
            assert_eq!(key.sign(b"x").unwrap().len(), signature, "{algorithm}");
        }
    }

    #[test]
    fn ml_dsa_signatures_are_hedged() {
        // FIPS 204 §3.4: fresh randomness per signature, so two of the same
        // data differ and both verify.
        let key = SigningKey::generate(Algorithm::MlDsa44, None).unwrap();
        let (a, b) = (key.sign(b"same").unwrap(), key.sign(b"same").unwrap());
        assert_ne!(a, b);
        for s in [a, b] {
            verify(18, key.dnskey_public_key(), b"same", &s).unwrap();
        }
    }

    #[test]
    fn a_missing_field_is_named() {
        let err = SigningKey::from_private_fields(Algorithm::RsaSha256, |_| None).unwrap_err();
        assert_eq!(err, CryptoError::MissingField("Modulus"));
        let err = SigningKey::from_private_fields(Algorithm::Ed25519, |_| Some(&[1, 2, 3][..]))
            .unwrap_err();
        assert!(matches!(err, CryptoError::KeyRejected(_)));
    }

    #[test]
    fn odd_rsa_sizes_are_refused() {
        assert_eq!(
            SigningKey::generate(Algorithm::RsaSha256, Some(1000)).unwrap_err(),
            CryptoError::UnsupportedKeySize(1000)
        );
    }
}
