//! `[dnssec_policy.NAME]` as written, and its validation: the named signing
//! policies many zones share (defaults follow seed 002's deployment and
//! current guidance, RFC 8624 algorithms, RFC 9276 NSEC3 parameters), and
//! what a zone's `dnssec_policy`, `parent` and `key_directory` make of its
//! signing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bulwark_dnssec::{Algorithm, Denial, Nsec3Settings};
use serde::Deserialize;
use toml::Spanned;

use super::source::Locate;
use crate::settings::{parse_duration, DnssecPolicy, Keystore, Pkcs11Settings, ZoneSigning};

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

/// Validates one `[dnssec_policy.NAME]` over the defaults.
pub fn build_policy(
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
                    "algorithm: `{}` is not one of {}",
                    text.get_ref(),
                    Algorithm::mnemonics()
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
            problems.push(loc.at(
                v.span(),
                "resign_interval: must be above 0 and shorter than signature_refresh".to_owned(),
            ));
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
    if policy.algorithm.is_post_quantum() && policy.keystore == Keystore::Pkcs11 {
        let at = s.keystore.as_ref().map(Spanned::span);
        let message = format!(
            "keystore: {} keys cannot be kept in a PKCS#11 token (no token has the mechanism); use `file`",
            policy.algorithm
        );
        problems.push(match at {
            Some(span) => loc.at(span, message),
            None => format!("[dnssec_policy.{name}]: {message}"),
        });
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

/// Every `[dnssec_policy.NAME]`.
pub fn build_policies(
    sections: &BTreeMap<String, PolicySection>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> BTreeMap<String, Arc<DnssecPolicy>> {
    sections
        .iter()
        .map(|(name, s)| (name.clone(), Arc::new(build_policy(name, s, loc, problems))))
        .collect()
}

/// The policy `reference` names: a `[dnssec_policy.NAME]`, or the built-in
/// `default` when no table of that name is written.
pub fn find_policy(
    reference: &Spanned<String>,
    policies: &BTreeMap<String, Arc<DnssecPolicy>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Arc<DnssecPolicy>> {
    match policies.get(reference.get_ref()) {
        Some(p) => Some(Arc::clone(p)),
        None if reference.get_ref() == "default" => Some(Arc::new(DnssecPolicy::default())),
        None => {
            problems.push(loc.at(
                reference.span(),
                format!(
                    "dnssec_policy: no [dnssec_policy.{}] is defined",
                    reference.get_ref()
                ),
            ));
            None
        }
    }
}

/// What every signed zone's settings start from.
pub struct SigningDefaults<'a> {
    pub policies: &'a BTreeMap<String, Arc<DnssecPolicy>>,
    /// The `[pkcs11]` token, when its table is valid.
    pub pkcs11: Option<&'a Arc<Pkcs11Settings>>,
    /// Whether a `[pkcs11]` table is written at all (valid or not).
    pub pkcs11_written: bool,
    /// `[server] key_directory`, resolved.
    pub key_directory: &'a Path,
    /// The configuration file's directory, for relative paths.
    pub base_dir: &'a Path,
}

/// A `[[zone]]`'s signing: its `dnssec_policy`, the `parent` servers asked
/// for the DS and its own `key_directory`, if any.
pub fn zone_signing(
    policy_name: &Spanned<String>,
    parent: Option<&Vec<Spanned<String>>>,
    key_directory: Option<&String>,
    defaults: &SigningDefaults<'_>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<ZoneSigning> {
    let policy = find_policy(policy_name, defaults.policies, loc, problems)?;
    let mut parents = Vec::new();
    for p in parent.into_iter().flatten() {
        match p.get_ref().parse::<SocketAddr>() {
            Ok(a) => parents.push(a),
            Err(_) => problems.push(loc.at(
                p.span(),
                format!(
                    "parent: `{}` is not an address with a port, like 192.0.2.1:53",
                    p.get_ref()
                ),
            )),
        }
    }
    if policy.keystore == Keystore::Pkcs11 && defaults.pkcs11.is_none() && !defaults.pkcs11_written
    {
        problems.push(loc.at(
            policy_name.span(),
            format!(
                "dnssec_policy: [dnssec_policy.{}] keeps keys in pkcs11, but there is no [pkcs11] table",
                policy_name.get_ref()
            ),
        ));
    }
    Some(ZoneSigning {
        pkcs11: defaults.pkcs11.cloned(),
        policy,
        parents,
        key_directory: key_directory.map_or_else(
            || defaults.key_directory.to_path_buf(),
            |d| defaults.base_dir.join(d),
        ),
    })
}
