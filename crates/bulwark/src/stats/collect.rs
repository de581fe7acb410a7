//! Gathers every statistic of the running server into metric families, named
//! after Prometheus' conventions: `bulwark_` prefix, `_total` on counters, base
//! units (seconds, bytes). `ctl stats` and the Prometheus endpoint both render
//! this list. The list of metrics is in docs/metrics.md.

use std::sync::atomic::{AtomicU64, Ordering};

use bulwark_proto::{Opcode, Rcode, Rtype};

use bulwark_guard::RrlStats;
use bulwark_net::{TcpStats, UdpStats};

use crate::diagnostics::EventCount;
use crate::stats::{
    size_bound, DropReason, Family, MetricKind, Sample, Snapshot, Totals, Value, LATENCY_BOUNDS_NS,
    OPCODES, QTYPE_DIRECT, QTYPE_NONE, QTYPE_OTHER, RCODE_DIRECT, SIZE_BUCKETS,
};
use crate::via::Via;

const TRANSPORTS: [(Via, &str); 5] = [
    (Via::Udp, "udp"),
    (Via::Tcp, "tcp"),
    (Via::Tls, "tls"),
    (Via::Https, "https"),
    (Via::Quic, "quic"),
];
const NANOS_PER_SECOND: f64 = 1e9;

/// What the statistics are read from: every part of the running server that
/// counts something, gathered by the server for each scrape.
#[derive(Debug)]
pub struct Sources<'a> {
    pub registry: &'a super::StatsRegistry,
    /// Zeros before the workers start.
    pub udp: UdpStats,
    /// Each AF_XDP path; empty when none is configured.
    pub xdp: Vec<(bulwark_net::XdpInfo, bulwark_net::XdpStats)>,
    pub tcp: &'a TcpStats,
    /// `None` when no DNS over TLS listener is configured.
    pub tls: Option<&'a TcpStats>,
    /// `None` when no DNS over HTTPS listener is configured.
    pub https: Option<&'a TcpStats>,
    /// `None` when no DNS over QUIC listener is configured.
    pub quic: Option<&'a TcpStats>,
    pub events: Vec<EventCount>,
    /// `None` when rate limiting is off.
    pub rrl: Option<RrlStats>,
    /// Rotations of the server-cookie secret; `None` when cookies are off.
    pub cookie_rotations: Option<u64>,
    /// `None` when dnstap is off.
    pub dnstap: Option<crate::tap::TapCounters>,
    pub zones: &'a crate::zones::Zones,
    pub uptime: std::time::Duration,
    /// `None` when recursion is off.
    pub resolver: Option<super::resolver::ResolverFigures>,
}

/// Every metric family, in a stable order.
pub fn families(sources: &Sources<'_>) -> Vec<Family> {
    let mut out = Vec::new();
    if sources.registry.enabled() {
        out.extend(registry_families(&sources.registry.snapshot()));
    }
    out.extend(server_families(sources));
    if let Some(r) = &sources.resolver {
        out.extend(super::resolver::families(r));
    }
    out
}

fn counter(name: &'static str, help: &'static str, samples: Vec<Sample>) -> Family {
    Family {
        name,
        help,
        kind: MetricKind::Counter,
        samples,
    }
}

fn gauge(name: &'static str, help: &'static str, samples: Vec<Sample>) -> Family {
    Family {
        name,
        help,
        kind: MetricKind::Gauge,
        samples,
    }
}

fn int(labels: Vec<(&'static str, String)>, v: u64) -> Sample {
    Sample {
        labels,
        value: Value::Int(v),
    }
}

fn one(v: u64) -> Vec<Sample> {
    vec![int(Vec::new(), v)]
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// The label value of a qtype slot.
pub fn qtype_label(slot: usize) -> String {
    match slot {
        QTYPE_OTHER => "other".to_string(),
        QTYPE_NONE => "none".to_string(),
        v => u16::try_from(v).map_or_else(|_| "other".to_string(), |v| Rtype(v).to_string()),
    }
}

fn rcode_label(slot: usize) -> String {
    match u16::try_from(slot) {
        Ok(v) if slot < RCODE_DIRECT => Rcode::new(v).to_string(),
        _ => "other".to_string(),
    }
}

/// Cumulative histogram buckets from per-bucket counts; the last count is the
/// overflow beyond every bound.
fn histogram(bounds: &[f64], counts: impl Iterator<Item = u64>, sum: f64) -> Value {
    let mut running = 0u64;
    let mut buckets = Vec::with_capacity(bounds.len());
    let mut counts = counts;
    for b in bounds {
        running = running.wrapping_add(counts.next().unwrap_or(0));
        buckets.push((*b, running));
    }
    let count = counts.fold(running, |acc, c| acc.wrapping_add(c));
    Value::Histogram {
        buckets,
        sum,
        count,
    }
}

/// The families fed by the per-worker counters.
pub fn registry_families(s: &Snapshot) -> Vec<Family> {
    let per_transport = |f: &dyn Fn(&Totals) -> u64| -> Vec<Sample> {
        TRANSPORTS
            .iter()
            .map(|(t, name)| int(vec![("transport", name.to_string())], f(s.via(*t))))
            .collect()
    };
    let mut queries = Vec::new();
    let mut responses = Vec::new();
    let mut sizes = Vec::new();
    for (t, name) in TRANSPORTS {
        let totals = s.via(t);
        for slot in 0..QTYPE_DIRECT.saturating_add(2) {
            let n = totals.queries_by_qtype(slot);
            if n > 0 {
                queries.push(int(
                    vec![
                        ("transport", name.to_string()),
                        ("opcode", "QUERY".to_string()),
                        ("qtype", qtype_label(slot)),
                    ],
                    n,
                ));
            }
        }
        for op in 1..OPCODES {
            let n = totals.queries_by_opcode(op);
            if n > 0 {
                let opcode = u8::try_from(op).map(Opcode::new).unwrap_or(Opcode::QUERY);
                queries.push(int(
                    vec![
                        ("transport", name.to_string()),
                        ("opcode", opcode.to_string()),
                        ("qtype", qtype_label(QTYPE_NONE)),
                    ],
                    n,
                ));
            }
        }
        for slot in 0..=RCODE_DIRECT {
            let n = totals.responses_by_rcode(slot);
            if n > 0 {
                responses.push(int(
                    vec![
                        ("transport", name.to_string()),
                        ("rcode", rcode_label(slot)),
                    ],
                    n,
                ));
            }
        }
        let bounds: Vec<f64> = (0..SIZE_BUCKETS).map(|i| size_bound(i) as f64).collect();
        sizes.push(Sample {
            labels: vec![("transport", name.to_string())],
            value: histogram(
                &bounds,
                (0..SIZE_BUCKETS).map(|i| totals.size_bucket(i)),
                totals.size_sum() as f64,
            ),
        });
    }
    let latency_bounds: Vec<f64> = LATENCY_BOUNDS_NS
        .iter()
        .map(|ns| *ns as f64 / NANOS_PER_SECOND)
        .collect();
    let latency: Vec<Sample> = TRANSPORTS
        .iter()
        .map(|(t, name)| {
            let totals = s.via(*t);
            Sample {
                labels: vec![("transport", name.to_string())],
                value: histogram(
                    &latency_bounds,
                    (0..=LATENCY_BOUNDS_NS.len()).map(|i| totals.latency_bucket(i)),
                    totals.latency_sum_ns() as f64 / NANOS_PER_SECOND,
                ),
            }
        })
        .collect();
    let sum = |f: &dyn Fn(&Totals) -> u64| {
        [&s.udp, &s.tcp, &s.tls, &s.https, &s.quic]
            .iter()
            .fold(0u64, |total, t| total.wrapping_add(f(t)))
    };
    vec![
        counter(
            "bulwark_queries_total",
            "Queries received, by transport, opcode and query type (qtype is \"none\" for other opcodes and queries without a readable question).",
            queries,
        ),
        counter(
            "bulwark_responses_total",
            "Responses sent, by transport and response code (extended rcodes included).",
            responses,
        ),
        Family {
            name: "bulwark_response_size_bytes",
            help: "Size of the responses sent, in octets, by transport.",
            kind: MetricKind::Histogram,
            samples: sizes,
        },
        counter(
            "bulwark_truncated_total",
            "Responses sent with TC set, by transport.",
            per_transport(&|t| t.truncated()),
        ),
        counter(
            "bulwark_dropped_total",
            "Queries that got no response, by reason.",
            DropReason::ALL
                .iter()
                .map(|r| int(vec![("reason", r.label().to_string())], sum(&|t| t.dropped(*r))))
                .collect(),
        ),
        counter(
            "bulwark_rrl_slipped_total",
            "Responses rate limiting let out truncated (TC) instead of dropping them.",
            one(sum(&|t| t.slipped())),
        ),
        counter(
            "bulwark_malformed_total",
            "Malformed queries: answered with FORMERR, or not answerable at all.",
            one(sum(&|t| t.malformed())),
        ),
        Family {
            name: "bulwark_query_duration_seconds",
            help: "Time to handle a query, from receipt to response ready, sampled on one query in 64.",
            kind: MetricKind::Histogram,
            samples: latency,
        },
    ]
}

/// The names and help of one stream transport's connection families.
struct ConnectionFamilies {
    accepted: (&'static str, &'static str),
    open: (&'static str, &'static str),
    closed: (&'static str, &'static str),
    queries: (&'static str, &'static str),
    /// Whether connections begin with a handshake that can fail (TLS).
    handshakes: bool,
}

const TCP_FAMILIES: ConnectionFamilies = ConnectionFamilies {
    accepted: (
        "bulwark_tcp_connections_accepted_total",
        "TCP connections accepted (including those closed at once for a connection limit).",
    ),
    open: ("bulwark_tcp_connections_open", "TCP connections open now."),
    closed: (
        "bulwark_tcp_connections_closed_total",
        "TCP connections closed, by reason.",
    ),
    queries: (
        "bulwark_tcp_queries_total",
        "Queries read from TCP connections.",
    ),
    handshakes: false,
};

const TLS_FAMILIES: ConnectionFamilies = ConnectionFamilies {
    accepted: (
        "bulwark_tls_connections_accepted_total",
        "DNS over TLS connections accepted (including those closed at once for a connection limit).",
    ),
    open: (
        "bulwark_tls_connections_open",
        "DNS over TLS connections open now (handshakes included).",
    ),
    closed: (
        "bulwark_tls_connections_closed_total",
        "DNS over TLS connections closed, by reason (handshake_timeout and handshake_failed before any query).",
    ),
    queries: (
        "bulwark_tls_queries_total",
        "Queries read from DNS over TLS connections.",
    ),
    handshakes: true,
};

const HTTPS_FAMILIES: ConnectionFamilies = ConnectionFamilies {
    accepted: (
        "bulwark_https_connections_accepted_total",
        "DNS over HTTPS connections accepted, HTTP/3 included (including those closed at once for a connection limit).",
    ),
    open: (
        "bulwark_https_connections_open",
        "DNS over HTTPS connections open now, HTTP/3 included (handshakes included).",
    ),
    closed: (
        "bulwark_https_connections_closed_total",
        "DNS over HTTPS connections closed, by reason (protocol_error: HTTP/3 only).",
    ),
    queries: (
        "bulwark_https_queries_total",
        "DNS queries read from DNS over HTTPS requests.",
    ),
    handshakes: true,
};

const QUIC_FAMILIES: ConnectionFamilies = ConnectionFamilies {
    accepted: (
        "bulwark_quic_connections_accepted_total",
        "DNS over QUIC connections accepted (including those refused at once for a connection limit).",
    ),
    open: (
        "bulwark_quic_connections_open",
        "DNS over QUIC connections open now (handshakes included).",
    ),
    closed: (
        "bulwark_quic_connections_closed_total",
        "DNS over QUIC connections closed, by reason (protocol_error: the client broke RFC 9250's framing).",
    ),
    queries: (
        "bulwark_quic_queries_total",
        "Queries read from DNS over QUIC streams.",
    ),
    handshakes: true,
};

/// Accepted, open and closed-by-reason connections, and queries, of one
/// stream transport. TCP has no handshake, so those reasons are TLS's only.
fn connection_families(c: &TcpStats, names: &ConnectionFamilies) -> Vec<Family> {
    let accepted = load(&c.accepted);
    let mut closes = vec![
        ("rejected_too_many", load(&c.too_many_total)),
        ("rejected_too_many_for_client", load(&c.too_many_for_client)),
        ("idle", load(&c.idle)),
        ("message_timeout", load(&c.message_timeout)),
        ("query_limit", load(&c.query_limit)),
        ("bad_length", load(&c.bad_length)),
        ("peer_closed", load(&c.peer_closed)),
        ("write_timeout", load(&c.write_timeout)),
        ("io_error", load(&c.io_error)),
        ("shutdown", load(&c.shutdown)),
        ("evicted", load(&c.evicted)),
    ];
    if names.handshakes {
        closes.push(("handshake_timeout", load(&c.handshake_timeout)));
        closes.push(("handshake_failed", load(&c.handshake_failed)));
        closes.push(("protocol_error", load(&c.protocol_error)));
    }
    let closed = closes.iter().fold(0u64, |a, (_, n)| a.wrapping_add(*n));
    vec![
        counter(names.accepted.0, names.accepted.1, one(accepted)),
        gauge(
            names.open.0,
            names.open.1,
            one(accepted.saturating_sub(closed)),
        ),
        counter(
            names.closed.0,
            names.closed.1,
            closes
                .iter()
                .map(|(r, n)| int(vec![("reason", r.to_string())], *n))
                .collect(),
        ),
        counter(names.queries.0, names.queries.1, one(load(&c.queries))),
    ]
}

/// The AF_XDP paths' counts, by interface.
fn xdp_families(paths: &[(bulwark_net::XdpInfo, bulwark_net::XdpStats)]) -> Vec<Family> {
    type Figure = fn(&bulwark_net::XdpStats) -> u64;
    const BY_INTERFACE: [(&str, &str, Figure); 5] = [
        (
            "bulwark_xdp_received_total",
            "UDP datagrams received through AF_XDP.",
            |s| s.received,
        ),
        (
            "bulwark_xdp_responded_total",
            "Responses sent through AF_XDP.",
            |s| s.responded,
        ),
        (
            "bulwark_xdp_dropped_total",
            "Queries received through AF_XDP and not answered (ACL, rate limiting, unanswerable).",
            |s| s.dropped,
        ),
        (
            "bulwark_xdp_truncated_total",
            "AF_XDP responses cut to the question with TC because they did not fit the MTU.",
            |s| s.truncated,
        ),
        (
            "bulwark_xdp_send_errors_total",
            "AF_XDP responses lost for want of room in the TX ring or of a frame.",
            |s| s.send_errors,
        ),
    ];
    let mut out: Vec<Family> = BY_INTERFACE
        .iter()
        .map(|(name, help, figure)| {
            let samples = paths
                .iter()
                .map(|(i, s)| int(vec![("interface", i.interface.clone())], figure(s)))
                .collect();
            counter(name, help, samples)
        })
        .collect();
    out.push(counter(
        "bulwark_xdp_kernel_dropped_total",
        "Frames for bulwark the kernel dropped before a worker saw them, by reason.",
        paths
            .iter()
            .flat_map(|(i, s)| {
                [
                    ("rx_ring_full", s.kernel.rx_ring_full),
                    ("fill_ring_empty", s.kernel.rx_fill_ring_empty),
                    ("invalid", s.kernel.rx_invalid),
                    ("other", s.kernel.rx_dropped),
                ]
                .map(|(reason, n)| {
                    int(
                        vec![
                            ("interface", i.interface.clone()),
                            ("reason", reason.to_string()),
                        ],
                        n,
                    )
                })
            })
            .collect(),
    ));
    out
}

/// The families of the other sources, present whether statistics are on or not.
fn server_families(sources: &Sources<'_>) -> Vec<Family> {
    let mut out = Vec::new();
    let udp = sources.udp;
    out.push(counter(
        "bulwark_udp_received_total",
        "UDP datagrams received.",
        one(udp.received),
    ));
    out.push(counter(
        "bulwark_udp_responded_total",
        "UDP responses sent.",
        one(udp.responded),
    ));
    out.push(counter(
        "bulwark_udp_truncated_total",
        "UDP responses too big for the link unfragmented, sent again cut to the question with TC.",
        one(udp.truncated),
    ));
    out.push(counter(
        "bulwark_udp_send_errors_total",
        "UDP responses the kernel refused to send.",
        one(udp.send_errors),
    ));
    if !sources.xdp.is_empty() {
        out.extend(xdp_families(&sources.xdp));
    }
    out.extend(connection_families(sources.tcp, &TCP_FAMILIES));
    if let Some(tls) = sources.tls {
        out.extend(connection_families(tls, &TLS_FAMILIES));
    }
    if let Some(https) = sources.https {
        out.extend(connection_families(https, &HTTPS_FAMILIES));
    }
    if let Some(quic) = sources.quic {
        out.extend(connection_families(quic, &QUIC_FAMILIES));
    }
    let events = &sources.events;
    out.push(counter(
        "bulwark_events_total",
        "Per-packet events (bad TSIG, refused transfer, NOTIFY or UPDATE, malformed message, ACL refusal, rejected cookie), every one counted whether logged or not.",
        events
            .iter()
            .map(|c| int(vec![("kind", c.event.name().to_string())], c.events))
            .collect(),
    ));
    out.push(counter(
        "bulwark_events_unlogged_total",
        "Per-packet events whose log line was left out by the per-kind limit of a few lines a second.",
        events
            .iter()
            .map(|c| int(vec![("kind", c.event.name().to_string())], c.suppressed))
            .collect(),
    ));
    if let Some(r) = sources.rrl {
        out.push(counter(
            "bulwark_rrl_responses_total",
            "Responses seen by response rate limiting, by verdict.",
            [("pass", r.passed), ("drop", r.dropped), ("slip", r.slipped)]
                .iter()
                .map(|(v, n)| int(vec![("verdict", v.to_string())], *n))
                .collect(),
        ));
    }
    if let Some(rotations) = sources.cookie_rotations {
        out.push(counter(
            "bulwark_cookie_secret_rotations_total",
            "Rotations of the server-cookie secret.",
            one(rotations),
        ));
    }
    if let Some(t) = sources.dnstap {
        out.push(counter(
            "bulwark_dnstap_frames_sent_total",
            "dnstap frames written.",
            one(t.sent),
        ));
        out.push(counter(
            "bulwark_dnstap_frames_dropped_total",
            "dnstap frames dropped because the queue was full or the collector away.",
            one(t.dropped),
        ));
        out.push(counter(
            "bulwark_dnstap_reconnects_total",
            "Reconnections to the dnstap collector.",
            one(t.reconnects),
        ));
    }
    let signing = &crate::zone_signer::COUNTERS;
    for (name, help, value) in [
        (
            "bulwark_dnssec_zones_signed_total",
            "Signing passes that completed (loads, reloads and re-signing).",
            &signing.zones_signed,
        ),
        (
            "bulwark_dnssec_signing_failures_total",
            "Signing passes that failed; the zone kept its previous copy.",
            &signing.signing_failures,
        ),
        (
            "bulwark_dnssec_signatures_total",
            "RRSIG records made.",
            &signing.signatures_made,
        ),
        (
            "bulwark_dnssec_keys_generated_total",
            "DNSSEC keys generated by the server.",
            &signing.keys_generated,
        ),
        (
            "bulwark_dnssec_key_events_total",
            "DNSSEC key events: keys made, key timing changed, a new DS seen at the parent.",
            &signing.key_events,
        ),
    ] {
        out.push(counter(
            name,
            help,
            one(value.load(std::sync::atomic::Ordering::Relaxed)),
        ));
    }
    let r = &crate::replication::counters::COUNTERS;
    let kinds = |axfr: &AtomicU64, ixfr: &AtomicU64| {
        vec![
            int(vec![("kind", "axfr".to_string())], load(axfr)),
            int(vec![("kind", "ixfr".to_string())], load(ixfr)),
        ]
    };
    out.push(counter(
        "bulwark_transfers_out_total",
        "Zone transfers sent to secondaries, by kind (an IXFR the journal could not serve counts as AXFR).",
        kinds(&r.axfr_out, &r.ixfr_out),
    ));
    out.push(counter(
        "bulwark_transfers_refused_total",
        "Transfer requests refused by ACL or TSIG key.",
        one(load(&r.transfers_refused)),
    ));
    out.push(counter(
        "bulwark_transfers_in_total",
        "Zone transfers received from primaries, by kind.",
        kinds(&r.axfr_in, &r.ixfr_in),
    ));
    out.push(counter(
        "bulwark_refresh_failures_total",
        "Refreshes of a secondary zone from one primary that failed.",
        one(load(&r.refresh_failures)),
    ));
    out.push(counter(
        "bulwark_notify_received_total",
        "NOTIFY messages accepted.",
        one(load(&r.notify_received)),
    ));
    out.push(counter(
        "bulwark_notify_refused_total",
        "NOTIFY messages refused (not a secondary zone here, or not from an allowed sender).",
        one(load(&r.notify_refused)),
    ));
    out.push(counter(
        "bulwark_notify_sent_total",
        "NOTIFY messages sent, by outcome: acknowledged, or never answered after every retry.",
        vec![
            int(
                vec![("result", "acknowledged".to_string())],
                load(&r.notify_acknowledged),
            ),
            int(
                vec![("result", "unanswered".to_string())],
                load(&r.notify_unanswered),
            ),
        ],
    ));
    out.push(counter(
        "bulwark_updates_total",
        "Dynamic updates, by result: applied, refused (ACL, key, no storage), failed (prerequisites, errors).",
        vec![
            int(vec![("result", "applied".to_string())], load(&r.updates_applied)),
            int(vec![("result", "refused".to_string())], load(&r.updates_refused)),
            int(vec![("result", "failed".to_string())], load(&r.updates_failed)),
        ],
    ));
    let timers = sources.zones.secondary_expiries();
    out.push(gauge(
        "bulwark_zone_expire_timestamp_seconds",
        "Unix time each secondary zone's copy expires unless refreshed (RFC 1034 §4.3.5).",
        timers
            .iter()
            .map(|(apex, at)| int(vec![("zone", apex.to_string())], *at))
            .collect(),
    ));
    let expiries = sources.zones.signature_expiries();
    out.push(gauge(
        "bulwark_dnssec_signatures_expire_timestamp_seconds",
        "Unix time the earliest signature of each signed zone expires.",
        expiries
            .iter()
            .map(|(apex, expires)| int(vec![("zone", apex.to_string())], *expires))
            .collect(),
    ));
    let zones = sources.zones.summaries();
    out.push(gauge(
        "bulwark_zones",
        "Zones loaded.",
        one(u64::try_from(zones.len()).unwrap_or(u64::MAX)),
    ));
    out.push(gauge(
        "bulwark_zone_serial",
        "SOA serial of each loaded zone.",
        zones
            .iter()
            .filter_map(|(apex, serial, _)| {
                Some(int(vec![("zone", apex.to_string())], u64::from((*serial)?)))
            })
            .collect(),
    ));
    out.push(Family {
        name: "bulwark_uptime_seconds",
        help: "Seconds since the server started.",
        kind: MetricKind::Gauge,
        samples: vec![Sample {
            labels: Vec::new(),
            value: Value::Float(sources.uptime.as_secs_f64()),
        }],
    });
    out.push(gauge(
        "bulwark_build_info",
        "Always 1; the version is in the label.",
        vec![int(
            vec![("version", env!("CARGO_PKG_VERSION").to_string())],
            1,
        )],
    ));
    out
}
