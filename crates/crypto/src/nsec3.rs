//! The NSEC3 owner hash (RFC 5155 §5): SHA-1 over the canonical wire name and
//! the salt, iterated. Computed on the query path for every NSEC3 denial, so it
//! allocates nothing.

use aws_lc_rs::digest;

/// Octets in an NSEC3 SHA-1 hash (RFC 5155 §11).
pub const NSEC3_HASH_LEN: usize = 20;

/// One NSEC3 hash value.
pub type Nsec3Hash = [u8; NSEC3_HASH_LEN];

/// RFC 5155 §5: IH(salt, x, 0) = H(x || salt); IH(salt, x, k) = H(IH(salt, x, k-1) || salt).
/// `canonical_name` must already be in canonical form (lowercase, uncompressed).
pub fn nsec3_hash(canonical_name: &[u8], salt: &[u8], iterations: u16) -> Nsec3Hash {
    let mut hash = sha1_of(canonical_name, salt);
    for _ in 0..iterations {
        hash = sha1_of(&hash, salt);
    }
    hash
}

fn sha1_of(data: &[u8], salt: &[u8]) -> Nsec3Hash {
    let mut ctx = digest::Context::new(&digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(data);
    ctx.update(salt);
    let digest = ctx.finish();
    let mut out = [0u8; NSEC3_HASH_LEN];
    out.copy_from_slice(digest.as_ref());
    out
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

    fn wire(name: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for label in name.trim_end_matches('.').split('.') {
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
        out.push(0);
        out
    }

    fn base32hex(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuv";
        let mut out = String::new();
        let mut buffer = 0u32;
        let mut bits = 0;
        for &b in bytes {
            buffer = (buffer << 8) | u32::from(b);
            bits += 8;
            while bits >= 5 {
                bits -= 5;
                out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
            }
        }
        out
    }

    // RFC 5155 Appendix A: salt aabbccdd, 12 iterations.
    #[test]
    fn rfc5155_appendix_a_hashes() {
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        let cases = [
            ("example", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ns1.example", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
            ("*.w.example", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("x.y.w.example", "2vptu5timamqttgl4luu9kg21e0aor3s"),
        ];
        for (name, expected) in cases {
            assert_eq!(
                base32hex(&nsec3_hash(&wire(name), &salt, 12)),
                expected,
                "{name}"
            );
        }
    }
}
