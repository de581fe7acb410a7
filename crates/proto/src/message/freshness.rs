//! How long a response may be cached by something that is not a DNS cache:
//! an HTTP cache in front of DNS over HTTPS (RFC 8484 §5.1), told through
//! `Cache-Control: max-age`.

use super::view::MessageView;
use crate::rcode::Rcode;
use crate::rtype::Rtype;

/// The freshness lifetime of `response` in seconds: the smallest TTL of its
/// answer and authority records, an SOA's counting at most its MINIMUM (RFC
/// 2308 §5, for negative answers). Zero for a response that has none, that
/// is not an answer (SERVFAIL, REFUSED and the like: nothing to keep), or
/// that does not parse.
pub fn freshness_lifetime(response: &[u8]) -> u32 {
    let Ok(view) = MessageView::parse(response) else {
        return 0;
    };
    if view.rcode() != Rcode::NOERROR && view.rcode() != Rcode::NXDOMAIN {
        return 0;
    }
    let mut least: Option<u32> = None;
    for r in view.answers().chain(view.authority()) {
        let mut ttl = r.ttl;
        if r.rtype == Rtype::SOA {
            if let Some(min) = r.rdata.last_chunk::<4>() {
                ttl = ttl.min(u32::from_be_bytes(*min));
            }
        }
        least = Some(least.map_or(ttl, |l| l.min(ttl)));
    }
    least.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A response with `rcode`, answers of the given TTLs (A records) and
    /// an authority SOA with `soa` = (TTL, MINIMUM).
    fn response(rcode: u8, answers: &[u32], soa: Option<(u32, u32)>) -> Vec<u8> {
        let ancount = u8::try_from(answers.len()).unwrap();
        let nscount = u8::from(soa.is_some());
        let mut m = vec![0, 1, 0x81, 0x80 | rcode, 0, 1, 0, ancount, 0, nscount, 0, 0];
        m.extend_from_slice(b"\x01a\x00\x00\x01\x00\x01");
        for ttl in answers {
            m.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01");
            m.extend_from_slice(&ttl.to_be_bytes());
            m.extend_from_slice(b"\x00\x04\xc0\x00\x02\x01");
        }
        if let Some((ttl, minimum)) = soa {
            m.extend_from_slice(b"\x00\x00\x06\x00\x01");
            m.extend_from_slice(&ttl.to_be_bytes());
            m.extend_from_slice(&[0, 22, 0, 0]);
            m.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]);
            m.extend_from_slice(&minimum.to_be_bytes());
        }
        m
    }

    #[test]
    fn the_smallest_ttl_of_the_answer_decides() {
        assert_eq!(freshness_lifetime(&response(0, &[300, 60, 3600], None)), 60);
    }

    #[test]
    fn a_negative_answer_lasts_the_soa_ttl_or_its_minimum_whichever_is_less() {
        assert_eq!(
            freshness_lifetime(&response(3, &[], Some((3600, 300)))),
            300
        );
        assert_eq!(freshness_lifetime(&response(0, &[], Some((120, 300)))), 120);
    }

    #[test]
    fn failures_empty_answers_and_garbage_are_not_kept() {
        assert_eq!(freshness_lifetime(&response(2, &[300], None)), 0);
        assert_eq!(freshness_lifetime(&response(5, &[], None)), 0);
        assert_eq!(freshness_lifetime(&response(0, &[], None)), 0);
        assert_eq!(freshness_lifetime(&[0, 1, 2]), 0);
    }
}
