//! The secondary's refresh engine (`bulwark_xfr::refresh`) as tables of
//! steps, with no socket and no clock: time, NOTIFYs and the primaries'
//! answers go in, the queries it asks to send and the events it raises are
//! checked. Answers are real messages: SOA answers built here, transfers
//! written by `TransferWriter` and checked by the engine's `TransferCheck`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::net::SocketAddr;
use std::sync::Arc;

use bulwark_proto::message::{MessageBuilder, MessageView, Section};
use bulwark_proto::{Class, Name, Opcode, Record, Rtype};
use bulwark_xfr::refresh::{
    Event, Fetched, Randomness, Refresh, RefreshError, Reply, Start, Timers, Transferred, Transmit,
    TransmitKind,
};
use bulwark_xfr::remote::Remote;
use bulwark_xfr::transfer_in::Progress;
use bulwark_xfr::transfer_out::TransferWriter;
use bulwark_xfr::tsig::{
    verify_request, KeyRing, ResponseSigner, TsigAlgorithm, TsigKey, VerifiedRequest,
};
use bulwark_zone::Zone;

/// The clock at the start of every table.
const T: u64 = 1_000_000;
/// The test zone's SOA timers: REFRESH 300, RETRY 100, EXPIRE 1000.
const REFRESH: u64 = 300;
const RETRY: u64 = 100;
const EXPIRE: u64 = 1000;

const A1: &str = "192.0.2.1:53";
const A2: &str = "192.0.2.2:53";
const B1: &str = "198.51.100.1:53";

fn apex() -> Name {
    "example.".parse().unwrap()
}

/// The zone at `serial`, with one record only that version has.
fn version(serial: u32) -> Zone {
    let text = format!(
        "$TTL 300\n@ SOA ns hostmaster {serial} {REFRESH} {RETRY} {EXPIRE} 60\n@ NS ns\nns A 192.0.2.53\nv{serial} TXT \"{serial}\"\n"
    );
    let records = bulwark_zone::parse_str(&text, &apex(), "test").unwrap();
    Zone::build(apex(), records).unwrap().0
}

fn soa(serial: u32) -> Record {
    bulwark_zone::diff::soa_record(&version(serial)).unwrap()
}

fn key() -> TsigKey {
    TsigKey::new(
        "xfr.example.".parse().unwrap(),
        TsigAlgorithm::HmacSha256,
        (1..=32).collect(),
    )
}

/// Two primaries: `a` at two addresses, then `b` at one.
fn primaries(key: Option<TsigKey>) -> Vec<Arc<Remote>> {
    let key = key.map(Arc::new);
    vec![
        Arc::new(Remote {
            name: "a".to_string(),
            addresses: vec![A1.parse().unwrap(), A2.parse().unwrap()],
            key: key.clone(),
            via: None,
        }),
        Arc::new(Remote {
            name: "b".to_string(),
            addresses: vec![B1.parse().unwrap()],
            key,
            via: None,
        }),
    ]
}

/// Randomness that always draws the same number: query IDs are all alike
/// and the jitter is known.
struct Fixed(u16);

impl Randomness for Fixed {
    fn random_u16(&mut self) -> Option<u16> {
        Some(self.0)
    }
}

/// A secondary with no copy.
fn fresh() -> Refresh {
    Refresh::new(
        apex(),
        primaries(None),
        Start::default(),
        Box::new(Fixed(0)),
    )
}

/// A secondary holding serial `serial`, with stored timers.
fn holding(serial: u32, timers: Timers) -> Refresh {
    Refresh::new(
        apex(),
        primaries(None),
        Start {
            held: Some(soa(serial)),
            timers: Some(timers),
            served: true,
        },
        Box::new(Fixed(0)),
    )
}

/// Timers due at `T`, expiring at `expire_at`.
fn due(expire_at: u64) -> Timers {
    Timers {
        next_refresh: T,
        expire_at,
        last_serial: Some(1),
        ..Timers::default()
    }
}

// --- The primaries, played here --------------------------------------------

/// The answer to the SOA query `query`: the zone's SOA at `serial`.
fn soa_answer(query: &[u8], serial: u32) -> Vec<u8> {
    let view = MessageView::parse(query).unwrap();
    let q = view.sole_question().unwrap();
    assert_eq!(q.qtype, Rtype::SOA);
    let mut out = Vec::new();
    let mut b = MessageBuilder::new(&mut out, 512);
    let h = b.header_mut();
    h.id = view.header().id;
    h.opcode = Opcode::QUERY;
    h.flags.qr = true;
    h.flags.aa = true;
    b.push_question(&q.qname, q.qtype, q.qclass).unwrap();
    b.push_record(
        Section::Answer,
        &apex(),
        Rtype::SOA,
        Class::IN,
        300,
        &soa(serial).rdata.to_wire(),
    )
    .unwrap();
    b.finish(None).unwrap();
    out
}

/// The messages a primary at `serial` answers the transfer query `query`
/// with: the whole zone, or for `up_to_date` its SOA alone.
fn transfer_answer(query: &[u8], serial: u32, up_to_date: bool) -> Vec<Vec<u8>> {
    let view = MessageView::parse(query).unwrap();
    let q = view.sole_question().unwrap();
    let zone = version(serial);
    let mut writer = if up_to_date {
        TransferWriter::single_soa(&zone, view.header().id, &q).unwrap()
    } else {
        TransferWriter::axfr(&zone, view.header().id, &q).unwrap()
    }
    .with_message_limit(100);
    let mut messages = Vec::new();
    let mut out = Vec::new();
    while let Some(r) = writer.next_message(&mut out, 0) {
        r.unwrap();
        messages.push(out.clone());
    }
    messages
}

/// Signs `messages`, the response to the signed `query`, as a primary
/// holding `key` does.
fn sign_as_primary(query: &[u8], messages: &mut [Vec<u8>]) {
    let ring: KeyRing = [key()].into_iter().collect();
    let verified: VerifiedRequest = verify_request(query, &ring, T).unwrap().unwrap();
    let mut signer = ResponseSigner::new(&verified);
    for m in messages {
        signer.sign(m, T).unwrap();
    }
}

// --- The table --------------------------------------------------------------

/// What a query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Soa,
    Ixfr,
    Axfr,
}

/// What the primary (or the network) does with the query last sent.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// Its SOA, at this serial.
    Soa(u32),
    /// Nothing in time.
    Silence,
    /// The zone at this serial, checked, then applied by the server.
    Zone(u32),
    /// The IXFR answer "you are current".
    Current(u32),
    /// The transfer breaks off.
    Broken,
}

/// An event, as the table names it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    /// Timers stored, next refresh at this time.
    Save(u64),
    Expire,
    Revive,
    Current(u32),
    Older,
    /// A primary's address failed.
    Failed(&'static str),
    IxfrFailed,
}

#[derive(Debug, Clone)]
enum Step {
    /// The clock reads this: the engine's timeout is handled.
    At(u64),
    /// A NOTIFY is accepted at this time.
    Notify(u64),
    /// The engine asks to send this query to this address now.
    Sends(Ask, &'static str),
    /// It asks nothing.
    Quiet,
    /// The last query's fate.
    Gets(Answer),
    /// The events since the last check, exactly.
    Events(Vec<Ev>),
    /// When it next wants its timeout handled.
    Wakes(Option<u64>),
}

use Answer::*;
use Step::*;

fn ask_of(t: &Transmit) -> Ask {
    let view = MessageView::parse(&t.message).unwrap();
    let qtype = view.sole_question().unwrap().qtype;
    match (&t.kind, qtype) {
        (TransmitKind::Soa, Rtype::SOA) => Ask::Soa,
        (TransmitKind::Transfer(c), Rtype::IXFR) if c.qtype() == Rtype::IXFR => Ask::Ixfr,
        (TransmitKind::Transfer(c), Rtype::AXFR) if c.qtype() == Rtype::AXFR => Ask::Axfr,
        other => panic!("a query that is none of SOA, IXFR, AXFR: {other:?}"),
    }
}

fn ev(e: Event) -> Ev {
    match e {
        Event::SaveTimers(t) => Ev::Save(t.next_refresh),
        Event::Expire => Ev::Expire,
        Event::Revive => Ev::Revive,
        Event::Current { serial } => Ev::Current(serial),
        Event::Older { .. } => Ev::Older,
        Event::PrimaryFailed { from, .. } => Ev::Failed(
            [A1, A2, B1]
                .into_iter()
                .find(|a| *a == from.to_string())
                .unwrap(),
        ),
        Event::IxfrFailed { .. } => Ev::IxfrFailed,
    }
}

/// Feeds a transfer's messages through the transmit's check, as the server
/// does, and applies what it brings (the server's part reduced to taking
/// the SOA).
fn transferred(t: Transmit, messages: Vec<Vec<u8>>, now: u64) -> Reply {
    let TransmitKind::Transfer(mut check) = t.kind else {
        panic!("not a transfer");
    };
    for m in &messages {
        match check.feed(m, now) {
            Ok(Progress::More) => {}
            Ok(Progress::Done) => break,
            Err(e) => return Reply::Transfer(Err(e)),
        }
    }
    Reply::Transfer(check.finish().map(|f| match f {
        Fetched::UpToDate => Transferred::UpToDate,
        Fetched::Full { soa, .. } | Fetched::Incremental { soa, .. } => {
            Transferred::Applied { soa: Box::new(soa) }
        }
    }))
}

/// Runs `steps` against `engine`; every event must be checked by an
/// `Events` step, and none may be left at the end.
fn play(engine: &mut Refresh, steps: &[Step]) {
    let mut now = T;
    let mut sent: Option<Transmit> = None;
    let mut events = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let at = format!("step {i}: {step:?}");
        match step {
            At(t) => {
                now = *t;
                engine.handle_timeout(now);
            }
            Notify(t) => {
                now = *t;
                engine.handle_notify(now);
            }
            Sends(ask, to) => {
                let t = engine
                    .poll_transmit(now)
                    .unwrap_or_else(|| panic!("{at}: nothing sent"));
                assert_eq!((ask_of(&t), t.to.to_string().as_str()), (*ask, *to), "{at}");
                sent = Some(t);
            }
            Quiet => assert!(engine.poll_transmit(now).is_none(), "{at}"),
            Gets(answer) => {
                let t = sent
                    .take()
                    .unwrap_or_else(|| panic!("{at}: nothing was sent"));
                let reply = match *answer {
                    Soa(serial) => Reply::Soa(Ok(soa_answer(&t.message, serial))),
                    Silence if matches!(t.kind, TransmitKind::Soa) => {
                        Reply::Soa(Err(RefreshError::Exchange("timed out".to_string())))
                    }
                    Silence | Broken => Reply::Transfer(Err(RefreshError::Exchange(
                        "connection closed".to_string(),
                    ))),
                    Zone(serial) => {
                        let m = transfer_answer(&t.message, serial, false);
                        transferred(t, m, now)
                    }
                    Current(serial) => {
                        let m = transfer_answer(&t.message, serial, true);
                        transferred(t, m, now)
                    }
                };
                engine.handle_response(now, reply);
            }
            Events(want) => {
                while let Some(e) = engine.poll_event() {
                    events.push(ev(e));
                }
                assert_eq!(&events, want, "{at}");
                events.clear();
            }
            Wakes(when) => assert_eq!(engine.poll_timeout(), *when, "{at}"),
        }
    }
    let left: Vec<Ev> = std::iter::from_fn(|| engine.poll_event()).map(ev).collect();
    assert!(left.is_empty(), "events not checked: {left:?}");
}

/// Every address fails in turn, at the current time.
fn all_fail() -> Vec<Step> {
    vec![
        Sends(Ask::Soa, A1),
        Gets(Silence),
        Sends(Ask::Soa, A2),
        Gets(Silence),
        Sends(Ask::Soa, B1),
        Gets(Silence),
        Quiet,
    ]
}

fn failed_all() -> Vec<Ev> {
    vec![Ev::Failed(A1), Ev::Failed(A2), Ev::Failed(B1)]
}

// --- Tables -----------------------------------------------------------------

#[test]
fn with_no_copy_the_first_primary_is_asked_for_its_soa_at_once() {
    play(
        &mut fresh(),
        &[Wakes(Some(0)), Quiet, At(T), Sends(Ask::Soa, A1), Quiet],
    );
}

#[test]
fn a_copy_held_waits_for_its_stored_refresh_time() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[Wakes(Some(T)), At(T - 1), Quiet, At(T), Sends(Ask::Soa, A1)],
    );
}

#[test]
fn a_silent_address_is_passed_over_for_the_next_then_the_next_primary() {
    play(
        &mut fresh(),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Silence),
            Events(vec![Ev::Failed(A1)]),
            Sends(Ask::Soa, A2),
            Gets(Silence),
            Events(vec![Ev::Failed(A2)]),
            Sends(Ask::Soa, B1),
            Gets(Soa(1)),
            Sends(Ask::Axfr, B1),
            Gets(Zone(1)),
            Events(vec![Ev::Save(T + REFRESH)]),
            Quiet,
            Wakes(Some(T + REFRESH)),
        ],
    );
}

#[test]
fn a_zone_never_transferred_retries_after_1_2_4_up_to_60_seconds() {
    let mut steps = Vec::new();
    let mut now = T;
    for wait in [1, 2, 4, 8, 16, 32, 60, 60] {
        steps.push(At(now));
        steps.extend(all_fail());
        let mut want = failed_all();
        want.push(Ev::Save(now + wait));
        steps.push(Events(want));
        steps.push(Wakes(Some(now + wait)));
        now += wait;
    }
    play(&mut fresh(), &steps);
}

#[test]
fn a_copy_held_retries_after_its_soa_retry() {
    let mut steps = vec![At(T)];
    steps.extend(all_fail());
    steps.push(Events([failed_all(), vec![Ev::Save(T + RETRY)]].concat()));
    steps.push(Wakes(Some(T + RETRY)));
    play(&mut holding(1, due(T + EXPIRE)), &steps);
}

#[test]
fn retries_are_spread_by_up_to_a_quarter_from_the_randomness_given() {
    let mut engine = Refresh::new(
        apex(),
        primaries(None),
        Start {
            held: Some(soa(1)),
            timers: Some(due(T + EXPIRE)),
            served: true,
        },
        Box::new(Fixed(25)),
    );
    let mut steps = vec![At(T)];
    steps.extend(all_fail());
    // RETRY 100: up to 25 more; 25 draws all of it.
    steps.push(Events(
        [failed_all(), vec![Ev::Save(T + RETRY + 25)]].concat(),
    ));
    play(&mut engine, &steps);
}

#[test]
fn a_newer_serial_is_fetched_by_ixfr_from_the_copy_held() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(2)),
            Events(vec![]),
            Sends(Ask::Ixfr, A1),
            Gets(Zone(2)),
            Events(vec![Ev::Save(T + REFRESH)]),
            Wakes(Some(T + REFRESH)),
            // The copy is now serial 2: the next IXFR starts there.
            At(T + REFRESH),
            Sends(Ask::Soa, A1),
            Gets(Soa(2)),
            Events(vec![Ev::Current(2), Ev::Save(T + 2 * REFRESH)]),
        ],
    );
}

#[test]
fn a_failed_ixfr_falls_back_to_axfr_from_the_same_address() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(2)),
            Sends(Ask::Ixfr, A1),
            Gets(Broken),
            Events(vec![Ev::IxfrFailed]),
            Sends(Ask::Axfr, A1),
            Gets(Zone(2)),
            Events(vec![Ev::Save(T + REFRESH)]),
        ],
    );
}

#[test]
fn a_failed_axfr_moves_on_to_the_next_address() {
    play(
        &mut fresh(),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(1)),
            Sends(Ask::Axfr, A1),
            Gets(Broken),
            Events(vec![Ev::Failed(A1)]),
            Sends(Ask::Soa, A2),
        ],
    );
}

#[test]
fn an_ixfr_answered_current_keeps_the_copy_and_runs_the_timers() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(2)),
            Sends(Ask::Ixfr, A1),
            Gets(Current(1)),
            Events(vec![Ev::Save(T + REFRESH)]),
            Quiet,
        ],
    );
}

#[test]
fn an_equal_serial_is_current_and_the_timers_come_from_the_soa() {
    let mut engine = holding(1, due(T + 10));
    play(
        &mut engine,
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(1)),
            Events(vec![Ev::Current(1), Ev::Save(T + REFRESH)]),
            Quiet,
            Wakes(Some(T + REFRESH)),
        ],
    );
    let t = engine.timers();
    assert_eq!(t.last_refresh, T);
    assert_eq!(t.expire_at, T + EXPIRE);
    assert_eq!(t.last_serial, Some(1));
    assert_eq!(t.primary.as_deref(), Some(A1));
}

#[test]
fn an_older_serial_at_the_primary_is_noted_and_the_copy_kept() {
    play(
        &mut holding(5, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(3)),
            Events(vec![Ev::Older, Ev::Current(5), Ev::Save(T + REFRESH)]),
            Quiet,
        ],
    );
}

#[test]
fn a_notify_asks_the_primary_now() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Gets(Soa(1)),
            Events(vec![Ev::Current(1), Ev::Save(T + REFRESH)]),
            Notify(T + 10),
            Sends(Ask::Soa, A1),
        ],
    );
}

#[test]
fn a_notify_during_a_refresh_asks_again_once_it_ends() {
    play(
        &mut holding(1, due(T + EXPIRE)),
        &[
            At(T),
            Sends(Ask::Soa, A1),
            Notify(T + 1),
            Gets(Soa(1)),
            Events(vec![Ev::Current(1), Ev::Save(T + 1 + REFRESH)]),
            Wakes(Some(T + 1)),
            At(T + 1),
            Sends(Ask::Soa, A1),
        ],
    );
}

#[test]
fn a_copy_whose_expire_passed_without_a_refresh_is_expired() {
    let mut steps = vec![At(T)];
    steps.extend(all_fail());
    // Before EXPIRE: only a retry.
    steps.push(Events([failed_all(), vec![Ev::Save(T + RETRY)]].concat()));
    steps.push(At(T + EXPIRE));
    steps.extend(all_fail());
    steps.push(Events(
        [failed_all(), vec![Ev::Expire, Ev::Save(T + EXPIRE + RETRY)]].concat(),
    ));
    play(&mut holding(1, due(T + EXPIRE)), &steps);
}

#[test]
fn an_expired_copy_confirmed_current_is_revived() {
    let mut steps = vec![At(T)];
    steps.extend(all_fail());
    steps.push(Events(
        [failed_all(), vec![Ev::Expire, Ev::Save(T + RETRY)]].concat(),
    ));
    steps.extend([
        At(T + RETRY),
        Sends(Ask::Soa, A1),
        Gets(Soa(1)),
        Events(vec![
            Ev::Revive,
            Ev::Current(1),
            Ev::Save(T + RETRY + REFRESH),
        ]),
        // Served again: the next confirmation revives nothing.
        At(T + RETRY + REFRESH),
        Sends(Ask::Soa, A1),
        Gets(Soa(1)),
        Events(vec![Ev::Current(1), Ev::Save(T + RETRY + 2 * REFRESH)]),
    ]);
    play(&mut holding(1, due(T)), &steps);
}

#[test]
fn an_expired_copy_replaced_by_a_transfer_needs_no_revival() {
    let mut steps = vec![At(T)];
    steps.extend(all_fail());
    steps.push(Events(
        [failed_all(), vec![Ev::Expire, Ev::Save(T + RETRY)]].concat(),
    ));
    steps.extend([
        At(T + RETRY),
        Sends(Ask::Soa, A1),
        Gets(Soa(2)),
        Sends(Ask::Ixfr, A1),
        Gets(Zone(2)),
        Events(vec![Ev::Save(T + RETRY + REFRESH)]),
        At(T + RETRY + REFRESH),
        Sends(Ask::Soa, A1),
        Gets(Soa(2)),
        Events(vec![Ev::Current(2), Ev::Save(T + RETRY + 2 * REFRESH)]),
    ]);
    play(&mut holding(1, due(T)), &steps);
}

#[test]
fn a_reload_changes_the_primaries_of_the_next_refresh() {
    let mut engine = fresh();
    engine.set_primaries(vec![Arc::new(Remote {
        name: "c".to_string(),
        addresses: vec!["203.0.113.5:5300".parse::<SocketAddr>().unwrap()],
        key: None,
        via: None,
    })]);
    engine.handle_timeout(T);
    let t = engine.poll_transmit(T).unwrap();
    assert_eq!(t.to.to_string(), "203.0.113.5:5300");
    assert_eq!(t.remote.name, "c");
}

// --- TSIG -------------------------------------------------------------------

#[test]
fn queries_to_a_keyed_primary_are_signed_and_its_answers_must_be() {
    let mut engine = Refresh::new(
        apex(),
        primaries(Some(key())),
        Start::default(),
        Box::new(Fixed(7)),
    );
    engine.handle_timeout(T);
    // The SOA query verifies with the key.
    let t = engine.poll_transmit(T).unwrap();
    let ring: KeyRing = [key()].into_iter().collect();
    assert!(verify_request(&t.message, &ring, T).unwrap().is_some());
    // An unsigned answer is refused for its TSIG.
    engine.handle_response(T, Reply::Soa(Ok(soa_answer(&t.message, 1))));
    match engine.poll_event() {
        Some(Event::PrimaryFailed {
            error: RefreshError::Tsig(_),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // The next address answers signed: on to the transfer, signed too.
    let t = engine.poll_transmit(T).unwrap();
    assert_eq!(t.to.to_string(), A2);
    let mut answer = vec![soa_answer(&t.message, 1)];
    sign_as_primary(&t.message, &mut answer);
    engine.handle_response(T, Reply::Soa(Ok(answer.remove(0))));
    let t = engine.poll_transmit(T).unwrap();
    assert!(verify_request(&t.message, &ring, T).unwrap().is_some());
    let mut messages = transfer_answer(&t.message, 1, false);
    assert!(messages.len() > 1);
    let TransmitKind::Transfer(check) = &t.kind else {
        panic!("not a transfer");
    };
    assert_eq!(check.qtype(), Rtype::AXFR);
    sign_as_primary(&t.message, &mut messages);
    let reply = transferred(t, messages, T);
    assert!(matches!(
        reply,
        Reply::Transfer(Ok(Transferred::Applied { .. }))
    ));
    engine.handle_response(T, reply);
    assert_eq!(
        engine.poll_event(),
        Some(Event::SaveTimers(engine.timers().clone()))
    );
    assert_eq!(engine.timers().next_refresh, T + REFRESH);
}

#[test]
fn an_unsigned_transfer_from_a_keyed_primary_is_refused() {
    let mut engine = Refresh::new(
        apex(),
        primaries(Some(key())),
        Start::default(),
        Box::new(Fixed(7)),
    );
    engine.handle_timeout(T);
    let t = engine.poll_transmit(T).unwrap();
    let mut answer = vec![soa_answer(&t.message, 1)];
    sign_as_primary(&t.message, &mut answer);
    engine.handle_response(T, Reply::Soa(Ok(answer.remove(0))));
    let t = engine.poll_transmit(T).unwrap();
    let messages = transfer_answer(&t.message, 1, false);
    let reply = transferred(t, messages, T);
    assert!(
        matches!(reply, Reply::Transfer(Err(RefreshError::Tsig(_)))),
        "{reply:?}"
    );
}

#[test]
fn without_randomness_no_query_is_sent() {
    struct Broken;
    impl Randomness for Broken {
        fn random_u16(&mut self) -> Option<u16> {
            None
        }
    }
    let mut engine = Refresh::new(apex(), primaries(None), Start::default(), Box::new(Broken));
    engine.handle_timeout(T);
    assert!(engine.poll_transmit(T).is_none());
    let events: Vec<Event> = std::iter::from_fn(|| engine.poll_event()).collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                Event::PrimaryFailed {
                    error: RefreshError::NoRandom,
                    ..
                }
            ))
            .count(),
        3
    );
    assert_eq!(engine.poll_timeout(), Some(T + 1));
}
