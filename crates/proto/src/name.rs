//! Domain names: wire form stored inline, case preserved, compared without case.

use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

use crate::ascii_case::eq_ignore_ascii_case;
use crate::wire::{Reader, WireError};

/// RFC 1035 §2.3.4: a name is at most 255 octets in wire form.
pub const MAX_NAME_LEN: usize = 255;
/// RFC 1035 §2.3.4: a label is at most 63 octets.
pub const MAX_LABEL_LEN: usize = 63;
/// 255 octets hold at most 127 one-octet labels plus the root.
const MAX_LABELS: usize = 128;

/// Why a name was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    #[error("label longer than 63 octets")]
    LabelTooLong,
    #[error("name longer than 255 octets")]
    NameTooLong,
    #[error("empty label")]
    EmptyLabel,
    #[error("bad escape sequence")]
    BadEscape,
    #[error("relative name with no origin to complete it")]
    Relative,
    #[error("compression pointer that does not point backwards")]
    BadPointer,
    #[error("reserved label type")]
    BadLabelType,
    #[error("name runs past the end of its data")]
    Truncated,
    #[error("trailing data after the root label")]
    TrailingData,
}

/// A fully qualified domain name in uncompressed wire form.
///
/// Equality and hashing ignore ASCII case (RFC 4343); `Ord` is the canonical
/// DNSSEC order (RFC 4034 §6.1). The bytes keep the case they were given.
#[derive(Clone)]
pub struct Name {
    len: u8,
    buf: [u8; MAX_NAME_LEN],
}

impl Name {
    /// The root name, `.`.
    pub const fn root() -> Name {
        Name {
            len: 1,
            buf: [0; MAX_NAME_LEN],
        }
    }

    /// Validates an uncompressed wire-format name that fills `bytes` exactly.
    pub fn from_wire(bytes: &[u8]) -> Result<Name, NameError> {
        let mut name = Name::root();
        name.assign_wire(bytes)?;
        Ok(name)
    }

    /// Makes this name a copy of `wire`, an uncompressed wire-format name that
    /// fills it exactly (as [`Name::from_wire`] takes it). Reuses this
    /// name's storage and writes only the name's octets, where building a new
    /// `Name` writes all of its 256: for a hot path that keeps one around.
    pub fn assign_wire(&mut self, wire: &[u8]) -> Result<(), NameError> {
        check_uncompressed(wire)?;
        let len = u8::try_from(wire.len()).map_err(|_| NameError::NameTooLong)?;
        let dst = self
            .buf
            .get_mut(..wire.len())
            .ok_or(NameError::NameTooLong)?;
        dst.copy_from_slice(wire);
        self.len = len;
        Ok(())
    }

    /// Makes this name a lowercased copy of `other`, reusing its storage
    /// (see [`Name::assign_wire`]).
    pub fn assign_lowercase(&mut self, other: &Name) {
        let n = usize::from(other.len);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(..n), other.buf.get(..n)) {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = s.to_ascii_lowercase();
            }
            self.len = other.len;
        }
    }

    /// Reads a name that may use compression pointers (RFC 1035 §4.1.4).
    ///
    /// A pointer must point strictly before the previous one (or before itself for
    /// the first), so every chain ends: loops and forward pointers are errors.
    pub fn read(r: &mut Reader<'_>) -> Result<Name, WireError> {
        let start = r.position();
        let mut name = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        let walked = walk_compressed(r.buffer(), start, |label| name.push_raw(label))?;
        r.read_bytes(walked.end.saturating_sub(start))?;
        Ok(name)
    }

    /// Reads a name that must not be compressed (RFC 3597 §4: rdata of newer types).
    pub fn read_uncompressed(r: &mut Reader<'_>) -> Result<Name, WireError> {
        let mut name = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        loop {
            let at = r.position();
            let len = r.read_u8()?;
            if len & 0xc0 != 0 {
                let reason = if len & 0xc0 == 0xc0 {
                    NameError::BadPointer
                } else {
                    NameError::BadLabelType
                };
                return Err(WireError::BadName { at, reason });
            }
            let body = r.read_bytes(usize::from(len))?;
            name.push_label_unchecked_len(body)
                .map_err(|reason| WireError::BadName { at, reason })?;
            if len == 0 {
                return Ok(name);
            }
        }
    }

    /// Appends a raw length-prefixed label (including the root's zero byte).
    fn push_raw(&mut self, raw: &[u8]) -> Result<(), NameError> {
        let start = usize::from(self.len);
        let end = start.checked_add(raw.len()).ok_or(NameError::NameTooLong)?;
        let dst = self.buf.get_mut(start..end).ok_or(NameError::NameTooLong)?;
        dst.copy_from_slice(raw);
        self.len = u8::try_from(end).map_err(|_| NameError::NameTooLong)?;
        Ok(())
    }

    /// Appends a label body (no length byte); an empty body is the root label.
    fn push_label_unchecked_len(&mut self, body: &[u8]) -> Result<(), NameError> {
        if body.len() > MAX_LABEL_LEN {
            return Err(NameError::LabelTooLong);
        }
        let len = u8::try_from(body.len()).map_err(|_| NameError::LabelTooLong)?;
        let start = usize::from(self.len);
        let end = start
            .checked_add(1)
            .and_then(|s| s.checked_add(body.len()))
            .ok_or(NameError::NameTooLong)?;
        if end > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        let dst = self.buf.get_mut(start..end).ok_or(NameError::NameTooLong)?;
        if let Some((first, rest)) = dst.split_first_mut() {
            *first = len;
            rest.copy_from_slice(body);
        }
        self.len = u8::try_from(end).map_err(|_| NameError::NameTooLong)?;
        Ok(())
    }

    /// Builds a name from label bodies, most specific first, ending at the root.
    pub fn from_labels<'a, I: IntoIterator<Item = &'a [u8]>>(labels: I) -> Result<Name, NameError> {
        let mut name = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        for l in labels {
            if l.is_empty() {
                return Err(NameError::EmptyLabel);
            }
            name.push_label_unchecked_len(l)?;
        }
        name.push_label_unchecked_len(&[])?;
        Ok(name)
    }

    /// Parses presentation format (RFC 1035 §5.1): `\X` and `\DDD` escapes, a
    /// trailing dot for absolute names; relative names are completed with `origin`.
    /// `@` is a zone-file convention and is handled by the zone parser, not here.
    pub fn from_presentation(text: &[u8], origin: Option<&Name>) -> Result<Name, NameError> {
        let mut name = Name::root();
        name.assign_presentation(text, origin)?;
        Ok(name)
    }

    /// Makes this name the one `text` gives in presentation format (as
    /// [`Name::from_presentation`] reads it), writing only the name's octets
    /// into the storage it has: a zone file's parser reads every owner into
    /// one name this way instead of building and moving a fresh 256-octet
    /// value per record. On an error the name is the root.
    pub fn assign_presentation(
        &mut self,
        text: &[u8],
        origin: Option<&Name>,
    ) -> Result<(), NameError> {
        let result = self.write_presentation(text, origin);
        if result.is_err() {
            self.len = 1;
            if let Some(b) = self.buf.first_mut() {
                *b = 0;
            }
        }
        result
    }

    fn write_presentation(&mut self, text: &[u8], origin: Option<&Name>) -> Result<(), NameError> {
        if text == b"." {
            self.len = 1;
            *self.buf.first_mut().ok_or(NameError::NameTooLong)? = 0;
            return Ok(());
        }
        if text.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        // The label being read sits at `start` (its length octet) and after;
        // its octets are written in place. Octets past the storage are
        // counted, not written: the label's end reports the name too long,
        // unless the label proves too long first.
        let mut start = 0usize;
        let mut llen = 0usize;
        let mut absolute = false;
        let mut i = 0usize;
        while let Some(&c) = text.get(i) {
            i = i.saturating_add(1);
            let byte = match c {
                b'.' => {
                    if llen == 0 {
                        return Err(NameError::EmptyLabel);
                    }
                    start = self.close_label(start, llen)?;
                    llen = 0;
                    if i == text.len() {
                        absolute = true;
                    }
                    continue;
                }
                b'\\' => {
                    let (b, used) = parse_escape(text.get(i..).unwrap_or(&[]))?;
                    i = i.saturating_add(used);
                    b
                }
                c => c,
            };
            if llen == MAX_LABEL_LEN {
                return Err(NameError::LabelTooLong);
            }
            llen = llen.saturating_add(1);
            if let Some(slot) = self.buf.get_mut(start.saturating_add(llen)) {
                *slot = byte;
            }
        }
        if llen > 0 {
            start = self.close_label(start, llen)?;
        }
        if absolute {
            self.close_label(start, 0)?;
            return Ok(());
        }
        let origin = origin.ok_or(NameError::Relative)?;
        self.len = u8::try_from(start).map_err(|_| NameError::NameTooLong)?;
        self.push_raw(origin.as_wire())
    }

    /// Writes the length octet of the `llen`-octet label at `start`, whose
    /// octets are in place, and returns where the next label starts.
    fn close_label(&mut self, start: usize, llen: usize) -> Result<usize, NameError> {
        let end = start
            .checked_add(1)
            .and_then(|s| s.checked_add(llen))
            .filter(|&e| e <= MAX_NAME_LEN)
            .ok_or(NameError::NameTooLong)?;
        let len = u8::try_from(llen).map_err(|_| NameError::LabelTooLong)?;
        *self.buf.get_mut(start).ok_or(NameError::NameTooLong)? = len;
        self.len = u8::try_from(end).map_err(|_| NameError::NameTooLong)?;
        Ok(end)
    }

    /// Makes this name a copy of `other`, writing only its octets (a clone
    /// copies all 256).
    pub fn assign(&mut self, other: &Name) {
        let n = usize::from(other.len);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(..n), other.buf.get(..n)) {
            dst.copy_from_slice(src);
            self.len = other.len;
        }
    }

    /// Uncompressed wire form, including the root label.
    pub fn as_wire(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Length in wire form, 1 for the root.
    pub fn wire_len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_root(&self) -> bool {
        self.len <= 1
    }

    /// Label bodies from most specific to the last one before the root.
    pub fn labels(&self) -> Labels<'_> {
        Labels {
            rest: self.as_wire(),
        }
    }

    /// Number of labels, not counting the root (RFC 4034 §3.1.3's count, before wildcard adjustment).
    pub fn label_count(&self) -> usize {
        self.labels().count()
    }

    /// The first label is `*` (RFC 4592 §2.1.1).
    pub fn is_wildcard(&self) -> bool {
        self.as_wire().get(..2) == Some(&[1, b'*'])
    }

    /// The name with its first label removed; `None` for the root.
    pub fn parent(&self) -> Option<Name> {
        let first = usize::from(*self.as_wire().first()?);
        if first == 0 {
            return None;
        }
        let skip = first.checked_add(1)?;
        let rest = self.as_wire().get(skip..)?;
        let mut out = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        out.push_raw(rest).ok()?;
        Some(out)
    }

    /// The ancestor made of this name's last `keep` labels (0 is the root).
    pub fn suffix(&self, keep: usize) -> Option<Name> {
        let total = self.label_count();
        let mut n = self.clone();
        for _ in 0..total.checked_sub(keep)? {
            n = n.parent()?;
        }
        Some(n)
    }

    /// `label.self`.
    pub fn prepend_label(&self, label: &[u8]) -> Result<Name, NameError> {
        if label.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        let mut out = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        out.push_label_unchecked_len(label)?;
        out.push_raw(self.as_wire())?;
        Ok(out)
    }

    /// `*.self`, the wildcard that could match names below this one.
    pub fn wildcard_child(&self) -> Result<Name, NameError> {
        self.prepend_label(b"*")
    }

    /// Replaces the suffix `old` with `new` (DNAME substitution, RFC 6672 §2.2).
    /// `None` if `self` is not below `old`; an error if the result is too long (YXDOMAIN).
    pub fn replace_suffix(&self, old: &Name, new: &Name) -> Option<Result<Name, NameError>> {
        if !self.ends_with(old) {
            return None;
        }
        let keep = self.wire_len().checked_sub(old.wire_len())?;
        let head = self.as_wire().get(..keep)?;
        let mut out = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        Some(
            out.push_raw(head)
                .and_then(|_| out.push_raw(new.as_wire()))
                .map(|_| out),
        )
    }

    /// Whether `self` equals `ancestor` or lies below it (label-aligned, case-insensitive).
    pub fn ends_with(&self, ancestor: &Name) -> bool {
        let (me, anc) = (self.as_wire(), ancestor.as_wire());
        let Some(offset) = me.len().checked_sub(anc.len()) else {
            return false;
        };
        // The suffix must start on a label boundary.
        let mut pos = 0usize;
        while pos < offset {
            let Some(&l) = me.get(pos) else { return false };
            pos = pos.saturating_add(usize::from(l)).saturating_add(1);
        }
        pos == offset
            && me
                .get(offset..)
                .is_some_and(|s| eq_ignore_ascii_case(s, anc))
    }

    /// Strictly below `ancestor`.
    pub fn is_below(&self, ancestor: &Name) -> bool {
        self.wire_len() > ancestor.wire_len() && self.ends_with(ancestor)
    }

    /// A copy with ASCII letters lowercased (RFC 4034 §6.2 canonical form).
    pub fn to_lowercase(&self) -> Name {
        let mut out = self.clone();
        out.make_lowercase();
        out
    }

    /// Whether any octet is an ASCII capital: without one, the name is
    /// already in canonical case and needs no lowercased copy.
    pub fn has_uppercase(&self) -> bool {
        self.as_wire().iter().any(u8::is_ascii_uppercase)
    }

    pub fn make_lowercase(&mut self) {
        let n = usize::from(self.len);
        if let Some(b) = self.buf.get_mut(..n) {
            b.make_ascii_lowercase();
        }
    }

    /// Same bytes, same case: for echoing and for tests of case preservation.
    pub fn eq_exact(&self, other: &Name) -> bool {
        self.as_wire() == other.as_wire()
    }

    /// RFC 4034 §6.1 ordering.
    pub fn canonical_cmp(&self, other: &Name) -> Ordering {
        let (a, an) = label_offsets(self.as_wire());
        let (b, bn) = label_offsets(other.as_wire());
        let mut i = an;
        let mut j = bn;
        while i > 0 && j > 0 {
            i = i.saturating_sub(1);
            j = j.saturating_sub(1);
            let la = label_at(self.as_wire(), a.get(i).copied());
            let lb = label_at(other.as_wire(), b.get(j).copied());
            let ord = cmp_label_ignore_case(la, lb);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        an.cmp(&bn)
    }
}

impl Name {
    /// Bytes whose plain byte order is this name's canonical order (RFC 4034
    /// §6.1): labels from the root down, each as (1, lowercased octet) pairs
    /// closed by a 0, so a label sorts before its extensions. For sorting many
    /// names: build each key once, then compare with memcmp.
    pub fn canonical_sort_key(&self) -> Vec<u8> {
        let wire = self.as_wire();
        let (offsets, count) = label_offsets(wire);
        let mut key = Vec::with_capacity(wire.len().saturating_mul(2));
        for i in (0..count).rev() {
            for &b in label_at(wire, offsets.get(i).copied()) {
                key.push(1);
                key.push(b.to_ascii_lowercase());
            }
            key.push(0);
        }
        key
    }
}

fn label_offsets(wire: &[u8]) -> ([u8; MAX_LABELS], usize) {
    let mut offs = [0u8; MAX_LABELS];
    let mut n = 0usize;
    let mut pos = 0usize;
    while let Some(&l) = wire.get(pos) {
        if l == 0 {
            break;
        }
        if let (Some(slot), Ok(p)) = (offs.get_mut(n), u8::try_from(pos)) {
            *slot = p;
            n = n.saturating_add(1);
        }
        pos = pos.saturating_add(usize::from(l)).saturating_add(1);
    }
    (offs, n)
}

fn label_at(wire: &[u8], off: Option<u8>) -> &[u8] {
    let Some(off) = off.map(usize::from) else {
        return &[];
    };
    let len = wire.get(off).map(|&l| usize::from(l)).unwrap_or(0);
    let start = off.saturating_add(1);
    wire.get(start..start.saturating_add(len)).unwrap_or(&[])
}

fn cmp_label_ignore_case(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = x.to_ascii_lowercase().cmp(&y.to_ascii_lowercase());
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Where a walked name ended, from [`walk_compressed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Walked {
    /// The offset just after the name as it sits in the message: after its
    /// first pointer if it has one, else after its root label.
    pub end: usize,
    /// Length of the uncompressed name, root label included.
    pub wire_len: usize,
}

/// The DNS message header's size (RFC 1035 §4.1.1).
const MESSAGE_HEADER_LEN: usize = 12;

/// Walks a possibly compressed name starting at `start` in `msg` (RFC 1035
/// §4.1.4), handing each raw label (length octet and body; the root's single
/// zero octet last) to `on_label`. Checks labels ≤ 63 octets (the 0x40 and 0x80
/// label types are reserved), total ≤ 255 octets, labels inside `msg`, and that
/// each pointer targets an offset strictly below the previous pointer's target
/// (below its own start for the first), so every chain ends: loops and forward
/// pointers are errors. This is the one place that rule lives; [`Name::read`]
/// copies the labels, message validation passes a no-op.
pub(crate) fn walk_compressed(
    msg: &[u8],
    start: usize,
    mut on_label: impl FnMut(&[u8]) -> Result<(), NameError>,
) -> Result<Walked, WireError> {
    let bad = |at: usize, reason| WireError::BadName { at, reason };
    let mut pos = start;
    let mut limit = start; // pointers must target offsets below this
    let mut resume: Option<usize> = None;
    let mut total = 0usize;
    loop {
        let len = *msg.get(pos).ok_or(bad(pos, NameError::Truncated))?;
        match len & 0xc0 {
            0x00 => {
                let end = pos
                    .checked_add(1)
                    .and_then(|p| p.checked_add(usize::from(len)))
                    .ok_or(bad(pos, NameError::Truncated))?;
                let label = msg.get(pos..end).ok_or(bad(pos, NameError::Truncated))?;
                total = total.saturating_add(label.len());
                if total > MAX_NAME_LEN {
                    return Err(bad(pos, NameError::NameTooLong));
                }
                on_label(label).map_err(|e| bad(pos, e))?;
                pos = end;
                if len == 0 {
                    return Ok(Walked {
                        end: resume.unwrap_or(pos),
                        wire_len: total,
                    });
                }
            }
            0xc0 => {
                let lo = *msg
                    .get(pos.saturating_add(1))
                    .ok_or(bad(pos, NameError::Truncated))?;
                let target = usize::from(u16::from_be_bytes([len & 0x3f, lo]));
                // RFC 1035 §4.1.4: a pointer is an offset from the start of
                // the message, whose first 12 octets are the header: no name
                // lives there, and a name read from it would change with the
                // ID or a count (a forwarder rewriting the ID, TSIG's ARCOUNT).
                if target >= limit || target < MESSAGE_HEADER_LEN {
                    return Err(bad(pos, NameError::BadPointer));
                }
                if resume.is_none() {
                    resume = Some(pos.saturating_add(2));
                }
                limit = target;
                pos = target;
            }
            _ => return Err(bad(pos, NameError::BadLabelType)),
        }
    }
}

/// Checks that `wire` is exactly one uncompressed wire-format name, with the
/// errors [`Name::read_uncompressed`] gives (then `TrailingData` for octets
/// after the root), without copying it.
fn check_uncompressed(wire: &[u8]) -> Result<(), NameError> {
    let mut pos = 0usize;
    loop {
        let len = *wire.get(pos).ok_or(NameError::Truncated)?;
        match len & 0xc0 {
            0x00 => {}
            0xc0 => return Err(NameError::BadPointer),
            _ => return Err(NameError::BadLabelType),
        }
        let end = pos
            .checked_add(1)
            .and_then(|p| p.checked_add(usize::from(len)))
            .ok_or(NameError::Truncated)?;
        if end > wire.len() {
            return Err(NameError::Truncated);
        }
        if end > MAX_NAME_LEN {
            return Err(NameError::NameTooLong);
        }
        if len == 0 {
            return if end == wire.len() {
                Ok(())
            } else {
                Err(NameError::TrailingData)
            };
        }
        pos = end;
    }
}

/// One escape after a backslash: `\DDD` (decimal, ≤ 255) or `\X` (X literally).
/// Returns the byte and how many input bytes it used.
pub fn parse_escape(after: &[u8]) -> Result<(u8, usize), NameError> {
    match after.first() {
        Some(d) if d.is_ascii_digit() => {
            let digits = after.get(..3).ok_or(NameError::BadEscape)?;
            if !digits.iter().all(u8::is_ascii_digit) {
                return Err(NameError::BadEscape);
            }
            let v = digits.iter().fold(0u32, |acc, d| {
                acc.saturating_mul(10)
                    .saturating_add(u32::from(d.saturating_sub(b'0')))
            });
            let b = u8::try_from(v).map_err(|_| NameError::BadEscape)?;
            Ok((b, 3))
        }
        Some(&c) => Ok((c, 1)),
        None => Err(NameError::BadEscape),
    }
}

/// Iterator over label bodies.
#[derive(Debug, Clone)]
pub struct Labels<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let (&len, tail) = self.rest.split_first()?;
        if len == 0 {
            return None;
        }
        let body = tail.get(..usize::from(len))?;
        self.rest = tail.get(usize::from(len)..)?;
        Some(body)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        eq_ignore_ascii_case(self.as_wire(), other.as_wire())
    }
}
impl Eq for Name {}

impl Hash for Name {
    /// The lower-cased wire form in one write: hashers cost per call, and
    /// one call per octet made hashing a name several times dearer than the
    /// lookup it served. The wire form ends at its root label, so names
    /// hashed beside other fields stay apart without a length.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let wire = self.as_wire();
        let mut lower = [0u8; MAX_NAME_LEN];
        let Some(out) = lower.get_mut(..wire.len()) else {
            return;
        };
        for (o, b) in out.iter_mut().zip(wire) {
            *o = b.to_ascii_lowercase();
        }
        state.write(out);
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.canonical_cmp(other)
    }
}

/// Writes a label's bytes in presentation form, escaping what the master-file
/// syntax gives meaning to and everything unprintable (RFC 4343 §2.1).
pub fn write_label_escaped(f: &mut impl fmt::Write, label: &[u8]) -> fmt::Result {
    // Runs of plain characters go out in one write: a zone printer writes
    // millions of names, nearly all plain.
    let mut plain_from = 0usize;
    for (i, &b) in label.iter().enumerate() {
        let special = matches!(b, b'.' | b'\\' | b'"' | b'(' | b')' | b';' | b'@' | b'$');
        if !special && (0x21..=0x7e).contains(&b) {
            continue;
        }
        write_ascii(f, label.get(plain_from..i).unwrap_or_default())?;
        plain_from = i.saturating_add(1);
        if special {
            f.write_char('\\')?;
            f.write_char(char::from(b))?;
        } else {
            write!(f, "\\{b:03}")?;
        }
    }
    write_ascii(f, label.get(plain_from..).unwrap_or_default())
}

/// Writes octets known to be printable ASCII.
fn write_ascii(f: &mut impl fmt::Write, text: &[u8]) -> fmt::Result {
    match core::str::from_utf8(text) {
        Ok(text) if !text.is_empty() => f.write_str(text),
        _ => Ok(()),
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for l in self.labels() {
            write_label_escaped(f, l)?;
            f.write_str(".")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

impl FromStr for Name {
    type Err = NameError;
    /// Parses a name; text without a trailing dot is taken as absolute.
    fn from_str(s: &str) -> Result<Name, NameError> {
        Name::from_presentation(s.as_bytes(), Some(&Name::root()))
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::root()
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    /// `Name::from_presentation` as it was before it wrote in place: the
    /// in-place reader must give the same name, or the same error, for any text.
    fn reference_from_presentation(text: &[u8], origin: Option<&Name>) -> Result<Name, NameError> {
        if text == b"." {
            return Ok(Name::root());
        }
        if text.is_empty() {
            return Err(NameError::EmptyLabel);
        }
        let mut name = Name {
            len: 0,
            buf: [0; MAX_NAME_LEN],
        };
        let mut label = [0u8; MAX_LABEL_LEN];
        let mut llen = 0usize;
        let mut absolute = false;
        let mut i = 0usize;
        while let Some(&c) = text.get(i) {
            i = i.saturating_add(1);
            let byte = match c {
                b'.' => {
                    if llen == 0 {
                        return Err(NameError::EmptyLabel);
                    }
                    name.push_label_unchecked_len(label.get(..llen).unwrap_or(&[]))?;
                    llen = 0;
                    if i == text.len() {
                        absolute = true;
                    }
                    continue;
                }
                b'\\' => {
                    let (b, used) = parse_escape(text.get(i..).unwrap_or(&[]))?;
                    i = i.saturating_add(used);
                    b
                }
                c => c,
            };
            let slot = label.get_mut(llen).ok_or(NameError::LabelTooLong)?;
            *slot = byte;
            llen = llen.saturating_add(1);
        }
        if llen > 0 {
            name.push_label_unchecked_len(label.get(..llen).unwrap_or(&[]))?;
        }
        if absolute {
            name.push_label_unchecked_len(&[])?;
            return Ok(name);
        }
        let origin = origin.ok_or(NameError::Relative)?;
        name.push_raw(origin.as_wire())?;
        Ok(name)
    }

    proptest::proptest! {
        #[test]
        fn assign_presentation_reads_as_the_reference_did(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'B', b'.', b'\\', b'1', b'2', b'9', b'-', b'*', b' ']),
                0..300,
            ),
            relative in proptest::bool::ANY,
            dirty in proptest::bool::ANY,
        ) {
            let origin = Name::from_presentation(b"example.org.", None).unwrap();
            let origin = relative.then_some(&origin);
            let mut name = if dirty {
                Name::from_presentation(&[[b'x'; 60].as_slice(); 3].join(&b'.'), Some(&Name::root())).unwrap()
            } else {
                Name::root()
            };
            let ours = name.assign_presentation(&text, origin).map(|()| name.clone());
            let reference = reference_from_presentation(&text, origin);
            proptest::prop_assert_eq!(ours, reference);
            if name.as_wire() != b"\0" {
                proptest::prop_assert_eq!(Name::from_wire(name.as_wire()), Ok(name));
            }
        }

        #[test]
        fn long_labels_and_names_fail_as_the_reference_did(
            labels in proptest::collection::vec(1usize..70, 1..8),
            absolute in proptest::bool::ANY,
        ) {
            let mut text = Vec::new();
            for (i, n) in labels.iter().enumerate() {
                if i > 0 {
                    text.push(b'.');
                }
                text.extend(std::iter::repeat_n(b'a', *n));
            }
            if absolute {
                text.push(b'.');
            }
            let origin = Name::from_presentation(&[b'o'; 60], Some(&Name::root())).unwrap();
            let ours = Name::from_presentation(&text, Some(&origin));
            proptest::prop_assert_eq!(ours, reference_from_presentation(&text, Some(&origin)));
        }
    }

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn presentation_round_trips_with_escapes() {
        for s in [
            ".",
            "example.com.",
            "a\\.b.example.",
            "\\000\\255x.",
            "sp\\032ace.",
            "\\@\\$\\;.",
        ] {
            assert_eq!(n(s).to_string(), s, "{s}");
        }
        assert_eq!(n("\\065bc.").to_string(), "Abc.");
        assert_eq!(n("www.Example.COM").to_string(), "www.Example.COM.");
    }

    #[test]
    fn relative_names_need_an_origin() {
        let origin = n("example.com.");
        assert_eq!(
            Name::from_presentation(b"www", Some(&origin)).unwrap(),
            n("www.example.com.")
        );
        assert_eq!(
            Name::from_presentation(b"www", None),
            Err(NameError::Relative)
        );
    }

    #[test]
    fn length_limits_are_enforced() {
        let l63 = "a".repeat(63);
        let l64 = "a".repeat(64);
        assert!(Name::from_presentation(format!("{l63}.").as_bytes(), None).is_ok());
        assert_eq!(
            Name::from_presentation(format!("{l64}.").as_bytes(), None),
            Err(NameError::LabelTooLong)
        );
        // 4 * 63-octet labels = 256 octets with length bytes + root: too long.
        let long = format!("{l63}.{l63}.{l63}.{l63}.");
        assert_eq!(
            Name::from_presentation(long.as_bytes(), None),
            Err(NameError::NameTooLong)
        );
        let l61 = "a".repeat(61);
        let max = format!("{l63}.{l63}.{l63}.{l61}."); // 64*3 + 62 + 1 = 255
        assert_eq!(
            Name::from_presentation(max.as_bytes(), None)
                .unwrap()
                .wire_len(),
            255
        );
        assert_eq!(
            Name::from_presentation(b"a..b.", None),
            Err(NameError::EmptyLabel)
        );
        assert_eq!(
            Name::from_presentation(b"\\256.", None),
            Err(NameError::BadEscape)
        );
        assert_eq!(
            Name::from_presentation(b"\\25", None),
            Err(NameError::BadEscape)
        );
    }

    #[test]
    fn comparison_ignores_case_but_storage_keeps_it() {
        let a = n("WWW.example.com.");
        let b = n("www.EXAMPLE.com.");
        assert_eq!(a, b);
        assert!(!a.eq_exact(&b));
        assert_eq!(a.as_wire()[1], b'W');
        use std::collections::hash_map::DefaultHasher;
        let h = |x: &Name| {
            let mut s = DefaultHasher::new();
            x.hash(&mut s);
            s.finish()
        };
        assert_eq!(h(&a), h(&b));
        assert_ne!(h(&a), h(&n("www.example.org.")));
        assert_ne!(h(&n("a.b.")), h(&n("ab.")));
    }

    #[test]
    fn canonical_order_matches_rfc4034_example() {
        // RFC 4034 §6.1.
        let ordered = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let names: Vec<Name> = ordered.iter().map(|s| n(s)).collect();
        for w in names.windows(2) {
            assert_eq!(w[0].cmp(&w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert!(
                w[0].canonical_sort_key() < w[1].canonical_sort_key(),
                "{} < {}",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn sort_keys_order_like_canonical_cmp() {
        let names: Vec<Name> = [
            "a.", "ab.", "a.b.", "b.a.", "\\000.a.", "a\\000.", "A.b.", "x.y.z.", "y.z.", ".",
            "aa.a.",
        ]
        .iter()
        .map(|s| n(s))
        .collect();
        for a in &names {
            for b in &names {
                assert_eq!(
                    a.canonical_sort_key().cmp(&b.canonical_sort_key()),
                    a.canonical_cmp(b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn ancestry_is_label_aligned() {
        assert!(n("www.example.com.").ends_with(&n("example.com.")));
        assert!(n("www.example.com.").ends_with(&Name::root()));
        assert!(!n("wwwexample.com.").ends_with(&n("example.com.")));
        assert!(!n("xample.com.").ends_with(&n("example.com.")));
        assert!(n("example.com.").ends_with(&n("EXAMPLE.com.")));
        assert!(!n("example.com.").is_below(&n("example.com.")));
        assert_eq!(n("a.b.c.").parent().unwrap(), n("b.c."));
        assert_eq!(n("a.b.c.").suffix(1).unwrap(), n("c."));
        assert!(Name::root().parent().is_none());
        assert!(n("*.x.").is_wildcard());
        assert_eq!(
            n("a.b.old.")
                .replace_suffix(&n("old."), &n("new.example."))
                .unwrap()
                .unwrap(),
            n("a.b.new.example.")
        );
    }

    #[test]
    fn compression_pointers_must_point_backwards() {
        // A header, "example.com." at 12, then "www" + pointer to 12 at 25.
        let mut msg = vec![0u8; 12];
        msg.extend_from_slice(&[
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0,
        ]);
        msg.extend_from_slice(&[3, b'w', b'w', b'w', 0xc0, 12]);
        let mut r = Reader::at(&msg, 25);
        assert_eq!(Name::read(&mut r).unwrap(), n("www.example.com."));
        assert_eq!(r.position(), msg.len());
        // A pointer into the header, where no name lives.
        let mut into_header = msg.clone();
        into_header[12..14].copy_from_slice(&[0xc0, 2]);
        assert!(matches!(
            Name::read(&mut Reader::at(&into_header, 12)),
            Err(WireError::BadName {
                reason: NameError::BadPointer,
                ..
            })
        ));

        // A pointer to itself.
        let looped = [0xc0u8, 0];
        assert!(matches!(
            Name::read(&mut Reader::new(&looped)),
            Err(WireError::BadName {
                reason: NameError::BadPointer,
                ..
            })
        ));
        // A forward pointer.
        let fwd = [0xc0u8, 2, 0];
        assert!(Name::read(&mut Reader::new(&fwd)).is_err());
        // Two pointers pointing at each other.
        let pair = [1u8, b'a', 0xc0, 4, 0xc0, 0];
        assert!(Name::read(&mut Reader::at(&pair, 4)).is_err());
        // Reserved label types 0x40 / 0x80.
        assert!(Name::read(&mut Reader::new(&[0x40, 0])).is_err());
        // Truncated.
        assert!(Name::read(&mut Reader::new(&[3, b'a'])).is_err());
    }

    #[test]
    fn compressed_names_cannot_exceed_255_octets() {
        // Chain of pointers each adding a 63-octet label.
        let mut msg = vec![0u8]; // root at 0
        let mut prev = 0u16;
        for _ in 0..5 {
            let here = msg.len() as u16;
            msg.push(63);
            msg.extend(std::iter::repeat_n(b'a', 63));
            msg.extend_from_slice(&(0xc000 | prev).to_be_bytes());
            prev = here;
        }
        let r = Name::read(&mut Reader::at(&msg, prev as usize));
        assert!(matches!(
            r,
            Err(WireError::BadName {
                reason: NameError::NameTooLong,
                ..
            })
        ));
    }

    #[test]
    fn a_label_both_truncated_and_too_long_is_reported_as_truncated() {
        // Three 63-octet labels (192 octets) then a fourth that would pass 255
        // octets and whose length octet promises more than the data holds: the
        // walk reports what it meets first, the missing bytes, for copying and
        // checking alike.
        let mut msg = Vec::new();
        for _ in 0..3 {
            msg.push(63);
            msg.extend(std::iter::repeat_n(b'a', 63));
        }
        msg.extend_from_slice(&[63, b'b']);
        let want = Err(WireError::BadName {
            at: 192,
            reason: NameError::Truncated,
        });
        assert_eq!(walk_compressed(&msg, 0, |_| Ok(())), want);
        assert_eq!(
            Name::read(&mut Reader::new(&msg)).map(|_| ()),
            want.map(|_| ())
        );
    }

    #[test]
    fn walk_reports_end_after_first_pointer_and_full_length() {
        let mut msg = vec![0u8; 12];
        msg.extend_from_slice(&[1u8, b'a', 0, 1, b'b', 0xc0, 12, 0xff]);
        let w = walk_compressed(&msg, 15, |_| Ok(())).unwrap();
        assert_eq!(
            w,
            Walked {
                end: 19,
                wire_len: 5
            }
        );
    }

    #[test]
    fn from_wire_rejects_pointers_and_trailing_bytes() {
        assert!(Name::from_wire(&[0]).unwrap().is_root());
        assert_eq!(Name::from_wire(&[0xc0, 0]), Err(NameError::BadPointer));
        assert_eq!(Name::from_wire(&[0, 0]), Err(NameError::TrailingData));
        assert_eq!(Name::from_wire(&[1, b'a']), Err(NameError::Truncated));
    }
}
