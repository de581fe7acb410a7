//! Questions in none of our zones, when the server also resolves: handed to
//! the resolver only with RD set and for clients that may recurse; others
//! are refused saying why (RFC 8914: 18 Prohibited, 20 Not Authoritative),
//! and a refusal that depends on the client is never replayed from the
//! response cache.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Recursion, Request, Transport};
use bulwark_proto::message::{MessageView, OPTION_EDE};
use bulwark_proto::Rcode;
use common::*;
use hickory_proto::rr::RecordType;

const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));

fn request(recursion: Recursion) -> Request<'static> {
    Request {
        client: CLIENT,
        recursion,
        ..Request::plain(Transport::Udp)
    }
}

fn ede(resp: &[u8]) -> Option<u16> {
    let view = MessageView::parse(resp).unwrap();
    let edns = view.edns()?;
    let raw = edns.option_bytes();
    let mut at = 0;
    while at + 4 <= raw.len() {
        let code = u16::from_be_bytes([raw[at], raw[at + 1]]);
        let len = usize::from(u16::from_be_bytes([raw[at + 2], raw[at + 3]]));
        if code == OPTION_EDE {
            return Some(u16::from_be_bytes([raw[at + 4], raw[at + 5]]));
        }
        at += 4 + len;
    }
    None
}

fn wire(qname: &str, rd: bool) -> Vec<u8> {
    let mut m = with_edns(query(qname, RecordType::A), 1400, false);
    m.set_recursion_desired(rd);
    m.to_vec().unwrap()
}

/// (rcode, EDE) of a response, or what else became of the query.
#[derive(Debug, PartialEq)]
enum Seen {
    Said(Rcode, Option<u16>),
    Recurse { limit: usize },
    Other,
}

fn ask(a: &mut Answerer, recursion: Recursion, q: &[u8]) -> Seen {
    let zones = zoneset(&[example()]);
    let mut out = Vec::new();
    match a.answer_request(&zones, &request(recursion), q, &mut out) {
        AnswerOutcome::Respond { rcode, .. } => Seen::Said(rcode, ede(&out)),
        AnswerOutcome::Recurse(r) => {
            assert!(out.is_empty(), "nothing written when handed on");
            assert_eq!(r.query.as_bytes(), q);
            Seen::Recurse { limit: r.limit }
        }
        _ => Seen::Other,
    }
}

#[test]
fn a_name_not_ours_goes_to_the_resolver_only_when_offered_and_asked() {
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let other = wire("www.example.net.", true);
    let other_no_rd = wire("www.example.net.", false);
    assert_eq!(
        ask(&mut a, Recursion::Off, &other),
        Seen::Said(Rcode::REFUSED, Some(20))
    );
    assert_eq!(
        ask(&mut a, Recursion::Refused, &other),
        Seen::Said(Rcode::REFUSED, Some(18))
    );
    // Without RD the client did not ask for recursion: not authoritative.
    assert_eq!(
        ask(&mut a, Recursion::Refused, &other_no_rd),
        Seen::Said(Rcode::REFUSED, Some(20))
    );
    assert_eq!(
        ask(&mut a, Recursion::Offered, &other_no_rd),
        Seen::Said(Rcode::REFUSED, Some(20))
    );
    // The client's 1400 octets, within our default of 1232.
    assert_eq!(
        ask(&mut a, Recursion::Offered, &other),
        Seen::Recurse { limit: 1232 }
    );
}

#[test]
fn names_in_our_zones_are_answered_from_them_even_with_recursion() {
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let ours = wire("www.example.com.", true);
    assert_eq!(
        ask(&mut a, Recursion::Offered, &ours),
        Seen::Said(Rcode::NOERROR, None)
    );
}

#[test]
fn a_refusal_of_recursion_is_not_replayed_to_a_client_that_may_recurse() {
    let mut a = Answerer::new(Arc::new(AnswerConfig::default())).with_response_cache(64);
    let other = wire("www.example.net.", true);
    for _ in 0..2 {
        assert_eq!(
            ask(&mut a, Recursion::Refused, &other),
            Seen::Said(Rcode::REFUSED, Some(18))
        );
    }
    assert_eq!(
        ask(&mut a, Recursion::Offered, &other),
        Seen::Recurse { limit: 1232 }
    );
    // And the other way round.
    assert_eq!(
        ask(&mut a, Recursion::Refused, &other),
        Seen::Said(Rcode::REFUSED, Some(18))
    );
    assert_eq!(
        ask(&mut a, Recursion::Off, &other),
        Seen::Said(Rcode::REFUSED, Some(20))
    );
}
