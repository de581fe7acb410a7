//! Cache poisoning, attempted over real sockets against the real binary.
//!
//! Each test runs in a private network namespace (`bulwark_testkit::netns`)
//! where small authoritative servers written here, on port 53 of addresses
//! added to `lo`, play the root, the TLDs, honest zones and lying or forging
//! ones; bulwark resolves from that root (`[resolver] root_hints`). The
//! servers build their answers from a few records by hand (wire bytes, no
//! compression), so a test can also send exactly the forgery it wants: the
//! resolver's query ID, source port and question are known to a server that
//! receives the query, and the forgeries are made around them on purpose.
//!
//! The attacks, one test each, and the defence each one would get through
//! without (see docs/resolver.md, "Defences"):
//! - forged responses with a wrong ID, a wrong question, from another port
//!   or another address, before the true one or instead of it: the match of
//!   a response to its query (address, port, ID, QR, question; RFC 5452
//!   §9.1), in `bulwark_net`'s client and again in the engine;
//! - records for other zones in a server's answer (an A for a name in
//!   another zone, an NS set for a TLD): the bailiwick rule (RFC 2181
//!   §5.4.1) in `classify`;
//! - Kaminsky's race (many forgeries for a fresh name, each carrying data
//!   for the name attacked): unpredictable query IDs and source ports
//!   (RFC 5452 §9.2, §10);
//! - a referral for a sibling zone, not on the way to the name asked: a
//!   referral is believed only for a zone between the server's and the name
//!   sought (RFC 1034 §4.3.2 step 3b), within the server's bailiwick.
//!
//! Nothing here waits for a fixed time: servers are ready once bound, and
//! bulwark once it answers; the slow server of the race answers after the
//! forgeries were sent, not after a delay.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bulwark_testkit::netns::isolated_or_skip;
use hickory_proto::rr::RecordType;

use crate::support::{self, Answer, ChildGuard, EdnsSpec, QuerySpec, Transport};

mod authority;

use authority::{
    a, bind, cname, honest_answer, ns, question, FakeServer, Query, Reply, Rr, Zone, CLASS_CH,
    CLASS_IN, FLAG_AA, FLAG_QR, TYPE_A, TYPE_AAAA,
};

/// Where bulwark listens, inside the namespace.
const BULWARK: &str = "127.0.0.2:53";
/// The root server every test starts from.
const ROOT: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
/// The address every forged record points to: seeing it in an answer, or
/// a query arriving at [`EVIL`], means the poisoning worked.
const FORGED: &str = "203.0.113.66";
/// A server run by the attacker, named by lying referrals and forged NS sets.
const EVIL: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 66);
/// How long a client question may take (a cold resolution from the root).
const QUESTION_TIMEOUT: Duration = Duration::from_secs(5);

/// The attacker's own name server: it answers everything with [`FORGED`].
/// A query reaching it means bulwark believed a lie.
fn evil_server() -> FakeServer {
    FakeServer::start(
        EVIL,
        Box::new(|socket, q, from| {
            let mut reply = q.reply(FLAG_AA);
            reply.answer = vec![a(&q.qname, FORGED)];
            let _ = socket.send_to(&reply.encode(), from);
        }),
    )
}

/// The root zone: `ns.root.` at [`ROOT`], and `delegations` (zone, its
/// server's name, that name's address).
fn root_zone(delegations: &[(&str, &str, Ipv4Addr)]) -> Zone {
    let mut records = vec![ns(".", "ns.root."), a("ns.root.", &ROOT.to_string())];
    records.extend(delegation(delegations));
    Zone::new(".", records)
}

/// NS records and glue for each (zone, server name, address).
fn delegation(delegations: &[(&str, &str, Ipv4Addr)]) -> Vec<Rr> {
    delegations
        .iter()
        .flat_map(|(zone, server, ip)| [ns(zone, server), a(server, &ip.to_string())])
        .collect()
}

// ---------------------------------------------------------------------------
// bulwark and its clients
// ---------------------------------------------------------------------------

/// bulwark resolving from [`ROOT`] for anyone, on [`BULWARK`], answering.
fn start_bulwark(dir: &Path) -> (ChildGuard, SocketAddr) {
    let conf = format!(
        "[server]\nlisten = [\"{BULWARK}\"]\n\n[resolver]\nroot_hints = [\"{ROOT}\"]\ndnssec_validation = false\n\
         allow_recursion = [\"0.0.0.0/0\"]\n"
    );
    let path = dir.join("bulwark.toml");
    std::fs::write(&path, conf).unwrap();
    let args = vec![
        "serve".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let (mut process, bound) = support::start_bulwark(&args, &[], dir, "bulwark");
    let addr = bound.dns[0];
    // Any response will do (a question without RD is refused): it listens.
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    let probe = QuerySpec::new("probe.invalid.", RecordType::A);
    while support::query(addr, &probe, Transport::Udp, Duration::from_millis(100)).is_err() {
        if let Some(status) = process.exited() {
            panic!("bulwark exited with {status}:\n{}", process.log());
        }
        assert!(
            Instant::now() < deadline,
            "bulwark does not answer on {addr}:\n{}",
            process.log()
        );
    }
    (process, addr)
}

fn recursive(qname: &str) -> QuerySpec {
    QuerySpec {
        rd: true,
        edns: Some(EdnsSpec {
            payload: 1232,
            dnssec_ok: false,
            version: 0,
        }),
        ..QuerySpec::new(qname, RecordType::A)
    }
}

/// Asks bulwark for `qname` A; `Err` when it did not answer.
fn ask(addr: SocketAddr, qname: &str) -> Result<Answer, String> {
    support::query(addr, &recursive(qname), Transport::Udp, QUESTION_TIMEOUT)
        .map_err(|e| format!("no answer for {qname}: {e}"))
}

/// Asks bulwark for `qname` A and expects an answer.
fn resolve(process: &ChildGuard, addr: SocketAddr, qname: &str) -> Answer {
    ask(addr, qname).unwrap_or_else(|e| panic!("{e}; bulwark's log:\n{}", process.log()))
}

/// Whether any record of the answer carries the forged address.
fn carries_forgery(answer: &Answer) -> bool {
    answer
        .answer
        .iter()
        .chain(&answer.authority)
        .chain(&answer.additional)
        .any(|r| r.ends_with(FORGED))
}

// ---------------------------------------------------------------------------
// 1. Forged responses: wrong ID, wrong question, wrong port or address
// ---------------------------------------------------------------------------

/// The forgeries a lying server of `example.` sends for one query, before
/// the true answer or instead of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Forgery {
    /// Other IDs (and the right one with QR clear).
    Id,
    /// The right ID with another name, type or class, or no question.
    Question,
    /// Everything right, from the server's address but another port.
    Port,
    /// Everything right, from another address's port 53.
    Address,
}

const FORGERIES: [Forgery; 4] = [
    Forgery::Id,
    Forgery::Question,
    Forgery::Port,
    Forgery::Address,
];

/// The name each kind of forgery is tried on (true answer: 192.0.2.80).
fn forgery_name(f: Forgery) -> &'static str {
    match f {
        Forgery::Id => "id.example.",
        Forgery::Question => "question.example.",
        Forgery::Port => "port.example.",
        Forgery::Address => "address.example.",
    }
}

/// Only forgeries, of every kind, are ever sent for this name.
const ONLY_FORGED: &str = "only-forged.example.";

/// The server of `example.` (at `ip`), which before each true answer sends
/// the forgeries of the name asked, all carrying [`FORGED`] for it, AA set.
/// `other_port` and `other_address` are its accomplices' sockets.
fn forging_server(
    ip: Ipv4Addr,
    zone: Zone,
    other_port: UdpSocket,
    other_address: UdpSocket,
) -> FakeServer {
    let zones = vec![zone];
    FakeServer::start(
        ip,
        Box::new(move |socket, q, from| {
            let kinds: Vec<Forgery> = if q.qname == ONLY_FORGED {
                FORGERIES.to_vec()
            } else {
                FORGERIES
                    .iter()
                    .copied()
                    .filter(|f| forgery_name(*f) == q.qname)
                    .collect()
            };
            let mut forged = q.reply(FLAG_AA);
            forged.answer = vec![a(&q.qname, FORGED)];
            for kind in &kinds {
                for message in forgeries(*kind, q, &forged) {
                    let sender = match kind {
                        Forgery::Id | Forgery::Question => socket,
                        Forgery::Port => &other_port,
                        Forgery::Address => &other_address,
                    };
                    let _ = sender.send_to(&message, from);
                }
            }
            if q.qname != ONLY_FORGED {
                let _ = socket.send_to(&honest_answer(&zones, q).encode(), from);
            }
        }),
    )
}

/// The datagrams of one kind of forgery of `forged`, the response to `q`.
fn forgeries(kind: Forgery, q: &Query, forged: &Reply) -> Vec<Vec<u8>> {
    let with = |change: &dyn Fn(&mut Reply)| {
        let mut r = forged.clone();
        change(&mut r);
        r.encode()
    };
    match kind {
        Forgery::Id => {
            let mut out: Vec<Vec<u8>> = [1u16, 0x8000, 0x5a5a, 0xffff]
                .iter()
                .map(|x| with(&|r: &mut Reply| r.id = q.id ^ x))
                .collect();
            out.push(with(&|r: &mut Reply| r.flags &= !FLAG_QR));
            out
        }
        Forgery::Question => {
            let other_name = format!("other-{}", q.qname);
            vec![
                with(&|r: &mut Reply| r.question = question(&other_name, TYPE_A, CLASS_IN)),
                with(&|r: &mut Reply| r.question = question(&q.qname, TYPE_AAAA, CLASS_IN)),
                with(&|r: &mut Reply| r.question = question(&q.qname, TYPE_A, CLASS_CH)),
                with(&|r: &mut Reply| r.question.clear()),
            ]
        }
        Forgery::Port | Forgery::Address => vec![forged.encode()],
    }
}

/// Defence: a response is matched to its query by source address and port,
/// ID, QR and question (RFC 5452 §9.1) — `bulwark_net`'s UDP client (a
/// connected socket, the source check, `matching.rs`) and the engine's own
/// check of ID, QR and question (`task.rs`, `read_response`). Each kind of
/// forgery is tried on a name of its own, so a failure names the check that
/// let it through.
#[test]
fn forged_responses_with_wrong_id_port_or_question_are_dropped() {
    isolated_or_skip(|| {
        let dir = support::temp_dir("poison-forged-");
        let example_ip = Ipv4Addr::new(192, 0, 2, 2);
        let _root = FakeServer::honest(
            ROOT,
            vec![root_zone(&[("example.", "ns.example.", example_ip)])],
        );
        let mut records = vec![
            ns("example.", "ns.example."),
            a("ns.example.", &example_ip.to_string()),
            a(ONLY_FORGED, "192.0.2.80"),
        ];
        records.extend(FORGERIES.iter().map(|f| a(forgery_name(*f), "192.0.2.80")));
        let example = forging_server(
            example_ip,
            Zone::new("example.", records),
            bind(example_ip, 5353),
            bind(Ipv4Addr::new(192, 0, 2, 99), 53),
        );
        let (bulwark, addr) = start_bulwark(dir.path());

        let mut got_through = Vec::new();
        for kind in FORGERIES {
            let name = forgery_name(kind);
            let answer = resolve(&bulwark, addr, name);
            assert!(example.was_asked(name), "bulwark never asked for {name}");
            if carries_forgery(&answer) || answer.rdata_of("A") != ["192.0.2.80"] {
                got_through.push(format!("{kind:?} ({name}): {answer}"));
            }
        }
        // Only forgeries: a failure (or no answer at all), never their data.
        match ask(addr, ONLY_FORGED) {
            Ok(answer) if carries_forgery(&answer) || answer.rcode_name() != "SERVFAIL" => {
                got_through.push(format!("only forgeries ({ONLY_FORGED}): {answer}"));
            }
            Ok(_) | Err(_) => {}
        }
        assert!(example.was_asked(ONLY_FORGED));
        assert!(
            got_through.is_empty(),
            "forged responses were believed:\n{}\nbulwark's log:\n{}",
            got_through.join("\n"),
            bulwark.log()
        );
    });
}

// ---------------------------------------------------------------------------
// 2. Records outside the answering server's bailiwick
// ---------------------------------------------------------------------------

/// Defence: the bailiwick rule (RFC 2181 §5.4.1; `classify.rs`, the
/// `believed` test): records a server of example.com sends for names
/// outside example.com are dropped before anything is cached. The server of
/// example.com answers `www.example.com` with a CNAME to `www.victim.net`
/// and, alongside, a forged A for `www.victim.net` in the answer and
/// additional sections, an NS set for `net.` pointing at the attacker's
/// server, and a forged address for `ns.victim.net`. Without the rule the
/// forged A would end the CNAME chain and be cached with an authoritative
/// answer's rank.
#[test]
fn out_of_bailiwick_records_are_never_cached() {
    isolated_or_skip(|| {
        let dir = support::temp_dir("poison-bailiwick-");
        let tld_ip = Ipv4Addr::new(192, 0, 2, 2);
        let example_ip = Ipv4Addr::new(192, 0, 2, 10);
        let victim_ip = Ipv4Addr::new(192, 0, 2, 20);
        let _root = FakeServer::honest(
            ROOT,
            vec![root_zone(&[
                ("com.", "ns.tld.", tld_ip),
                ("net.", "ns.tld.", tld_ip),
            ])],
        );
        let _tld = FakeServer::honest(
            tld_ip,
            vec![
                Zone::new(
                    "com.",
                    delegation(&[("example.com.", "ns.example.com.", example_ip)]),
                ),
                Zone::new(
                    "net.",
                    delegation(&[("victim.net.", "ns.victim.net.", victim_ip)]),
                ),
            ],
        );
        let victim = FakeServer::honest(
            victim_ip,
            vec![Zone::new(
                "victim.net.",
                vec![
                    ns("victim.net.", "ns.victim.net."),
                    a("ns.victim.net.", &victim_ip.to_string()),
                    a("www.victim.net.", "192.0.2.80"),
                ],
            )],
        );
        let example_zone = Zone::new(
            "example.com.",
            vec![
                ns("example.com.", "ns.example.com."),
                a("ns.example.com.", &example_ip.to_string()),
                cname("www.example.com.", "www.victim.net."),
            ],
        );
        let _example = FakeServer::start(
            example_ip,
            Box::new(move |socket, q, from| {
                let mut reply = honest_answer(std::slice::from_ref(&example_zone), q);
                reply.answer.push(a("www.victim.net.", FORGED));
                reply.authority.push(ns("net.", "ns.evil.test."));
                reply.authority.push(ns("victim.net.", "ns.evil.test."));
                reply.additional.extend([
                    a("ns.evil.test.", &EVIL.to_string()),
                    a("ns.victim.net.", &EVIL.to_string()),
                    a("www.victim.net.", FORGED),
                ]);
                let _ = socket.send_to(&reply.encode(), from);
            }),
        );
        let evil = evil_server();
        let (bulwark, addr) = start_bulwark(dir.path());

        // The chain's end comes from victim.net's own server.
        let answer = resolve(&bulwark, addr, "www.example.com.");
        assert!(
            !carries_forgery(&answer) && answer.rdata_of("A") == ["192.0.2.80"],
            "www.example.com: the forged A for www.victim.net was believed: {answer}\n{}",
            bulwark.log()
        );
        assert_eq!(answer.rdata_of("CNAME"), ["www.victim.net."], "{answer}");
        assert!(
            victim.was_asked("www.victim.net."),
            "the CNAME's target was not asked of victim.net's server: {answer}"
        );
        // And from the cache afterwards: the true records only.
        for (name, truth) in [
            ("www.victim.net.", "192.0.2.80"),
            ("ns.victim.net.", "192.0.2.20"),
        ] {
            let answer = resolve(&bulwark, addr, name);
            assert!(
                !carries_forgery(&answer) && answer.rdata_of("A") == [truth],
                "{name}: out-of-bailiwick data was cached: {answer}"
            );
        }
        // A name of net. the forged NS set would have sent to the attacker.
        let answer = resolve(&bulwark, addr, "mail.victim.net.");
        assert!(!carries_forgery(&answer), "mail.victim.net: {answer}");
        assert!(
            evil.seen().is_empty(),
            "the attacker's server was asked {:?}: the forged NS set was believed",
            evil.seen()
        );
    });
}

// ---------------------------------------------------------------------------
// 3. Kaminsky's race
// ---------------------------------------------------------------------------

/// Questions for fresh names raced by the attacker.
const RACE_ROUNDS: usize = 50;
/// Forged responses sent for each of them, before the true one.
const FORGERIES_PER_ROUND: usize = 2000;

/// xorshift64*: the attacker's guesses, seeded.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn u16(&mut self) -> u16 {
        (self.next() >> 48) as u16
    }

    fn port(&mut self) -> u16 {
        1024 + (self.next() % (65536 - 1024)) as u16
    }
}

/// The (port, ID) guesses for one round, from the ports and IDs of the
/// queries seen before it (`history`, oldest first): the last port with IDs
/// counting on from the last one and random ones (against a fixed port and a
/// counter or a weak ID generator), the ports just above the last with the
/// next IDs (against ports handed out in order), and random pairs.
fn guesses(history: &[(u16, u16)], rng: &mut Rng) -> Vec<(u16, u16)> {
    let mut out = Vec::with_capacity(FORGERIES_PER_ROUND);
    if let Some(&(port, id)) = history.last() {
        for i in 1..=500u16 {
            out.push((port, id.wrapping_add(i)));
        }
        for _ in 0..500 {
            out.push((port, rng.u16()));
        }
        for p in 1..=50u16 {
            for i in 1..=10u16 {
                out.push((port.wrapping_add(p).max(1024), id.wrapping_add(i)));
            }
        }
    }
    while out.len() < FORGERIES_PER_ROUND {
        out.push((rng.port(), rng.u16()));
    }
    out
}

/// Defence: unpredictable query IDs and source ports (RFC 5452 §9.2, §10;
/// `bulwark_net::client::random`, the engine's `Randomness`). The attacker
/// asks bulwark for a fresh name under victim.example (it knows when the
/// query leaves, as it asked it), and before the true NXDOMAIN sends 2,000
/// responses from the true server's own address and port, to ports and IDs
/// guessed from the queries it saw before, each an authoritative CNAME from
/// the fresh name to www.victim.example with a forged A for it (and a
/// forged NS set and glue for victim.example, as in Kaminsky's original).
/// One that matched would put the forged A for www.victim.example in the
/// cache with an authoritative answer's rank. With 16 random bits of ID and
/// about 16 of port, the attacker's chance over the whole race is about one
/// in 40,000; with a fixed or sequential port and ID it wins at once.
#[test]
fn kaminsky_race_against_one_name_fails() {
    isolated_or_skip(|| {
        let dir = support::temp_dir("poison-race-");
        let example_ip = Ipv4Addr::new(192, 0, 2, 2);
        let victim_ip = Ipv4Addr::new(192, 0, 2, 3);
        let _root = FakeServer::honest(
            ROOT,
            vec![root_zone(&[("example.", "ns.example.", example_ip)])],
        );
        let _example = FakeServer::honest(
            example_ip,
            vec![Zone::new(
                "example.",
                [
                    vec![
                        ns("example.", "ns.example."),
                        a("ns.example.", &example_ip.to_string()),
                    ],
                    delegation(&[("victim.example.", "ns.victim.example.", victim_ip)]),
                ]
                .concat(),
            )],
        );
        let victim_zone = Zone::new(
            "victim.example.",
            vec![
                ns("victim.example.", "ns.victim.example."),
                a("ns.victim.example.", &victim_ip.to_string()),
                a("www.victim.example.", "192.0.2.80"),
            ],
        );
        // (port, ID) of each raced query, in order.
        let raced: Arc<Mutex<Vec<(u16, u16)>>> = Arc::default();
        let victim = {
            let raced = Arc::clone(&raced);
            let mut rng = Rng(0x6b61_6d69_6e73_6b79);
            FakeServer::start(
                victim_ip,
                Box::new(move |socket, q, from| {
                    if q.qname.starts_with("race-") {
                        let history = raced.lock().unwrap().clone();
                        let mut forged = q.reply(FLAG_AA);
                        forged.answer = vec![
                            cname(&q.qname, "www.victim.example."),
                            a("www.victim.example.", FORGED),
                        ];
                        forged.authority =
                            vec![ns("victim.example.", "ns.attacker.victim.example.")];
                        forged.additional = vec![a("ns.attacker.victim.example.", FORGED)];
                        let mut message = forged.encode();
                        for (port, id) in guesses(&history, &mut rng) {
                            message[..2].copy_from_slice(&id.to_be_bytes());
                            let _ = socket.send_to(&message, (from.ip(), port));
                        }
                        raced.lock().unwrap().push((from.port(), q.id));
                    }
                    // The slow true server answers only now.
                    let _ = socket.send_to(
                        &honest_answer(std::slice::from_ref(&victim_zone), q).encode(),
                        from,
                    );
                }),
            )
        };
        let (bulwark, addr) = start_bulwark(dir.path());

        let mut rng = Rng(0x7261_6365);
        let mut honest = 0usize;
        for round in 0..RACE_ROUNDS {
            let name = format!("race-{round}-{:x}.victim.example.", rng.next() >> 16);
            let answer = resolve(&bulwark, addr, &name);
            // On a loaded machine the slow true answer may come after the
            // resolver gave up (SERVFAIL); a forged answer never wins.
            assert!(
                !carries_forgery(&answer)
                    && matches!(answer.rcode_name().as_str(), "NXDOMAIN" | "SERVFAIL"),
                "round {round}: a forged response won the race for {name}: {answer}"
            );
            honest += usize::from(answer.rcode_name() == "NXDOMAIN");
        }
        assert!(
            honest > RACE_ROUNDS / 2,
            "only {honest} of {RACE_ROUNDS} rounds got the true answer: the race was not run"
        );
        let answer = resolve(&bulwark, addr, "www.victim.example.");
        assert!(
            !carries_forgery(&answer) && answer.rdata_of("A") == ["192.0.2.80"],
            "www.victim.example was poisoned by the race: {answer}"
        );
        assert!(victim.was_asked("www.victim.example."));

        // The race was run against unpredictable ports and IDs: spread, and
        // no query's close to the one before it (random 16-bit values are
        // within 256 of each other once in 128).
        let raced = raced.lock().unwrap().clone();
        assert!(
            raced.len() >= RACE_ROUNDS,
            "only {} raced queries",
            raced.len()
        );
        let ports: BTreeSet<u16> = raced.iter().map(|(p, _)| *p).collect();
        let ids: BTreeSet<u16> = raced.iter().map(|(_, id)| *id).collect();
        let close = |pick: fn(&(u16, u16)) -> u16| {
            raced
                .windows(2)
                .filter(|w| pick(&w[1]).wrapping_sub(pick(&w[0])).wrapping_add(256) < 512)
                .count()
        };
        let (close_ports, close_ids) = (close(|r| r.0), close(|r| r.1));
        assert!(
            ports.len() >= 40 && close_ports < 10,
            "{} distinct source ports over {} queries, {close_ports} close to the one before: {raced:?}",
            ports.len(),
            raced.len()
        );
        assert!(
            ids.len() >= 45 && close_ids < 10,
            "{} distinct IDs over {} queries, {close_ids} close to the one before: {raced:?}",
            ids.len(),
            raced.len()
        );
    });
}

// ---------------------------------------------------------------------------
// 4. A lying referral for a sibling zone
// ---------------------------------------------------------------------------

/// Defence: a referral is believed only for a zone on the way from the
/// server's zone down to the name asked (RFC 1034 §4.3.2 step 3b;
/// `classify.rs`, the NS set must be at or above the name sought and below
/// the zone asked), and only within the server's bailiwick.
///
/// The server of example.com, asked (a minimised query) for
/// `lie.example.com NS`, answers the first time with a referral — no
/// answer, no authority — for two zones that are not on the way: its own
/// sibling subzone `other.example.com` (within its bailiwick: only the
/// ancestor rule stops it) and the sibling zone `other.com` (outside it),
/// both to the attacker's server, with glue. Its authoritative answer for
/// `www.example.com` carries the same NS sets in its authority section.
/// Afterwards `www.other.example.com` must come from other.example.com's
/// true server (via example.com's true delegation) and `www.other.com`
/// from other.com's (via com.), and the attacker's server never be asked.
#[test]
fn lying_referral_for_a_sibling_zone_is_not_believed() {
    isolated_or_skip(|| {
        let dir = support::temp_dir("poison-sibling-");
        let tld_ip = Ipv4Addr::new(192, 0, 2, 2);
        let example_ip = Ipv4Addr::new(192, 0, 2, 10);
        let sub_ip = Ipv4Addr::new(192, 0, 2, 31);
        let other_ip = Ipv4Addr::new(192, 0, 2, 30);
        let _root = FakeServer::honest(ROOT, vec![root_zone(&[("com.", "ns.tld.", tld_ip)])]);
        let _tld = FakeServer::honest(
            tld_ip,
            vec![Zone::new(
                "com.",
                delegation(&[
                    ("example.com.", "ns.example.com.", example_ip),
                    ("other.com.", "ns.other.com.", other_ip),
                ]),
            )],
        );
        let other = FakeServer::honest(
            other_ip,
            vec![Zone::new(
                "other.com.",
                vec![
                    ns("other.com.", "ns.other.com."),
                    a("ns.other.com.", &other_ip.to_string()),
                    a("www.other.com.", "192.0.2.33"),
                ],
            )],
        );
        let sub = FakeServer::honest(
            sub_ip,
            vec![Zone::new(
                "other.example.com.",
                vec![
                    ns("other.example.com.", "ns.other.example.com."),
                    a("ns.other.example.com.", &sub_ip.to_string()),
                    a("www.other.example.com.", "192.0.2.32"),
                ],
            )],
        );
        let example_zone = Zone::new(
            "example.com.",
            vec![
                ns("example.com.", "ns.example.com."),
                a("ns.example.com.", &example_ip.to_string()),
                a("www.example.com.", "192.0.2.11"),
                a("a.lie.example.com.", "192.0.2.12"),
                ns("other.example.com.", "ns.other.example.com."),
                a("ns.other.example.com.", &sub_ip.to_string()),
            ],
        );
        let lies = || {
            (
                vec![
                    ns("other.example.com.", "ns.evil.example.com."),
                    ns("other.com.", "ns.evil.example.com."),
                ],
                vec![a("ns.evil.example.com.", &EVIL.to_string())],
            )
        };
        let lied = Arc::new(AtomicBool::new(false));
        let example = {
            let lied = Arc::clone(&lied);
            FakeServer::start(
                example_ip,
                Box::new(move |socket, q, from| {
                    let (authority, glue) = lies();
                    let reply =
                        if q.qname == "lie.example.com." && !lied.swap(true, Ordering::SeqCst) {
                            Reply {
                                authority,
                                additional: glue,
                                ..q.reply(0)
                            }
                        } else {
                            let mut reply = honest_answer(std::slice::from_ref(&example_zone), q);
                            if q.qname == "www.example.com." {
                                reply.authority.extend(authority);
                                reply.additional.extend(glue);
                            }
                            reply
                        };
                    let _ = socket.send_to(&reply.encode(), from);
                }),
            )
        };
        let evil = evil_server();
        let (bulwark, addr) = start_bulwark(dir.path());

        let answer = resolve(&bulwark, addr, "www.example.com.");
        assert_eq!(answer.rdata_of("A"), ["192.0.2.11"], "{answer}");
        // The lie comes with this question; whatever bulwark makes of it,
        // the true answer or a failure, it is not the attacker's.
        let answer = resolve(&bulwark, addr, "a.lie.example.com.");
        assert!(!carries_forgery(&answer), "a.lie.example.com: {answer}");
        assert!(
            lied.load(Ordering::SeqCst),
            "bulwark never asked for lie.example.com, so it never heard the lie: {:?}",
            example.seen()
        );
        for (name, truth, server) in [
            ("www.other.example.com.", "192.0.2.32", &sub),
            ("www.other.com.", "192.0.2.33", &other),
        ] {
            let answer = resolve(&bulwark, addr, name);
            assert!(
                !carries_forgery(&answer) && answer.rdata_of("A") == [truth],
                "{name}: the sibling referral was believed: {answer}\nbulwark's log:\n{}",
                bulwark.log()
            );
            assert!(server.was_asked(name), "{name} was not asked of its server");
        }
        assert!(
            evil.seen().is_empty(),
            "the attacker's server was asked {:?}: a sibling referral was believed",
            evil.seen()
        );
    });
}
