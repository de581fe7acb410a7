//! The cache: RRsets and negative answers by owner and type, each with the
//! time it expires and the trust it was received with.
//!
//! - **Trust** (RFC 2181 §5.4.1): data from an authoritative answer outranks
//!   the authority section of one, which outranks a non-authoritative answer,
//!   which outranks a referral's NS set, which outranks glue and other
//!   additional data. A set is replaced only by data ranked at least as high,
//!   or once it has expired, so glue never overwrites what a zone's own
//!   servers said.
//! - **TTLs** are clamped to the configured floor and cap; negative answers
//!   live for the SOA's TTL or its MINIMUM, whichever is lower, capped
//!   (RFC 2308 §5).
//! - **Serve-stale** (RFC 8767): with it on, an expired entry is kept for
//!   `max_stale_secs` more, for the engine to serve when the servers fail.
//! - **Shared**: the edge's workers answer hits themselves
//!   ([`Cache::answer`]); the engine writes. The map is split into shards,
//!   each behind its own lock, held only for a lookup or an insert.
//! - **Bounded**: each shard holds at most its part of the configured octets;
//!   past it, expired entries go first, then the oldest inserted.
//! - **Rendered**: an entry asked for more than once keeps its answer as it
//!   goes on the wire ([`rendered`]), so a hit is a copy and a few patches.

mod flushes;
mod rendered;

pub use flushes::{Flushed, ServersFlushed};
pub use rendered::CachedReply;

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Name, Rcode, Rtype};

use crate::config::ResolverConfig;
use crate::negative_anchors::NegativeAnchors;
use crate::packed::{PackedSet, ALLOCATION_OVERHEAD};
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::Millis;

/// RFC 2181 §5.4.1's ranking, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trust {
    /// The additional section, glue included.
    Additional,
    /// The authority section of a referral or of a non-authoritative answer.
    Referral,
    /// The answer section of a non-authoritative answer (a forwarder's).
    NonAuthAnswer,
    /// The authority section of an authoritative answer.
    AuthAuthority,
    /// The answer section of an authoritative answer.
    AuthAnswer,
}

/// What an entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    Positive(PackedSet),
    /// The name exists, the type does not (RFC 2308 §2.2).
    NoData(Box<Negative>),
    /// The name does not exist (RFC 2308 §2.1), kept under [`NXDOMAIN`].
    NxDomain(Box<Negative>),
}

impl Data {
    /// Whether it holds what only a DO client is given: signatures, or a
    /// negative answer's NSEC and NSEC3 records.
    pub fn has_dnssec(&self) -> bool {
        match self {
            Data::Positive(set) => set.signed(),
            Data::NoData(n) | Data::NxDomain(n) => {
                n.soa.as_ref().is_some_and(PackedSet::signed)
                    || n.extra.iter().any(|s| {
                        s.signed() || matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3 | Rtype::RRSIG)
                    })
            }
        }
    }
}

/// What a negative answer holds: its SOA and the rest of its authority
/// section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negative {
    pub soa: Option<PackedSet>,
    pub extra: Vec<PackedSet>,
}

impl Negative {
    fn pack(soa: Option<&RrSet>, extra: &[RrSet]) -> Negative {
        Negative {
            soa: soa.map(PackedSet::pack),
            extra: extra.iter().map(PackedSet::pack).collect(),
        }
    }

    /// The SOA and the extra sets, unpacked for an answer.
    pub(crate) fn unpack(&self) -> (Option<RrSet>, Vec<RrSet>) {
        (
            self.soa.as_ref().and_then(PackedSet::unpack),
            self.extra.iter().filter_map(PackedSet::unpack).collect(),
        )
    }

    fn weight(&self) -> usize {
        self.extra
            .iter()
            .map(PackedSet::weight)
            .fold(
                self.soa.as_ref().map_or(0, PackedSet::weight),
                usize::saturating_add,
            )
            .saturating_add(std::mem::size_of::<Negative>())
            .saturating_add(ALLOCATION_OVERHEAD)
    }
}

/// The denial records kept with a wildcard answer (behind one pointer:
/// most entries have none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof(pub Vec<PackedSet>);

/// The type under which an NXDOMAIN is kept: 0 is reserved (RFC 6895 §3.1).
pub const NXDOMAIN: Rtype = Rtype(0);

/// What the map's slot and the eviction queue's cost an entry beyond the
/// entry and its key: two pointers and a hash in the map, a pointer and a
/// generation in the queue, the `Arc` counts of the entry and of the key.
const ENTRY_BOOKKEEPING: usize = 16 + 8 + 24 + 2 * 16 + 2 * ALLOCATION_OVERHEAD;

/// CNAME hops followed from a name server's name to its addresses.
const ALIAS_HOPS: usize = 8;

#[derive(Debug)]
pub struct Entry {
    pub data: Data,
    /// With signed data from a wildcard: the NSEC or NSEC3 records that
    /// prove the expansion right (RFC 4035 §3.1.3.3), for DO clients.
    pub proof: Option<Box<Proof>>,
    pub expires: Millis,
    /// When it must go even as stale data.
    pub stale_until: Millis,
    pub trust: Trust,
    /// What validation found; an unchecked entry answers no client.
    pub security: Security,
    /// The TTL it was stored with, in milliseconds.
    pub ttl_ms: u64,
    /// A refresh was asked for already: one per entry, however many
    /// workers see it near expiry.
    refresh_claimed: AtomicBool,
    generation: u64,
    weight: usize,
    /// A client was answered from it once: the next answer is rendered.
    answered: AtomicBool,
    /// The answer as written on the wire, once a second client asked
    /// (`None` inside: it cannot be kept so, and is not tried again).
    rendered: OnceLock<Option<rendered::Rendered>>,
}

/// The shortest TTL worth refreshing ahead of expiry (Unbound's prefetch
/// leaves the shortest alone too): below it the refreshes would be most of
/// the traffic.
const PREFETCH_MIN_TTL_MS: u64 = 10_000;

impl Entry {
    /// What it costs the cache now: as inserted, and its rendered answer.
    fn weight_now(&self) -> usize {
        let rendered = self
            .rendered
            .get()
            .and_then(Option::as_ref)
            .map_or(0, rendered::Rendered::weight);
        self.weight.saturating_add(rendered)
    }

    /// In the last tenth of its TTL (and not stale): a question for it
    /// should refresh it in the background. True once per entry.
    fn refresh_due(&self, now: Millis) -> bool {
        let left = self.expires.saturating_sub(now);
        self.ttl_ms >= PREFETCH_MIN_TTL_MS
            && left > 0
            && left < self.ttl_ms / 10
            && !self.refresh_claimed.swap(true, Ordering::Relaxed)
    }
}

/// A lookup's result: the entry, and whether it is past its TTL (kept only
/// for serve-stale).
#[derive(Debug, Clone)]
pub struct Found {
    pub entry: Arc<Entry>,
    pub stale: bool,
}

impl Found {
    /// Seconds left of the TTL (0 when stale).
    pub fn ttl_left(&self, now: Millis) -> u32 {
        let left = self.entry.expires.saturating_sub(now) / 1000;
        u32::try_from(left).unwrap_or(u32::MAX)
    }
}

/// An entry's key: the owner's wire form in lowercase, then the type's two
/// octets. Shared by the map and the eviction queue; looked up with a
/// [`KeyBuf`] built on the stack, so a lookup allocates nothing.
type Key = Arc<[u8]>;

/// A key built for a lookup.
struct KeyBuf {
    buf: [u8; KEY_MAX],
    len: usize,
}

const KEY_MAX: usize = bulwark_proto::name::MAX_NAME_LEN + 2;

impl KeyBuf {
    fn new(name: &Name, rtype: Rtype) -> KeyBuf {
        KeyBuf::from_wire(name.as_wire(), rtype)
    }

    /// From a name's uncompressed wire form, as a question carries it.
    fn from_wire(wire: &[u8], rtype: Rtype) -> KeyBuf {
        let mut buf = [0u8; KEY_MAX];
        let n = wire.len().min(KEY_MAX - 2);
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), wire.get(..n)) {
            dst.copy_from_slice(src);
            dst.make_ascii_lowercase();
        }
        let end = n.saturating_add(2);
        if let Some(t) = buf.get_mut(n..end) {
            t.copy_from_slice(&rtype.0.to_be_bytes());
        }
        KeyBuf { buf, len: end }
    }

    fn as_slice(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// The owner name a key holds.
fn key_name(key: &[u8]) -> Option<Name> {
    let wire = key.get(..key.len().checked_sub(2)?)?;
    Name::from_wire(wire).ok()
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Key, Arc<Entry>, foldhash::fast::RandomState>,
    /// Insertion order, for eviction; stale items (replaced entries) are
    /// skipped by their generation.
    order: VecDeque<(Key, u64)>,
    bytes: usize,
}

const SHARDS: usize = 32;

/// Counters for metrics and `ctl`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub entries: u64,
    pub bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub inserts: u64,
}

#[derive(Debug)]
pub struct Cache {
    shards: Vec<Mutex<Shard>>,
    spare: Mutex<Shard>,
    shard_bytes: usize,
    ttl_min: u32,
    ttl_max: u32,
    negative_ttl_max: u32,
    /// Milliseconds past expiry an entry is kept (0: none).
    stale_ms: u64,
    stale_answer_ttl: u32,
    /// What new data is until validated: unchecked while validation is
    /// on, insecure when it is off.
    arriving: Security,
    /// The longest a bogus answer is kept (RFC 4035 §4.7).
    bogus_ttl: u32,
    /// Zones not validated (RFC 7646), shared with the control socket.
    negative_anchors: NegativeAnchors,
    /// Flushes the engine has yet to apply to what it keeps itself.
    flushes: flushes::Flushes,
    /// Picks the shard. foldhash, seeded at random per process: several
    /// times faster than SipHash on short keys, and still not a function
    /// an attacker can aim names at without knowing the seed.
    hasher: foldhash::fast::RandomState,
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    inserts: AtomicU64,
}

/// CNAME links the cache follows on its own for one answer.
const MAX_CACHED_CHAIN: usize = 12;

impl Cache {
    pub fn new(config: &ResolverConfig) -> Cache {
        let stale_ms = config
            .stale
            .map_or(0, |s| u64::from(s.max_stale_secs).saturating_mul(1000));
        Cache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            spare: Mutex::new(Shard::default()),
            shard_bytes: (config.cache_bytes / SHARDS).max(4096),
            ttl_min: config.ttl_min,
            ttl_max: config.ttl_max.max(config.ttl_min),
            negative_ttl_max: config.negative_ttl_max,
            stale_ms,
            stale_answer_ttl: config.stale.map_or(30, |s| s.stale_answer_ttl),
            arriving: if config.validation.is_some() {
                Security::Unchecked
            } else {
                Security::Insecure
            },
            bogus_ttl: config.validation.as_ref().map_or(60, |v| v.bogus_ttl),
            negative_anchors: NegativeAnchors::new(
                config
                    .validation
                    .as_ref()
                    .map_or(&[][..], |v| &v.negative_anchors),
            ),
            flushes: flushes::Flushes::default(),
            hasher: foldhash::fast::RandomState::default(),
            generation: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
        }
    }

    /// The negative trust anchors (RFC 7646) the engine honours.
    pub fn negative_anchors(&self) -> &NegativeAnchors {
        &self.negative_anchors
    }

    /// What data the servers gave is until validated.
    pub fn arriving(&self) -> Security {
        self.arriving
    }

    fn shard(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        let hash = self.hasher.hash_one(key);
        let i = usize::try_from(hash.checked_rem(SHARDS as u64).unwrap_or(0)).unwrap_or(0);
        // `shards` has SHARDS entries, so `spare` is never used; it keeps the
        // lookup free of a panicking index. A panic while a shard was locked
        // leaves its map whole (each change is one insert or removal): go on
        // with it.
        self.shards
            .get(i)
            .unwrap_or(&self.spare)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry for `name` and `rtype`: fresh, or stale if `allow_stale`.
    pub fn get(&self, name: &Name, rtype: Rtype, now: Millis, allow_stale: bool) -> Option<Found> {
        let key = KeyBuf::new(name, rtype);
        let shard = self.shard(key.as_slice());
        let entry = shard.map.get(key.as_slice())?;
        if entry.expires > now {
            return Some(Found {
                entry: Arc::clone(entry),
                stale: false,
            });
        }
        (allow_stale && entry.stale_until > now).then(|| Found {
            entry: Arc::clone(entry),
            stale: true,
        })
    }

    /// A fresh positive RRset.
    pub fn rrset(&self, name: &Name, rtype: Rtype, now: Millis) -> Option<(RrSet, u32)> {
        let found = self.get(name, rtype, now, false)?;
        match &found.entry.data {
            Data::Positive(set) => Some((set.unpack()?, found.ttl_left(now))),
            _ => None,
        }
    }

    /// The fresh A and AAAA addresses held for `name`, through a held CNAME
    /// chain: a name server named by an alias breaks RFC 2181 §10.3, but it
    /// is common, and Unbound and BIND follow it.
    pub fn addresses(&self, name: &Name, now: Millis) -> Vec<IpAddr> {
        let name = self.alias_target(name, now);
        let mut out = Vec::new();
        for t in [Rtype::A, Rtype::AAAA] {
            if let Some((set, _)) = self.rrset(&name, t, now) {
                out.extend(set.addresses());
            }
        }
        out
    }

    /// Whether `name`'s address lookups are already answered (with data or
    /// with a negative answer) for both types, through a held CNAME chain.
    pub fn addresses_known(&self, name: &Name, now: Millis) -> bool {
        let name = self.alias_target(name, now);
        if self.get(&name, NXDOMAIN, now, false).is_some() {
            return true;
        }
        [Rtype::A, Rtype::AAAA]
            .iter()
            .all(|t| self.get(&name, *t, now, false).is_some())
    }

    /// Where the fresh CNAMEs held from `name` lead (a few hops at most).
    fn alias_target(&self, name: &Name, now: Millis) -> Name {
        let mut at = name.to_lowercase();
        for _ in 0..ALIAS_HOPS {
            let next = self
                .rrset(&at, Rtype::CNAME, now)
                .and_then(|(set, _)| set.target_names().into_iter().next());
            match next {
                Some(target) => at = target.to_lowercase(),
                None => break,
            }
        }
        at
    }

    /// The closest enclosing zone cut whose NS set is held: the set and its
    /// owner, walking up from `name` (not above `floor`, when given).
    pub fn closest_ns(&self, name: &Name, now: Millis) -> Option<RrSet> {
        let mut at = Some(name.to_lowercase());
        while let Some(n) = at {
            if let Some((set, _)) = self.rrset(&n, Rtype::NS, now) {
                return Some(set);
            }
            at = n.parent();
        }
        None
    }

    /// Keeps `set`, received with `trust`, unless a fresh set ranked higher
    /// is held. The TTL is clamped to the configured bounds.
    pub fn insert_rrset(&self, set: RrSet, trust: Trust, now: Millis) {
        let ttl = set.ttl.clamp(self.ttl_min, self.ttl_max);
        let key = KeyBuf::new(&set.owner, set.rtype);
        let data = Data::Positive(PackedSet::pack(&set));
        self.insert(&key, data, None, ttl, trust, self.arriving, now);
    }

    /// Keeps `set` as [`Cache::insert_rrset`] does, with `proof`: the
    /// denial records that came with it (a wildcard answer's).
    pub fn insert_answer(&self, set: RrSet, proof: &[RrSet], trust: Trust, now: Millis) {
        let ttl = set.ttl.clamp(self.ttl_min, self.ttl_max);
        let key = KeyBuf::new(&set.owner, set.rtype);
        let data = Data::Positive(PackedSet::pack(&set));
        let proof = (!proof.is_empty())
            .then(|| Box::new(Proof(proof.iter().map(PackedSet::pack).collect())));
        self.insert(&key, data, proof, ttl, trust, self.arriving, now);
    }

    /// Records what validation found for the entry under `name`/`rtype`
    /// (`NXDOMAIN` for a name that does not exist): it is kept again with
    /// `security`, no longer than `ttl_cap` seconds (a signature's end,
    /// RFC 4035 §5.3.3), and a bogus one no longer than the bogus TTL.
    /// Nothing is done when the entry is gone or already judged.
    pub fn judge(&self, name: &Name, rtype: Rtype, security: Security, ttl_cap: u32, now: Millis) {
        let Some(found) = self.get(name, rtype, now, false) else {
            return;
        };
        let entry = &found.entry;
        if entry.security != Security::Unchecked {
            return;
        }
        let mut ttl = found.ttl_left(now).min(ttl_cap);
        if matches!(security, Security::Bogus { .. }) {
            ttl = ttl.min(self.bogus_ttl);
        }
        let key = KeyBuf::new(name, rtype);
        let mut shard = self.shard(key.as_slice());
        // Only the entry judged is replaced, not one put there meanwhile.
        let same = shard
            .map
            .get(key.as_slice())
            .is_some_and(|e| Arc::ptr_eq(e, entry));
        if same {
            if let Some(old) = shard.map.remove(key.as_slice()) {
                shard.bytes = shard.bytes.saturating_sub(old.weight_now());
            }
        }
        drop(shard);
        if same {
            let (data, proof) = (entry.data.clone(), entry.proof.clone());
            self.insert(&key, data, proof, ttl, entry.trust, security, now);
        }
    }

    /// Keeps a negative answer for `name` (and `rtype` for NODATA). Its TTL
    /// is the SOA's TTL or MINIMUM, the lower, capped (RFC 2308 §5); with no
    /// SOA, nothing is kept (RFC 2308 §5: "SHOULD NOT be cached"), unless
    /// NSEC or NSEC3 records prove it (a DS denial): then their TTL.
    pub fn insert_negative(
        &self,
        name: &Name,
        rtype: Option<Rtype>,
        soa: Option<RrSet>,
        extra: Vec<RrSet>,
        trust: Trust,
        now: Millis,
    ) {
        // A bare NSEC or NSEC3 proof (a DS denial without a SOA, or one a
        // referral carried) lives as long as its records.
        let proof_ttl = || {
            extra
                .iter()
                .filter(|s| matches!(s.rtype, Rtype::NSEC | Rtype::NSEC3))
                .map(|s| s.ttl)
                .min()
        };
        let Some(ttl) = soa.as_ref().map_or_else(proof_ttl, negative_ttl) else {
            return;
        };
        let ttl = ttl.min(self.negative_ttl_max);
        let negative = Box::new(Negative::pack(soa.as_ref(), &extra));
        let (key, data) = match rtype {
            None => (KeyBuf::new(name, NXDOMAIN), Data::NxDomain(negative)),
            Some(t) => (KeyBuf::new(name, t), Data::NoData(negative)),
        };
        self.insert(&key, data, None, ttl, trust, self.arriving, now);
    }

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &self,
        key: &KeyBuf,
        data: Data,
        proof: Option<Box<Proof>>,
        ttl: u32,
        trust: Trust,
        security: Security,
        now: Millis,
    ) {
        let key = key.as_slice();
        let expires = now.saturating_add(u64::from(ttl).saturating_mul(1000));
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        // The entry, its key (once: the queue shares it), the map's slot
        // and the queue's, and the allocator's headers.
        let weight = match &data {
            Data::Positive(s) => s.weight(),
            Data::NoData(n) | Data::NxDomain(n) => n.weight(),
        }
        .saturating_add(std::mem::size_of::<Entry>())
        .saturating_add(key.len())
        .saturating_add(ENTRY_BOOKKEEPING);
        let weight = proof
            .iter()
            .flat_map(|p| p.0.iter())
            .map(PackedSet::weight)
            .fold(weight, usize::saturating_add);
        let entry = Arc::new(Entry {
            data,
            proof,
            expires,
            stale_until: expires.saturating_add(self.stale_ms),
            trust,
            security,
            ttl_ms: u64::from(ttl).saturating_mul(1000),
            refresh_claimed: AtomicBool::new(false),
            generation,
            weight,
            answered: AtomicBool::new(false),
            rendered: OnceLock::new(),
        });
        let mut shard = self.shard(key);
        if let Some(old) = shard.map.get(key) {
            // RFC 2181 §5.4.1: lower-ranked data never replaces fresh
            // higher-ranked data.
            if old.expires > now && old.trust > trust {
                return;
            }
        }
        let key: Key = Arc::from(key);
        if let Some(old) = shard.map.insert(Arc::clone(&key), entry) {
            shard.bytes = shard.bytes.saturating_sub(old.weight_now());
        }
        shard.bytes = shard.bytes.saturating_add(weight);
        shard.order.push_back((key, generation));
        self.inserts.fetch_add(1, Ordering::Relaxed);
        let evicted = evict(&mut shard, self.shard_bytes, now);
        if evicted > 0 {
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
    }

    /// The answer the cache alone gives to `qname`/`qtype`: a CNAME chain
    /// followed as far as it is held, ending in data, NODATA or NXDOMAIN.
    /// `None` when any link is missing (the engine must ask). With
    /// `allow_stale`, expired data kept for serve-stale counts too, and the
    /// answer says so.
    pub fn answer(
        &self,
        qname: &Name,
        qtype: Rtype,
        now: Millis,
        allow_stale: bool,
    ) -> Option<Resolution> {
        let result = self
            .answer_inner(qname, qtype, now, allow_stale, Trust::NonAuthAnswer)
            // Data still being validated is for the engine to finish.
            .filter(|r| r.security != Security::Unchecked);
        let counter = if result.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        result
    }

    /// What the cache says to a task resolving a client's question: as
    /// [`Cache::answer`], but data not validated yet is given too (the
    /// task validates it before its clients have it).
    pub fn answer_for_task(&self, qname: &Name, qtype: Rtype, now: Millis) -> Option<Resolution> {
        self.answer_inner(qname, qtype, now, false, Trust::NonAuthAnswer)
    }

    /// What the cache says to the resolver's own lookup of a name server's
    /// address: glue counts there (it is what glue is for), though never
    /// in an answer to a client.
    pub fn answer_for_lookup(&self, qname: &Name, qtype: Rtype, now: Millis) -> Option<Resolution> {
        self.answer_inner(qname, qtype, now, false, Trust::Additional)
    }

    fn answer_inner(
        &self,
        qname: &Name,
        qtype: Rtype,
        now: Millis,
        allow_stale: bool,
        least: Trust,
    ) -> Option<Resolution> {
        let mut answer = Vec::new();
        let mut name = qname.clone();
        let mut stale = false;
        let mut due = false;
        let mut security = Security::Secure;
        for _ in 0..MAX_CACHED_CHAIN {
            let ttl_of = |f: &Found| {
                if f.stale {
                    self.stale_answer_ttl
                } else {
                    f.ttl_left(now)
                }
            };
            if let Some(found) = self.get(&name, qtype, now, allow_stale) {
                stale |= found.stale;
                security = security.weaker(found.entry.security);
                let ttl = ttl_of(&found);
                due |= found.entry.refresh_due(now);
                match &found.entry.data {
                    // RFC 2181 §5.4.1: glue and a referral's NS set are
                    // never an answer; the zone's own servers are asked.
                    _ if found.entry.trust < least => return None,
                    Data::Positive(set) => {
                        answer.push(with_ttl(set.unpack()?, ttl));
                        let mut r = Resolution::answer(answer).stale(stale);
                        r.authority = found
                            .entry
                            .proof
                            .iter()
                            .flat_map(|p| p.0.iter())
                            .filter_map(PackedSet::unpack)
                            .map(|p| {
                                let own = p.ttl;
                                with_ttl(p, own.min(ttl))
                            })
                            .collect();
                        return Some(r.refresh_due(due).security(security));
                    }
                    Data::NoData(negative) => {
                        let (soa, extra) = negative.unpack();
                        let r = Resolution::negative(Rcode::NOERROR, answer, &soa, &extra, ttl);
                        return Some(r.stale(stale).refresh_due(due).security(security));
                    }
                    Data::NxDomain(_) => {}
                }
            }
            // The type asked for first: a hit needs one lookup. A name
            // known not to exist is next.
            if let Some(found) = self.get(&name, NXDOMAIN, now, allow_stale) {
                stale |= found.stale;
                security = security.weaker(found.entry.security);
                let ttl = ttl_of(&found);
                if let Data::NxDomain(negative) = &found.entry.data {
                    due |= found.entry.refresh_due(now);
                    let (soa, extra) = negative.unpack();
                    let r = Resolution::negative(Rcode::NXDOMAIN, answer, &soa, &extra, ttl);
                    return Some(r.stale(stale).refresh_due(due).security(security));
                }
            }
            if qtype == Rtype::CNAME {
                return None;
            }
            let Some(found) = self.get(&name, Rtype::CNAME, now, allow_stale) else {
                // A DNAME above the name, with the CNAME it synthesises
                // (RFC 6672 §3.1): both go in the answer.
                let (dname, found, target) = self.dname_above(&name, now, allow_stale)?;
                stale |= found.stale;
                security = security.weaker(found.entry.security);
                due |= found.entry.refresh_due(now);
                push_dname_link(&mut answer, &name, dname, &target, ttl_of(&found));
                name = target;
                continue;
            };
            stale |= found.stale;
            security = security.weaker(found.entry.security);
            due |= found.entry.refresh_due(now);
            let ttl = ttl_of(&found);
            let Data::Positive(set) = &found.entry.data else {
                return None;
            };
            if found.entry.trust < least {
                return None;
            }
            let set = set.unpack()?;
            let target = set.target_names().into_iter().next()?;
            answer.push(with_ttl(set, ttl));
            name = target;
        }
        None
    }

    /// Keeps the CNAMEs and DNAMEs of an answer's chain, except the CNAMEs
    /// a DNAME synthesised: they are made again from the DNAME when the
    /// cache answers, so that the DNAME goes out with them.
    pub fn insert_chain(&self, chain: &[RrSet], trust: Trust, now: Millis) {
        for (i, set) in chain.iter().enumerate() {
            // One DNAME may synthesise several links of a chain, each
            // after it (classify puts it in once).
            let synthesised = set.rtype == Rtype::CNAME
                && set.sigs.is_empty()
                && chain
                    .get(..i)
                    .unwrap_or_default()
                    .iter()
                    .any(|d| d.rtype == Rtype::DNAME && set.owner.is_below(&d.owner));
            if !synthesised {
                self.insert_rrset(set.clone(), trust, now);
            }
        }
    }

    /// The CNAME and DNAME links held, fresh and ranked as answers, from
    /// `qname` on, and the name they lead to: for a question the cache
    /// cannot answer whole, where resolution starts (Unbound and Knot
    /// Resolver follow a cached DNAME so too, rather than asking the zone
    /// that holds it). `None` when no link is held.
    pub fn held_chain(
        &self,
        qname: &Name,
        qtype: Rtype,
        now: Millis,
    ) -> Option<(Vec<RrSet>, Name)> {
        if qtype == Rtype::CNAME {
            return None;
        }
        let mut chain: Vec<RrSet> = Vec::new();
        let mut name = qname.to_lowercase();
        for _ in 0..MAX_CACHED_CHAIN {
            if let Some(found) = self.get(&name, Rtype::CNAME, now, false) {
                let Data::Positive(set) = &found.entry.data else {
                    break;
                };
                if found.entry.trust < Trust::NonAuthAnswer {
                    break;
                }
                let Some(set) = set.unpack() else { break };
                let Some(target) = set.target_names().into_iter().next() else {
                    break;
                };
                chain.push(with_ttl(set, found.ttl_left(now)));
                name = target.to_lowercase();
                continue;
            }
            let Some((dname, found, target)) = self.dname_above(&name, now, false) else {
                break;
            };
            if found.entry.trust < Trust::NonAuthAnswer {
                break;
            }
            push_dname_link(&mut chain, &name, dname, &target, found.ttl_left(now));
            name = target;
        }
        (!chain.is_empty()).then_some((chain, name))
    }

    /// The closest held DNAME above `name`, its entry, and the name it
    /// rewrites `name` to.
    fn dname_above(
        &self,
        name: &Name,
        now: Millis,
        allow_stale: bool,
    ) -> Option<(RrSet, Found, Name)> {
        let mut at = name.parent();
        while let Some(owner) = at {
            if let Some(found) = self.get(&owner, Rtype::DNAME, now, allow_stale) {
                let Data::Positive(set) = &found.entry.data else {
                    return None;
                };
                let set = set.unpack()?;
                let target = set.target_names().into_iter().next()?;
                let new = name.replace_suffix(&owner, &target)?.ok()?;
                return Some((set, found, new.to_lowercase()));
            }
            at = owner.parent();
        }
        None
    }

    /// Forgets the entry under `name`/`rtype` (`NXDOMAIN` for a name that
    /// does not exist).
    pub fn remove(&self, name: &Name, rtype: Rtype) {
        let key = KeyBuf::new(&name.to_lowercase(), rtype);
        let mut shard = self.shard(key.as_slice());
        if let Some(old) = shard.map.remove(key.as_slice()) {
            shard.bytes = shard.bytes.saturating_sub(old.weight_now());
        }
    }

    /// Forgets `name`'s entries of every type, and has the engine forget
    /// what it knows of the name beside them ([`Flushed`]).
    pub fn flush_name(&self, name: &Name) -> usize {
        let name = name.to_lowercase();
        self.flushes.note(Flushed::Name(name.clone()));
        self.retain(|key| key_name(key).is_none_or(|n| n != name))
    }

    /// Forgets every entry at or below `zone`, likewise.
    pub fn flush_zone(&self, zone: &Name) -> usize {
        let zone = zone.to_lowercase();
        self.flushes.note(Flushed::Zone(zone.clone()));
        self.retain(|key| key_name(key).is_none_or(|n| !n.ends_with(&zone)))
    }

    /// Forgets every entry, likewise.
    pub fn flush_all(&self) -> usize {
        self.flushes.note(Flushed::All);
        self.retain(|_| false)
    }

    /// Has the engine forget what it knows of the servers (round trips,
    /// time-outs and the back-off they earned, lameness, EDNS support,
    /// server cookies): of every server, or of one address. The cached
    /// data stays. Applied before the engine's next step.
    pub fn flush_servers(&self, which: ServersFlushed) {
        self.flushes.note_servers(which);
    }

    /// The flushes since the engine last asked, for it to forget the same.
    pub(crate) fn take_flushes(&self) -> (Vec<Flushed>, Vec<ServersFlushed>) {
        self.flushes.take()
    }

    fn retain(&self, keep: impl Fn(&[u8]) -> bool) -> usize {
        let mut removed = 0usize;
        for m in &self.shards {
            let mut shard = m.lock().unwrap_or_else(PoisonError::into_inner);
            let before = shard.map.len();
            let mut freed = 0usize;
            shard.map.retain(|k, e| {
                let k_keep = keep(k);
                if !k_keep {
                    freed = freed.saturating_add(e.weight_now());
                }
                k_keep
            });
            shard.bytes = shard.bytes.saturating_sub(freed);
            removed = removed.saturating_add(before.saturating_sub(shard.map.len()));
        }
        removed
    }

    pub fn stats(&self) -> CacheStats {
        let (mut entries, mut bytes) = (0u64, 0u64);
        for m in &self.shards {
            let shard = m.lock().unwrap_or_else(PoisonError::into_inner);
            entries = entries.saturating_add(u64::try_from(shard.map.len()).unwrap_or(u64::MAX));
            bytes = bytes.saturating_add(u64::try_from(shard.bytes).unwrap_or(u64::MAX));
        }
        CacheStats {
            entries,
            bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
        }
    }
}

/// Removes entries until the shard fits: expired ones found on the way, then
/// the oldest inserted. Returns how many went.
fn evict(shard: &mut Shard, limit: usize, now: Millis) -> u64 {
    let mut evicted = 0u64;
    while shard.bytes > limit {
        let Some((key, generation)) = shard.order.pop_front() else {
            break;
        };
        let current = shard
            .map
            .get(&key)
            .is_some_and(|e| e.generation == generation);
        if !current {
            continue;
        }
        if let Some(old) = shard.map.remove(&key) {
            shard.bytes = shard.bytes.saturating_sub(old.weight_now());
            if old.stale_until > now {
                evicted = evicted.saturating_add(1);
            }
        }
    }
    // Replaced entries leave their old places in the queue; keep it from
    // growing past a few times the map.
    if shard.order.len() > shard.map.len().saturating_mul(4).saturating_add(64) {
        let map = &shard.map;
        shard
            .order
            .retain(|(k, g)| map.get(k).is_some_and(|e| e.generation == *g));
    }
    evicted
}

/// RFC 2308 §5: a negative answer lives for the SOA's TTL or its MINIMUM,
/// the lower.
fn negative_ttl(soa: &RrSet) -> Option<u32> {
    let minimum = soa.typed().find_map(|r| match r {
        Rdata::Soa(s) => Some(s.minimum),
        _ => None,
    })?;
    Some(soa.ttl.min(minimum))
}

/// Adds to `chain` the link a DNAME makes for `name`: the DNAME (once per
/// chain: one DNAME may rewrite several links) and the CNAME it synthesises
/// to `target` (RFC 6672 §3.1), both with `ttl`.
fn push_dname_link(chain: &mut Vec<RrSet>, name: &Name, dname: RrSet, target: &Name, ttl: u32) {
    let mut cname = RrSet::new(name.clone(), Rtype::CNAME, ttl);
    cname.push(Rdata::Cname(target.clone()).to_wire(), ttl);
    if !chain
        .iter()
        .any(|s| s.rtype == Rtype::DNAME && s.owner == dname.owner)
    {
        chain.push(with_ttl(dname, ttl));
    }
    chain.push(cname);
}

fn with_ttl(mut set: RrSet, ttl: u32) -> RrSet {
    set.ttl = ttl;
    set
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What `cache_size` counts for the commonest entry, a one-address
    /// RRset, stays near what it costs (docs/resolver.md says about 350
    /// octets; Unbound's rrset and message caches spend more per name).
    #[test]
    fn a_one_address_rrset_weighs_what_the_docs_say() {
        let cache = Cache::new(&ResolverConfig::default());
        for i in 0..1000u32 {
            let owner: Name = format!("host{i}.example.com.").parse().unwrap();
            let mut set = RrSet::new(owner, Rtype::A, 300);
            set.push(i.to_be_bytes().to_vec(), 300);
            cache.insert_rrset(set, Trust::AuthAnswer, 0);
        }
        let stats = cache.stats();
        assert_eq!(stats.entries, 1000);
        let each = stats.bytes / stats.entries;
        assert!((300..=400).contains(&each), "{each} octets an entry");
    }
}

#[cfg(test)]
mod held_chain_tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// A DNAME held above a name is where its resolution starts: the DNAME,
    /// the CNAME it makes, and the name that CNAME leads to.
    #[test]
    fn a_held_dname_leads_a_name_below_it_elsewhere() {
        let cache = Cache::new(&ResolverConfig::default());
        let mut dname = RrSet::new("example.com.".parse().unwrap(), Rtype::DNAME, 3600);
        dname.push(
            Rdata::Dname("example.net.".parse().unwrap()).to_wire(),
            3600,
        );
        cache.insert_rrset(dname, Trust::AuthAnswer, 0);
        let (chain, target) = cache
            .held_chain(&"a.b.example.com.".parse().unwrap(), Rtype::A, 1000)
            .unwrap();
        assert_eq!(target, "a.b.example.net.".parse::<Name>().unwrap());
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[0].rtype, Rtype::DNAME);
        assert_eq!(chain[1].rtype, Rtype::CNAME);
        assert!(cache
            .held_chain(&"a.b.example.org.".parse().unwrap(), Rtype::A, 1000)
            .is_none());
    }
}
