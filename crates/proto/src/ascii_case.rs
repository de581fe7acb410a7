//! Comparing octet strings with ASCII case folded (RFC 4343), eight octets
//! at a time. Names are compared this way for every record of every
//! response (compression) and for every name equality; the standard
//! library's `eq_ignore_ascii_case` goes one octet at a time, with a branch
//! per octet.

/// One in every octet.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every octet.
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// Added to an octet below 0x80, sets its high bit when it is at least `A`.
const TO_A: u64 = 0x80 - b'A' as u64;
/// Added to an octet below 0x80, sets its high bit when it is past `Z`.
const PAST_Z: u64 = 0x80 - (b'Z' as u64 + 1);

/// `word` with every octet from `A` to `Z` turned to lowercase; others as
/// they were (octets ≥ 0x80 included: they are not ASCII).
fn fold(word: u64) -> u64 {
    let low7 = word & !HIGHS;
    // Each sum keeps within its octet (at most 0x7f + 0x3f): the high bit of
    // an octet says whether it was at least `A`, or more than `Z`.
    let at_least_a = low7.wrapping_add(TO_A.wrapping_mul(ONES));
    let past_z = low7.wrapping_add(PAST_Z.wrapping_mul(ONES));
    let capital = at_least_a & !past_z & !word & HIGHS;
    // 0x80 >> 2 is 0x20, the case bit.
    word | (capital >> 2)
}

/// Up to eight octets of `s` as one word. A shorter string is read with
/// overlapping loads (both strings at the same positions, so equal strings
/// give equal words), which covers every octet.
fn short_word(s: &[u8]) -> u64 {
    if let (Some(head), Some(tail)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) {
        return u64::from(u32::from_le_bytes(*head)) | (u64::from(u32::from_le_bytes(*tail)) << 32);
    }
    let at = |i: usize| u64::from(s.get(i).copied().unwrap_or(0));
    let len = s.len();
    if len == 0 {
        return 0;
    }
    at(0) | (at(len / 2) << 8) | (at(len.saturating_sub(1)) << 16)
}

/// Whether `a` and `b` are equal with ASCII case folded: the same answer as
/// `a.eq_ignore_ascii_case(b)`.
pub(crate) fn eq_ignore_ascii_case(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (Some(last_a), Some(last_b)) = (a.last_chunk::<8>(), b.last_chunk::<8>()) else {
        return fold(short_word(a)) == fold(short_word(b));
    };
    let whole = a.chunks_exact(8).zip(b.chunks_exact(8)).all(|(x, y)| {
        match (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) {
            (Ok(x), Ok(y)) => fold(u64::from_le_bytes(x)) == fold(u64::from_le_bytes(y)),
            _ => false,
        }
    });
    // The last eight octets, overlapping what was already compared.
    whole && fold(u64::from_le_bytes(*last_a)) == fold(u64::from_le_bytes(*last_b))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    #[test]
    fn every_octet_folds_as_std_does() {
        for b in 0..=255u8 {
            let word = u64::from(b) * ONES;
            assert_eq!(
                fold(word),
                u64::from(b.to_ascii_lowercase()) * ONES,
                "{b:#x}"
            );
        }
    }

    #[test]
    fn every_pair_of_octets_compares_as_std_does_at_every_length() {
        for len in 1..20usize {
            for pos in [0, len / 2, len - 1] {
                for x in 0..=255u8 {
                    for y in [x, x ^ 0x20, x.wrapping_add(1), b'a', b'A'] {
                        let mut a = vec![b'q'; len];
                        let mut b = vec![b'Q'; len];
                        a[pos] = x;
                        b[pos] = y;
                        assert_eq!(
                            eq_ignore_ascii_case(&a, &b),
                            a.eq_ignore_ascii_case(&b),
                            "len {len} at {pos}: {x:#x} {y:#x}"
                        );
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// Strings and their case-flipped copies, sometimes with one octet changed.
        #[test]
        fn strings_compare_as_std_does(
            a in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
            flips in proptest::collection::vec(proptest::prelude::any::<bool>(), 80),
            change in proptest::prelude::any::<Option<(usize, u8)>>(),
        ) {
            let mut b: Vec<u8> = a
                .iter()
                .zip(&flips)
                .map(|(&x, &flip)| if flip && x.is_ascii_alphabetic() { x ^ 0x20 } else { x })
                .collect();
            if let (Some((at, byte)), false) = (change, b.is_empty()) {
                let at = at % b.len();
                b[at] = byte;
            }
            proptest::prop_assert_eq!(eq_ignore_ascii_case(&a, &b), a.eq_ignore_ascii_case(&b));
        }
    }

    #[test]
    fn lengths_must_agree() {
        assert!(eq_ignore_ascii_case(b"", b""));
        assert!(!eq_ignore_ascii_case(b"a", b""));
        assert!(!eq_ignore_ascii_case(b"example", b"example."));
    }
}
