//! Differential test: the same zones served by knotd and by bulwark, the
//! same 1,000+ queries sent to both, the answers compared.
//!
//! Compared: RCODE (with the EDNS extension), opcode, the flags QR AA TC RD
//! RA AD CD, whether an OPT record came back, the question as echoed (case
//! included), and the answer, authority and additional sections as
//! multisets of records (owner case-insensitive, TTL, class, type, rdata).
//! When both responses are truncated only the header is compared: what a
//! server keeps in a truncated response is its own choice (RFC 2181 §9).
//! Where bulwark differs on purpose the difference is listed in
//! `DELIBERATE_DIFFERENCES` with its reason.
//!
//! `BULWARK_DIFF_DUMP=FILE` writes every query with both answers to FILE;
//! `BULWARK_DIFF_SHOW=N` prints N differing queries instead of 20.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{Answer, EdnsSpec, QuerySpec, Transport};

/// One part of a response that is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// One side answered and the other did not (timeout or I/O error).
    Reachability,
    /// hickory parsed one response and not the other.
    Parse,
    Rcode,
    Opcode,
    /// A header flag, by name.
    Flag(&'static str),
    Opt,
    /// Section counts, compared only when hickory parsed neither response.
    Counts,
    /// The question as echoed, case included (RFC 1035 §4.1.2, RFC 4343 §4.1).
    Question,
    Answer,
    Authority,
    Additional,
}

/// A difference bulwark keeps on purpose.
struct Deliberate {
    /// The queries the entry covers.
    applies: fn(&QuerySpec) -> bool,
    /// The part of the response that differs.
    field: Field,
    /// Why, with the RFC section that allows it.
    reason: &'static str,
}

/// Deliberate differences from knotd. An entry is added only with a
/// written reason; an entry that no longer matches anything should go.
const DELIBERATE_DIFFERENCES: &[Deliberate] = &[
    Deliberate {
        applies: |q| q.cd,
        field: Field::Flag("CD"),
        reason: "RFC 4035 §3.1.6: a security-aware name server MUST copy the CD bit from \
                 the query into the response; knotd 3.2 leaves it clear (seen with these unsigned zones)",
    },
    Deliberate {
        applies: |q| q.opcode == OPCODE_UPDATE && q.qtype == u16::from(RecordType::SOA),
        field: Field::Rcode,
        reason: "an UPDATE for a zone served here that no allow_update ACL admits is REFUSED, \
                 as RFC 2136 §3.3 says (\"the requestor does not have permission\") and BIND \
                 answers; knotd answers NOTAUTH",
    },
    Deliberate {
        applies: |q| !IMPLEMENTED_OPCODES.contains(&q.opcode),
        field: Field::Question,
        reason: "an opcode the server does not implement gets a header-only NOTIMP (RFC 6895 \
                 §2.2: nothing else in the message has a known meaning), as BIND answers and \
                 ISC's opcodeflg compliance test asks; knotd echoes the question",
    },
    Deliberate {
        applies: |q| !IMPLEMENTED_OPCODES.contains(&q.opcode),
        field: Field::Counts,
        reason: "the same header-only NOTIMP: no question and no OPT, where knotd echoes both",
    },
];

const OPCODE_UPDATE: u8 = 5;
/// QUERY, NOTIFY and UPDATE; any other opcode is NOTIMP.
const IMPLEMENTED_OPCODES: [u8; 3] = [0, 4, OPCODE_UPDATE];

/// hickory 0.24 has no name for DNAME (RFC 6672), type 39.
const DNAME_TYPE: RecordType = RecordType::Unknown(39);

const DIFF_ORIGIN: &str = "diff.test.";
const OTHER_ORIGIN: &str = "other.test.";

/// Per-attempt receive timeout; knotd on loopback answers in microseconds.
const QUERY_TIMEOUT: Duration = Duration::from_millis(800);
const QUERY_ATTEMPTS: u32 = 2;
/// A server that misses this many queries in a row is taken as dead.
const MAX_CONSECUTIVE_TIMEOUTS: u32 = 15;
/// How many mismatches a failure prints in full.
const MISMATCHES_SHOWN: usize = 20;

fn zones() -> Vec<(&'static str, PathBuf)> {
    vec![
        (DIFF_ORIGIN, support::data_dir().join("diff.zone")),
        (OTHER_ORIGIN, support::data_dir().join("other.zone")),
    ]
}

/// Names queried, relative to diff.test. unless they end in a dot.
const NAMES: &[&str] = &[
    "",
    "www",
    "ns1",
    "mail",
    "mixed",
    "multi",
    "_sip._tcp",
    "_tcp",
    "sip",
    "ptr",
    "info",
    "nonexistent",
    "a.b.nonexistent",
    // Empty non-terminals.
    "ent",
    "y.ent",
    "x.y.ent",
    "z.x.y.ent",
    // Wildcards.
    "wild",
    "foo.wild",
    "a.b.wild",
    "*.wild",
    "exists.wild",
    "sub.exists.wild",
    "y.wild",
    "x.y.wild",
    "z.y.wild",
    "ent3",
    "foo.ent3",
    "foo.wc",
    "foo.wc2",
    // CNAMEs.
    "c1",
    "c2",
    "c3",
    "cext",
    "cother",
    "cnx",
    "cloop1",
    "cdn",
    // DNAMEs.
    "dn-in",
    "host.dn-in",
    "nothere.dn-in",
    "a.host.dn-in",
    "dn-out",
    "www.dn-out",
    "deep.in.here.dn-out",
    "missing.dn-out",
    "inside",
    "host.inside",
    // Delegations.
    "sub",
    "ns1.sub",
    "deep.sub",
    "noglue",
    "x.noglue",
    "partial",
    "ns.partial",
    "big",
    // The other zone.
    "other.test.",
    "www.other.test.",
    "in.here.other.test.",
    "missing.other.test.",
    // Outside every zone.
    "example.com.",
    "test.",
    ".",
    "notdiff.test.",
    "xdiff.test.",
];

fn types() -> Vec<RecordType> {
    use RecordType::*;
    vec![
        A,
        AAAA,
        NS,
        SOA,
        MX,
        TXT,
        CNAME,
        DNAME_TYPE,
        DS,
        SRV,
        CAA,
        PTR,
        HINFO,
        ANY,
        DNSKEY,
        RRSIG,
        NSEC,
        // A type no zone holds, and one from the private-use range.
        NULL,
        Unknown(65280),
    ]
}

/// A small deterministic generator (xorshift64*), so every run sends the
/// same queries and a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability 1/n.
    fn one_in(&mut self, n: u64) -> bool {
        self.next() % n == 0
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else if name.is_empty() {
        DIFF_ORIGIN.to_string()
    } else {
        format!("{name}.{DIFF_ORIGIN}")
    }
}

/// Flips the case of letters at random (RFC 4343: case must not matter).
fn mix_case(name: &str, rng: &mut Rng) -> String {
    name.chars()
        .map(|c| {
            if rng.one_in(2) {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

/// A name of exactly 255 octets below dn-in.diff.test.: DNAME substitution
/// (dn-in → inside, one octet longer) cannot fit, so RFC 6672 §2.2 requires
/// YXDOMAIN.
fn overlong_dname_target() -> String {
    let l63 = "a".repeat(63);
    let l45 = "b".repeat(45);
    let name = format!("{l63}.{l63}.{l63}.{l45}.dn-in.{DIFF_ORIGIN}");
    // Wire length: one octet per label length plus the text without dots, plus the root.
    assert_eq!(name.len() + 1, 255);
    name
}

/// The full, deterministic query list with the transport for each.
fn generate_queries() -> Vec<(QuerySpec, Transport)> {
    let mut rng = Rng(0x0b01_3a2c_d15e_a5e5);
    let payloads: [Option<u16>; 6] = [
        None,
        Some(512),
        Some(1220),
        Some(1232),
        Some(1400),
        Some(4096),
    ];
    let mut out = Vec::new();
    let mut push = |spec: QuerySpec, rng: &mut Rng| {
        let transport = if rng.one_in(8) {
            Transport::Tcp
        } else {
            Transport::Udp
        };
        out.push((spec, transport));
    };

    // Every name with every type, each with randomly chosen case, flags and EDNS.
    for name in NAMES {
        for qtype in types() {
            let mut spec = QuerySpec::new(&absolute(name), qtype);
            if rng.one_in(3) {
                spec.qname = mix_case(&spec.qname, &mut rng);
            }
            spec.rd = rng.one_in(4);
            spec.cd = rng.one_in(8);
            spec.ad = rng.one_in(8);
            spec.edns = rng.pick(&payloads).map(|payload| EdnsSpec {
                payload,
                dnssec_ok: rng.one_in(2),
                version: 0,
            });
            push(spec, &mut rng);
        }
    }

    let probes = [
        (DIFF_ORIGIN.to_string(), RecordType::SOA),
        (absolute("www"), RecordType::A),
        (absolute("nonexistent"), RecordType::A),
        ("example.com.".to_string(), RecordType::A),
    ];
    // Opcodes other than QUERY: IQUERY (obsolete, RFC 3425), STATUS,
    // unassigned 3, NOTIFY and UPDATE (no ACL allows them), unassigned 6, 15.
    for opcode in [1u8, 2, 3, 4, 5, 6, 15] {
        for (name, qtype) in &probes {
            let mut spec = QuerySpec::new(name, *qtype);
            spec.opcode = opcode;
            push(spec, &mut rng);
        }
    }
    // Classes other than IN: CH, HS, NONE, ANY and an unassigned one.
    for qclass in [3u16, 4, 254, 255, 42] {
        for (name, qtype) in &probes {
            let mut spec = QuerySpec::new(name, *qtype);
            spec.qclass = qclass;
            push(spec, &mut rng);
        }
    }
    for (name, qtype) in [
        ("version.bind.", RecordType::TXT),
        ("id.server.", RecordType::TXT),
    ] {
        let mut spec = QuerySpec::new(name, qtype);
        spec.qclass = 3;
        push(spec, &mut rng);
    }
    // EDNS version 1 (RFC 6891 §6.1.3: BADVERS), tiny and huge payloads.
    for (name, qtype) in &probes {
        for (version, payload, dnssec_ok) in [
            (1u8, 1232u16, false),
            (1, 4096, true),
            (0, 100, false),
            (0, 65535, true),
        ] {
            let mut spec = QuerySpec::new(name, *qtype);
            spec.edns = Some(EdnsSpec {
                payload,
                dnssec_ok,
                version,
            });
            push(spec, &mut rng);
        }
    }
    // Truncation: the large RRset with and without room, over UDP and TCP.
    for payload in [None, Some(512), Some(1232), Some(4096)] {
        for transport in [Transport::Udp, Transport::Tcp] {
            let mut spec = QuerySpec::new(&absolute("big"), RecordType::TXT);
            spec.edns = payload.map(|payload| EdnsSpec {
                payload,
                dnssec_ok: false,
                version: 0,
            });
            out.push((spec.clone(), transport));
            spec.qtype = u16::from(RecordType::ANY);
            out.push((spec, transport));
        }
    }
    // DNAME substitution that overflows the name length.
    for qtype in [RecordType::A, RecordType::TXT, DNAME_TYPE] {
        out.push((
            QuerySpec::new(&overlong_dname_target(), qtype),
            Transport::Udp,
        ));
    }
    out
}

/// What one server did with one query.
type Outcome = Result<Answer, String>;

struct Mismatch {
    spec: QuerySpec,
    transport: Transport,
    field: Field,
    reference: Outcome,
    ours: Outcome,
}

/// The fields in which `ours` differs from `reference`.
fn differences(reference: &Outcome, ours: &Outcome) -> Vec<Field> {
    let (r, o) = match (reference, ours) {
        (Ok(r), Ok(o)) => (r, o),
        (Err(_), Err(_)) => return Vec::new(),
        _ => return vec![Field::Reachability],
    };
    let mut fields = Vec::new();
    if r.parse_error.is_some() != o.parse_error.is_some() {
        fields.push(Field::Parse);
    }
    if r.rcode != o.rcode {
        fields.push(Field::Rcode);
    }
    if r.opcode != o.opcode {
        fields.push(Field::Opcode);
    }
    for (name, a, b) in [
        ("QR", r.qr, o.qr),
        ("AA", r.aa, o.aa),
        ("TC", r.tc, o.tc),
        ("RD", r.rd, o.rd),
        ("RA", r.ra, o.ra),
        ("AD", r.ad, o.ad),
        ("CD", r.cd, o.cd),
    ] {
        if a != b {
            fields.push(Field::Flag(name));
        }
    }
    if r.has_opt != o.has_opt {
        fields.push(Field::Opt);
    }
    if r.parse_error.is_some() && o.parse_error.is_some() && r.counts != o.counts {
        fields.push(Field::Counts);
    }
    if r.question != o.question {
        fields.push(Field::Question);
    }
    if !(r.tc && o.tc) {
        if r.answer != o.answer {
            fields.push(Field::Answer);
        }
        if r.authority != o.authority {
            fields.push(Field::Authority);
        }
        if r.additional != o.additional {
            fields.push(Field::Additional);
        }
    }
    fields
}

/// The index of the table entry that covers this difference, if any.
fn deliberate(spec: &QuerySpec, field: Field) -> Option<usize> {
    DELIBERATE_DIFFERENCES
        .iter()
        .position(|d| d.field == field && (d.applies)(spec) && !d.reason.is_empty())
}

/// Entries of the table that excused no difference in a run: stale ones.
fn unused_entries(used: &[bool]) -> Vec<String> {
    DELIBERATE_DIFFERENCES
        .iter()
        .zip(used)
        .filter(|(_, used)| !**used)
        .map(|(d, _)| format!("{:?}: {}", d.field, d.reason))
        .collect()
}

/// Sends one query to one server, retrying a lost UDP datagram once.
fn ask(addr: SocketAddr, spec: &QuerySpec, transport: Transport) -> Outcome {
    support::query_retry(addr, spec, transport, QUERY_TIMEOUT, QUERY_ATTEMPTS)
        .map_err(|e| e.to_string())
}

/// Runs every query against both servers. Returns the undeclared
/// mismatches, how many queries the reference answered authoritatively, and
/// which entries of `DELIBERATE_DIFFERENCES` excused a difference.
fn compare_servers(
    reference: &mut support::Server,
    ours: &mut support::Server,
    queries: &[(QuerySpec, Transport)],
) -> (Vec<Mismatch>, usize, Vec<bool>) {
    let mut mismatches = Vec::new();
    let mut authoritative = 0;
    // Set BULWARK_DIFF_DUMP=/some/file to keep every query and both answers.
    let mut dump = std::env::var_os("BULWARK_DIFF_DUMP").map(|p| std::fs::File::create(p).unwrap());
    let mut consecutive_timeouts = [0u32; 2];
    let mut used = vec![false; DELIBERATE_DIFFERENCES.len()];
    for (spec, transport) in queries {
        let r = ask(reference.addr, spec, *transport);
        let o = ask(ours.addr, spec, *transport);
        for (i, (outcome, server)) in [(&r, &mut *reference), (&o, &mut *ours)]
            .into_iter()
            .enumerate()
        {
            consecutive_timeouts[i] = if outcome.is_err() {
                consecutive_timeouts[i] + 1
            } else {
                0
            };
            if consecutive_timeouts[i] >= MAX_CONSECUTIVE_TIMEOUTS
                || server.process.exited().is_some()
            {
                panic!(
                    "{} stopped answering (last query: {spec}); its log:\n{}",
                    server.process.name(),
                    server.process.log()
                );
            }
        }
        if let Some(file) = dump.as_mut() {
            use std::io::Write as _;
            writeln!(
                file,
                "query: {spec} over {transport:?}\n  {}: {}\n  {}: {}\n",
                reference.process.name(),
                render_outcome(&r),
                ours.process.name(),
                render_outcome(&o)
            )
            .unwrap();
        }
        if r.as_ref().is_ok_and(|a| a.aa) {
            authoritative += 1;
        }
        for field in differences(&r, &o) {
            if let Some(i) = deliberate(spec, field) {
                used[i] = true;
            } else {
                mismatches.push(Mismatch {
                    spec: spec.clone(),
                    transport: *transport,
                    field,
                    reference: r.clone(),
                    ours: o.clone(),
                });
            }
        }
    }
    (mismatches, authoritative, used)
}

fn render_outcome(outcome: &Outcome) -> String {
    match outcome {
        Ok(a) => a.to_string(),
        Err(e) => format!("no response: {e}"),
    }
}

/// A readable report: counts per field, then up to `MISMATCHES_SHOWN`
/// differing queries, one of each kind of difference first.
fn report(mismatches: &[Mismatch], reference_name: &str, total: usize) -> String {
    // Group the mismatches of one query together (they are adjacent).
    let mut groups: Vec<(&Mismatch, Vec<Field>)> = Vec::new();
    for m in mismatches {
        match groups.last_mut() {
            Some((first, fields)) if first.spec == m.spec && first.transport == m.transport => {
                fields.push(m.field)
            }
            _ => groups.push((m, vec![m.field])),
        }
    }
    let mut per_field: Vec<(String, usize)> = Vec::new();
    for m in mismatches {
        let key = format!("{:?}", m.field);
        match per_field.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => per_field.push((key, 1)),
        }
    }
    let mut out = format!(
        "{} differing queries out of {total}; differences per field: {}\n",
        groups.len(),
        per_field
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // One example of each distinct set of differing fields, then the rest in order.
    let mut order: Vec<usize> = Vec::new();
    for (i, (_, fields)) in groups.iter().enumerate() {
        if !order.iter().any(|&j| groups[j].1 == *fields) {
            order.push(i);
        }
    }
    for i in 0..groups.len() {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    // BULWARK_DIFF_SHOW=N shows more (or fewer) than the default.
    let limit = std::env::var("BULWARK_DIFF_SHOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MISMATCHES_SHOWN);
    for (shown, &i) in order.iter().take(limit).enumerate() {
        let (m, fields) = &groups[i];
        out.push_str(&format!(
            "\n#{} query: {} over {:?}\n   differs in: {:?}\n   {reference_name}: {}\n   ours: {}\n",
            shown + 1,
            m.spec,
            m.transport,
            fields,
            render_outcome(&m.reference),
            render_outcome(&m.ours)
        ));
    }
    out
}

fn zone_refs<'a>(zones: &'a [(&'static str, PathBuf)]) -> Vec<(&'static str, &'a Path)> {
    zones.iter().map(|(o, p)| (*o, p.as_path())).collect()
}

#[test]
fn query_list_is_large_and_deterministic() {
    let a = generate_queries();
    let b = generate_queries();
    assert!(a.len() >= 1000, "only {} queries", a.len());
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| x == y));
    // Every construct is reached: mixed case, TCP, DO, no EDNS, odd opcodes and classes.
    assert!(a
        .iter()
        .any(|(q, _)| q.qname.chars().any(|c| c.is_ascii_uppercase())));
    assert!(a.iter().any(|(_, t)| *t == Transport::Tcp));
    assert!(a.iter().any(|(q, _)| q.edns.is_some_and(|e| e.dnssec_ok)));
    assert!(a.iter().any(|(q, _)| q.edns.is_none()));
    assert!(a.iter().any(|(q, _)| q.opcode == 1));
    assert!(a.iter().any(|(q, _)| q.qclass == 3));
}

#[test]
fn deliberate_differences_all_give_a_reason() {
    for d in DELIBERATE_DIFFERENCES
        .iter()
        .chain(SIGNED_DELIBERATE_DIFFERENCES)
    {
        assert!(
            d.reason.len() > 20,
            "entry for {:?} lacks a real reason",
            d.field
        );
    }
}

/// The harness itself: two knotd instances serving the same files must show
/// no difference at all, or the comparison reports noise.
#[test]
fn harness_reports_no_difference_between_two_knotd_instances() {
    let zones = zones();
    let Some(mut first) = support::spawn_knotd(&zone_refs(&zones)) else {
        return;
    };
    let Some(mut second) = support::spawn_knotd(&zone_refs(&zones)) else {
        return;
    };
    let queries = generate_queries();
    let (mismatches, authoritative, _) = compare_servers(&mut first, &mut second, &queries);
    assert!(
        mismatches.is_empty(),
        "{}",
        report(&mismatches, "knotd", queries.len())
    );
    // The comparison is only meaningful if the zones were actually served.
    assert!(
        authoritative * 2 > queries.len(),
        "only {authoritative} of {} answers were authoritative",
        queries.len()
    );
}

/// The harness sees a real difference: one TTL changed in a copy of the zone.
#[test]
fn harness_reports_a_changed_ttl() {
    let zones = zones();
    let dir = support::temp_dir("diff-changed-");
    let changed = dir.path().join("diff.zone");
    let text = std::fs::read_to_string(&zones[0].1).unwrap();
    let text = text.replace("www       300   TXT", "www       301   TXT");
    std::fs::write(&changed, text).unwrap();
    let Some(mut first) = support::spawn_knotd(&zone_refs(&zones)) else {
        return;
    };
    let Some(mut second) = support::spawn_knotd(&[(DIFF_ORIGIN, changed.as_path())]) else {
        return;
    };
    let queries: Vec<_> = generate_queries()
        .into_iter()
        .filter(|(q, _)| {
            q.qname.eq_ignore_ascii_case("www.diff.test.") && q.qtype == u16::from(RecordType::TXT)
        })
        .collect();
    assert!(!queries.is_empty());
    let (mismatches, _, _) = compare_servers(&mut first, &mut second, &queries);
    assert!(
        mismatches.iter().any(|m| m.field == Field::Answer),
        "the changed TTL went unnoticed"
    );
}

#[test]
fn bulwark_answers_like_knotd() {
    let zones = zones();
    let Some(mut knot) = support::spawn_knotd(&zone_refs(&zones)) else {
        return;
    };
    let mut ours = support::spawn_bulwark(&zone_refs(&zones), &[]);
    let queries = generate_queries();
    let (mismatches, _, used) = compare_servers(&mut knot, &mut ours, &queries);
    // Not a failure (the table may be ahead of the server), but worth seeing.
    for entry in unused_entries(&used) {
        eprintln!("note: deliberate difference not seen in this run: {entry}");
    }
    assert!(
        mismatches.is_empty(),
        "{}",
        report(&mismatches, "knotd", queries.len())
    );
}

/// The signed copies of diff.zone (crates/auth/tests/data/signed, made by
/// its sign.sh): NSEC, NSEC3 (no salt, 0 iterations) and NSEC3 with Opt-Out.
fn signed_zone(file: &str) -> PathBuf {
    support::data_dir()
        .join("../../../auth/tests/data/signed")
        .join(file)
}

/// The first NSEC3 owner of a signed fixture: a hashed name, which must be
/// answered as a name that does not exist (as knotd does).
fn hashed_owner(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 4 && f[3] == "NSEC3")
        .map(|f| f[0].to_string())
}

/// DO=1 queries for every name and every type a signed zone answers
/// differently, with room to spare and with too little, over UDP and TCP,
/// plus DO=0 queries that must stay as for an unsigned zone.
fn generate_signed_queries(hashed: Option<String>) -> Vec<(QuerySpec, Transport)> {
    use RecordType::*;
    let mut rng = Rng(0x5ec0_ded0_0d1e);
    let mut names: Vec<String> = NAMES.iter().map(|n| absolute(n)).collect();
    names.extend(
        [
            "a.ent",
            "x.ent",
            "zzz",
            "a.x.y.ent",
            "deep.nonexistent.wild",
            "a.noglue",
            "x.partial",
        ]
        .iter()
        .map(|n| absolute(n)),
    );
    if let Some(h) = hashed {
        names.push(h.clone());
        names.push(format!("x.{h}"));
    }
    let qtypes = [
        A, AAAA, NS, SOA, MX, TXT, CNAME, DNAME_TYPE, DS, SRV, ANY, DNSKEY, RRSIG, NSEC, NSEC3,
        NSEC3PARAM, NULL,
    ];
    let mut out = Vec::new();
    for name in &names {
        for qtype in qtypes {
            let mut spec = QuerySpec::new(name, qtype);
            if rng.one_in(4) {
                spec.qname = mix_case(&spec.qname, &mut rng);
            }
            spec.cd = rng.one_in(8);
            spec.edns = Some(EdnsSpec {
                payload: 4096,
                dnssec_ok: !rng.one_in(8),
                version: 0,
            });
            let transport = if rng.one_in(8) {
                Transport::Tcp
            } else {
                Transport::Udp
            };
            out.push((spec, transport));
        }
    }
    // RFC 6672 §2.2: a DNAME substitution that overflows is YXDOMAIN, with
    // the signed SOA.
    for qtype in [A, DNAME_TYPE] {
        let mut spec = QuerySpec::new(&overlong_dname_target(), qtype);
        spec.edns = Some(EdnsSpec {
            payload: 4096,
            dnssec_ok: true,
            version: 0,
        });
        out.push((spec, Transport::Udp));
    }
    // Too little room for the signatures and proofs: TC (RFC 4035 §3.1.1).
    for (name, qtype) in [
        ("big", TXT),
        ("nonexistent", A),
        ("foo.wild", TXT),
        ("", DNSKEY),
        ("sub", A),
        ("", MX),
    ] {
        for payload in [512u16, 1232] {
            let mut spec = QuerySpec::new(&absolute(name), qtype);
            spec.edns = Some(EdnsSpec {
                payload,
                dnssec_ok: true,
                version: 0,
            });
            out.push((spec, Transport::Udp));
        }
    }
    out
}

/// Differences from knotd in signed answers, each with its reason. The
/// unsigned table above applies too.
const SIGNED_DELIBERATE_DIFFERENCES: &[Deliberate] = &[
    Deliberate {
        applies: |q| {
            q.qtype == u16::from(RecordType::RRSIG) && !q.edns.is_some_and(|e| e.dnssec_ok)
        },
        field: Field::Answer,
        reason: "a query for type RRSIG without DO gets every RRSIG at the name, as before \
             DNSSEC answering existed (answers without DO are kept unchanged); with DO, \
             bulwark answers like knotd 3.2: only the RRSIGs covering the lowest type \
             signed there. knotd does that with and without DO (RFC 4035 §3.1.5 does \
             not say which RRSIGs a QTYPE=RRSIG answer holds)",
    },
    Deliberate {
        applies: |q| q.qname.len() > 200,
        field: Field::Authority,
        reason: "a DNAME substitution that overflows is YXDOMAIN (RFC 6672 §2.2): the \
                 signed DNAME in the answer is the proof, there is nothing to deny, so \
                 bulwark sends the signed SOA only. knotd 3.2 adds, in NSEC3 zones only, \
                 the NSEC3 of the DNAME's target (inside.diff.test.), which proves \
                 nothing about the query (its NSEC zone gets the SOA only, like bulwark)",
    },
];

fn signed_deliberate(spec: &QuerySpec, field: Field) -> bool {
    SIGNED_DELIBERATE_DIFFERENCES
        .iter()
        .any(|d| d.field == field && (d.applies)(spec))
}

/// bulwark and knotd serve one signed variant of diff.zone; every DO query
/// must get the same records (signatures and NSEC/NSEC3 proofs included).
fn signed_zone_answers_like_knotd(file: &str) {
    let signed = signed_zone(file);
    let zones = vec![
        (DIFF_ORIGIN, signed.clone()),
        (OTHER_ORIGIN, support::data_dir().join("other.zone")),
    ];
    let Some(mut knot) = support::spawn_knotd(&zone_refs(&zones)) else {
        return;
    };
    let mut ours = support::spawn_bulwark(&zone_refs(&zones), &[]);
    let queries = generate_signed_queries(hashed_owner(&signed));
    let (mismatches, authoritative, _) = compare_servers(&mut knot, &mut ours, &queries);
    let mismatches: Vec<Mismatch> = mismatches
        .into_iter()
        .filter(|m| !signed_deliberate(&m.spec, m.field))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{file}: {}",
        report(&mismatches, "knotd", queries.len())
    );
    assert!(authoritative * 2 > queries.len(), "{file}: zone not served");
    // The comparison means something only if the zone is served as signed:
    // a DO NXDOMAIN from knotd carries signed denial proofs.
    let mut probe = QuerySpec::new(&absolute("nonexistent"), RecordType::A);
    probe.edns = Some(EdnsSpec {
        payload: 4096,
        dnssec_ok: true,
        version: 0,
    });
    let reference = ask(knot.addr, &probe, Transport::Udp).unwrap();
    let proofs = reference
        .authority
        .iter()
        .filter(|r| r.contains(" NSEC") || r.contains(" RRSIG "))
        .count();
    assert!(proofs >= 3, "{file}: knotd sent no proofs: {reference}");
}

#[test]
fn bulwark_answers_nsec_signed_zone_like_knotd() {
    signed_zone_answers_like_knotd("diff-nsec.zone");
}

#[test]
fn bulwark_answers_nsec3_signed_zone_like_knotd() {
    signed_zone_answers_like_knotd("diff-nsec3.zone");
}

#[test]
fn bulwark_answers_salted_nsec3_zone_like_knotd() {
    signed_zone_answers_like_knotd("diff-nsec3-salted.zone");
}

#[test]
fn bulwark_answers_nsec3_opt_out_zone_like_knotd() {
    signed_zone_answers_like_knotd("diff-optout.zone");
}
