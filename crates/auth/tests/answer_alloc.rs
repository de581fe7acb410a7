//! The query path does not allocate once the answerer and buffer are warm.
//!
//! Allocations are counted by the workspace's one counting global allocator,
//! `bulwark_testkit::CountingAllocator` (per thread, forwarding to `System`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use std::net::IpAddr;

use bulwark_auth::{
    Access, AnswerConfig, AnswerOutcome, Answerer, CookiePolicy, Request, ServerCookies, Transport,
    ZoneAccess,
};
use bulwark_guard::CookieSecret;
use bulwark_proto::{Name, Rcode};
use common::*;
use hickory_proto::rr::RecordType;

#[global_allocator]
static GLOBAL: bulwark_testkit::CountingAllocator = bulwark_testkit::CountingAllocator::new();

fn allocations() -> usize {
    GLOBAL.allocations()
}

#[test]
fn answering_does_not_allocate_once_warm() {
    let zones = zoneset(&[example()]);
    let queries: Vec<Vec<u8>> = [
        ("web.example.com.", RecordType::A),
        ("chain.example.com.", RecordType::A),
        ("example.com.", RecordType::MX),
        ("example.com.", RecordType::NS),
        ("nothere.example.com.", RecordType::A),
        ("FoO.wild.example.com.", RecordType::TXT),
        ("foo.wc.example.com.", RecordType::A),
        ("www.sub.example.com.", RecordType::A),
        ("x.dn2.example.com.", RecordType::A),
        ("example.com.", RecordType::ANY),
        ("www.example.net.", RecordType::A),
    ]
    .iter()
    .map(|(n, t)| with_edns(query(n, *t), 1232, false).to_vec().unwrap())
    .collect();
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::with_capacity(65535);
    for q in &queries {
        a.answer(&zones, Transport::Udp, q, &mut out);
    }
    for q in &queries {
        let before = allocations();
        a.answer(&zones, Transport::Udp, q, &mut out);
        let after = allocations();
        assert_eq!(after - before, 0, "query {:02x?} allocated", &q[12..]);
    }
}

#[test]
fn signed_answers_with_do_do_not_allocate_once_warm() {
    let signed = |text: &str| zone("diff.test.", text);
    let zone_sets = [
        zoneset(&[signed(include_str!("data/signed/diff-nsec.zone"))]),
        zoneset(&[signed(include_str!("data/signed/diff-nsec3.zone"))]),
        zoneset(&[signed(include_str!("data/signed/diff-optout.zone"))]),
    ];
    let names: &[(&str, RecordType)] = &[
        ("www.diff.test.", RecordType::A),
        ("c1.diff.test.", RecordType::A),
        ("diff.test.", RecordType::MX),
        ("diff.test.", RecordType::DNSKEY),
        ("diff.test.", RecordType::ANY),
        ("www.diff.test.", RecordType::RRSIG),
        ("a.b.nonexistent.diff.test.", RecordType::A),
        ("www.diff.test.", RecordType::MX),
        ("y.ent.diff.test.", RecordType::A),
        ("FoO.wild.diff.test.", RecordType::A),
        ("foo.wild.diff.test.", RecordType::AAAA),
        ("foo.wc2.diff.test.", RecordType::A),
        ("www.sub.diff.test.", RecordType::A),
        ("x.noglue.diff.test.", RecordType::A),
        ("noglue.diff.test.", RecordType::DS),
        ("sub.diff.test.", RecordType::DS),
        ("host.dn-in.diff.test.", RecordType::A),
        ("big.diff.test.", RecordType::TXT),
    ];
    let queries: Vec<Vec<u8>> = names
        .iter()
        .flat_map(|(n, t)| {
            [512u16, 4096].map(|size| with_edns(query(n, *t), size, true).to_vec().unwrap())
        })
        .collect();
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::with_capacity(65535);
    for zones in &zone_sets {
        for q in &queries {
            a.answer(zones, Transport::Udp, q, &mut out);
        }
    }
    for zones in &zone_sets {
        for q in &queries {
            let before = allocations();
            a.answer(zones, Transport::Udp, q, &mut out);
            let after = allocations();
            assert_eq!(after - before, 0, "query {:02x?} allocated", &q[12..]);
        }
    }
}

struct AllowAll;

impl ZoneAccess for AllowAll {
    fn access(&self, _apex: &Name, _client: IpAddr) -> Access {
        Access::Allow
    }
}

/// Appends an OPT-borne option to a query built with EDNS by hickory: the OPT is
/// the last record, so its RDLENGTH is the two octets before the options.
fn with_option(mut wire: Vec<u8>, code: u16, data: &[u8]) -> Vec<u8> {
    let rdlen_at = wire.len() - 2;
    let rdlen = u16::from_be_bytes([wire[rdlen_at], wire[rdlen_at + 1]]);
    assert_eq!(rdlen, 0, "hickory wrote no options");
    wire.extend_from_slice(&code.to_be_bytes());
    wire.extend_from_slice(&(data.len() as u16).to_be_bytes());
    wire.extend_from_slice(data);
    let new_len = (data.len() + 4) as u16;
    wire[rdlen_at..rdlen_at + 2].copy_from_slice(&new_len.to_be_bytes());
    wire
}

#[test]
fn answering_with_cookies_nsid_and_zone_access_does_not_allocate_once_warm() {
    let zones = zoneset(&[example()]);
    let secrets = ServerCookies {
        current: CookieSecret([7; 16]),
        previous: None,
    };
    let client: IpAddr = "192.0.2.1".parse().unwrap();
    let now = 1_700_000_000u64;
    let client_cookie = [9u8; 8];
    let mut both = client_cookie.to_vec();
    both.extend_from_slice(&secrets.mint(&client_cookie, client, now as u32));
    let base = |n: &str, t| with_edns(query(n, t), 1232, false).to_vec().unwrap();
    let queries: Vec<(Transport, Vec<u8>)> = vec![
        (
            Transport::Udp,
            with_option(base("web.example.com.", RecordType::A), 10, &client_cookie),
        ),
        (
            Transport::Udp,
            with_option(base("example.com.", RecordType::MX), 10, &both),
        ),
        (
            Transport::Udp,
            with_option(base("nothere.example.com.", RecordType::A), 3, &[]),
        ),
        (
            Transport::Udp,
            with_option(base("foo.wild.example.com.", RecordType::TXT), 10, &both),
        ),
        (
            Transport::Udp,
            with_option(
                base("www.sub.example.com.", RecordType::A),
                10,
                &client_cookie,
            ),
        ),
        // Over the policy's threshold without a valid server cookie: BADCOOKIE.
        (
            Transport::Udp,
            with_option(base("example.com.", RecordType::ANY), 10, &client_cookie),
        ),
        (
            Transport::Tcp,
            with_option(base("web.example.com.", RecordType::A), 11, &[]),
        ),
        (Transport::Udp, base("example.com.", RecordType::NS)),
    ];
    let config = AnswerConfig {
        nsid: Some(b"ns1.example".to_vec()),
        tcp_keepalive: Some(300),
        cookies: CookiePolicy {
            require_for_udp_above: Some(100),
        },
        ..AnswerConfig::default()
    };
    let mut a = Answerer::new(Arc::new(config));
    let mut out = Vec::with_capacity(65535);
    let access = AllowAll;
    let request = |transport| Request {
        transport,
        client,
        now,
        cookies: Some(&secrets),
        zone_access: Some(&access),
        recursion: bulwark_auth::Recursion::Off,
    };
    let mut rcodes = Vec::new();
    for (t, q) in &queries {
        match a.answer_request(&zones, &request(*t), q, &mut out) {
            AnswerOutcome::Respond { rcode, .. } => rcodes.push(rcode),
            AnswerOutcome::Drop
            | AnswerOutcome::Denied
            | AnswerOutcome::Divert(..)
            | AnswerOutcome::Recurse(_) => {
                panic!("dropped")
            }
        }
    }
    // The cookie policy's BADCOOKIE path is among those measured.
    assert!(rcodes.contains(&Rcode::BADCOOKIE), "{rcodes:?}");
    assert!(rcodes.contains(&Rcode::NXDOMAIN), "{rcodes:?}");
    for (t, q) in &queries {
        let req = request(*t);
        let before = allocations();
        a.answer_request(&zones, &req, q, &mut out);
        let _ = a.rrl_key();
        let after = allocations();
        assert_eq!(after - before, 0, "query {:02x?} allocated", &q[12..]);
    }
}
