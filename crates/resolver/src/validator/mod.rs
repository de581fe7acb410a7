//! The engine's side of DNSSEC validation (RFC 4035 §5): before a
//! resolution goes to its clients, each of its RRsets and its denial is
//! judged with the keys of the zone that signed it, and those keys with the
//! chain of trust above them, from a trust anchor down.
//!
//! What a chain needs and the cache lacks (a DS set, a DNSKEY set) is
//! resolved as a question of its own, which the task waits for; the
//! judgement is then made again from the start, with what is now held. A
//! zone's verdict is kept (`Resolver::keys`) for the TTL of its keys, so a
//! chain is walked once per zone, not once per answer. The judgements
//! themselves, which need no network, are in [`crate::validate`].
//!
//! Here: the rounds of a validation, what its verdict does (the cache's
//! marks, a retry elsewhere, the root key sentinel, the aggressive cache's
//! learning); in [`judge`], the verdict on a resolution's RRsets and
//! denial; in [`chain`], the chain of trust the verdicts draw on.
//!
//! Which zone a name is in, for data that comes unsigned: the zone cut the
//! resolver followed to it; for a forwarded name (no cut known), the zone
//! that answers the name's DS question (RFC 4035 §5.2: a DS denial proves
//! either an unsigned delegation or that there is no cut at the name).

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_proto::rdata::Dnskey;
use bulwark_proto::{Name, Rtype};

use crate::engine::Resolver;
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::task::{Step, Task};
use crate::validate::{Bogus, Budget, SigTime};
use crate::{ede, Millis};

mod chain;
mod judge;
mod memo;

pub(crate) use memo::SignatureMemo;

/// What is known of a zone's keys, or of the zone a name is in.
#[derive(Debug, Clone)]
pub(crate) enum ZoneTrust {
    /// Its DNSKEY set, trusted.
    Secure(Arc<[Dnskey]>),
    /// No chain of trust reaches it.
    Insecure,
    Bogus(Bogus),
}

/// A zone's verdict, and until when it holds.
#[derive(Debug, Clone)]
pub(crate) struct KeyEntry {
    trust: ZoneTrust,
    expires: Millis,
}

/// Data the judgement needs and the cache does not hold: the question to
/// resolve first.
#[derive(Debug)]
pub(crate) struct Need {
    name: Name,
    rtype: Rtype,
}

/// A judgement, or what it needs first (boxed: a name is 256 octets).
type Eval<T> = Result<T, Box<Need>>;

/// How deep one judgement may walk (a name has at most 127 labels; each
/// step of the walk goes one zone up).
const MAX_WALK: u8 = 128;
/// Times one resolution's judgement may wait for data (a DS and a DNSKEY
/// set per zone of the chain, and the zone of unsigned data).
const MAX_ROUNDS: u32 = 24;
/// Times one task asks other servers after bogus data.
const MAX_BOGUS_RETRIES: u8 = 1;
/// Zone verdicts kept at most: past it the expired go, then all.
const MAX_KEYS: usize = 50_000;

/// What the cache holds for a question: the data, or a denial with its
/// SOA and proof; and its TTL left.
enum Held {
    Positive(RrSet),
    NoData(Option<RrSet>, Vec<RrSet>),
    NxDomain(Option<RrSet>, Vec<RrSet>),
}

/// The verdict on a resolution, and on each of the cache's entries it
/// was made from.
struct Verdict {
    security: Security,
    why: Option<Bogus>,
    /// Entries to mark: owner, type (NXDOMAIN for a name that does not
    /// exist), security, and the longest they may be kept.
    marks: Vec<(Name, Rtype, Security, u32)>,
}

impl Verdict {
    fn add(&mut self, name: &Name, rtype: Rtype, judged: Judged) {
        self.security = self.security.weaker(judged.security);
        if let (Some(b), None) = (judged.why, self.why) {
            self.why = Some(b);
        }
        self.marks
            .push((name.to_lowercase(), rtype, judged.security, judged.ttl));
    }
}

/// The verdict on one RRset or denial.
struct Judged {
    security: Security,
    why: Option<Bogus>,
    ttl: u32,
}

impl Judged {
    fn secure(ttl: u32) -> Judged {
        Judged {
            security: Security::Secure,
            why: None,
            ttl,
        }
    }

    fn insecure() -> Judged {
        Judged {
            security: Security::Insecure,
            why: None,
            ttl: u32::MAX,
        }
    }

    fn bogus(b: Bogus) -> Judged {
        Judged {
            security: Security::Bogus { ede: b.ede },
            why: Some(b),
            ttl: u32::MAX,
        }
    }

    /// What unsigned data (or a denial without proof) is in a zone of
    /// `trust`: insecure in an insecure zone, bogus in a secure one.
    fn unsigned_in(trust: ZoneTrust, missing: Bogus) -> Judged {
        match trust {
            ZoneTrust::Insecure => Judged::insecure(),
            ZoneTrust::Secure(_) => Judged::bogus(missing),
            ZoneTrust::Bogus(b) => Judged::bogus(b),
        }
    }
}

const RRSIGS_MISSING: Bogus = Bogus::new(
    ede::RRSIGS_MISSING,
    "data of a signed zone came without signatures",
);
const NSEC_MISSING: Bogus = Bogus::new(
    ede::NSEC_MISSING,
    "a denial in a signed zone came without its proof",
);

/// A time as RRSIGs carry it (seconds, modulo 2^32: RFC 4034 §3.1.5).
fn sig_time(now: Millis) -> SigTime {
    u32::try_from((now / 1000) & u64::from(u32::MAX)).unwrap_or(0)
}

impl Resolver {
    /// Validates `r`, the resolution of `task`, marks the cache's entries
    /// with the verdict, and ends the task with it; or makes the task wait
    /// for what the chain of trust needs (`r` kept until it comes back).
    pub(crate) fn validate(&mut self, task: &mut Task, mut r: Resolution, now: Millis) -> Step {
        for _ in 0..MAX_ROUNDS {
            let (limits, experimental) = self
                .config
                .validation
                .as_ref()
                .map(|v| (v.work, v.experimental_algorithms))
                .unwrap_or_default();
            let mut budget = Budget::new(limits).with_experimental(experimental);
            self.bogus_zones.clear();
            let judged = self.judge(task, &r, now, &mut budget);
            self.stats.signature_checks = self
                .stats
                .signature_checks
                .saturating_add(u64::from(budget.used()));
            match judged {
                Ok(verdict) if self.retry_elsewhere(task, &verdict, now) => {
                    return Step::Continue;
                }
                Ok(mut verdict) => {
                    if verdict.security == Security::Secure && self.sentinel_fails(task) {
                        // RFC 8509 §3.2: SERVFAIL, which the cache keeps.
                        let why =
                            Bogus::new(ede::OTHER, "root key sentinel: not this trust anchor");
                        verdict.security = Security::Bogus { ede: why.ede };
                        verdict.why = Some(why);
                        for mark in &mut verdict.marks {
                            mark.2 = verdict.security;
                        }
                    }
                    for (name, rtype, security, ttl) in &verdict.marks {
                        self.cache.judge(name, *rtype, *security, *ttl, now);
                    }
                    if verdict.security == Security::Secure {
                        self.learn_spans(&r, now);
                    }
                    self.count_verdict(verdict.security);
                    r.security = verdict.security;
                    if let Some(why) = verdict.why {
                        r.ede = Some((why.ede, why.why.to_string()));
                    }
                    return Step::Done(r);
                }
                Err(need) => {
                    let Need { name, rtype } = *need;
                    task.fetched.push((name.to_lowercase(), rtype));
                    if self.wait_for(task, name, rtype, now) {
                        task.validating = Some(r);
                        return Step::Wait;
                    }
                    // It cannot be waited for (it is this very question,
                    // or one this one waits on): judged without it.
                }
            }
        }
        self.count_verdict(Security::Bogus {
            ede: ede::DNSSEC_BOGUS,
        });
        r.security = Security::Bogus {
            ede: ede::DNSSEC_BOGUS,
        };
        r.ede = Some((ede::DNSSEC_BOGUS, "the chain of trust is too long".into()));
        Step::Done(r)
    }

    /// Keeps what a secure resolution teaches the aggressive cache (RFC
    /// 8198): a denial's NSEC spans and SOA, a wildcard expansion's RRset
    /// under the wildcard's own name with the spans that proved it.
    fn learn_spans(&mut self, r: &Resolution, now: Millis) {
        if let Some(soa) = r.authority.iter().find(|s| s.rtype == Rtype::SOA) {
            self.aggressive.learn(&soa.owner, &r.authority, now);
        }
        for set in &r.answer {
            let Some(sig) = set.rrsigs().into_iter().next() else {
                continue;
            };
            if self.aggressive.learn_wildcard(set, sig.labels, now) {
                self.aggressive.learn(&sig.signer, &r.authority, now);
            }
        }
    }

    /// Bogus data may be one server's fault (a stale or broken secondary,
    /// a forger on its path): once per task, the servers that gave it,
    /// and those that gave the keys found bogus, are set aside for their
    /// zones, what they gave is forgotten, and the task asks again
    /// (Unbound's validator does the same). Whether it does.
    fn retry_elsewhere(&mut self, task: &mut Task, verdict: &Verdict, now: Millis) -> bool {
        if !matches!(verdict.security, Security::Bogus { .. })
            || task.bogus_retries >= MAX_BOGUS_RETRIES
        {
            return false;
        }
        let zones = std::mem::take(&mut self.bogus_zones);
        let data_bogus = verdict
            .marks
            .iter()
            .any(|(_, _, s, _)| matches!(s, Security::Bogus { .. }));
        let mut blamed = false;
        for zone in &zones {
            self.keys.remove(zone);
            for rtype in [Rtype::DNSKEY, Rtype::DS] {
                if let Some((ip, asked_as)) = self.origins.remove(&(zone.clone(), rtype)) {
                    if self.has_other_server(&asked_as, ip, now) {
                        self.infra.lame_for(ip, &asked_as, now);
                        blamed = true;
                    }
                }
                self.cache.remove(zone, rtype);
                task.fetched.retain(|(n, t)| !(n == zone && *t == rtype));
            }
        }
        if zones.is_empty() && data_bogus {
            for (ip, asked_as) in std::mem::take(&mut task.answered_by) {
                if self.has_other_server(&asked_as, ip, now) {
                    self.infra.lame_for(ip, &asked_as, now);
                    blamed = true;
                }
            }
        }
        if !blamed {
            return false;
        }
        for (name, rtype, _, _) in &verdict.marks {
            self.cache.remove(name, *rtype);
        }
        task.bogus_retries = task.bogus_retries.saturating_add(1);
        task.answered_by.clear();
        task.chain.clear();
        task.proofs.clear();
        task.current = task.qname.clone();
        task.cut = None;
        task.tried.clear();
        true
    }

    /// Whether `zone` has a server besides `ip` to ask (by its NS set's
    /// names, or the hints for the root): with none, blaming `ip` would
    /// leave the zone unreachable, not answered better.
    fn has_other_server(&self, zone: &Name, ip: IpAddr, now: Millis) -> bool {
        if let Some(f) = self.config.forward_for(zone) {
            return f.addresses.iter().any(|a| a.ip() != ip);
        }
        if let Some(ns) = self.cache.rrset(zone, Rtype::NS, now).map(|(set, _)| set) {
            let names = crate::classify::ns_names(&ns);
            let known_elsewhere = names
                .iter()
                .flat_map(|n| self.cache.addresses(n, now))
                .any(|a| a != ip);
            return known_elsewhere || names.len() > 1;
        }
        zone.is_root() && self.config.root_hints.iter().any(|a| a.ip() != ip)
    }

    /// RFC 8509 §3.2: a secure A or AAAA answer for a name whose first label
    /// is `root-key-sentinel-is-ta-NNNNN` when NNNNN is no root trust
    /// anchor's key tag, or `root-key-sentinel-not-ta-NNNNN` when it is
    /// one, is SERVFAIL: so anyone can see which root keys a resolver
    /// trusts (before a KSK roll, say).
    fn sentinel_fails(&self, task: &Task) -> bool {
        if !matches!(task.qtype, Rtype::A | Rtype::AAAA) {
            return false;
        }
        let Some(label) = task.qname.labels().next() else {
            return false;
        };
        let label = label.to_ascii_lowercase();
        let (is_ta, digits) = if let Some(d) = label.strip_prefix(b"root-key-sentinel-is-ta-") {
            (true, d)
        } else if let Some(d) = label.strip_prefix(b"root-key-sentinel-not-ta-") {
            (false, d)
        } else {
            return false;
        };
        // Five decimal digits, zero-padded (RFC 8509 §2).
        if digits.len() != 5 || !digits.iter().all(u8::is_ascii_digit) {
            return false;
        }
        let Some(tag) = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u16>().ok())
        else {
            return false;
        };
        let trusted = crate::config::key_tags(&self.anchors_of(&Name::root())).contains(&tag);
        trusted != is_ta
    }

    /// RFC 8145 §5: once the root's keys are trusted anew, a `_ta-XXXX`
    /// query (type NULL) to the root says which root keys this resolver
    /// has as trust anchors; nothing waits for its answer.
    fn signal_key_tags(&mut self, now: Millis) {
        if !self
            .config
            .validation
            .as_ref()
            .is_some_and(|v| v.key_tag_signaling)
        {
            return;
        }
        let tags = crate::config::key_tags(&self.anchors_of(&Name::root()));
        if tags.is_empty() {
            return;
        }
        let label: Vec<String> = tags.iter().map(|t| format!("{t:04x}")).collect();
        let Ok(name) = format!("_ta-{}.", label.join("-")).parse::<Name>() else {
            return;
        };
        if self.by_question.contains_key(&(name.clone(), Rtype::NULL)) {
            return;
        }
        let budget = self.new_budget();
        let id = self.new_task(name, Rtype::NULL, budget, 0, Vec::new(), now);
        if let Some(t) = self.tasks.get_mut(&id) {
            t.refresh = true;
        }
        self.ready.push_back(id);
    }

    fn count_verdict(&mut self, security: Security) {
        let s = &mut self.stats;
        let n = match security {
            Security::Secure => &mut s.secure,
            Security::Insecure => &mut s.insecure,
            Security::Bogus { .. } => &mut s.bogus,
            Security::Unchecked => &mut s.indeterminate,
        };
        *n = n.saturating_add(1);
    }
}
