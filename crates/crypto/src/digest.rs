//! DS digests (RFC 4034 §5.1.4, RFC 4509, RFC 6605 §2): a hash of the owner
//! name in canonical form followed by the DNSKEY RDATA.

use aws_lc_rs::digest;

use crate::CryptoError;

/// DS digest type numbers bulwark computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DigestType {
    /// 1: only to read old DS records (RFC 8624 §3.3: MUST NOT be published).
    Sha1,
    /// 2, RFC 4509.
    Sha256,
    /// 4, RFC 6605.
    Sha384,
}

impl DigestType {
    pub fn number(self) -> u8 {
        match self {
            DigestType::Sha1 => 1,
            DigestType::Sha256 => 2,
            DigestType::Sha384 => 4,
        }
    }

    pub fn from_number(number: u8) -> Result<DigestType, CryptoError> {
        match number {
            1 => Ok(DigestType::Sha1),
            2 => Ok(DigestType::Sha256),
            4 => Ok(DigestType::Sha384),
            other => Err(CryptoError::UnsupportedDigest(other)),
        }
    }

    fn algorithm(self) -> &'static digest::Algorithm {
        match self {
            DigestType::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            DigestType::Sha256 => &digest::SHA256,
            DigestType::Sha384 => &digest::SHA384,
        }
    }
}

/// digest = hash(canonical owner name | DNSKEY RDATA).
pub fn ds_digest(digest_type: DigestType, canonical_owner: &[u8], dnskey_rdata: &[u8]) -> Vec<u8> {
    let mut ctx = digest::Context::new(digest_type.algorithm());
    ctx.update(canonical_owner);
    ctx.update(dnskey_rdata);
    ctx.finish().as_ref().to_vec()
}

/// SHA-256 of `data`: the digest of a TLS public-key pin (RFC 7469 §2.4,
/// RFC 7858 §4.2).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let out = digest::digest(&digest::SHA256, data);
    let mut pin = [0u8; 32];
    if let Some(bytes) = out.as_ref().get(..32) {
        pin.copy_from_slice(bytes);
    }
    pin
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

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02X}")).collect()
    }

    #[test]
    fn sha256_matches_the_fips_180_vector() {
        // FIPS 180-2 appendix B.1: "abc".
        assert_eq!(
            hex(&sha256(b"abc")),
            "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
        );
    }

    // FIPS 180-2 "abc": the owner and the RDATA are hashed as one stream.
    #[test]
    fn owner_then_rdata_is_one_message() {
        assert_eq!(
            hex(&ds_digest(DigestType::Sha256, b"a", b"bc")),
            "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
        );
        assert_eq!(
            hex(&ds_digest(DigestType::Sha1, b"ab", b"c")),
            "A9993E364706816ABA3E25717850C26C9CD0D89D"
        );
        assert_eq!(ds_digest(DigestType::Sha384, b"", b"abc").len(), 48);
        assert_eq!(
            DigestType::from_number(3),
            Err(CryptoError::UnsupportedDigest(3))
        );
    }
}
