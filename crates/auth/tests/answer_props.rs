//! Property tests: answering never panics, and whatever it sends parses and fits.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use bulwark_auth::{
    AnswerConfig, AnswerOutcome, Answerer, CookiePolicy, Recursion, Request, ServerCookies,
    Transport,
};
use bulwark_guard::CookieSecret;
use common::*;
use hickory_proto::op::Message;
use hickory_proto::rr::RecordType;
use proptest::prelude::*;

/// Hickory rejects opcodes it has no name for; we echo any opcode (RFC 1035
/// §4.1.1), so the copy handed to hickory has it cleared.
fn parse(wire: &[u8]) -> Result<Message, hickory_proto::error::ProtoError> {
    let mut w = wire.to_vec();
    if let Some(b) = w.get_mut(2) {
        *b &= !0x78;
    }
    Message::from_vec(&w)
}

fn limit_for(transport: Transport, query: &[u8]) -> usize {
    match transport {
        Transport::Tcp => 65535,
        // With EDNS the limit is at most our 1232; without, 512.
        Transport::Udp => match Message::from_vec(query)
            .ok()
            .and_then(|m| m.extensions().clone())
        {
            Some(_) => 1232,
            None => 512,
        },
    }
}

fn check(answerer: &mut Answerer, zones: &bulwark_zone::ZoneSet, transport: Transport, q: &[u8]) {
    check_request(answerer, zones, &Request::plain(transport), q);
}

fn check_request(
    answerer: &mut Answerer,
    zones: &bulwark_zone::ZoneSet,
    request: &Request<'_>,
    q: &[u8],
) {
    let transport = request.transport;
    let mut out = Vec::new();
    match answerer.answer_request(zones, request, q, &mut out) {
        AnswerOutcome::Drop | AnswerOutcome::Denied => {
            assert!(out.is_empty() || q.len() < 12 || q[2] & 0x80 != 0)
        }
        AnswerOutcome::Divert(..) => assert!(out.is_empty(), "nothing written when diverted"),
        AnswerOutcome::Recurse(_) => panic!("recursion is off"),
        AnswerOutcome::Respond { .. } => {
            assert!(out.len() >= 12);
            assert!(
                out.len() <= limit_for(transport, q).max(512),
                "{} bytes",
                out.len()
            );
            assert_eq!(&out[..2], &q[..2], "id echoed");
            parse(&out).expect("every response parses");
        }
    }
}

const NAMES: &[&str] = &[
    "example.com.",
    "www.example.com.",
    "WwW.ExAmPlE.CoM.",
    "chain.example.com.",
    "loop1.example.com.",
    "dangling.example.com.",
    "x.y.wild.example.com.",
    "foo.wc.example.com.",
    "x.b.ent.example.com.",
    "b.ent.example.com.",
    "sub.example.com.",
    "a.sub.example.com.",
    "a.dn.example.com.",
    "x.dn2.example.com.",
    "nothere.example.com.",
    "example.net.",
    "multi.example.com.",
    "tosub.example.com.",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn answer_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let zones = zoneset(&[example()]);
        let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
        let mut out = Vec::new();
        let outcome = a.answer(&zones, Transport::Udp, &bytes, &mut out);
        if let AnswerOutcome::Respond { .. } = outcome {
            prop_assert!(out.len() <= 1232);
            prop_assert!(parse(&out).is_ok(), "{:?}", parse(&out));
        }
    }

    #[test]
    fn mutated_queries_get_parseable_responses_within_the_limit(
        name in 0..NAMES.len(),
        qtype in prop_oneof![Just(1u16), Just(2), Just(5), Just(6), Just(15), Just(16), Just(28), Just(39), Just(43), Just(255), any::<u16>()],
        edns in proptest::option::of((any::<u16>(), any::<bool>())),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
        tcp in any::<bool>(),
    ) {
        let mut q = query(NAMES[name], RecordType::from(qtype));
        if let Some((payload, dnssec_ok)) = edns {
            q = with_edns(q, payload, dnssec_ok);
        }
        let mut wire = q.to_vec().unwrap();
        for (at, x) in flips {
            let i = at % wire.len();
            wire[i] ^= x;
        }
        let zones = zoneset(&[example()]);
        let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
        let transport = if tcp { Transport::Tcp } else { Transport::Udp };
        check(&mut a, &zones, transport, &wire);
    }

    #[test]
    fn queries_with_edns_options_get_parseable_responses_under_every_defence(
        name in 0..NAMES.len(),
        qtype in prop_oneof![Just(1u16), Just(16), Just(255), any::<u16>()],
        opts in proptest::collection::vec(
            (prop_oneof![Just(3u16), Just(10), Just(11), Just(12), any::<u16>()],
             proptest::collection::vec(any::<u8>(), 0..42)),
            0..4),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..2),
        tcp in any::<bool>(),
        threshold in proptest::option::of(0u16..1500),
        now in any::<u64>(),
    ) {
        let mut wire = with_edns(query(NAMES[name], RecordType::from(qtype)), 1232, false)
            .to_vec()
            .unwrap();
        // Append the options to the OPT, the last record, and fix its RDLENGTH.
        let rdlen_at = wire.len() - 2;
        let mut rdata = Vec::new();
        for (code, data) in &opts {
            rdata.extend_from_slice(&code.to_be_bytes());
            rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
            rdata.extend_from_slice(data);
        }
        wire[rdlen_at..].copy_from_slice(&(rdata.len() as u16).to_be_bytes());
        wire.extend_from_slice(&rdata);
        for (at, x) in flips {
            let i = at % wire.len();
            wire[i] ^= x;
        }
        let zones = zoneset(&[example()]);
        let config = AnswerConfig {
            nsid: Some(b"ns1.example".to_vec()),
            tcp_keepalive: Some(100),
            cookies: CookiePolicy { require_for_udp_above: threshold },
            ..AnswerConfig::default()
        };
        let secrets = ServerCookies { current: CookieSecret([3; 16]), previous: None };
        let request = Request {
            transport: if tcp { Transport::Tcp } else { Transport::Udp },
            client: "192.0.2.1".parse().unwrap(),
            now,
            cookies: Some(&secrets),
            zone_access: None,
            recursion: Recursion::Off,
        };
        let mut a = Answerer::new(Arc::new(config));
        check_request(&mut a, &zones, &request, &wire);
    }
}
