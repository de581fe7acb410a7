//! TSIG algorithms (RFC 8945 §6), keys and the set of keys a server holds.

use core::fmt;
use std::sync::Arc;

use bulwark_crypto::{HmacAlgorithm, HmacContext, HmacKey};
use bulwark_proto::Name;

use super::TsigError;

/// Wire forms of the algorithm names (RFC 8945 §6), lowercase, which is
/// also their canonical form for the MAC (§4.3.3).
const HMAC_SHA1: &[u8] = b"\x09hmac-sha1\x00";
const HMAC_SHA224: &[u8] = b"\x0bhmac-sha224\x00";
const HMAC_SHA256: &[u8] = b"\x0bhmac-sha256\x00";
const HMAC_SHA384: &[u8] = b"\x0bhmac-sha384\x00";
const HMAC_SHA512: &[u8] = b"\x0bhmac-sha512\x00";
const HMAC_MD5: &[u8] = b"\x08hmac-md5\x07sig-alg\x03reg\x03int\x00";

/// A TSIG algorithm bulwark signs and verifies with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TsigAlgorithm {
    HmacSha1,
    HmacSha224,
    HmacSha256,
    HmacSha384,
    HmacSha512,
}

/// Why an algorithm name was not taken. A server answers both with BADKEY
/// (RFC 8945 §5.2.1: "recognizes the algorithm but does not implement it").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedAlgorithm {
    /// RFC 8945 §6 deprecates hmac-md5 ("MUST NOT" use); bulwark does not implement it.
    #[error("hmac-md5 is not supported (RFC 8945 §6 deprecates it); use hmac-sha256")]
    Md5,
    #[error("unknown TSIG algorithm")]
    Unknown,
}

impl TsigAlgorithm {
    pub const ALL: [TsigAlgorithm; 5] = [
        TsigAlgorithm::HmacSha1,
        TsigAlgorithm::HmacSha224,
        TsigAlgorithm::HmacSha256,
        TsigAlgorithm::HmacSha384,
        TsigAlgorithm::HmacSha512,
    ];

    /// The algorithm a DNS name (as in a TSIG record) stands for, ignoring case.
    pub fn from_name(name: &Name) -> Result<TsigAlgorithm, UnsupportedAlgorithm> {
        TsigAlgorithm::from_wire_name(name.as_wire())
    }

    /// As [`TsigAlgorithm::from_name`], for uncompressed wire bytes. Length
    /// octets are below 64, so no ASCII case folding can change one.
    pub fn from_wire_name(wire: &[u8]) -> Result<TsigAlgorithm, UnsupportedAlgorithm> {
        if let Some(alg) = TsigAlgorithm::ALL
            .into_iter()
            .find(|a| a.wire_name().eq_ignore_ascii_case(wire))
        {
            return Ok(alg);
        }
        if HMAC_MD5.eq_ignore_ascii_case(wire) {
            return Err(UnsupportedAlgorithm::Md5);
        }
        Err(UnsupportedAlgorithm::Unknown)
    }

    /// The name as configuration and key files write it (`hmac-sha256`),
    /// ignoring case and one trailing dot; `hmac-md5` and its DNS name are
    /// recognised only to say they are not supported.
    pub fn from_config_name(text: &str) -> Result<TsigAlgorithm, UnsupportedAlgorithm> {
        let bare = text.strip_suffix('.').unwrap_or(text);
        if let Some(alg) = TsigAlgorithm::ALL
            .into_iter()
            .find(|a| a.config_name().eq_ignore_ascii_case(bare))
        {
            return Ok(alg);
        }
        if bare.eq_ignore_ascii_case("hmac-md5")
            || bare.eq_ignore_ascii_case("hmac-md5.sig-alg.reg.int")
        {
            return Err(UnsupportedAlgorithm::Md5);
        }
        Err(UnsupportedAlgorithm::Unknown)
    }

    /// `hmac-sha256` and so on.
    pub fn config_name(self) -> &'static str {
        match self {
            TsigAlgorithm::HmacSha1 => "hmac-sha1",
            TsigAlgorithm::HmacSha224 => "hmac-sha224",
            TsigAlgorithm::HmacSha256 => "hmac-sha256",
            TsigAlgorithm::HmacSha384 => "hmac-sha384",
            TsigAlgorithm::HmacSha512 => "hmac-sha512",
        }
    }

    /// The algorithm's DNS name in uncompressed, lowercase wire form.
    pub fn wire_name(self) -> &'static [u8] {
        match self {
            TsigAlgorithm::HmacSha1 => HMAC_SHA1,
            TsigAlgorithm::HmacSha224 => HMAC_SHA224,
            TsigAlgorithm::HmacSha256 => HMAC_SHA256,
            TsigAlgorithm::HmacSha384 => HMAC_SHA384,
            TsigAlgorithm::HmacSha512 => HMAC_SHA512,
        }
    }

    /// The algorithm's DNS name (`hmac-sha256.`).
    pub fn name(self) -> Name {
        // The constants are valid names (checked by a unit test); the root
        // stands in only to avoid a panic path.
        Name::from_wire(self.wire_name()).unwrap_or_default()
    }

    pub fn hmac(self) -> HmacAlgorithm {
        match self {
            TsigAlgorithm::HmacSha1 => HmacAlgorithm::Sha1,
            TsigAlgorithm::HmacSha224 => HmacAlgorithm::Sha224,
            TsigAlgorithm::HmacSha256 => HmacAlgorithm::Sha256,
            TsigAlgorithm::HmacSha384 => HmacAlgorithm::Sha384,
            TsigAlgorithm::HmacSha512 => HmacAlgorithm::Sha512,
        }
    }

    /// Octets in an untruncated MAC.
    pub fn mac_len(self) -> usize {
        self.hmac().output_len()
    }

    /// RFC 8945 §5.2.2.1: a MAC shorter than the larger of 10 octets and half
    /// the hash length (rounded up) is malformed.
    pub fn shortest_mac_len(self) -> usize {
        self.mac_len().div_ceil(2).max(10)
    }
}

impl fmt::Display for TsigAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.config_name())
    }
}

/// The secret and its prepared HMAC state, shared by the clones of a key.
struct KeyMaterial {
    secret: Vec<u8>,
    prepared: HmacKey,
}

/// A TSIG key: its name, algorithm and shared secret. Cloning is cheap (the
/// secret is shared). `Debug` never shows the secret.
#[derive(Clone)]
pub struct TsigKey {
    name: Name,
    /// RFC 8945 §4.3.3: the key name goes into the MAC in canonical
    /// (lowercase) form.
    canonical_name: Name,
    algorithm: TsigAlgorithm,
    material: Arc<KeyMaterial>,
    min_mac_len: usize,
}

impl TsigKey {
    /// A key that accepts only untruncated MACs (the policy of RFC 8945 §5.2.4
    /// until [`TsigKey::with_truncation`] relaxes it).
    pub fn new(name: Name, algorithm: TsigAlgorithm, secret: Vec<u8>) -> TsigKey {
        let prepared = HmacKey::new(algorithm.hmac(), &secret);
        TsigKey {
            canonical_name: name.to_lowercase(),
            name,
            algorithm,
            material: Arc::new(KeyMaterial { secret, prepared }),
            min_mac_len: algorithm.mac_len(),
        }
    }

    /// Accepts received MACs truncated to `min_mac_len` octets or more
    /// (RFC 8945 §5.2.2.1); shorter ones than the RFC allows are refused.
    pub fn with_truncation(mut self, min_mac_len: usize) -> Result<TsigKey, TsigError> {
        if min_mac_len < self.algorithm.shortest_mac_len() || min_mac_len > self.algorithm.mac_len()
        {
            return Err(TsigError::BadTruncation {
                len: min_mac_len,
                algorithm: self.algorithm,
            });
        }
        self.min_mac_len = min_mac_len;
        Ok(self)
    }

    pub fn name(&self) -> &Name {
        &self.name
    }

    pub(crate) fn canonical_name(&self) -> &Name {
        &self.canonical_name
    }

    pub fn algorithm(&self) -> TsigAlgorithm {
        self.algorithm
    }

    /// The shared secret, for writing the key out again.
    pub fn secret(&self) -> &[u8] {
        &self.material.secret
    }

    /// Shortest received MAC this key accepts (RFC 8945 §5.2.4 local policy).
    pub fn min_mac_len(&self) -> usize {
        self.min_mac_len
    }

    /// Octets the TSIG record adds to a message this key signs (full MAC, no
    /// Other Data), so a message builder can keep room for it.
    pub fn record_len(&self) -> usize {
        super::rdata::record_len(
            self.name.wire_len(),
            self.algorithm,
            self.algorithm.mac_len(),
            0,
        )
    }

    /// A MAC computation with this key, from the prepared state.
    pub(crate) fn mac_context(&self) -> HmacContext {
        HmacContext::with_key(&self.material.prepared)
    }
}

impl fmt::Debug for TsigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TsigKey")
            .field("name", &self.name)
            .field("algorithm", &self.algorithm)
            .field("secret", &"(hidden)")
            .field("min_mac_len", &self.min_mac_len)
            .finish()
    }
}

/// The keys a server or client holds, found by name (ignoring case) and algorithm.
#[derive(Clone, Debug, Default)]
pub struct KeyRing {
    keys: Vec<TsigKey>,
}

impl KeyRing {
    pub fn new() -> KeyRing {
        KeyRing::default()
    }

    /// Adds a key; one with the same name and algorithm is replaced and returned.
    pub fn insert(&mut self, key: TsigKey) -> Option<TsigKey> {
        match self
            .keys
            .iter_mut()
            .find(|k| k.name == key.name && k.algorithm == key.algorithm)
        {
            Some(slot) => Some(core::mem::replace(slot, key)),
            None => {
                self.keys.push(key);
                None
            }
        }
    }

    /// The key with this name (any case) and algorithm.
    pub fn get(&self, name: &Name, algorithm: TsigAlgorithm) -> Option<&TsigKey> {
        self.keys
            .iter()
            .find(|k| k.algorithm == algorithm && k.name == *name)
    }

    /// The first key with this name (any case), whatever its algorithm: how
    /// configuration refers to a key.
    pub fn by_name(&self, name: &Name) -> Option<&TsigKey> {
        self.keys.iter().find(|k| k.name == *name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &TsigKey> {
        self.keys.iter()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl FromIterator<TsigKey> for KeyRing {
    fn from_iter<I: IntoIterator<Item = TsigKey>>(iter: I) -> KeyRing {
        let mut ring = KeyRing::new();
        for key in iter {
            ring.insert(key);
        }
        ring
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn algorithm_names_round_trip_and_ignore_case() {
        let table = [
            ("hmac-sha1.", TsigAlgorithm::HmacSha1, 20, 10),
            ("hmac-sha224.", TsigAlgorithm::HmacSha224, 28, 14),
            ("hmac-sha256.", TsigAlgorithm::HmacSha256, 32, 16),
            ("hmac-sha384.", TsigAlgorithm::HmacSha384, 48, 24),
            ("hmac-sha512.", TsigAlgorithm::HmacSha512, 64, 32),
        ];
        for (text, alg, len, shortest) in table {
            assert_eq!(alg.name(), name(text));
            assert!(alg.name().eq_exact(&name(text)));
            assert_eq!(TsigAlgorithm::from_name(&name(text)), Ok(alg));
            assert_eq!(
                TsigAlgorithm::from_name(&name(&text.to_uppercase())),
                Ok(alg)
            );
            assert_eq!(TsigAlgorithm::from_config_name(alg.config_name()), Ok(alg));
            assert_eq!(TsigAlgorithm::from_config_name(text), Ok(alg));
            assert_eq!(alg.mac_len(), len);
            assert_eq!(alg.shortest_mac_len(), shortest);
        }
    }

    #[test]
    fn md5_is_recognised_only_to_be_refused() {
        assert_eq!(
            TsigAlgorithm::from_name(&name("HMAC-MD5.SIG-ALG.REG.INT.")),
            Err(UnsupportedAlgorithm::Md5)
        );
        assert_eq!(
            TsigAlgorithm::from_config_name("hmac-md5"),
            Err(UnsupportedAlgorithm::Md5)
        );
        assert_eq!(
            TsigAlgorithm::from_name(&name("hmac-md5.")),
            Err(UnsupportedAlgorithm::Unknown)
        );
        assert_eq!(
            TsigAlgorithm::from_name(&name("hmac-sha256.example.")),
            Err(UnsupportedAlgorithm::Unknown)
        );
        assert_eq!(
            TsigAlgorithm::from_config_name("hmac-sha256-128"),
            Err(UnsupportedAlgorithm::Unknown)
        );
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = TsigKey::new(
            name("k."),
            TsigAlgorithm::HmacSha256,
            b"SECRET-BYTES".to_vec(),
        );
        let shown = format!("{key:?} {:?}", KeyRing::from_iter([key.clone()]));
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(!shown.contains("83, 69, 67"), "{shown}"); // the bytes as a list
        assert!(shown.contains("hidden"));
    }

    #[test]
    fn ring_finds_keys_by_name_in_any_case_and_algorithm() {
        let ring: KeyRing = [
            TsigKey::new(name("Xfr.Example."), TsigAlgorithm::HmacSha256, vec![1]),
            TsigKey::new(name("xfr.example."), TsigAlgorithm::HmacSha512, vec![2]),
            TsigKey::new(name("other."), TsigAlgorithm::HmacSha256, vec![3]),
        ]
        .into_iter()
        .collect();
        assert_eq!(ring.len(), 3);
        let k = ring
            .get(&name("XFR.EXAMPLE."), TsigAlgorithm::HmacSha512)
            .unwrap();
        assert_eq!(k.secret(), &[2]);
        assert!(ring
            .get(&name("xfr.example."), TsigAlgorithm::HmacSha1)
            .is_none());
        assert_eq!(ring.by_name(&name("OTHER.")).unwrap().secret(), &[3]);
        let mut ring = ring;
        let old = ring.insert(TsigKey::new(
            name("other."),
            TsigAlgorithm::HmacSha256,
            vec![4],
        ));
        assert_eq!(old.unwrap().secret(), &[3]);
        assert_eq!(ring.len(), 3);
    }

    #[test]
    fn truncation_policy_stays_within_rfc_bounds() {
        let key = TsigKey::new(name("k."), TsigAlgorithm::HmacSha256, vec![0; 32]);
        assert_eq!(key.min_mac_len(), 32);
        assert_eq!(key.clone().with_truncation(16).unwrap().min_mac_len(), 16);
        assert!(key.clone().with_truncation(15).is_err());
        assert!(key.with_truncation(33).is_err());
    }

    #[test]
    fn record_len_counts_every_field() {
        // owner 5 (\x01k\x00 is 3; "xfr." is 5) + type/class/ttl/rdlength 10
        // + algorithm 13 + time 6 + fudge 2 + MAC size 2 + MAC 32
        // + original ID 2 + error 2 + other length 2 = 76
        let key = TsigKey::new(name("xfr."), TsigAlgorithm::HmacSha256, vec![0; 32]);
        assert_eq!(key.record_len(), 5 + 10 + 13 + 6 + 2 + 2 + 32 + 2 + 2 + 2);
    }
}
