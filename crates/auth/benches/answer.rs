//! Parse + answer + encode of a single query (issue 7): the DNS work per query,
//! without sockets, so regressions show without the whole `bench/` harness.
//!
//! `cargo bench -p bulwark-auth` runs it under divan. For instruction counts under
//! callgrind, `BULWARK_BENCH_LOOP="<case> <n>"` skips divan and answers that case
//! `n` times; the difference between two runs with different `n`, divided by the
//! difference in `n`, is the cost of one query with the zone setup cancelled out;
//! with `BULWARK_BENCH_CACHED=1` the answerer has a response cache, so every
//! answer after the first is a replay.

use std::sync::{Arc, OnceLock};

use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Transport};
use bulwark_proto::Name;
use bulwark_zone::{Zone, ZoneSet};
use divan::Bencher;

/// Hosts in the zone, each with an A and an AAAA.
const HOSTS: usize = 10_000;

/// The cases, by name: what each asks for.
const CASES: &[&str] = &[
    "www A",
    "www A DO",
    "nxdomain A",
    "wildcard A",
    "referral A",
    "apex ANY",
];

fn zone_text() -> String {
    let mut text = String::with_capacity(HOSTS * 80);
    text.push_str(
        "$TTL 3600\n\
         @ IN SOA ns1 hostmaster 2026112201 7200 3600 1209600 300\n\
         @ NS ns1\n\
         @ NS ns2\n\
         @ MX 10 mail\n\
         @ TXT \"v=spf1 mx -all\"\n\
         @ A 192.0.2.1\n\
         @ AAAA 2001:db8::1\n\
         ns1 A 192.0.2.53\n\
         ns2 A 198.51.100.53\n\
         mail A 192.0.2.25\n\
         www A 192.0.2.80\n\
         www AAAA 2001:db8::80\n\
         *.wild A 192.0.2.7\n\
         alias CNAME www\n\
         sub NS ns.sub\n\
         sub NS ns.elsewhere.net.\n\
         ns.sub A 192.0.2.200\n\
         ns.sub AAAA 2001:db8::200\n",
    );
    for i in 0..HOSTS {
        let (b, c) = (i / 256, i % 256);
        text.push_str(&format!(
            "host{i} A 10.0.{b}.{c}\nhost{i} AAAA 2001:db8:1::{i:x}\n"
        ));
    }
    text
}

fn zones() -> &'static ZoneSet {
    static ZONES: OnceLock<ZoneSet> = OnceLock::new();
    ZONES.get_or_init(|| {
        let origin = Name::from_presentation(b"example.com.", None).expect("origin");
        let records = bulwark_zone::parse_str(&zone_text(), &origin, "bench").expect("parses");
        let (zone, _warnings) = Zone::build(origin, records).expect("builds");
        ZoneSet::new(vec![Arc::new(zone)])
    })
}

/// A query in wire form: RD clear, one question, and with `dnssec_ok` an OPT
/// record (RFC 6891 §6.1.2) advertising 1232 octets with the DO bit set.
fn query(qname: &str, qtype: u16, dnssec_ok: bool) -> Vec<u8> {
    let mut q = vec![0x4a, 0x17, 0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(dnssec_ok)];
    for label in qname.split('.').filter(|l| !l.is_empty()) {
        q.push(u8::try_from(label.len()).expect("label length"));
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    if dnssec_ok {
        // Root owner, type OPT, class = payload size, TTL = ext-rcode/version/DO.
        q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
    }
    q
}

fn case_query(case: &str) -> Vec<u8> {
    const A: u16 = 1;
    const ANY: u16 = 255;
    match case {
        "www A" => query("www.example.com.", A, false),
        "www A DO" => query("www.example.com.", A, true),
        "nxdomain A" => query("nonexistent.example.com.", A, false),
        "wildcard A" => query("anything.wild.example.com.", A, false),
        "referral A" => query("host.sub.example.com.", A, false),
        "apex ANY" => query("example.com.", ANY, false),
        other => panic!("unknown case {other:?}; cases: {CASES:?}"),
    }
}

fn answerer() -> Answerer {
    Answerer::new(Arc::new(AnswerConfig::default()))
}

#[divan::bench(args = CASES)]
fn answer(bencher: Bencher, case: &str) {
    let zones = zones();
    let query = case_query(case);
    let mut answerer = answerer();
    let mut out = Vec::with_capacity(4096);
    // A wrong answer would make the figure meaningless: check it once, outside timing.
    let outcome = answerer.answer(zones, Transport::Udp, &query, &mut out);
    assert!(
        matches!(outcome, AnswerOutcome::Respond { .. }),
        "{case}: {outcome:?}"
    );
    time_answers(bencher, &mut answerer, &query, &mut out);
}

/// The same cases answered from a warm response cache: what a repeated
/// question costs on a UDP worker.
#[divan::bench(args = CASES)]
fn answer_cached(bencher: Bencher, case: &str) {
    let zones = zones();
    let query = case_query(case);
    let mut fresh = answerer();
    let mut answerer = answerer().with_response_cache(1024);
    let (mut want, mut out) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    fresh.answer(zones, Transport::Udp, &query, &mut want);
    answerer.answer(zones, Transport::Udp, &query, &mut out);
    answerer.answer(zones, Transport::Udp, &query, &mut out);
    assert_eq!(out, want, "{case}: the replayed answer differs");
    time_answers(bencher, &mut answerer, &query, &mut out);
}

/// Times answering `query` over UDP, again and again.
fn time_answers(bencher: Bencher, answerer: &mut Answerer, query: &[u8], out: &mut Vec<u8>) {
    let zones = zones();
    bencher.bench_local(|| {
        answerer.answer(
            zones,
            Transport::Udp,
            divan::black_box(query),
            divan::black_box(&mut *out),
        )
    });
}

fn main() {
    if let Ok(spec) = std::env::var("BULWARK_BENCH_LOOP") {
        let (case, n) = spec
            .rsplit_once(' ')
            .expect("BULWARK_BENCH_LOOP=\"<case> <n>\"");
        let n: u64 = n.parse().expect("a count");
        let zones = zones();
        let query = case_query(case);
        let mut answerer = if std::env::var_os("BULWARK_BENCH_CACHED").is_some() {
            answerer().with_response_cache(1024)
        } else {
            answerer()
        };
        let mut out = Vec::with_capacity(4096);
        for _ in 0..n {
            divan::black_box(answerer.answer(
                zones,
                Transport::Udp,
                divan::black_box(&query),
                &mut out,
            ));
        }
        println!("{case}: {n} answers, last {} octets", out.len());
        return;
    }
    divan::main();
}
