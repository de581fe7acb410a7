//! Iterative resolution against an in-memory internet of authoritative
//! servers (bulwark's own answering engine behind each address): referrals,
//! QNAME minimisation, CNAMEs across zones, name servers without glue,
//! negative answers and the cache.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use bulwark_proto::{Rcode, Rtype};
use bulwark_resolver::cache::ServersFlushed;
use bulwark_resolver::Resolver;
use common::*;

#[test]
fn a_name_is_resolved_from_the_root_down() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{:?}\n{:#?}", res, net.asked());
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.80".parse::<std::net::IpAddr>().unwrap()]
    );
}

#[test]
fn minimised_queries_ask_each_server_for_one_more_label_only() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    net.resolve(&mut r, "www.example.com.", Rtype::A);
    let asked = net.asked();
    // Priming, then `com.` of the root, `example.com.` of com's server, and
    // the full name only of example.com's.
    assert!(asked.iter().any(|a| a == "10.0.0.1 . NS Udp"), "{asked:#?}");
    assert!(
        asked.iter().any(|a| a == "10.0.0.1 com. NS Udp"),
        "{asked:#?}"
    );
    assert!(
        asked.iter().any(|a| a == "10.0.1.1 example.com. NS Udp"),
        "{asked:#?}"
    );
    assert!(
        asked.iter().any(|a| a == "10.0.3.1 www.example.com. A Udp"),
        "{asked:#?}"
    );
    assert!(
        !asked
            .iter()
            .any(|a| a.starts_with("10.0.0.1 www.") || a.starts_with("10.0.1.1 www.")),
        "the full name went to a server above its zone: {asked:#?}"
    );
}

#[test]
fn without_minimisation_the_full_name_goes_everywhere() {
    let mut net = internet();
    let mut r = resolver(|c| c.qname_minimisation = false);
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    let asked = net.asked();
    assert!(
        asked.iter().any(|a| a == "10.0.0.1 www.example.com. A Udp"),
        "{asked:#?}"
    );
    assert!(
        asked.iter().any(|a| a == "10.0.1.1 www.example.com. A Udp"),
        "{asked:#?}"
    );
}

#[test]
fn the_cache_answers_the_second_time_without_asking() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    net.resolve(&mut r, "www.example.com.", Rtype::A);
    let before = net.log.len();
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR);
    assert_eq!(net.log.len(), before, "asked again: {:#?}", net.asked());
    // A sibling name reuses the cached delegation: only example.com's
    // server is asked.
    net.resolve(&mut r, "ns1.example.com.", Rtype::A);
    assert!(
        net.log[before..]
            .iter()
            .all(|(ip, ..)| ip.to_string() == "10.0.3.1"),
        "{:#?}",
        net.asked()
    );
}

#[test]
fn a_cname_into_another_zone_is_followed_there() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "alias.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}\n{:#?}", net.asked());
    assert_eq!(res.answer[0].rtype, Rtype::CNAME);
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.81".parse::<std::net::IpAddr>().unwrap()]
    );
}

/// A DNAME learnt once rewrites later names below it from the cache: the
/// zone that holds it is not asked again (RFC 6672 §3.2; Unbound and Knot
/// Resolver do the same).
#[test]
fn a_cached_dname_is_followed_without_asking_its_zone_again() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.old.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}\n{:#?}", net.asked());
    assert_eq!(res.answer[0].rtype, Rtype::DNAME);
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.81".parse::<std::net::IpAddr>().unwrap()]
    );
    let before = net.queries_to("10.0.3.1");
    let res = net.resolve(&mut r, "mail.old.example.com.", Rtype::A);
    // mail.outsourced.com. does not exist; the DNAME and its CNAME come
    // first all the same.
    assert_eq!(res.rcode, Rcode::NXDOMAIN, "{res:?}\n{:#?}", net.asked());
    assert_eq!(res.answer[0].rtype, Rtype::DNAME);
    assert_eq!(res.answer[1].rtype, Rtype::CNAME);
    assert_eq!(
        net.queries_to("10.0.3.1"),
        before,
        "example.com.'s server was asked again: {:#?}",
        net.asked()
    );
}

#[test]
fn name_servers_without_glue_are_looked_up_first() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    // outsourced.com.'s server is ns.hoster.net., with no glue in com.
    let res = net.resolve(&mut r, "www.outsourced.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}\n{:#?}", net.asked());
    assert!(
        net.queries_to("10.0.2.1") > 0,
        "net.'s server was asked for hoster.net."
    );
}

#[test]
fn nxdomain_is_answered_and_cached_with_its_soa() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "nothere.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NXDOMAIN);
    assert_eq!(res.authority[0].rtype, Rtype::SOA);
    let before = net.log.len();
    let again = net.resolve(&mut r, "nothere.example.com.", Rtype::A);
    assert_eq!(again.rcode, Rcode::NXDOMAIN);
    assert_eq!(net.log.len(), before, "the negative answer was cached");
}

#[test]
fn a_minimised_nxdomain_is_confirmed_with_the_full_name() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "a.b.c.nothere.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NXDOMAIN, "{:#?}", net.asked());
    // com.'s server said nothere.com. does not exist; unvalidated, that is
    // checked once with the full name (Unbound's relaxed mode), no more.
    let full = net
        .asked()
        .iter()
        .filter(|a| a.contains("a.b.c.nothere"))
        .count();
    assert_eq!(full, 1, "{:#?}", net.asked());
    let before = net.log.len();
    let again = net.resolve(&mut r, "a.b.c.nothere.com.", Rtype::A);
    assert_eq!(again.rcode, Rcode::NXDOMAIN);
    assert_eq!(net.log.len(), before, "the NXDOMAIN was cached");
}

#[test]
fn empty_non_terminals_are_walked_through_label_by_label() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "a.b.c.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}\n{:#?}", net.asked());
    assert_eq!(
        addresses(&res, Rtype::A),
        ["192.0.2.9".parse::<std::net::IpAddr>().unwrap()]
    );
}

#[test]
fn nodata_is_a_noerror_answer_with_the_soa() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::MX);
    assert_eq!(res.rcode, Rcode::NOERROR);
    assert!(res.answer.is_empty());
    assert_eq!(res.authority[0].rtype, Rtype::SOA);
}

#[test]
fn a_silent_server_is_passed_over_for_another() {
    let mut net = internet_with_a_second_example_server();
    let mut r = resolver(|_| {});
    for host in ["www", "ns1"] {
        let res = net.resolve(&mut r, &format!("{host}.example.com."), Rtype::A);
        assert_eq!(res.rcode, Rcode::NOERROR, "{res:?}\n{:#?}", net.asked());
    }
}

/// example.com. with a second server, 10.0.3.2, which is silent.
fn internet_with_a_second_example_server() -> Net {
    let mut net = internet();
    net.servers
        .insert("10.0.3.2".parse().unwrap(), Behaviour::Silent);
    net.serve(
        "10.0.1.1",
        vec![zone(
            "com.",
            r#"
$TTL 86400
@ SOA ns.com. admin.com. 1 1800 900 604800 3600
@ NS ns.com.
ns A 10.0.1.1
example NS ns1.example.com.
example NS ns2.example.com.
ns1.example A 10.0.3.1
ns2.example A 10.0.3.2
"#,
        )],
    );
    net
}

#[test]
fn after_an_infra_flush_a_server_given_up_on_is_asked_again() {
    let mut net = internet_with_a_second_example_server();
    let mut r = resolver(|_| {});
    fn ask(net: &mut Net, r: &mut Resolver, from: usize) {
        for i in from..from + 20 {
            let res = net.resolve(r, &format!("n{i}.example.com."), Rtype::A);
            assert_eq!(res.rcode, Rcode::NXDOMAIN, "{res:?}");
        }
    }
    ask(&mut net, &mut r, 0);
    assert!(net.queries_to("10.0.3.2") >= 1, "{:#?}", net.asked());
    // The server is fixed; the resolver, having timed it out, leaves it
    // alone (its round trip doubled, far out of the fastest band).
    net.serve("10.0.3.2", vec![example_zone()]);
    let given_up = net.queries_to("10.0.3.2");
    ask(&mut net, &mut r, 100);
    assert_eq!(net.queries_to("10.0.3.2"), given_up);
    // Forgetting another server changes nothing for it.
    r.cache()
        .flush_servers(ServersFlushed::One("10.0.3.9".parse().unwrap()));
    ask(&mut net, &mut r, 200);
    assert_eq!(net.queries_to("10.0.3.2"), given_up);
    // Forgetting it makes it a server never heard from, in the band again.
    r.cache()
        .flush_servers(ServersFlushed::One("10.0.3.2".parse().unwrap()));
    ask(&mut net, &mut r, 300);
    assert!(net.queries_to("10.0.3.2") > given_up, "{:#?}", net.asked());
}

#[test]
fn when_no_server_answers_the_client_gets_servfail_saying_why() {
    let mut net = internet();
    net.servers
        .insert("10.0.3.1".parse().unwrap(), Behaviour::Silent);
    let mut r = resolver(|_| {});
    let res = net.resolve(&mut r, "www.example.com.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL);
    assert_eq!(
        res.ede.as_ref().map(|e| e.0),
        Some(bulwark_resolver::ede::NO_REACHABLE_AUTHORITY)
    );
}

#[test]
fn a_name_server_inside_its_own_zone_without_glue_fails_without_looping() {
    let mut net = internet();
    let mut r = resolver(|_| {});
    // org. delegates loop.org. to ns.loop.org. and gives no glue.
    let res = net.resolve(&mut r, "www.loop.org.", Rtype::A);
    assert_eq!(res.rcode, Rcode::SERVFAIL);
    assert!(net.log.len() < 20, "{:#?}", net.asked());
}
