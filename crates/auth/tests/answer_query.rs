//! Query validation, classes, opcodes and EDNS versions.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, ChaosIdentity, Divert, Transport};
use bulwark_proto::Rcode;
use common::*;
use hickory_proto::op::{OpCode, ResponseCode};
use hickory_proto::rr::{DNSClass, RecordType};

fn run(wire: &[u8]) -> Answered {
    answer_with(
        AnswerConfig::default(),
        &zoneset(&[example()]),
        Transport::Udp,
        wire,
    )
}

#[test]
fn queries_shorter_than_a_header_are_dropped() {
    for len in 0..12 {
        assert_eq!(run(&vec![0u8; len]).outcome, AnswerOutcome::Drop);
    }
}

#[test]
fn responses_are_dropped() {
    let mut wire = query("www.example.com.", RecordType::A).to_vec().unwrap();
    wire[2] |= 0x80;
    assert_eq!(run(&wire).outcome, AnswerOutcome::Drop);
}

#[test]
fn malformed_query_gets_formerr_with_id_copied() {
    let mut wire = query("www.example.com.", RecordType::A).to_vec().unwrap();
    wire.truncate(wire.len() - 2);
    let a = run(&wire);
    assert_eq!(
        a.outcome,
        AnswerOutcome::Respond {
            rcode: Rcode::FORMERR,
            truncated: false
        }
    );
    assert_eq!(&a.wire[..2], &[0x12, 0x34]);
    assert_eq!(a.msg().response_code(), ResponseCode::FormErr);
}

#[test]
fn trailing_bytes_after_the_question_are_formerr_with_question_echoed() {
    let mut wire = query("www.example.com.", RecordType::A).to_vec().unwrap();
    wire.push(0);
    let m = run(&wire).msg();
    assert_eq!(m.response_code(), ResponseCode::FormErr);
    assert_eq!(m.queries().len(), 1);
}

#[test]
fn no_question_is_formerr() {
    let wire = query("www.example.com.", RecordType::A).to_vec().unwrap();
    let mut header = wire[..12].to_vec();
    header[5] = 0;
    let m = run(&header).msg();
    assert_eq!(m.response_code(), ResponseCode::FormErr);
    assert!(m.queries().is_empty());
}

#[test]
fn two_questions_are_formerr() {
    let mut q = query("www.example.com.", RecordType::A);
    q.add_query(hickory_proto::op::Query::query(
        hickory_proto::rr::Name::from_ascii("web.example.com.").unwrap(),
        RecordType::A,
    ));
    let m = run(&q.to_vec().unwrap()).msg();
    assert_eq!(m.response_code(), ResponseCode::FormErr);
}

#[test]
fn opcodes_other_than_query_notify_and_update_are_notimp() {
    let mut q = query("www.example.com.", RecordType::A);
    q.set_op_code(OpCode::Status);
    let m = run(&q.to_vec().unwrap()).msg();
    assert_eq!(m.response_code(), ResponseCode::NotImp);
    assert_eq!(m.op_code(), OpCode::Status);
    assert!(m.answers().is_empty());
}

#[test]
fn edns_version_other_than_zero_is_badvers_with_opt() {
    let mut q = with_edns(query("www.example.com.", RecordType::A), 1232, false);
    q.extensions_mut().as_mut().unwrap().set_version(1);
    let wire = q.to_vec().unwrap();
    let a = run(&wire);
    assert_eq!(
        a.outcome,
        AnswerOutcome::Respond {
            rcode: Rcode::BADVERS,
            truncated: false
        }
    );
    let m = a.msg();
    // Hickory names extended rcode 16 BADSIG (shared with TSIG, RFC 8945).
    assert_eq!(u16::from(m.response_code()), 16);
    let edns = m.extensions().as_ref().expect("OPT in BADVERS reply");
    assert_eq!(edns.version(), 0);
    assert!(m.answers().is_empty());
    assert!(!m.authoritative());
}

#[test]
fn names_outside_every_zone_are_refused_without_aa() {
    let m = ask_example("www.example.net.", RecordType::A);
    assert_eq!(m.response_code(), ResponseCode::Refused);
    assert!(!m.authoritative());
    assert!(m.name_servers().is_empty());
}

#[test]
fn classes_other_than_in_and_ch_are_refused() {
    let mut q = query("www.example.com.", RecordType::A);
    q.queries_mut()[0].set_query_class(DNSClass::HS);
    let m = run(&q.to_vec().unwrap()).msg();
    assert_eq!(m.response_code(), ResponseCode::Refused);
}

#[test]
fn class_any_is_answered_as_in_like_knot() {
    let mut q = query("web.example.com.", RecordType::A);
    q.queries_mut()[0].set_query_class(DNSClass::ANY);
    let m = run(&q.to_vec().unwrap()).msg();
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert_eq!(m.queries()[0].query_class(), DNSClass::ANY);
    assert_eq!(m.answers().len(), 1);
    assert_eq!(m.answers()[0].dns_class(), DNSClass::IN);
}

#[test]
fn transfers_notify_update_and_signed_queries_are_the_servers_to_handle() {
    let zones = zoneset(&[example()]);
    let mut answerer = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::new();
    let mut outcome = |wire: &[u8]| {
        let o = answerer.answer(&zones, Transport::Tcp, wire, &mut out);
        if o.divert().is_some() {
            assert!(out.is_empty(), "nothing written for a diverted query");
        }
        o.divert()
    };
    for t in [RecordType::AXFR, RecordType::IXFR] {
        let wire = query("example.com.", t).to_vec().unwrap();
        assert_eq!(outcome(&wire), Some(Divert::Transfer));
    }
    let mut notify = query("example.com.", RecordType::SOA);
    notify.set_op_code(OpCode::Notify);
    assert_eq!(outcome(&notify.to_vec().unwrap()), Some(Divert::Notify));
    let mut update = query("example.com.", RecordType::SOA);
    update.set_op_code(OpCode::Update);
    assert_eq!(outcome(&update.to_vec().unwrap()), Some(Divert::Update));
    // A TSIG record: owner `k.`, type 250, class ANY, TTL 0, empty rdata
    // (the server checks it; answering only notices it is there).
    let mut signed = query("web.example.com.", RecordType::A).to_vec().unwrap();
    signed[11] = 1;
    signed.extend_from_slice(&[1, b'k', 0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0]);
    assert_eq!(outcome(&signed), Some(Divert::Signed));
    // Other opcodes are still answered here.
    let mut status = query("example.com.", RecordType::SOA);
    status.set_op_code(OpCode::Status);
    assert_eq!(outcome(&status.to_vec().unwrap()), None);
    let wire = status.to_vec().unwrap();
    assert!(matches!(
        answerer.answer(&zones, Transport::Tcp, &wire, &mut out),
        AnswerOutcome::Respond {
            rcode: Rcode::NOTIMP,
            ..
        }
    ));
}

#[test]
fn meta_types_as_qtype_get_nodata_like_knot() {
    for t in [RecordType::OPT, RecordType::TSIG, RecordType::Unknown(249)] {
        let m = ask_example("example.com.", t);
        assert_eq!(m.response_code(), ResponseCode::NoError, "{t:?}");
        assert!(m.answers().is_empty());
        assert_eq!(types(m.name_servers()), vec![RecordType::SOA]);
    }
}

fn chaos_query(qname: &str) -> Vec<u8> {
    let mut q = query(qname, RecordType::TXT);
    q.queries_mut()[0].set_query_class(DNSClass::CH);
    q.to_vec().unwrap()
}

#[test]
fn chaos_identity_is_refused_when_not_configured() {
    for qname in [
        "id.server.",
        "hostname.bind.",
        "version.bind.",
        "version.server.",
    ] {
        let m = run(&chaos_query(qname)).msg();
        assert_eq!(m.response_code(), ResponseCode::Refused, "{qname}");
        assert!(!m.authoritative());
    }
}

#[test]
fn chaos_identity_is_answered_when_configured() {
    let cfg = AnswerConfig {
        chaos: ChaosIdentity {
            id_server: Some("ns1.test".into()),
            hostname: None,
            version: Some("bulwark 0.1".into()),
        },
        ..AnswerConfig::default()
    };
    let zones = zoneset(&[]);
    for (qname, text) in [
        ("id.server.", "ns1.test"),
        ("HOSTNAME.bind.", "ns1.test"),
        ("version.bind.", "bulwark 0.1"),
        ("version.server.", "bulwark 0.1"),
    ] {
        let m = answer_with(cfg.clone(), &zones, Transport::Udp, &chaos_query(qname)).msg();
        assert_eq!(m.response_code(), ResponseCode::NoError, "{qname}");
        assert!(m.authoritative());
        let ans = m.answers();
        assert_eq!(ans.len(), 1);
        assert_eq!(ans[0].dns_class(), DNSClass::CH);
        assert_eq!(ans[0].ttl(), 0);
        assert!(ans[0].data().unwrap().to_string().contains(text));
    }
    // Each identity name prefers its own field.
    let both = AnswerConfig {
        chaos: ChaosIdentity {
            id_server: Some("id-one".into()),
            hostname: Some("host-two".into()),
            version: None,
        },
        ..AnswerConfig::default()
    };
    let txt = |q: &str| {
        let m = answer_with(both.clone(), &zones, Transport::Udp, &chaos_query(q)).msg();
        m.answers()[0].data().unwrap().to_string()
    };
    assert!(txt("id.server.").contains("id-one"));
    assert!(txt("hostname.bind.").contains("host-two"));
    let m = answer_with(
        both.clone(),
        &zones,
        Transport::Udp,
        &chaos_query("version.bind."),
    )
    .msg();
    assert_eq!(m.response_code(), ResponseCode::Refused);
    // Other CH names and types stay refused.
    let m = answer_with(cfg, &zones, Transport::Udp, &chaos_query("foo.bind.")).msg();
    assert_eq!(m.response_code(), ResponseCode::Refused);
}
