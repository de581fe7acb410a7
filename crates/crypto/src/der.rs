//! Just enough DER reading to take an RSA private key apart into the integers
//! BIND's key file lists (PKCS#8 PrivateKeyInfo wrapping a PKCS#1
//! RSAPrivateKey, RFC 5208 and RFC 8017 §A.1.2). Encoding, not cryptography.

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;

/// One TLV: its tag, its contents, and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 {
            return None;
        }
        let (len_bytes, rest) = rest.split_at_checked(octets)?;
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    let (contents, after) = rest.split_at_checked(len)?;
    Some((tag, contents, after))
}

fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, contents, after) = element(input)?;
    (found == tag).then_some((contents, after))
}

/// An unsigned INTEGER's magnitude without the leading zero DER may add.
pub(crate) fn unsigned(contents: &[u8]) -> &[u8] {
    let start = contents
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(contents.len());
    contents.get(start..).unwrap_or_default()
}

/// The contents of a DER OCTET STRING that is the whole of `input`.
pub(crate) fn octet_string(input: &[u8]) -> Option<&[u8]> {
    let (contents, after) = expect(input, OCTET_STRING)?;
    after.is_empty().then_some(contents)
}

/// The nine integers of an RSAPrivateKey after its version: n, e, d, p, q,
/// dP, dQ, qInv — from a PKCS#8 document.
pub(crate) fn rsa_private_integers(pkcs8: &[u8]) -> Option<[Vec<u8>; 8]> {
    let (info, _) = expect(pkcs8, SEQUENCE)?;
    let (_version, rest) = expect(info, INTEGER)?;
    let (_algorithm, rest) = expect(rest, SEQUENCE)?;
    let (rsa_key, _) = expect(rest, OCTET_STRING)?;
    let (mut fields, _) = expect(rsa_key, SEQUENCE)?;
    let (_version, rest) = expect(fields, INTEGER)?;
    fields = rest;
    let mut out: [Vec<u8>; 8] = Default::default();
    for slot in out.iter_mut() {
        let (value, rest) = expect(fields, INTEGER)?;
        *slot = unsigned(value).to_vec();
        fields = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::cast_possible_truncation
    )]
    use super::*;

    #[test]
    fn long_form_lengths_and_truncation() {
        let mut long = vec![OCTET_STRING, 0x81, 200];
        long.extend(std::iter::repeat_n(7u8, 200));
        let (tag, contents, rest) = element(&long).unwrap();
        assert_eq!((tag, contents.len(), rest.len()), (OCTET_STRING, 200, 0));
        assert!(element(&long[..100]).is_none());
        assert!(element(&[INTEGER, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(element(&[]).is_none());
    }

    #[test]
    fn leading_zeros_are_dropped() {
        assert_eq!(unsigned(&[0, 0x80, 1]), &[0x80, 1]);
        assert_eq!(unsigned(&[0]), &[] as &[u8]);
    }
}
