//! Size limits, truncation (RFC 2181 §9) and EDNS (RFC 6891).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use bulwark_auth::{AnswerConfig, AnswerOutcome, Transport};
use bulwark_proto::Rcode;
use common::*;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;

/// A zone with a TXT RRset of about `size` octets at `big`, a CNAME to it and an
/// MX whose exchange has many addresses.
fn sized_zone(txt_records: usize) -> bulwark_zone::ZoneSet {
    let mut text =
        String::from("@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\nbigchain CNAME big\n");
    for i in 0..txt_records {
        text.push_str(&format!("big TXT \"{i:03}{}\"\n", "x".repeat(96)));
    }
    text.push_str("mx MX 10 hosts\n");
    for i in 0..60 {
        text.push_str(&format!("hosts A 192.0.2.{i}\n"));
    }
    zoneset(&[zone("example.com.", &text)])
}

fn run(zs: &bulwark_zone::ZoneSet, t: Transport, q: &hickory_proto::op::Message) -> Answered {
    answer_with(AnswerConfig::default(), zs, t, &q.to_vec().unwrap())
}

#[test]
fn truncation_sets_tc_when_answer_does_not_fit() {
    // 6 × ~112 octets: more than 512.
    let zs = sized_zone(6);
    let a = run(
        &zs,
        Transport::Udp,
        &query("big.example.com.", RecordType::TXT),
    );
    assert!(a.wire.len() <= 512);
    assert_eq!(
        a.outcome,
        AnswerOutcome::Respond {
            rcode: Rcode::NOERROR,
            truncated: true
        }
    );
    let m = a.msg();
    assert!(m.truncated());
    assert!(m.authoritative());
    assert_eq!(m.queries().len(), 1);
    assert!(m.answers().is_empty(), "an RRset is never split");
}

#[test]
fn truncated_response_keeps_the_rrsets_that_fit_like_knot() {
    let zs = sized_zone(6);
    let m = run(
        &zs,
        Transport::Udp,
        &query("bigchain.example.com.", RecordType::TXT),
    )
    .msg();
    assert!(m.truncated());
    assert_eq!(types(m.answers()), vec![RecordType::CNAME]);
}

#[test]
fn edns_payload_raises_the_udp_limit() {
    let zs = sized_zone(6);
    let q = with_edns(query("big.example.com.", RecordType::TXT), 1232, false);
    let a = run(&zs, Transport::Udp, &q);
    let m = a.msg();
    assert!(!m.truncated());
    assert_eq!(m.answers().len(), 6);
    assert!(a.wire.len() > 512);
}

#[test]
fn udp_limit_is_capped_by_max_udp_payload() {
    let zs = sized_zone(12); // ~1350 octets
    let q = with_edns(query("big.example.com.", RecordType::TXT), 4096, false);
    let a = run(&zs, Transport::Udp, &q);
    assert!(a.msg().truncated());
    assert!(a.wire.len() <= 1232);
    let cfg = AnswerConfig {
        max_udp_payload: 4096,
        ..AnswerConfig::default()
    };
    let a = answer_with(cfg, &zs, Transport::Udp, &q.to_vec().unwrap());
    assert!(!a.msg().truncated());
}

#[test]
fn client_payload_below_512_is_treated_as_512() {
    let zs = sized_zone(4); // ~460 octets of TXT: fits 512, not 300
    let q = with_edns(query("big.example.com.", RecordType::TXT), 300, false);
    let a = run(&zs, Transport::Udp, &q);
    assert!(!a.msg().truncated());
    assert!(a.wire.len() > 300);
}

#[test]
fn tcp_is_not_limited_to_512() {
    let zs = sized_zone(12);
    let a = run(
        &zs,
        Transport::Tcp,
        &query("big.example.com.", RecordType::TXT),
    );
    assert!(!a.msg().truncated());
    assert_eq!(a.msg().answers().len(), 12);
}

#[test]
fn additional_data_that_does_not_fit_is_left_out_without_tc() {
    let zs = sized_zone(1);
    let a = run(
        &zs,
        Transport::Udp,
        &query("mx.example.com.", RecordType::MX),
    );
    let m = a.msg();
    assert!(!m.truncated());
    assert_eq!(types(m.answers()), vec![RecordType::MX]);
    assert!(m.additionals().is_empty());
    // Over TCP there is room.
    let m = run(
        &zs,
        Transport::Tcp,
        &query("mx.example.com.", RecordType::MX),
    )
    .msg();
    assert_eq!(m.additionals().len(), 60);
}

#[test]
fn response_to_edns_query_carries_opt_with_our_size_and_do_echoed() {
    let zs = zoneset(&[example()]);
    let m = ask(
        &zs,
        &with_edns(query("web.example.com.", RecordType::A), 4096, true),
    );
    let e = m.extensions().as_ref().expect("OPT");
    assert_eq!(e.max_payload(), 1232);
    assert_eq!(e.version(), 0);
    assert!(e.dnssec_ok());
    let m = ask(
        &zs,
        &with_edns(query("web.example.com.", RecordType::A), 4096, false),
    );
    assert!(!m.extensions().as_ref().unwrap().dnssec_ok());
    // Errors carry it too.
    let m = ask(
        &zs,
        &with_edns(query("www.example.net.", RecordType::A), 1232, false),
    );
    assert_eq!(m.response_code(), ResponseCode::Refused);
    assert!(m.extensions().is_some());
}

#[test]
fn refused_for_a_name_outside_our_zones_carries_ede_not_authoritative() {
    let zs = zoneset(&[example()]);
    let a = answer_with(
        AnswerConfig::default(),
        &zs,
        Transport::Udp,
        &with_edns(query("www.example.net.", RecordType::A), 1232, false)
            .to_vec()
            .unwrap(),
    );
    // OPT: root, type 41, class, ttl, rdlength 6, option 15 (EDE) length 2, code 20.
    assert!(
        a.wire.ends_with(&[0, 6, 0, 15, 0, 2, 0, 20]),
        "{:02x?}",
        a.wire
    );
}

#[test]
fn response_without_edns_query_has_no_opt() {
    let m = ask_example("web.example.com.", RecordType::A);
    assert!(m.extensions().is_none());
    assert!(m.additionals().is_empty());
}

#[test]
fn names_are_compressed() {
    let zs = zoneset(&[example()]);
    let a = answer_with(
        AnswerConfig::default(),
        &zs,
        Transport::Udp,
        &query("chain.example.com.", RecordType::A).to_vec().unwrap(),
    );
    // Header 12 + question 23 + 3 records with 2-octet owner pointers; the CNAME
    // targets compress against earlier names. Uncompressed this would be 145.
    assert!(a.wire.len() < 110, "{}", a.wire.len());
    assert_eq!(a.msg().answers().len(), 3);
}

/// A delegation to `child` whose name servers are in-domain (below the cut) with
/// `addresses` A records each, plus one sibling name server in the parent zone.
fn glue_heavy_zone(addresses: usize) -> bulwark_zone::ZoneSet {
    let mut text = String::from(
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\n\
         child NS ns-a.child\nchild NS ns-b.child\nchild NS sibling\n",
    );
    for host in ["ns-a.child", "ns-b.child", "sibling"] {
        for i in 0..addresses {
            text.push_str(&format!("{host} A 198.51.100.{i}\n"));
        }
    }
    zoneset(&[zone("example.com.", &text)])
}

#[test]
fn referral_sets_tc_when_in_domain_glue_does_not_fit() {
    // RFC 9471 §3: in-domain glue is required; 2 × 40 A records (16 octets each
    // after compression) cannot fit in 512 octets.
    let zs = glue_heavy_zone(40);
    let m = run(
        &zs,
        Transport::Udp,
        &query("www.child.example.com.", RecordType::A),
    )
    .msg();
    assert!(m.truncated(), "missing in-domain glue must set TC");
    assert!(!m.authoritative());
    assert_eq!(types(m.name_servers()), vec![RecordType::NS; 3]);
}

#[test]
fn referral_with_all_glue_fitting_is_not_truncated() {
    let zs = glue_heavy_zone(2);
    let m = run(
        &zs,
        Transport::Udp,
        &query("www.child.example.com.", RecordType::A),
    )
    .msg();
    assert!(!m.truncated());
    assert_eq!(m.additionals().len(), 6, "in-domain and sibling glue");
}

#[test]
fn sibling_glue_that_does_not_fit_is_left_out_without_tc() {
    // Only the sibling (outside the cut) has many addresses: it is optional.
    let mut text = String::from(
        "@ SOA ns1 h 1 2 3 4 100\n@ NS ns1\nns1 A 192.0.2.1\n\
         child NS ns-a.child\nchild NS sibling\nns-a.child A 198.51.100.1\n",
    );
    for i in 0..60 {
        text.push_str(&format!("sibling A 198.51.100.{i}\n"));
    }
    let zs = zoneset(&[zone("example.com.", &text)]);
    let m = run(
        &zs,
        Transport::Udp,
        &query("www.child.example.com.", RecordType::A),
    )
    .msg();
    assert!(!m.truncated());
    assert_eq!(types(m.additionals()), vec![RecordType::A]);
}
