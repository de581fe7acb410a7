#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! ISC's DNS-Compliance-Testing `genreport` against bulwark: every test of its
//! EDNS, FULL, COMM and TYPE groups plus `dnswkk` (TSIG with the well-known
//! key), on an unsigned and on a DNSSEC-signed zone, each judged by the rules
//! genreport applies and required to pass.
//!
//! genreport's rules are re-expressed here, not copied: each query is built
//! byte for byte as genreport builds it (one row of [`PROBES`] per test, with
//! genreport's name for it), sent over UDP or TCP as genreport sends it
//! (falling back to TCP on a truncated UDP answer unless the test ignores TC),
//! and the response is judged into a verdict string of genreport's form: `ok`
//! followed by informational tags (`nsid`, `expire`, `cookie`, `subnet`), or
//! the failure tags (`noaa`, `nosoa`, `mbz`, `badversion`, a response rcode or
//! opcode by name, ...). `icmp` (an ICMP echo of the host) is no DNS test and
//! is listed as not applicable.
//!
//! Where genreport's table and its query builder disagree, this follows the
//! table: genreport's builder never applies the table's `aa` column, so the
//! `aa` and `opcodeflg` queries it really sends have AA clear, although its
//! manual and dig equivalents say AA is set; here AA is set as the table says,
//! which only makes those two tests stricter. The table's `edns@512` row has
//! no DO bit (its manual says DO): it is sent without, as the table has it;
//! the signed zone's RSA DNSKEY RRset overflows 512 octets either way.
//!
//! Beside genreport's own rules, the test checks that it exercised what it
//! means to: TYPE queries for types the zone holds get real answers, the
//! signed zone's DNSKEY RRset is truncated at 512 octets (`edns@512`) and
//! comes whole over TCP (`ednstcp`), and signatures come with DO.

use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bulwark_testkit::wire::name as wire_name;

use crate::support;

// ---------------------------------------------------------------------------
// The tests genreport runs
// ---------------------------------------------------------------------------

/// genreport's grouping of its tests (`-e` EDNS, `-f` FULL, `-c` COMM,
/// `-t` TYPE; `dnswkk` and `icmp` only when named with `-i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Edns,
    Full,
    Comm,
    Type,
    Named,
}

/// One genreport test: the query it sends and what it expects of the answer.
#[derive(Clone, Copy, Debug)]
struct Probe {
    name: &'static str,
    group: Group,
    /// EDNS options, as they go into the OPT rdata.
    options: &'static [u8],
    /// EDNS UDP payload size; 0: no OPT record at all.
    udp_size: u16,
    /// The 16 EDNS flag bits (DO is 0x8000).
    edns_flags: u16,
    edns_version: u8,
    tcp: bool,
    /// The query carries [`CLIENT_COOKIE`]; the answer's cookie must echo it.
    cookie: bool,
    /// A truncated UDP answer is judged as it is, not retried over TCP.
    ignore_tc: bool,
    // Header bits set in the query.
    tc: bool,
    rd: bool,
    ra: bool,
    cd: bool,
    ad: bool,
    aa: bool,
    z: bool,
    /// A non-zero opcode makes the query a bare header (no question).
    opcode: u8,
    qtype: u16,
    /// Signed with TSIG, key `.`, hmac-sha256, 32 zero octets (`dnswkk`).
    tsig: bool,
}

const SOA: u16 = 6;
const DNSKEY: u16 = 48;
const RRSIG: u16 = 46;
const OPT: u16 = 41;
const TSIG: u16 = 250;
const CLASS_IN: u16 = 1;
const CLASS_ANY: u16 = 255;

const DO: u16 = 0x8000;
/// The opcode genreport uses for "a code nobody implements".
const UNKNOWN_OPCODE: u8 = 15;

const RCODE_NOERROR: u16 = 0;
const RCODE_NOTIMP: u16 = 4;
const RCODE_NOTAUTH: u16 = 9;
const RCODE_BADVERS: u16 = 16;
const RCODE_BADCOOKIE: u16 = 23;
const TSIG_BADTIME: u16 = 18;

/// The client cookie genreport sends (RFC 7873 §4).
const CLIENT_COOKIE: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

// EDNS options as genreport writes them: code, length, data.
const OPT_NSID: &[u8] = &[0, 3, 0, 0];
const OPT_ECS: &[u8] = &[0, 8, 0, 4, 0, 1, 0, 0]; // family 1, 0.0.0.0/0
const OPT_EXPIRE: &[u8] = &[0, 9, 0, 0];
const OPT_COOKIE: &[u8] = &[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
/// An option code nobody has assigned: it must not be echoed back.
const OPT_UNKNOWN_100: &[u8] = &[0, 100, 0, 0];
const OPT_ALL_FOUR: &[u8] = &[
    0, 3, 0, 0, // NSID
    0, 8, 0, 4, 0, 1, 0, 0, // ECS
    0, 9, 0, 0, // EXPIRE
    0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, // COOKIE
];

/// A plain SOA query, no EDNS, every flag clear: what each row changes.
const BASE: Probe = Probe {
    name: "",
    group: Group::Full,
    options: &[],
    udp_size: 0,
    edns_flags: 0,
    edns_version: 0,
    tcp: false,
    cookie: false,
    ignore_tc: false,
    tc: false,
    rd: false,
    ra: false,
    cd: false,
    ad: false,
    aa: false,
    z: false,
    opcode: 0,
    qtype: SOA,
    tsig: false,
};

/// An EDNS(0) SOA query with a 4096-octet payload.
const EDNS0: Probe = Probe {
    group: Group::Edns,
    udp_size: 4096,
    ..BASE
};

/// The same with EDNS version 1, which must get BADVERS.
const EDNS1: Probe = Probe {
    edns_version: 1,
    ..EDNS0
};

/// genreport's tests in its order, the TYPE group aside ([`TYPE_TESTS`]).
#[rustfmt::skip]
const PROBES: &[Probe] = &[
    Probe { name: "dns", group: Group::Edns, ..BASE },
    Probe { name: "aa", aa: true, ..BASE },
    Probe { name: "ad", ad: true, ..BASE },
    Probe { name: "cd", cd: true, ..BASE },
    Probe { name: "ra", ra: true, ..BASE },
    Probe { name: "rd", rd: true, ..BASE },
    Probe { name: "tc", tc: true, ..BASE },
    Probe { name: "zflag", z: true, ..BASE },
    Probe { name: "opcode", opcode: UNKNOWN_OPCODE, qtype: 0, ..BASE },
    Probe {
        name: "opcodeflg", opcode: UNKNOWN_OPCODE, qtype: 0,
        tc: true, rd: true, ra: true, cd: true, ad: true, aa: true, z: true, ..BASE
    },
    Probe { name: "type666", qtype: 666, ..BASE },
    Probe { name: "tcp", tcp: true, ..BASE },
    Probe { name: "edns", ..EDNS0 },
    Probe { name: "edns1", ..EDNS1 },
    Probe { name: "edns@512", udp_size: 512, ignore_tc: true, qtype: DNSKEY, ..EDNS0 },
    Probe { name: "ednsopt", options: OPT_UNKNOWN_100, ..EDNS0 },
    Probe { name: "edns1opt", options: OPT_UNKNOWN_100, ..EDNS1 },
    Probe { name: "do", edns_flags: DO, ..EDNS0 },
    Probe { name: "docd", group: Group::Full, edns_flags: DO, cd: true, ..EDNS0 },
    Probe { name: "edns1do", group: Group::Full, edns_flags: DO, ..EDNS1 },
    Probe { name: "ednsflags", edns_flags: 0x0080, ..EDNS0 },
    Probe { name: "optlist", options: OPT_ALL_FOUR, cookie: true, ..EDNS0 },
    Probe { name: "ednsnsid", group: Group::Full, options: OPT_NSID, ..EDNS0 },
    Probe { name: "ednscookie", group: Group::Full, options: OPT_COOKIE, cookie: true, ..EDNS0 },
    Probe { name: "ednsexpire", group: Group::Full, options: OPT_EXPIRE, ..EDNS0 },
    Probe { name: "ednssubnet", group: Group::Full, options: OPT_ECS, ..EDNS0 },
    Probe { name: "edns1nsid", group: Group::Full, options: OPT_NSID, ..EDNS1 },
    Probe { name: "edns1cookie", group: Group::Full, options: OPT_COOKIE, cookie: true, ..EDNS1 },
    Probe { name: "edns1expire", group: Group::Full, options: OPT_EXPIRE, ..EDNS1 },
    Probe { name: "edns1subnet", group: Group::Full, options: OPT_ECS, ..EDNS1 },
    Probe { name: "ednstcp", udp_size: 512, edns_flags: DO, tcp: true, qtype: DNSKEY, ..EDNS0 },
    Probe { name: "bind11", group: Group::Comm, options: OPT_COOKIE, edns_flags: DO, cookie: true, ..EDNS0 },
    Probe {
        name: "dig11", group: Group::Comm, options: OPT_COOKIE, cookie: true, rd: true, ad: true,
        ..EDNS0
    },
    Probe { name: "dnswkk", group: Group::Named, tsig: true, ..BASE },
];

/// genreport's `icmp` test pings the server's host: not a DNS query.
const NOT_APPLICABLE: &[(&str, &str)] = &[("icmp", "n/a (ICMP echo of the host, not DNS)")];

/// The TYPE group: a plain query (no EDNS, no flags) for each type at the apex.
#[rustfmt::skip]
const TYPE_TESTS: &[(&str, u16)] = &[
    ("A", 1), ("NS", 2), ("MD", 3), ("MF", 4), ("CNAME", 5), ("SOA", 6), ("MB", 7), ("MG", 8),
    ("MR", 9), ("NULL", 10), ("WKS", 11), ("PTR", 12), ("HINFO", 13), ("MINFO", 14), ("MX", 15),
    ("TXT", 16), ("RP", 17), ("AFSDB", 18), ("X25", 19), ("ISDN", 20), ("RT", 21), ("NSAP", 22),
    ("NSAP-PTR", 23), ("SIG", 24), ("KEY", 25), ("PX", 26), ("GPOS", 27), ("AAAA", 28),
    ("LOC", 29), ("NXT", 30), ("SRV", 33), ("NAPTR", 35), ("KX", 36), ("CERT", 37), ("A6", 38),
    ("DNAME", 39), ("APL", 42), ("DS", 43), ("SSHFP", 44), ("IPSECKEY", 45), ("RRSIG", 46),
    ("NSEC", 47), ("DNSKEY", 48), ("DHCID", 49), ("NSEC3", 50), ("NSEC3PARAM", 51), ("TLSA", 52),
    ("SMIMEA", 53), ("HIP", 55), ("CDS", 59), ("CDNSKEY", 60), ("OPENPGPKEY", 61), ("SPF", 99),
    ("NID", 104), ("L32", 105), ("L64", 106), ("LP", 107), ("EUI48", 108), ("EUI64", 109),
    ("URI", 256), ("CAA", 257), ("AVC", 258), ("DOA", 259), ("DLV", 32769), ("TYPE1000", 1000),
];

fn all_probes() -> Vec<Probe> {
    let mut all = PROBES.to_vec();
    all.extend(TYPE_TESTS.iter().map(|&(name, qtype)| Probe {
        name,
        group: Group::Type,
        qtype,
        ..BASE
    }));
    all
}

// ---------------------------------------------------------------------------
// Building a query as genreport does
// ---------------------------------------------------------------------------

/// `hmac-sha256.` in wire form (RFC 8945 §6).
const HMAC_SHA256_NAME: &[u8] = b"\x0bhmac-sha256\x00";
/// The well-known key: 32 zero octets, named `.` (genreport's `dnswkk`).
const WELL_KNOWN_KEY: [u8; 32] = [0; 32];
const WELL_KNOWN_KEY_BASE64: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
const TSIG_FUDGE: u16 = 300;

/// A query on the wire and, when signed, its MAC (which the response's covers).
struct Query {
    wire: Vec<u8>,
    id: u16,
    mac: Option<[u8; 32]>,
}

fn next_id() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0x6e72);
    NEXT.fetch_add(40503, Ordering::Relaxed)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn build_query(p: &Probe, zone: &[u8], id: u16, now: u64) -> Query {
    // RFC 1035 §4.1.1 header: opcode in bits 3-6 of the third octet.
    let mut flags = (p.opcode & 0x0f) << 3;
    for (set, bit) in [(p.aa, 0x04), (p.tc, 0x02), (p.rd, 0x01)] {
        if set {
            flags |= bit;
        }
    }
    let mut flags2 = 0u8;
    for (set, bit) in [(p.ra, 0x80), (p.z, 0x40), (p.ad, 0x20), (p.cd, 0x10)] {
        if set {
            flags2 |= bit;
        }
    }
    // genreport cuts a query with another opcode than QUERY down to its
    // header, with the question count zeroed.
    let header_only = p.opcode != 0;
    let mut m = Vec::with_capacity(512);
    put16(&mut m, id);
    m.push(flags);
    m.push(flags2);
    put16(&mut m, u16::from(!header_only));
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    if !header_only {
        m.extend_from_slice(zone);
        put16(&mut m, p.qtype);
        put16(&mut m, CLASS_IN);
    }
    let mut arcount = 0u16;
    if p.udp_size > 0 {
        // RFC 6891 §6.1.2: root owner, class = payload, TTL = extended
        // rcode 0, version, flags.
        m.push(0);
        put16(&mut m, OPT);
        put16(&mut m, p.udp_size);
        m.push(0);
        m.push(p.edns_version);
        put16(&mut m, p.edns_flags);
        put16(&mut m, u16::try_from(p.options.len()).unwrap());
        m.extend_from_slice(p.options);
        arcount += 1;
        m[10..12].copy_from_slice(&arcount.to_be_bytes());
    }
    let mut mac = None;
    if p.tsig {
        // RFC 8945 §4.3.1, §4.3.3: the MAC covers the message as it is before
        // the TSIG is added, then the TSIG variables.
        let time = time48(now);
        let mut covered = m.clone();
        covered.push(0); // key name `.`
        put16(&mut covered, CLASS_ANY);
        covered.extend_from_slice(&[0, 0, 0, 0]); // TTL
        covered.extend_from_slice(HMAC_SHA256_NAME);
        covered.extend_from_slice(&time);
        put16(&mut covered, TSIG_FUDGE);
        covered.extend_from_slice(&[0, 0, 0, 0]); // error, other length
        let digest = sha256::hmac(&WELL_KNOWN_KEY, &covered);
        let mut rdata = HMAC_SHA256_NAME.to_vec();
        rdata.extend_from_slice(&time);
        put16(&mut rdata, TSIG_FUDGE);
        put16(&mut rdata, 32);
        rdata.extend_from_slice(&digest);
        put16(&mut rdata, id);
        rdata.extend_from_slice(&[0, 0, 0, 0]);
        m.push(0);
        put16(&mut m, TSIG);
        put16(&mut m, CLASS_ANY);
        m.extend_from_slice(&[0, 0, 0, 0]);
        put16(&mut m, u16::try_from(rdata.len()).unwrap());
        m.extend_from_slice(&rdata);
        arcount += 1;
        m[10..12].copy_from_slice(&arcount.to_be_bytes());
        mac = Some(digest);
    }
    Query { wire: m, id, mac }
}

/// RFC 8945 §4.2: time signed, 48 bits of seconds.
fn time48(now: u64) -> [u8; 6] {
    let b = now.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

// ---------------------------------------------------------------------------
// Judging a response as genreport does
// ---------------------------------------------------------------------------

/// What genreport makes of one response.
#[derive(Debug, PartialEq, Eq)]
enum Judgement {
    /// The tags of the verdict, `ok` first when it passed.
    Verdict(Vec<String>),
    /// Over UDP genreport drops this response and keeps waiting: a reply with
    /// QR clear or one for another question ends as `timeout`.
    Ignored(&'static str),
    /// Truncated over UDP: genreport asks again over TCP; the tags already
    /// given stay in the verdict.
    RetryOverTcp(Vec<String>),
}

/// The message ended early or its lengths do not add up: `malformed`.
struct Malformed;

#[derive(Default)]
struct Tags {
    list: Vec<String>,
    failed: bool,
}

impl Tags {
    fn fail(&mut self, tag: impl Into<String>) {
        self.list.push(tag.into());
        self.failed = true;
    }
    fn note(&mut self, tag: &str) {
        self.list.push(tag.to_string());
    }
}

fn be16(b: &[u8], at: usize) -> Result<u16, Malformed> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or(Malformed)
}

fn be32(b: &[u8], at: usize) -> Result<u32, Malformed> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or(Malformed)
}

/// Reads the (possibly compressed) name at `at`, no octet of it at or past
/// `end`, as a resolver library's name expansion does: pointers may go
/// anywhere before `end` but may not loop, and the name fits 255 octets.
/// Returns the labels and where the name ends in place.
fn read_name(msg: &[u8], at: usize, end: usize) -> Result<(Vec<Vec<u8>>, usize), Malformed> {
    let end = end.min(msg.len());
    let mut labels = Vec::new();
    let mut pos = at;
    let mut resume = None;
    let mut length = 1usize;
    let mut hops = 0usize;
    loop {
        if pos >= end {
            return Err(Malformed);
        }
        let len = msg[pos];
        match len & 0xc0 {
            0x00 if len == 0 => {
                return Ok((labels, resume.unwrap_or(pos + 1)));
            }
            0x00 => {
                let label = msg.get(pos + 1..pos + 1 + usize::from(len));
                let label = label.filter(|_| pos + 1 + usize::from(len) <= end);
                let label = label.ok_or(Malformed)?;
                length += label.len() + 1;
                if length > 255 {
                    return Err(Malformed);
                }
                labels.push(label.to_vec());
                pos += 1 + label.len();
            }
            0xc0 => {
                if pos + 1 >= end {
                    return Err(Malformed);
                }
                hops += 2;
                if hops >= end {
                    return Err(Malformed); // a loop
                }
                resume.get_or_insert(pos + 2);
                pos = usize::from(u16::from_be_bytes([len & 0x3f, msg[pos + 1]]));
            }
            _ => return Err(Malformed),
        }
    }
}

fn same_name(labels: &[Vec<u8>], wire: &[u8]) -> bool {
    let mut pos = 0;
    for label in labels {
        let len = usize::from(wire[pos]);
        if len != label.len() || !wire[pos + 1..pos + 1 + len].eq_ignore_ascii_case(label) {
            return false;
        }
        pos += 1 + len;
    }
    wire[pos] == 0
}

fn opcode_text(code: u8) -> String {
    match code {
        0 => "query".into(),
        1 => "iquery".into(),
        2 => "status".into(),
        4 => "notify".into(),
        5 => "update".into(),
        other => format!("opcode{other}"),
    }
}

fn rcode_text(code: u16) -> String {
    let name = match code {
        0 => "noerror",
        1 => "formerr",
        2 => "servfail",
        3 => "nxdomain",
        4 => "notimp",
        5 => "refused",
        6 => "yxdomain",
        7 => "yxrrset",
        8 => "nxrrset",
        9 => "notauth",
        10 => "notzone",
        16 => "badvers",
        23 => "badcookie",
        other => return format!("rcode{other}"),
    };
    name.to_string()
}

fn tsig_error_text(code: u16) -> String {
    match code {
        16 => "badsig".into(),
        17 => "badkey".into(),
        18 => "badtime".into(),
        other => format!("rcode{other}"),
    }
}

/// What was seen in the sections, for the rules applied after.
#[derive(Default)]
struct Seen {
    soa: bool,
    rrsig: bool,
    opt: bool,
    edns_ttl: u32,
    nsid: bool,
    ecs: bool,
    expire: bool,
    cookie: bool,
    good_cookie: bool,
    echo: bool,
    tsig: bool,
    tsig_error: u16,
    proxy: bool,
    tsig_faults: Vec<&'static str>,
}

/// Judges `msg`, the response to `p` about `zone` (wire form); `over_tcp`
/// says how it came, `request_mac` the MAC of a signed query, `now` the
/// time in seconds since the epoch.
fn judge(
    p: &Probe,
    zone: &[u8],
    msg: &[u8],
    over_tcp: bool,
    request_mac: Option<&[u8; 32]>,
    now: u64,
) -> Judgement {
    let mut tags = Tags::default();
    let exchange = Exchange {
        probe: p,
        zone,
        over_tcp,
        request_mac: request_mac.copied().unwrap_or([0; 32]),
        now,
    };
    match read_response(&mut tags, &exchange, msg) {
        Ok(Reading::Early(judgement)) => judgement,
        Ok(Reading::Done(header, seen)) => {
            apply_rules(&mut tags, p, &header, &seen, msg.len());
            Judgement::Verdict(tags.list)
        }
        Err(Malformed) => {
            tags.fail("malformed");
            Judgement::Verdict(tags.list)
        }
    }
}

/// What a response is judged against.
struct Exchange<'a> {
    probe: &'a Probe,
    zone: &'a [u8],
    over_tcp: bool,
    /// The query's MAC (zeros for an unsigned query, as genreport has it).
    request_mac: [u8; 32],
    now: u64,
}

/// The header of a response (RFC 1035 §4.1.1).
struct Header {
    opcode: u8,
    aa: bool,
    tc: bool,
    rd: bool,
    ra: bool,
    z: bool,
    ad: bool,
    cd: bool,
    /// The header's four rcode bits.
    rcode: u16,
    counts: [u16; 4],
}

impl Header {
    fn parse(msg: &[u8]) -> Option<Header> {
        let h = msg.get(..12)?;
        let bit = |octet: u8, mask: u8| octet & mask != 0;
        Some(Header {
            opcode: (h[2] >> 3) & 0x0f,
            aa: bit(h[2], 0x04),
            tc: bit(h[2], 0x02),
            rd: bit(h[2], 0x01),
            ra: bit(h[3], 0x80),
            z: bit(h[3], 0x40),
            ad: bit(h[3], 0x20),
            cd: bit(h[3], 0x10),
            rcode: u16::from(h[3] & 0x0f),
            counts: [4, 6, 8, 10].map(|i| u16::from_be_bytes([h[i], h[i + 1]])),
        })
    }
}

/// How far reading a response got.
enum Reading {
    /// Every section read: the rules decide.
    Done(Header, Seen),
    /// Decided before the rules: dropped, retried over TCP, or a mismatch.
    Early(Judgement),
}

/// Reads the sections the way genreport does, noting what the rules need.
/// Sections of a response to another opcode than QUERY must be empty and
/// are not read (their tag is given instead).
fn read_response(tags: &mut Tags, x: &Exchange<'_>, msg: &[u8]) -> Result<Reading, Malformed> {
    let p = x.probe;
    let Some(header) = Header::parse(msg) else {
        if x.over_tcp {
            return Err(Malformed);
        }
        return Ok(Reading::Early(Judgement::Ignored("shorter than a header")));
    };
    if !x.over_tcp && msg[2] & 0x80 == 0 {
        return Ok(Reading::Early(Judgement::Ignored("QR clear")));
    }
    let [qdcount, ancount, nscount, arcount] = header.counts;
    // Another opcode than QUERY: the answer must be a bare header too.
    let bare = p.opcode != 0;
    let mut seen = Seen::default();
    let mut pos = 12;

    if bare && qdcount != 0 {
        tags.fail("non-empty-question-section");
    } else {
        for _ in 0..qdcount {
            let (name, next) = read_name(msg, pos, msg.len())?;
            pos = next;
            let qtype = be16(msg, pos)?;
            be16(msg, pos + 2)?;
            pos += 4;
            if !same_name(&name, x.zone) || qtype != p.qtype {
                return Ok(Reading::Early(if x.over_tcp {
                    Judgement::Verdict(vec!["mismatch".into()])
                } else {
                    Judgement::Ignored("a question other than the one asked")
                }));
            }
        }
    }
    if header.tc && !x.over_tcp && !p.ignore_tc {
        let so_far = std::mem::take(&mut tags.list);
        return Ok(Reading::Early(Judgement::RetryOverTcp(so_far)));
    }

    if bare && ancount != 0 {
        tags.fail("non-empty-answer-section");
    } else {
        for _ in 0..ancount {
            let rr = read_record(msg, &mut pos)?;
            seen.soa |= rr.rtype == SOA && same_name(&rr.owner, x.zone);
            seen.rrsig |= rr.rtype == RRSIG;
        }
    }

    if bare && nscount != 0 {
        tags.fail("non-empty-authority-section");
    } else {
        for _ in 0..nscount {
            read_record(msg, &mut pos)?;
        }
    }

    if bare && arcount != 0 {
        tags.fail("non-empty-additional-section");
    } else {
        for i in 0..arcount {
            let start = pos;
            let rr = read_record(msg, &mut pos)?;
            match rr.rtype {
                OPT if !seen.opt => {
                    seen.opt = true;
                    seen.edns_ttl = rr.ttl;
                    read_options(tags, p, msg, rr.rdata, &mut seen)?;
                }
                TSIG if !seen.tsig => {
                    seen.tsig = true;
                    let record = TsigRecord {
                        start,
                        class_at: rr.class_at,
                        rdata: rr.rdata,
                        owner_is_root: rr.owner.is_empty(),
                        last: i + 1 == arcount,
                    };
                    check_tsig(msg, &record, &x.request_mac, x.now, &mut seen)?;
                }
                // A second OPT or TSIG.
                OPT | TSIG => return Err(Malformed),
                _ => {}
            }
        }
    }
    if pos != msg.len() {
        return Err(Malformed);
    }
    Ok(Reading::Done(header, seen))
}

/// genreport's rules, in its order (which is the order of the tags).
fn apply_rules(tags: &mut Tags, p: &Probe, h: &Header, seen: &Seen, len: usize) {
    // RFC 6891 §6.1.3: the OPT TTL's top octet holds the rcode's upper bits.
    let rcode = h.rcode + u16::try_from((seen.edns_ttl & 0xff00_0000) >> 20).unwrap();
    let version = p.edns_version;
    let asked_do = p.edns_flags & DO != 0;
    let mut rcode_told = false;

    if p.opcode != h.opcode {
        tags.fail(opcode_text(h.opcode));
    }
    if version == 0 {
        // A QUERY expects NOERROR (or BADCOOKIE with a cookie), any other
        // opcode NOTIMP.
        let cookie_ok = p.cookie && rcode == RCODE_BADCOOKIE && seen.cookie;
        if p.opcode == 0 && rcode != RCODE_NOERROR && !cookie_ok {
            tags.fail(rcode_text(rcode));
            rcode_told = true;
        }
        if p.opcode != 0 && rcode != RCODE_NOTIMP {
            tags.fail(rcode_text(rcode));
            rcode_told = true;
        }
    }
    if seen.tsig && seen.tsig_error != 0 {
        if !rcode_told && rcode != RCODE_NOTAUTH {
            tags.fail(rcode_text(rcode));
        }
        tags.fail(tsig_error_text(seen.tsig_error));
    }
    if p.tsig && !seen.tsig {
        tags.fail("notsig");
    }
    for fault in &seen.tsig_faults {
        tags.fail(*fault);
    }
    if version != 0 && rcode != RCODE_BADVERS {
        tags.fail(rcode_text(rcode));
    }
    let answered_version = (seen.edns_ttl >> 16) & 0xff;
    if seen.opt && answered_version != 0 {
        tags.fail("version-not-zero");
    }
    if seen.opt
        && ((answered_version < u32::from(version) && rcode != RCODE_BADVERS)
            || (answered_version >= u32::from(version) && rcode == RCODE_BADVERS))
    {
        tags.fail("badversion");
    }
    if !seen.opt && p.udp_size != 0 {
        tags.fail("noopt");
    }
    if seen.opt && p.udp_size == 0 {
        tags.fail("opt");
    }
    if p.qtype == SOA && version == 0 && !p.ignore_tc && !seen.soa && rcode == RCODE_NOERROR {
        tags.fail("nosoa");
    }
    if p.qtype == SOA && seen.soa && (version != 0 || rcode != RCODE_NOERROR) {
        tags.fail("soa");
    }
    if seen.echo {
        tags.fail("echoed");
    }
    let answered_do = seen.edns_ttl & u32::from(DO) != 0;
    if seen.opt && asked_do && !answered_do && seen.rrsig {
        tags.fail("nodo");
    }
    if seen.opt && asked_do && p.cd && answered_do && !h.cd && seen.rrsig {
        tags.fail("nocd");
    }
    // The header bits: AA, RA, RD, AD and CD only mean something for QUERY.
    if !h.aa && version == 0 && rcode == RCODE_NOERROR && p.opcode == 0 {
        tags.fail("noaa");
    }
    if h.aa && p.opcode != 0 {
        tags.fail("aa");
    }
    if h.ra && p.opcode != 0 {
        tags.fail("ra");
    }
    if h.rd && (p.opcode != 0 || !p.rd) {
        tags.fail("rd");
    }
    if !h.rd && p.rd && p.opcode == 0 {
        tags.fail("nord");
    }
    if h.ad && (p.opcode != 0 || (!p.ad && !asked_do)) {
        tags.fail("ad");
    }
    if h.cd && (p.opcode != 0 || !p.cd) {
        tags.fail("cd");
    }
    // RFC 1035 §4.1.1: Z must be zero in all responses.
    if h.z {
        tags.fail("z");
    }
    // RFC 6891 §6.1.4, RFC 3225: DO is the only EDNS flag; the rest are zero.
    if seen.edns_ttl & 0x7fff != 0 {
        tags.fail("mbz");
    }
    let limit = if p.udp_size != 0 { p.udp_size } else { 512 };
    if p.ignore_tc && len > usize::from(limit) {
        tags.fail("toobig");
    }

    if !tags.failed {
        tags.note("ok");
    }
    if seen.nsid {
        tags.note("nsid");
    }
    if seen.expire {
        tags.note("expire");
    }
    if seen.cookie && p.cookie {
        let base = if seen.good_cookie {
            "cookie"
        } else {
            "cookie-mismatch"
        };
        if rcode == RCODE_BADCOOKIE {
            tags.note(&format!("{base}+badcookie"));
        } else {
            tags.note(base);
        }
    } else if seen.cookie {
        tags.note("cookie");
    }
    if seen.ecs {
        tags.note("subnet");
    }
    if seen.proxy {
        tags.note("proxy");
    }
}

/// A resource record as read in place.
struct Record {
    owner: Vec<Vec<u8>>,
    rtype: u16,
    /// Where its class sits (the TTL follows).
    class_at: usize,
    ttl: u32,
    rdata: Range<usize>,
}

/// Reads the resource record at `pos` and moves past it.
fn read_record(msg: &[u8], pos: &mut usize) -> Result<Record, Malformed> {
    let (owner, next) = read_name(msg, *pos, msg.len())?;
    let rtype = be16(msg, next)?;
    let class_at = next + 2;
    let ttl = be32(msg, next + 4)?;
    let rdlen = usize::from(be16(msg, next + 8)?);
    let start = next + 10;
    if msg.len() < start + rdlen {
        return Err(Malformed);
    }
    *pos = start + rdlen;
    Ok(Record {
        owner,
        rtype,
        class_at,
        ttl,
        rdata: start..start + rdlen,
    })
}

/// RFC 6891 §6.1.2: the options of the OPT record, each checked as
/// genreport does.
fn read_options(
    tags: &mut Tags,
    p: &Probe,
    msg: &[u8],
    rdata: Range<usize>,
    seen: &mut Seen,
) -> Result<(), Malformed> {
    let mut at = rdata.start;
    while rdata.end - at >= 4 {
        let code = be16(msg, at)?;
        let len = usize::from(be16(msg, at + 2)?);
        at += 4;
        if rdata.end - at < len {
            return Err(Malformed);
        }
        let data = &msg[at..at + len];
        match code {
            3 if len > 0 => seen.nsid = true,
            8 => seen.ecs = true,
            9 if len == 4 => seen.expire = true,
            // RFC 7873 §4: client cookie (8) + server cookie (8 to 32).
            10 if (16..=40).contains(&len) => {
                seen.cookie = true;
                if data[..8] == CLIENT_COOKIE {
                    seen.good_cookie = true;
                } else if p.cookie {
                    tags.failed = true;
                }
            }
            100 => seen.echo = true,
            _ => {}
        }
        at += len;
    }
    if at != rdata.end {
        return Err(Malformed);
    }
    Ok(())
}

/// Where a TSIG record sits in the response.
struct TsigRecord {
    start: usize,
    class_at: usize,
    rdata: Range<usize>,
    owner_is_root: bool,
    last: bool,
}

/// RFC 8945 §4.2, §5.3: the response's TSIG, checked as genreport checks it
/// against the well-known key.
fn check_tsig(
    msg: &[u8],
    rec: &TsigRecord,
    request_mac: &[u8; 32],
    now: u64,
    seen: &mut Seen,
) -> Result<(), Malformed> {
    let class = be16(msg, rec.class_at)?;
    let ttl = be32(msg, rec.class_at + 2)?;
    let (alg, mut at) = read_name(msg, rec.rdata.start, rec.rdata.end)?;
    let end = rec.rdata.end;
    let wrong_key = !rec.owner_is_root;
    let wrong_alg = !(alg.len() == 1 && alg[0].eq_ignore_ascii_case(b"hmac-sha256"));
    if end - at < 10 {
        return Err(Malformed);
    }
    let time_at = at;
    let signed = (u64::from(be16(msg, at)?) << 32) | u64::from(be32(msg, at + 2)?);
    let fudge = u64::from(be16(msg, at + 6)?);
    let maclen = usize::from(be16(msg, at + 8)?);
    at += 10;
    if end - at < maclen {
        return Err(Malformed);
    }
    let mac = &msg[at..at + maclen];
    at += maclen;
    if end - at < 6 {
        return Err(Malformed);
    }
    let original_id = [msg[at], msg[at + 1]];
    let error_at = at + 2;
    let error = be16(msg, error_at)?;
    let other_len = usize::from(be16(msg, error_at + 2)?);
    if error_at + 4 + other_len != end {
        return Err(Malformed);
    }

    let mut faults = Vec::new();
    if !rec.last {
        faults.push("tsig-not-last");
    }
    if class != CLASS_ANY {
        faults.push("tsig-bad-class");
    }
    if ttl != 0 {
        faults.push("tsig-bad-ttl");
    }
    if wrong_key {
        faults.push("tsig-wrong-key");
    }
    if wrong_alg {
        faults.push("tsig-wrong-alg");
    }
    if signed > now + fudge || signed + fudge < now {
        faults.push("tsig-bad-time");
    }
    if fudge == 0 {
        faults.push("tsig-bad-fudge");
    }
    if error == TSIG_BADTIME && other_len != 6 {
        faults.push("tsig-bad-other-len");
    }

    // RFC 8945 §4.3.2: request MAC, the response as it was before the TSIG
    // was added (original id, one record fewer), then the TSIG variables.
    let mut unsigned = msg[..rec.start].to_vec();
    let arcount = u16::from_be_bytes([unsigned[10], unsigned[11]]).wrapping_sub(1);
    unsigned[10..12].copy_from_slice(&arcount.to_be_bytes());
    seen.proxy = unsigned[..2] != original_id;
    unsigned[..2].copy_from_slice(&original_id);
    let mut covered = vec![0, 32];
    covered.extend_from_slice(request_mac);
    covered.extend_from_slice(&unsigned);
    covered.push(0); // the key name, `.`
    covered.extend_from_slice(&msg[rec.class_at..rec.class_at + 6]);
    covered.extend_from_slice(HMAC_SHA256_NAME);
    covered.extend_from_slice(&msg[time_at..time_at + 8]);
    covered.extend_from_slice(&msg[error_at..end]);
    let digest = sha256::hmac(&WELL_KNOWN_KEY, &covered);
    if (error == 0 || error == TSIG_BADTIME)
        && (wrong_key || wrong_alg || maclen != digest.len() || mac != digest)
    {
        faults.push("tsig-bad-sig");
    }
    seen.tsig_error = error;
    seen.tsig_faults = faults;
    Ok(())
}

// ---------------------------------------------------------------------------
// Running a test against a server
// ---------------------------------------------------------------------------

const TIMEOUT: Duration = Duration::from_secs(2);
/// genreport sends a UDP query three times before giving up.
const UDP_SENDS: usize = 3;

/// One test's result, with what the table shows beside the verdict.
struct Outcome {
    name: &'static str,
    group: Group,
    verdict: String,
    /// How the judged response came: `udp`, `tcp` or `udp>tcp`.
    path: &'static str,
    /// The judged response.
    response: Vec<u8>,
    /// TC was set in a response (the UDP one, for `udp>tcp`).
    truncated: bool,
}

impl Outcome {
    fn passed(&self) -> bool {
        passes(&self.verdict)
    }

    fn ancount(&self) -> u16 {
        Header::parse(&self.response).map_or(0, |h| h.counts[1])
    }

    fn has_rrsig(&self) -> bool {
        records(&self.response)
            .iter()
            .any(|(section, rr)| *section == ANSWER && rr.rtype == RRSIG)
    }

    /// The response's header in a line: rcode (with the OPT's upper bits),
    /// opcode, flags, section counts and size.
    fn summary(&self) -> String {
        let Some(h) = Header::parse(&self.response) else {
            return String::new();
        };
        let upper = records(&self.response)
            .iter()
            .find(|(section, rr)| *section == ADDITIONAL && rr.rtype == OPT)
            .map_or(0, |(_, rr)| u16::try_from(rr.ttl >> 24 << 4).unwrap());
        let rcode = rcode_text(h.rcode + upper).to_uppercase();
        let qr = self.response[2] & 0x80 != 0;
        let mut flags = String::new();
        for (set, flag) in [
            (qr, "qr"),
            (h.aa, "aa"),
            (h.tc, "tc"),
            (h.rd, "rd"),
            (h.ra, "ra"),
            (h.z, "z"),
            (h.ad, "ad"),
            (h.cd, "cd"),
        ] {
            if set {
                flags.push(' ');
                flags.push_str(flag);
            }
        }
        let [qd, an, ns, ar] = h.counts;
        format!(
            "{:<7} {rcode:<9} opcode={}{flags}  counts={qd}/{an}/{ns}/{ar}  {}B",
            self.path,
            h.opcode,
            self.response.len()
        )
    }
}

const ANSWER: usize = 0;
const ADDITIONAL: usize = 2;

/// The records of a response, each with its section (answer 0, authority
/// 1, additional 2), as far as they can be read.
fn records(msg: &[u8]) -> Vec<(usize, Record)> {
    let mut out = Vec::new();
    let Some(h) = Header::parse(msg) else {
        return out;
    };
    let mut pos = 12;
    for _ in 0..h.counts[0] {
        match read_name(msg, pos, msg.len()) {
            Ok((_, next)) => pos = next + 4,
            Err(Malformed) => return out,
        }
    }
    for (section, &count) in h.counts[1..].iter().enumerate() {
        for _ in 0..count {
            match read_record(msg, &mut pos) {
                Ok(rr) => out.push((section, rr)),
                Err(Malformed) => return out,
            }
        }
    }
    out
}

/// genreport's notion of a passing test: `ok`, then only informational tags.
fn passes(verdict: &str) -> bool {
    let mut tags = verdict.split(',');
    tags.next() == Some("ok") && tags.all(|t| matches!(t, "nsid" | "expire" | "cookie" | "subnet"))
}

fn tcp_failure(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "eof",
        io::ErrorKind::ConnectionReset => "reset",
        io::ErrorKind::ConnectionRefused => "connection-refused",
        io::ErrorKind::BrokenPipe => "pipe",
        _ if support::is_timeout(e) => "timeout",
        _ => "read",
    }
    .to_string()
}

fn exchange_udp(addr: SocketAddr, q: &Query) -> Option<Vec<u8>> {
    (0..UDP_SENDS).find_map(|_| support::exchange_udp(addr, &q.wire, q.id, TIMEOUT).ok())
}

fn run_probe(addr: SocketAddr, zone: &[u8], p: &Probe) -> Outcome {
    let now = unix_now();
    let q = build_query(p, zone, next_id(), now);
    let mut outcome = Outcome {
        name: p.name,
        group: p.group,
        verdict: String::new(),
        path: if p.tcp { "tcp" } else { "udp" },
        response: Vec::new(),
        truncated: false,
    };
    let mut earlier = Vec::new();
    if !p.tcp {
        let Some(response) = exchange_udp(addr, &q) else {
            outcome.verdict = "timeout".into();
            return outcome;
        };
        outcome.truncated = response.get(2).is_some_and(|b| b & 0x02 != 0);
        match judge(p, zone, &response, false, q.mac.as_ref(), now) {
            Judgement::Verdict(tags) => {
                outcome.verdict = tags.join(",");
                outcome.response = response;
                return outcome;
            }
            Judgement::Ignored(why) => {
                outcome.verdict = format!("timeout ({why})");
                outcome.response = response;
                return outcome;
            }
            Judgement::RetryOverTcp(tags) => {
                earlier = tags;
                outcome.path = "udp>tcp";
            }
        }
    }
    match support::exchange_tcp(addr, &q.wire, TIMEOUT) {
        Err(e) => {
            earlier.push(tcp_failure(&e));
            outcome.verdict = earlier.join(",");
        }
        Ok(response) => {
            outcome.truncated |= response.get(2).is_some_and(|b| b & 0x02 != 0);
            let tags = match judge(p, zone, &response, true, q.mac.as_ref(), now) {
                Judgement::Verdict(tags) => tags,
                other => vec![format!("{other:?}")],
            };
            earlier.extend(tags);
            outcome.verdict = earlier.join(",");
            outcome.response = response;
        }
    }
    outcome
}

fn render_table(title: &str, outcomes: &[Outcome]) -> String {
    let mut out = format!("\ngenreport on {title}\n");
    for o in outcomes {
        let group = format!("{:?}", o.group).to_uppercase();
        let _ = writeln!(
            out,
            "  {:<12} {group:<6} {:<32} {}",
            o.name,
            o.verdict,
            o.summary()
        );
    }
    for (name, why) in NOT_APPLICABLE {
        let _ = writeln!(out, "  {name:<12} {:<6} {why}", "NAMED");
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------
// The zones and the server
// ---------------------------------------------------------------------------

/// RFC 3597 §5 generic rdata, for the types bulwark has no text form for.
fn generic(rdata: &[u8]) -> String {
    format!("\\# {} {}", rdata.len(), hex(rdata))
}

fn char_string(s: &str) -> Vec<u8> {
    let mut out = vec![u8::try_from(s.len()).unwrap()];
    out.extend_from_slice(s.as_bytes());
    out
}

/// The apex records: one RRset of every type of the TYPE group that can
/// live at an apex, so those queries get answers, not only NODATA. Names in
/// rdata are outside the zone: the DNAME at the apex occludes every name
/// below it (RFC 6672 §2.3).
///
/// Left out: CNAME (no other data beside it, RFC 1034 §3.6.2), DS (the
/// parent's, RFC 4035 §2.4), NSEC3 (owned by hashed names) and NSEC3PARAM
/// (the signed zone uses NSEC, so the DNAME can stay); RRSIG, NSEC and
/// DNSKEY come from signing.
#[rustfmt::skip]
fn apex_records() -> Vec<(&'static str, String)> {
    let ns1 = wire_name("ns1.example.net.");
    let host = wire_name("hostmaster.example.net.");
    let g = generic;
    let cs = char_string;
    vec![
        ("A", "192.0.2.1".into()),
        ("NS", "ns1.example.net.".into()),
        ("MD", g(&ns1)),
        ("MF", g(&ns1)),
        ("MB", g(&ns1)),
        ("MG", g(&host)),
        ("MR", g(&host)),
        ("NULL", g(&[0, 1, 2, 3])),
        ("WKS", g(&[192, 0, 2, 1, 6, 0, 0, 0, 0x40, 0, 0, 0x04])), // TCP, ports 25 and 53
        ("PTR", "ns1.example.net.".into()),
        ("HINFO", "\"PDP-11\" \"UNIX\"".into()),
        ("MINFO", g(&[host.as_slice(), &host].concat())),
        ("MX", "10 ns1.example.net.".into()),
        ("TXT", "\"genreport\"".into()),
        ("RP", "hostmaster.example.net. ns1.example.net.".into()),
        ("AFSDB", "1 ns1.example.net.".into()),
        ("X25", g(&cs("311061700956"))),
        ("ISDN", g(&[cs("150862028003217"), cs("004")].concat())),
        ("RT", "10 ns1.example.net.".into()),
        ("NSAP", g(&unhex("47000580005a0000000001e133ffffff00016100"))),
        ("TYPE23", g(&ns1)), // NSAP-PTR: bulwark has no mnemonic for it
        ("SIG", g(&unhex("0001080200000e1065000000640000003039000102030405060708"))),
        ("KEY", g(&[1, 0, 3, 8, 1, 3])),
        ("PX", "10 ns1.example.net. hostmaster.example.net.".into()),
        ("GPOS", g(&[cs("-32.6882"), cs("116.8652"), cs("10.0")].concat())),
        ("AAAA", "2001:db8::1".into()),
        ("LOC", "51 30 12.748 N 0 7 39.611 W 0.00m 0.00m 0.00m 0.00m".into()),
        ("NXT", g(&[ns1.as_slice(), &[0x40, 0, 0, 1]].concat())),
        ("SRV", "0 0 53 ns1.example.net.".into()),
        ("NAPTR", "100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.net.".into()),
        ("KX", "10 ns1.example.net.".into()),
        ("CERT", "PGP 0 0 AAAA".into()),
        ("A6", g(&unhex("0020010db8000000000000000000000001"))),
        ("DNAME", "elsewhere.example.net.".into()),
        ("APL", g(&[0, 1, 24, 3, 192, 0, 2])), // 192.0.2.0/24
        ("SSHFP", "1 1 123456789abcdef67890123456789abcdef67890".into()),
        ("IPSECKEY", g(&[10, 1, 2, 192, 0, 2, 38, 1, 3])),
        ("DHCID", "AAIBY2/AuCccgoJbsaxcQc9TUapptP69lOjxfNuVAA2kjEA=".into()),
        ("TLSA", format!("3 1 1 {}", "0123456789abcdef".repeat(4))),
        ("SMIMEA", format!("3 1 1 {}", "0123456789abcdef".repeat(4))),
        ("HIP", g(&[4, 2, 0, 2, 1, 2, 3, 4, 1, 3])),
        ("CDS", format!("12345 8 2 {}", "49fd46e6c4b45c55".repeat(4))),
        ("CDNSKEY", "257 3 8 AwEAAQ==".into()),
        ("OPENPGPKEY", "AAAA".into()),
        ("SPF", g(&cs("v=spf1 -all"))),
        ("NID", g(&unhex("000a00144fffff20ee64"))),
        ("L32", g(&[0, 10, 10, 1, 2, 0])),
        ("L64", g(&unhex("000a20010db811401000"))),
        ("LP", g(&[&[0, 10], ns1.as_slice()].concat())),
        ("EUI48", "00-00-5e-00-53-2a".into()),
        ("EUI64", "00-00-5e-ef-10-00-00-2a".into()),
        ("URI", "10 1 \"ftp://ftp1.example.net/public\"".into()),
        ("CAA", "0 issue \"ca.example.net\"".into()),
        ("AVC", g(&cs("app-name:WOLFGANG|app-class:OAM"))),
        ("DOA", g(&[0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 2])), // no media type, two octets
        ("DLV", g(&unhex(&format!("30390802{}", "49fd46e6c4b45c55".repeat(4))))),
        ("TYPE1000", g(&[0xab, 0xcd])),
    ]
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn zone_text(origin: &str) -> String {
    let mut text = format!(
        "$ORIGIN {origin}\n$TTL 3600\n\
         @ IN SOA ns1.example.net. hostmaster.example.net. 1 7200 3600 1209600 300\n"
    );
    for (rtype, rdata) in apex_records() {
        let _ = writeln!(text, "@ IN {rtype} {rdata}");
    }
    text
}

/// The TYPE tests that can only get NODATA from `zone` (see [`apex_records`]).
fn nodata_types(signed: bool) -> Vec<&'static str> {
    let mut v = vec!["CNAME", "DS", "NSEC3", "NSEC3PARAM"];
    if !signed {
        v.extend(["RRSIG", "NSEC", "DNSKEY"]);
    }
    v
}

fn bulwark_cli(args: &[&str]) {
    let out = Command::new(support::bulwark_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bulwark");
    assert!(
        out.status.success(),
        "bulwark {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The server's configuration: an NSID so the NSID tests see one, and the
/// well-known TSIG key genreport's `dnswkk` signs with.
fn write_config(dir: &Path) -> std::path::PathBuf {
    let conf = dir.join("bulwark.toml");
    std::fs::write(
        &conf,
        format!(
            "[server]\nthreads = 1\nnsid = \"genreport\"\n\n\
             [tsig_key.wellknown]\nname = \".\"\nalgorithm = \"hmac-sha256\"\n\
             secret = \"{WELL_KNOWN_KEY_BASE64}\"\n"
        ),
    )
    .unwrap();
    conf
}

fn run_genreport(origin: &str, signed: bool) {
    let dir = support::temp_dir("genreport-");
    let unsigned = dir.path().join("zone.db");
    std::fs::write(&unsigned, zone_text(origin)).unwrap();
    let served = if signed {
        // RSA-2048 KSK and ZSK: a DNSKEY RRset of about 550 octets, more
        // than `edns@512` lets through, so that test sees truncation.
        let keys = dir.path().join("keys");
        let keys_arg = keys.to_str().unwrap();
        for role in ["ksk", "zsk"] {
            bulwark_cli(&[
                "keys",
                "generate",
                origin,
                "-a",
                "RSASHA256",
                "-b",
                "2048",
                "--role",
                role,
                "-K",
                keys_arg,
            ]);
        }
        let out = dir.path().join("zone.db.signed");
        bulwark_cli(&[
            "sign",
            origin,
            unsigned.to_str().unwrap(),
            "-K",
            keys_arg,
            "-o",
            out.to_str().unwrap(),
        ]);
        out
    } else {
        unsigned
    };
    let conf = write_config(dir.path());
    let server = support::spawn_bulwark(
        &[(origin, served.as_path())],
        &["--config", conf.to_str().unwrap()],
    );
    let zone = wire_name(origin);
    let outcomes: Vec<Outcome> = all_probes()
        .iter()
        .map(|p| run_probe(server.addr, &zone, p))
        .collect();
    let title = format!(
        "{origin} ({})",
        if signed {
            "signed: RSASHA256 KSK+ZSK, NSEC"
        } else {
            "unsigned"
        }
    );
    let table = render_table(&title, &outcomes);
    println!("{table}");

    let mut problems = Vec::new();
    for o in outcomes.iter().filter(|o| !o.passed()) {
        problems.push(format!(
            "{}: {} (response {})",
            o.name,
            o.verdict,
            hex(&o.response)
        ));
    }
    // Beyond genreport: the tests exercised what they are meant to.
    let by_name = |name: &str| outcomes.iter().find(|o| o.name == name).unwrap();
    let nodata = nodata_types(signed);
    for &(name, _) in TYPE_TESTS {
        let o = by_name(name);
        if !nodata.contains(&name) && o.ancount() == 0 {
            problems.push(format!(
                "{name}: the zone holds {name} at its apex, no answer came"
            ));
        }
    }
    for name in ["ednsnsid", "optlist"] {
        if !by_name(name).verdict.split(',').any(|t| t == "nsid") {
            problems.push(format!("{name}: NSID asked and configured, none came"));
        }
    }
    for name in ["ednscookie", "optlist", "bind11", "dig11"] {
        if !by_name(name).verdict.split(',').any(|t| t == "cookie") {
            problems.push(format!("{name}: no server cookie echoing the client's"));
        }
    }
    if signed {
        if !by_name("edns@512").truncated {
            problems.push("edns@512: the DNSKEY RRset was not truncated at 512 octets".into());
        }
        let tcp = by_name("ednstcp");
        if tcp.truncated || tcp.ancount() < 3 {
            problems.push(format!(
                "ednstcp: over TCP the DNSKEY RRset and its RRSIG come whole ({})",
                tcp.summary()
            ));
        }
        for name in ["do", "docd", "ednstcp"] {
            if !by_name(name).has_rrsig() {
                problems.push(format!("{name}: DO set, no RRSIG in the answer"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "genreport finds fault with bulwark on {title}:\n  {}\n{table}\nserver log:\n{}",
        problems.join("\n  "),
        server.process.log()
    );
}

#[test]
fn every_genreport_test_passes_on_an_unsigned_zone() {
    run_genreport("unsigned.test.", false);
}

#[test]
fn every_genreport_test_passes_on_a_signed_zone() {
    run_genreport("signed.test.", true);
}

// ---------------------------------------------------------------------------
// The rules themselves, on byte literals
// ---------------------------------------------------------------------------

fn probe(name: &str) -> Probe {
    *PROBES.iter().find(|p| p.name == name).unwrap()
}

fn verdict(p: &Probe, msg: &[u8]) -> String {
    match judge(p, &wire_name("t."), msg, false, None, 0) {
        Judgement::Verdict(tags) => tags.join(","),
        other => format!("{other:?}"),
    }
}

/// `t. SOA IN` as a question, then one SOA record for `t.` pointing back
/// to it: the smallest authoritative answer.
const SOA_QUESTION: &[u8] = &[1, b't', 0, 0, 6, 0, 1];
const SOA_ANSWER: &[u8] = &[
    0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 60, 0, 22, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
    0, 0, 0, 1,
];

#[test]
fn notimp_header_echoing_nothing_passes_opcodeflg_and_copied_flags_fail() {
    let cases: &[(&[u8], &str)] = &[
        // id, QR + opcode 15, NOTIMP, nothing else.
        (&[0, 1, 0xf8, 0x04, 0, 0, 0, 0, 0, 0, 0, 0], "ok"),
        // The query's AA, RD, RA, Z, AD and CD copied back.
        (
            &[0, 1, 0xfd, 0xf4, 0, 0, 0, 0, 0, 0, 0, 0],
            "aa,ra,rd,ad,cd,z",
        ),
        // Opcode answered as QUERY, FORMERR.
        (&[0, 1, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0], "query,formerr"),
        // A question echoed.
        (
            &[
                0, 1, 0xf8, 0x04, 0, 1, 0, 0, 0, 0, 0, 0, 1, b't', 0, 0, 6, 0, 1,
            ],
            "non-empty-question-section,malformed",
        ),
    ];
    for (msg, want) in cases {
        assert_eq!(verdict(&probe("opcodeflg"), msg), *want, "{}", hex(msg));
    }
    // TC over UDP sends genreport to TCP.
    let tc = [0, 1, 0xfa, 0x04, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        judge(&probe("opcode"), &wire_name("t."), &tc, false, None, 0),
        Judgement::RetryOverTcp(vec![])
    );
}

#[test]
fn soa_answers_are_judged_by_aa_soa_opt_and_rcode() {
    let header = |b2: u8, b3: u8, an: u8, ar: u8| vec![0, 1, b2, b3, 0, 1, 0, an, 0, 0, 0, ar];
    let answer = |b2, b3| {
        [
            header(b2, b3, 1, 0),
            SOA_QUESTION.to_vec(),
            SOA_ANSWER.to_vec(),
        ]
        .concat()
    };
    let opt = |ttl: [u8; 4]| [&[0u8, 0, 41, 16, 0][..], &ttl, &[0, 0]].concat();
    let with_opt = |b2, b3, ttl| {
        [
            header(b2, b3, 1, 1),
            SOA_QUESTION.to_vec(),
            SOA_ANSWER.to_vec(),
            opt(ttl),
        ]
        .concat()
    };
    let nodata = [header(0x84, 0, 0, 0), SOA_QUESTION.to_vec()].concat();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("dns", answer(0x84, 0), "ok"),
        ("dns", answer(0x80, 0), "noaa"),
        ("dns", nodata, "nosoa"),
        ("dns", answer(0x84, 0x40), "z"),
        ("dns", with_opt(0x84, 0, [0, 0, 0, 0]), "opt"),
        ("rd", answer(0x84, 0), "nord"),
        ("cd", answer(0x84, 0x10), "ok"),
        ("dns", answer(0x84, 0x10), "cd"),
        ("edns", answer(0x84, 0), "noopt"),
        ("edns", with_opt(0x84, 0, [0, 0, 0, 0]), "ok"),
        ("ednsflags", with_opt(0x84, 0, [0, 0, 0, 0x80]), "mbz"),
        ("edns", with_opt(0x84, 0, [0, 1, 0, 0]), "version-not-zero"),
        // BADVERS is 16: upper bits 1 in the OPT TTL, lower bits 0.
        (
            "edns1",
            [
                header(0x84, 0, 0, 1),
                SOA_QUESTION.to_vec(),
                opt([1, 0, 0, 0]),
            ]
            .concat(),
            "ok",
        ),
        (
            "edns1",
            with_opt(0x84, 0, [0, 0, 0, 0]),
            "noerror,badversion,soa",
        ),
        ("edns1", with_opt(0x84, 0, [1, 0, 0, 0]), "soa"),
    ];
    for (name, msg, want) in cases {
        assert_eq!(verdict(&probe(name), &msg), want, "{name}: {}", hex(&msg));
    }
}

#[test]
fn tsig_with_the_well_known_key_round_trips() {
    // A response signed as RFC 8945 §5.3 says verifies; one bit off does not.
    let p = probe("dnswkk");
    let now = 1_700_000_000;
    let request = build_query(&p, &wire_name("t."), 7, now);
    let request_mac = request.mac.unwrap();
    let body = [
        vec![0, 7, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 0],
        SOA_QUESTION.to_vec(),
        SOA_ANSWER.to_vec(),
    ]
    .concat();
    let mut covered = vec![0, 32];
    covered.extend_from_slice(&request_mac);
    covered.extend_from_slice(&body);
    covered.extend_from_slice(&[0, 0, 255, 0, 0, 0, 0]);
    covered.extend_from_slice(HMAC_SHA256_NAME);
    covered.extend_from_slice(&time48(now));
    covered.extend_from_slice(&[1, 44, 0, 0, 0, 0]);
    let mac = sha256::hmac(&WELL_KNOWN_KEY, &covered);
    let mut rdata = HMAC_SHA256_NAME.to_vec();
    rdata.extend_from_slice(&time48(now));
    rdata.extend_from_slice(&[1, 44, 0, 32]);
    rdata.extend_from_slice(&mac);
    rdata.extend_from_slice(&[0, 7, 0, 0, 0, 0]);
    let mut signed = body.clone();
    signed[11] = 1;
    signed.extend_from_slice(&[
        0,
        0,
        250,
        0,
        255,
        0,
        0,
        0,
        0,
        0,
        u8::try_from(rdata.len()).unwrap(),
    ]);
    signed.extend_from_slice(&rdata);
    let judged = |msg: &[u8]| match judge(&p, &wire_name("t."), msg, false, Some(&request_mac), now)
    {
        Judgement::Verdict(tags) => tags.join(","),
        other => format!("{other:?}"),
    };
    assert_eq!(judged(&signed), "ok");
    let mut flipped = signed.clone();
    let last = flipped.len() - 7;
    flipped[last] ^= 1;
    assert_eq!(judged(&flipped), "tsig-bad-sig");
    assert_eq!(judged(&body), "notsig");
}

/// HMAC-SHA256 (RFC 2104) from RustCrypto, an implementation independent of
/// the aws-lc one bulwark signs with, so bulwark's crypto is not its own judge.
mod sha256 {
    use hmac::{Hmac, Mac};

    pub fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<sha2::Sha256>>::new_from_slice(key).expect("any key length");
        mac.update(data);
        mac.finalize().into_bytes().into()
    }
}
