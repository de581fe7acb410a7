//! Automatic key rollovers (RFC 6781 §4.1, RFC 7583) as a planner over key
//! timing: given the zone's keys, the policy and the time, it says which keys
//! to make and which timings to change. The timings live in the key files,
//! so a restart resumes a rollover where it stood; applying the actions and
//! asking again yields nothing new until time moves on.
//!
//! - ZSK: pre-publication (RFC 7583 §3.2.1). The successor is published a
//!   publication interval before it takes over; the old key is withdrawn
//!   once the signatures it made have left caches.
//! - KSK and CSK: double signature (RFC 7583 §3.3.2). The successor signs
//!   the DNSKEY RRset (a CSK everything) next to the old key; CDS/CDNSKEY
//!   name it once it is known everywhere; the old key goes once the parent
//!   serves the new DS and the old DS has expired from caches.
//! - Algorithm (RFC 6781 §4.1.4): new-algorithm signatures first, its
//!   DNSKEYs after they are cached, the DS switch, then the old DNSKEYs
//!   out, and the old signatures a DNSKEY TTL later.

use bulwark_crypto::Algorithm;

use crate::key::{KeyRole, KeyTiming, ZoneKey};

/// The times a rollover waits for, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RolloverTimes {
    /// 0: the key is never rolled automatically.
    pub zsk_lifetime: u64,
    pub ksk_lifetime: u64,
    pub dnskey_ttl: u64,
    /// The largest TTL of a signed RRset in the zone.
    pub max_zone_ttl: u64,
    /// From a change at the primary to every secondary serving it.
    pub propagation_delay: u64,
    pub parent_ds_ttl: u64,
    pub parent_propagation_delay: u64,
}

impl RolloverTimes {
    /// Ipub: a new DNSKEY is in every cache that holds the DNSKEY RRset.
    fn publication_interval(&self) -> u64 {
        self.dnskey_ttl.saturating_add(self.propagation_delay)
    }

    /// Iret: signatures made by a retired key have left every cache.
    fn retire_interval(&self) -> u64 {
        self.max_zone_ttl.saturating_add(self.propagation_delay)
    }

    /// After the parent serves a new DS, the old one has left every cache.
    fn parent_interval(&self) -> u64 {
        self.parent_ds_ttl
            .saturating_add(self.parent_propagation_delay)
    }
}

/// What the zone's keys should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPolicy {
    pub algorithm: Algorithm,
    pub single_key: bool,
    pub times: RolloverTimes,
}

/// One change to the zone's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyAction {
    /// Make a key of the policy's algorithm with this role and timing.
    Generate {
        role: KeyRole,
        timing: KeyTiming,
        reason: &'static str,
    },
    /// Give an existing key (found by tag and algorithm) new timing.
    Retime {
        key_tag: u16,
        algorithm: u8,
        timing: KeyTiming,
        reason: &'static str,
    },
}

fn live(keys: &[ZoneKey], now: u64) -> impl Iterator<Item = &ZoneKey> + Clone {
    keys.iter().filter(move |k| k.timing.is_live(now))
}

/// When a key started (activation, else publication, else creation).
fn started(key: &ZoneKey) -> u64 {
    key.timing
        .activate
        .or(key.timing.publish)
        .or(key.timing.created)
        .unwrap_or(0)
}

fn retime(key: &ZoneKey, timing: KeyTiming, reason: &'static str) -> KeyAction {
    KeyAction::Retime {
        key_tag: key.key_tag(),
        algorithm: key.algorithm_number(),
        timing,
        reason,
    }
}

fn signs_key_set(key: &ZoneKey) -> bool {
    key.role.signs_key_set()
}

/// Whether `key`'s lifetime (or an operator) says it is time for a successor.
fn due(key: &ZoneKey, lifetime: u64, lead: u64, now: u64) -> bool {
    key.timing.rollover_requested.is_some()
        || (lifetime > 0 && started(key).saturating_add(lifetime) <= now.saturating_add(lead))
}

/// The actions the policy asks for at `now`.
pub fn plan_key_actions(keys: &[ZoneKey], policy: &KeyPolicy, now: u64) -> Vec<KeyAction> {
    let t = &policy.times;
    let ipub = t.publication_interval();
    let algorithm = policy.algorithm.number();
    let mut actions = Vec::new();
    let ours = || live(keys, now).filter(|k| k.algorithm_number() == algorithm);
    let others = || live(keys, now).filter(|k| k.algorithm_number() != algorithm);
    let key_role = if policy.single_key {
        KeyRole::Csk
    } else {
        KeyRole::Ksk
    };

    if ours().next().is_none() {
        // First keys, or the start of an algorithm rollover: with old keys
        // in place, the new ones sign at once and are published only once
        // their signatures are in every cache.
        let publish = if others().next().is_some() {
            now.saturating_add(t.retire_interval())
        } else {
            now
        };
        let timing = KeyTiming {
            publish: Some(publish),
            ..KeyTiming::starting_at(now)
        };
        let reason = if publish == now {
            "first keys of the zone"
        } else {
            "algorithm rollover: new algorithm signs first"
        };
        actions.push(KeyAction::Generate {
            role: key_role,
            timing,
            reason,
        });
        if !policy.single_key {
            actions.push(KeyAction::Generate {
                role: KeyRole::Zsk,
                timing,
                reason,
            });
        }
        return actions;
    }

    // The parent serves the newest key-signing key's DS and the old DS has
    // expired: the keys it replaces go (old algorithm: DNSKEY out now,
    // signatures a DNSKEY TTL later; same algorithm: both at once).
    let newest_ksk = ours()
        .filter(|k| signs_key_set(k))
        .max_by_key(|k| (started(k), k.key_tag()));
    if let Some(newest) = newest_ksk {
        if let Some(seen) = newest.timing.ds_published {
            let at = seen.saturating_add(t.parent_interval());
            if at <= now {
                for old in others().filter(|k| k.timing.delete.is_none()) {
                    let timing = KeyTiming {
                        delete: Some(now),
                        inactive: Some(now.saturating_add(ipub)),
                        ..old.timing
                    };
                    actions.push(retime(
                        old,
                        timing,
                        "algorithm rollover: old keys withdrawn",
                    ));
                }
                for old in ours().filter(|k| {
                    signs_key_set(k) && k.key_tag() != newest.key_tag() && k.timing.delete.is_none()
                }) {
                    let mut timing = KeyTiming {
                        inactive: Some(now),
                        delete: Some(now),
                        ..old.timing
                    };
                    if old.role.signs_zone() {
                        // A retiring CSK's zone signatures may still be cached.
                        timing.delete = Some(now.saturating_add(t.retire_interval()));
                    }
                    actions.push(retime(old, timing, "KSK rollover: new DS is at the parent"));
                }
            }
        }
    }

    // KSK or CSK rollover by double signature.
    let key_signers: Vec<&ZoneKey> = ours()
        .filter(|k| signs_key_set(k) && k.timing.delete.is_none())
        .collect();
    match key_signers.as_slice() {
        [] => actions.push(KeyAction::Generate {
            role: key_role,
            timing: KeyTiming::starting_at(now),
            reason: "the zone has no key-signing key",
        }),
        [only] if due(only, t.ksk_lifetime, ipub, now) && others().next().is_none() => {
            // A new CSK signs the zone's data only once its DNSKEY is
            // everywhere; a new KSK signs the DNSKEY RRset from the start.
            let activate = if only.role.signs_zone() {
                now.saturating_add(ipub)
            } else {
                now
            };
            actions.push(KeyAction::Generate {
                role: only.role,
                timing: KeyTiming {
                    activate: Some(activate),
                    ..KeyTiming::starting_at(now)
                },
                reason: "KSK rollover: successor published",
            });
            if only.timing.rollover_requested.is_some() {
                let timing = KeyTiming {
                    rollover_requested: None,
                    ..only.timing
                };
                actions.push(retime(only, timing, "KSK rollover started"));
            }
        }
        _ => {}
    }

    // ZSK rollover by pre-publication.
    if !policy.single_key {
        let zsks: Vec<&ZoneKey> = ours()
            .filter(|k| k.role == KeyRole::Zsk && k.timing.inactive.is_none())
            .collect();
        let waiting = zsks
            .iter()
            .any(|k| k.timing.activate.is_some_and(|a| a > now));
        let current = zsks
            .iter()
            .filter(|k| k.timing.is_active(now))
            .max_by_key(|k| (started(k), k.key_tag()));
        match current {
            None if !waiting => actions.push(KeyAction::Generate {
                role: KeyRole::Zsk,
                timing: KeyTiming::starting_at(now),
                reason: "the zone has no zone-signing key",
            }),
            Some(current) if !waiting && due(current, t.zsk_lifetime, ipub, now) => {
                let activate = if current.timing.rollover_requested.is_some() {
                    now.saturating_add(ipub)
                } else {
                    now.saturating_add(ipub)
                        .max(started(current).saturating_add(t.zsk_lifetime))
                };
                actions.push(KeyAction::Generate {
                    role: KeyRole::Zsk,
                    timing: KeyTiming {
                        activate: Some(activate),
                        ..KeyTiming::starting_at(now)
                    },
                    reason: "ZSK rollover: successor pre-published",
                });
                let timing = KeyTiming {
                    inactive: Some(activate),
                    delete: Some(activate.saturating_add(t.retire_interval())),
                    rollover_requested: None,
                    ..current.timing
                };
                actions.push(retime(
                    current,
                    timing,
                    "ZSK rollover: retirement scheduled",
                ));
            }
            _ => {}
        }
    }
    actions
}

/// The key-signing keys whose CDS and CDNSKEY the zone publishes (RFC 7344
/// §4): the newest one of the policy's algorithm that every cache knows.
pub fn cds_key_tags(keys: &[ZoneKey], policy: &KeyPolicy, now: u64) -> Vec<u16> {
    let ipub = policy.times.publication_interval();
    live(keys, now)
        .filter(|k| {
            signs_key_set(k)
                && k.algorithm_number() == policy.algorithm.number()
                && k.timing.is_published(now)
                && k.timing.is_active(now)
                && k.timing
                    .publish
                    .is_none_or(|p| p.saturating_add(ipub) <= now)
        })
        .max_by_key(|k| (started(k), k.key_tag()))
        .map(|k| vec![k.key_tag()])
        .unwrap_or_default()
}

/// The newest key-signing key whose DS the parent has not been seen serving,
/// once CDS names it: the one to look for at the parent.
pub fn awaiting_ds(keys: &[ZoneKey], policy: &KeyPolicy, now: u64) -> Option<u16> {
    let tags = cds_key_tags(keys, policy, now);
    keys.iter()
        .find(|k| tags.contains(&k.key_tag()) && k.timing.ds_published.is_none())
        .map(ZoneKey::key_tag)
}

/// The next moment the planner or the signer has something to do: a timing
/// reached, a lifetime's lead time, a DS wait over.
pub fn next_key_event(keys: &[ZoneKey], policy: &KeyPolicy, now: u64) -> Option<u64> {
    let t = &policy.times;
    let ipub = t.publication_interval();
    let mut times: Vec<u64> = Vec::new();
    for k in live(keys, now) {
        let tm = &k.timing;
        times.extend(
            [tm.publish, tm.activate, tm.inactive, tm.delete]
                .into_iter()
                .flatten(),
        );
        if let Some(p) = tm.publish {
            times.push(p.saturating_add(ipub));
        }
        if let Some(seen) = tm.ds_published {
            times.push(seen.saturating_add(t.parent_interval()));
        }
        let lifetime = if signs_key_set(k) {
            t.ksk_lifetime
        } else {
            t.zsk_lifetime
        };
        if lifetime > 0 {
            times.push(started(k).saturating_add(lifetime).saturating_sub(ipub));
        }
    }
    times.into_iter().filter(|&at| at > now).min()
}
