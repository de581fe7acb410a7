//! Base64 (RFC 4648 §4) and base32hex (RFC 4648 §7) as DNS presentation
//! formats use them, for the crates that read and write key files and NSEC3
//! owner names.

use crate::rdata::text;

/// Padded base64.
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3).saturating_mul(4));
    // Writing into a String cannot fail.
    let _ = text::write_base64(&mut out, data);
    out
}

/// Padded base64, whitespace not allowed; None when malformed.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    text::base64_decode(text)
}

/// Unpadded lowercase base32hex, as NSEC3 owner labels are written.
pub fn base32hex_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().saturating_mul(8).div_ceil(5));
    let _ = text::write_base32hex(&mut out, data);
    out
}

/// Unpadded base32hex in either case; None when malformed.
pub fn base32hex_decode(text: &str) -> Option<Vec<u8>> {
    text::base32hex_decode(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        assert_eq!(base64_decode("Zm9vYg==").unwrap(), b"foob");
        assert_eq!(base32hex_encode(b"foobar"), "cpnmuoj1e8");
        assert_eq!(base32hex_decode("CPNMUOJ1E8").unwrap(), b"foobar");
        assert!(base64_decode("Zm9v!").is_none());
    }
}
