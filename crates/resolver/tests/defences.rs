//! What the engine refuses to believe or to spend: records outside a
//! server's bailiwick, the cost of a referral full of glueless name servers
//! (NXNSAttack), identical questions asked many times at once; and how it
//! copes with truncation, servers without EDNS, forwarders and stale data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use bulwark_proto::message::{MessageBuilder, Section};
use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Class, MessageView, Rcode, Rtype};
use bulwark_resolver::{ClientQuestion, ClientToken, ForwardZone, StaleConfig};
use common::*;

/// An answer to whatever is asked (AA set) carrying `extra` in the
/// additional section: a server trying to poison the cache.
fn poisoner(answer_ip: &'static str, extra: Vec<(&'static str, &'static str)>) -> Behaviour {
    Behaviour::Custom(Arc::new(move |query: &[u8]| {
        let view = MessageView::parse(query).ok()?;
        let q = view.question()?;
        let mut out = Vec::new();
        let mut b = MessageBuilder::response_to(&mut out, 4096, &view).ok()?;
        b.header_mut().flags.aa = true;
        if q.qtype == Rtype::A {
            let a = Rdata::A(answer_ip.parse().unwrap()).to_wire();
            b.push_record(Section::Answer, &q.qname, Rtype::A, Class::IN, 300, &a)
                .ok()?;
        }
        for (owner, ip) in &extra {
            let a = Rdata::A(ip.parse().unwrap()).to_wire();
            b.push_record(
                Section::Additional,
                &name(owner),
                Rtype::A,
                Class::IN,
                300,
                &a,
            )
            .ok()?;
        }
        let len = b.finish(None).ok()?;
        out.truncate(len);
        Some(out)
    }))
}

#[test]
fn records_outside_the_servers_bailiwick_are_never_cached() {
    let mut net = internet();
    // example.com.'s server answers, and slips in an address for
    // www.outsourced.com. (another zone) and for ns.com. (its parent).
    net.set(
        "10.0.3.1",
        poisoner(
            "192.0.2.80",
            vec![
                ("www.outsourced.com.", "203.0.113.66"),
                ("ns.com.", "203.0.113.67"),
            ],
        ),
    );
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    let now = net.now;
    assert!(r
        .cache()
        .rrset(&name("www.outsourced.com."), Rtype::A, now)
        .is_none());
    let ns = r.cache().rrset(&name("ns.com."), Rtype::A, now);
    assert!(ns.is_none_or(|(s, _)| !s.addresses().contains(&"203.0.113.67".parse().unwrap())));
    // And the real answer comes from the real server.
    let res = net.resolve(&mut r, "www.outsourced.com.", Rtype::A);
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.81".parse::<std::net::IpAddr>().unwrap()]
    );
}

#[test]
fn a_referral_full_of_glueless_name_servers_costs_a_bounded_number_of_queries() {
    let mut net = internet();
    // NXNSAttack: org.'s server refers everything to 100 name servers in a
    // zone that does not exist, none with glue.
    net.set(
        "10.0.5.1",
        Behaviour::Custom(Arc::new(|query: &[u8]| {
            let view = MessageView::parse(query).ok()?;
            let mut out = Vec::new();
            let mut b = MessageBuilder::response_to(&mut out, 65535, &view).ok()?;
            let owner = name("victim.org.");
            for i in 0..100 {
                let target = Rdata::Ns(name(&format!("ns{i}.nowhere.com."))).to_wire();
                b.push_record(
                    Section::Authority,
                    &owner,
                    Rtype::NS,
                    Class::IN,
                    3600,
                    &target,
                )
                .ok()?;
            }
            let len = b.finish(None).ok()?;
            out.truncate(len);
            Some(out)
        })),
    );
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.victim.org.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL);
    let limits = r.config().limits;
    assert!(
        net.log.len() <= limits.max_upstream_queries as usize + limits.max_ns_lookups as usize * 4,
        "{} queries for one question",
        net.log.len()
    );
}

#[test]
fn identical_questions_asked_at_once_cost_one_resolution() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    for i in 0..50u64 {
        let q = ClientQuestion {
            token: ClientToken(i),
            client: std::net::IpAddr::from([198, 51, 100, i as u8]),
            qname: name("www.example.com."),
            qtype: Rtype::A,
        };
        assert!(r.handle_query(q, net.now).is_none());
    }
    let mut answers = 0;
    while answers < 50 {
        while let Some(t) = r.poll_transmit() {
            let to = t.to.ip();
            let result = match net.servers.get(&to).cloned() {
                Some(Behaviour::Zones(z)) => {
                    let mut out = Vec::new();
                    net.answerer
                        .answer(&z, bulwark_auth::Transport::Udp, &t.message, &mut out);
                    net.log.push((to, name("x."), Rtype::A, t.transport));
                    Ok(out)
                }
                _ => Err(bulwark_resolver::ExchangeError::Timeout),
            };
            r.handle_response(t.id, result, net.now);
        }
        while let Some(a) = r.poll_answer() {
            assert_eq!(a.resolution.rcode, Rcode::NOERROR);
            answers += 1;
        }
    }
    assert!(
        net.log.len() <= 5,
        "{} queries for 50 identical questions",
        net.log.len()
    );
}

#[test]
fn a_truncated_answer_is_asked_again_over_tcp() {
    let mut net = internet();
    net.set(
        "10.0.3.1",
        Behaviour::Custom(Arc::new(|query: &[u8]| {
            let view = MessageView::parse(query).ok()?;
            let mut out = Vec::new();
            let mut b = MessageBuilder::response_to(&mut out, 4096, &view).ok()?;
            b.header_mut().flags.aa = true;
            b.header_mut().flags.tc = true;
            let len = b.finish(None).ok()?;
            out.truncate(len);
            Some(out)
        })),
    );
    let mut r = resolver(|_| {});
    let _ = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert!(
        net.log
            .iter()
            .any(|(ip, n, _, t)| ip.to_string() == "10.0.3.1"
                && n.to_string() == "www.example.com."
                && *t == bulwark_resolver::Transport::Tcp),
        "{:#?}",
        net.asked()
    );
}

#[test]
fn questions_under_a_forward_zone_go_to_its_forwarders_with_rd_set() {
    let mut net = internet();
    // A forwarder at 10.0.9.9 that knows everything example.com. knows.
    net.serve("10.0.9.9", vec![example_zone()]);
    let mut r = resolver(|c| {
        c.forwards = vec![ForwardZone {
            zone: name("example.com."),
            addresses: vec![SocketAddr::new("10.0.9.9".parse().unwrap(), 53)],
            fallback_to_iteration: false,
        }]
    });
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{:#?}", net.asked());
    assert_eq!(net.log.len(), 1, "only the forwarder: {:#?}", net.asked());
    assert_eq!(net.log[0].0.to_string(), "10.0.9.9");
}

#[test]
fn when_the_servers_fail_a_stale_answer_is_served_rfc_8767() {
    let mut net = internet();
    let mut r = resolver(|c| {
        c.stale = Some(StaleConfig {
            max_stale_secs: 86_400,
            stale_answer_ttl: 30,
            client_timeout_ms: 1_800,
        })
    });
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    // An hour and more later, the zone's server is gone.
    net.now += 3_700_000;
    net.servers
        .insert("10.0.3.1".parse().unwrap(), Behaviour::Silent);
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}");
    assert!(res.stale);
    assert_eq!(res.answer[0].ttl, 30);
    assert_eq!(
        res.ede.as_ref().map(|e| e.0),
        Some(bulwark_resolver::ede::STALE_ANSWER)
    );
}

/// A delegation whose glue points at loopback: the attacker's way of making
/// the resolver query services on its own host. Refused unless the operator
/// allowed it; root hints the operator configured are used wherever they are.
#[test]
fn a_delegation_to_loopback_is_not_followed_unless_allowed() {
    let lure = zone(
        "com.",
        r#"
$TTL 86400
@ SOA ns.com. admin.com. 1 1800 900 604800 3600
@ NS ns.com.
ns A 10.0.1.1
example NS ns1.example.com.
ns1.example A 127.0.0.1
"#,
    );
    let build = || {
        let mut net = internet();
        net.serve("10.0.1.1", vec![lure.clone()]);
        net.serve("127.0.0.1", vec![example_zone()]);
        net
    };
    let mut net = build();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL);
    assert_eq!(net.queries_to("127.0.0.1"), 0, "{:?}", net.asked());

    let mut net = build();
    let mut r = resolver(|c| c.query_localhost = true);
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    assert!(net.queries_to("127.0.0.1") > 0);

    // Root hints on loopback, as a test network has them: configured, so used.
    let mut net = Net::new();
    net.serve("127.0.0.9", vec![root_zone()]);
    net.serve(ROOT_IP, vec![root_zone()]);
    net.serve("10.0.1.1", vec![com_zone()]);
    net.serve("10.0.3.1", vec![example_zone()]);
    let mut r = resolver(|c| c.root_hints = vec![SocketAddr::from(([127, 0, 0, 9], 53))]);
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{:?}", net.asked());
    assert!(net.queries_to("127.0.0.9") > 0, "{:?}", net.asked());
}
