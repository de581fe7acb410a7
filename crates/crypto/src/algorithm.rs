//! The DNSSEC signing algorithms bulwark implements (RFC 8624 §3.1: the ones a
//! signer should use today, and ML-DSA-44 for post-quantum zones), with their
//! IANA numbers and BIND's mnemonics.

use std::fmt;

/// A DNSSEC algorithm number bulwark can sign and verify with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Algorithm {
    /// 8, RFC 5702.
    RsaSha256,
    /// 10, RFC 5702.
    RsaSha512,
    /// 13, RFC 6605.
    EcdsaP256Sha256,
    /// 14, RFC 6605.
    EcdsaP384Sha384,
    /// 15, RFC 8080.
    Ed25519,
    /// 18: ML-DSA-44 (FIPS 204), pure mode with an empty context, over the
    /// same signed data as every algorithm (RFC 4034 §3.1.8.1). The DNSKEY
    /// carries FIPS 204's 1,312-octet public key and the RRSIG its 2,420-octet
    /// signature, both as FIPS 204 encodes them (draft-westerbaan-dnssec-mldsa,
    /// as dnspython has it; no RFC fixes the encodings yet, see
    /// docs/dnssec.md).
    MlDsa44,
    /// 254, PRIVATEOID (RFC 4034 Appendix A.1.1) naming Falcon-512 (round
    /// 3) by the object identifier 1.3.9999.3.6: experimental, see
    /// `falcon.rs`. Signs only when a policy names it, and validates only
    /// where the resolver is told to.
    Falcon512,
}

impl Algorithm {
    pub const ALL: [Algorithm; 7] = [
        Algorithm::RsaSha256,
        Algorithm::RsaSha512,
        Algorithm::EcdsaP256Sha256,
        Algorithm::EcdsaP384Sha384,
        Algorithm::Ed25519,
        Algorithm::MlDsa44,
        Algorithm::Falcon512,
    ];

    /// The algorithms other DNS software (BIND, Knot, ldns, Unbound) also
    /// signs and validates: what interop tests can hand to a peer.
    pub const STANDARD: [Algorithm; 5] = [
        Algorithm::RsaSha256,
        Algorithm::RsaSha512,
        Algorithm::EcdsaP256Sha256,
        Algorithm::EcdsaP384Sha384,
        Algorithm::Ed25519,
    ];

    /// The IANA algorithm number carried in DNSKEY, RRSIG and DS.
    pub fn number(self) -> u8 {
        match self {
            Algorithm::RsaSha256 => 8,
            Algorithm::RsaSha512 => 10,
            Algorithm::EcdsaP256Sha256 => 13,
            Algorithm::EcdsaP384Sha384 => 14,
            Algorithm::Ed25519 => 15,
            Algorithm::MlDsa44 => 18,
            Algorithm::Falcon512 => crate::falcon::PRIVATEOID,
        }
    }

    pub fn from_number(number: u8) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.number() == number)
    }

    /// The mnemonic of the IANA registry, as BIND, Knot and ldns print it.
    pub fn mnemonic(self) -> &'static str {
        match self {
            Algorithm::RsaSha256 => "RSASHA256",
            Algorithm::RsaSha512 => "RSASHA512",
            Algorithm::EcdsaP256Sha256 => "ECDSAP256SHA256",
            Algorithm::EcdsaP384Sha384 => "ECDSAP384SHA384",
            Algorithm::Ed25519 => "ED25519",
            Algorithm::MlDsa44 => "MLDSA44",
            // Not an IANA mnemonic (254 is PRIVATEOID): bulwark's name.
            Algorithm::Falcon512 => "FALCON512",
        }
    }

    /// Accepts the number or the mnemonic, case-insensitively.
    pub fn from_name(text: &str) -> Option<Algorithm> {
        if let Ok(number) = text.parse::<u8>() {
            return Algorithm::from_number(number);
        }
        Algorithm::ALL
            .into_iter()
            .find(|a| a.mnemonic().eq_ignore_ascii_case(text))
    }

    /// Every mnemonic, comma-separated: what an error message offers.
    pub fn mnemonics() -> String {
        Algorithm::ALL.map(Algorithm::mnemonic).join(", ")
    }

    pub fn is_rsa(self) -> bool {
        matches!(self, Algorithm::RsaSha256 | Algorithm::RsaSha512)
    }

    /// Whether the algorithm is a post-quantum one (large keys and
    /// signatures, no PKCS#11 mechanism in the tokens packaged today).
    pub fn is_post_quantum(self) -> bool {
        matches!(self, Algorithm::MlDsa44 | Algorithm::Falcon512)
    }

    /// Whether the algorithm is experimental: on a private algorithm number,
    /// validated only where a resolver is configured to.
    pub fn is_experimental(self) -> bool {
        matches!(self, Algorithm::Falcon512)
    }

    /// Key size in bits used when none is asked for: RSA 2048 (RFC 8624 §3.1
    /// and NIST SP 800-57); the curves have a single size. For ML-DSA-44 the
    /// public key's size in bits, as BIND reports key sizes; likewise for
    /// Falcon-512.
    pub fn default_bits(self) -> u32 {
        match self {
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => 2048,
            Algorithm::EcdsaP256Sha256 | Algorithm::Ed25519 => 256,
            Algorithm::EcdsaP384Sha384 => 384,
            Algorithm::MlDsa44 => 1312 * 8,
            Algorithm::Falcon512 => 897 * 8,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}
