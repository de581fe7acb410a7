//! The response cache replays exactly what answering afresh would send: every
//! octet, the outcome and the rate-limiting key, whatever the name's case, the
//! EDNS parameters or the transport; and never an answer from an older zone set
//! or one that depended on the client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_auth::{Access, AnswerConfig, AnswerOutcome, Answerer, Request, Transport, ZoneAccess};
use bulwark_proto::Name;
use bulwark_zone::ZoneSet;
use common::*;
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;

const NAMES: &[&str] = &[
    "example.com.",
    "www.example.com.",
    "WwW.ExAmPlE.CoM.",
    "web.example.com.",
    "chain.example.com.",
    "loop1.example.com.",
    "x.wild.example.com.",
    "Y.WILD.example.com.",
    "a.b.ent.example.com.",
    "host.sub.example.com.",
    "HOST.Sub.example.com.",
    "Tosub.example.com.",
    "tosub.example.com.",
    "x.dn.example.com.",
    "X.Dn.example.com.",
    "x.DN2.example.com.",
    "x.dn2.example.com.",
    "nothere.example.com.",
    "NOTHERE.example.com.",
    "multi.example.com.",
    "example.org.",
];

const TYPES: &[RecordType] = &[
    RecordType::A,
    RecordType::AAAA,
    RecordType::MX,
    RecordType::TXT,
    RecordType::NS,
    RecordType::SOA,
    RecordType::ANY,
    RecordType::CNAME,
];

/// Every question in several EDNS shapes.
fn queries() -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for name in NAMES {
        for &qtype in TYPES {
            all.push(query(name, qtype).to_vec().unwrap());
            for (payload, dnssec_ok) in [(512, false), (1232, true), (4096, true), (4096, false)] {
                all.push(
                    with_edns(query(name, qtype), payload, dnssec_ok)
                        .to_vec()
                        .unwrap(),
                );
            }
        }
    }
    all
}

struct Answer<'q> {
    outcome: AnswerOutcome<'q>,
    wire: Vec<u8>,
    rrl: (bulwark_auth::ResponseClass, Vec<u8>),
}

fn answer<'q>(
    a: &mut Answerer,
    zones: &ZoneSet,
    request: &Request<'_>,
    wire: &'q [u8],
) -> Answer<'q> {
    let mut out = Vec::new();
    let outcome = a.answer_request(zones, request, wire, &mut out);
    let (class, name) = a.rrl_key();
    Answer {
        outcome,
        wire: out,
        rrl: (class, name.to_vec()),
    }
}

fn with_id(wire: &[u8], id: u16) -> Vec<u8> {
    let mut w = wire.to_vec();
    w[..2].copy_from_slice(&id.to_be_bytes());
    w
}

#[test]
fn replayed_answers_are_the_answers_given_afresh() {
    let zones = zoneset(&[example()]);
    let config = Arc::new(AnswerConfig::default());
    for transport in [Transport::Udp, Transport::Tcp] {
        let request = Request::plain(transport);
        let mut fresh = Answerer::new(Arc::clone(&config));
        let mut cached = Answerer::new(Arc::clone(&config)).with_response_cache(4096);
        // Twice over: the first pass fills the cache (and a lowercase name fills
        // it for its mixed-case twin), the second replays.
        for pass in 0..2u16 {
            for (i, q) in queries().iter().enumerate() {
                let q = with_id(q, pass.wrapping_mul(7919).wrapping_add(i as u16));
                let want = answer(&mut fresh, &zones, &request, &q);
                let got = answer(&mut cached, &zones, &request, &q);
                assert_eq!(got.wire, want.wire, "{transport:?} pass {pass} query {i}");
                assert_eq!(
                    got.outcome, want.outcome,
                    "{transport:?} pass {pass} query {i}"
                );
                assert_eq!(got.rrl, want.rrl, "{transport:?} pass {pass} query {i}");
            }
        }
    }
}

#[test]
fn a_cache_too_small_for_the_questions_still_answers_each_correctly() {
    let zones = zoneset(&[example()]);
    let config = Arc::new(AnswerConfig::default());
    let request = Request::plain(Transport::Udp);
    let mut fresh = Answerer::new(Arc::clone(&config));
    let mut cached = Answerer::new(config).with_response_cache(2);
    for q in queries().iter().chain(queries().iter().rev()) {
        let want = answer(&mut fresh, &zones, &request, q);
        assert_eq!(answer(&mut cached, &zones, &request, q).wire, want.wire);
    }
}

#[test]
fn a_new_zone_set_is_never_answered_from_the_old_one() {
    let config = Arc::new(AnswerConfig::default());
    let request = Request::plain(Transport::Udp);
    let mut cached = Answerer::new(config).with_response_cache(64);
    let q = query("web.example.com.", RecordType::A).to_vec().unwrap();
    let old = zoneset(&[example()]);
    let first = answer(&mut cached, &old, &request, &q);
    assert!(answer(&mut cached, &old, &request, &q).wire == first.wire);
    let changed = EXAMPLE.replace("web A 192.0.2.80", "web A 192.0.2.81");
    let new = zoneset(&[zone("example.com.", &changed)]);
    let after = Message::from_vec(&answer(&mut cached, &new, &request, &q).wire).unwrap();
    assert_eq!(rows(after.answers())[0].3, "192.0.2.81");
    // The same zones in a set built again are a new set too.
    let rebuilt = zoneset(&old.zones().cloned().collect::<Vec<_>>());
    assert_ne!(rebuilt.generation(), old.generation());
}

/// Refuses one client everywhere.
struct RefuseOne(IpAddr);

impl ZoneAccess for RefuseOne {
    fn access(&self, _apex: &Name, client: IpAddr) -> Access {
        if client == self.0 {
            Access::Refuse
        } else {
            Access::Allow
        }
    }
}

#[test]
fn answers_that_depend_on_the_client_are_not_replayed() {
    let zones = zoneset(&[example()]);
    let mut cached = Answerer::new(Arc::new(AnswerConfig::default())).with_response_cache(64);
    let refused: IpAddr = "192.0.2.66".parse().unwrap();
    let acl = RefuseOne(refused);
    let request = |client| Request {
        client,
        zone_access: Some(&acl),
        ..Request::plain(Transport::Udp)
    };
    let q = query("web.example.com.", RecordType::A).to_vec().unwrap();
    let allowed = answer(
        &mut cached,
        &zones,
        &request("192.0.2.1".parse().unwrap()),
        &q,
    );
    assert_eq!(Message::from_vec(&allowed.wire).unwrap().answers().len(), 1);
    let denied = answer(&mut cached, &zones, &request(refused), &q);
    let denied = Message::from_vec(&denied.wire).unwrap();
    assert_eq!(
        denied.response_code(),
        hickory_proto::op::ResponseCode::Refused
    );
    assert!(denied.answers().is_empty());
}
