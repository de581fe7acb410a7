//! RFC 1034 §4.3.2 lookups: answers, CNAME and DNAME, wildcards, referrals,
//! negative answers, ANY and additional data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use bulwark_auth::{AnswerConfig, Transport};
use common::*;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

/// Hickory 0.24 has no DNAME variant.
fn dname() -> RecordType {
    RecordType::from(39)
}

fn owners(records: &[hickory_proto::rr::Record]) -> Vec<String> {
    rows(records).into_iter().map(|r| r.0).collect()
}

#[test]
fn exact_match_answers_the_rrset_authoritatively() {
    let m = ask_example("web.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.authoritative());
    assert!(!m.recursion_available());
    assert!(!m.authentic_data());
    assert_eq!(
        rows(m.answers()),
        vec![(
            "web.example.com.".into(),
            RecordType::A,
            3600,
            "192.0.2.80".into()
        )]
    );
    // Minimal responses: no NS in authority, no additional.
    assert!(m.name_servers().is_empty());
    assert!(m.additionals().is_empty());
}

#[test]
fn question_case_is_echoed_and_answer_owner_keeps_it() {
    let m = ask_example("WeB.ExAmPlE.cOm.", RecordType::A);
    assert_eq!(m.queries()[0].name().to_ascii(), "WeB.ExAmPlE.cOm.");
    assert_eq!(m.answers()[0].name().to_ascii(), "WeB.ExAmPlE.cOm.");
}

#[test]
fn rd_and_cd_are_copied_and_id_echoed() {
    let mut q = query("web.example.com.", RecordType::A);
    q.set_checking_disabled(true);
    let m = ask(&zoneset(&[example()]), &q);
    assert_eq!(m.id(), 0x1234);
    assert!(m.recursion_desired());
    assert!(m.checking_disabled());
    let mut q = query("web.example.com.", RecordType::A);
    q.set_recursion_desired(false);
    let m = ask(&zoneset(&[example()]), &q);
    assert!(!m.recursion_desired());
    assert!(!m.checking_disabled());
}

#[test]
fn nxdomain_carries_soa_in_authority() {
    let m = ask_example("nothere.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    assert!(m.authoritative());
    assert!(m.answers().is_empty());
    assert_eq!(owners(m.name_servers()), vec!["example.com."]);
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn negative_soa_ttl_is_the_smaller_of_ttl_and_minimum() {
    // SOA TTL 3600, MINIMUM 300.
    let m = ask_example("nothere.example.com.", RecordType::A);
    assert_eq!(m.name_servers()[0].ttl(), 300);
    // SOA TTL 60, MINIMUM 300.
    let z = zone(
        "example.net.",
        "@ 60 SOA ns1 h 1 2 3 4 300\n@ 60 NS ns1\nns1 60 A 192.0.2.1\n",
    );
    let m = ask(&zoneset(&[z]), &query("x.example.net.", RecordType::A));
    assert_eq!(m.name_servers()[0].ttl(), 60);
}

#[test]
fn nodata_is_noerror_with_soa() {
    let m = ask_example("web.example.com.", RecordType::AAAA);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty());
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn empty_nonterminal_is_nodata_not_nxdomain() {
    let m = ask_example("b.ent.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty());
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn cname_chain_is_followed_inside_the_zone() {
    let m = ask_example("chain.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(
        rows(m.answers()),
        vec![
            (
                "chain.example.com.".into(),
                RecordType::CNAME,
                3600,
                "www.example.com.".into()
            ),
            (
                "www.example.com.".into(),
                RecordType::CNAME,
                3600,
                "web.example.com.".into()
            ),
            (
                "web.example.com.".into(),
                RecordType::A,
                3600,
                "192.0.2.80".into()
            ),
        ]
    );
}

#[test]
fn cname_query_returns_the_cname_without_following() {
    let m = ask_example("www.example.com.", RecordType::CNAME);
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
}

#[test]
fn rrsig_and_nsec_queries_at_a_cname_are_not_followed() {
    // RFC 4035 §2.5: RRSIG and NSEC sit beside a CNAME; they are the owner's data.
    for qtype in [RecordType::RRSIG, RecordType::NSEC] {
        let m = ask_example("www.example.com.", qtype);
        assert_eq!(m.response_code(), ResponseCode::NoError, "{qtype}");
        assert!(
            m.answers().is_empty(),
            "{qtype}: NODATA, not the CNAME chain"
        );
        assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
    }
}

#[test]
fn cname_into_another_served_zone_is_not_followed_like_knot() {
    let org = zone(
        "example.org.",
        "@ SOA ns1.example.com. h 1 2 3 4 100\n@ NS ns1.example.com.\nwww A 198.51.100.1\n",
    );
    let m = ask(
        &zoneset(&[example(), org]),
        &query("ext.example.com.", RecordType::A),
    );
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
    assert!(m.name_servers().is_empty());
}

#[test]
fn cname_loop_stops_after_each_name_once() {
    let m = ask_example("loop1.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(
        owners(m.answers()),
        vec!["loop1.example.com.", "loop2.example.com."]
    );
}

#[test]
fn cname_to_nonexistent_name_is_nxdomain_with_the_cname() {
    let m = ask_example("dangling.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn cname_to_nodata_is_noerror_with_soa() {
    let m = ask_example("chain.example.com.", RecordType::MX);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(
        types(m.answers()),
        vec![RecordType::CNAME, RecordType::CNAME]
    );
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn cname_into_a_delegation_adds_the_referral_and_keeps_aa() {
    let m = ask_example("tosub.example.com.", RecordType::A);
    assert!(m.authoritative());
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
    assert_eq!(
        types(m.name_servers()),
        vec![RecordType::NS, RecordType::NS]
    );
    assert_eq!(owners(m.additionals()), vec!["ns.sub.example.com."]);
}

#[test]
fn dname_synthesizes_cname_with_dname_ttl() {
    let z = zone(
        "example.com.",
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\ndn 777 DNAME example.org.\n",
    );
    let m = ask(&zoneset(&[z]), &query("a.B.dn.example.com.", RecordType::A));
    assert_eq!(m.response_code(), ResponseCode::NoError);
    let r = rows(m.answers());
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].0.as_str(), r[0].1, r[0].2),
        ("dn.example.com.", dname(), 777)
    );
    assert_eq!(
        r[1],
        (
            "a.b.dn.example.com.".into(),
            RecordType::CNAME,
            777,
            "a.B.example.org.".into()
        )
    );
    // The synthesized CNAME's owner is the name as asked.
    assert_eq!(m.answers()[1].name().to_ascii(), "a.B.dn.example.com.");
}

#[test]
fn dname_target_inside_the_zone_is_followed() {
    let m = ask_example("x.dn2.example.com.", RecordType::A);
    assert_eq!(
        types(m.answers()),
        vec![dname(), RecordType::CNAME, RecordType::A]
    );
    let m = ask_example("y.dn2.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    assert_eq!(types(m.answers()), vec![dname(), RecordType::CNAME]);
}

#[test]
fn dname_owner_itself_is_not_redirected() {
    let m = ask_example("dn.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty());
    let m = ask_example("dn.example.com.", dname());
    assert_eq!(types(m.answers()), vec![dname()]);
}

#[test]
fn dname_result_too_long_is_yxdomain() {
    let l63 = "a".repeat(63);
    let text = format!(
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\nd DNAME {l63}.{l63}.{l63}.net.\n"
    );
    let z = zone("example.com.", &text);
    let m = ask(
        &zoneset(&[z]),
        &query(&format!("{l63}.d.example.com."), RecordType::A),
    );
    assert_eq!(m.response_code(), ResponseCode::YXDomain);
    assert_eq!(types(m.answers()), vec![dname()]);
    // Like a negative answer (and like Knot): the SOA, so it can be cached.
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn wildcard_answers_with_the_query_name_as_owner() {
    let m = ask_example("FoO.wild.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.authoritative());
    assert_eq!(m.answers()[0].name().to_ascii(), "FoO.wild.example.com.");
    assert_eq!(rows(m.answers())[0].3, "192.0.2.7");
    // Any depth below the closest encloser.
    let m = ask_example("x.y.wild.example.com.", RecordType::TXT);
    assert_eq!(types(m.answers()), vec![RecordType::TXT]);
}

#[test]
fn wildcard_without_the_type_is_nodata() {
    let m = ask_example("foo.wild.example.com.", RecordType::MX);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty());
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn wildcard_does_not_apply_below_empty_nonterminal() {
    // *.ent exists, but b.ent is an empty non-terminal: x.b.ent's closest encloser
    // is b.ent, which has no wildcard child.
    let m = ask_example("x.b.ent.example.com.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    let m = ask_example("c.ent.example.com.", RecordType::A);
    assert_eq!(rows(m.answers())[0].3, "192.0.2.10");
}

#[test]
fn wildcard_does_not_apply_to_existing_names() {
    let m = ask_example("a.b.ent.example.com.", RecordType::A);
    assert_eq!(rows(m.answers())[0].3, "192.0.2.9");
}

#[test]
fn wildcard_cname_is_followed() {
    let m = ask_example("foo.wc.example.com.", RecordType::A);
    assert_eq!(
        rows(m.answers()),
        vec![
            (
                "foo.wc.example.com.".into(),
                RecordType::CNAME,
                3600,
                "web.example.com.".into()
            ),
            (
                "web.example.com.".into(),
                RecordType::A,
                3600,
                "192.0.2.80".into()
            ),
        ]
    );
}

#[test]
fn referral_has_ns_in_authority_glue_in_additional_and_no_aa() {
    for qname in [
        "sub.example.com.",
        "www.sub.example.com.",
        "ns.sub.example.com.",
    ] {
        let m = ask_example(qname, RecordType::A);
        assert_eq!(m.response_code(), ResponseCode::NoError, "{qname}");
        assert!(!m.authoritative(), "{qname}");
        assert!(m.answers().is_empty());
        assert_eq!(
            owners(m.name_servers()),
            vec!["sub.example.com.", "sub.example.com."]
        );
        assert_eq!(
            rows(m.additionals()),
            vec![(
                "ns.sub.example.com.".into(),
                RecordType::A,
                3600,
                "192.0.2.200".into()
            )]
        );
    }
}

#[test]
fn ns_query_at_a_delegation_is_a_referral() {
    let m = ask_example("sub.example.com.", RecordType::NS);
    assert!(!m.authoritative());
    assert!(m.answers().is_empty());
    assert_eq!(
        types(m.name_servers()),
        vec![RecordType::NS, RecordType::NS]
    );
}

#[test]
fn ds_at_a_delegation_is_answered_from_the_parent_side() {
    let z = zone(
        "example.com.",
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\n\
         sub NS ns.sub\nns.sub A 192.0.2.2\n\
         sub DS 12345 8 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\
         nods NS ns.sub\n",
    );
    let zs = zoneset(&[z]);
    let m = ask(&zs, &query("sub.example.com.", RecordType::DS));
    assert!(m.authoritative());
    assert_eq!(types(m.answers()), vec![RecordType::DS]);
    let m = ask(&zs, &query("nods.example.com.", RecordType::DS));
    assert!(m.authoritative());
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty());
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
    // Below the cut, DS is referred like anything else.
    let m = ask(&zs, &query("x.sub.example.com.", RecordType::DS));
    assert!(!m.authoritative());
    assert_eq!(types(m.name_servers()), vec![RecordType::NS]);
}

#[test]
fn ds_at_a_child_apex_we_serve_goes_to_the_parent_zone() {
    let parent = zone(
        "example.com.",
        "@ SOA ns1 h 1 2 3 4 300\n@ NS ns1\nns1 A 192.0.2.1\nchild NS ns1.child\nns1.child A 192.0.2.3\n",
    );
    let child = zone(
        "child.example.com.",
        "@ 600 SOA ns1 h 1 2 3 4 100\n@ 600 NS ns1\nns1 600 A 192.0.2.3\n",
    );
    let zs = zoneset(&[parent, child]);
    let m = ask(&zs, &query("child.example.com.", RecordType::DS));
    assert!(m.authoritative());
    assert!(m.answers().is_empty());
    assert_eq!(owners(m.name_servers()), vec!["example.com."]);
    // Other types at the child apex come from the child.
    let m = ask(&zs, &query("child.example.com.", RecordType::NS));
    assert!(m.authoritative());
    assert_eq!(m.answers()[0].ttl(), 600);
    // With no parent zone served, the child answers DS itself.
    let m = ask(
        &zoneset(&[example()]),
        &query("example.com.", RecordType::DS),
    );
    assert_eq!(owners(m.name_servers()), vec!["example.com."]);
}

#[test]
fn any_is_answered_with_the_lowest_type_rrset_like_knot() {
    let m = ask_example("example.com.", RecordType::ANY);
    assert_eq!(types(m.answers()), vec![RecordType::A]);
    let m = ask_example("multi2.example.com.", RecordType::ANY);
    assert_eq!(types(m.answers()), vec![RecordType::HINFO]);
    let m = ask_example("www.example.com.", RecordType::ANY);
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
    let m = ask_example("nothere.example.com.", RecordType::ANY);
    assert_eq!(m.response_code(), ResponseCode::NXDomain);
    let m = ask_example("b.ent.example.com.", RecordType::ANY);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
}

#[test]
fn mx_answer_adds_addresses_of_in_zone_exchanges() {
    let m = ask_example("example.com.", RecordType::MX);
    assert_eq!(types(m.answers()), vec![RecordType::MX, RecordType::MX]);
    assert_eq!(
        rows(m.additionals()),
        vec![(
            "mail.example.com.".into(),
            RecordType::A,
            3600,
            "192.0.2.25".into()
        )]
    );
    assert!(m.name_servers().is_empty());
}

#[test]
fn ns_answer_adds_addresses_of_in_zone_servers() {
    let m = ask_example("example.com.", RecordType::NS);
    assert_eq!(
        types(m.additionals()),
        vec![RecordType::A, RecordType::AAAA]
    );
}

#[test]
fn srv_answer_adds_target_addresses() {
    let z = zone(
        "example.com.",
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\n_sip._tcp SRV 0 5 5060 sipsrv\nsipsrv A 192.0.2.99\n",
    );
    let m = ask(
        &zoneset(&[z]),
        &query("_sip._tcp.example.com.", RecordType::SRV),
    );
    assert_eq!(owners(m.additionals()), vec!["sipsrv.example.com."]);
}

#[test]
fn tcp_and_udp_give_the_same_answer_when_it_fits() {
    let zs = zoneset(&[example()]);
    let q = query("chain.example.com.", RecordType::A).to_vec().unwrap();
    let u = answer_with(AnswerConfig::default(), &zs, Transport::Udp, &q);
    let t = answer_with(AnswerConfig::default(), &zs, Transport::Tcp, &q);
    assert_eq!(u.wire, t.wire);
}
