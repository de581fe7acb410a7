//! Online signing: a zone with a `dnssec_policy` is signed as it is loaded,
//! with keys from its key directory (made there when it has none), and
//! re-signed by a background pass before its signatures need refreshing.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::anyhow;
use bulwark_dnssec::{Denial, DigestType, KeyRole, Nsec3Settings, SignerSettings, ZoneKey};
use bulwark_proto::{Name, Rdata, Record, Rtype};

use crate::config::ZoneSigning;
use crate::keystore::{Keystore, Pkcs11Settings};
use crate::policy::DnssecPolicy;
use crate::signing::{
    generate_key, generate_key_in_token, load_zone_keys, sign_zone, validity_window, write_zone_key,
};

/// Totals since start, for metrics and `ctl stats`.
#[derive(Debug, Default)]
pub struct SigningCounters {
    pub zones_signed: AtomicU64,
    pub signing_failures: AtomicU64,
    pub signatures_made: AtomicU64,
    pub keys_generated: AtomicU64,
}

pub static COUNTERS: SigningCounters = SigningCounters {
    zones_signed: AtomicU64::new(0),
    signing_failures: AtomicU64::new(0),
    signatures_made: AtomicU64::new(0),
    keys_generated: AtomicU64::new(0),
};

/// What one signing pass made, kept with the served copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedState {
    pub signed_at: u64,
    /// The earliest signature expiration (Unix seconds).
    pub expires: u64,
    /// When the next pass is due: the re-sign interval, or sooner when a
    /// key's timing changes what must be published or signed.
    pub next_resign: u64,
    pub signatures: usize,
    /// (tag, algorithm, role) of the keys in the DNSKEY RRset.
    pub keys: Vec<(u16, u8, &'static str)>,
}

/// The keys of `apex` for `policy`, generating them when the directory has
/// none of the policy's algorithm: a KSK and a ZSK, or one CSK, in files or,
/// when the policy's keystore is `pkcs11`, in the token (the key directory
/// then holds their public halves and the URIs naming them).
pub fn ensure_keys(
    dir: &Path,
    apex: &Name,
    policy: &DnssecPolicy,
    pkcs11: Option<&Pkcs11Settings>,
    now: u64,
) -> anyhow::Result<Vec<ZoneKey>> {
    let mut keys = load_zone_keys(dir, apex, pkcs11)?;
    let algorithm = policy.algorithm.number();
    if keys.iter().any(|k| k.algorithm_number() == algorithm) {
        return Ok(keys);
    }
    let wanted: &[(KeyRole, Option<u32>)] = if policy.single_key {
        &[(KeyRole::Csk, None)]
    } else {
        &[
            (KeyRole::Ksk, policy.ksk_size),
            (KeyRole::Zsk, policy.zsk_size),
        ]
    };
    let token = match policy.keystore {
        Keystore::File => None,
        Keystore::Pkcs11 => Some(
            pkcs11
                .ok_or_else(|| {
                    anyhow!(
                        "policy {} keeps keys in pkcs11, but there is no [pkcs11] table",
                        policy.name
                    )
                })?
                .open(None)?,
        ),
    };
    for (role, bits) in wanted {
        let key = match &token {
            Some(token) => generate_key_in_token(token, apex, policy.algorithm, *bits, *role, now)?,
            None => generate_key(policy.algorithm, *bits, *role, now)?,
        };
        let stem = write_zone_key(dir, apex, &key)?;
        COUNTERS.keys_generated.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            zone = %apex,
            key_tag = key.key_tag(),
            algorithm = %policy.algorithm,
            role = role.name(),
            file = %stem.display(),
            token = token.as_ref().map(|t| t.label()),
            "DNSSEC key generated"
        );
        if role.signs_key_set() {
            let ds = key.ds(apex, DigestType::Sha256);
            tracing::info!(zone = %apex, "give the parent this DS: {apex} IN DS {}", Rdata::Ds(ds));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// A stable salt of `len` octets derived from the zone's keys, so the NSEC3
/// chain is rehashed when the keys change, not on every pass.
fn salt_for(keys: &[ZoneKey], apex: &Name, len: u8) -> Vec<u8> {
    let mut digest = Vec::new();
    for key in keys {
        digest = key_set_digest(apex, key, &digest);
    }
    digest.truncate(usize::from(len));
    digest
}

fn key_set_digest(apex: &Name, key: &ZoneKey, previous: &[u8]) -> Vec<u8> {
    let mut ds = key.ds(apex, DigestType::Sha384).digest;
    for (d, p) in ds.iter_mut().zip(previous) {
        *d ^= *p;
    }
    ds
}

/// Signs `records` for serving under `signing` at `now`.
pub fn sign_for_serving(
    apex: &Name,
    signing: &ZoneSigning,
    records: Vec<Record>,
    now: u64,
    threads: usize,
) -> anyhow::Result<(Vec<Record>, SignedState)> {
    let started = Instant::now();
    let policy = &signing.policy;
    let result = (|| {
        let keys = ensure_keys(
            &signing.key_directory,
            apex,
            policy,
            signing.pkcs11.as_deref(),
            now,
        )?;
        let denial = match &policy.denial {
            Denial::Nsec3(settings) => Denial::Nsec3(Nsec3Settings {
                salt: salt_for(&keys, apex, policy.nsec3_salt_length),
                ..settings.clone()
            }),
            Denial::Nsec => Denial::Nsec,
        };
        let settings = SignerSettings {
            denial,
            dnskey_ttl: policy.dnskey_ttl,
            publish_cds: policy.cds_cdnskey,
            now,
        };
        let validity = validity_window(
            now,
            policy.signature_validity,
            policy.signature_inception_offset,
        );
        let signed = sign_zone(apex, records, &keys, &settings, validity, threads, None)?;
        let signatures = signed.iter().filter(|r| r.rtype() == Rtype::RRSIG).count();
        if signatures == 0 {
            return Err(anyhow!("no key of {apex} is active"));
        }
        let next_key_event = keys
            .iter()
            .flat_map(|k| {
                [
                    k.timing.publish,
                    k.timing.activate,
                    k.timing.inactive,
                    k.timing.delete,
                ]
            })
            .flatten()
            .filter(|&t| t > now)
            .min();
        let next_resign = now
            .saturating_add(policy.resign_interval)
            .min(next_key_event.unwrap_or(u64::MAX));
        let state = SignedState {
            signed_at: now,
            expires: now.saturating_add(policy.signature_validity),
            next_resign,
            signatures,
            keys: keys
                .iter()
                .filter(|k| k.timing.is_published(now))
                .map(|k| (k.key_tag(), k.algorithm_number(), k.role.name()))
                .collect(),
        };
        Ok((signed, state))
    })();
    match &result {
        Ok((_, state)) => {
            COUNTERS.zones_signed.fetch_add(1, Ordering::Relaxed);
            COUNTERS
                .signatures_made
                .fetch_add(state.signatures as u64, Ordering::Relaxed);
            tracing::info!(
                zone = %apex,
                policy = %policy.name,
                signatures = state.signatures,
                keys = ?state.keys,
                seconds = started.elapsed().as_secs_f64(),
                next_resign = state.next_resign,
                "zone signed"
            );
        }
        Err(e) => {
            COUNTERS.signing_failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(zone = %apex, policy = %policy.name, error = %e, "zone signing failed");
        }
    }
    result
}
