//! Online signing: a zone with a `dnssec_policy` is signed as it is loaded,
//! with keys from its key directory (made there when it has none), and
//! re-signed by a background pass before its signatures need refreshing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::anyhow;
use bulwark_dnssec::rollover::{self, cds_key_tags, next_key_event};
use bulwark_dnssec::{
    plan_key_actions, Denial, DigestType, KeyAction, KeyPolicy, KeyRole, Nsec3Settings,
    RolloverTimes, SignatureCache, SignerSettings, ZoneKey,
};
use bulwark_proto::{Name, Rdata, Record, Rtype};

use crate::parent_ds::parent_serves_ds;
use crate::settings::{DnssecPolicy, Keystore, ZoneSigning};
use crate::signing::{
    generate_key_in_token_with, generate_key_with, load_zone_keys, sign_zone, validity_window,
    write_key_state, write_zone_key, SigningRun,
};

/// Totals since start, for metrics and `ctl stats`.
#[derive(Debug, Default)]
pub struct SigningCounters {
    pub zones_signed: AtomicU64,
    pub signing_failures: AtomicU64,
    pub signatures_made: AtomicU64,
    pub keys_generated: AtomicU64,
    /// Keys made, retimed, or seen at the parent.
    pub key_events: AtomicU64,
}

pub static COUNTERS: SigningCounters = SigningCounters {
    zones_signed: AtomicU64::new(0),
    signing_failures: AtomicU64::new(0),
    signatures_made: AtomicU64::new(0),
    keys_generated: AtomicU64::new(0),
    key_events: AtomicU64::new(0),
};

/// How often the parent is asked for a new KSK's DS.
const DS_CHECK_INTERVAL: u64 = 60;

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
    /// Of those, how many were kept from the last pass (unchanged RRsets
    /// whose signatures were not yet due for refresh).
    pub kept: usize,
    /// (tag, algorithm, role) of the keys in the DNSKEY RRset.
    pub keys: Vec<(u16, u8, &'static str)>,
}

/// The rollover planner's view of a policy for one zone.
pub fn key_policy(policy: &DnssecPolicy, dnskey_ttl: u32, max_zone_ttl: u32) -> KeyPolicy {
    KeyPolicy {
        algorithm: policy.algorithm,
        single_key: policy.single_key,
        times: RolloverTimes {
            zsk_lifetime: policy.zsk_lifetime,
            ksk_lifetime: policy.ksk_lifetime,
            dnskey_ttl: u64::from(dnskey_ttl),
            max_zone_ttl: u64::from(max_zone_ttl),
            propagation_delay: policy.propagation_delay,
            parent_ds_ttl: policy.parent_ds_ttl,
            parent_propagation_delay: policy.parent_propagation_delay,
        },
    }
}

fn role_bits(policy: &DnssecPolicy, role: KeyRole) -> Option<u32> {
    match role {
        KeyRole::Zsk => policy.zsk_size,
        KeyRole::Ksk | KeyRole::Csk => policy.ksk_size,
    }
}

/// Brings the zone's keys where the policy wants them at `now`: looks for the
/// new KSK's DS at the parent, then runs the rollover planner and writes
/// what it decides (new key files, new `.timing` files) before anything is
/// signed with it, so a crash never leaves signatures by a key with no file.
pub fn manage_keys(
    signing: &ZoneSigning,
    apex: &Name,
    key_policy: &KeyPolicy,
    now: u64,
) -> anyhow::Result<Vec<ZoneKey>> {
    let dir = &signing.key_directory;
    let policy = &signing.policy;
    let mut keys = load_zone_keys(dir, apex, signing.pkcs11.as_deref())?;
    // Opened when a key must be made there, not on every pass.
    let mut token = None;
    if !signing.parents.is_empty() {
        if let Some(tag) = rollover::awaiting_ds(&keys, key_policy, now) {
            if let Some(key) = keys.iter_mut().find(|k| k.key_tag() == tag) {
                if parent_serves_ds(&signing.parents, apex, key) {
                    key.timing.ds_published = Some(now);
                    write_key_state(dir, apex, key)?;
                    COUNTERS.key_events.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(zone = %apex, key_tag = tag, "DNSSEC: the parent serves the DS of the KSK");
                }
            }
        }
    }
    // A fixed point is reached in a step or two; the bound only guards
    // against a planner bug turning into a loop that makes keys forever.
    for _ in 0..4 {
        let actions = plan_key_actions(&keys, key_policy, now);
        if actions.is_empty() {
            break;
        }
        for action in actions {
            match action {
                KeyAction::Generate {
                    role,
                    timing,
                    reason,
                } => {
                    let bits = role_bits(policy, role);
                    let key = match policy.keystore {
                        Keystore::File => generate_key_with(policy.algorithm, bits, role, timing)?,
                        Keystore::Pkcs11 => {
                            if token.is_none() {
                                let settings = signing.pkcs11.as_deref().ok_or_else(|| {
                                    anyhow!(
                                        "policy {} keeps keys in pkcs11, but there is no [pkcs11] table",
                                        policy.name
                                    )
                                })?;
                                token = Some(settings.open(None)?);
                            }
                            let token = token.as_ref().ok_or_else(|| anyhow!("no token"))?;
                            generate_key_in_token_with(
                                token,
                                apex,
                                policy.algorithm,
                                bits,
                                role,
                                timing,
                            )?
                        }
                    };
                    let stem = write_zone_key(dir, apex, &key)?;
                    COUNTERS.keys_generated.fetch_add(1, Ordering::Relaxed);
                    COUNTERS.key_events.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        zone = %apex,
                        key_tag = key.key_tag(),
                        algorithm = %policy.algorithm,
                        role = role.name(),
                        publish = timing.publish,
                        activate = timing.activate,
                        file = %stem.display(),
                        "DNSSEC key generated: {reason}"
                    );
                    if role.signs_key_set() {
                        let ds = key.ds(apex, DigestType::Sha256);
                        tracing::info!(zone = %apex, "the parent needs this DS once the key is published: {apex} IN DS {}", Rdata::Ds(ds));
                    }
                    keys.push(key);
                }
                KeyAction::Retime {
                    key_tag,
                    algorithm,
                    timing,
                    reason,
                } => {
                    if let Some(key) = keys
                        .iter_mut()
                        .find(|k| k.key_tag() == key_tag && k.algorithm_number() == algorithm)
                    {
                        key.timing = timing;
                        write_key_state(dir, apex, key)?;
                        COUNTERS.key_events.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(
                            zone = %apex,
                            key_tag,
                            inactive = timing.inactive,
                            delete = timing.delete,
                            "DNSSEC key timing changed: {reason}"
                        );
                    }
                }
            }
        }
    }
    Ok(keys)
}

/// The earliest expiration of the zone's signatures, in Unix seconds
/// (RRSIG times are serial numbers, RFC 4034 §3.1.5: read them near `now`).
fn earliest_expiration(expirations: impl Iterator<Item = u32>, now: u64) -> u64 {
    let now32 = bulwark_dnssec::time::rrsig_time(now);
    expirations
        .map(|exp| {
            let ahead = exp.wrapping_sub(now32);
            if ahead < (1 << 31) {
                now.saturating_add(u64::from(ahead))
            } else {
                now.saturating_sub(u64::from(now32.wrapping_sub(exp)))
            }
        })
        .min()
        .unwrap_or(now)
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
    previous: Option<&SignatureCache>,
) -> anyhow::Result<(Vec<Record>, SignedState, SignatureCache)> {
    let started = Instant::now();
    let policy = &signing.policy;
    let result = (|| {
        let soa_ttl = records
            .iter()
            .find(|r| r.rtype() == Rtype::SOA)
            .map_or(3600, |r| r.ttl);
        let dnskey_ttl = policy.dnskey_ttl.unwrap_or(soa_ttl);
        let max_zone_ttl = records
            .iter()
            .map(|r| r.ttl)
            .max()
            .unwrap_or(0)
            .max(dnskey_ttl);
        let key_policy = key_policy(policy, dnskey_ttl, max_zone_ttl);
        let keys = manage_keys(signing, apex, &key_policy, now)?;
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
            cds_key_tags: Some(cds_key_tags(&keys, &key_policy, now)),
            now,
        };
        let validity = validity_window(
            now,
            policy.signature_validity,
            policy.signature_inception_offset,
        );
        let mut signed = sign_zone(
            apex,
            records,
            &keys,
            &settings,
            SigningRun {
                validity,
                jitter: policy.signature_jitter,
                threads,
                reuse: Some((
                    previous.unwrap_or(&SignatureCache::default()),
                    u32::try_from(policy.signature_refresh).unwrap_or(u32::MAX),
                )),
            },
            None,
        )?;
        let signatures = signed.signatures.len();
        let kept = signed.kept;
        let expires =
            earliest_expiration(signed.signatures.iter().map(|s| s.fields.expiration), now);
        let cache = signed.cache.take().unwrap_or_default();
        let signed = signed.into_records();
        if signatures == 0 {
            return Err(anyhow!("no key of {apex} is active"));
        }
        // Key timing also decides when the next pass is due; while a KSK
        // waits for its DS, each pass asks the parent again.
        let mut next_resign = now
            .saturating_add(policy.resign_interval)
            .min(next_key_event(&keys, &key_policy, now).unwrap_or(u64::MAX));
        if !signing.parents.is_empty() && rollover::awaiting_ds(&keys, &key_policy, now).is_some() {
            next_resign = next_resign.min(now.saturating_add(DS_CHECK_INTERVAL));
        }
        let state = SignedState {
            signed_at: now,
            expires,
            next_resign,
            signatures,
            kept,
            keys: keys
                .iter()
                .filter(|k| k.timing.is_published(now))
                .map(|k| (k.key_tag(), k.algorithm_number(), k.role.name()))
                .collect(),
        };
        Ok((signed, state, cache))
    })();
    match &result {
        Ok((_, state, _)) => {
            COUNTERS.zones_signed.fetch_add(1, Ordering::Relaxed);
            COUNTERS.signatures_made.fetch_add(
                state.signatures.saturating_sub(state.kept) as u64,
                Ordering::Relaxed,
            );
            tracing::info!(
                zone = %apex,
                policy = %policy.name,
                signatures = state.signatures,
                kept = state.kept,
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
