#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use std::time::{Duration, Instant};

use bulwark_proto::{Opcode, Rcode, Rtype};

use super::collect::{qtype_label, registry_families};
use super::*;

/// What a query with `opcode` and `qtype` asked, as the answerer reports it.
fn query(opcode: u8, qtype: u16) -> Asked {
    Asked {
        opcode: Some(Opcode::new(opcode)),
        qtype: Some(Rtype(qtype)),
    }
}

/// A response with `rcode`, TC when `tc`, and one A answer: its size with an
/// OPT when `edns`.
fn response(_qtype: u16, rcode: u16, tc: bool, edns: bool) -> Told {
    Told {
        rcode: Rcode::new(rcode),
        truncated: tc,
        size: if edns { 60 } else { 49 },
    }
}

fn settings(enabled: bool) -> StatsSettings {
    StatsSettings { enabled }
}

#[test]
fn udp_a_query_noerror_lands_in_its_series() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Udp);
    let resp = response(1, 0, false, true);
    rec.record(query(0, 1), Some(resp), Fate::Answered, None);
    let s = reg.snapshot();
    assert_eq!(s.udp.queries_by_qtype(1), 1);
    assert_eq!(s.udp.queries_by_opcode(0), 1);
    assert_eq!(s.udp.responses_by_rcode(0), 1);
    assert_eq!(s.udp.size_sum(), resp.size as u64);
    assert_eq!(s.tcp, Totals::default());
    let fams = registry_families(&s);
    let q = fams
        .iter()
        .find(|f| f.name == "bulwark_queries_total")
        .unwrap();
    assert_eq!(q.samples.len(), 1, "only non-zero series");
    assert_eq!(
        q.samples[0].labels,
        vec![
            ("transport", "udp".to_string()),
            ("opcode", "QUERY".to_string()),
            ("qtype", "A".to_string())
        ]
    );
    let r = fams
        .iter()
        .find(|f| f.name == "bulwark_responses_total")
        .unwrap();
    assert_eq!(r.samples[0].labels[1], ("rcode", "NOERROR".to_string()));
    assert_eq!(r.samples[0].value, Value::Int(1));
}

#[test]
fn extended_rcodes_have_their_own_series() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Udp);
    let resp = response(1, Rcode::BADCOOKIE.value(), false, true);
    rec.record(query(0, 1), Some(resp), Fate::Answered, None);
    let s = reg.snapshot();
    assert_eq!(s.udp.responses_by_rcode(23), 1);
    assert_eq!(s.udp.responses_by_rcode(7), 0);
}

#[test]
fn drops_truncation_slips_and_malformed_are_counted() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Udp);
    rec.record(
        Asked::default(),
        None,
        Fate::Dropped(DropReason::Unanswerable),
        None,
    );
    rec.record(query(0, 28), None, Fate::Dropped(DropReason::Acl), None);
    let tc = response(28, 0, true, false);
    rec.record(query(0, 28), Some(tc), Fate::Slipped, None);
    let formerr = response(1, 1, false, false);
    rec.record(query(0, 1), Some(formerr), Fate::Answered, None);
    rec.record(
        query(4, 6),
        Some(response(6, 4, false, false)),
        Fate::Answered,
        None,
    );
    let s = reg.snapshot();
    assert_eq!(s.udp.dropped(DropReason::Unanswerable), 1);
    assert_eq!(s.udp.dropped(DropReason::Acl), 1);
    assert_eq!(s.udp.dropped(DropReason::RateLimited), 0);
    assert_eq!(s.udp.truncated(), 1);
    assert_eq!(s.udp.slipped(), 1);
    assert_eq!(s.udp.malformed(), 2);
    assert_eq!(
        s.udp.queries_by_qtype(QTYPE_NONE),
        2,
        "short message and NOTIFY"
    );
    assert_eq!(s.udp.queries_by_qtype(28), 2);
    assert_eq!(s.udp.queries_by_opcode(4), 1);
}

#[test]
fn dropped_tcp_recorders_hand_their_blocks_on_and_every_count_stays() {
    let reg = StatsRegistry::new(&settings(true));
    let resp = response(1, 3, false, false);
    let mut kept = reg.recorder(Via::Tcp);
    kept.record(query(0, 1), Some(resp), Fate::Answered, None);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let reg = Arc::clone(&reg);
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut rec = reg.recorder(Via::Tcp);
                    for _ in 0..10 {
                        rec.record(query(0, 1), Some(resp), Fate::Answered, None);
                    }
                    let seen = reg.snapshot().tcp.queries_by_qtype(1);
                    assert!(seen >= 10);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = reg.snapshot();
    assert_eq!(s.tcp.queries_by_qtype(1), 1 + 4 * 50 * 10);
    assert_eq!(s.tcp.responses_by_rcode(3), 1 + 4 * 50 * 10);
    assert_eq!(s.udp.queries_by_qtype(1), 0);
    drop(kept);
    assert_eq!(reg.snapshot(), s, "giving a block back changes no sum");
    // No more blocks than recorders were ever alive at once (the kept one
    // and the four threads'), every one of them spare now.
    let blocks = reg.lock();
    assert!(blocks.all.len() <= 5, "{} blocks", blocks.all.len());
    assert_eq!(blocks.spare[Via::Tcp.index()].len(), blocks.all.len());
    drop(blocks);
    // The next recorder takes one back and counts on from there.
    let mut again = reg.recorder(Via::Tcp);
    again.record(query(0, 1), Some(resp), Fate::Answered, None);
    assert_eq!(reg.snapshot().tcp.queries_by_qtype(1), 2 + 4 * 50 * 10);
    assert!(reg.lock().all.len() <= 5);
}

#[test]
fn disabled_statistics_record_nothing() {
    let reg = StatsRegistry::new(&settings(false));
    let mut rec = reg.recorder(Via::Udp);
    for _ in 0..200 {
        assert!(rec.start().is_none());
        rec.record(
            query(0, 1),
            Some(response(1, 0, false, false)),
            Fate::Answered,
            None,
        );
    }
    assert_eq!(reg.snapshot(), Snapshot::default());
    assert!(reg.lock().all.is_empty());
}

#[test]
fn one_query_in_sample_interval_is_timed_into_a_bucket() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Udp);
    let timed = (0..LATENCY_SAMPLE_EVERY * 2)
        .filter(|_| rec.start().is_some())
        .count();
    assert_eq!(timed, 2);
    let started = Instant::now() - Duration::from_micros(3);
    rec.record(
        query(0, 1),
        None,
        Fate::Dropped(DropReason::Acl),
        Some(started),
    );
    let s = reg.snapshot();
    let in_buckets: u64 = (0..=LATENCY_BOUNDS_NS.len())
        .map(|i| s.udp.latency_bucket(i))
        .sum();
    assert_eq!(in_buckets, 1);
    assert_eq!(s.udp.latency_bucket(0), 0, "3 µs is above the 1 µs bound");
    assert!(s.udp.latency_sum_ns() >= 3_000);
    let fams = registry_families(&s);
    let h = fams
        .iter()
        .find(|f| f.name == "bulwark_query_duration_seconds")
        .unwrap();
    let Value::Histogram { buckets, count, .. } = &h.samples[0].value else {
        panic!("not a histogram");
    };
    assert_eq!(*count, 1);
    assert_eq!(buckets.first().unwrap().0, 1e-6);
    assert_eq!(buckets.last().unwrap().0, 0.01);
}

#[test]
fn size_buckets_are_powers_of_two() {
    assert_eq!(size_bucket(1), 0);
    assert_eq!(size_bucket(32), 0);
    assert_eq!(size_bucket(33), 1);
    assert_eq!(size_bucket(512), 4);
    assert_eq!(size_bound(4), 512);
    assert_eq!(size_bucket(65535), SIZE_BUCKETS - 1);
    assert_eq!(size_bound(SIZE_BUCKETS - 1), 65536);
}

#[test]
fn qtype_labels_use_mnemonics() {
    assert_eq!(qtype_label(1), "A");
    assert_eq!(qtype_label(28), "AAAA");
    assert_eq!(qtype_label(65), "HTTPS");
    assert_eq!(qtype_label(500), "TYPE500");
    assert_eq!(qtype_label(QTYPE_OTHER), "other");
    assert_eq!(qtype_label(QTYPE_NONE), "none");
}

#[test]
fn large_qtypes_share_the_other_slot() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Udp);
    rec.record(query(0, 32769), None, Fate::Dropped(DropReason::Acl), None);
    assert_eq!(reg.snapshot().udp.queries_by_qtype(QTYPE_OTHER), 1);
}

fn valid_name(s: &str, colons: bool) -> bool {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colons && c == ':'));
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':'))
}

#[test]
fn family_and_label_names_follow_prometheus_rules() {
    let reg = StatsRegistry::new(&settings(true));
    let mut rec = reg.recorder(Via::Tcp);
    rec.record(
        query(0, 1),
        Some(response(1, 0, true, false)),
        Fate::Answered,
        None,
    );
    for f in registry_families(&reg.snapshot()) {
        // [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, no colons for labels.
        assert!(valid_name(f.name, true), "{}", f.name);
        assert!(f.name.starts_with("bulwark_"), "{}", f.name);
        assert_eq!(
            f.kind == MetricKind::Counter,
            f.name.ends_with("_total"),
            "{}",
            f.name
        );
        for s in &f.samples {
            for (l, _) in &s.labels {
                assert!(valid_name(l, false) && !l.starts_with("__"), "{l}");
                assert_ne!(*l, "le", "reserved for histogram buckets");
            }
        }
    }
}

/// The per-query cost, printed, never asserted: run with
/// `cargo test --release -p bulwark per_query_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn per_query_cost() {
    const N: u32 = 10_000_000;
    let q = query(0, 1);
    for (enabled, edns) in [(false, true), (true, false), (true, true)] {
        let r = response(1, 0, false, edns);
        let reg = StatsRegistry::new(&settings(enabled));
        let mut rec = reg.recorder(Via::Udp);
        let t = Instant::now();
        for _ in 0..N {
            let started = rec.start();
            rec.record(
                std::hint::black_box(q),
                Some(std::hint::black_box(r)),
                Fate::Answered,
                started,
            );
        }
        let per = t.elapsed().as_nanos() as f64 / f64::from(N);
        println!("enabled={enabled} edns={edns}: {per:.2} ns per query");
    }
}
