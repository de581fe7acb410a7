#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
//! The rollover planner run second by second over simulated time, applying
//! its actions as the server would, with invariants a validating resolver
//! depends on checked at every step (RFC 7583's timelines).

use bulwark_dnssec::rollover::{awaiting_ds, cds_key_tags, next_key_event};
use bulwark_dnssec::{
    plan_key_actions, Algorithm, KeyAction, KeyPolicy, KeyRole, RolloverTimes, SigningKey, ZoneKey,
};

const TIMES: RolloverTimes = RolloverTimes {
    zsk_lifetime: 40,
    ksk_lifetime: 60,
    dnskey_ttl: 5,
    max_zone_ttl: 7,
    propagation_delay: 1,
    parent_ds_ttl: 4,
    parent_propagation_delay: 1,
};

fn policy(algorithm: Algorithm, single_key: bool) -> KeyPolicy {
    KeyPolicy {
        algorithm,
        single_key,
        times: TIMES,
    }
}

fn apply(keys: &mut Vec<ZoneKey>, actions: Vec<KeyAction>, algorithm: Algorithm) {
    for action in actions {
        match action {
            KeyAction::Generate { role, timing, .. } => {
                keys.push(ZoneKey::new(
                    role,
                    SigningKey::generate(algorithm, None).unwrap(),
                    timing,
                ));
            }
            KeyAction::Retime {
                key_tag,
                algorithm,
                timing,
                ..
            } => {
                let key = keys
                    .iter_mut()
                    .find(|k| k.key_tag() == key_tag && k.algorithm_number() == algorithm)
                    .unwrap();
                key.timing = timing;
            }
        }
    }
}

/// The resolver's view: which keys could have been cached in the DNSKEY
/// RRset at some moment in the last `ipub` seconds.
fn cached_somewhere(key: &ZoneKey, now: u64, window: u64) -> bool {
    (now.saturating_sub(window)..=now).any(|t| key.timing.is_published(t))
}

/// Runs `seconds` of simulated time from `start`, with a registrar that
/// copies CDS to the parent after `registrar_delay` seconds, and checks:
/// - something always signs the DNSKEY RRset and the zone's data, with a
///   published key of the policy's algorithm or one still cached;
/// - a key signs zone data only once its DNSKEY is in every cache (ZSK
///   pre-publication);
/// - a key-signing key whose DS the parent might still serve is published.
fn run(
    keys: &mut Vec<ZoneKey>,
    policy: &KeyPolicy,
    start: u64,
    seconds: u64,
    registrar_delay: u64,
    parent_ds: &mut Vec<(u16, u64)>,
) {
    let ipub = TIMES.dnskey_ttl + TIMES.propagation_delay;
    for now in start..start + seconds {
        // Run the planner to a fixed point, as the server does on each pass.
        for _ in 0..4 {
            let actions = plan_key_actions(keys, policy, now);
            if actions.is_empty() {
                break;
            }
            apply(keys, actions, policy.algorithm);
        }
        assert!(
            plan_key_actions(keys, policy, now).is_empty(),
            "not a fixed point at {now}"
        );

        // The registrar: the parent's DS follows CDS after a delay; the
        // server sees it (DS check) and records when.
        if let Some(tag) = awaiting_ds(keys, policy, now) {
            match parent_ds.iter().find(|(t, _)| *t == tag) {
                Some(&(_, since)) if now >= since => {
                    let key = keys.iter_mut().find(|k| k.key_tag() == tag).unwrap();
                    key.timing.ds_published = Some(now);
                }
                Some(_) => {}
                None => {
                    let cds = cds_key_tags(keys, policy, now);
                    assert_eq!(cds, vec![tag]);
                    // The parent replaces its DS set with the CDS set.
                    parent_ds.clear();
                    parent_ds.push((tag, now + registrar_delay));
                }
            }
        }

        let active_zone: Vec<&ZoneKey> = keys
            .iter()
            .filter(|k| k.timing.is_active(now) && k.role.signs_zone())
            .collect();
        let active_keyset: Vec<&ZoneKey> = keys
            .iter()
            .filter(|k| k.timing.is_active(now) && k.role.signs_key_set())
            .collect();
        assert!(!active_zone.is_empty(), "nothing signs the zone at {now}");
        assert!(
            !active_keyset.is_empty(),
            "nothing signs the DNSKEY RRset at {now}"
        );
        // In an algorithm rollover the new algorithm signs before its DNSKEYs
        // are published, on purpose (RFC 6781 §4.1.4).
        let algorithm_rollover = keys.iter().any(|k| {
            k.algorithm_number() != policy.algorithm.number() && k.timing.is_published(now)
        });
        for k in active_zone.iter().filter(|_| !algorithm_rollover) {
            let published_since = k.timing.publish.unwrap_or(0);
            if k.algorithm_number() == policy.algorithm.number() && k.role == KeyRole::Zsk {
                // A ZSK that signs was published at least Ipub ago, or it is
                // the zone's first key (nothing cached to conflict with).
                assert!(
                    published_since + ipub <= now || k.timing.activate == k.timing.publish,
                    "ZSK {} signs at {now} but was published at {published_since}",
                    k.key_tag()
                );
            }
        }
        // Every DS the parent might serve (or caches hold) matches a
        // published key-signing key.
        for &(tag, since) in parent_ds.iter() {
            if since <= now {
                let key = keys.iter().find(|k| k.key_tag() == tag).unwrap();
                assert!(
                    key.timing.is_published(now),
                    "DS {tag} at the parent, key not published at {now}"
                );
            }
        }
        // A key that signed zone data recently still has its DNSKEY where
        // caches look. (A KSK signs only the DNSKEY RRset, which is replaced
        // as a whole together with its signatures.)
        for k in keys.iter().filter(|k| {
            k.role.signs_zone()
                && !algorithm_rollover
                && k.algorithm_number() == policy.algorithm.number()
        }) {
            let signed_recently =
                (now.saturating_sub(TIMES.max_zone_ttl)..=now).any(|t| k.timing.is_active(t));
            if signed_recently && k.timing.activate.is_some_and(|a| a + ipub <= now) {
                assert!(
                    cached_somewhere(k, now, ipub),
                    "key {} signed lately but is gone at {now}",
                    k.key_tag()
                );
            }
        }
    }
}

#[test]
fn zsk_and_ksk_roll_over_without_a_gap() {
    let policy = policy(Algorithm::Ed25519, false);
    let mut keys = Vec::new();
    let mut parent = Vec::new();
    run(&mut keys, &policy, 1000, 200, 3, &mut parent);
    let zsks = keys.iter().filter(|k| k.role == KeyRole::Zsk).count();
    let ksks = keys.iter().filter(|k| k.role == KeyRole::Ksk).count();
    assert!(zsks >= 5, "ZSKs made: {zsks}");
    assert!(ksks >= 3, "KSKs made: {ksks}");
    // Old keys are withdrawn, not kept forever.
    let live = keys.iter().filter(|k| k.timing.is_live(1200)).count();
    assert!(live <= 4, "{live} keys still live");
    assert!(next_key_event(&keys, &policy, 1200).is_some());
}

#[test]
fn a_csk_rolls_by_double_signature() {
    let policy = policy(Algorithm::EcdsaP256Sha256, true);
    let mut keys = Vec::new();
    let mut parent = Vec::new();
    run(&mut keys, &policy, 5000, 200, 2, &mut parent);
    assert!(keys.iter().all(|k| k.role == KeyRole::Csk));
    assert!(keys.len() >= 3);
}

#[test]
fn a_ksk_waits_for_the_parent_however_long_it_takes() {
    let policy = policy(Algorithm::Ed25519, false);
    let mut keys = Vec::new();
    let mut parent = Vec::new();
    // The registrar takes 100 s: the old KSK must stay all that time.
    run(&mut keys, &policy, 0, 300, 100, &mut parent);
}

#[test]
fn an_algorithm_rollover_signs_first_then_publishes_then_withdraws() {
    let mut keys = Vec::new();
    let mut parent = Vec::new();
    let old = policy(Algorithm::RsaSha256, false);
    run(&mut keys, &old, 0, 20, 2, &mut parent);
    let new = policy(Algorithm::EcdsaP256Sha256, false);
    let mut saw_unpublished_signer = false;
    for now in 20..120 {
        run(&mut keys, &new, now, 1, 2, &mut parent);
        saw_unpublished_signer |= keys.iter().any(|k| {
            k.algorithm_number() == 13 && k.timing.is_active(now) && !k.timing.is_published(now)
        });
    }
    assert!(
        saw_unpublished_signer,
        "new-algorithm signatures must precede its DNSKEYs"
    );
    assert!(keys
        .iter()
        .filter(|k| k.algorithm_number() == 8)
        .all(|k| !k.timing.is_live(120)));
}

#[test]
fn an_operator_can_ask_for_a_rollover_now() {
    let policy = KeyPolicy {
        times: RolloverTimes {
            zsk_lifetime: 0,
            ksk_lifetime: 0,
            ..TIMES
        },
        ..policy(Algorithm::Ed25519, false)
    };
    let mut keys = Vec::new();
    let first = plan_key_actions(&keys, &policy, 10);
    apply(&mut keys, first, policy.algorithm);
    assert_eq!(keys.len(), 2);
    assert!(
        plan_key_actions(&keys, &policy, 500).is_empty(),
        "no lifetime, no rollover"
    );
    let zsk = keys.iter_mut().find(|k| k.role == KeyRole::Zsk).unwrap();
    zsk.timing.rollover_requested = Some(500);
    let actions = plan_key_actions(&keys, &policy, 500);
    assert!(
        matches!(
            actions[0],
            KeyAction::Generate {
                role: KeyRole::Zsk,
                ..
            }
        ),
        "{actions:?}"
    );
    apply(&mut keys, actions, policy.algorithm);
    assert!(plan_key_actions(&keys, &policy, 500).is_empty());
    assert_eq!(keys.len(), 3);
}
