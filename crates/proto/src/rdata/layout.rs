//! Where the domain names sit inside record data, for the types that embed
//! them, and the two rules built on that: which names a writer may compress
//! (RFC 3597 §4) and which are lowercased in canonical form (RFC 4034 §6.2 as
//! amended by RFC 6840 §5.1). One table, so message compression, RRset
//! ordering and DNSSEC signing cannot disagree about a type's layout.

use std::borrow::Cow;

use crate::name::{MAX_LABEL_LEN, MAX_NAME_LEN};
use crate::rtype::Rtype;

/// One field of an rdata layout, as far as finding its names goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// An uncompressed wire-format name.
    Name,
    /// A fixed number of octets.
    Fixed(usize),
    /// A length-prefixed character-string (RFC 1035 §3.3).
    CharString,
}

/// A type's wire layout: `parts` in order, then either the end of the rdata
/// (`complete`) or data with no names in it (type bitmaps, signatures).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub parts: &'static [Part],
    pub complete: bool,
}

impl Layout {
    /// Whether `rdata` is exactly this layout: every part present and valid,
    /// and nothing after the last one.
    pub(crate) fn fits_exactly(&self, rdata: &[u8]) -> bool {
        let mut end = Some(0usize);
        for extent in split(self.parts, rdata) {
            end = extent.map(|(_, _, e)| e);
            if end.is_none() {
                return false;
            }
        }
        self.complete && end == Some(rdata.len())
    }
}

/// The layout of `rtype`'s rdata, for the types with embedded names that the
/// rules below mention; `None` for every other type.
pub(crate) fn layout(rtype: Rtype) -> Option<Layout> {
    use Part::{CharString as S, Fixed as F, Name as N};
    let (parts, complete): (&'static [Part], bool) = match rtype {
        Rtype::NS
        | Rtype::MD
        | Rtype::MF
        | Rtype::CNAME
        | Rtype::MB
        | Rtype::MG
        | Rtype::MR
        | Rtype::PTR
        | Rtype::DNAME => (&[N], true),
        Rtype::MINFO | Rtype::RP => (&[N, N], true),
        // SOA: MNAME, RNAME, then serial, refresh, retry, expire, minimum.
        Rtype::SOA => (&[N, N, F(20)], true),
        Rtype::MX | Rtype::AFSDB | Rtype::RT | Rtype::KX => (&[F(2), N], true),
        Rtype::PX => (&[F(2), N, N], true),
        // Priority, weight, port, target (RFC 2782).
        Rtype::SRV => (&[F(6), N], true),
        // Order, preference, flags, services, regexp, replacement (RFC 3403 §4.1).
        Rtype::NAPTR => (&[F(4), S, S, S, N], true),
        // Type covered through key tag, signer, then the signature (RFC 4034 §3.1).
        Rtype::RRSIG | Rtype::SIG => (&[F(18), N], false),
        // Next name, then a type bitmap (RFC 2535 §5.2, RFC 4034 §4.1).
        Rtype::NXT | Rtype::NSEC => (&[N], false),
        _ => return None,
    };
    Some(Layout { parts, complete })
}

/// RFC 3597 §4: only the names in the rdata of RFC 1035's own types may be
/// compressed when writing; any newer type's names go out as they are.
pub(crate) fn compressible(rtype: Rtype) -> bool {
    matches!(
        rtype,
        Rtype::NS
            | Rtype::MD
            | Rtype::MF
            | Rtype::CNAME
            | Rtype::SOA
            | Rtype::MB
            | Rtype::MG
            | Rtype::MR
            | Rtype::PTR
            | Rtype::MINFO
            | Rtype::MX
    )
}

/// RFC 4034 §6.2 item 3, as corrected by RFC 6840 §5.1 (not NSEC, and not
/// HINFO, which holds no names): the types whose embedded names are
/// lowercased in canonical form.
pub(crate) fn lowercased_in_canonical(rtype: Rtype) -> bool {
    matches!(
        rtype,
        Rtype::NS
            | Rtype::MD
            | Rtype::MF
            | Rtype::CNAME
            | Rtype::SOA
            | Rtype::MB
            | Rtype::MG
            | Rtype::MR
            | Rtype::PTR
            | Rtype::MINFO
            | Rtype::MX
            | Rtype::RP
            | Rtype::AFSDB
            | Rtype::RT
            | Rtype::SIG
            | Rtype::PX
            | Rtype::NXT
            | Rtype::NAPTR
            | Rtype::KX
            | Rtype::SRV
            | Rtype::DNAME
            | Rtype::RRSIG
    )
}

/// One piece of record data as a message writer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdataPiece<'a> {
    /// An uncompressed wire name the writer may compress (RFC 3597 §4).
    Name(&'a [u8]),
    /// Octets written as they are.
    Octets(&'a [u8]),
}

/// `rdata` of `rtype` cut at the names a writer may compress: for writers
/// with their own compression table (zone transfers). `None` when the type's
/// names must not be compressed, or the rdata does not fit its layout: the
/// writer then copies it whole.
pub fn compressible_pieces(
    rtype: Rtype,
    rdata: &[u8],
) -> Option<impl Iterator<Item = RdataPiece<'_>> + '_> {
    let layout = layout(rtype).filter(|l| compressible(rtype) && l.fits_exactly(rdata))?;
    Some(
        split(layout.parts, rdata)
            .flatten()
            .map(move |(part, start, end)| {
                let bytes = rdata.get(start..end).unwrap_or(&[]);
                if part == Part::Name {
                    RdataPiece::Name(bytes)
                } else {
                    RdataPiece::Octets(bytes)
                }
            }),
    )
}

/// Length of the uncompressed wire name at the start of `bytes`, if it is a
/// valid one that fits in `bytes`.
pub(crate) fn uncompressed_name_len(bytes: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    loop {
        let len = usize::from(*bytes.get(pos)?);
        if len > MAX_LABEL_LEN {
            return None;
        }
        pos = pos.checked_add(len)?.checked_add(1)?;
        if pos > MAX_NAME_LEN || pos > bytes.len() {
            return None;
        }
        if len == 0 {
            return Some(pos);
        }
    }
}

/// Splits `rdata` along `parts`: the extent of each part in order, or `None`
/// if the rdata is too short or a name in it is not a valid uncompressed name.
pub(crate) fn split<'a>(
    parts: &'a [Part],
    rdata: &'a [u8],
) -> impl Iterator<Item = Option<(Part, usize, usize)>> + 'a {
    let mut pos = Some(0usize);
    parts.iter().map(move |&part| {
        let start = pos?;
        let rest = rdata.get(start..)?;
        let len = match part {
            Part::Name => uncompressed_name_len(rest),
            Part::Fixed(n) => Some(n),
            Part::CharString => rest.first().and_then(|l| usize::from(*l).checked_add(1)),
        };
        let end = len
            .and_then(|l| start.checked_add(l))
            .filter(|e| *e <= rdata.len());
        pos = end;
        end.map(|e| (part, start, e))
    })
}

/// The canonical wire form of `rtype` record data given in uncompressed wire
/// form (RFC 4034 §6.2 as amended by RFC 6840 §5.1): the embedded names of the
/// listed types lowercased, everything else as it is. Borrowed when nothing
/// changes; malformed rdata is returned as it is, so it still sorts and
/// compares consistently.
pub fn canonical_wire(rtype: Rtype, rdata: &[u8]) -> Cow<'_, [u8]> {
    let Some(layout) = layout(rtype).filter(|_| lowercased_in_canonical(rtype)) else {
        return Cow::Borrowed(rdata);
    };
    // Only the parts up to the last name matter: what follows is copied as
    // is, and rdata cut short after its last name is still lowercased.
    let upto = layout
        .parts
        .iter()
        .rposition(|p| *p == Part::Name)
        .map_or(0, |i| i.saturating_add(1));
    let parts = layout.parts.get(..upto).unwrap_or(&[]);
    let mut names = [(0usize, 0usize); 2];
    let mut count = 0usize;
    for extent in split(parts, rdata) {
        let Some((part, start, end)) = extent else {
            return Cow::Borrowed(rdata);
        };
        if part == Part::Name {
            if let Some(slot) = names.get_mut(count) {
                *slot = (start, end);
                count = count.saturating_add(1);
            }
        }
    }
    let names = names.get(..count).unwrap_or(&[]);
    let has_upper = |&(s, e): &(usize, usize)| {
        rdata
            .get(s..e)
            .is_some_and(|b| b.iter().any(u8::is_ascii_uppercase))
    };
    if !names.iter().any(has_upper) {
        return Cow::Borrowed(rdata);
    }
    let mut out = rdata.to_vec();
    for &(s, e) in names {
        // Length octets are at most 63, below 'A', so lowercasing the whole
        // name touches only label bytes.
        if let Some(b) = out.get_mut(s..e) {
            b.make_ascii_lowercase();
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    const ALL: core::ops::RangeInclusive<u16> = 0..=300;

    #[test]
    fn every_type_with_a_rule_has_a_layout_with_a_name() {
        for t in ALL.map(Rtype) {
            if compressible(t) || lowercased_in_canonical(t) {
                let l = layout(t).unwrap_or_else(|| panic!("{t} has no layout"));
                let names = l.parts.iter().filter(|p| **p == Part::Name).count();
                // `canonical_wire` keeps the extents of at most two names.
                assert!((1..=2).contains(&names), "{t}");
            }
        }
    }

    #[test]
    fn compressible_types_are_a_subset_of_lowercased_types() {
        for t in ALL.map(Rtype) {
            assert!(!compressible(t) || lowercased_in_canonical(t), "{t}");
        }
    }

    #[test]
    fn compressible_types_have_complete_layouts() {
        // The writer must know where the rdata ends to re-emit it part by part.
        for t in ALL.map(Rtype).filter(|t| compressible(*t)) {
            assert!(layout(t).unwrap().complete, "{t}");
        }
    }

    #[test]
    fn nsec_next_name_keeps_its_case() {
        let nsec = b"\x01A\x00\x00\x01\x40";
        assert_eq!(canonical_wire(Rtype::NSEC, nsec), Cow::Borrowed(&nsec[..]));
    }

    #[test]
    fn rrsig_signer_is_lowercased_and_signature_kept() {
        let mut rrsig = vec![0u8; 18];
        rrsig.extend_from_slice(b"\x01A\x00SIG");
        let canon = canonical_wire(Rtype::RRSIG, &rrsig);
        assert_eq!(&canon[18..], b"\x01a\x00SIG");
    }
}
