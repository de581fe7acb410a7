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
//! Which zone a name is in, for data that comes unsigned: the zone cut the
//! resolver followed to it; for a forwarded name (no cut known), the zone
//! that answers the name's DS question (RFC 4035 §5.2: a DS denial proves
//! either an unsigned delegation or that there is no cut at the name).

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_proto::rdata::{Dnskey, Ds};
use bulwark_proto::{Name, Rcode, Rdata, Rtype};

use crate::cache::{Data, NXDOMAIN};
use crate::engine::Resolver;
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::task::{Step, Task};
use crate::validate::nsec::NsecRecord;
use crate::validate::nsec3::{Nsec3Proof, Nsec3Record};
use crate::validate::{
    nsec, nsec3, trust_by_anchors, trust_by_ds, verify_rrset, Bogus, Budget, DsDenial, SigTime,
    ZoneKeys,
};
use crate::{ede, Millis};

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
            let limits = self
                .config
                .validation
                .as_ref()
                .map(|v| v.work)
                .unwrap_or_default();
            let mut budget = Budget::new(limits);
            self.bogus_zones.clear();
            match self.judge(task, &r, now, &mut budget) {
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

    /// The verdict on `r`: its answer's RRsets one by one (a CNAME a DNAME
    /// synthesised stands with the DNAME), a wildcard answer's proof, and
    /// a denial's proof.
    fn judge(
        &mut self,
        task: &Task,
        r: &Resolution,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Verdict> {
        let mut verdict = Verdict {
            security: Security::Secure,
            why: None,
            marks: Vec::new(),
        };
        for set in &r.answer {
            let synthesised = set.rtype == Rtype::CNAME
                && set.sigs.is_empty()
                && r.answer
                    .iter()
                    .any(|d| d.rtype == Rtype::DNAME && set.owner.is_below(&d.owner));
            if synthesised {
                continue;
            }
            // RRSIG records are not signed (RFC 4035 §2.2): an answer of
            // them cannot be secure, nor shown bogus.
            if set.rtype == Rtype::RRSIG {
                verdict.add(&set.owner, set.rtype, Judged::insecure());
                continue;
            }
            let judged = self.judge_set(task, set, &r.authority, now, budget)?;
            verdict.add(&set.owner, set.rtype, judged);
        }
        let negative = r.rcode == Rcode::NXDOMAIN
            || r.authority.iter().any(|s| s.rtype == Rtype::SOA)
            || (r.rcode == Rcode::NOERROR && r.answer.is_empty());
        if negative {
            let name = denied_name(&task.qname, &r.answer);
            let nxdomain = r.rcode == Rcode::NXDOMAIN;
            let judged = self.judge_denial(task, &name, nxdomain, &r.authority, now, budget)?;
            let key = if nxdomain { NXDOMAIN } else { task.qtype };
            verdict.add(&name, key, judged);
        }
        Ok(verdict)
    }

    /// One RRset: signed by a zone whose keys are trusted, or unsigned in
    /// an insecure zone. A wildcard expansion also needs `authority`'s
    /// proof that the name itself does not exist.
    fn judge_set(
        &mut self,
        task: &Task,
        set: &RrSet,
        authority: &[RrSet],
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Judged> {
        let sigs = set.rrsigs();
        let owner = set.owner.to_lowercase();
        let signer = sigs
            .iter()
            .map(|s| s.signer.to_lowercase())
            .find(|z| owner.ends_with(z));
        let Some(zone) = signer else {
            let at = parent_side(&owner, set.rtype);
            let trust = self.trust_at(task, &at, now, budget)?;
            return Ok(Judged::unsigned_in(trust, RRSIGS_MISSING));
        };
        let keys = match self.zone_trust(task, &zone, now, budget, 0)? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok(Judged::insecure()),
            ZoneTrust::Bogus(b) => return Ok(Judged::bogus(b)),
        };
        let mine: Vec<_> = sigs.into_iter().filter(|s| s.signer == zone).collect();
        let verified = match verify_rrset(set, &mine, &zone, &keys, sig_time(now), budget) {
            Ok(v) => v,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        if !verified.wildcard {
            return Ok(Judged::secure(verified.ttl));
        }
        // RFC 4035 §5.3.4: the labels of the signature that held say where
        // the wildcard was.
        let labels = mine
            .iter()
            .filter(|s| s.key_tag == verified.key_tag)
            .map(|s| s.labels)
            .min()
            .unwrap_or(0);
        let proof = match verified_proofs(None, authority, &zone, &keys, now, budget) {
            Ok(p) => p,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        let proven = if !proof.nsec.is_empty() {
            nsec::prove_wildcard_answer(&owner, labels, &proof.nsec).map(|()| Nsec3Proof::Proven)
        } else if !proof.nsec3.is_empty() {
            nsec3::prove_wildcard_answer(&owner, labels, &zone, &proof.nsec3, budget)
        } else {
            Err(Bogus::new(
                ede::NSEC_MISSING,
                "a wildcard answer without the proof that the name does not exist",
            ))
        };
        Ok(match proven {
            Ok(Nsec3Proof::Proven) => Judged::secure(verified.ttl),
            Ok(Nsec3Proof::Insecure) => Judged::insecure(),
            Err(b) => Judged::bogus(b),
        })
    }

    /// NXDOMAIN or NODATA for `name`: the SOA signed by its zone, and the
    /// NSEC or NSEC3 records, signed too, proving it.
    fn judge_denial(
        &mut self,
        task: &Task,
        name: &Name,
        nxdomain: bool,
        authority: &[RrSet],
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<Judged> {
        let soa = authority.iter().find(|s| s.rtype == Rtype::SOA);
        let Some(zone) = denial_signer(soa, authority) else {
            let at = parent_side(name, task.qtype);
            let trust = self.trust_at(task, &at, now, budget)?;
            return Ok(Judged::unsigned_in(trust, NSEC_MISSING));
        };
        let keys = match self.zone_trust(task, &zone, now, budget, 0)? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok(Judged::insecure()),
            ZoneTrust::Bogus(b) => return Ok(Judged::bogus(b)),
        };
        let proof = match verified_proofs(soa, authority, &zone, &keys, now, budget) {
            Ok(p) => p,
            Err(b) => return Ok(Judged::bogus(b)),
        };
        let qtype = task.qtype;
        let proven = if !proof.nsec.is_empty() {
            let records = &proof.nsec;
            if nxdomain {
                nsec::prove_nxdomain(name, records).map(|_| Nsec3Proof::Proven)
            } else {
                nsec::prove_nodata(name, qtype, records)
                    .or_else(|_| nsec::prove_wildcard_nodata(name, qtype, records))
                    .map(|()| Nsec3Proof::Proven)
            }
        } else if !proof.nsec3.is_empty() {
            let records = &proof.nsec3;
            if nxdomain {
                nsec3::prove_nxdomain(name, &zone, records, budget)
            } else {
                match nsec3::prove_nodata(name, qtype, &zone, records, budget) {
                    Ok(p) => Ok(p),
                    Err(_) => nsec3::prove_wildcard_nodata(name, qtype, &zone, records, budget),
                }
            }
        } else {
            Err(NSEC_MISSING)
        };
        Ok(match proven {
            Ok(Nsec3Proof::Proven) => Judged::secure(proof.ttl),
            Ok(Nsec3Proof::Insecure) => Judged::insecure(),
            Err(b) => Judged::bogus(b),
        })
    }

    /// The trust of the zone `name` is in, for data that came unsigned:
    /// the zone cut followed to it, or for a forwarded name the zone its
    /// DS question finds.
    fn trust_at(
        &mut self,
        task: &Task,
        name: &Name,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<ZoneTrust> {
        if self.insecure_above(name, now) {
            return Ok(ZoneTrust::Insecure);
        }
        let forwarded = self.config.forward_for(name).is_some();
        let cut = self
            .cache
            .closest_ns(name, now)
            .map(|ns| ns.owner.to_lowercase());
        match cut {
            Some(cut) if !forwarded => self.zone_trust(task, &cut, now, budget, 0),
            _ => self.zone_trust(task, name, now, budget, 0),
        }
    }

    /// Whether a zone at or above `name`, below its trust anchor, is known
    /// insecure: everything below it is then insecure too.
    fn insecure_above(&self, name: &Name, now: Millis) -> bool {
        let Some(anchor) = self
            .config
            .validation
            .as_ref()
            .and_then(|v| v.anchor_for(name))
        else {
            return true;
        };
        let mut at = Some(name.to_lowercase());
        while let Some(zone) = at {
            if !zone.is_below(anchor) {
                break;
            }
            let known = self.keys.get(&zone).filter(|e| e.expires > now);
            if known.is_some_and(|e| matches!(e.trust, ZoneTrust::Insecure)) {
                return true;
            }
            at = zone.parent();
        }
        false
    }

    /// The trust of `zone`'s keys: from its trust anchor, or from its
    /// parent's DS set (or the proof that it has none), kept once known.
    fn zone_trust(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<ZoneTrust> {
        let zone = zone.to_lowercase();
        // Before anything known of the zone: an anchor set at run time
        // applies at once.
        if self.cache.negative_anchors().covers(&zone, now) {
            return Ok(ZoneTrust::Insecure);
        }
        if let Some(e) = self.keys.get(&zone).filter(|e| e.expires > now) {
            if matches!(e.trust, ZoneTrust::Bogus(_)) {
                self.bogus_zones.push(zone.clone());
            }
            return Ok(e.trust.clone());
        }
        if depth > MAX_WALK {
            return Ok(ZoneTrust::Bogus(Bogus::new(
                ede::DNSSEC_BOGUS,
                "the chain of trust is too long",
            )));
        }
        let Some(v) = self.config.validation.as_ref() else {
            return Ok(ZoneTrust::Insecure);
        };
        let Some(anchor) = v.anchor_for(&zone).cloned() else {
            return Ok(ZoneTrust::Insecure);
        };
        let bogus_ttl = v.bogus_ttl;
        let (trust, ttl) = if zone == anchor {
            let found = self.trust_from_anchor(task, &zone, now, budget)?;
            if zone.is_root() && matches!(found.0, ZoneTrust::Secure(_)) {
                self.signal_key_tags(now);
            }
            found
        } else {
            if self.insecure_above(&zone, now) {
                return Ok(ZoneTrust::Insecure);
            }
            self.trust_from_parent(task, &zone, now, budget, depth)?
        };
        let ttl = match trust {
            ZoneTrust::Bogus(_) => ttl.min(bogus_ttl),
            _ => ttl,
        };
        if matches!(trust, ZoneTrust::Bogus(_)) {
            self.bogus_zones.push(zone.clone());
        }
        self.remember(zone, trust.clone(), ttl, now);
        Ok(trust)
    }

    fn remember(&mut self, zone: Name, trust: ZoneTrust, ttl: u32, now: Millis) {
        if self.keys.len() >= MAX_KEYS {
            self.keys.retain(|_, e| e.expires > now);
            if self.keys.len() >= MAX_KEYS {
                self.keys.clear();
            }
        }
        let expires = now.saturating_add(u64::from(ttl).saturating_mul(1000));
        self.keys.insert(zone, KeyEntry { trust, expires });
    }

    /// A zone with a trust anchor: its DNSKEY set, signed by an anchored
    /// key or by one an anchored DS vouches for (RFC 4035 §5, §4.4).
    fn trust_from_anchor(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
    ) -> Eval<(ZoneTrust, u32)> {
        let Some((Held::Positive(dnskey), _)) = self.fetch(task, zone, Rtype::DNSKEY, now)? else {
            return Ok(bogus(
                ede::DNSKEY_MISSING,
                "no DNSKEY set for the trust anchor's zone",
            ));
        };
        let anchors = self.anchors_of(zone);
        let sigs = dnskey.rrsigs();
        Ok(
            match trust_by_anchors(zone, &dnskey, &sigs, &anchors, sig_time(now), budget) {
                Ok(keys) => {
                    // RFC 5011: a managed zone's secure key set is what its
                    // anchors are kept up to date from.
                    if matches!(keys, ZoneKeys::Secure { .. }) {
                        self.saw_anchor_keys(zone, &dnskey, now, budget);
                    }
                    from_keys(keys, dnskey.ttl)
                }
                Err(b) => (ZoneTrust::Bogus(b), 0),
            },
        )
    }

    /// A zone below its trust anchor: the parent's DS set for it, signed by
    /// the parent and vouching for a key that signs the zone's DNSKEY set;
    /// or the parent's proof that there is no DS (an unsigned delegation,
    /// or no zone cut at the name at all).
    fn trust_from_parent(
        &mut self,
        task: &Task,
        zone: &Name,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<(ZoneTrust, u32)> {
        let Some((held, ttl)) = self.fetch(task, zone, Rtype::DS, now)? else {
            return Ok(bogus(
                ede::DNSSEC_BOGUS,
                "the zone's DS set could not be had",
            ));
        };
        let (soa, extra) = match held {
            Held::Positive(ds_set) => {
                return self.trust_by_ds_set(task, zone, &ds_set, now, budget, depth)
            }
            Held::NoData(soa, extra) | Held::NxDomain(soa, extra) => (soa, extra),
        };
        let Some(prover) = denial_signer(soa.as_ref(), &extra) else {
            let parent = zone.parent().unwrap_or_else(Name::root);
            let trust = self.zone_trust(task, &parent, now, budget, depth.saturating_add(1))?;
            return Ok(match Judged::unsigned_in(trust, NSEC_MISSING) {
                j if j.security == Security::Insecure => (ZoneTrust::Insecure, ttl),
                j => (ZoneTrust::Bogus(j.why.unwrap_or(NSEC_MISSING)), 0),
            });
        };
        if !zone.is_below(&prover) {
            return Ok(bogus(
                ede::DNSSEC_BOGUS,
                "the DS denial did not come from the parent zone",
            ));
        }
        let keys = match self.zone_trust(task, &prover, now, budget, depth.saturating_add(1))? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok((ZoneTrust::Insecure, ttl)),
            ZoneTrust::Bogus(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let proof = match verified_proofs(soa.as_ref(), &extra, &prover, &keys, now, budget) {
            Ok(p) => p,
            Err(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let denial = if !proof.nsec.is_empty() {
            nsec::ds_denial(zone, &proof.nsec)
        } else if !proof.nsec3.is_empty() {
            nsec3::ds_denial(zone, &prover, &proof.nsec3, budget)
        } else {
            Err(NSEC_MISSING)
        };
        let ttl = ttl.min(proof.ttl);
        Ok(match denial {
            Ok(DsDenial::Unsigned) => (ZoneTrust::Insecure, ttl),
            // No cut at the name: it is in the zone that proved so.
            Ok(DsDenial::NoCut) => (ZoneTrust::Secure(keys), ttl),
            Err(b) => (ZoneTrust::Bogus(b), 0),
        })
    }

    /// A DS set for `zone`: signed by the parent (whose keys must be
    /// trusted), then matched against the zone's DNSKEY set.
    fn trust_by_ds_set(
        &mut self,
        task: &Task,
        zone: &Name,
        ds_set: &RrSet,
        now: Millis,
        budget: &mut Budget,
        depth: u8,
    ) -> Eval<(ZoneTrust, u32)> {
        let sigs = ds_set.rrsigs();
        let signer = sigs
            .iter()
            .map(|s| s.signer.to_lowercase())
            .find(|s| zone.is_below(s));
        let parent = signer
            .clone()
            .or_else(|| zone.parent())
            .unwrap_or_else(Name::root);
        let keys = match self.zone_trust(task, &parent, now, budget, depth.saturating_add(1))? {
            ZoneTrust::Secure(keys) => keys,
            ZoneTrust::Insecure => return Ok((ZoneTrust::Insecure, ds_set.ttl)),
            ZoneTrust::Bogus(b) => return Ok((ZoneTrust::Bogus(b), 0)),
        };
        let Some(signer) = signer else {
            return Ok((ZoneTrust::Bogus(RRSIGS_MISSING), 0));
        };
        let mine: Vec<_> = sigs.into_iter().filter(|s| s.signer == signer).collect();
        if let Err(b) = verify_rrset(ds_set, &mine, &signer, &keys, sig_time(now), budget) {
            return Ok((ZoneTrust::Bogus(b), 0));
        }
        let ds: Vec<Ds> = ds_set
            .typed()
            .filter_map(|r| match r {
                Rdata::Ds(d) => Some(d),
                _ => None,
            })
            .collect();
        let Some((Held::Positive(dnskey), _)) = self.fetch(task, zone, Rtype::DNSKEY, now)? else {
            return Ok(bogus(
                ede::DNSKEY_MISSING,
                "the zone's DNSKEY set could not be had",
            ));
        };
        let sigs = dnskey.rrsigs();
        Ok(
            match trust_by_ds(zone, &dnskey, &sigs, &ds, sig_time(now), budget) {
                Ok(keys) => from_keys(keys, dnskey.ttl.min(ds_set.ttl)),
                Err(b) => (ZoneTrust::Bogus(b), 0),
            },
        )
    }

    /// What the cache holds for `name`/`rtype`, whatever its validation
    /// state (the chain checks it itself): `Err` to have it resolved
    /// first, `None` when it was resolved and is still not held.
    fn fetch(
        &self,
        task: &Task,
        name: &Name,
        rtype: Rtype,
        now: Millis,
    ) -> Eval<Option<(Held, u32)>> {
        for key in [rtype, NXDOMAIN] {
            let Some(found) = self.cache.get(name, key, now, false) else {
                continue;
            };
            let ttl = found.ttl_left(now);
            let held = match &found.entry.data {
                Data::Positive(set) => set.unpack().map(Held::Positive),
                Data::NoData(n) => {
                    let (soa, extra) = n.unpack();
                    Some(Held::NoData(soa, extra))
                }
                Data::NxDomain(n) => {
                    let (soa, extra) = n.unpack();
                    Some(Held::NxDomain(soa, extra))
                }
            };
            if let Some(held) = held {
                return Ok(Some((held, ttl)));
            }
        }
        let name = name.to_lowercase();
        if task.fetched.iter().any(|(n, t)| *n == name && *t == rtype) {
            return Ok(None);
        }
        Err(Box::new(Need { name, rtype }))
    }
}

/// A zone's keys as [`crate::validate::zone_keys`] judged them.
fn from_keys(keys: ZoneKeys, ttl: u32) -> (ZoneTrust, u32) {
    match keys {
        ZoneKeys::Secure { keys, ttl: secure } => (ZoneTrust::Secure(keys.into()), secure.min(ttl)),
        ZoneKeys::Insecure { .. } => (ZoneTrust::Insecure, ttl),
    }
}

fn bogus(code: u16, why: &'static str) -> (ZoneTrust, u32) {
    (ZoneTrust::Bogus(Bogus::new(code, why)), 0)
}

/// The verified NSEC and NSEC3 records of a denial, and how long the
/// proof may be kept.
struct Proofs {
    nsec: Vec<NsecRecord>,
    nsec3: Vec<Nsec3Record>,
    ttl: u32,
}

/// The NSEC and NSEC3 sets among `sets` (and `soa`, when given), each
/// verified with `zone`'s keys: one that does not verify makes the denial
/// bogus.
fn verified_proofs(
    soa: Option<&RrSet>,
    sets: &[RrSet],
    zone: &Name,
    keys: &[Dnskey],
    now: Millis,
    budget: &mut Budget,
) -> Result<Proofs, Bogus> {
    let now = sig_time(now);
    let mut proofs = Proofs {
        nsec: Vec::new(),
        nsec3: Vec::new(),
        ttl: u32::MAX,
    };
    if let Some(soa) = soa {
        let v = verify_rrset(soa, &soa.rrsigs(), zone, keys, now, budget)?;
        proofs.ttl = v.ttl;
    }
    for set in sets {
        if !matches!(set.rtype, Rtype::NSEC | Rtype::NSEC3) || !set.owner.ends_with(zone) {
            continue;
        }
        let v = verify_rrset(set, &set.rrsigs(), zone, keys, now, budget)?;
        proofs.ttl = proofs.ttl.min(v.ttl);
        for r in set.typed() {
            match r {
                Rdata::Nsec(nsec) => proofs.nsec.push(NsecRecord {
                    owner: set.owner.to_lowercase(),
                    nsec,
                }),
                Rdata::Nsec3(n3) => {
                    if let Some(rec) = Nsec3Record::new(&set.owner, n3) {
                        proofs.nsec3.push(rec);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(proofs)
}

/// The zone that signed a denial: its SOA's signer, or without a SOA (a
/// bare DS denial, a referral's proof) the signer of its NSEC or NSEC3
/// records. `None` when what should be signed is not.
fn denial_signer(soa: Option<&RrSet>, sets: &[RrSet]) -> Option<Name> {
    let signer_of = |set: &RrSet| {
        set.rrsigs()
            .into_iter()
            .map(|s| s.signer.to_lowercase())
            .find(|z| set.owner.ends_with(z))
    };
    match soa {
        Some(soa) => signer_of(soa).filter(|z| *z == soa.owner),
        None => sets
            .iter()
            .filter(|s| matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3))
            .find_map(signer_of),
    }
}

/// Where data of `rtype` at `name` lives: a DS set (or its absence) in
/// the parent's zone (RFC 4035 §2.4), all else at the name.
fn parent_side(name: &Name, rtype: Rtype) -> Name {
    match name.parent() {
        Some(parent) if rtype == Rtype::DS => parent,
        _ => name.clone(),
    }
}

/// The name a denial is about: where the answer's chain ends.
fn denied_name(qname: &Name, answer: &[RrSet]) -> Name {
    answer
        .iter()
        .rev()
        .find(|s| s.rtype == Rtype::CNAME)
        .and_then(|s| s.target_names().into_iter().next())
        .unwrap_or_else(|| qname.clone())
        .to_lowercase()
}
