//! The resolver engine fed arbitrary responses: whatever the servers it asks
//! send back (garbage, lies, referrals that go nowhere, answers to other
//! questions), it must not panic, must answer every client question in the
//! end, and must stay within its bounds (budgets, pending work, cache size).
//!
//! The input is a script: each exchange the engine starts takes the next
//! chunk (a length octet, then that many octets). An empty chunk is a
//! timeout; otherwise the chunk's first octet says whether to splice in the
//! query's ID and question (so that the response reaches the classifier
//! rather than being dropped as unrelated), and the rest is the response.
#![no_main]

use std::net::SocketAddr;
use std::sync::Arc;

use bulwark_proto::{Name, Rtype};
use bulwark_resolver::{
    Cache, ClientQuestion, ClientToken, ExchangeError, Limits, Randomness, Resolver, ResolverConfig,
};
use libfuzzer_sys::fuzz_target;

/// Deterministic "randomness": the fuzzer must be able to replay a crash.
struct Steps(u32);

impl Randomness for Steps {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0
    }
}

const QUESTIONS: [(&str, Rtype); 4] = [
    ("www.example.com.", Rtype::A),
    ("example.com.", Rtype::MX),
    ("a.b.c.d.example.net.", Rtype::AAAA),
    ("www.example.com.", Rtype::TXT),
];

/// The octets to answer `query` with, from `chunk`.
fn response(query: &[u8], chunk: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = chunk.split_first() else {
        return Vec::new();
    };
    if mode & 1 == 0 || rest.len() < 12 || query.len() < 12 {
        return rest.to_vec();
    }
    // The query's ID, the chunk's flags and counts (QDCOUNT 1), the query's
    // question, then the chunk's records.
    let qend = question_end(query).unwrap_or(query.len());
    let mut out = Vec::with_capacity(rest.len() + qend);
    out.extend_from_slice(&query[..2]);
    out.extend_from_slice(&rest[2..4]);
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&rest[6..12]);
    out.extend_from_slice(&query[12..qend]);
    out.extend_from_slice(&rest[12..]);
    out
}

/// Where the first question of a query we built ends (its name is not
/// compressed).
fn question_end(query: &[u8]) -> Option<usize> {
    let mut at = 12;
    loop {
        let len = usize::from(*query.get(at)?);
        at += 1 + len;
        if len == 0 {
            return Some(at + 4);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let config = ResolverConfig {
        root_hints: vec![SocketAddr::from(([10, 0, 0, 1], 53))],
        cache_bytes: 1 << 20,
        limits: Limits {
            max_pending: 64,
            ..Limits::default()
        },
        ..ResolverConfig::default()
    };
    let cache = Arc::new(Cache::new(&config));
    let mut r = Resolver::new(config.clone(), Arc::clone(&cache), Box::new(Steps(7)));
    let mut now = 1_700_000_000_000u64;
    let mut asked = 0usize;
    let mut answered = 0usize;
    for (i, (name, rtype)) in QUESTIONS.iter().enumerate() {
        let q = ClientQuestion {
            token: ClientToken(i as u64),
            // Two clients, so the per-client bound is crossed too.
            client: std::net::IpAddr::from([192, 0, 2, (i % 2) as u8]),
            qname: name.parse::<Name>().unwrap(),
            qtype: *rtype,
        };
        asked += 1;
        if r.handle_query(q, now).is_some() {
            answered += 1;
        }
    }
    let mut script = data;
    // Every step either uses a chunk of the script or lets the clock run to
    // the next deadline, so the loop ends.
    for _ in 0..10_000 {
        while r.poll_answer().is_some() {
            answered += 1;
        }
        let Some(t) = r.poll_transmit() else {
            match r.poll_timeout() {
                Some(at) => {
                    now = now.max(at);
                    r.handle_timeout(now);
                    continue;
                }
                None => break,
            }
        };
        now += 1;
        let (chunk, rest) = match script.split_first() {
            Some((&len, rest)) => {
                let len = usize::from(len).min(rest.len());
                rest.split_at(len)
            }
            None => (&[][..], &[][..]),
        };
        script = rest;
        let result = if chunk.is_empty() {
            Err(ExchangeError::Timeout)
        } else {
            Ok(response(&t.message, chunk))
        };
        r.handle_response(t.id, result, now);
        assert!(
            r.pending() <= 4 * 64,
            "pending work grew to {}",
            r.pending()
        );
    }
    while r.poll_answer().is_some() {
        answered += 1;
    }
    assert_eq!(answered, asked, "a client question was never answered");
    assert_eq!(r.pending(), 0, "work left behind");
    let stats = cache.stats();
    assert!(
        stats.bytes <= (1 << 20) + (64 << 10),
        "cache grew to {} octets",
        stats.bytes
    );
});
