//! A transfer writes a million names, so name compression (RFC 1035 §4.1.4)
//! here is built for speed: every suffix written within pointer reach goes
//! into a direct-mapped table keyed by a hash of the suffix (ASCII case
//! ignored), and a new name looks up its suffixes, longest first, one probe
//! each. A hit is confirmed by comparing the octets the message holds at that
//! offset, so a hash collision costs compression, never correctness.

/// Entries in the suffix table (a power of two). A TLD-like zone cycles
/// through a few hundred name-server names; this keeps them all.
const SUFFIX_TABLE: usize = 4096;
/// A compression pointer holds a 14-bit offset (RFC 1035 §4.1.4).
const MAX_POINTER: usize = 0x3fff;
/// Labels in a name, the root's excluded: at most 127 fit in 255 octets.
const MAX_LABELS: usize = 127;
const MAX_NAME: usize = 255;
const MAX_LABEL: usize = 63;
/// Pointer hops allowed when comparing with a name in the message (our own
/// messages only point backwards, so this only bounds a bug).
const MAX_HOPS: usize = 128;

/// A name split into labels, with a hash of the suffix starting at each.
struct SplitName {
    /// Start of each label, most specific first, the root excluded.
    starts: [u8; MAX_LABELS],
    /// Hash of the suffix starting at each label, ignoring ASCII case.
    hashes: [u64; MAX_LABELS],
    labels: usize,
}

impl SplitName {
    const EMPTY: SplitName = SplitName {
        starts: [0; MAX_LABELS],
        hashes: [0; MAX_LABELS],
        labels: 0,
    };

    /// Splits `name` into this (reused, so nothing is zeroed per name); `None`
    /// if `name` is not one well-formed uncompressed wire name.
    fn split(&mut self, name: &[u8]) -> Option<()> {
        self.labels = 0;
        if name.len() > MAX_NAME {
            return None;
        }
        let mut pos = 0usize;
        loop {
            let len = usize::from(*name.get(pos)?);
            if len == 0 {
                if pos.checked_add(1)? != name.len() {
                    return None;
                }
                break;
            }
            if len > MAX_LABEL {
                return None;
            }
            *self.starts.get_mut(self.labels)? = u8::try_from(pos).ok()?;
            self.labels = self.labels.checked_add(1)?;
            pos = pos.checked_add(len)?.checked_add(1)?;
        }
        // Hashed from the root towards the first label, so each suffix's hash
        // extends the next shorter one's. Sliced before reversing: a reversed
        // `take` would first walk the whole array from its end.
        let starts = self.starts.get(..self.labels).unwrap_or(&[]);
        let hashes = self.hashes.get_mut(..self.labels).unwrap_or(&mut []);
        let mut hash: u64 = 0;
        for (start, slot) in starts.iter().zip(hashes.iter_mut()).rev() {
            hash = mix_label(hash, label_at(name, usize::from(*start)).unwrap_or(&[]));
            *slot = hash;
        }
        Some(())
    }
}

/// Mixes one label (its length octet and its octets, ASCII-lowercased) into
/// `hash`, eight octets at a time. Not a strong hash: a match is confirmed by
/// comparing octets.
fn mix_label(mut hash: u64, label: &[u8]) -> u64 {
    for chunk in label.chunks(8) {
        let mut word = [0u8; 8];
        if let Some(dst) = word.get_mut(..chunk.len()) {
            dst.copy_from_slice(chunk);
        }
        hash = (hash ^ ascii_lowercase_word(u64::from_le_bytes(word)))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    hash
}

/// Each octet of `w` ASCII-lowercased: the 0x20 bit set in the octets from
/// `A` (0x41) to `Z` (0x5a), found for all eight at once.
pub(super) fn ascii_lowercase_word(w: u64) -> u64 {
    let low7 = w & 0x7f7f_7f7f_7f7f_7f7f;
    // Bit 7 of each octet: set from 0x41 up, and from 0x5b up (no carries
    // cross octets: 0x7f + 0x3f < 0x100).
    let from_a = low7.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
    let past_z = low7.wrapping_add(0x2525_2525_2525_2525);
    let upper = from_a & !past_z & !w & 0x8080_8080_8080_8080;
    w | (upper >> 2)
}

/// The label (with its length octet) starting at `start` in a wire name.
fn label_at(wire: &[u8], start: usize) -> Option<&[u8]> {
    let len = usize::from(*wire.get(start)?);
    wire.get(start..=start.checked_add(len)?)
}

/// Whether the (possibly compressed) name at `pos` in `msg` is `suffix`, an
/// uncompressed wire name, ignoring ASCII case (RFC 1035 §2.3.3).
fn name_in_message_is(msg: &[u8], mut pos: usize, suffix: &[u8]) -> bool {
    let mut at = 0usize;
    let mut hops = 0usize;
    loop {
        let Some(&len) = msg.get(pos) else {
            return false;
        };
        if len & 0xc0 == 0xc0 {
            let Some(&low) = msg.get(pos.saturating_add(1)) else {
                return false;
            };
            hops = hops.saturating_add(1);
            if hops > MAX_HOPS {
                return false;
            }
            pos = usize::from(u16::from_be_bytes([len & 0x3f, low]));
            continue;
        }
        let (Some(a), Some(b)) = (label_at(msg, pos), label_at(suffix, at)) else {
            return false;
        };
        if a != b && !a.eq_ignore_ascii_case(b) {
            return false;
        }
        if len == 0 {
            return true;
        }
        pos = pos.saturating_add(a.len());
        at = at.saturating_add(b.len());
    }
}

/// Where the suffixes written so far in the current message are.
pub(super) struct NameMemory {
    /// Per entry: the suffix's hash, its offset, and the message it was
    /// written in (so starting a message does not wipe the table).
    table: Box<[SuffixEntry]>,
    /// The message being written; 0 is never used, so zeroed entries are stale.
    generation: u16,
    /// The name being written, split.
    current: Box<SplitName>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SuffixEntry {
    hash: u64,
    offset: u16,
    generation: u16,
}

impl core::fmt::Debug for NameMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NameMemory").finish_non_exhaustive()
    }
}

impl NameMemory {
    pub(super) fn new() -> NameMemory {
        NameMemory {
            table: vec![SuffixEntry::default(); SUFFIX_TABLE].into_boxed_slice(),
            generation: 1,
            current: Box::new(SplitName::EMPTY),
        }
    }

    /// Forgets every suffix: a new message starts.
    pub(super) fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.table.fill(SuffixEntry::default());
            self.generation = 1;
        }
    }

    fn slot(hash: u64) -> usize {
        // The low bits of a multiplied hash are its weakest: use the high ones.
        usize::try_from(hash >> 52).unwrap_or(0) & (SUFFIX_TABLE.saturating_sub(1))
    }

    /// Appends `name` (uncompressed wire form) to `out`, its longest suffix
    /// already in the message replaced by a pointer, and remembers where its
    /// new labels went.
    pub(super) fn write_name(&mut self, out: &mut Vec<u8>, name: &[u8]) {
        if self.current.split(name).is_none() {
            out.extend_from_slice(name);
            return;
        }
        let split: &SplitName = &self.current;
        let labels = split.labels;
        let starts = split.starts.get(..labels).unwrap_or(&[]);
        let hashes = split.hashes.get(..labels).unwrap_or(&[]);
        // The longest suffix the message holds within pointer reach.
        let found = starts
            .iter()
            .zip(hashes)
            .enumerate()
            .find_map(|(i, (&start, &hash))| {
                let entry = *self.table.get(NameMemory::slot(hash))?;
                let suffix = name.get(usize::from(start)..)?;
                let at = entry.offset;
                (entry.generation == self.generation
                    && entry.hash == hash
                    && name_in_message_is(out, usize::from(at), suffix))
                .then_some((i, at))
            });
        let base = out.len();
        let (literal, literal_end) = match found {
            Some((i, _)) => (i, starts.get(i).map_or(name.len(), |&s| usize::from(s))),
            None => (labels, name.len()),
        };
        out.extend_from_slice(name.get(..literal_end).unwrap_or(name));
        if let Some((_, at)) = found {
            out.extend_from_slice(&(0xc000 | at).to_be_bytes());
        }
        for (&start, &hash) in starts.iter().zip(hashes).take(literal) {
            let at = base.saturating_add(usize::from(start));
            let Ok(at) = u16::try_from(at) else { break };
            if usize::from(at) > MAX_POINTER {
                break;
            }
            if let Some(entry) = self.table.get_mut(NameMemory::slot(hash)) {
                *entry = SuffixEntry {
                    hash,
                    offset: at,
                    generation: self.generation,
                };
            }
        }
    }
}
