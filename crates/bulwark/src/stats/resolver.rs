//! The resolver's metric families: the cache (hits, misses, size,
//! evictions), where answers came from, the queries sent to servers and
//! their round trips, validation verdicts, and SERVFAIL by reason (bogus
//! data by the DNSSEC error). docs/metrics.md lists them.

use crate::stats::{Family, MetricKind, Sample, Value};

/// The resolver's figures at one scrape, gathered by the server.
#[derive(Debug, Clone, Default)]
pub struct ResolverFigures {
    pub cache_entries: u64,
    pub cache_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_inserts: u64,
    pub cache_evictions: u64,
    /// Answered by a worker straight from the cache.
    pub answered_from_cache: u64,
    /// Handed to the resolving task.
    pub resolutions: u64,
    /// Answered SERVFAIL at once because the resolving task's queue was full.
    pub queue_full: u64,
    pub upstream_queries: u64,
    pub upstream_timeouts: u64,
    pub upstream_errors: u64,
    pub upstream_answered: u64,
    /// Sum of the answered exchanges' round trips, in microseconds.
    pub upstream_rtt_us: u64,
    /// SERVFAIL answers by reason (a label value each).
    pub servfail: Vec<(&'static str, u64)>,
    /// Resolved answers not sent: the client had waited too long.
    pub discarded: u64,
    /// The engine's counters.
    pub engine: bulwark_resolver::engine::ResolverStats,
}

fn family(name: &'static str, help: &'static str, kind: MetricKind, v: u64) -> Family {
    Family {
        name,
        help,
        kind,
        samples: vec![Sample {
            labels: Vec::new(),
            value: Value::Int(v),
        }],
    }
}

/// The families, in a stable order.
pub fn families(f: &ResolverFigures) -> Vec<Family> {
    use MetricKind::{Counter, Gauge};
    let mut out = vec![
        family(
            "bulwark_resolver_cache_entries",
            "RRsets and negative answers in the resolver's cache.",
            Gauge,
            f.cache_entries,
        ),
        family(
            "bulwark_resolver_cache_bytes",
            "Octets the resolver's cache holds, as it counts them against cache_size.",
            Gauge,
            f.cache_bytes,
        ),
        family(
            "bulwark_resolver_cache_hits_total",
            "Cache lookups that found an answer.",
            Counter,
            f.cache_hits,
        ),
        family(
            "bulwark_resolver_cache_misses_total",
            "Cache lookups that found none.",
            Counter,
            f.cache_misses,
        ),
        family(
            "bulwark_resolver_cache_inserts_total",
            "Entries stored in the cache.",
            Counter,
            f.cache_inserts,
        ),
        family(
            "bulwark_resolver_cache_evictions_total",
            "Entries evicted to keep the cache within cache_size.",
            Counter,
            f.cache_evictions,
        ),
        family(
            "bulwark_resolver_answers_from_cache_total",
            "Recursive questions answered by a worker from the cache.",
            Counter,
            f.answered_from_cache,
        ),
        family(
            "bulwark_resolver_resolutions_total",
            "Recursive questions handed to the resolving task.",
            Counter,
            f.resolutions,
        ),
        family(
            "bulwark_resolver_queue_full_total",
            "Recursive questions answered SERVFAIL at once: too many being resolved.",
            Counter,
            f.queue_full,
        ),
        family(
            "bulwark_resolver_upstream_queries_total",
            "Queries sent to authoritative servers and forwarders.",
            Counter,
            f.upstream_queries,
        ),
        family(
            "bulwark_resolver_upstream_timeouts_total",
            "Queries to servers that timed out.",
            Counter,
            f.upstream_timeouts,
        ),
        family(
            "bulwark_resolver_upstream_errors_total",
            "Queries to servers that failed otherwise (unreachable, refused connection).",
            Counter,
            f.upstream_errors,
        ),
        family(
            "bulwark_resolver_upstream_answered_total",
            "Queries to servers that brought a response.",
            Counter,
            f.upstream_answered,
        ),
    ];
    let e = &f.engine;
    for (name, help, v) in [
        (
            "bulwark_resolver_coalesced_total",
            "Client questions that joined a resolution of the same question already under way.",
            e.coalesced,
        ),
        (
            "bulwark_resolver_prefetches_total",
            "Cache entries refreshed before expiry because a client asked for them.",
            e.prefetches,
        ),
        (
            "bulwark_resolver_aggressive_answers_total",
            "NXDOMAIN, NODATA and wildcard answers made from validated NSEC records (RFC 8198).",
            e.aggressive_answers,
        ),
        (
            "bulwark_resolver_signature_checks_total",
            "DNSSEC signatures checked while validating (one cryptographic verification each).",
            e.signature_checks,
        ),
        (
            "bulwark_resolver_stale_answers_total",
            "Answers served from expired data (RFC 8767 serve-stale).",
            e.stale_served,
        ),
        (
            "bulwark_resolver_budget_exhausted_total",
            "Resolutions stopped by a per-question budget (queries, referrals, name server lookups).",
            e.budget_exhausted,
        ),
        (
            "bulwark_resolver_client_limited_total",
            "Questions answered SERVFAIL because their client had too many waiting.",
            e.client_limited,
        ),
        (
            "bulwark_resolver_forged_responses_total",
            "Responses from servers dropped: wrong ID, QR clear, or a client cookie not ours.",
            e.forged,
        ),
        (
            "bulwark_resolver_discarded_answers_total",
            "Resolved answers not sent because the client had waited too long.",
            f.discarded,
        ),
    ] {
        out.push(family(name, help, Counter, v));
    }
    out.push(Family {
        name: "bulwark_resolver_upstream_rtt_seconds_total",
        help: "Sum of the round trips of the queries that brought a response \
               (divide by bulwark_resolver_upstream_answered_total for the mean).",
        kind: Counter,
        samples: vec![Sample {
            labels: Vec::new(),
            value: Value::Float(f.upstream_rtt_us as f64 / 1e6),
        }],
    });
    out.push(Family {
        name: "bulwark_resolver_validations_total",
        help: "Resolutions DNSSEC validation judged, by verdict (RFC 4033 §5): secure, \
               insecure, bogus, or indeterminate (the chain could not be walked).",
        kind: Counter,
        samples: [
            ("secure", e.secure),
            ("insecure", e.insecure),
            ("bogus", e.bogus),
            ("indeterminate", e.indeterminate),
        ]
        .iter()
        .map(|(verdict, v)| Sample {
            labels: vec![("verdict", (*verdict).to_string())],
            value: Value::Int(*v),
        })
        .collect(),
    });
    out.push(Family {
        name: "bulwark_resolver_servfail_total",
        help: "SERVFAIL answers to clients, by reason (the Extended DNS Error they carry).",
        kind: Counter,
        samples: f
            .servfail
            .iter()
            .map(|(reason, v)| Sample {
                labels: vec![("reason", (*reason).to_string())],
                value: Value::Int(*v),
            })
            .collect(),
    });
    out
}
