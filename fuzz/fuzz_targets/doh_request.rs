//! DNS over HTTPS requests (RFC 8484): `doh::read_head` on any method,
//! request target and content type, and `base64url_decode` against a
//! re-encoding model.
//!
//! Input: byte 0 picks the method and whether a content type is given,
//! byte 1 the query limit; the rest, split at the first NUL, is the request
//! target (lossily as UTF-8) and the content type. Nothing may panic; a GET
//! that is accepted carries exactly what its `dns` parameter decodes to, never
//! more than the limit; a POST is accepted only with the DNS media type; and
//! every decoded parameter re-encodes to the text it came from.
#![no_main]

use bulwark_net::doh::{base64url_decode, read_head, Method, Query, DEFAULT_PATH};
use libfuzzer_sys::fuzz_target;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding: the model the decoder is checked against.
fn encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let [mode, limit, rest @ ..] = data else {
        return;
    };
    let method = match mode % 3 {
        0 => Method::Get,
        1 => Method::Post,
        _ => Method::Other,
    };
    let max = usize::from(*limit) * 64;
    let (target, content_type) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let content_type = content_type.filter(|_| mode & 0x80 != 0);
    let target = String::from_utf8_lossy(target);
    match read_head(method, &target, content_type, DEFAULT_PATH, max) {
        Ok(Query::Inline(q)) => {
            assert_eq!(method, Method::Get);
            assert!(!q.is_empty());
            assert!(q.len() <= max + 2, "{} octets past a limit of {max}", q.len());
            let param = target
                .split_once('?')
                .map(|(_, qs)| qs)
                .unwrap_or_default()
                .split('&')
                .find_map(|p| p.strip_prefix("dns="))
                .expect("an accepted GET has a dns parameter");
            assert_eq!(encode(&q), param.trim_end_matches('='));
        }
        Ok(Query::Body) => {
            assert_eq!(method, Method::Post);
            let ct = content_type.expect("an accepted POST names its type");
            let essence = ct.split(|&b| b == b';').next().unwrap_or_default();
            assert!(essence
                .trim_ascii()
                .eq_ignore_ascii_case(b"application/dns-message"));
        }
        Err(r) => assert!((400..500).contains(&r.status())),
    }
    // Whatever the decoder accepts re-encodes to the same text.
    let text = String::from_utf8_lossy(rest);
    if let Some(decoded) = base64url_decode(&text) {
        assert_eq!(encode(&decoded), text.trim_end_matches('='));
    }
});
