//! Automated updates of trust anchors (RFC 5011) for one managed zone: the
//! state of each of its keys (§4), moved on by each DNSKEY set of the zone
//! that its current anchors found secure, and by the hold-down timers; when
//! the set is due to be fetched again (§2.3); and a compact binary form
//! for the server's store, so that a restart resumes where it was.
//!
//! Pure: time is an argument (Unix milliseconds), nothing is fetched here.
//! The caller fetches the zone's DNSKEY set when [`AutoTrust::next_refresh`]
//! says, validates it with [`AutoTrust::anchors`] and hands the secure set
//! to [`AutoTrust::update`].

use bulwark_dnssec::rrsig::CanonicalRrset;
use bulwark_dnssec::{key_tag, verify_rrsig};
use bulwark_proto::rdata::{Dnskey, Ds, Rrsig};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rdata, Rtype};

use super::anchors::{AnchorData, TrustAnchor};
use super::ds::{keys_vouched_for, DsVerdict};
use super::{serial_le, Budget, SigTime, PROTOCOL, REVOKED, ZONE_KEY};
use crate::rrset::RrSet;
use crate::Millis;

const SECOND: Millis = 1_000;
const HOUR: Millis = 3_600_000;
const DAY: Millis = 86_400_000;
/// RFC 5011 §2.4.1: a new key becomes an anchor after 30 days (or the
/// DNSKEY set's TTL, when longer) of being seen.
pub const ADD_HOLD_DOWN: Millis = 2_592_000_000;
/// RFC 5011 §2.4.2: a revoked key is remembered 30 days ("SHOULD be 30
/// days") before it is Removed, and here 30 more before it is forgotten.
pub const REMOVE_HOLD_DOWN: Millis = 2_592_000_000;
/// RFC 5011 §2.3: the longest wait between refreshes, 15 days.
const MAX_QUERY_INTERVAL: Millis = 1_296_000_000;
/// RFC 5011 §2.3: refreshes and retries no more often than once an hour.
const MIN_INTERVAL: Millis = HOUR;
/// RFC 5011 §2.3: a failed refresh is retried within a day.
const MAX_RETRY_INTERVAL: Millis = DAY;
/// Keys kept per zone, whatever their state: a zone that publishes more
/// new keys than this cannot grow the state without limit; extra new keys
/// are ignored until a slot frees.
pub const MAX_KEYS: usize = 32;
/// The DNSKEY Secure Entry Point flag (RFC 4034 §2.1.1): RFC 5011 manages
/// the keys that anchor a zone, its key-signing keys.
const SEP: u16 = 0x0001;
/// The first octet of [`AutoTrust::encode`]'s output.
const FORMAT_VERSION: u8 = 1;
const HAS_REFRESH: u8 = 0x01;
const HAS_EXPIRATION: u8 = 0x02;

/// One managed trust anchor zone's keys and their RFC 5011 states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoTrust {
    zone: Name,
    keys: Vec<ManagedKey>,
    /// The configured DS anchors, until a DNSKEY set they vouch for is seen
    /// (BIND's `initial-ds`).
    initial_ds: Vec<Ds>,
    last_refresh: Option<Millis>,
    /// The original TTL of the DNSKEY set at the last refresh (RFC 5011
    /// §2.3 OrigTTL), in seconds; 0 before any.
    orig_ttl: u32,
    /// When the DNSKEY set's signatures seen at the last refresh expire
    /// (the soonest of them), for the §2.3 expiration interval.
    sig_expiration: Option<Millis>,
}

/// One key of a managed zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedKey {
    /// The key as last seen: with the REVOKE bit once Revoked.
    pub key: Dnskey,
    /// `key`'s tag (which the REVOKE bit changes, RFC 5011 §2.1).
    pub tag: u16,
    pub state: KeyState,
    /// When the key entered its state (0 for a configured key).
    pub since: Millis,
    /// For AddPend, when the add hold-down ends.
    pub hold_down_end: Option<Millis>,
}

/// A key's state (RFC 5011 §4); the state Start is "not in the list".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// Seen, waiting out the add hold-down.
    AddPend,
    /// A trust anchor.
    Valid,
    /// A trust anchor absent from the last set seen: it still anchors.
    Missing,
    /// Revoked by its owner: never an anchor again.
    Revoked,
    /// Revoked for the remove hold-down; remembered a while, then forgotten.
    Removed,
}

/// What an update changed (so the caller knows to persist and to forget
/// cached key verdicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    /// No key's state changed (the refresh times may have).
    Unchanged,
    /// A key's state, or the initial DS anchors, changed.
    Changed,
}

impl KeyState {
    /// RFC 5011 §4: Valid and Missing keys are trust anchors.
    pub fn is_anchor(self) -> bool {
        matches!(self, KeyState::Valid | KeyState::Missing)
    }

    /// RFC 5011 §4: the states a self-signed revocation moves to Revoked.
    fn may_be_revoked(self) -> bool {
        matches!(
            self,
            KeyState::AddPend | KeyState::Valid | KeyState::Missing
        )
    }

    fn code(self) -> u8 {
        match self {
            KeyState::AddPend => 0,
            KeyState::Valid => 1,
            KeyState::Missing => 2,
            KeyState::Revoked => 3,
            KeyState::Removed => 4,
        }
    }

    fn from_code(code: u8) -> Option<KeyState> {
        Some(match code {
            0 => KeyState::AddPend,
            1 => KeyState::Valid,
            2 => KeyState::Missing,
            3 => KeyState::Revoked,
            4 => KeyState::Removed,
            _ => return None,
        })
    }
}

impl ManagedKey {
    fn new(key: Dnskey, state: KeyState, since: Millis, hold_down_end: Option<Millis>) -> Self {
        ManagedKey {
            tag: tag_of(&key),
            key,
            state,
            since,
            hold_down_end,
        }
    }

    /// This key, revoked or not, is `other`.
    fn is(&self, other: &Dnskey) -> bool {
        same_key(&self.key, other)
    }

    /// This key, not revoked, is in `seen`.
    fn present_in(&self, seen: &[Dnskey]) -> bool {
        seen.iter()
            .any(|k| k.flags & REVOKED == 0 && same_key(&self.key, k))
    }
}

impl AutoTrust {
    /// From the configured initial anchors for `zone` (the others are
    /// ignored): DNSKEY anchors start Valid; DS anchors are kept as DS
    /// until the first DNSKEY set they vouch for is seen, whose vouched-for
    /// keys then become Valid (BIND's `initial-ds`). Whether an anchor is
    /// managed is the caller's choice: every anchor given is.
    pub fn new(zone: &Name, initial: &[TrustAnchor]) -> AutoTrust {
        let mut trust = AutoTrust {
            zone: zone.clone(),
            keys: Vec::new(),
            initial_ds: Vec::new(),
            last_refresh: None,
            orig_ttl: 0,
            sig_expiration: None,
        };
        for anchor in initial.iter().filter(|a| a.owner == *zone) {
            match &anchor.data {
                AnchorData::Dnskey(key) => {
                    // RFC 5011 §2.1: a revoked key anchors nothing.
                    if key.flags & REVOKED != 0
                        || trust.keys.len() >= MAX_KEYS
                        || trust.keys.iter().any(|m| m.is(key))
                    {
                        continue;
                    }
                    trust
                        .keys
                        .push(ManagedKey::new(key.clone(), KeyState::Valid, 0, None));
                }
                AnchorData::Ds(ds) => {
                    if trust.initial_ds.len() < MAX_KEYS && !trust.initial_ds.contains(ds) {
                        trust.initial_ds.push(ds.clone());
                    }
                }
            }
        }
        trust
    }

    /// The anchors to validate the zone's DNSKEY set with now: Valid and
    /// Missing keys (RFC 5011 §4: a Missing key still anchors), and the
    /// initial DS records while none of them has vouched for a key yet.
    /// Empty once every key is revoked: the zone then has no anchor left.
    pub fn anchors(&self) -> Vec<TrustAnchor> {
        let keys = self
            .keys
            .iter()
            .filter(|k| k.state.is_anchor())
            .map(|k| AnchorData::Dnskey(k.key.clone()));
        let ds = self.initial_ds.iter().map(|d| AnchorData::Ds(d.clone()));
        keys.chain(ds)
            .map(|data| TrustAnchor {
                owner: self.zone.clone(),
                data,
                managed: true,
            })
            .collect()
    }

    /// Takes the zone's DNSKEY set as fetched (its signatures in `.sigs`),
    /// which the caller has found secure with [`AutoTrust::anchors`], and
    /// applies RFC 5011 §4's transitions at `now`. A revocation is taken
    /// only when the revoked key itself signs the set (§2.1), checked here
    /// within `budget`. A set of another name or type changes nothing.
    pub fn update(&mut self, dnskeys: &RrSet, now: Millis, budget: &mut Budget) -> Updated {
        if dnskeys.rtype != Rtype::DNSKEY || dnskeys.owner != self.zone {
            return Updated::Unchanged;
        }
        let before = (self.keys.clone(), self.initial_ds.clone());
        let seen: Vec<Dnskey> = dnskeys
            .typed()
            .filter_map(|r| match r {
                Rdata::Dnskey(k) => Some(k),
                _ => None,
            })
            .collect();
        let sigs = dnskeys.rrsigs();
        self.note_refresh(dnskeys, &sigs, now);
        self.adopt_initial_ds(&seen, now, budget);
        self.take_revocations(dnskeys, &seen, &sigs, now, budget);
        self.track_presence(&seen, now);
        self.expire_revoked(now);
        self.add_new_keys(&seen, now);
        if before.0 == self.keys && before.1 == self.initial_ds {
            Updated::Unchanged
        } else {
            Updated::Changed
        }
    }

    /// When to fetch the DNSKEY set again (RFC 5011 §2.3 active refresh):
    /// queryInterval = MAX(1 hr, MIN(15 days, 1/2*OrigTTL,
    /// 1/2*RRSigExpirationInterval)) after the last refresh; right away (0)
    /// when never refreshed.
    pub fn next_refresh(&self) -> Millis {
        let Some(last) = self.last_refresh else {
            return 0;
        };
        let mut interval = MAX_QUERY_INTERVAL.min(self.orig_ttl_millis() / 2);
        if let Some(expiring) = self.expiration_interval() {
            interval = interval.min(expiring / 2);
        }
        last.saturating_add(interval.max(MIN_INTERVAL))
    }

    /// When to try again after a refresh at `now` failed (RFC 5011 §2.3
    /// retryTime): MAX(1 hour, MIN(1 day, .1*OrigTTL, .1*expiration
    /// interval)) later.
    pub fn retry_at(&self, now: Millis) -> Millis {
        let mut interval = MAX_RETRY_INTERVAL.min(self.orig_ttl_millis() / 10);
        if let Some(expiring) = self.expiration_interval() {
            interval = interval.min(expiring / 10);
        }
        now.saturating_add(interval.max(MIN_INTERVAL))
    }

    pub fn zone(&self) -> &Name {
        &self.zone
    }

    pub fn keys(&self) -> &[ManagedKey] {
        &self.keys
    }

    /// When the zone's DNSKEY set was last taken by [`AutoTrust::update`].
    pub fn last_refresh(&self) -> Option<Millis> {
        self.last_refresh
    }

    fn orig_ttl_millis(&self) -> Millis {
        u64::from(self.orig_ttl).saturating_mul(SECOND)
    }

    /// The time from the last refresh to the expiration of the signatures
    /// then seen (RFC 5011 §2.3).
    fn expiration_interval(&self) -> Option<Millis> {
        let expiration = self.sig_expiration?;
        Some(expiration.saturating_sub(self.last_refresh.unwrap_or(0)))
    }

    /// Records the refresh: its time, the set's original TTL and its
    /// signatures' expiration. Of the signatures over the set by the zone
    /// and in their validity period, the lowest TTL and soonest expiration
    /// are used: a signature added by someone else can then only make the
    /// refreshes more frequent, never delay them or a new key's hold-down
    /// beyond what the zone's own signatures say.
    fn note_refresh(&mut self, set: &RrSet, sigs: &[Rrsig], now: Millis) {
        let at = sig_time(now);
        let current = || {
            sigs.iter().filter(|s| {
                s.type_covered == Rtype::DNSKEY
                    && s.signer == self.zone
                    && serial_le(s.inception, at)
                    && serial_le(at, s.expiration)
            })
        };
        self.orig_ttl = current().map(|s| s.original_ttl).min().unwrap_or(set.ttl);
        self.sig_expiration = current()
            .map(|s| s.expiration.wrapping_sub(at))
            .min()
            .map(|left| now.saturating_add(u64::from(left).saturating_mul(SECOND)));
        self.last_refresh = Some(now);
    }

    /// The initial DS anchors, once a set they vouch for is seen: its keys
    /// they name become Valid, and the DS records are done with. While they
    /// vouch for none of the set, they stay.
    fn adopt_initial_ds(&mut self, seen: &[Dnskey], now: Millis, budget: &Budget) {
        if self.initial_ds.is_empty() {
            return;
        }
        let DsVerdict::Vouched(vouched) =
            keys_vouched_for(&self.zone, &self.initial_ds, seen, budget)
        else {
            return;
        };
        for key in vouched.iter().filter_map(|i| seen.get(*i)) {
            let valid = ManagedKey::new(key.clone(), KeyState::Valid, now, None);
            match self.keys.iter().position(|m| m.is(key)) {
                Some(i) => {
                    // Valid or Missing are anchors already; a revoked key
                    // stays revoked (RFC 5011 §2.2).
                    if let Some(m) = self.keys.get_mut(i) {
                        if m.state == KeyState::AddPend {
                            *m = valid;
                        }
                    }
                }
                None if self.keys.len() < MAX_KEYS => self.keys.push(valid),
                None => {}
            }
        }
        self.initial_ds.clear();
    }

    /// RFC 5011 §2.1, §4 (event RevBit): a known key seen with the REVOKE
    /// bit, signing the set itself, is Revoked. A revoked key never known
    /// is nothing to us (not checked, so it costs no signature check).
    fn take_revocations(
        &mut self,
        set: &RrSet,
        seen: &[Dnskey],
        sigs: &[Rrsig],
        now: Millis,
        budget: &mut Budget,
    ) {
        for revoked in seen.iter().filter(|k| k.flags & REVOKED != 0) {
            let Some(index) = self
                .keys
                .iter()
                .position(|m| m.state.may_be_revoked() && m.is(revoked))
            else {
                continue;
            };
            if !self_signed(set, sigs, &self.zone, revoked, sig_time(now), budget) {
                continue;
            }
            if let Some(m) = self.keys.get_mut(index) {
                *m = ManagedKey::new(revoked.clone(), KeyState::Revoked, now, None);
            }
        }
    }

    /// RFC 5011 §4, events KeyRem, KeyPres and AddTime: an AddPend key
    /// absent is forgotten, and present past its hold-down becomes Valid; a
    /// Valid key absent is Missing (and so still an anchor: absence alone
    /// never takes the last anchor away); a Missing key present is Valid.
    fn track_presence(&mut self, seen: &[Dnskey], now: Millis) {
        self.keys.retain_mut(|m| {
            let present = m.present_in(seen);
            match (m.state, present) {
                (KeyState::AddPend, false) => return false,
                (KeyState::AddPend, true) if m.hold_down_end.is_none_or(|end| now >= end) => {
                    m.state = KeyState::Valid;
                    m.since = now;
                    m.hold_down_end = None;
                }
                (KeyState::Valid, false) => {
                    m.state = KeyState::Missing;
                    m.since = now;
                }
                (KeyState::Missing, true) => {
                    m.state = KeyState::Valid;
                    m.since = now;
                }
                _ => {}
            }
            true
        });
    }

    /// RFC 5011 §4, event RemTime: Revoked for the remove hold-down makes
    /// Removed; Removed for as long again, the key is forgotten (§4: "MAY
    /// be forgotten").
    fn expire_revoked(&mut self, now: Millis) {
        self.keys.retain_mut(|m| {
            let waited = now.saturating_sub(m.since) >= REMOVE_HOLD_DOWN;
            match m.state {
                KeyState::Revoked if waited => {
                    m.state = KeyState::Removed;
                    m.since = now;
                    true
                }
                KeyState::Removed => !waited,
                _ => true,
            }
        });
    }

    /// RFC 5011 §2.4.1, §4 event NewKey: a key-signing zone key not known,
    /// not revoked, starts its add hold-down: 30 days or the set's original
    /// TTL, whichever is longer.
    fn add_new_keys(&mut self, seen: &[Dnskey], now: Millis) {
        let hold_down = ADD_HOLD_DOWN.max(self.orig_ttl_millis());
        for key in seen {
            let candidate = key.flags & REVOKED == 0
                && key.flags & SEP != 0
                && key.flags & ZONE_KEY != 0
                && key.protocol == PROTOCOL;
            if !candidate || self.keys.iter().any(|m| m.is(key)) {
                continue;
            }
            if self.keys.len() >= MAX_KEYS {
                break;
            }
            self.keys.push(ManagedKey::new(
                key.clone(),
                KeyState::AddPend,
                now,
                Some(now.saturating_add(hold_down)),
            ));
        }
    }

    /// A compact, versioned binary form for the server's store:
    ///
    /// ```text
    /// u8 version (1) | u8 flags (1: last refresh, 2: signature expiration)
    /// | u8 zone length | zone (wire form) | [u64 last refresh]
    /// | [u64 signature expiration] | u32 original TTL
    /// | u8 count | count × (u16 length | DS rdata)
    /// | u8 count | count × (u8 state | u64 since | [u64 hold-down end,
    ///   AddPend only] | u16 length | DNSKEY rdata)
    /// ```
    /// Integers are big-endian; times Unix milliseconds.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![FORMAT_VERSION];
        let mut flags = 0u8;
        if self.last_refresh.is_some() {
            flags |= HAS_REFRESH;
        }
        if self.sig_expiration.is_some() {
            flags |= HAS_EXPIRATION;
        }
        out.push(flags);
        let zone = self.zone.as_wire();
        out.push(u8::try_from(zone.len()).unwrap_or(0));
        out.extend_from_slice(zone);
        for t in [self.last_refresh, self.sig_expiration]
            .into_iter()
            .flatten()
        {
            out.extend_from_slice(&t.to_be_bytes());
        }
        out.extend_from_slice(&self.orig_ttl.to_be_bytes());
        let ds: Vec<Vec<u8>> = self
            .initial_ds
            .iter()
            .map(|d| Rdata::Ds(d.clone()).to_wire())
            .filter(|w| u16::try_from(w.len()).is_ok())
            .take(MAX_KEYS)
            .collect();
        out.push(u8::try_from(ds.len()).unwrap_or(0));
        for wire in &ds {
            put_record(&mut out, wire);
        }
        let keys: Vec<(&ManagedKey, Vec<u8>)> = self
            .keys
            .iter()
            .map(|m| (m, Rdata::Dnskey(m.key.clone()).to_wire()))
            .filter(|(_, w)| u16::try_from(w.len()).is_ok())
            .take(MAX_KEYS)
            .collect();
        out.push(u8::try_from(keys.len()).unwrap_or(0));
        for (m, wire) in &keys {
            out.push(m.state.code());
            out.extend_from_slice(&m.since.to_be_bytes());
            if m.state == KeyState::AddPend {
                out.extend_from_slice(&m.hold_down_end.unwrap_or(m.since).to_be_bytes());
            }
            put_record(&mut out, wire);
        }
        out
    }

    /// The inverse of [`AutoTrust::encode`]; `None` for anything it would
    /// not have written (another version, bad lengths, states or records,
    /// more keys than it keeps, octets left over).
    pub fn decode(bytes: &[u8]) -> Option<AutoTrust> {
        let mut c = Cursor(bytes);
        if c.u8()? != FORMAT_VERSION {
            return None;
        }
        let flags = c.u8()?;
        if flags & !(HAS_REFRESH | HAS_EXPIRATION) != 0 {
            return None;
        }
        let zone_len = c.u8()?;
        let zone = Name::from_wire(c.bytes(usize::from(zone_len))?).ok()?;
        let last_refresh = if flags & HAS_REFRESH != 0 {
            Some(c.u64()?)
        } else {
            None
        };
        let sig_expiration = if flags & HAS_EXPIRATION != 0 {
            Some(c.u64()?)
        } else {
            None
        };
        let orig_ttl = c.u32()?;
        let ds_count = usize::from(c.u8()?);
        if ds_count > MAX_KEYS {
            return None;
        }
        let mut initial_ds = Vec::with_capacity(ds_count);
        for _ in 0..ds_count {
            let Rdata::Ds(ds) = c.rdata(Rtype::DS)? else {
                return None;
            };
            if initial_ds.contains(&ds) {
                return None;
            }
            initial_ds.push(ds);
        }
        let key_count = usize::from(c.u8()?);
        if key_count > MAX_KEYS {
            return None;
        }
        let mut keys: Vec<ManagedKey> = Vec::with_capacity(key_count);
        for _ in 0..key_count {
            let state = KeyState::from_code(c.u8()?)?;
            let since = c.u64()?;
            let hold_down_end = if state == KeyState::AddPend {
                Some(c.u64()?)
            } else {
                None
            };
            let Rdata::Dnskey(key) = c.rdata(Rtype::DNSKEY)? else {
                return None;
            };
            // Revoked and Removed keys are kept as seen revoked, the others
            // never are; and each key is there once.
            let revoked = key.flags & REVOKED != 0;
            let revoked_state = matches!(state, KeyState::Revoked | KeyState::Removed);
            if revoked != revoked_state || keys.iter().any(|m| m.is(&key)) {
                return None;
            }
            keys.push(ManagedKey::new(key, state, since, hold_down_end));
        }
        if !c.0.is_empty() {
            return None;
        }
        Some(AutoTrust {
            zone,
            keys,
            initial_ds,
            last_refresh,
            orig_ttl,
            sig_expiration,
        })
    }
}

/// The same key, whether or not either has the REVOKE bit (RFC 5011 §2.1:
/// revoking changes the flags, and so the tag, but not the key).
fn same_key(a: &Dnskey, b: &Dnskey) -> bool {
    a.flags & !REVOKED == b.flags & !REVOKED
        && a.protocol == b.protocol
        && a.algorithm == b.algorithm
        && a.public_key == b.public_key
}

fn tag_of(key: &Dnskey) -> u16 {
    key_tag(&Rdata::Dnskey(key.clone()).to_wire())
}

/// A time as RRSIGs carry it (seconds, modulo 2^32: RFC 4034 §3.1.5).
fn sig_time(now: Millis) -> SigTime {
    u32::try_from((now / SECOND) & u64::from(u32::MAX)).unwrap_or(0)
}

/// Whether `key`, revoked, signs the DNSKEY set `set` of `zone` itself
/// (RFC 5011 §2.1). [`super::verify_rrset`] will not do: it rightly never
/// takes a revoked key's signature for data, and this one signature is the
/// exception. The same checks, then: a signature by the zone, in its time,
/// of the key's tag and algorithm, within the budget.
fn self_signed(
    set: &RrSet,
    sigs: &[Rrsig],
    zone: &Name,
    key: &Dnskey,
    now: SigTime,
    budget: &mut Budget,
) -> bool {
    if key.flags & ZONE_KEY == 0 || key.protocol != PROTOCOL || !budget.can_verify(key) {
        return false;
    }
    let rdatas: Vec<Rdata> = set.typed().collect();
    if rdatas.len() != set.rdata.len() {
        return false;
    }
    let tag = tag_of(key);
    let max = budget.limits().signatures_per_rrset;
    let mut tried = 0u32;
    let candidates = sigs.iter().filter(|s| {
        s.type_covered == Rtype::DNSKEY
            && s.signer == *zone
            && s.key_tag == tag
            && s.algorithm == key.algorithm
            && usize::from(s.labels) == set.owner.label_count()
            && serial_le(s.inception, now)
            && serial_le(now, s.expiration)
    });
    for sig in candidates {
        if tried >= max || budget.take_verification().is_err() {
            return false;
        }
        tried = tried.saturating_add(1);
        let signed = CanonicalRrset::new(
            &set.owner,
            set.class,
            set.rtype,
            sig.original_ttl,
            rdatas.iter(),
        );
        if verify_rrsig(&signed, sig, key).is_ok() {
            return true;
        }
    }
    false
}

/// A record's data with its length before it.
fn put_record(out: &mut Vec<u8>, wire: &[u8]) {
    out.extend_from_slice(&u16::try_from(wire.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(wire);
}

/// Reads [`AutoTrust::encode`]'s output front to back.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(taken)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(u8::from_be_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_be_bytes)
    }

    /// A length-prefixed record of type `rtype`, which must be written
    /// back the same (so that nothing but what `encode` wrote is taken).
    fn rdata(&mut self, rtype: Rtype) -> Option<Rdata> {
        let len = u16::from_be_bytes(self.array()?);
        let wire = self.bytes(usize::from(len))?;
        let rdata = Rdata::read(rtype, &mut Reader::new(wire), wire.len()).ok()?;
        (rdata.to_wire() == wire).then_some(rdata)
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]

    use super::*;
    use crate::validate::{trust_by_anchors, WorkLimits, ZoneKeys};
    use bulwark_dnssec::{
        Algorithm, DigestType, KeyRole, KeyTiming, RrsetSigner, SignatureValidity, SigningKey,
        ZoneKey,
    };
    use bulwark_proto::Class;
    use proptest::prelude::*;

    const T0: Millis = 1_800_000_000_000;
    const TTL: u32 = 3600;

    fn zone() -> Name {
        "example.".parse().unwrap()
    }

    fn budget() -> Budget {
        Budget::new(WorkLimits::default())
    }

    fn key(role: KeyRole) -> ZoneKey {
        ZoneKey::new(
            role,
            SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
            KeyTiming::starting_at(0),
        )
    }

    fn ksk() -> ZoneKey {
        key(KeyRole::Ksk)
    }

    /// `k` with the REVOKE bit set: the same private key, a new tag.
    fn revoked(k: &ZoneKey) -> ZoneKey {
        let fields = k.signing_key().private_fields().unwrap();
        let signing = SigningKey::from_private_fields(Algorithm::Ed25519, |name| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_slice())
        })
        .unwrap();
        ZoneKey::with_flags(
            k.role,
            k.dnskey().flags | REVOKED,
            signing,
            KeyTiming::starting_at(0),
        )
    }

    /// The DNSKEY set of `example.` with `keys`, signed at `now` by each of
    /// `signers` with the set's TTL `ttl` and signatures expiring
    /// `valid_days` days later.
    fn key_set_with(
        keys: &[&ZoneKey],
        signers: &[&ZoneKey],
        now: Millis,
        ttl: u32,
        valid_days: u32,
    ) -> RrSet {
        let mut set = RrSet::new(zone(), Rtype::DNSKEY, ttl);
        for k in keys {
            set.push(Rdata::Dnskey(k.dnskey().clone()).to_wire(), ttl);
        }
        let rdatas: Vec<Rdata> = set.typed().collect();
        let canonical = CanonicalRrset::new(&zone(), Class::IN, Rtype::DNSKEY, ttl, rdatas.iter());
        let at = sig_time(now);
        for signer in signers {
            let mut s = RrsetSigner::new(
                &zone(),
                SignatureValidity {
                    inception: at - 3600,
                    expiration: at + valid_days * 86_400,
                },
            );
            let f = s.sign(&canonical, signer).unwrap();
            let sig = Rrsig {
                type_covered: Rtype::DNSKEY,
                algorithm: f.algorithm,
                labels: f.labels,
                original_ttl: ttl,
                expiration: f.expiration,
                inception: f.inception,
                key_tag: f.key_tag,
                signer: zone(),
                signature: f.signature,
            };
            set.push_sig(Rdata::Rrsig(sig).to_wire());
        }
        set
    }

    fn key_set(keys: &[&ZoneKey], signers: &[&ZoneKey], now: Millis) -> RrSet {
        key_set_with(keys, signers, now, TTL, 14)
    }

    fn anchor(k: &ZoneKey) -> TrustAnchor {
        TrustAnchor {
            owner: zone(),
            data: AnchorData::Dnskey(k.dnskey().clone()),
            managed: true,
        }
    }

    fn state_of(t: &AutoTrust, k: &ZoneKey) -> Option<KeyState> {
        t.keys()
            .iter()
            .find(|m| same_key(&m.key, k.dnskey()))
            .map(|m| m.state)
    }

    fn anchor_keys(t: &AutoTrust) -> Vec<Dnskey> {
        t.anchors()
            .into_iter()
            .filter_map(|a| match a.data {
                AnchorData::Dnskey(k) => Some(k),
                AnchorData::Ds(_) => None,
            })
            .collect()
    }

    /// What the caller does first: the set must be secure with the anchors.
    fn secure(t: &AutoTrust, set: &RrSet, now: Millis) -> bool {
        matches!(
            trust_by_anchors(
                t.zone(),
                set,
                &set.rrsigs(),
                &t.anchors(),
                sig_time(now),
                &mut budget()
            ),
            Ok(ZoneKeys::Secure { .. })
        )
    }

    fn update(t: &mut AutoTrust, set: &RrSet, now: Millis) -> Updated {
        assert!(
            secure(t, set, now),
            "the set is not secure with the anchors"
        );
        t.update(set, now, &mut budget())
    }

    #[test]
    fn a_ksk_roll_from_start_to_finish() {
        let (old, zsk) = (ksk(), key(KeyRole::Zsk));
        let mut t = AutoTrust::new(&zone(), &[anchor(&old)]);
        assert_eq!(state_of(&t, &old), Some(KeyState::Valid));

        // The usual set: nothing new (the ZSK is no SEP key).
        let set = key_set(&[&old, &zsk], &[&old], T0);
        assert_eq!(update(&mut t, &set, T0), Updated::Unchanged);
        assert_eq!(t.keys().len(), 1);

        // A new KSK is published: AddPend, not an anchor.
        let new = ksk();
        let t1 = T0 + DAY;
        let set = key_set(&[&old, &new, &zsk], &[&old], t1);
        assert_eq!(update(&mut t, &set, t1), Updated::Changed);
        assert_eq!(state_of(&t, &new), Some(KeyState::AddPend));
        let pending = t.keys().iter().find(|m| m.key == *new.dnskey()).unwrap();
        assert_eq!(pending.hold_down_end, Some(t1 + ADD_HOLD_DOWN));
        assert_eq!(pending.tag, new.key_tag());
        assert_eq!(anchor_keys(&t), [old.dnskey().clone()]);

        // A day short of the hold-down: still pending.
        let t2 = t1 + ADD_HOLD_DOWN - DAY;
        let set = key_set(&[&old, &new, &zsk], &[&old], t2);
        assert_eq!(update(&mut t, &set, t2), Updated::Unchanged);
        assert_eq!(state_of(&t, &new), Some(KeyState::AddPend));

        // Past it: Valid, an anchor beside the old key.
        let t3 = t1 + ADD_HOLD_DOWN;
        let set = key_set(&[&old, &new, &zsk], &[&old], t3);
        assert_eq!(update(&mut t, &set, t3), Updated::Changed);
        assert_eq!(state_of(&t, &new), Some(KeyState::Valid));
        assert_eq!(anchor_keys(&t).len(), 2);

        // The old key is revoked, signing its revocation: Revoked, no
        // longer an anchor; the set stays secure by the new key.
        let old_revoked = revoked(&old);
        assert_ne!(old_revoked.key_tag(), old.key_tag());
        let t4 = t3 + 10 * DAY;
        let set = key_set(&[&old_revoked, &new, &zsk], &[&old_revoked, &new], t4);
        assert_eq!(update(&mut t, &set, t4), Updated::Changed);
        assert_eq!(state_of(&t, &old), Some(KeyState::Revoked));
        let gone = t
            .keys()
            .iter()
            .find(|m| same_key(&m.key, old.dnskey()))
            .unwrap();
        assert_eq!(gone.tag, old_revoked.key_tag());
        assert_eq!(anchor_keys(&t), [new.dnskey().clone()]);
        assert!(secure(&t, &set, t4));
        // Published again without the bit, it does not come back.
        let set = key_set(&[&old, &new, &zsk], &[&new], t4 + HOUR);
        update(&mut t, &set, t4 + HOUR);
        assert_eq!(state_of(&t, &old), Some(KeyState::Revoked));

        // The revoked key is withdrawn; after the remove hold-down: Removed.
        let t5 = t4 + REMOVE_HOLD_DOWN - HOUR;
        let set = key_set(&[&new, &zsk], &[&new], t5);
        assert_eq!(update(&mut t, &set, t5), Updated::Unchanged);
        assert_eq!(state_of(&t, &old), Some(KeyState::Revoked));
        let t6 = t4 + REMOVE_HOLD_DOWN;
        let set = key_set(&[&new, &zsk], &[&new], t6);
        assert_eq!(update(&mut t, &set, t6), Updated::Changed);
        assert_eq!(state_of(&t, &old), Some(KeyState::Removed));

        // And after another: forgotten.
        let t7 = t6 + REMOVE_HOLD_DOWN;
        let set = key_set(&[&new, &zsk], &[&new], t7);
        assert_eq!(update(&mut t, &set, t7), Updated::Changed);
        assert_eq!(state_of(&t, &old), None);
        assert_eq!(t.keys().len(), 1);
        assert_eq!(anchor_keys(&t), [new.dnskey().clone()]);
    }

    #[test]
    fn a_key_that_leaves_during_its_hold_down_is_forgotten_and_starts_over() {
        let (old, new) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&old)]);
        update(&mut t, &key_set(&[&old, &new], &[&old], T0), T0);
        assert_eq!(state_of(&t, &new), Some(KeyState::AddPend));

        let t1 = T0 + 10 * DAY;
        assert_eq!(
            update(&mut t, &key_set(&[&old], &[&old], t1), t1),
            Updated::Changed
        );
        assert_eq!(state_of(&t, &new), None);

        // Back again: a new hold-down from now, not from the first sighting.
        let t2 = T0 + 20 * DAY;
        update(&mut t, &key_set(&[&old, &new], &[&old], t2), t2);
        let t3 = T0 + ADD_HOLD_DOWN + DAY;
        update(&mut t, &key_set(&[&old, &new], &[&old], t3), t3);
        assert_eq!(state_of(&t, &new), Some(KeyState::AddPend));
        let t4 = t2 + ADD_HOLD_DOWN;
        update(&mut t, &key_set(&[&old, &new], &[&old], t4), t4);
        assert_eq!(state_of(&t, &new), Some(KeyState::Valid));
    }

    #[test]
    fn the_add_hold_down_is_the_ttl_when_longer_than_30_days() {
        let (old, new) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&old)]);
        let ttl = 40 * 86_400;
        let set = key_set_with(&[&old, &new], &[&old], T0, ttl, 60);
        update(&mut t, &set, T0);
        let pending = t.keys().iter().find(|m| m.key == *new.dnskey()).unwrap();
        assert_eq!(pending.hold_down_end, Some(T0 + 40 * DAY));
    }

    #[test]
    fn a_valid_key_missing_is_missing_still_anchors_and_comes_back() {
        let (a, b) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&a), anchor(&b)]);
        let set = key_set(&[&b], &[&b], T0);
        assert_eq!(update(&mut t, &set, T0), Updated::Changed);
        assert_eq!(state_of(&t, &a), Some(KeyState::Missing));
        assert_eq!(anchor_keys(&t).len(), 2);

        // Absence alone never removes a key, however long.
        let t1 = T0 + 400 * DAY;
        update(&mut t, &key_set(&[&b], &[&b], t1), t1);
        assert_eq!(state_of(&t, &a), Some(KeyState::Missing));

        let t2 = t1 + DAY;
        let set = key_set(&[&a, &b], &[&a], t2);
        assert_eq!(update(&mut t, &set, t2), Updated::Changed);
        assert_eq!(state_of(&t, &a), Some(KeyState::Valid));
    }

    #[test]
    fn the_last_valid_key_absent_is_only_missing() {
        let (a, b) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        // A set without the anchor (secure by other means as far as this
        // machine knows: the caller's business).
        t.update(&key_set(&[&b], &[&b], T0), T0, &mut budget());
        assert_eq!(state_of(&t, &a), Some(KeyState::Missing));
        assert_eq!(anchor_keys(&t), [a.dnskey().clone()]);
    }

    #[test]
    fn a_revocation_the_key_does_not_sign_is_ignored() {
        let (a, b) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&a), anchor(&b)]);
        // The revoked form of `a`, signed by `b` only.
        let set = key_set(&[&revoked(&a), &b], &[&b], T0);
        update(&mut t, &set, T0);
        assert_ne!(state_of(&t, &a), Some(KeyState::Revoked));
        assert!(anchor_keys(&t).contains(a.dnskey()));
        // A signature of the revoked key's tag over another set does not
        // count either.
        let a_revoked = revoked(&a);
        let other = key_set(&[&a_revoked], &[&a_revoked], T0);
        let mut forged = key_set(&[&a_revoked, &b], &[&b], T0);
        forged.sigs.extend(other.sigs);
        t.update(&forged, T0, &mut budget());
        assert_ne!(state_of(&t, &a), Some(KeyState::Revoked));
    }

    #[test]
    fn a_revoked_key_never_known_is_not_added() {
        let (a, stranger) = (ksk(), ksk());
        let stranger_revoked = revoked(&stranger);
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        let set = key_set(&[&a, &stranger_revoked], &[&a, &stranger_revoked], T0);
        assert_eq!(update(&mut t, &set, T0), Updated::Unchanged);
        assert_eq!(t.keys().len(), 1);
    }

    #[test]
    fn a_pending_key_can_be_revoked() {
        let (a, b) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        update(&mut t, &key_set(&[&a, &b], &[&a], T0), T0);
        let b_revoked = revoked(&b);
        let t1 = T0 + DAY;
        update(
            &mut t,
            &key_set(&[&a, &b_revoked], &[&a, &b_revoked], t1),
            t1,
        );
        assert_eq!(state_of(&t, &b), Some(KeyState::Revoked));
    }

    #[test]
    fn initial_ds_anchors_until_a_key_set_they_vouch_for() {
        let (k, standby, zsk) = (ksk(), ksk(), key(KeyRole::Zsk));
        let ds = TrustAnchor {
            owner: zone(),
            data: AnchorData::Ds(k.ds(&zone(), DigestType::Sha256)),
            managed: true,
        };
        let mut t = AutoTrust::new(&zone(), std::slice::from_ref(&ds));
        assert!(t.keys().is_empty());
        assert_eq!(t.anchors(), [ds]);

        let set = key_set(&[&k, &standby, &zsk], &[&k], T0);
        assert_eq!(update(&mut t, &set, T0), Updated::Changed);
        assert_eq!(state_of(&t, &k), Some(KeyState::Valid));
        assert_eq!(state_of(&t, &standby), Some(KeyState::AddPend));
        assert_eq!(state_of(&t, &zsk), None);
        assert_eq!(anchor_keys(&t), [k.dnskey().clone()]);
        assert_eq!(t.anchors().len(), 1);
    }

    #[test]
    fn anchors_of_other_zones_and_revoked_keys_are_not_taken() {
        let (a, b) = (ksk(), ksk());
        let elsewhere = TrustAnchor {
            owner: "other.".parse().unwrap(),
            ..anchor(&b)
        };
        let t = AutoTrust::new(
            &zone(),
            &[anchor(&a), anchor(&a), elsewhere, anchor(&revoked(&b))],
        );
        assert_eq!(anchor_keys(&t), [a.dnskey().clone()]);
    }

    #[test]
    fn sets_of_another_name_or_type_change_nothing() {
        let (a, b) = (ksk(), ksk());
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        let before = t.clone();
        let mut set = key_set(&[&a, &b], &[&a], T0);
        set.owner = "other.".parse().unwrap();
        assert_eq!(t.update(&set, T0, &mut budget()), Updated::Unchanged);
        let mut set = key_set(&[&a, &b], &[&a], T0);
        set.rtype = Rtype::A;
        assert_eq!(t.update(&set, T0, &mut budget()), Updated::Unchanged);
        assert_eq!(t, before);
    }

    #[test]
    fn no_more_than_the_bound_of_keys_is_kept() {
        let a = ksk();
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        let many: Vec<ZoneKey> = (0..MAX_KEYS + 8).map(|_| ksk()).collect();
        let mut keys: Vec<&ZoneKey> = vec![&a];
        keys.extend(many.iter());
        let set = key_set(&keys, &[&a], T0);
        update(&mut t, &set, T0);
        assert_eq!(t.keys().len(), MAX_KEYS);
        assert_eq!(state_of(&t, &a), Some(KeyState::Valid));
        // The state stays encodable and is read back whole.
        assert_eq!(AutoTrust::decode(&t.encode()), Some(t));
    }

    #[test]
    fn refresh_times_follow_rfc_5011_section_2_3() {
        let a = ksk();
        let mut t = AutoTrust::new(&zone(), &[anchor(&a)]);
        assert_eq!(t.next_refresh(), 0);
        assert_eq!(t.retry_at(T0), T0 + HOUR);

        // TTL 1 hour: half is under the floor of an hour.
        update(&mut t, &key_set_with(&[&a], &[&a], T0, 3600, 14), T0);
        assert_eq!(t.next_refresh(), T0 + HOUR);
        assert_eq!(t.retry_at(T0), T0 + HOUR);

        // TTL 2 days, signatures for 14: half the TTL; a tenth of it.
        update(&mut t, &key_set_with(&[&a], &[&a], T0, 172_800, 14), T0);
        assert_eq!(t.next_refresh(), T0 + DAY);
        assert_eq!(t.retry_at(T0 + 5), T0 + 5 + 172_800_000 / 10);

        // TTL 40 days, signatures for 20: half the expiration interval.
        update(&mut t, &key_set_with(&[&a], &[&a], T0, 40 * 86_400, 20), T0);
        assert_eq!(t.next_refresh(), T0 + 10 * DAY);
        assert_eq!(t.retry_at(T0), T0 + DAY);

        // TTL 40 days, signatures for 60: at most 15 days.
        update(&mut t, &key_set_with(&[&a], &[&a], T0, 40 * 86_400, 60), T0);
        assert_eq!(t.next_refresh(), T0 + 15 * DAY);
        assert_eq!(t.last_refresh(), Some(T0));
    }

    /// A state with every kind of thing `encode` writes.
    fn rich_state() -> AutoTrust {
        let (old, new, pending, extra) = (ksk(), ksk(), ksk(), ksk());
        let ds = TrustAnchor {
            owner: zone(),
            data: AnchorData::Ds(extra.ds(&zone(), DigestType::Sha256)),
            managed: true,
        };
        let mut t = AutoTrust::new(&zone(), &[anchor(&old), anchor(&new), ds]);
        let r = revoked(&old);
        t.update(
            &key_set(&[&r, &pending], &[&r, &pending], T0),
            T0,
            &mut budget(),
        );
        assert_eq!(state_of(&t, &old), Some(KeyState::Revoked));
        assert_eq!(state_of(&t, &new), Some(KeyState::Missing));
        assert_eq!(state_of(&t, &pending), Some(KeyState::AddPend));
        assert!(!t.initial_ds.is_empty());
        t
    }

    #[test]
    fn the_stored_form_reads_back_the_same() {
        let t = rich_state();
        let bytes = t.encode();
        assert_eq!(bytes[0], 1);
        let back = AutoTrust::decode(&bytes).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.next_refresh(), t.next_refresh());
        let fresh = AutoTrust::new(&Name::root(), &[]);
        assert_eq!(AutoTrust::decode(&fresh.encode()), Some(fresh));
    }

    #[test]
    fn anything_else_does_not_decode() {
        let bytes = rich_state().encode();
        for len in 0..bytes.len() {
            assert_eq!(AutoTrust::decode(&bytes[..len]), None, "cut at {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(AutoTrust::decode(&longer), None);
        let mut other_version = bytes.clone();
        other_version[0] = 2;
        assert_eq!(AutoTrust::decode(&other_version), None);
        let mut odd_flags = bytes;
        odd_flags[1] |= 0x80;
        assert_eq!(AutoTrust::decode(&odd_flags), None);
        assert_eq!(AutoTrust::decode(b"garbage"), None);
    }

    proptest! {
        #[test]
        fn decoding_any_octets_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = AutoTrust::decode(&bytes);
            let mut v = vec![FORMAT_VERSION];
            v.extend_from_slice(&bytes);
            if let Some(t) = AutoTrust::decode(&v) {
                prop_assert_eq!(t.encode(), v);
            }
        }

        #[test]
        fn a_damaged_stored_form_never_panics(at in 0usize..4096, value in any::<u8>()) {
            let mut bytes = stored().to_vec();
            let i = at % bytes.len();
            bytes[i] = value;
            if let Some(t) = AutoTrust::decode(&bytes) {
                prop_assert_eq!(t.encode(), bytes);
            }
        }
    }

    /// One rich state's stored form, made once for the property tests.
    fn stored() -> &'static [u8] {
        static STORED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        STORED.get_or_init(|| rich_state().encode())
    }
}
