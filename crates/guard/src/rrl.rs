//! Response rate limiting with the semantics of Knot's and BIND's RRL.
//!
//! Shared by all workers (Sync, lock-free per bucket), so spoofed traffic spread
//! over threads by SO_REUSEPORT is still counted once per client network.
//!
//! Each key (client network × response class × imputed name) hashes to one
//! bucket of a fixed table of `AtomicU64`. A bucket packs, in one word updated
//! with compare-and-swap, how far the key's token balance lies below its
//! ceiling, the second it was last touched and the count of limited responses
//! since the last slip. Two keys that hash to the same bucket share its budget,
//! as they do in Knot's table: the table is sized so that this is rare, and it
//! can only make limiting stricter for the keys involved, never let a flood
//! through.
//!
//! The budget follows BIND: a key earns `rate` tokens a second, holds at most
//! `rate` (one second of burst), and every response it is sent or refused costs
//! one token, down to a debt of `window × rate`. A response passes while the
//! balance is positive. A client that floods therefore stays limited after it
//! stops: its balance climbs back to zero over `window` seconds, and it is
//! answered again from the second after that. Time is counted in whole seconds.

use core::hash::Hasher;
use core::sync::atomic::{AtomicU64, Ordering};
use std::net::IpAddr;

use siphasher::sip::SipHasher24;

use crate::acl::Network;

/// What kind of response is being limited: each class of each client network has
/// its own budget, so a flood of one kind does not starve another.
///
/// The caller picks the imputed name passed to [`Rrl::check`] with the class, as
/// listed on each variant. The choice matters: NXDOMAIN and wildcard answers
/// for random query names must impute a fixed name (the zone apex, the
/// wildcard's owner), or an attacker varying the name would get a fresh budget
/// for every query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseClass {
    /// An answer (the imputed name is the query name).
    Positive,
    /// NXDOMAIN (imputed name: the zone apex, so random names share one budget).
    Nxdomain,
    /// NOERROR with no answer (imputed name: the query name).
    Nodata,
    /// A referral (imputed name: the delegation point).
    Referral,
    /// A wildcard expansion (imputed name: the wildcard's owner).
    Wildcard,
    /// FORMERR, SERVFAIL, REFUSED, NOTIMP... (imputed name: none).
    Error,
}

impl ResponseClass {
    /// A distinct octet per class, fed to the key hash.
    fn code(self) -> u8 {
        match self {
            ResponseClass::Positive => 1,
            ResponseClass::Nxdomain => 2,
            ResponseClass::Nodata => 3,
            ResponseClass::Referral => 4,
            ResponseClass::Wildcard => 5,
            ResponseClass::Error => 6,
        }
    }

    /// Whether `errors_per_second` applies (BIND's `errors-per-second` and
    /// `nxdomains-per-second`, merged).
    fn is_error(self) -> bool {
        matches!(self, ResponseClass::Nxdomain | ResponseClass::Error)
    }
}

/// The largest `slip` honoured; a larger one counts as this (BIND allows up to
/// 10 and Knot 100). The count of limited responses is kept in 8 bits.
pub const MAX_SLIP: u32 = 255;
/// The largest table honoured (128 MiB of buckets).
pub const MAX_TABLE_SIZE: usize = 1 << 24;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RrlConfig {
    /// Identical responses per second per client network and class; 0 disables RRL.
    pub responses_per_second: u32,
    /// Error responses (and NXDOMAIN) per second; `None` = same as `responses_per_second`.
    /// `Some(0)` leaves errors and NXDOMAIN unlimited.
    pub errors_per_second: Option<u32>,
    /// Seconds of history a bucket accumulates (BIND's `window`, default 15):
    /// the deepest debt is `window × rate`. 0 allows no debt (Knot's behaviour).
    pub window: u32,
    /// Every Nth limited response is sent truncated instead of dropped (0 = never, 1 = always).
    /// Values above [`MAX_SLIP`] count as [`MAX_SLIP`].
    pub slip: u32,
    /// Client networks are grouped by this many leading bits (above 32: 32).
    pub ipv4_prefix: u8,
    /// Client networks are grouped by this many leading bits (above 128: 128).
    pub ipv6_prefix: u8,
    /// Clients never limited.
    pub exempt: Vec<Network>,
    /// Buckets in the shared table (rounded up to a power of two, at most [`MAX_TABLE_SIZE`]).
    pub table_size: usize,
    /// Keys the hash that spreads keys over buckets. A server should pass a
    /// random value at start so that an attacker cannot aim keys at one bucket
    /// on purpose; the default is fixed for reproducible tests.
    pub seed: u64,
}

/// An arbitrary fixed hash key for configurations that do not set one.
const DEFAULT_SEED: u64 = 0x6275_6c77_6172_6b21;

impl Default for RrlConfig {
    fn default() -> Self {
        RrlConfig {
            responses_per_second: 0,
            errors_per_second: None,
            window: 15,
            slip: 2,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            exempt: Vec::new(),
            table_size: 65_536,
            seed: DEFAULT_SEED,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RrlVerdict {
    Pass,
    Drop,
    /// Send a truncated (TC, empty) response instead, so a real client retries over TCP.
    Slip,
}

/// Counters of what was limited. `passed` includes responses to exempt
/// clients and of unlimited classes; nothing is counted while RRL is disabled.
/// `passed + dropped + slipped` is the number of checks made while enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RrlStats {
    pub passed: u64,
    pub dropped: u64,
    pub slipped: u64,
}

/// Counters are spread over several cache lines so that worker threads
/// answering different clients do not contend on one.
const STAT_SHARDS: usize = 16;

#[derive(Debug, Default)]
#[repr(align(64))]
struct StatShard {
    passed: AtomicU64,
    dropped: AtomicU64,
    slipped: AtomicU64,
}

/// One bucket's state, packed into a `u64` as
/// `deficit (24 bits) | time (32 bits) | slips (8 bits)`, low to high.
/// The all-zero word is a full, fresh bucket, so the table starts zeroed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    /// Tokens below the ceiling of `rate`: the balance is `rate - deficit`.
    /// At most [`MAX_DEFICIT`].
    deficit: u32,
    /// The second of the last credit, modulo 2^32.
    time: u32,
    /// Limited responses since the last slip.
    slips: u8,
}

/// The deficit is stored in 24 bits: rates and debts beyond 16,777,215
/// responses are clamped to it (far above what one network could be sent).
const MAX_DEFICIT: u32 = 0x00ff_ffff;
/// Differences of stored times at or above this are read as negative (serial
/// arithmetic, RFC 1982): `now` lies behind the bucket.
const TIME_HALF: u32 = 1 << 31;

impl Bucket {
    fn unpack(word: u64) -> Bucket {
        let [d0, d1, d2, t0, t1, t2, t3, s] = word.to_le_bytes();
        Bucket {
            deficit: u32::from_le_bytes([d0, d1, d2, 0]),
            time: u32::from_le_bytes([t0, t1, t2, t3]),
            slips: s,
        }
    }

    fn pack(self) -> u64 {
        let [d0, d1, d2, _] = self.deficit.min(MAX_DEFICIT).to_le_bytes();
        let [t0, t1, t2, t3] = self.time.to_le_bytes();
        u64::from_le_bytes([d0, d1, d2, t0, t1, t2, t3, self.slips])
    }
}

/// `now` in seconds, reduced to the stored width.
fn time32(now: u64) -> u32 {
    let [n0, n1, n2, n3, ..] = now.to_le_bytes();
    u32::from_le_bytes([n0, n1, n2, n3])
}

/// Per-class limits resolved once from the configuration.
#[derive(Debug, Clone, Copy)]
struct Limit {
    /// Tokens earned per second and the ceiling of the balance.
    rate: u32,
    /// `rate × (window + 1)`: the deficit at the deepest allowed debt.
    max_deficit: u32,
}

impl Limit {
    fn new(rate: u32, window: u32) -> Limit {
        let rate = rate.min(MAX_DEFICIT);
        let max = u64::from(rate).saturating_mul(u64::from(window).saturating_add(1));
        Limit {
            rate,
            max_deficit: u32::try_from(max.min(u64::from(MAX_DEFICIT))).unwrap_or(MAX_DEFICIT),
        }
    }
}

pub struct Rrl {
    config: RrlConfig,
    responses: Limit,
    errors: Limit,
    slip: u8,
    table: Box<[AtomicU64]>,
    /// `table.len() - 1`; the length is a power of two.
    index_mask: u64,
    stats: [StatShard; STAT_SHARDS],
}

impl core::fmt::Debug for Rrl {
    /// The table is not printed: it holds up to millions of buckets.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Rrl")
            .field("config", &self.config)
            .field("buckets", &self.table.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Rrl {
    pub fn new(config: RrlConfig) -> Rrl {
        let size = config
            .table_size
            .clamp(1, MAX_TABLE_SIZE)
            .checked_next_power_of_two()
            .unwrap_or(MAX_TABLE_SIZE);
        // Disabled RRL keeps no table.
        let size = if config.responses_per_second == 0 {
            1
        } else {
            size
        };
        let table: Box<[AtomicU64]> = (0..size).map(|_| AtomicU64::new(0)).collect();
        let index_mask = u64::try_from(size.saturating_sub(1)).unwrap_or(0);
        let responses = Limit::new(config.responses_per_second, config.window);
        let errors = Limit::new(
            config
                .errors_per_second
                .unwrap_or(config.responses_per_second),
            config.window,
        );
        let slip = u8::try_from(config.slip.min(MAX_SLIP)).unwrap_or(u8::MAX);
        Rrl {
            config,
            responses,
            errors,
            slip,
            table,
            index_mask,
            stats: Default::default(),
        }
    }

    pub fn config(&self) -> &RrlConfig {
        &self.config
    }

    /// Whether responses are limited at all (`responses_per_second > 0`).
    pub fn is_enabled(&self) -> bool {
        self.config.responses_per_second != 0
    }

    /// Accounts one UDP response and says what to do with it. `name` is the imputed
    /// name in lowercase wire form (empty for errors); `now` is in seconds.
    ///
    /// ASCII letters in `name` are folded to lowercase anyway, so a caller that
    /// passes the query's case still maps one name to one budget. `now` may
    /// differ slightly between threads: a bucket never moves back in time, and
    /// a stale `now` earns no tokens.
    pub fn check(&self, client: IpAddr, class: ResponseClass, name: &[u8], now: u64) -> RrlVerdict {
        let (shard, verdict) = self.judge(client, class, name, now);
        if let Some(shard) = shard {
            self.count(shard, verdict);
        }
        verdict
    }

    /// [`Rrl::check`], counting the verdict in `tally` instead of the shared
    /// counters; [`Rrl::add_tally`] adds it to them later. A worker tallies
    /// a batch and adds it once: an atomic add per response waited, under
    /// load, for every store before it to reach the cache.
    pub fn check_tallied(
        &self,
        client: IpAddr,
        class: ResponseClass,
        name: &[u8],
        now: u64,
        tally: &mut RrlStats,
    ) -> RrlVerdict {
        let (shard, verdict) = self.judge(client, class, name, now);
        if shard.is_some() {
            let counter = match verdict {
                RrlVerdict::Pass => &mut tally.passed,
                RrlVerdict::Drop => &mut tally.dropped,
                RrlVerdict::Slip => &mut tally.slipped,
            };
            *counter = counter.wrapping_add(1);
        }
        verdict
    }

    /// Adds a tally from [`Rrl::check_tallied`] to the counters and zeroes it.
    pub fn add_tally(&self, tally: &mut RrlStats) {
        let taken = core::mem::take(tally);
        let Some(s) = self.stats.first() else {
            return;
        };
        for (counter, n) in [
            (&s.passed, taken.passed),
            (&s.dropped, taken.dropped),
            (&s.slipped, taken.slipped),
        ] {
            if n != 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// The verdict on one response, and the stats shard to count it in
    /// (`None` when limiting is off and nothing is counted).
    fn judge(
        &self,
        client: IpAddr,
        class: ResponseClass,
        name: &[u8],
        now: u64,
    ) -> (Option<usize>, RrlVerdict) {
        if !self.is_enabled() {
            return (None, RrlVerdict::Pass);
        }
        if self.config.exempt.iter().any(|n| n.contains(client)) {
            return (Some(self.shard_of_client(client)), RrlVerdict::Pass);
        }
        let limit = if class.is_error() {
            self.errors
        } else {
            self.responses
        };
        if limit.rate == 0 {
            // `errors_per_second = 0`: this class is not limited.
            return (Some(self.shard_of_client(client)), RrlVerdict::Pass);
        }
        let hash = self.key_hash(client, class, name);
        let verdict = match self.bucket(hash) {
            Some(bucket) => self.account(bucket, limit, time32(now)),
            // Cannot happen (the mask keeps the index in the table); fail open.
            None => RrlVerdict::Pass,
        };
        (Some(shard_of_hash(hash)), verdict)
    }

    pub fn stats(&self) -> RrlStats {
        self.stats
            .iter()
            .fold(RrlStats::default(), |acc, s| RrlStats {
                passed: acc.passed.wrapping_add(s.passed.load(Ordering::Relaxed)),
                dropped: acc.dropped.wrapping_add(s.dropped.load(Ordering::Relaxed)),
                slipped: acc.slipped.wrapping_add(s.slipped.load(Ordering::Relaxed)),
            })
    }

    /// Credits the bucket for the time elapsed, debits one response, and
    /// decides, in one compare-and-swap so that concurrent workers lose no update.
    fn account(&self, bucket: &AtomicU64, limit: Limit, now: u32) -> RrlVerdict {
        let mut word = bucket.load(Ordering::Relaxed);
        loop {
            let (next, verdict) = self.step(Bucket::unpack(word), limit, now);
            match bucket.compare_exchange_weak(
                word,
                next.pack(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return verdict,
                Err(current) => word = current,
            }
        }
    }

    /// The pure transition of one bucket for one response at `now`.
    fn step(&self, mut b: Bucket, limit: Limit, now: u32) -> (Bucket, RrlVerdict) {
        if b.deficit == 0 {
            // Full, like a fresh bucket: its time carries no information, and
            // taking `now` keeps an untouched (all-zero) bucket from looking
            // like it lies in the future.
            b.time = now;
            b.slips = 0;
        } else {
            let elapsed = now.wrapping_sub(b.time);
            // A difference in the upper half of the circle means `now` lies
            // behind the bucket (another thread read the clock first): earn
            // nothing and keep the later time.
            if elapsed != 0 && elapsed < TIME_HALF {
                let credit = u64::from(elapsed).saturating_mul(u64::from(limit.rate));
                let credit = u32::try_from(credit).unwrap_or(u32::MAX);
                b.deficit = b.deficit.saturating_sub(credit);
                b.time = now;
                if b.deficit == 0 {
                    b.slips = 0;
                }
            }
        }
        let passes = b.deficit < limit.rate;
        // BIND: every response costs a token, limited or not, down to the debt floor.
        b.deficit = b.deficit.saturating_add(1).min(limit.max_deficit);
        if passes {
            return (b, RrlVerdict::Pass);
        }
        if self.slip == 0 {
            return (b, RrlVerdict::Drop);
        }
        let slips = b.slips.saturating_add(1);
        if slips >= self.slip {
            b.slips = 0;
            (b, RrlVerdict::Slip)
        } else {
            b.slips = slips;
            (b, RrlVerdict::Drop)
        }
    }

    fn bucket(&self, hash: u64) -> Option<&AtomicU64> {
        let index = usize::try_from(hash & self.index_mask).ok()?;
        self.table.get(index)
    }

    /// SipHash of client network | class | lowercased imputed name.
    fn key_hash(&self, client: IpAddr, class: ResponseClass, name: &[u8]) -> u64 {
        let client = client.to_canonical();
        let prefix = match client {
            IpAddr::V4(_) => self.config.ipv4_prefix,
            IpAddr::V6(_) => self.config.ipv6_prefix,
        };
        let net = Network::enclosing(client, prefix);
        let mut h = SipHasher24::new_with_keys(self.config.seed, !self.config.seed);
        match net.addr {
            IpAddr::V4(a) => {
                h.write(&[4]);
                h.write(&a.octets());
            }
            IpAddr::V6(a) => {
                h.write(&[6]);
                h.write(&a.octets());
            }
        }
        h.write(&[class.code()]);
        // Fold case in stack-sized pieces. Length octets (at most 63) are below
        // the ASCII letters, so folding every octet of the wire form is safe.
        let mut piece = [0u8; 64];
        for chunk in name.chunks(piece.len()) {
            for (dst, src) in piece.iter_mut().zip(chunk) {
                *dst = src.to_ascii_lowercase();
            }
            h.write(piece.get(..chunk.len()).unwrap_or(&[]));
        }
        h.finish()
    }

    fn shard_of_client(&self, client: IpAddr) -> usize {
        let last = match client {
            IpAddr::V4(a) => {
                let [.., last] = a.octets();
                last
            }
            IpAddr::V6(a) => {
                let [.., last] = a.octets();
                last
            }
        };
        usize::from(last) % STAT_SHARDS
    }

    fn count(&self, shard: usize, verdict: RrlVerdict) {
        let Some(s) = self.stats.get(shard) else {
            return;
        };
        let counter = match verdict {
            RrlVerdict::Pass => &s.passed,
            RrlVerdict::Drop => &s.dropped,
            RrlVerdict::Slip => &s.slipped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The stats shard of a key: bits the table index does not use, so one
/// flooded key does not share a counter line with all the others.
fn shard_of_hash(hash: u64) -> usize {
    let [.., top] = hash.to_le_bytes();
    usize::from(top) % STAT_SHARDS
}

#[cfg(test)]
mod tests;
