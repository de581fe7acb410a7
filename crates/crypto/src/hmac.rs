//! HMAC (RFC 2104) with the SHA-1 and SHA-2 hashes, as TSIG (RFC 8945 §6)
//! uses it. The key is prepared once ([`HmacKey`]) so that signing every
//! message of a zone transfer costs a copy of the prepared state, not a new
//! key schedule, and no heap allocation ([`HmacTag`] lives on the stack).

use core::fmt;

use aws_lc_rs::{constant_time, hmac};

/// The hash functions HMAC is used with here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HmacAlgorithm {
    /// Kept for peers that still use hmac-sha1 (RFC 8945 §6: "MUST" implement).
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl HmacAlgorithm {
    /// Every algorithm, weakest first.
    pub const ALL: [HmacAlgorithm; 5] = [
        HmacAlgorithm::Sha1,
        HmacAlgorithm::Sha224,
        HmacAlgorithm::Sha256,
        HmacAlgorithm::Sha384,
        HmacAlgorithm::Sha512,
    ];

    /// Length of an untruncated MAC in octets (the hash's output length).
    pub const fn output_len(self) -> usize {
        match self {
            HmacAlgorithm::Sha1 => 20,
            HmacAlgorithm::Sha224 => 28,
            HmacAlgorithm::Sha256 => 32,
            HmacAlgorithm::Sha384 => 48,
            HmacAlgorithm::Sha512 => 64,
        }
    }

    fn provider(self) -> hmac::Algorithm {
        match self {
            HmacAlgorithm::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            HmacAlgorithm::Sha224 => hmac::HMAC_SHA224,
            HmacAlgorithm::Sha256 => hmac::HMAC_SHA256,
            HmacAlgorithm::Sha384 => hmac::HMAC_SHA384,
            HmacAlgorithm::Sha512 => hmac::HMAC_SHA512,
        }
    }
}

/// A secret prepared for one algorithm. Cloning copies the prepared state.
/// `Debug` names the algorithm only.
#[derive(Clone)]
pub struct HmacKey {
    algorithm: HmacAlgorithm,
    key: hmac::Key,
}

impl HmacKey {
    /// Any length of secret is accepted (RFC 2104 §2: longer ones are hashed first).
    pub fn new(algorithm: HmacAlgorithm, secret: &[u8]) -> HmacKey {
        HmacKey {
            algorithm,
            key: hmac::Key::new(algorithm.provider(), secret),
        }
    }

    pub fn algorithm(&self) -> HmacAlgorithm {
        self.algorithm
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

/// A MAC being computed over data given in pieces.
#[derive(Clone)]
pub struct HmacContext {
    algorithm: HmacAlgorithm,
    ctx: hmac::Context,
}

impl fmt::Debug for HmacContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacContext")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

/// A finished MAC, held without allocating.
#[derive(Clone, Copy)]
pub struct HmacTag(hmac::Tag);

impl AsRef<[u8]> for HmacTag {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref()
    }
}

impl fmt::Debug for HmacTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacTag")
            .field("len", &self.as_ref().len())
            .finish_non_exhaustive()
    }
}

impl HmacContext {
    /// Starts a MAC with a raw secret (prepares the key each time; prefer
    /// [`HmacContext::with_key`] when one key signs many messages).
    pub fn new(algorithm: HmacAlgorithm, key: &[u8]) -> HmacContext {
        HmacContext::with_key(&HmacKey::new(algorithm, key))
    }

    /// Starts a MAC with a prepared key.
    pub fn with_key(key: &HmacKey) -> HmacContext {
        HmacContext {
            algorithm: key.algorithm,
            ctx: hmac::Context::with_key(&key.key),
        }
    }

    pub fn algorithm(&self) -> HmacAlgorithm {
        self.algorithm
    }

    pub fn update(&mut self, data: &[u8]) {
        self.ctx.update(data);
    }

    /// The MAC as a new vector.
    pub fn finish(self) -> Vec<u8> {
        self.finish_tag().as_ref().to_vec()
    }

    /// The MAC, without allocating.
    pub fn finish_tag(self) -> HmacTag {
        HmacTag(self.ctx.sign())
    }

    /// Whether `mac` is exactly this MAC, compared in constant time.
    pub fn verify(self, mac: &[u8]) -> bool {
        let tag = self.finish_tag();
        constant_time::verify_slices_are_equal(tag.as_ref(), mac).is_ok()
    }

    /// Whether `mac` is the leading part of this MAC (RFC 2104 §5 truncation),
    /// compared in constant time. An empty `mac`, or one longer than the
    /// algorithm's output, never matches. How short a MAC may be is the
    /// caller's policy (RFC 8945 §5.2.2.1 sets the floor for TSIG).
    pub fn verify_truncated(self, mac: &[u8]) -> bool {
        let tag = self.finish_tag();
        match tag.as_ref().get(..mac.len()) {
            Some(prefix) if !mac.is_empty() => {
                constant_time::verify_slices_are_equal(prefix, mac).is_ok()
            }
            _ => false,
        }
    }
}

/// Whether `mac` is the full HMAC of the concatenated `data_chunks`,
/// compared in constant time.
pub fn hmac_verify(
    algorithm: HmacAlgorithm,
    key: &[u8],
    data_chunks: &[&[u8]],
    mac: &[u8],
) -> bool {
    let mut ctx = HmacContext::new(algorithm, key);
    for chunk in data_chunks {
        ctx.update(chunk);
    }
    ctx.verify(mac)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn mac(alg: HmacAlgorithm, key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut ctx = HmacContext::new(alg, key);
        ctx.update(data);
        ctx.finish()
    }

    // RFC 4231 §4.2 (test case 1) and §4.3 (test case 2), every SHA-2 length.
    #[test]
    fn rfc4231_vectors() {
        let cases: [(&[u8], &[u8], HmacAlgorithm, &str); 8] = [
            (
                &[0x0b; 20],
                b"Hi There",
                HmacAlgorithm::Sha224,
                "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22",
            ),
            (
                &[0x0b; 20],
                b"Hi There",
                HmacAlgorithm::Sha256,
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                &[0x0b; 20],
                b"Hi There",
                HmacAlgorithm::Sha384,
                "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c\
              faea9ea9076ede7f4af152e8b2fa9cb6",
            ),
            (
                &[0x0b; 20],
                b"Hi There",
                HmacAlgorithm::Sha512,
                "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde\
              daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                HmacAlgorithm::Sha224,
                "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                HmacAlgorithm::Sha256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                HmacAlgorithm::Sha384,
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
              8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                HmacAlgorithm::Sha512,
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
              9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ),
        ];
        for (key, data, alg, want) in cases {
            let got = mac(alg, key, data);
            assert_eq!(got, unhex(want), "{alg:?}");
            assert_eq!(got.len(), alg.output_len());
        }
    }

    // RFC 4231 §4.7 (test case 6): a key longer than the block size is hashed first.
    #[test]
    fn rfc4231_long_key_is_hashed() {
        let got = mac(
            HmacAlgorithm::Sha256,
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            got,
            unhex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        );
    }

    // RFC 2202 §3, test cases 1, 2 and 3.
    #[test]
    fn rfc2202_sha1_vectors() {
        let cases: [(Vec<u8>, Vec<u8>, &str); 3] = [
            (
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b617318655057264e28bc0b6fb378c8ef146be00",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                vec![0xaa; 20],
                vec![0xdd; 50],
                "125d7342b9ac11cd91a39af48aa17b4f63f175d3",
            ),
        ];
        for (key, data, want) in cases {
            assert_eq!(mac(HmacAlgorithm::Sha1, &key, &data), unhex(want));
        }
    }

    #[test]
    fn chunks_are_one_stream() {
        let whole = mac(
            HmacAlgorithm::Sha256,
            b"Jefe",
            b"what do ya want for nothing?",
        );
        assert!(hmac_verify(
            HmacAlgorithm::Sha256,
            b"Jefe",
            &[b"what do ya ", b"", b"want for nothing?"],
            &whole
        ));
        let mut ctx = HmacContext::with_key(&HmacKey::new(HmacAlgorithm::Sha256, b"Jefe"));
        ctx.update(b"what do ya want");
        ctx.update(b" for nothing?");
        assert_eq!(ctx.finish_tag().as_ref(), whole.as_slice());
    }

    #[test]
    fn verify_rejects_any_changed_octet_and_wrong_lengths() {
        let good = mac(HmacAlgorithm::Sha512, b"key", b"data");
        assert!(hmac_verify(
            HmacAlgorithm::Sha512,
            b"key",
            &[b"data"],
            &good
        ));
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            assert!(
                !hmac_verify(HmacAlgorithm::Sha512, b"key", &[b"data"], &bad),
                "{i}"
            );
        }
        assert!(!hmac_verify(
            HmacAlgorithm::Sha512,
            b"key",
            &[b"data"],
            &good[..32]
        ));
        assert!(!hmac_verify(HmacAlgorithm::Sha512, b"key", &[b"data"], &[]));
        assert!(!hmac_verify(
            HmacAlgorithm::Sha512,
            b"kez",
            &[b"data"],
            &good
        ));
    }

    #[test]
    fn truncated_verify_compares_the_leading_octets_only() {
        let key = HmacKey::new(HmacAlgorithm::Sha256, b"key");
        let full = {
            let mut c = HmacContext::with_key(&key);
            c.update(b"data");
            c.finish()
        };
        let check = |m: &[u8]| {
            let mut c = HmacContext::with_key(&key);
            c.update(b"data");
            c.verify_truncated(m)
        };
        assert!(check(&full));
        assert!(check(&full[..16]));
        let mut bad = full[..16].to_vec();
        bad[15] ^= 0x80;
        assert!(!check(&bad));
        assert!(!check(&[]));
        let mut long = full.clone();
        long.push(0);
        assert!(!check(&long));
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let key = HmacKey::new(HmacAlgorithm::Sha256, b"very-secret-bytes");
        let shown = format!("{key:?} {:?}", HmacContext::with_key(&key));
        assert!(!shown.contains("very"), "{shown}");
        assert!(shown.contains("Sha256"));
    }
}
