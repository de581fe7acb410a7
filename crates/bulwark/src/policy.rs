//! `[dnssec_policy.NAME]`: how a zone is signed and its keys kept, named so
//! many zones share one policy. Defaults follow seed 002's deployment and
//! current guidance (RFC 8624 algorithms, RFC 9276 NSEC3 parameters).

use std::collections::BTreeMap;
use std::sync::Arc;

use bulwark_dnssec::{Algorithm, Denial, Nsec3Settings};
use serde::Deserialize;
use toml::Spanned;

use crate::defences::Locate;
use crate::keystore::Keystore;
use crate::signing::parse_duration;

/// The table as written; durations are `14d`, `2h`, `30m`, `45s` or seconds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    pub algorithm: Option<Spanned<String>>,
    /// Where generated keys are kept: `file` (the key directory) or
    /// `pkcs11` (the `[pkcs11]` token).
    pub keystore: Option<Spanned<String>>,
    pub ksk_size: Option<u32>,
    pub zsk_size: Option<u32>,
    /// One combined signing key (CSK) instead of a KSK and a ZSK.
    pub single_key: Option<bool>,
    pub nsec3: Option<bool>,
    pub nsec3_iterations: Option<Spanned<u16>>,
    /// Salt octets, random per signing key set; RFC 9276 §3.1 says 0.
    pub nsec3_salt_length: Option<Spanned<u8>>,
    pub nsec3_opt_out: Option<bool>,
    pub signature_validity: Option<Spanned<String>>,
    pub signature_refresh: Option<Spanned<String>>,
    pub signature_inception_offset: Option<Spanned<String>>,
    pub signature_jitter: Option<Spanned<String>>,
    pub resign_interval: Option<Spanned<String>>,
    pub dnskey_ttl: Option<u32>,
    pub cds_cdnskey: Option<bool>,
    pub zsk_lifetime: Option<Spanned<String>>,
    pub ksk_lifetime: Option<Spanned<String>>,
    pub propagation_delay: Option<Spanned<String>>,
    pub parent_ds_ttl: Option<Spanned<String>>,
    pub parent_propagation_delay: Option<Spanned<String>>,
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

fn duration(
    value: &Option<Spanned<String>>,
    key: &str,
    default: u64,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> u64 {
    let Some(value) = value else { return default };
    match parse_duration(value.get_ref()) {
        Ok(seconds) => seconds,
        Err(e) => {
            problems.push(loc.at(value.span(), format!("{key}: {e}")));
            default
        }
    }
}

impl DnssecPolicy {
    pub fn resolve(
        name: &str,
        s: &PolicySection,
        loc: &dyn Locate,
        problems: &mut Vec<String>,
    ) -> DnssecPolicy {
        let d = DnssecPolicy::default();
        let algorithm = match &s.algorithm {
            None => d.algorithm,
            Some(text) => Algorithm::from_name(text.get_ref()).unwrap_or_else(|| {
                problems.push(loc.at(
                    text.span(),
                    format!(
                        "algorithm: `{}` is not one of RSASHA256, RSASHA512, ECDSAP256SHA256, ECDSAP384SHA384, ED25519",
                        text.get_ref()
                    ),
                ));
                d.algorithm
            }),
        };
        let keystore = match &s.keystore {
            None => d.keystore,
            Some(text) => Keystore::from_name(text.get_ref()).unwrap_or_else(|| {
                problems.push(loc.at(
                    text.span(),
                    format!("keystore: `{}` is not `file` or `pkcs11`", text.get_ref()),
                ));
                d.keystore
            }),
        };
        let denial = if s.nsec3.unwrap_or(false) {
            Denial::Nsec3(Nsec3Settings {
                iterations: s.nsec3_iterations.as_ref().map_or(0, |i| *i.get_ref()),
                salt: Vec::new(),
                opt_out: s.nsec3_opt_out.unwrap_or(false),
            })
        } else {
            for (set, key) in [
                (
                    s.nsec3_iterations.as_ref().map(Spanned::span),
                    "nsec3_iterations",
                ),
                (
                    s.nsec3_salt_length.as_ref().map(Spanned::span),
                    "nsec3_salt_length",
                ),
            ] {
                if let Some(span) = set {
                    problems.push(loc.at(span, format!("{key}: needs `nsec3 = true`")));
                }
            }
            Denial::Nsec
        };
        let policy = DnssecPolicy {
            name: name.to_owned(),
            algorithm,
            keystore,
            ksk_size: s.ksk_size,
            zsk_size: s.zsk_size,
            single_key: s.single_key.unwrap_or(d.single_key),
            denial,
            nsec3_salt_length: s.nsec3_salt_length.as_ref().map_or(0, |l| *l.get_ref()),
            signature_validity: duration(
                &s.signature_validity,
                "signature_validity",
                d.signature_validity,
                loc,
                problems,
            ),
            signature_refresh: duration(
                &s.signature_refresh,
                "signature_refresh",
                d.signature_refresh,
                loc,
                problems,
            ),
            signature_inception_offset: duration(
                &s.signature_inception_offset,
                "signature_inception_offset",
                d.signature_inception_offset,
                loc,
                problems,
            ),
            signature_jitter: duration(
                &s.signature_jitter,
                "signature_jitter",
                d.signature_jitter,
                loc,
                problems,
            ),
            resign_interval: duration(
                &s.resign_interval,
                "resign_interval",
                d.resign_interval,
                loc,
                problems,
            ),
            dnskey_ttl: s.dnskey_ttl,
            cds_cdnskey: s.cds_cdnskey.unwrap_or(d.cds_cdnskey),
            zsk_lifetime: duration(
                &s.zsk_lifetime,
                "zsk_lifetime",
                d.zsk_lifetime,
                loc,
                problems,
            ),
            ksk_lifetime: duration(
                &s.ksk_lifetime,
                "ksk_lifetime",
                d.ksk_lifetime,
                loc,
                problems,
            ),
            propagation_delay: duration(
                &s.propagation_delay,
                "propagation_delay",
                d.propagation_delay,
                loc,
                problems,
            ),
            parent_ds_ttl: duration(
                &s.parent_ds_ttl,
                "parent_ds_ttl",
                d.parent_ds_ttl,
                loc,
                problems,
            ),
            parent_propagation_delay: duration(
                &s.parent_propagation_delay,
                "parent_propagation_delay",
                d.parent_propagation_delay,
                loc,
                problems,
            ),
        };
        // A signature must be refreshed before it expires, and a re-signing
        // pass must come round before the refresh window closes.
        if let Some(v) = &s.signature_refresh {
            if policy.signature_refresh >= policy.signature_validity {
                problems.push(loc.at(
                    v.span(),
                    "signature_refresh: must be shorter than signature_validity".to_owned(),
                ));
            }
        }
        if let Some(v) = &s.resign_interval {
            if policy.resign_interval == 0 || policy.resign_interval >= policy.signature_refresh {
                problems.push(
                    loc.at(
                        v.span(),
                        "resign_interval: must be above 0 and shorter than signature_refresh"
                            .to_owned(),
                    ),
                );
            }
        }
        if let Some(v) = &s.signature_jitter {
            if policy.signature_jitter >= policy.signature_refresh {
                problems.push(loc.at(
                    v.span(),
                    "signature_jitter: must be shorter than signature_refresh".to_owned(),
                ));
            }
        }
        if policy.algorithm.is_rsa() {
            for size in [policy.ksk_size, policy.zsk_size].into_iter().flatten() {
                if ![2048, 3072, 4096].contains(&size) {
                    problems.push(format!(
                        "[dnssec_policy.{name}]: RSA key size {size} is not 2048, 3072 or 4096"
                    ));
                }
            }
        }
        policy
    }
}

/// Every `[dnssec_policy.NAME]`.
pub fn build_policies(
    sections: &BTreeMap<String, PolicySection>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> BTreeMap<String, Arc<DnssecPolicy>> {
    sections
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                Arc::new(DnssecPolicy::resolve(name, s, loc, problems)),
            )
        })
        .collect()
}
