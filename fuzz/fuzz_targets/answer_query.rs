//! Full query handling: query bytes in, response bytes out, against the zones of
//! the differential test (wildcards, CNAME chains and loops, DNAME, delegations
//! with and without glue, a record set too big for 512 octets).
//!
//! Whatever the input, over UDP and TCP, with and without the defences (DNS
//! cookies, per-zone access control): no panic,
//! and every response parses, carries the query's ID, says the rcode and TC the
//! answerer reported, and fits the size limit (RFC 1035 §4.2.1: 512 octets over
//! UDP without EDNS; RFC 6891 §6.2.5: the client's EDNS size, at least 512,
//! capped by our 1232; 65535 over TCP). A response cache asked the same
//! query twice (once to fill, once to replay) gives the fresh answer's octets,
//! outcome and rate-limiting key both times.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, OnceLock};

use bulwark_auth::{
    AnswerConfig, AnswerOutcome, Answerer, Recursion, Request, Transport, ZoneAccess,
};
use bulwark_guard::Access;
use bulwark_guard::{CookieSecret, ServerCookies};
use bulwark_proto::message::{MessageView, MIN_UDP_PAYLOAD};
use bulwark_proto::Name;
use bulwark_zone::{parse_str, Zone, ZoneSet};
use libfuzzer_sys::fuzz_target;

// Signed copies, so DO queries reach the DNSSEC steps (RRSIGs, NSEC and
// salted, iterated NSEC3 proofs); without DO they answer like the unsigned
// zones, so the plain paths stay covered.
const DIFF_ZONE: &str = include_str!("../../crates/auth/tests/data/signed/diff-nsec3-salted.zone");
const OTHER_ZONE: &str = include_str!("../zones/other-nsec.zone");
const TCP_LIMIT: usize = 65535;

fn load(text: &str, apex: &str) -> Arc<Zone> {
    let apex: Name = apex.parse().expect("apex");
    let records = parse_str(text, &apex, apex.to_string().as_str()).expect("test zone parses");
    let (zone, _warnings) = Zone::build(apex, records).expect("test zone builds");
    Arc::new(zone)
}

fn zones() -> &'static ZoneSet {
    static ZONES: OnceLock<ZoneSet> = OnceLock::new();
    ZONES.get_or_init(|| {
        ZoneSet::new(vec![
            load(DIFF_ZONE, "diff.test."),
            load(OTHER_ZONE, "other.test."),
        ])
    })
}

fn cookies() -> &'static ServerCookies {
    static COOKIES: OnceLock<ServerCookies> = OnceLock::new();
    COOKIES.get_or_init(|| ServerCookies {
        current: CookieSecret(*b"fuzz-cookie-key!"),
        previous: Some(CookieSecret(*b"older-cookie-key")),
    })
}

/// Per-zone access: IPv6 clients are refused `other.test.`, IPv4 clients get
/// nothing from `diff.test.`; everything else is allowed.
struct SplitAccess;

impl ZoneAccess for SplitAccess {
    fn access(&self, apex: &Name, client: IpAddr) -> Access {
        let other: Name = "other.test.".parse().expect("name");
        match client {
            IpAddr::V6(_) if *apex == other => Access::Refuse,
            IpAddr::V4(_) if *apex != other => Access::Drop,
            _ => Access::Allow,
        }
    }
}

/// The limit the response must respect, from what the query says of itself.
fn size_limit(query: &[u8], transport: Transport, max_udp: u16) -> usize {
    match transport {
        Transport::Tcp => TCP_LIMIT,
        Transport::Udp => {
            let client = MessageView::parse(query)
                .ok()
                .and_then(|v| v.edns())
                .map_or(MIN_UDP_PAYLOAD, |e| e.effective_payload());
            usize::from(client.min(max_udp).max(MIN_UDP_PAYLOAD))
        }
    }
}

fn check(query: &[u8], transport: Transport, max_udp: u16, outcome: &AnswerOutcome, out: &[u8]) {
    let &AnswerOutcome::Respond { rcode, truncated } = outcome else {
        return;
    };
    let limit = size_limit(query, transport, max_udp);
    assert!(
        out.len() <= limit,
        "{transport:?} response of {} octets passes the limit {limit}",
        out.len()
    );
    let view = match MessageView::parse(out) {
        Ok(v) => v,
        Err(e) => panic!("{transport:?} response does not parse: {e}\n{out:02x?}"),
    };
    assert_eq!(
        query.get(..2),
        out.get(..2),
        "response ID differs from the query's"
    );
    assert!(view.header().flags.qr, "response without QR");
    assert_eq!(
        view.rcode(),
        rcode,
        "rcode in the message differs from the outcome"
    );
    assert_eq!(
        view.header().flags.tc,
        truncated,
        "TC differs from the outcome"
    );
}

fuzz_target!(|data: &[u8]| {
    let zones = zones();
    let config = Arc::new(AnswerConfig::default());
    let max_udp = config.max_udp_payload;
    let mut answerer = Answerer::new(Arc::clone(&config));
    let mut cached = Answerer::new(config).with_response_cache(8);
    let mut out = Vec::new();
    let mut replayed = Vec::new();
    for transport in [Transport::Udp, Transport::Tcp] {
        let outcome = answerer.answer(zones, transport, data, &mut out);
        check(data, transport, max_udp, &outcome, &out);
        for round in ["filling", "replaying"] {
            let again = cached.answer(zones, transport, data, &mut replayed);
            assert_eq!(again, outcome, "{transport:?} {round}: outcome differs");
            assert_eq!(replayed, out, "{transport:?} {round}: octets differ");
            assert_eq!(
                cached.rrl_key(),
                answerer.rrl_key(),
                "{transport:?} {round}: rate-limiting key differs"
            );
        }

        // The same query with the defences on: DNS cookies and per-zone access,
        // from a client of each address family.
        let clients = [
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)),
        ];
        // One client may recurse, the other may not: a recursion handed on
        // writes nothing and carries a limit within the transport's.
        let offers = [Recursion::Offered, Recursion::Refused];
        for (client, recursion) in clients.into_iter().zip(offers) {
            let request = Request {
                transport,
                client,
                now: 1_700_000_000,
                cookies: Some(cookies()),
                zone_access: Some(&SplitAccess),
                recursion,
            };
            let outcome = answerer.answer_request(zones, &request, data, &mut out);
            check(data, transport, max_udp, &outcome, &out);
            if let AnswerOutcome::Recurse(r) = &outcome {
                assert_eq!(
                    recursion,
                    Recursion::Offered,
                    "recursion handed on when refused"
                );
                assert!(out.is_empty(), "a recursion handed on wrote a response");
                assert!(r.limit <= size_limit(data, transport, max_udp));
                assert_eq!(r.query.as_bytes(), data);
            }
            let _ = answerer.rrl_key();
        }
    }
});
