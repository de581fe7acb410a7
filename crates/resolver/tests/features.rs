//! What the engine does beside resolving: refreshing popular entries before
//! they expire, serving stale data to clients who waited long enough, stub
//! zones, DNS cookies as a client, and the bounds a public resolver needs
//! against DNSBomb (questions per client, answers too late to send,
//! queries per server).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use bulwark_proto::message::{EdnsOption, MessageBuilder, OptRecord, Section};
use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Class, MessageView, Rcode, Rtype};
use bulwark_resolver::{
    ede, ClientQuestion, ClientToken, ExchangeError, Resolver, StaleConfig, StubZone, Transmit,
};
use common::*;

fn ask(
    r: &mut Resolver,
    token: u64,
    client: IpAddr,
    qname: &str,
    now: u64,
) -> Option<bulwark_resolver::Resolution> {
    r.handle_query(
        ClientQuestion {
            token: ClientToken(token),
            client,
            qname: name(qname),
            qtype: Rtype::A,
        },
        now,
    )
}

/// Answers every query the engine has to send from `net`, until none is
/// left; returns what was sent.
fn drain(net: &mut Net, r: &mut Resolver) -> Vec<Transmit> {
    let mut sent = Vec::new();
    for _ in 0..1000 {
        let Some(t) = r.poll_transmit() else {
            break;
        };
        net.now += 1;
        let result = net.answer(t.to.ip(), &t.message, t.transport);
        r.handle_response(t.id, result, net.now);
        sent.push(t);
    }
    sent
}

fn qname_of(t: &Transmit) -> String {
    MessageView::parse(&t.message)
        .unwrap()
        .question()
        .unwrap()
        .qname
        .to_string()
}

#[test]
fn an_entry_asked_for_near_its_expiry_is_refreshed_in_the_background() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    net.resolve(&mut r, "www.example.com.", Rtype::A);
    // 3600 s TTL: at 3300 s it is in its last tenth.
    net.now += 3_300_000;
    let hit = ask(&mut r, 1, CLIENT, "www.example.com.", net.now).expect("from the cache");
    assert_eq!(hit.rcode, Rcode::NOERROR);
    assert!(hit.answer[0].ttl <= 300);
    let sent = drain(&mut net, &mut r);
    assert!(
        sent.iter().any(|t| qname_of(t) == "www.example.com."),
        "the refresh went out: {:?}",
        sent.iter().map(qname_of).collect::<Vec<_>>()
    );
    assert_eq!(r.stats().prefetches, 1);
    while r.poll_answer().is_some() {}
    // Refreshed: a full TTL again, and asking again sends nothing.
    let again = ask(&mut r, 2, CLIENT, "www.example.com.", net.now).unwrap();
    assert!(again.answer[0].ttl > 3000, "{again:?}");
    assert!(drain(&mut net, &mut r).is_empty());

    // With prefetch off, nothing is refreshed.
    let mut net = internet();
    let mut r = resolver(|c| c.prefetch = false);
    net.resolve(&mut r, "www.example.com.", Rtype::A);
    net.now += 3_300_000;
    assert!(ask(&mut r, 1, CLIENT, "www.example.com.", net.now).is_some());
    assert!(drain(&mut net, &mut r).is_empty());
}

#[test]
fn a_client_kept_waiting_gets_stale_data_while_the_resolution_goes_on() {
    let mut net = internet();
    let mut r = resolver(|c| {
        c.stale = Some(StaleConfig {
            max_stale_secs: 86_400,
            stale_answer_ttl: 30,
            client_timeout_ms: 1_800,
        })
    });
    net.resolve(&mut r, "www.example.com.", Rtype::A);
    net.now += 3_700_000;
    assert!(ask(&mut r, 1, CLIENT, "www.example.com.", net.now).is_none());
    // The query goes out and nothing comes back yet.
    let pending: Vec<Transmit> = std::iter::from_fn(|| r.poll_transmit()).collect();
    assert!(!pending.is_empty());
    assert!(r.poll_answer().is_none());
    net.now += 1_800;
    r.handle_timeout(net.now);
    let a = r.poll_answer().expect("the stale answer, now");
    assert!(a.resolution.stale);
    assert_eq!(
        a.resolution.ede.as_ref().map(|e| e.0),
        Some(ede::STALE_ANSWER)
    );
    assert_eq!(a.resolution.answer[0].ttl, 30);
    assert!(!a.discard);
    // The resolution goes on, for the cache.
    assert_eq!(r.pending(), 1);
    for t in pending {
        let result = net.answer(t.to.ip(), &t.message, t.transport);
        r.handle_response(t.id, result, net.now);
    }
    drain(&mut net, &mut r);
    assert_eq!(r.pending(), 0);
    let fresh = ask(&mut r, 2, CLIENT, "www.example.com.", net.now).unwrap();
    assert!(!fresh.stale && fresh.answer[0].ttl > 3000);
}

#[test]
fn a_stub_zone_is_asked_at_its_servers_and_referrals_below_it_are_followed() {
    let mut net = internet();
    // corp.test. exists nowhere in the public tree; its server is given.
    net.serve(
        "10.0.8.1",
        vec![zone(
            "corp.test.",
            "$TTL 300\n@ SOA ns admin 1 1800 900 604800 300\n@ NS ns\nns A 10.0.8.1\nwww A 192.0.2.8\nlab NS ns.lab\nns.lab A 10.0.8.2\n",
        )],
    );
    net.serve(
        "10.0.8.2",
        vec![zone(
            "lab.corp.test.",
            "$TTL 300\n@ SOA ns admin 1 1800 900 604800 300\n@ NS ns\nns A 10.0.8.2\nhost A 192.0.2.9\n",
        )],
    );
    let mut r = resolver(|c| {
        c.stubs = vec![StubZone {
            zone: name("corp.test."),
            addresses: vec![SocketAddr::from(([10, 0, 8, 1], 53))],
        }]
    });
    let res = net.resolve(&mut r, "www.corp.test.", Rtype::A);
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.8".parse::<IpAddr>().unwrap()]
    );
    let res = net.resolve(&mut r, "host.lab.corp.test.", Rtype::A);
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.9".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        net.queries_to(ROOT_IP),
        0,
        "never asked the root: {:?}",
        net.asked()
    );
    // Stub queries are iterative: RD clear.
    assert!(net.queries_to("10.0.8.2") > 0);
}

/// The COOKIE options a scripted server saw: (client, server cookie).
type Seen = Arc<Mutex<Vec<Option<(Vec<u8>, Option<Vec<u8>>)>>>>;

/// A server that answers from `example_zone()` and speaks DNS cookies: it
/// records the COOKIE option of each query and returns `server` as its
/// server cookie, echoing the client cookie, or, with `forge`, a client
/// cookie that is not the one sent.
fn cookie_server(seen: Seen, forge: bool) -> Behaviour {
    Behaviour::Custom(Arc::new(move |query: &[u8]| {
        let view = MessageView::parse(query).ok()?;
        let q = view.question()?;
        let cookie = view.edns().and_then(|e| e.cookie());
        seen.lock()
            .unwrap()
            .push(cookie.map(|(c, s)| (c.to_vec(), s.map(<[u8]>::to_vec))));
        let mut out = Vec::new();
        let mut b = MessageBuilder::response_to(&mut out, 4096, &view).ok()?;
        b.header_mut().flags.aa = true;
        let a = Rdata::A("192.0.2.80".parse().unwrap()).to_wire();
        b.push_record(Section::Answer, &q.qname, Rtype::A, Class::IN, 300, &a)
            .ok()?;
        let server = [0x5e; 16];
        let client = match cookie {
            Some((c, _)) if !forge => c,
            _ => [0xee; 8],
        };
        let options = [EdnsOption::Cookie {
            client,
            server: Some(&server),
        }];
        let opt = OptRecord {
            options: &options,
            ..OptRecord::default()
        };
        let len = b.finish(Some(&opt)).ok()?;
        out.truncate(len);
        Some(out)
    }))
}

#[test]
fn queries_carry_a_client_cookie_and_send_back_the_servers() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut net = internet();
    net.set("10.0.3.1", cookie_server(Arc::clone(&seen), false));
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    let res = net.resolve(&mut r, "alias.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{seen:?}");
    let (first_client, first_server) = seen[0].clone().expect("a cookie on the first query");
    assert_eq!(first_client.len(), 8);
    assert_eq!(first_server, None, "no server cookie known yet");
    let (client, server) = seen.last().unwrap().clone().unwrap();
    assert_eq!(
        client, first_client,
        "the same client cookie for one server"
    );
    assert_eq!(server, Some(vec![0x5e; 16]), "its server cookie sent back");
}

/// `inner`, recording the EDNS payload size each query advertised.
fn recording_payloads(inner: Behaviour, payloads: Arc<Mutex<Vec<u16>>>) -> Behaviour {
    let Behaviour::Custom(inner) = inner else {
        panic!("a custom behaviour to wrap")
    };
    Behaviour::Custom(Arc::new(move |query: &[u8]| {
        if let Some(e) = MessageView::parse(query).ok().and_then(|v| v.edns()) {
            payloads.lock().unwrap().push(e.udp_payload_size);
        }
        inner(query)
    }))
}

/// The EDNS payloads a cookie-speaking server saw over two lookups by a
/// resolver set up by `configure`.
fn payloads_offered(configure: impl FnOnce(&mut bulwark_resolver::ResolverConfig)) -> Vec<u16> {
    let payloads = Arc::new(Mutex::new(Vec::new()));
    let mut net = internet();
    let server = cookie_server(Arc::new(Mutex::new(Vec::new())), false);
    net.set(
        "10.0.3.1",
        recording_payloads(server, Arc::clone(&payloads)),
    );
    let mut r = resolver(configure);
    for qname in ["www.example.com.", "alias.example.com."] {
        assert_eq!(net.resolve(&mut r, qname, Rtype::A).rcode, Rcode::NOERROR);
    }
    let seen = payloads.lock().unwrap().clone();
    seen
}

#[test]
fn a_larger_payload_is_offered_only_to_a_server_whose_cookie_is_held() {
    for (with_cookie, expected_later) in [(4096, 4096), (1232, 1232)] {
        let payloads = payloads_offered(|c| c.udp_payload_with_cookie = with_cookie);
        assert!(payloads.len() >= 2, "{payloads:?}");
        assert_eq!(payloads[0], 1232, "no cookie of the server held yet");
        assert_eq!(*payloads.last().unwrap(), expected_later, "{payloads:?}");
    }
    // Without client cookies there is no server cookie to hold.
    let payloads = payloads_offered(|c| {
        c.udp_payload_with_cookie = 4096;
        c.client_cookies = false;
    });
    assert!(payloads.iter().all(|&p| p == 1232), "{payloads:?}");
}

#[test]
fn a_response_with_someone_elses_client_cookie_is_dropped_as_forged() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut net = internet();
    net.set("10.0.3.1", cookie_server(Arc::clone(&seen), true));
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL, "{res:?}");
    assert!(r.stats().forged >= 1);
    assert!(r
        .cache()
        .rrset(&name("www.example.com."), Rtype::A, net.now)
        .is_none());

    // Without client cookies nothing is checked (and none is sent).
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut net = internet();
    net.set("10.0.3.1", cookie_server(Arc::clone(&seen), true));
    let mut r = resolver(|c| c.client_cookies = false);
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    assert!(seen.lock().unwrap().iter().all(Option::is_none));
}

#[test]
fn a_response_with_the_wrong_id_is_not_believed() {
    let mut net = internet();
    // example.com.'s server answers with the ID off by one.
    let zones = Arc::new(bulwark_zone::ZoneSet::new(vec![example_zone()]));
    net.set(
        "10.0.3.1",
        Behaviour::Custom(Arc::new(move |query: &[u8]| {
            let mut a =
                bulwark_auth::Answerer::new(Arc::new(bulwark_auth::AnswerConfig::default()));
            let mut out = Vec::new();
            a.answer(&zones, bulwark_auth::Transport::Udp, query, &mut out);
            out[1] ^= 1;
            Some(out)
        })),
    );
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL);
    assert!(r.stats().forged >= 1);
}

#[test]
fn one_client_may_have_only_so_many_questions_waiting() {
    let mut r = resolver(|c| c.limits.max_pending_per_client = 3);
    let now = 1_700_000_000_000;
    let other: IpAddr = "198.51.100.9".parse().unwrap();
    for i in 0..3 {
        assert!(ask(&mut r, i, CLIENT, &format!("n{i}.example.com."), now).is_none());
    }
    let refused = ask(&mut r, 9, CLIENT, "n9.example.com.", now).expect("refused at once");
    assert_eq!(refused.rcode, Rcode::SERVFAIL);
    assert_eq!(r.stats().client_limited, 1);
    // Another address is not held back by that one.
    assert!(ask(&mut r, 10, other, "n10.example.com.", now).is_none());
}

#[test]
fn an_answer_resolved_after_the_client_gave_up_is_discarded() {
    let mut net = internet();
    net.set("10.0.3.1", Behaviour::Silent);
    let mut r = resolver(|c| {
        c.limits.discard_after_ms = 1_900;
        c.limits.query_timeout_ms = 800;
    });
    assert!(ask(&mut r, 1, CLIENT, "www.example.com.", net.now).is_none());
    // Every exchange ends only at its time-out: the answer (SERVFAIL) comes
    // seconds after the question.
    for _ in 0..1000 {
        let Some(t) = r.poll_transmit() else {
            match r.poll_timeout() {
                Some(at) => {
                    net.now = net.now.max(at);
                    r.handle_timeout(net.now);
                    continue;
                }
                None => break,
            }
        };
        net.now += 800;
        let result = net.answer(t.to.ip(), &t.message, t.transport);
        let result = result.and_then(|b| {
            if t.to.ip().to_string() == "10.0.3.1" {
                Err(ExchangeError::Timeout)
            } else {
                Ok(b)
            }
        });
        r.handle_response(t.id, result, net.now);
    }
    let a = r.poll_answer().expect("an answer, to be discarded");
    assert!(a.discard, "{a:?}");
    assert_eq!(r.stats().discarded, 1);
}

#[test]
fn a_server_with_too_many_queries_waiting_is_not_sent_more() {
    // Everything forwarded to one server, which is slow to answer.
    let mut r = resolver(|c| {
        c.limits.max_outstanding_per_server = 2;
        c.forwards = vec![bulwark_resolver::ForwardZone {
            zone: name("."),
            addresses: vec![SocketAddr::from(([10, 0, 9, 9], 53))],
            fallback_to_iteration: false,
        }];
    });
    let now = 1_700_000_000_000;
    for i in 0..4 {
        let client: IpAddr = format!("198.51.100.{i}").parse().unwrap();
        assert!(ask(&mut r, i, client, &format!("n{i}.example.com."), now).is_none());
    }
    let sent: Vec<Transmit> = std::iter::from_fn(|| r.poll_transmit()).collect();
    assert_eq!(sent.len(), 2);
    // The other two had nowhere else to go.
    let failed: Vec<_> = std::iter::from_fn(|| r.poll_answer()).collect();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|a| a.resolution.rcode == Rcode::SERVFAIL));
    // Once one answers (here: times out), there is room again.
    r.handle_response(sent[0].id, Err(ExchangeError::Timeout), now + 800);
    assert!(ask(&mut r, 9, CLIENT, "n9.example.com.", now + 801).is_none());
    let more: Vec<Transmit> = std::iter::from_fn(|| r.poll_transmit()).collect();
    assert!(more.iter().any(|t| qname_of(t) == "n9.example.com."));
}

#[test]
fn a_burst_of_questions_at_start_sends_one_priming_query() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    for i in 0..20u64 {
        let client: IpAddr = format!("198.51.100.{i}").parse().unwrap();
        assert!(ask(&mut r, i, client, &format!("n{i}.example.com."), net.now).is_none());
    }
    let first: Vec<Transmit> = std::iter::from_fn(|| r.poll_transmit()).collect();
    assert_eq!(
        first.len(),
        1,
        "{:?}",
        first.iter().map(qname_of).collect::<Vec<_>>()
    );
    assert_eq!(qname_of(&first[0]), ".");
    for t in first {
        let result = net.answer(t.to.ip(), &t.message, t.transport);
        r.handle_response(t.id, result, net.now);
    }
    drain(&mut net, &mut r);
    let mut answered = 0;
    while let Some(a) = r.poll_answer() {
        assert_eq!(a.resolution.rcode, Rcode::NXDOMAIN);
        answered += 1;
    }
    assert_eq!(answered, 20);
}
