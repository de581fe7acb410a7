//! How bulwark signs a zone, validated: the signing policy (algorithm,
//! denial of existence, signature and key timings, RFC 8624 and RFC 9276
//! defaults), where keys are kept (`Keystore`), and the PKCS#11 token that
//! keeps them when it is an HSM.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::anyhow;
use bulwark_dnssec::{Algorithm, Denial, Pkcs11Token};

/// How bulwark signs a zone: its policy and where its keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSigning {
    pub policy: Arc<DnssecPolicy>,
    pub key_directory: PathBuf,
    /// Asked whether they serve a new KSK's DS (empty: `bulwark keys ds-seen`).
    pub parents: Vec<SocketAddr>,
    /// The `[pkcs11]` token, for keys kept in it.
    pub pkcs11: Option<Arc<Pkcs11Settings>>,
}

/// A validated policy. Times are seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnssecPolicy {
    pub name: String,
    pub algorithm: Algorithm,
    pub keystore: Keystore,
    pub ksk_size: Option<u32>,
    pub zsk_size: Option<u32>,
    pub single_key: bool,
    pub denial: Denial,
    pub nsec3_salt_length: u8,
    pub signature_validity: u64,
    pub signature_refresh: u64,
    pub signature_inception_offset: u64,
    pub signature_jitter: u64,
    pub resign_interval: u64,
    pub dnskey_ttl: Option<u32>,
    pub cds_cdnskey: bool,
    /// 0: no automatic rollover.
    pub zsk_lifetime: u64,
    pub ksk_lifetime: u64,
    pub propagation_delay: u64,
    pub parent_ds_ttl: u64,
    pub parent_propagation_delay: u64,
}

const DAY: u64 = 86_400;
const HOUR: u64 = 3600;

impl Default for DnssecPolicy {
    /// Seed 002: signatures valid 14 days, inception an hour back, re-signing
    /// every 2 hours, refreshed 3 days before they expire. ECDSA P-256 rather
    /// than the seed's RSA/SHA-256: RFC 8624 §3.1 recommends it, and its
    /// answers are a fraction of the size.
    fn default() -> DnssecPolicy {
        DnssecPolicy {
            name: "default".to_owned(),
            algorithm: Algorithm::EcdsaP256Sha256,
            keystore: Keystore::File,
            ksk_size: None,
            zsk_size: None,
            single_key: false,
            denial: Denial::Nsec,
            nsec3_salt_length: 0,
            signature_validity: 14 * DAY,
            signature_refresh: 3 * DAY,
            signature_inception_offset: HOUR,
            signature_jitter: 12 * HOUR,
            resign_interval: 2 * HOUR,
            dnskey_ttl: None,
            cds_cdnskey: true,
            zsk_lifetime: 30 * DAY,
            ksk_lifetime: 0,
            propagation_delay: HOUR,
            parent_ds_ttl: DAY,
            parent_propagation_delay: HOUR,
        }
    }
}

/// The token to open: validated, the PIN read.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkcs11Settings {
    pub module: PathBuf,
    pub token_label: String,
    pin: String,
}

impl fmt::Debug for Pkcs11Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the PIN: settings end up in logs.
        f.debug_struct("Pkcs11Settings")
            .field("module", &self.module)
            .field("token_label", &self.token_label)
            .finish_non_exhaustive()
    }
}

/// Where a key generated for a zone is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keystore {
    /// In the key directory's `.private` files.
    #[default]
    File,
    /// In the `[pkcs11]` token; the key directory names it.
    Pkcs11,
}

impl Keystore {
    pub fn from_name(text: &str) -> Option<Keystore> {
        match text {
            "file" => Some(Keystore::File),
            "pkcs11" => Some(Keystore::Pkcs11),
            _ => None,
        }
    }
}

impl Pkcs11Settings {
    pub fn new(module: PathBuf, token_label: String, pin: String) -> Pkcs11Settings {
        Pkcs11Settings {
            module,
            token_label,
            pin,
        }
    }

    /// The user PIN (kept out of `Debug`).
    pub fn pin(&self) -> &str {
        &self.pin
    }

    /// Opens (once per process) and logs in to the token labelled `label`,
    /// or this one's.
    pub fn open(&self, label: Option<&str>) -> anyhow::Result<Pkcs11Token> {
        let label = label.unwrap_or(&self.token_label);
        Pkcs11Token::open(&self.module, label, &self.pin).map_err(|e| anyhow!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_pin_never_shows_in_debug_output() {
        let s = Pkcs11Settings::new("/m.so".into(), "t".into(), "s3cret-pin".into());
        assert!(!format!("{s:?}").contains("s3cret"));
    }
}
