//! The defences inside the answering engine: NSID (RFC 5001), DNS cookies
//! (RFC 7873, RFC 9018) and the cookie policy, edns-tcp-keepalive (RFC 7828),
//! the RRL class and imputed name, and per-zone access control.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use bulwark_auth::{
    Access, AnswerConfig, AnswerOutcome, Answerer, CookiePolicy, Request, ResponseClass,
    ServerCookies, Transport, ZoneAccess,
};
use bulwark_guard::CookieSecret;
use bulwark_proto::message::{
    MessageView, OPTION_COOKIE, OPTION_EDE, OPTION_NSID, OPTION_TCP_KEEPALIVE,
};
use bulwark_proto::{Name, Rcode};
use bulwark_zone::ZoneSet;
use common::*;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;

const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 77));
const NOW: u64 = 1_700_000_000;
const CLIENT_COOKIE: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

/// A query with an OPT record (payload 1232, version `version`) carrying `options`
/// as (code, data); written by hand so any option, even a malformed one, can be sent.
fn query_opt(qname: &str, qtype: RecordType, version: u8, options: &[(u16, &[u8])]) -> Vec<u8> {
    let mut wire = query(qname, qtype).to_vec().unwrap();
    let mut rdata = Vec::new();
    for (code, data) in options {
        rdata.extend_from_slice(&code.to_be_bytes());
        rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
        rdata.extend_from_slice(data);
    }
    wire.push(0); // root owner
    wire.extend_from_slice(&41u16.to_be_bytes()); // OPT
    wire.extend_from_slice(&1232u16.to_be_bytes());
    wire.extend_from_slice(&[0, version, 0, 0]);
    wire.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    wire.extend_from_slice(&rdata);
    wire[11] += 1; // ARCOUNT
    wire
}

/// The response's EDNS options as (code, data).
fn options(resp: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let view = MessageView::parse(resp).expect("response parses");
    let Some(edns) = view.edns() else {
        return Vec::new();
    };
    let mut raw = edns.option_bytes();
    let mut out = Vec::new();
    while raw.len() >= 4 {
        let code = u16::from_be_bytes([raw[0], raw[1]]);
        let len = usize::from(u16::from_be_bytes([raw[2], raw[3]]));
        out.push((code, raw[4..4 + len].to_vec()));
        raw = &raw[4 + len..];
    }
    out
}

fn option(resp: &[u8], code: u16) -> Option<Vec<u8>> {
    options(resp)
        .into_iter()
        .find(|(c, _)| *c == code)
        .map(|(_, d)| d)
}

fn rcode(resp: &[u8]) -> Rcode {
    MessageView::parse(resp).unwrap().rcode()
}

fn secrets() -> ServerCookies {
    ServerCookies {
        current: CookieSecret([0x5a; 16]),
        previous: None,
    }
}

fn request<'a>(transport: Transport, cookies: Option<&'a ServerCookies>) -> Request<'a> {
    Request {
        transport,
        client: CLIENT,
        now: NOW,
        cookies,
        zone_access: None,
        recursion: bulwark_auth::Recursion::Off,
    }
}

struct Run<'q> {
    outcome: AnswerOutcome<'q>,
    wire: Vec<u8>,
    cookie_valid: bool,
    class: ResponseClass,
}

impl Run<'_> {
    fn msg(&self) -> Message {
        Message::from_vec(&self.wire).expect("response parses")
    }
}

fn run<'q>(
    config: AnswerConfig,
    zones: &ZoneSet,
    request: &Request<'_>,
    query: &'q [u8],
) -> Run<'q> {
    let mut a = Answerer::new(Arc::new(config));
    let mut out = Vec::new();
    let outcome = a.answer_request(zones, request, query, &mut out);
    let class = a.rrl_key().0;
    Run {
        outcome,
        wire: out,
        cookie_valid: a.cookie_valid(),
        class,
    }
}

fn example_zones() -> ZoneSet {
    zoneset(&[example()])
}

/// A zone whose TXT answer is about 1 KB: the amplification the policy is for.
fn big_zones() -> ZoneSet {
    let strings: String = (0..8)
        .map(|i| format!(" \"{i}{}\"", "x".repeat(120)))
        .collect();
    let text = format!(
        "$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nbig TXT{strings}\nsmall TXT \"s\"\n"
    );
    zoneset(&[zone("big.test.", &text)])
}

fn nsid_config(nsid: &[u8]) -> AnswerConfig {
    AnswerConfig {
        nsid: Some(nsid.to_vec()),
        ..AnswerConfig::default()
    }
}

// ---- answer_request and answer ----

#[test]
fn answer_request_without_defences_answers_like_answer() {
    let zones = example_zones();
    let q = query_opt("web.example.com.", RecordType::A, 0, &[]);
    let plain = answer_with(AnswerConfig::default(), &zones, Transport::Udp, &q);
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, None),
        &q,
    );
    assert_eq!(r.wire, plain.wire);
    assert_eq!(r.outcome, plain.outcome);
    assert!(!r.cookie_valid);
}

// ---- NSID (RFC 5001) ----

#[test]
fn nsid_is_sent_when_asked_and_configured() {
    let zones = example_zones();
    let q = query_opt("web.example.com.", RecordType::A, 0, &[(OPTION_NSID, b"")]);
    for transport in [Transport::Udp, Transport::Tcp] {
        let r = run(
            nsid_config(b"ns1.fra"),
            &zones,
            &request(transport, None),
            &q,
        );
        assert_eq!(option(&r.wire, OPTION_NSID), Some(b"ns1.fra".to_vec()));
        assert_eq!(r.msg().answers().len(), 1);
    }
    // Also on errors, such as REFUSED for a name we do not serve.
    let q = query_opt("www.example.net.", RecordType::A, 0, &[(OPTION_NSID, b"")]);
    let r = run(
        nsid_config(b"ns1.fra"),
        &zones,
        &request(Transport::Udp, None),
        &q,
    );
    assert_eq!(r.msg().response_code(), ResponseCode::Refused);
    assert_eq!(option(&r.wire, OPTION_NSID), Some(b"ns1.fra".to_vec()));
}

#[test]
fn nsid_is_never_sent_unasked_or_unconfigured() {
    let zones = example_zones();
    let unasked = query_opt("web.example.com.", RecordType::A, 0, &[]);
    let r = run(
        nsid_config(b"ns1"),
        &zones,
        &request(Transport::Udp, None),
        &unasked,
    );
    assert_eq!(option(&r.wire, OPTION_NSID), None);
    let asked = query_opt("web.example.com.", RecordType::A, 0, &[(OPTION_NSID, b"")]);
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, None),
        &asked,
    );
    assert_eq!(option(&r.wire, OPTION_NSID), None);
    // Without EDNS there is no OPT to carry it.
    let no_edns = query("web.example.com.", RecordType::A).to_vec().unwrap();
    let r = run(
        nsid_config(b"ns1"),
        &zones,
        &request(Transport::Udp, None),
        &no_edns,
    );
    assert!(r.msg().extensions().is_none());
}

#[test]
fn nsid_longer_than_the_limit_is_not_sent() {
    let zones = example_zones();
    let q = query_opt("web.example.com.", RecordType::A, 0, &[(OPTION_NSID, b"")]);
    let long = vec![b'n'; bulwark_auth::MAX_NSID_LEN + 1];
    let r = run(
        nsid_config(&long),
        &zones,
        &request(Transport::Udp, None),
        &q,
    );
    assert_eq!(option(&r.wire, OPTION_NSID), None);
    assert_eq!(r.msg().answers().len(), 1);
}

// ---- DNS cookies (RFC 7873 §5.2, RFC 9018) ----

#[test]
fn malformed_cookie_option_is_formerr() {
    let zones = example_zones();
    let sc = secrets();
    for bad in [&[1u8, 2, 3, 4, 5][..], &[7; 12][..], &[7; 41][..]] {
        let q = query_opt(
            "web.example.com.",
            RecordType::A,
            0,
            &[(OPTION_COOKIE, bad)],
        );
        let r = run(
            AnswerConfig::default(),
            &zones,
            &request(Transport::Udp, Some(&sc)),
            &q,
        );
        assert_eq!(
            rcode(&r.wire),
            Rcode::FORMERR,
            "cookie of {} octets",
            bad.len()
        );
        assert_eq!(r.class, ResponseClass::Error);
    }
}

#[test]
fn client_cookie_only_gets_a_fresh_server_cookie_and_the_answer() {
    let zones = example_zones();
    let sc = secrets();
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_COOKIE, &CLIENT_COOKIE)],
    );
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, Some(&sc)),
        &q,
    );
    assert_eq!(r.msg().answers().len(), 1);
    assert!(!r.cookie_valid);
    let cookie = option(&r.wire, OPTION_COOKIE).expect("COOKIE in response");
    assert_eq!(cookie.len(), 24);
    assert_eq!(cookie[..8], CLIENT_COOKIE);
    let minted = sc.mint(&CLIENT_COOKIE, CLIENT, NOW as u32);
    assert_eq!(cookie[8..], minted);
}

#[test]
fn valid_server_cookie_is_echoed_and_reported_valid() {
    let zones = example_zones();
    let sc = secrets();
    // Minted a minute ago: valid and too young to refresh (RFC 9018 §4.3).
    let server = sc.mint(&CLIENT_COOKIE, CLIENT, (NOW - 60) as u32);
    let mut both = CLIENT_COOKIE.to_vec();
    both.extend_from_slice(&server);
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_COOKIE, &both)],
    );
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, Some(&sc)),
        &q,
    );
    assert!(r.cookie_valid);
    assert_eq!(r.msg().answers().len(), 1);
    assert_eq!(option(&r.wire, OPTION_COOKIE), Some(both));
}

#[test]
fn old_valid_server_cookie_is_replaced_by_a_new_one() {
    let zones = example_zones();
    let sc = secrets();
    // 40 minutes old: still valid, but past the half-hour refresh age.
    let server = sc.mint(&CLIENT_COOKIE, CLIENT, (NOW - 2400) as u32);
    let mut both = CLIENT_COOKIE.to_vec();
    both.extend_from_slice(&server);
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_COOKIE, &both)],
    );
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, Some(&sc)),
        &q,
    );
    assert!(r.cookie_valid);
    let cookie = option(&r.wire, OPTION_COOKIE).unwrap();
    assert_eq!(cookie[8..], sc.mint(&CLIENT_COOKIE, CLIENT, NOW as u32));
}

#[test]
fn invalid_server_cookie_is_treated_as_client_cookie_only() {
    let zones = example_zones();
    let sc = secrets();
    let mut forged = CLIENT_COOKIE.to_vec();
    forged.extend_from_slice(&[1, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00, 9, 9, 9, 9, 9, 9, 9, 9]);
    // Another client's valid cookie does not validate for this address either.
    let mut other = CLIENT_COOKIE.to_vec();
    other.extend_from_slice(&sc.mint(&CLIENT_COOKIE, "192.0.2.78".parse().unwrap(), NOW as u32));
    for sent in [forged, other] {
        let q = query_opt(
            "web.example.com.",
            RecordType::A,
            0,
            &[(OPTION_COOKIE, &sent)],
        );
        let r = run(
            AnswerConfig::default(),
            &zones,
            &request(Transport::Udp, Some(&sc)),
            &q,
        );
        assert!(!r.cookie_valid);
        assert_eq!(r.msg().response_code(), ResponseCode::NoError);
        assert_eq!(r.msg().answers().len(), 1);
        let cookie = option(&r.wire, OPTION_COOKIE).unwrap();
        assert_eq!(cookie[8..], sc.mint(&CLIENT_COOKIE, CLIENT, NOW as u32));
    }
}

#[test]
fn cookie_option_is_ignored_when_cookies_are_off() {
    let zones = example_zones();
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_COOKIE, &CLIENT_COOKIE)],
    );
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Udp, None),
        &q,
    );
    assert_eq!(option(&r.wire, OPTION_COOKIE), None);
    assert_eq!(r.msg().answers().len(), 1);
}

fn policy(octets: u16) -> AnswerConfig {
    AnswerConfig {
        cookies: CookiePolicy {
            require_for_udp_above: Some(octets),
        },
        ..AnswerConfig::default()
    }
}

#[test]
fn large_udp_answer_to_a_client_cookie_only_is_badcookie_with_a_server_cookie() {
    let zones = big_zones();
    let sc = secrets();
    let q = query_opt(
        "big.big.test.",
        RecordType::TXT,
        0,
        &[(OPTION_COOKIE, &CLIENT_COOKIE)],
    );
    let r = run(policy(512), &zones, &request(Transport::Udp, Some(&sc)), &q);
    assert_eq!(rcode(&r.wire), Rcode::BADCOOKIE);
    let m = r.msg();
    assert!(m.answers().is_empty() && m.name_servers().is_empty());
    assert!(!m.truncated());
    assert!(!m.authoritative());
    let cookie = option(&r.wire, OPTION_COOKIE).unwrap();
    assert_eq!(cookie[8..], sc.mint(&CLIENT_COOKIE, CLIENT, NOW as u32));
    assert_eq!(r.class, ResponseClass::Error);
    assert!(r.wire.len() < 100);
    // The client retries with the server cookie it was given, and gets the answer.
    let q = query_opt(
        "big.big.test.",
        RecordType::TXT,
        0,
        &[(OPTION_COOKIE, &cookie)],
    );
    let r = run(policy(512), &zones, &request(Transport::Udp, Some(&sc)), &q);
    assert_eq!(rcode(&r.wire), Rcode::NOERROR);
    assert!(r.cookie_valid);
    assert_eq!(r.msg().answers().len(), 1);
    assert!(r.wire.len() > 512);
}

#[test]
fn large_udp_answer_without_any_cookie_is_truncated_and_empty() {
    let zones = big_zones();
    let sc = secrets();
    let q = query_opt("big.big.test.", RecordType::TXT, 0, &[]);
    let r = run(policy(512), &zones, &request(Transport::Udp, Some(&sc)), &q);
    let m = r.msg();
    assert!(m.truncated());
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.answers().is_empty() && m.name_servers().is_empty());
    assert_eq!(m.additionals().len(), 0);
    assert_eq!(
        r.outcome,
        AnswerOutcome::Respond {
            rcode: Rcode::NOERROR,
            truncated: true
        }
    );
}

#[test]
fn cookie_policy_spares_small_answers_tcp_and_servers_without_cookies() {
    let zones = big_zones();
    let sc = secrets();
    let small = query_opt("small.big.test.", RecordType::TXT, 0, &[]);
    let r = run(
        policy(512),
        &zones,
        &request(Transport::Udp, Some(&sc)),
        &small,
    );
    assert_eq!(r.msg().answers().len(), 1);
    let big = query_opt(
        "big.big.test.",
        RecordType::TXT,
        0,
        &[(OPTION_COOKIE, &CLIENT_COOKIE)],
    );
    let r = run(
        policy(512),
        &zones,
        &request(Transport::Tcp, Some(&sc)),
        &big,
    );
    assert_eq!(rcode(&r.wire), Rcode::NOERROR);
    assert_eq!(r.msg().answers().len(), 1);
    // With cookies off the policy cannot be met, so it does not apply.
    let r = run(policy(512), &zones, &request(Transport::Udp, None), &big);
    assert_eq!(r.msg().answers().len(), 1);
}

// ---- edns-tcp-keepalive (RFC 7828) ----

fn keepalive_config(timeout: u16) -> AnswerConfig {
    AnswerConfig {
        tcp_keepalive: Some(timeout),
        ..AnswerConfig::default()
    }
}

#[test]
fn keepalive_is_advertised_over_tcp_when_the_query_carries_it() {
    let zones = example_zones();
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_TCP_KEEPALIVE, b"")],
    );
    let r = run(
        keepalive_config(300),
        &zones,
        &request(Transport::Tcp, None),
        &q,
    );
    assert_eq!(option(&r.wire, OPTION_TCP_KEEPALIVE), Some(vec![1, 44]));
    assert_eq!(r.msg().answers().len(), 1);
    // Not without the option in the query, nor when not configured.
    let plain = query_opt("web.example.com.", RecordType::A, 0, &[]);
    let r = run(
        keepalive_config(300),
        &zones,
        &request(Transport::Tcp, None),
        &plain,
    );
    assert_eq!(option(&r.wire, OPTION_TCP_KEEPALIVE), None);
    let r = run(
        AnswerConfig::default(),
        &zones,
        &request(Transport::Tcp, None),
        &q,
    );
    assert_eq!(option(&r.wire, OPTION_TCP_KEEPALIVE), None);
}

#[test]
fn keepalive_over_udp_is_ignored_even_with_a_timeout() {
    let zones = example_zones();
    for data in [&b""[..], &[0, 10][..]] {
        let q = query_opt(
            "web.example.com.",
            RecordType::A,
            0,
            &[(OPTION_TCP_KEEPALIVE, data)],
        );
        let r = run(
            keepalive_config(300),
            &zones,
            &request(Transport::Udp, None),
            &q,
        );
        assert_eq!(r.msg().response_code(), ResponseCode::NoError);
        assert_eq!(r.msg().answers().len(), 1);
        assert_eq!(option(&r.wire, OPTION_TCP_KEEPALIVE), None);
    }
}

#[test]
fn keepalive_with_a_timeout_over_tcp_is_formerr() {
    let zones = example_zones();
    let q = query_opt(
        "web.example.com.",
        RecordType::A,
        0,
        &[(OPTION_TCP_KEEPALIVE, &[0, 10])],
    );
    let r = run(
        keepalive_config(300),
        &zones,
        &request(Transport::Tcp, None),
        &q,
    );
    assert_eq!(rcode(&r.wire), Rcode::FORMERR);
    assert!(r.msg().answers().is_empty());
    assert_eq!(r.class, ResponseClass::Error);
}

// ---- RRL class and imputed name ----

fn wire_of(s: &str) -> Vec<u8> {
    name(s).as_wire().to_vec()
}

#[test]
fn rrl_key_names_the_class_and_imputed_name_of_each_response() {
    let zones = example_zones();
    let cases: &[(&str, RecordType, ResponseClass, &str)] = &[
        (
            "WEB.Example.COM.",
            RecordType::A,
            ResponseClass::Positive,
            "web.example.com.",
        ),
        (
            "chain.example.com.",
            RecordType::A,
            ResponseClass::Positive,
            "chain.example.com.",
        ),
        (
            "example.com.",
            RecordType::MX,
            ResponseClass::Positive,
            "example.com.",
        ),
        (
            "multi.example.com.",
            RecordType::MX,
            ResponseClass::Nodata,
            "multi.example.com.",
        ),
        (
            "nothere.example.com.",
            RecordType::A,
            ResponseClass::Nxdomain,
            "example.com.",
        ),
        (
            "Random1.example.com.",
            RecordType::A,
            ResponseClass::Nxdomain,
            "example.com.",
        ),
        (
            "www.sub.example.com.",
            RecordType::A,
            ResponseClass::Referral,
            "sub.example.com.",
        ),
        (
            "tosub.example.com.",
            RecordType::A,
            ResponseClass::Referral,
            "sub.example.com.",
        ),
        (
            "FoO.Wild.example.com.",
            RecordType::A,
            ResponseClass::Wildcard,
            "*.wild.example.com.",
        ),
        (
            "x.y.wild.example.com.",
            RecordType::MX,
            ResponseClass::Wildcard,
            "*.wild.example.com.",
        ),
    ];
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::new();
    for (qname, qtype, class, imputed) in cases {
        let q = query_opt(qname, *qtype, 0, &[]);
        a.answer_request(&zones, &request(Transport::Udp, None), &q, &mut out);
        let (c, n) = a.rrl_key();
        assert_eq!((c, n), (*class, &wire_of(imputed)[..]), "{qname} {qtype}");
    }
}

#[test]
fn rrl_key_of_errors_has_no_name() {
    let zones = example_zones();
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::new();
    let bad_version = query_opt("web.example.com.", RecordType::A, 1, &[]);
    let formerr = {
        let mut q = query_opt("web.example.com.", RecordType::A, 0, &[]);
        q.push(0);
        q
    };
    let refused = query_opt("www.example.net.", RecordType::A, 0, &[]);
    let positive = query_opt("loop1.example.com.", RecordType::A, 0, &[]);
    for q in [&refused, &formerr, &bad_version] {
        // Answer something positive first, so a stale key would show.
        a.answer_request(&zones, &request(Transport::Udp, None), &positive, &mut out);
        assert_ne!(a.rrl_key().0, ResponseClass::Error);
        a.answer_request(&zones, &request(Transport::Udp, None), q, &mut out);
        assert_eq!(a.rrl_key(), (ResponseClass::Error, &[][..]));
    }
}

// ---- Per-zone access ----

struct Policy {
    decision: Access,
    seen: std::sync::Mutex<Vec<(Name, IpAddr)>>,
}

impl ZoneAccess for Policy {
    fn access(&self, apex: &Name, client: IpAddr) -> Access {
        self.seen.lock().unwrap().push((apex.clone(), client));
        self.decision
    }
}

fn with_access<'a>(p: &'a Policy) -> Request<'a> {
    Request {
        zone_access: Some(p),
        ..request(Transport::Udp, None)
    }
}

#[test]
fn zone_access_refuse_is_refused_with_ede_prohibited() {
    let zones = example_zones();
    let p = Policy {
        decision: Access::Refuse,
        seen: Default::default(),
    };
    let q = query_opt("web.example.com.", RecordType::A, 0, &[]);
    let r = run(AnswerConfig::default(), &zones, &with_access(&p), &q);
    let m = r.msg();
    assert_eq!(m.response_code(), ResponseCode::Refused);
    assert!(!m.authoritative());
    assert!(m.answers().is_empty());
    assert_eq!(option(&r.wire, OPTION_EDE), Some(vec![0, 18]));
    assert_eq!(r.class, ResponseClass::Error);
    assert_eq!(*p.seen.lock().unwrap(), [(name("example.com."), CLIENT)]);
    // Without EDNS: REFUSED all the same, with no OPT.
    let q = query("web.example.com.", RecordType::A).to_vec().unwrap();
    let r = run(AnswerConfig::default(), &zones, &with_access(&p), &q);
    assert_eq!(r.msg().response_code(), ResponseCode::Refused);
    assert!(r.msg().extensions().is_none());
}

#[test]
fn zone_access_drop_sends_nothing_and_allow_answers() {
    let zones = example_zones();
    let q = query_opt("web.example.com.", RecordType::A, 0, &[]);
    let drop = Policy {
        decision: Access::Drop,
        seen: Default::default(),
    };
    let r = run(AnswerConfig::default(), &zones, &with_access(&drop), &q);
    assert_eq!(r.outcome, AnswerOutcome::Denied);
    let allow = Policy {
        decision: Access::Allow,
        seen: Default::default(),
    };
    let r = run(AnswerConfig::default(), &zones, &with_access(&allow), &q);
    assert_eq!(r.msg().answers().len(), 1);
    // A name in no zone is REFUSED before any zone's access is asked.
    let q = query_opt("www.example.net.", RecordType::A, 0, &[]);
    let r = run(AnswerConfig::default(), &zones, &with_access(&drop), &q);
    assert_eq!(r.msg().response_code(), ResponseCode::Refused);
    assert_eq!(drop.seen.lock().unwrap().len(), 1);
}
