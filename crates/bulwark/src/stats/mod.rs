//! Statistics: counters kept per worker without locks and summed when read.
//!
//! Every recorder (one per UDP worker, one per connection) holds a
//! [`Block`] of counters that only it writes, so an increment is a relaxed
//! load and store (no locked instruction). The registry keeps every block it
//! ever handed out and sums them all when read. A dropped recorder's block
//! goes back, counts and all, and the next recorder of the same transport
//! takes it and counts on from there: a connection costs no allocation and
//! no folding, the blocks are as many as the most recorders ever at once,
//! and a reader (under the registry's mutex, as every handover is) never
//! misses nor double-counts a connection.

pub mod collect;
pub mod family;
pub mod render;
pub mod resolver;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::via::Via;
pub use bulwark_auth::Asked;
use bulwark_proto::{Opcode, Rcode};

use crate::settings::StatsSettings;
pub use family::{Family, MetricKind, Sample, Value};

/// Why a query got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The listener's or the zone's ACL said drop.
    Acl,
    /// Response rate limiting dropped the response.
    RateLimited,
    /// Not answerable: shorter than a header, or itself a response.
    Unanswerable,
}

impl DropReason {
    pub const ALL: [DropReason; 3] = [
        DropReason::Acl,
        DropReason::RateLimited,
        DropReason::Unanswerable,
    ];

    /// The `reason` label value.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::Acl => "acl",
            DropReason::RateLimited => "rate_limited",
            DropReason::Unanswerable => "unanswerable",
        }
    }

    fn index(self) -> usize {
        match self {
            DropReason::Acl => 0,
            DropReason::RateLimited => 1,
            DropReason::Unanswerable => 2,
        }
    }
}

/// What the pipeline did with one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The response in `out` goes out as answered (including REFUSED by ACL).
    Answered,
    /// Rate limiting let the response out truncated (TC) instead of dropping it.
    Slipped,
    Dropped(DropReason),
    /// The response comes later (a zone transfer, a dynamic update): nothing
    /// is sent now.
    Deferred,
}

impl Fate {
    pub fn sent(self) -> bool {
        !matches!(self, Fate::Dropped(_) | Fate::Deferred)
    }
}

/// What a response said, as the handler knew it when it was sent: the full
/// rcode (with an OPT's upper bits), TC, and its size in octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Told {
    pub rcode: Rcode,
    pub truncated: bool,
    pub size: usize,
}

/// Query types 0..=511 are counted by value; larger ones share one slot.
pub const QTYPE_DIRECT: usize = 512;
/// The slot of query types ≥ 512.
pub const QTYPE_OTHER: usize = QTYPE_DIRECT;
/// The slot of queries with no readable question (or an opcode other than QUERY).
pub const QTYPE_NONE: usize = QTYPE_DIRECT + 1;
const QTYPE_SLOTS: usize = QTYPE_DIRECT + 2;
/// The opcode is 4 bits (RFC 1035 §4.1.1).
pub const OPCODES: usize = 16;
/// Rcodes 0..=31 by value (covers BADVERS..BADCOOKIE, RFC 6891, RFC 7873); the rest share one slot.
pub const RCODE_DIRECT: usize = 32;
const RCODE_SLOTS: usize = RCODE_DIRECT + 1;
/// Response size buckets: ≤ 2^(5+i) octets, i.e. 32 … 65536 (a DNS message is < 65536).
pub const SIZE_BUCKETS: usize = 12;
const SIZE_FIRST_SHIFT: u32 = 5;
/// Latency bucket upper bounds in nanoseconds: 1 µs to 10 ms, 1-2-5 steps.
pub const LATENCY_BOUNDS_NS: [u64; 13] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000,
];
/// One in this many queries is timed, so the clock is read rarely.
pub const LATENCY_SAMPLE_EVERY: u32 = 64;

/// Where each counter lives in a block: one flat array, so folding and summing
/// are plain loops.
pub mod slot {
    use super::*;
    pub const QTYPE: usize = 0;
    pub const OPCODE: usize = QTYPE + QTYPE_SLOTS;
    pub const RCODE: usize = OPCODE + OPCODES;
    pub const SIZE: usize = RCODE + RCODE_SLOTS;
    pub const SIZE_SUM: usize = SIZE + SIZE_BUCKETS;
    pub const TRUNCATED: usize = SIZE_SUM + 1;
    pub const DROPPED: usize = TRUNCATED + 1;
    pub const SLIPPED: usize = DROPPED + DropReason::ALL.len();
    pub const MALFORMED: usize = SLIPPED + 1;
    /// Latency buckets, the last one for slower than the largest bound.
    pub const LATENCY: usize = MALFORMED + 1;
    pub const LATENCY_SUM_NS: usize = LATENCY + LATENCY_BOUNDS_NS.len() + 1;
    pub const COUNT: usize = LATENCY_SUM_NS + 1;
}

/// One writer's counters. Aligned to two cache lines (adjacent-line prefetch)
/// so that two workers' blocks never share a line.
#[derive(Debug)]
#[repr(align(128))]
struct Block {
    slots: [AtomicU64; slot::COUNT],
}

impl Block {
    fn new() -> Block {
        Block {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Single writer: a relaxed load and store, no read-modify-write.
    #[inline]
    fn add(&self, at: usize, n: u64) {
        if let Some(c) = self.slots.get(at) {
            c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }

    fn add_to(&self, totals: &mut [u64]) {
        for (t, c) in totals.iter_mut().zip(self.slots.iter()) {
            *t = t.wrapping_add(c.load(Ordering::Relaxed));
        }
    }
}

/// Summed counters of one transport, read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    slots: Vec<u64>,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            slots: vec![0; slot::COUNT],
        }
    }
}

impl Totals {
    fn at(&self, i: usize) -> u64 {
        self.slots.get(i).copied().unwrap_or(0)
    }
    /// Queries of opcode QUERY by qtype slot (value, [`QTYPE_OTHER`], [`QTYPE_NONE`]).
    pub fn queries_by_qtype(&self, qtype_slot: usize) -> u64 {
        self.at(slot::QTYPE.saturating_add(qtype_slot))
    }
    /// Queries by opcode (QUERY included).
    pub fn queries_by_opcode(&self, opcode: usize) -> u64 {
        self.at(slot::OPCODE.saturating_add(opcode))
    }
    /// Responses by rcode slot (value, or [`RCODE_DIRECT`] for the rest).
    pub fn responses_by_rcode(&self, rcode_slot: usize) -> u64 {
        self.at(slot::RCODE.saturating_add(rcode_slot))
    }
    /// Responses whose size fell in bucket `i` (not cumulative).
    pub fn size_bucket(&self, i: usize) -> u64 {
        self.at(slot::SIZE.saturating_add(i))
    }
    pub fn size_sum(&self) -> u64 {
        self.at(slot::SIZE_SUM)
    }
    pub fn truncated(&self) -> u64 {
        self.at(slot::TRUNCATED)
    }
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.at(slot::DROPPED.saturating_add(reason.index()))
    }
    pub fn slipped(&self) -> u64 {
        self.at(slot::SLIPPED)
    }
    pub fn malformed(&self) -> u64 {
        self.at(slot::MALFORMED)
    }
    /// Sampled queries in latency bucket `i` (not cumulative; the last is overflow).
    pub fn latency_bucket(&self, i: usize) -> u64 {
        self.at(slot::LATENCY.saturating_add(i))
    }
    pub fn latency_sum_ns(&self) -> u64 {
        self.at(slot::LATENCY_SUM_NS)
    }
}

/// Every channel's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub udp: Totals,
    pub tcp: Totals,
    pub tls: Totals,
    pub https: Totals,
    pub quic: Totals,
}

impl Snapshot {
    pub fn via(&self, via: Via) -> &Totals {
        match via {
            Via::Udp => &self.udp,
            Via::Tcp => &self.tcp,
            Via::Tls => &self.tls,
            Via::Https => &self.https,
            Via::Quic => &self.quic,
        }
    }

    fn via_mut(&mut self, via: Via) -> &mut Totals {
        match via {
            Via::Udp => &mut self.udp,
            Via::Tcp => &mut self.tcp,
            Via::Tls => &mut self.tls,
            Via::Https => &mut self.https,
            Via::Quic => &mut self.quic,
        }
    }
}

#[derive(Debug, Default)]
struct Blocks {
    /// Every block handed out, with its transport; summed on read.
    all: Vec<(Via, Arc<Block>)>,
    /// Places in `all` of the blocks no recorder holds now, by
    /// `Via::index`.
    spare: [Vec<usize>; Via::COUNT],
}

/// Every worker's counters, registered here and summed on read.
#[derive(Debug)]
pub struct StatsRegistry {
    settings: StatsSettings,
    blocks: Mutex<Blocks>,
}

impl StatsRegistry {
    pub fn new(settings: &StatsSettings) -> Arc<StatsRegistry> {
        Arc::new(StatsRegistry {
            settings: settings.clone(),
            blocks: Mutex::new(Blocks::default()),
        })
    }

    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// The recorder one handler writes to, with counters of its own. Called
    /// when a UDP worker starts or a TCP connection is accepted, never per query.
    pub fn recorder(self: &Arc<Self>, via: Via) -> WorkerRecorder {
        let block = self.settings.enabled.then(|| {
            let mut blocks = self.lock();
            let reused = blocks.spare.get_mut(via.index()).and_then(Vec::pop);
            match reused.and_then(|at| blocks.all.get(at).map(|(_, b)| (at, Arc::clone(b)))) {
                Some(taken) => taken,
                None => {
                    let block = Arc::new(Block::new());
                    blocks.all.push((via, Arc::clone(&block)));
                    (blocks.all.len().saturating_sub(1), block)
                }
            }
        });
        WorkerRecorder {
            registry: Arc::clone(self),
            block,
            countdown: LATENCY_SAMPLE_EVERY,
        }
    }

    /// The sum of every block, per transport.
    pub fn snapshot(&self) -> Snapshot {
        let blocks = self.lock();
        let mut s = Snapshot::default();
        for (t, b) in &blocks.all {
            b.add_to(&mut s.via_mut(*t).slots);
        }
        s
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Blocks> {
        // The counters stay consistent even if a holder panicked: take them.
        self.blocks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes back the block at `at` for the next recorder of its transport.
    /// Its writer's last stores happen before the mutex is released here,
    /// and the next writer takes the mutex before its first: one writer at
    /// a time, as a block needs.
    fn give_back(&self, at: usize) {
        let mut blocks = self.lock();
        let via = blocks.all.get(at).map(|(v, _)| v.index());
        if let Some(spare) = via.and_then(|i| blocks.spare.get_mut(i)) {
            spare.push(at);
        }
    }
}

/// One handler's view of its counters. Never locks, never allocates.
#[derive(Debug)]
pub struct WorkerRecorder {
    registry: Arc<StatsRegistry>,
    /// `None` when statistics are off; else the block and its place in the
    /// registry.
    block: Option<(usize, Arc<Block>)>,
    /// Queries until the next timed one.
    countdown: u32,
}

impl WorkerRecorder {
    /// Called before a query is handled: a start time when this query is one
    /// of the sampled ones for the latency histogram.
    #[inline]
    pub fn start(&mut self) -> Option<Instant> {
        self.block.as_ref()?;
        self.countdown = self.countdown.saturating_sub(1);
        if self.countdown > 0 {
            return None;
        }
        self.countdown = LATENCY_SAMPLE_EVERY;
        Some(Instant::now())
    }

    /// Called after a query was handled: what it asked, as the answerer read
    /// it, and what was sent back, if anything, as the handler knew it.
    #[inline]
    pub fn record(
        &mut self,
        asked: Asked,
        told: Option<Told>,
        fate: Fate,
        started: Option<Instant>,
    ) {
        let Some((_, block)) = self.block.as_ref() else {
            return;
        };
        let opcode = asked.opcode.map_or(0, Opcode::value);
        block.add(slot::OPCODE.saturating_add(usize::from(opcode)), 1);
        let qtype_slot = match asked.qtype {
            _ if opcode != 0 => QTYPE_NONE,
            Some(t) => usize::from(t.0).min(QTYPE_OTHER),
            None => QTYPE_NONE,
        };
        block.add(slot::QTYPE.saturating_add(qtype_slot), 1);
        let mut malformed = false;
        match (fate, told) {
            (Fate::Dropped(reason), _) => {
                block.add(slot::DROPPED.saturating_add(reason.index()), 1);
                malformed = reason == DropReason::Unanswerable;
            }
            (_, Some(told)) => {
                if fate == Fate::Slipped {
                    block.add(slot::SLIPPED, 1);
                }
                let rcode = usize::from(told.rcode.value()).min(RCODE_DIRECT);
                block.add(slot::RCODE.saturating_add(rcode), 1);
                malformed = told.rcode == Rcode::FORMERR;
                if told.truncated {
                    block.add(slot::TRUNCATED, 1);
                }
                let len = u64::try_from(told.size).unwrap_or(u64::MAX);
                block.add(slot::SIZE.saturating_add(size_bucket(told.size)), 1);
                block.add(slot::SIZE_SUM, len);
            }
            (Fate::Deferred, _) | (_, None) => {}
        }
        if malformed {
            block.add(slot::MALFORMED, 1);
        }
        if let Some(t) = started {
            let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            block.add(slot::LATENCY.saturating_add(latency_bucket(ns)), 1);
            block.add(slot::LATENCY_SUM_NS, ns);
        }
    }
}

impl Drop for WorkerRecorder {
    fn drop(&mut self) {
        if let Some((at, _)) = &self.block {
            self.registry.give_back(*at);
        }
    }
}

/// The size bucket of a `len`-octet response: the smallest power of two ≥ len,
/// from 32 up.
fn size_bucket(len: usize) -> usize {
    let bits = len.max(1).next_power_of_two().trailing_zeros();
    let i = bits.saturating_sub(SIZE_FIRST_SHIFT);
    usize::try_from(i)
        .unwrap_or(usize::MAX)
        .min(SIZE_BUCKETS.saturating_sub(1))
}

/// The upper bound of size bucket `i`, in octets.
pub fn size_bound(i: usize) -> u64 {
    u32::try_from(i)
        .ok()
        .and_then(|i| i.checked_add(SIZE_FIRST_SHIFT))
        .and_then(|s| 1u64.checked_shl(s))
        .unwrap_or(u64::MAX)
}

/// Only sampled queries get here, so a short linear search is fine.
fn latency_bucket(ns: u64) -> usize {
    LATENCY_BOUNDS_NS
        .iter()
        .position(|b| ns <= *b)
        .unwrap_or(LATENCY_BOUNDS_NS.len())
}
