//! DNS over HTTPS requests (RFC 8484) read without I/O: from the method, the
//! request target and the content type, what DNS query a request carries, or
//! the HTTP status that refuses it. The HTTP itself is hyper's; this is the
//! part a fuzzer drives.

/// RFC 8484 §6: the media type of a DNS message.
pub const MEDIA_TYPE: &str = "application/dns-message";
/// The path most clients use by default (RFC 8484's examples, kdig, dig).
pub const DEFAULT_PATH: &str = "/dns-query";

/// The HTTP methods RFC 8484 §4.1 defines requests for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Other,
}

/// Why a request carries no query, as the HTTP status to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    #[error("not the DNS query path")]
    NotFound,
    #[error("only GET and POST carry DNS queries")]
    MethodNotAllowed,
    #[error("the body is not application/dns-message")]
    UnsupportedMediaType,
    #[error("the query is larger than the server accepts")]
    TooLarge,
    #[error("no `dns` parameter holding a base64url DNS message")]
    BadQuery,
}

impl Rejection {
    /// The HTTP status code (RFC 9110 §15; RFC 8484 §4.2.1 names 415).
    pub fn status(self) -> u16 {
        match self {
            Rejection::NotFound => 404,
            Rejection::MethodNotAllowed => 405,
            Rejection::UnsupportedMediaType => 415,
            Rejection::TooLarge => 413,
            Rejection::BadQuery => 400,
        }
    }
}

/// What a request's head says of its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// GET: the query, decoded from the `dns` parameter.
    Inline(Vec<u8>),
    /// POST: the query is the body, to be read (at most `max` octets).
    Body,
}

/// Reads a request's head: `target` is the request target (path and query
/// string), `content_type` the Content-Type header of a POST. `path` is the
/// configured DoH path; `max` the largest query accepted.
pub fn read_head(
    method: Method,
    target: &str,
    content_type: Option<&[u8]>,
    path: &str,
    max: usize,
) -> Result<Query, Rejection> {
    let (request_path, query_string) = target.split_once('?').unwrap_or((target, ""));
    if request_path != path {
        return Err(Rejection::NotFound);
    }
    match method {
        Method::Get => {
            let encoded = query_string
                .split('&')
                .find_map(|pair| pair.strip_prefix("dns="))
                .ok_or(Rejection::BadQuery)?;
            // Four characters carry three octets: refuse before decoding.
            if encoded.len().saturating_mul(3).checked_div(4).unwrap_or(0) > max {
                return Err(Rejection::TooLarge);
            }
            let query = base64url_decode(encoded).ok_or(Rejection::BadQuery)?;
            if query.is_empty() {
                return Err(Rejection::BadQuery);
            }
            Ok(Query::Inline(query))
        }
        Method::Post => {
            if !content_type.is_some_and(is_dns_message) {
                return Err(Rejection::UnsupportedMediaType);
            }
            Ok(Query::Body)
        }
        Method::Other => Err(Rejection::MethodNotAllowed),
    }
}

/// A Content-Type of `application/dns-message`, in any case, parameters
/// after a `;` allowed (RFC 9110 §8.3.1).
fn is_dns_message(value: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(MEDIA_TYPE.as_bytes())
}

/// RFC 4648 §5 base64url, without padding as RFC 8484 §4.1 sends it
/// (padding is accepted too). `None` on any other character or a length no
/// encoding has.
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len());
    // The low `bits` bits of `acc` are decoded but not yet written.
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c.wrapping_sub(b'A'),
            b'a'..=b'z' => c.wrapping_sub(b'a').wrapping_add(26),
            b'0'..=b'9' => c.wrapping_sub(b'0').wrapping_add(52),
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = acc.wrapping_shl(6) | u32::from(v);
        bits = bits.wrapping_add(6);
        if bits >= 8 {
            bits = bits.wrapping_sub(8);
            out.push(acc.wrapping_shr(bits).to_be_bytes()[3]);
        }
    }
    // One leftover character (6 bits) encodes nothing; leftover bits must be 0.
    if bits >= 6 || acc & 1u32.wrapping_shl(bits).wrapping_sub(1) != 0 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    const MAX: usize = 16384;

    #[test]
    fn get_carries_the_query_base64url_encoded_without_padding() {
        // RFC 8484 §4.1.1's example: www.example.com A, ID 0.
        let target = "/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB";
        let q = read_head(Method::Get, target, None, DEFAULT_PATH, MAX).unwrap();
        let Query::Inline(q) = q else {
            panic!("a GET query is inline");
        };
        assert_eq!(&q[..4], &[0, 0, 1, 0]);
        assert_eq!(&q[12..16], b"\x03www");
        assert_eq!(q.len(), 33);
        // Other parameters around it are fine.
        let other = "/dns-query?ct=x&dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB&z=1";
        assert!(read_head(Method::Get, other, None, DEFAULT_PATH, MAX).is_ok());
    }

    #[test]
    fn post_needs_the_dns_message_type_and_its_body() {
        for ct in [
            &b"application/dns-message"[..],
            b"Application/DNS-Message; x=1",
        ] {
            assert_eq!(
                read_head(Method::Post, "/dns-query", Some(ct), DEFAULT_PATH, MAX),
                Ok(Query::Body)
            );
        }
        for ct in [None, Some(&b"application/json"[..]), Some(b"text/plain")] {
            assert_eq!(
                read_head(Method::Post, "/dns-query", ct, DEFAULT_PATH, MAX),
                Err(Rejection::UnsupportedMediaType)
            );
        }
    }

    #[test]
    fn wrong_paths_methods_and_parameters_get_their_status() {
        let get = |target| read_head(Method::Get, target, None, DEFAULT_PATH, MAX);
        assert_eq!(get("/other?dns=AAAA"), Err(Rejection::NotFound));
        assert_eq!(get("/dns-query"), Err(Rejection::BadQuery));
        assert_eq!(get("/dns-query?dns="), Err(Rejection::BadQuery));
        assert_eq!(get("/dns-query?dns=AA*A"), Err(Rejection::BadQuery));
        assert_eq!(get("/dns-query?dns=A"), Err(Rejection::BadQuery));
        let big = format!("/dns-query?dns={}", "A".repeat(MAX * 2));
        assert_eq!(get(&big), Err(Rejection::TooLarge));
        assert_eq!(
            read_head(Method::Other, "/dns-query", None, DEFAULT_PATH, MAX),
            Err(Rejection::MethodNotAllowed)
        );
        assert_eq!(
            read_head(Method::Get, "/q?dns=AAAA", None, "/q", MAX),
            Ok(Query::Inline(vec![0, 0, 0]))
        );
        assert_eq!(Rejection::UnsupportedMediaType.status(), 415);
    }

    #[test]
    fn base64url_round_trips_every_length_and_refuses_bad_tails() {
        assert_eq!(base64url_decode("").unwrap(), b"");
        assert_eq!(base64url_decode("_-8").unwrap(), [0xff, 0xef]);
        assert_eq!(base64url_decode("Zm9vYg").unwrap(), b"foob");
        assert_eq!(base64url_decode("Zm9vYg==").unwrap(), b"foob");
        assert_eq!(base64url_decode("Zm9vYmE").unwrap(), b"fooba");
        assert_eq!(base64url_decode("Zm9vYmFy").unwrap(), b"foobar");
        // Bits left over that are not zero: not an encoding anyone makes.
        assert_eq!(base64url_decode("Zm9vYh"), None);
        assert_eq!(base64url_decode("Zm9+"), None, "standard alphabet's +");
    }
}
