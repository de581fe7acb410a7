//! The request engine (`bulwark_xfr::serve`) on messages built here, with
//! no socket and no clock: NOTIFY from a primary, from a stranger and
//! malformed; transfers over UDP and TCP, allowed and refused; TSIG that
//! does not verify; UPDATE allowed and refused; a signed query answered and
//! then signed, truncated when its TSIG would not fit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

mod update_support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bulwark_guard::{Access, Acl};
use bulwark_proto::message::{MessageBuilder, MessageView, Section};
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Rtype};
use bulwark_xfr::acl::KeyedAcl;
use bulwark_xfr::notify::build_notify;
use bulwark_xfr::remote::Remote;
use bulwark_xfr::serial::SerialPolicy;
use bulwark_xfr::serve::{
    handle, Facts, Handled, Note, Outcome, Refusal, RefusalKind, Request, RequestKind, Response,
    Transport, ZonePolicy,
};
use bulwark_xfr::transfer_in::{
    build_soa_query, build_transfer_query, Progress, TransferLimits, TransferReader, TransferResult,
};
use bulwark_xfr::tsig::{
    sign_request, KeyRing, ResponseVerifier, TsigAlgorithm, TsigFailure, TsigKey, TsigRcode,
    TsigRdata, DEFAULT_FUDGE,
};
use bulwark_xfr::update::UpdateOptions;
use bulwark_zone::Zone;
use update_support::{n, origin, zone, Msg, ZONE};

const NOW: u64 = 1_700_000_000;
const PRIMARY: &str = "192.0.2.1";
const STRANGER: &str = "198.51.100.9";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn key() -> TsigKey {
    TsigKey::new(
        n("key.example."),
        TsigAlgorithm::HmacSha256,
        (1..=32).collect(),
    )
}

fn other_key() -> TsigKey {
    TsigKey::new(
        n("other.example."),
        TsigAlgorithm::HmacSha256,
        (33..=64).collect(),
    )
}

fn acl(network: &str, keys: &[&str]) -> Arc<KeyedAcl> {
    Arc::new(KeyedAcl {
        networks: Arc::new(Acl::parse(&[(network, Access::Allow)], Access::Refuse).unwrap()),
        keys: keys.iter().map(|k| n(k)).collect(),
    })
}

/// What the server knows: one zone, `example.`, primary or secondary.
struct World {
    keyring: KeyRing,
    policy: ZonePolicy,
    zone: Arc<Zone>,
    storage: bool,
}

impl Facts for World {
    fn keyring(&self) -> &KeyRing {
        &self.keyring
    }
    fn zone_policy(&self, apex: &Name) -> Option<ZonePolicy> {
        (apex == &self.policy.origin).then(|| self.policy.clone())
    }
    fn served_zone(&self, apex: &Name) -> Option<Arc<Zone>> {
        (apex == self.zone.apex()).then(|| Arc::clone(&self.zone))
    }
    fn has_storage(&self) -> bool {
        self.storage
    }
}

fn policy() -> ZonePolicy {
    ZonePolicy {
        origin: origin(),
        primaries: Vec::new(),
        allow_transfer: vec![acl("192.0.2.0/24", &[])],
        allow_notify: Vec::new(),
        allow_update: vec![acl("0.0.0.0/0", &["key.example."])],
        update: UpdateOptions::default(),
        serial_policy: SerialPolicy::Increment,
    }
}

/// A primary zone here: transfers from 192.0.2.0/24, updates with `key`.
fn primary_world() -> World {
    World {
        keyring: [key(), other_key()].into_iter().collect(),
        policy: policy(),
        zone: Arc::new(zone(ZONE)),
        storage: true,
    }
}

/// A secondary zone here, whose primary is 192.0.2.1 (with `key` when given).
fn secondary_world(primary_key: Option<TsigKey>) -> World {
    let mut w = primary_world();
    w.policy.primaries = vec![Arc::new(Remote {
        name: "pri".to_string(),
        addresses: vec![SocketAddr::new(ip(PRIMARY), 53)],
        key: primary_key.map(Arc::new),
        via: None,
    })];
    w.policy.allow_update = Vec::new();
    w
}

fn run(
    world: &World,
    msg: &[u8],
    kind: RequestKind,
    client: &str,
    transport: Transport,
) -> (Handled, Vec<u8>) {
    let view = MessageView::parse(msg).unwrap();
    let request = Request {
        view: &view,
        kind,
        client: ip(client),
        transport,
        max_udp_payload: 1232,
    };
    let mut out = Vec::new();
    let handled = handle(&request, world, NOW, &mut out);
    (handled, out)
}

fn responded(h: &Handled) -> Response {
    match &h.outcome {
        Outcome::Respond(r) => *r,
        other => panic!("expected a response, got {other:?}"),
    }
}

fn refusal(h: &Handled) -> &Refusal {
    match &h.note {
        Some(Note::Refused(r)) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn rcode_of(msg: &[u8]) -> Rcode {
    Rcode::new(u16::from(
        MessageView::parse(msg).unwrap().header().rcode_low,
    ))
}

fn signed(mut msg: Vec<u8>, key: &TsigKey) -> (Vec<u8>, ResponseVerifier) {
    let mac = sign_request(&mut msg, key, NOW, DEFAULT_FUDGE).unwrap();
    (msg, ResponseVerifier::new(key, &mac))
}

/// The TSIG record of `msg`, read.
fn tsig_of(msg: &[u8]) -> Option<(TsigRcode, usize)> {
    let view = MessageView::parse(msg).unwrap();
    let r = view.additional().find(|r| r.rtype == Rtype::TSIG)?;
    let t = TsigRdata::parse(r.rdata).unwrap();
    Some((t.error, t.mac.len()))
}

fn notify_msg(serial: u32) -> Vec<u8> {
    let soa = bulwark_zone::diff::soa_record(&zone(ZONE)).map(|mut r| {
        if let Rdata::Soa(s) = &mut r.rdata {
            s.serial = serial;
        }
        r
    });
    let mut out = Vec::new();
    build_notify(0x1001, &origin(), soa.as_ref(), &mut out).unwrap();
    out
}

// --- NOTIFY -----------------------------------------------------------------

#[test]
fn notify_from_the_primary_is_acknowledged_and_asks_for_a_refresh() {
    let world = secondary_world(None);
    let (h, out) = run(
        &world,
        &notify_msg(7),
        RequestKind::Notify,
        PRIMARY,
        Transport::Udp,
    );
    let r = responded(&h);
    assert_eq!(r.rcode, Rcode::NOERROR);
    assert!(!r.verified);
    let view = MessageView::parse(&out).unwrap();
    assert_eq!(view.header().opcode, Opcode::NOTIFY);
    assert!(view.header().flags.qr);
    assert_eq!(view.header().id, 0x1001);
    assert_eq!(
        h.note,
        Some(Note::NotifyAccepted {
            origin: Box::new(origin()),
            serial: Some(7),
        })
    );
}

#[test]
fn notify_from_a_stranger_is_notauth_and_starts_nothing() {
    let world = secondary_world(None);
    let (h, out) = run(
        &world,
        &notify_msg(7),
        RequestKind::Notify,
        STRANGER,
        Transport::Udp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
    assert_eq!(rcode_of(&out), Rcode::NOTAUTH);
    let reason = refusal(&h);
    assert!(
        matches!(reason, Refusal::NotifyRefused { .. }),
        "{reason:?}"
    );
    assert_eq!(reason.kind(), Some(RefusalKind::NotifyRefused));
}

#[test]
fn notify_for_a_primary_zone_is_notauth_whoever_sends_it() {
    let mut world = primary_world();
    // Even a sender `allow_notify` lets in: a primary zone has no one to
    // refresh from.
    world.policy.allow_notify = vec![acl("0.0.0.0/0", &[])];
    let (h, _) = run(
        &world,
        &notify_msg(7),
        RequestKind::Notify,
        PRIMARY,
        Transport::Udp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
    assert!(matches!(refusal(&h), Refusal::NotifyRefused { .. }));
}

#[test]
fn notify_from_a_keyed_primary_needs_its_key() {
    let world = secondary_world(Some(key()));
    let (h, _) = run(
        &world,
        &notify_msg(7),
        RequestKind::Notify,
        PRIMARY,
        Transport::Udp,
    );
    assert!(matches!(refusal(&h), Refusal::NotifyRefused { .. }));

    let (msg, mut verifier) = signed(notify_msg(7), &key());
    let (h, out) = run(&world, &msg, RequestKind::Notify, PRIMARY, Transport::Udp);
    let r = responded(&h);
    assert_eq!(r.rcode, Rcode::NOERROR);
    assert!(r.verified);
    assert!(matches!(h.note, Some(Note::NotifyAccepted { .. })));
    // RFC 8945 §5.3: the answer to a signed request is signed.
    verifier.verify(&out, NOW).unwrap();
}

#[test]
fn a_malformed_notify_from_the_primary_is_formerr_and_from_a_stranger_notauth() {
    let world = secondary_world(None);
    // RFC 1996 §3.7: a NOTIFY asks for the SOA; this one asks for A.
    let mut msg = notify_msg(7);
    let qtype_at = 12 + origin().as_wire().len();
    msg[qtype_at..qtype_at + 2].copy_from_slice(&Rtype::A.0.to_be_bytes());
    let (h, _) = run(&world, &msg, RequestKind::Notify, PRIMARY, Transport::Udp);
    assert_eq!(responded(&h).rcode, Rcode::FORMERR);
    let reason = refusal(&h);
    assert!(matches!(reason, Refusal::NotifyMalformed(_)), "{reason:?}");
    assert_eq!(reason.kind(), Some(RefusalKind::Malformed));
    // Who may notify is decided before what they sent is judged.
    let (h, _) = run(&world, &msg, RequestKind::Notify, STRANGER, Transport::Udp);
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
}

// --- Transfers --------------------------------------------------------------

fn transfer_query(qtype: Rtype, serial: Option<u32>) -> Vec<u8> {
    let held = serial.map(|s| {
        let mut r = bulwark_zone::diff::soa_record(&zone(ZONE)).unwrap();
        if let Rdata::Soa(soa) = &mut r.rdata {
            soa.serial = s;
        }
        r
    });
    let mut out = Vec::new();
    build_transfer_query(0x2002, &origin(), qtype, held.as_ref(), &mut out).unwrap();
    out
}

#[test]
fn axfr_over_udp_is_notimp() {
    let world = primary_world();
    let (h, out) = run(
        &world,
        &transfer_query(Rtype::AXFR, None),
        RequestKind::Transfer,
        PRIMARY,
        Transport::Udp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOTIMP);
    assert_eq!(rcode_of(&out), Rcode::NOTIMP);
    assert_eq!(refusal(&h), &Refusal::AxfrOverUdp);
}

#[test]
fn ixfr_over_udp_is_answered_with_the_current_soa_alone() {
    let world = primary_world();
    let (h, out) = run(
        &world,
        &transfer_query(Rtype::IXFR, Some(0)),
        RequestKind::Transfer,
        PRIMARY,
        Transport::Udp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOERROR);
    assert!(h.note.is_none());
    let view = MessageView::parse(&out).unwrap();
    let answers: Vec<_> = view.answers().collect();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].rtype, Rtype::SOA);
    assert!(view.header().flags.aa);
}

#[test]
fn a_transfer_outside_allow_transfer_is_notauth() {
    let world = primary_world();
    let (h, out) = run(
        &world,
        &transfer_query(Rtype::AXFR, None),
        RequestKind::Transfer,
        STRANGER,
        Transport::Tcp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
    assert_eq!(rcode_of(&out), Rcode::NOTAUTH);
    let reason = refusal(&h);
    assert!(
        matches!(reason, Refusal::TransferRefused { qtype, .. } if *qtype == Rtype::AXFR),
        "{reason:?}"
    );
    assert_eq!(reason.kind(), Some(RefusalKind::TransferRefused));
}

#[test]
fn an_ixfr_without_the_clients_soa_is_formerr() {
    let world = primary_world();
    // An IXFR question with no SOA in the authority section.
    let mut msg = Vec::new();
    build_soa_query(0x2002, &origin(), &mut msg).unwrap();
    let qtype_at = 12 + origin().as_wire().len();
    msg[qtype_at..qtype_at + 2].copy_from_slice(&Rtype::IXFR.0.to_be_bytes());
    let (h, _) = run(&world, &msg, RequestKind::Transfer, PRIMARY, Transport::Tcp);
    assert_eq!(responded(&h).rcode, Rcode::FORMERR);
    assert_eq!(refusal(&h), &Refusal::IxfrWithoutSoa);
}

#[test]
fn a_signed_axfr_over_tcp_streams_the_zone_every_message_signed() {
    let mut world = primary_world();
    world.policy.allow_transfer = vec![acl("0.0.0.0/0", &["key.example."])];
    let (msg, mut verifier) = signed(transfer_query(Rtype::AXFR, None), &key());
    let (h, _) = run(
        &world,
        &msg,
        RequestKind::Transfer,
        STRANGER,
        Transport::Tcp,
    );
    let Outcome::Transfer(plan) = h.outcome else {
        panic!("expected a transfer, got {:?}", h.outcome);
    };
    assert_eq!(plan.qtype(), Rtype::AXFR);
    assert_eq!(plan.client_serial(), None);
    let mut messages = plan.messages(&[]).unwrap();
    let mut reader = TransferReader::new(
        origin(),
        Rtype::AXFR,
        0x2002,
        None,
        TransferLimits::default(),
    );
    let mut out = Vec::new();
    let mut done = false;
    while let Some(m) = messages.next_message(&mut out, NOW) {
        m.unwrap();
        verifier.verify(&out, NOW).unwrap();
        done = reader.feed(&out).unwrap() == Progress::Done;
    }
    assert!(done);
    verifier.finish().unwrap();
    let TransferResult::Full { records, .. } = reader.finish().unwrap() else {
        panic!("not a full transfer");
    };
    assert_eq!(records.len() + 1, zone(ZONE).records().count());
}

#[test]
fn an_unsigned_request_where_a_key_is_wanted_is_refused() {
    let mut world = primary_world();
    world.policy.allow_transfer = vec![acl("0.0.0.0/0", &["key.example."])];
    let (h, _) = run(
        &world,
        &transfer_query(Rtype::AXFR, None),
        RequestKind::Transfer,
        PRIMARY,
        Transport::Tcp,
    );
    assert!(matches!(refusal(&h), Refusal::TransferRefused { .. }));
}

// --- TSIG -------------------------------------------------------------------

#[test]
fn a_bad_mac_is_notauth_with_badsig_unsigned() {
    let world = primary_world();
    let (mut msg, _) = signed(transfer_query(Rtype::AXFR, None), &key());
    // Flip one bit of the MAC (the TSIG record ends with MAC, original ID,
    // error and other length: the MAC's last octet is 7 before the end).
    let at = msg.len() - 7;
    msg[at] ^= 1;
    let (h, out) = run(&world, &msg, RequestKind::Transfer, PRIMARY, Transport::Tcp);
    let r = responded(&h);
    assert_eq!(r.rcode, Rcode::NOTAUTH);
    assert!(!r.verified);
    assert_eq!(refusal(&h), &Refusal::BadTsig(TsigFailure::BadSig));
    assert_eq!(refusal(&h).kind(), Some(RefusalKind::BadTsig));
    // RFC 8945 §5.3.2: BADSIG in the TSIG's error field, with no MAC.
    assert_eq!(tsig_of(&out), Some((TsigRcode::BADSIG, 0)));
}

#[test]
fn an_unknown_key_is_notauth_with_badkey() {
    let world = primary_world();
    let stranger_key = TsigKey::new(
        n("unknown.example."),
        TsigAlgorithm::HmacSha256,
        vec![7; 32],
    );
    let (msg, _) = signed(transfer_query(Rtype::AXFR, None), &stranger_key);
    let (h, out) = run(&world, &msg, RequestKind::Transfer, PRIMARY, Transport::Tcp);
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
    assert!(matches!(
        refusal(&h),
        Refusal::BadTsig(TsigFailure::BadKey { .. })
    ));
    assert_eq!(tsig_of(&out), Some((TsigRcode::BADKEY, 0)));
}

// --- UPDATE -----------------------------------------------------------------

fn update_msg() -> Vec<u8> {
    Msg::new().update("new 300 IN A 192.0.2.77").wire()
}

#[test]
fn an_update_signed_with_an_allowed_key_is_applied_then_answered_signed() {
    let world = primary_world();
    let (msg, mut verifier) = signed(update_msg(), &key());
    let (h, _) = run(&world, &msg, RequestKind::Update, STRANGER, Transport::Tcp);
    assert!(h.note.is_none());
    let Outcome::Update(plan) = h.outcome else {
        panic!("expected an update, got {:?}", h.outcome);
    };
    assert_eq!(plan.origin(), &origin());
    let base = zone(ZONE);
    let result = plan.apply(&base, NOW).unwrap();
    let diff = result.diff.expect("the update changes the zone");
    assert_eq!(diff.old_serial(), 1);
    assert_eq!(diff.new_serial(), 2);
    assert!(diff.added.iter().any(|r| r.owner == n("new.example.")));
    let out = plan.respond(Rcode::NOERROR, NOW).unwrap();
    assert_eq!(rcode_of(&out), Rcode::NOERROR);
    verifier.verify(&out, NOW).unwrap();
}

#[test]
fn an_update_failing_its_prerequisites_is_not_applied() {
    let world = primary_world();
    let msg = Msg::new()
        .prereq("absent 0 ANY ANY")
        .update("new 300 IN A 192.0.2.77")
        .wire();
    let (msg, _) = signed(msg, &key());
    let (h, _) = run(&world, &msg, RequestKind::Update, STRANGER, Transport::Tcp);
    let Outcome::Update(plan) = h.outcome else {
        panic!("expected an update, got {:?}", h.outcome);
    };
    assert_eq!(plan.apply(&zone(ZONE), NOW), Err(Rcode::NXDOMAIN));
}

#[test]
fn an_update_with_another_key_or_none_is_refused() {
    let world = primary_world();
    let (msg, mut verifier) = signed(update_msg(), &other_key());
    let (h, out) = run(&world, &msg, RequestKind::Update, STRANGER, Transport::Tcp);
    let r = responded(&h);
    assert_eq!(r.rcode, Rcode::REFUSED);
    assert!(r.verified);
    verifier.verify(&out, NOW).unwrap();
    let reason = refusal(&h);
    assert!(
        matches!(reason, Refusal::UpdateRefused { .. }),
        "{reason:?}"
    );
    assert_eq!(reason.kind(), Some(RefusalKind::UpdateRefused));

    let (h, _) = run(
        &world,
        &update_msg(),
        RequestKind::Update,
        STRANGER,
        Transport::Tcp,
    );
    assert!(matches!(refusal(&h), Refusal::UpdateRefused { .. }));
}

#[test]
fn an_update_without_storage_is_refused() {
    let mut world = primary_world();
    world.storage = false;
    let (msg, _) = signed(update_msg(), &key());
    let (h, _) = run(&world, &msg, RequestKind::Update, STRANGER, Transport::Tcp);
    assert_eq!(responded(&h).rcode, Rcode::REFUSED);
    assert!(matches!(refusal(&h), Refusal::UpdateNotDurable { .. }));
    assert_eq!(refusal(&h).kind(), Some(RefusalKind::UpdateRefused));
}

#[test]
fn an_update_to_a_secondary_zone_is_notauth() {
    let mut world = secondary_world(None);
    world.policy.allow_update = vec![acl("0.0.0.0/0", &[])];
    let (h, _) = run(
        &world,
        &update_msg(),
        RequestKind::Update,
        PRIMARY,
        Transport::Tcp,
    );
    assert_eq!(responded(&h).rcode, Rcode::NOTAUTH);
    assert!(matches!(refusal(&h), Refusal::UpdateToSecondary { .. }));
}

// --- Signed queries ---------------------------------------------------------

/// An answer to the SOA query `query` with `txt` TXT records of 100 octets.
fn answer(query: &[u8], txt: usize, out: &mut Vec<u8>) {
    let view = MessageView::parse(query).unwrap();
    let q = view.sole_question().unwrap();
    out.clear();
    let mut b = MessageBuilder::new(out, 65_535);
    let h = b.header_mut();
    h.id = view.header().id;
    h.flags.qr = true;
    h.flags.aa = true;
    b.push_question(&q.qname, q.qtype, q.qclass).unwrap();
    let mut rdata = vec![99u8];
    rdata.extend_from_slice(&[b'x'; 99]);
    for _ in 0..txt {
        b.push_record(
            Section::Answer,
            &origin(),
            Rtype::TXT,
            Class::IN,
            60,
            &rdata,
        )
        .unwrap();
    }
    b.finish(None).unwrap();
}

fn signed_query(transport: Transport, txt: usize) -> (Response, Vec<u8>, ResponseVerifier) {
    let world = primary_world();
    let mut q = Vec::new();
    build_soa_query(0x3003, &origin(), &mut q).unwrap();
    let (q, verifier) = signed(q, &key());
    let (h, _) = run(&world, &q, RequestKind::Signed, STRANGER, transport);
    let Outcome::AnswerThenSign(signer) = h.outcome else {
        panic!("expected answer-then-sign, got {:?}", h.outcome);
    };
    assert!(signer.signature().is_verified());
    let mut out = Vec::new();
    answer(&q, txt, &mut out);
    let r = signer.finish(Rcode::NOERROR, false, &mut out, NOW).unwrap();
    (r, out, verifier)
}

#[test]
fn a_signed_query_is_answered_then_signed() {
    let (r, out, mut verifier) = signed_query(Transport::Udp, 2);
    assert!(r.verified);
    assert!(!r.truncated);
    verifier.verify(&out, NOW).unwrap();
    assert_eq!(MessageView::parse(&out).unwrap().answers().count(), 2);
}

#[test]
fn a_signed_udp_answer_the_tsig_would_push_past_512_is_truncated_to_its_question() {
    // Four TXT records of about 110 octets each: under 512, but not with
    // the TSIG (RFC 8945 §5.3).
    let (r, out, mut verifier) = signed_query(Transport::Udp, 4);
    assert!(r.truncated);
    assert!(out.len() <= 512, "{}", out.len());
    let view = MessageView::parse(&out).unwrap();
    assert!(view.header().flags.tc);
    assert_eq!(view.answers().count(), 0);
    verifier.verify(&out, NOW).unwrap();
}

#[test]
fn a_signed_tcp_answer_is_not_truncated() {
    let (r, out, mut verifier) = signed_query(Transport::Tcp, 4);
    assert!(!r.truncated);
    assert_eq!(MessageView::parse(&out).unwrap().answers().count(), 4);
    verifier.verify(&out, NOW).unwrap();
}

#[test]
fn a_signed_query_answering_will_not_take_is_formerr_signed() {
    let world = primary_world();
    let mut q = Vec::new();
    build_soa_query(0x3003, &origin(), &mut q).unwrap();
    let (q, mut verifier) = signed(q, &key());
    let (h, _) = run(&world, &q, RequestKind::Signed, STRANGER, Transport::Udp);
    let Outcome::AnswerThenSign(signer) = h.outcome else {
        panic!("expected answer-then-sign");
    };
    let mut out = Vec::new();
    let h = signer.refuse(&q, &mut out, NOW);
    assert_eq!(responded(&h).rcode, Rcode::FORMERR);
    assert_eq!(refusal(&h), &Refusal::NotAQuery);
    verifier.verify(&out, NOW).unwrap();
}
