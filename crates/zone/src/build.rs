//! Building a [`Zone`] from records: grouping into RRsets, dropping duplicates,
//! canonical ordering, empty non-terminals, and the record-level checks.
//!
//! [`ZoneBuilder`] takes records one at a time so a parser can stream into it
//! instead of holding every typed `Record` at once (they are large: a `Name` is
//! 256 octets inline); [`Zone::build`] is the one-call form with all checks.

use std::borrow::Cow;

use bulwark_proto::{Class, Name, Record, Rtype};

use crate::check::{sort_problems, unsorted_problems, Problem};
use crate::fork::{join_if_large, Fork, InTurn};
use crate::zone::{canonical_key, Node, RRset, Zone};

/// RFC 2181 §8: a TTL is an unsigned value in 0..=2^31-1.
pub const MAX_TTL: u32 = 0x7fff_ffff;

/// RFC 1035 §3.2.1: RDLENGTH is 16 bits.
const MAX_RDATA_LEN: usize = 0xffff;

/// One record as gathered: where its owner and rdata sit in the arena.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Start of the lowercased owner wire form; the rdata follows it.
    off: usize,
    owner_len: u8,
    rdata_len: u16,
    rtype: Rtype,
    ttl: u32,
    /// The owner's canonical-order key in [`ZoneBuilder::keys`].
    key: KeyRange,
}

impl Entry {
    fn owner<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        let end = self.off.saturating_add(usize::from(self.owner_len));
        arena.get(self.off..end).unwrap_or(&[])
    }

    fn rdata<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        let start = self.off.saturating_add(usize::from(self.owner_len));
        let end = start.saturating_add(usize::from(self.rdata_len));
        arena.get(start..end).unwrap_or(&[])
    }
}

/// Gathers records into a zone. Records that cannot be part of the zone are
/// dropped with an error [`Problem`]; questionable ones are kept with a warning.
///
/// Records are kept as offsets into one byte arena until [`ZoneBuilder::finish`]
/// sorts and groups them: two large allocations instead of several small ones
/// per record, which the allocator hands back to the system once the zone is built.
#[derive(Debug)]
pub struct ZoneBuilder {
    apex: Name,
    class: Option<Class>,
    arena: Vec<u8>,
    entries: Vec<Entry>,
    /// The owners' [`canonical_key`]s, one per run of entries with the same
    /// owner: computed as records arrive (in the parse threads when a file is
    /// read in parts), so that finishing only orders them.
    keys: Vec<u8>,
    /// Where the entries' owners step back in canonical order: each index
    /// starts a new sorted run. Found as records arrive, so that finishing a
    /// file that is in order needs no check, and one in a few ordered runs
    /// (the apex and its name servers' addresses first, then the names in
    /// order) needs a merge of runs, not a sort.
    descents: Vec<usize>,
    /// An appended part lost entries (see [`ZoneBuilder::append`]), so
    /// `descents` no longer say where the runs are: finishing sorts.
    runs_unknown: bool,
    problems: Vec<Problem>,
}

impl ZoneBuilder {
    pub fn new(apex: &Name) -> ZoneBuilder {
        ZoneBuilder {
            apex: apex.to_lowercase(),
            class: None,
            arena: Vec::new(),
            entries: Vec::new(),
            keys: Vec::new(),
            descents: Vec::new(),
            runs_unknown: false,
            problems: Vec::new(),
        }
    }

    /// Adds one record.
    pub fn add(&mut self, record: &Record) {
        let rtype = record.rtype();
        if !record.owner.ends_with(&self.apex) {
            self.problems.push(Problem::error(
                &record.owner.to_lowercase(),
                Some(rtype),
                format!("out of zone: the owner is not at or below {}", self.apex),
            ));
            return;
        }
        if rtype.is_meta() || rtype.0 == 0 {
            // RFC 6895 §3.1: meta and query types exist only in messages.
            self.problems.push(Problem::error(
                &record.owner.to_lowercase(),
                Some(rtype),
                "a meta or query type cannot be zone data (RFC 6895 §3.1)",
            ));
            return;
        }
        match self.class {
            None => self.class = Some(record.class),
            Some(c) if c != record.class => {
                self.problems.push(Problem::error(
                    &record.owner.to_lowercase(),
                    Some(rtype),
                    format!(
                        "class {} differs from the zone's class {c}; a zone has one class (RFC 1035 §5.2)",
                        record.class
                    ),
                ));
                return;
            }
            Some(_) => {}
        }
        let mut ttl = record.ttl;
        if ttl > MAX_TTL {
            self.problems.push(Problem::warning(
                &record.owner.to_lowercase(),
                Some(rtype),
                format!("TTL {ttl} is above 2^31-1; treated as 0 (RFC 2181 §8)"),
            ));
            ttl = 0;
        }
        let off = self.arena.len();
        let owner = record.owner.as_wire();
        self.arena.extend_from_slice(owner);
        let rdata_start = self.arena.len();
        if let Some(o) = self.arena.get_mut(off..rdata_start) {
            o.make_ascii_lowercase();
        }
        record.rdata.write_wire(&mut self.arena);
        let rdata_len = self.arena.len().saturating_sub(rdata_start);
        let (Ok(owner_len), Ok(rdata_len)) = (u8::try_from(owner.len()), u16::try_from(rdata_len))
        else {
            self.arena.truncate(off);
            self.problems.push(Problem::error(
                &record.owner.to_lowercase(),
                Some(rtype),
                format!(
                    "record data of {rdata_len} octets does not fit in {MAX_RDATA_LEN} (RFC 1035 §3.2.1)"
                ),
            ));
            return;
        };
        let owner = self.arena.get(off..rdata_start).unwrap_or(&[]);
        let key = match self.entries.last() {
            // A zone file gives an owner's records together.
            Some(previous) if previous.owner(&self.arena) == owner => previous.key,
            previous => {
                let start = self.keys.len();
                canonical_key(owner, &mut self.keys);
                match KeyRange::new(start, self.keys.len()) {
                    Some(key) => {
                        if previous.is_some_and(|p| key.cmp_in(p.key, &self.keys).is_lt()) {
                            self.descents.push(self.entries.len());
                        }
                        key
                    }
                    None => {
                        self.keys.truncate(start);
                        self.arena.truncate(off);
                        self.problems.push(Problem::error(
                            &record.owner.to_lowercase(),
                            Some(rtype),
                            "the zone's names pass 4 GiB in total; this one was not loaded",
                        ));
                        return;
                    }
                }
            }
        };
        self.entries.push(Entry {
            off,
            owner_len,
            rdata_len,
            rtype,
            ttl,
            key,
        });
    }

    /// Sizes the buffers for about `text_octets` of master-file text. Wire
    /// forms run a little longer than the text (relative owners gain the
    /// origin); a short guess costs one more growth, a long one only address
    /// space until the zone is built.
    pub fn expect(&mut self, text_octets: usize) {
        self.arena
            .reserve(text_octets.saturating_add(text_octets / 2));
        self.entries.reserve(text_octets / 24);
        self.keys.reserve(text_octets / 2);
    }

    /// An empty builder for records that come later in the same zone: same
    /// apex, and the class of the records added so far.
    pub fn fork(&self) -> ZoneBuilder {
        ZoneBuilder {
            apex: self.apex.clone(),
            class: self.class,
            arena: Vec::new(),
            entries: Vec::new(),
            keys: Vec::new(),
            descents: Vec::new(),
            runs_unknown: false,
            problems: Vec::new(),
        }
    }

    /// Appends what `later` gathered, as if its records had been added here
    /// after this builder's own.
    pub fn append(&mut self, later: ZoneBuilder) {
        let shift = self.arena.len();
        let key_shift = self.keys.len();
        let entry_shift = self.entries.len();
        let shifted = |key: KeyRange| {
            let at = |n: u32| usize::try_from(n).ok()?.checked_add(key_shift);
            KeyRange::new(at(key.start)?, at(key.end)?)
        };
        let mut problems = later.problems;
        self.entries.reserve(later.entries.len());
        for e in later.entries {
            match shifted(e.key) {
                Some(key) => self.entries.push(Entry {
                    off: e.off.saturating_add(shift),
                    key,
                    ..e
                }),
                None => {
                    self.runs_unknown = true;
                    problems.push(Problem::error(
                        &Name::from_wire(e.owner(&later.arena)).unwrap_or_default(),
                        Some(e.rtype),
                        "the zone's names pass 4 GiB in total; this one was not loaded",
                    ))
                }
            }
        }
        // Where the later entries' runs start, and whether the first of them
        // steps back from the last entry here.
        let later_descents = later.descents.iter().map(|d| d.saturating_add(entry_shift));
        if self.arena.is_empty() {
            self.arena = later.arena;
            self.keys = later.keys;
        } else {
            self.arena.extend_from_slice(&later.arena);
            self.keys.extend_from_slice(&later.keys);
        }
        if let (Some(last), Some(first)) = (
            entry_shift.checked_sub(1).and_then(|i| self.entries.get(i)),
            self.entries.get(entry_shift),
        ) {
            if first.key.cmp_in(last.key, &self.keys).is_lt() {
                self.descents.push(entry_shift);
            }
        }
        self.descents.extend(later_descents);
        self.runs_unknown |= later.runs_unknown;
        self.problems.extend(problems);
        // A class mismatch was reported by whichever builder met it; one with
        // no records yet takes the later one's, as adding them here would.
        self.class = self.class.or(later.class);
    }

    /// Freezes the gathered records into a zone, without the structural checks
    /// of [`crate::check::check_zone`]. Returns the record-level problems found on the way.
    pub fn finish(self) -> (Zone, Vec<Problem>) {
        self.finish_with(&InTurn)
    }

    /// [`ZoneBuilder::finish`], freezing each half of the owners through `fork`.
    pub fn finish_with(self, fork: &impl Fork) -> (Zone, Vec<Problem>) {
        let ZoneBuilder {
            apex,
            class,
            arena,
            mut entries,
            keys,
            descents,
            runs_unknown,
            mut problems,
        } = self;
        // Owners in canonical order from the start, so that the index needs
        // no sort of its own. Stable: within one owner and type, records stay
        // in the order given, so the first one's TTL is the one kept.
        let merged = match runs_unknown {
            false if descents.is_empty() => None,
            false => merge_runs(&entries, &descents, &keys),
            true => None,
        };
        if merged.is_none() && (runs_unknown || !descents.is_empty()) {
            entries.sort_by(|a, b| a.key.cmp_in(b.key, &keys));
        }
        let in_order: Vec<&[Entry]> = match merged {
            Some(stretches) => stretches
                .into_iter()
                .filter_map(|r| entries.get(r))
                .collect(),
            None => vec![entries.as_slice()],
        };
        let (left, right) = halves(&in_order, &keys);
        let count = left.iter().chain(&right).map(|s| s.len()).sum();
        let ((mut nodes, left_problems), (right_nodes, right_problems)) = join_if_large(
            fork,
            count,
            || freeze_nodes(&left, &keys, &arena),
            || freeze_nodes(&right, &keys, &arena),
        );
        nodes.extend(right_nodes);
        problems.extend(left_problems);
        problems.extend(right_problems);
        drop((left, right));
        drop(in_order);
        drop(entries);
        drop(keys);
        let (zone, rejected) =
            Zone::from_sorted_parts(apex, class.unwrap_or(Class::IN), nodes, fork);
        for owner in rejected {
            problems.push(Problem::error(
                &Name::from_wire(owner).unwrap_or_default(),
                None,
                "the zone's names pass 4 GiB in total; this one was not loaded",
            ));
        }
        (zone, problems)
    }
}

impl crate::parse::split::RecordSink for ZoneBuilder {
    fn add(&mut self, record: &Record) {
        ZoneBuilder::add(self, record);
    }

    fn fork(&self) -> ZoneBuilder {
        ZoneBuilder::fork(self)
    }

    fn append(&mut self, later: ZoneBuilder) {
        ZoneBuilder::append(self, later);
    }

    fn expect(&mut self, text_octets: usize) {
        self.expect(text_octets);
    }
}

/// Most runs [`merge_runs`] merges; more go to the sort.
const MAX_MERGED_RUNS: usize = 16;

/// `entries`, made of sorted runs starting at 0 and at each of `descents`
/// (ascending), merged stably: the stretches of `entries` that, one after the
/// other, are in order. `None` when that would not beat a sort: too many
/// runs, or runs so interleaved that they cut into many short stretches.
///
/// Each step takes from the run with the least first owner (the earliest on
/// a tie) every entry up to the next run's first owner, found by binary
/// search, so a file in a few ordered runs costs a few searches and moves no
/// entry: a 1M-record file whose apex and name servers come first spent 28 ms
/// in the sort's merge, comparing and moving every entry.
fn merge_runs(
    entries: &[Entry],
    descents: &[usize],
    keys: &[u8],
) -> Option<Vec<core::ops::Range<usize>>> {
    if descents.len() >= MAX_MERGED_RUNS {
        return None;
    }
    // Each run as what is left of it and where that starts in `entries`.
    let mut runs: Vec<(&[Entry], usize)> = Vec::with_capacity(descents.len().saturating_add(1));
    let mut start = 0usize;
    for &end in descents.iter().chain(core::iter::once(&entries.len())) {
        runs.push((entries.get(start..end)?, start));
        start = end;
    }
    // Enough stretches for every run to be cut a few dozen times.
    let mut stretches_left = (entries.len() / 64).saturating_add(64);
    let mut merged = Vec::new();
    loop {
        // The run to take from: the least first owner, earliest on a tie.
        let mut best: Option<(usize, &Entry)> = None;
        for (i, (run, _)) in runs.iter().enumerate() {
            if let Some(head) = run.first() {
                if best.is_none_or(|(_, b)| head.key.cmp_in(b.key, keys).is_lt()) {
                    best = Some((i, head));
                }
            }
        }
        let Some((take, _)) = best else {
            return Some(merged);
        };
        // How far it leads: past every other run's first owner it may not
        // go; up to an equal one it may only when it comes first in the file.
        let (run, at) = runs.get(take).copied().unwrap_or((&[], 0));
        let mut len = run.len();
        for (i, (other, _)) in runs.iter().enumerate() {
            let Some(head) = other.first().filter(|_| i != take) else {
                continue;
            };
            let before = |e: &Entry| {
                let order = e.key.cmp_in(head.key, keys);
                order.is_lt() || (order.is_eq() && take < i)
            };
            len = len.min(run.partition_point(before));
        }
        stretches_left = stretches_left.checked_sub(1)?;
        let len = len.max(1).min(run.len());
        merged.push(at..at.saturating_add(len));
        if let Some(r) = runs.get_mut(take) {
            *r = (run.get(len..).unwrap_or(&[]), at.saturating_add(len));
        }
    }
}

/// The stretches `in_order` cut in two halves of about as many entries each,
/// without splitting an owner's entries.
fn halves<'e>(in_order: &[&'e [Entry]], keys: &[u8]) -> (Vec<&'e [Entry]>, Vec<&'e [Entry]>) {
    let total: usize = in_order.iter().map(|s| s.len()).sum();
    let mut want = total / 2;
    let (mut left, mut right) = (Vec::new(), Vec::new());
    // The owner of the last entry given to the left half.
    let mut last: Option<KeyRange> = None;
    for &stretch in in_order {
        if !right.is_empty() {
            right.push(stretch);
            continue;
        }
        let mut cut = want.min(stretch.len());
        want = want.saturating_sub(cut);
        if let Some(e) = cut.checked_sub(1).and_then(|i| stretch.get(i)) {
            last = Some(e.key);
        }
        if want == 0 {
            // The middle: on past the owner it would split.
            if let Some(owner) = last {
                while stretch.get(cut).is_some_and(|e| e.key.same(owner, keys)) {
                    cut = cut.saturating_add(1);
                }
            }
        }
        let (l, r) = stretch.split_at(cut.min(stretch.len()));
        if !l.is_empty() {
            left.push(l);
        }
        if !r.is_empty() {
            right.push(r);
        }
    }
    (left, right)
}

/// Where one owner's canonical key sits in [`ZoneBuilder::keys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyRange {
    start: u32,
    end: u32,
}

impl KeyRange {
    /// `None` past 4 GiB of keys, which only a zone far beyond memory reaches.
    fn new(start: usize, end: usize) -> Option<KeyRange> {
        Some(KeyRange {
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        })
    }

    fn of(self, keys: &[u8]) -> &[u8] {
        let at = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        keys.get(at(self.start)..at(self.end)).unwrap_or(&[])
    }

    /// The canonical order of two entries' owners. The records of one owner
    /// share one key range, so neighbours in a zone file (the comparisons a
    /// sort of nearly sorted entries makes) mostly compare equal without
    /// reading the keys.
    fn cmp_in(self, other: KeyRange, keys: &[u8]) -> core::cmp::Ordering {
        if self == other {
            return core::cmp::Ordering::Equal;
        }
        self.of(keys).cmp(other.of(keys))
    }

    /// Whether two entries have the same owner.
    fn same(self, other: KeyRange, keys: &[u8]) -> bool {
        self == other || self.of(keys) == other.of(keys)
    }
}

/// The nodes of the entries of `in_order` (stretches that, one after the
/// other, are sorted by owner), each with its RRsets frozen, and the
/// problems found on the way.
fn freeze_nodes<'a>(
    in_order: &[&[Entry]],
    keys: &[u8],
    arena: &'a [u8],
) -> (Vec<(&'a [u8], Node)>, Vec<Problem>) {
    let mut nodes = Vec::new();
    let mut problems = Vec::new();
    let mut at_owner: Vec<Entry> = Vec::new();
    let mut entries = in_order.iter().flat_map(|s| s.iter()).peekable();
    while let Some(first) = entries.next() {
        let owner = first.owner(arena);
        at_owner.clear();
        at_owner.push(*first);
        while let Some(next) = entries.next_if(|e| e.key.same(first.key, keys)) {
            at_owner.push(*next);
        }
        at_owner.sort_by_key(|e| e.rtype);
        // Sized exactly: the node keeps this allocation.
        let sets = at_owner.chunk_by(|a, b| a.rtype == b.rtype);
        let mut rrsets = Vec::with_capacity(sets.clone().count());
        rrsets.extend(sets.filter_map(|set| freeze_set(set, arena, &mut problems)));
        nodes.push((owner, Node::new(rrsets)));
    }
    (nodes, problems)
}

/// One RRset from the records of one owner and type (in the order given):
/// the first record's TTL, rdata sorted into RFC 4034 §6.3 canonical order
/// and duplicates dropped (RFC 2181 §5: an RRset is a set; names compare
/// without case, RFC 4034 §6.2).
fn freeze_set(set: &[Entry], arena: &[u8], problems: &mut Vec<Problem>) -> Option<RRset> {
    let first = set.first()?;
    let (rtype, ttl) = (first.rtype, first.ttl);
    // RFC 4034 §3: each RRSIG carries the TTL of the RRset it covers, so
    // RRSIGs at one owner legitimately differ.
    if rtype != Rtype::RRSIG {
        if let Some(other) = set.iter().find(|e| e.ttl != ttl) {
            let owner = Name::from_wire(first.owner(arena)).unwrap_or_default();
            problems.push(Problem::warning(
                &owner,
                Some(rtype),
                format!(
                    "TTL {} differs from the TTL {ttl} of the first record of this RRset; using {ttl} (RFC 2181 §5.2)",
                    other.ttl
                ),
            ));
        }
    }
    if set.len() < 2 {
        return Some(RRset::from_rdatas(
            rtype,
            ttl,
            set.iter().map(|e| e.rdata(arena)),
        ));
    }
    let mut keyed: Vec<(Cow<'_, [u8]>, &[u8])> = set
        .iter()
        .map(|e| {
            let r = e.rdata(arena);
            (canonical_rdata(rtype, r), r)
        })
        .collect();
    // Stable: of duplicates differing only in name case, the first given is kept.
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    let sorted: Vec<&[u8]> = keyed.into_iter().map(|(_, r)| r).collect();
    Some(RRset::from_rdatas(rtype, ttl, sorted))
}

/// A zone as [`Zone::build_keeping_warnings`] built it (or, with no zone,
/// why it could not), with what the checks found.
#[derive(Debug, Clone)]
pub struct Built<Z = Zone> {
    pub zone: Z,
    /// Errors and the warnings kept, sorted by owner.
    pub problems: Vec<Problem>,
    /// Warnings found but not kept.
    pub unkept_warnings: usize,
}

/// The RFC 4034 §6.2 canonical form of wire-form rdata (embedded names of the
/// listed types lowercased; malformed rdata compared as it is), by which
/// RRsets are ordered and deduplicated. It lives in proto next to the typed
/// `Rdata::write_canonical`, which it must always agree with.
pub use bulwark_proto::rdata::canonical_wire as canonical_rdata;

impl Zone {
    /// Builds a zone from `records` and runs every load-time check.
    ///
    /// `Ok` holds the zone and its warnings; `Err` holds every problem (errors
    /// and warnings) when there was at least one error. Problems come sorted
    /// by owner (canonical order), errors first at each owner.
    pub fn build(apex: Name, records: Vec<Record>) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        let mut builder = ZoneBuilder::new(&apex);
        for r in &records {
            builder.add(r);
        }
        Zone::build_from(builder)
    }

    /// Finishes `builder` and runs the structural checks (see [`Zone::build`]).
    pub fn build_from(builder: ZoneBuilder) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        Zone::build_from_with(builder, &InTurn)
    }

    /// [`Zone::build_from`], with the work split in halves run through `fork`.
    pub fn build_from_with(
        builder: ZoneBuilder,
        fork: &impl Fork,
    ) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        match Zone::build_keeping_warnings(builder, fork, usize::MAX) {
            Ok(built) => Ok((built.zone, built.problems)),
            Err(built) => Err(built.problems),
        }
    }

    /// [`Zone::build_from_with`], keeping every error but only the first
    /// `warnings` warnings in zone order and counting the rest, so that a
    /// caller showing only a few pays no message for each of the others.
    /// `Err` when there is an error, with the problems kept.
    pub fn build_keeping_warnings(
        builder: ZoneBuilder,
        fork: &impl Fork,
        warnings: usize,
    ) -> Result<Built, Built<()>> {
        let (zone, built) = builder.finish_with(fork);
        // The builder's problems (usually none) join the checks' (possibly one
        // per name), and all are sorted once.
        let found = unsorted_problems(&zone, fork, warnings);
        let mut problems = found.problems;
        problems.extend(built);
        sort_problems(&mut problems);
        // Each half of the zone kept up to `warnings`: keep the first ones.
        let mut room = warnings;
        let mut unkept = found.unkept;
        problems.retain(|p| match (p.is_error(), room.checked_sub(1)) {
            (true, _) => true,
            (false, Some(left)) => {
                room = left;
                true
            }
            (false, None) => {
                unkept = unkept.saturating_add(1);
                false
            }
        });
        if problems.iter().any(Problem::is_error) {
            return Err(Built {
                zone: (),
                problems,
                unkept_warnings: unkept,
            });
        }
        Ok(Built {
            zone,
            problems,
            unkept_warnings: unkept,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn canonical_form_lowercases_names_in_listed_types_only() {
        let mut mx = vec![0, 10];
        mx.extend_from_slice(n("MAIL.Example.").as_wire());
        let canon = canonical_rdata(Rtype::MX, &mx);
        assert_eq!(&canon[2..], n("mail.example.").as_wire());
        // NSEC's next name keeps its case (RFC 6840 §5.1).
        let nsec = n("A.example.").as_wire().to_vec();
        assert_eq!(
            canonical_rdata(Rtype::NSEC, &nsec),
            Cow::Borrowed(&nsec[..])
        );
        // TXT is opaque.
        assert_eq!(
            canonical_rdata(Rtype::TXT, b"\x03ABC"),
            Cow::Borrowed(b"\x03ABC")
        );
    }

    #[test]
    fn a_zone_built_from_records_in_any_order_walks_in_canonical_order() {
        let owners = [
            "z.example.",
            "\\000.b.example.",
            "B.example.",
            "example.",
            "a.example.",
            "b.example.",
            "*.z.example.",
            "y.a.example.",
        ];
        let records: Vec<Record> = owners
            .iter()
            .map(|o| {
                let text = if *o == "example." {
                    format!("{o} 60 IN SOA ns hm 1 2 3 4 5")
                } else {
                    format!("{o} 60 IN TXT x")
                };
                crate::parse_str(&text, &n("example."), "t")
                    .unwrap()
                    .remove(0)
            })
            .collect();
        let mut builder = ZoneBuilder::new(&n("example."));
        for r in &records {
            builder.add(r);
        }
        let (zone, _) = builder.finish();
        let walked: Vec<Name> = zone.records().map(|r| r.owner).collect();
        let mut sorted = walked.clone();
        sorted.sort();
        assert_eq!(walked, sorted);
        assert_eq!(
            walked.len(),
            7,
            "B.example. and b.example. are one owner: {walked:?}"
        );
    }

    #[test]
    fn records_given_out_of_order_keep_each_rrsets_first_ttl() {
        // The later owners and the first record of each RRset come first;
        // the earlier owners and the RRsets' later records, with other TTLs,
        // after them.
        let text = "c.example. 100 IN TXT c1\nb.example. 100 IN TXT b1\n\
                    example. 60 IN SOA ns hm 1 2 3 4 5\na.example. 100 IN TXT a1\n\
                    a.example. 200 IN TXT a2\nb.example. 200 IN TXT b2\n\
                    c.example. 200 IN TXT c2\n0.example. 200 IN TXT z\n";
        let records = crate::parse_str(text, &n("example."), "t").unwrap();
        let mut builder = ZoneBuilder::new(&n("example."));
        for r in &records {
            builder.add(r);
        }
        let (zone, problems) = builder.finish();
        let walked: Vec<(String, u32)> = zone
            .records()
            .map(|r| (r.owner.to_string(), r.ttl))
            .collect();
        assert_eq!(
            walked,
            [
                ("example.", 60),
                ("0.example.", 200),
                ("a.example.", 100),
                ("a.example.", 100),
                ("b.example.", 100),
                ("b.example.", 100),
                ("c.example.", 100),
                ("c.example.", 100),
            ]
            .map(|(o, t)| (o.to_owned(), t))
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn canonical_form_leaves_malformed_rdata_alone() {
        assert_eq!(
            canonical_rdata(Rtype::NS, &[5, b'A']),
            Cow::Borrowed(&[5, b'A'][..])
        );
        assert_eq!(canonical_rdata(Rtype::MX, &[0]), Cow::Borrowed(&[0][..]));
    }

    #[test]
    fn canonical_form_of_soa_keeps_numbers() {
        let mut soa = n("NS.Example.").as_wire().to_vec();
        soa.extend_from_slice(n("Host.Example.").as_wire());
        soa.extend_from_slice(&[b'A'; 20]);
        let canon = canonical_rdata(Rtype::SOA, &soa);
        assert!(canon.ends_with(&[b'A'; 20]));
        assert!(canon.starts_with(n("ns.example.").as_wire()));
    }
}
