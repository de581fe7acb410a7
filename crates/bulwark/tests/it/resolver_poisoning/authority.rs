//! Small authoritative DNS servers for the poisoning tests: messages
//! written by hand in wire format (no compression), a few zones answered as
//! an honest server would, and a UDP server on port 53 of an address of the
//! namespace that runs any handler, honest or not, for each query.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub(super) const TYPE_A: u16 = 1;
pub(super) const TYPE_NS: u16 = 2;
pub(super) const TYPE_CNAME: u16 = 5;
pub(super) const TYPE_SOA: u16 = 6;
pub(super) const TYPE_AAAA: u16 = 28;
pub(super) const CLASS_IN: u16 = 1;
pub(super) const CLASS_CH: u16 = 3;
pub(super) const FLAG_QR: u16 = 0x8000;
pub(super) const FLAG_AA: u16 = 0x0400;
pub(super) const RCODE_NXDOMAIN: u16 = 3;
pub(super) const RCODE_REFUSED: u16 = 5;

// ---------------------------------------------------------------------------
// Wire format, by hand
// ---------------------------------------------------------------------------

/// `name` (absolute, dotted) as uncompressed wire labels.
pub(super) fn wire_name(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        out.push(u8::try_from(label.len()).unwrap());
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// A question section entry: name, type, class.
pub(super) fn question(qname: &str, qtype: u16, qclass: u16) -> Vec<u8> {
    let mut out = wire_name(qname);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&qclass.to_be_bytes());
    out
}

/// One resource record; `owner` absolute and lowercase.
#[derive(Clone, Debug)]
pub(super) struct Rr {
    pub(super) owner: String,
    pub(super) rtype: u16,
    pub(super) rdata: Vec<u8>,
}

impl Rr {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend(wire_name(&self.owner));
        out.extend_from_slice(&self.rtype.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&3600u32.to_be_bytes());
        out.extend_from_slice(&u16::try_from(self.rdata.len()).unwrap().to_be_bytes());
        out.extend_from_slice(&self.rdata);
    }

    /// The name in NS or CNAME rdata.
    pub(super) fn target(&self) -> String {
        let mut labels = Vec::new();
        let mut at = 0;
        while let Some(&len) = self.rdata.get(at) {
            if len == 0 {
                break;
            }
            let label = &self.rdata[at + 1..at + 1 + usize::from(len)];
            labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
            at += 1 + usize::from(len);
        }
        format!("{}.", labels.join("."))
    }
}

pub(super) fn a(owner: &str, ip: &str) -> Rr {
    let ip: Ipv4Addr = ip.parse().unwrap();
    Rr {
        owner: owner.to_string(),
        rtype: TYPE_A,
        rdata: ip.octets().to_vec(),
    }
}

pub(super) fn ns(owner: &str, target: &str) -> Rr {
    Rr {
        owner: owner.to_string(),
        rtype: TYPE_NS,
        rdata: wire_name(target),
    }
}

pub(super) fn cname(owner: &str, target: &str) -> Rr {
    Rr {
        owner: owner.to_string(),
        rtype: TYPE_CNAME,
        rdata: wire_name(target),
    }
}

pub(super) fn soa(origin: &str) -> Rr {
    let mut rdata = wire_name(&format!("ns.{origin}"));
    rdata.extend(wire_name(&format!("admin.{origin}")));
    for value in [1u32, 3600, 600, 86400, 300] {
        rdata.extend_from_slice(&value.to_be_bytes());
    }
    Rr {
        owner: origin.to_string(),
        rtype: TYPE_SOA,
        rdata,
    }
}

/// A response, written out with [`Reply::encode`].
#[derive(Clone, Debug, Default)]
pub(super) struct Reply {
    pub(super) id: u16,
    /// QR, AA and RCODE bits of the header's second and third octets.
    pub(super) flags: u16,
    /// The question section as sent (empty: QDCOUNT 0).
    pub(super) question: Vec<u8>,
    pub(super) answer: Vec<Rr>,
    pub(super) authority: Vec<Rr>,
    pub(super) additional: Vec<Rr>,
}

impl Reply {
    pub(super) fn encode(&self) -> Vec<u8> {
        let count = |n: usize| u16::try_from(n).unwrap().to_be_bytes();
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.flags.to_be_bytes());
        out.extend_from_slice(&count(usize::from(!self.question.is_empty())));
        out.extend_from_slice(&count(self.answer.len()));
        out.extend_from_slice(&count(self.authority.len()));
        out.extend_from_slice(&count(self.additional.len()));
        out.extend_from_slice(&self.question);
        for rr in self
            .answer
            .iter()
            .chain(&self.authority)
            .chain(&self.additional)
        {
            rr.encode(&mut out);
        }
        out
    }
}

/// What a server read from a query.
#[derive(Clone, Debug)]
pub(super) struct Query {
    pub(super) id: u16,
    /// Lowercase, absolute.
    pub(super) qname: String,
    pub(super) qtype: u16,
    /// The question section exactly as received (its case echoed back).
    pub(super) raw_question: Vec<u8>,
}

impl Query {
    pub(super) fn parse(msg: &[u8]) -> Option<Query> {
        let id = u16::from_be_bytes([*msg.first()?, *msg.get(1)?]);
        if msg.get(2)? & 0x80 != 0 || u16::from_be_bytes([*msg.get(4)?, *msg.get(5)?]) != 1 {
            return None;
        }
        let mut at = 12;
        let mut labels = Vec::new();
        loop {
            let len = usize::from(*msg.get(at)?);
            if len == 0 {
                break;
            }
            if len > 63 {
                return None;
            }
            let label = msg.get(at + 1..at + 1 + len)?;
            labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
            at += 1 + len;
        }
        let end = at + 5;
        let qtype = u16::from_be_bytes([*msg.get(at + 1)?, *msg.get(at + 2)?]);
        Some(Query {
            id,
            qname: format!("{}.", labels.join(".")),
            qtype,
            raw_question: msg.get(12..end)?.to_vec(),
        })
    }

    /// A response to this query with its ID and question.
    pub(super) fn reply(&self, flags: u16) -> Reply {
        Reply {
            id: self.id,
            flags: FLAG_QR | flags,
            question: self.raw_question.clone(),
            ..Reply::default()
        }
    }
}

// ---------------------------------------------------------------------------
// Authoritative data and answers
// ---------------------------------------------------------------------------

/// `name` is `zone` or below it (both lowercase, absolute).
pub(super) fn at_or_below(name: &str, zone: &str) -> bool {
    zone == "." || name == zone || name.ends_with(&format!(".{zone}"))
}

/// One zone: its records, a SOA at the apex added.
pub(super) struct Zone {
    pub(super) origin: String,
    pub(super) records: Vec<Rr>,
}

impl Zone {
    pub(super) fn new(origin: &str, mut records: Vec<Rr>) -> Zone {
        records.push(soa(origin));
        Zone {
            origin: origin.to_string(),
            records,
        }
    }

    /// The A records of the zone for the targets of `ns`: glue.
    pub(super) fn glue(&self, ns: &[Rr]) -> Vec<Rr> {
        let targets: Vec<String> = ns.iter().map(Rr::target).collect();
        self.records
            .iter()
            .filter(|r| r.rtype == TYPE_A && targets.contains(&r.owner))
            .cloned()
            .collect()
    }
}

/// What an honest server of `zones` answers to `q` (RFC 1034 §4.3.2,
/// without wildcards): a referral at a zone cut, the data, a CNAME, NODATA
/// or NXDOMAIN; REFUSED outside its zones.
pub(super) fn honest_answer(zones: &[Zone], q: &Query) -> Reply {
    let Some(zone) = zones
        .iter()
        .filter(|z| at_or_below(&q.qname, &z.origin))
        .max_by_key(|z| z.origin.len())
    else {
        return q.reply(RCODE_REFUSED);
    };
    let cut = zone
        .records
        .iter()
        .filter(|r| r.rtype == TYPE_NS && r.owner != zone.origin && at_or_below(&q.qname, &r.owner))
        .min_by_key(|r| r.owner.len());
    if let Some(cut) = cut {
        let mut reply = q.reply(0);
        reply.authority = zone
            .records
            .iter()
            .filter(|r| r.rtype == TYPE_NS && r.owner == cut.owner)
            .cloned()
            .collect();
        reply.additional = zone.glue(&reply.authority);
        return reply;
    }
    let at_name: Vec<&Rr> = zone.records.iter().filter(|r| r.owner == q.qname).collect();
    let mut reply = q.reply(FLAG_AA);
    let data: Vec<Rr> = at_name
        .iter()
        .filter(|r| r.rtype == q.qtype)
        .map(|r| (*r).clone())
        .collect();
    if !data.is_empty() {
        if q.qtype == TYPE_NS {
            reply.additional = zone.glue(&data);
        }
        reply.answer = data;
        return reply;
    }
    if let Some(alias) = at_name.iter().find(|r| r.rtype == TYPE_CNAME) {
        reply.answer = vec![(*alias).clone()];
        return reply;
    }
    let exists = zone.records.iter().any(|r| at_or_below(&r.owner, &q.qname));
    if !exists {
        reply.flags |= RCODE_NXDOMAIN;
    }
    reply.authority = vec![soa(&zone.origin)];
    reply
}

// ---------------------------------------------------------------------------
// Servers in the namespace
// ---------------------------------------------------------------------------

/// A query a server received.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) query: Query,
}

/// What a server does with each query: it may send anything, any number of
/// times, from its socket (or from others it holds).
pub(super) type Handler = Box<dyn FnMut(&UdpSocket, &Query, SocketAddr) + Send>;

/// A UDP server on port 53 of an address added to the namespace's `lo`,
/// running `handler` on a thread of its own until dropped.
pub(super) struct FakeServer {
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub(super) fn start(ip: Ipv4Addr, mut handler: Handler) -> FakeServer {
        let socket = bind(ip, 53);
        // How often the thread looks at `stop`: a poll interval, not a wait
        // anything depends on.
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
            std::thread::Builder::new()
                .name(format!("server {ip}"))
                .spawn(move || {
                    let mut buf = [0u8; 4096];
                    while !stop.load(Ordering::Relaxed) {
                        let Ok((n, from)) = socket.recv_from(&mut buf) else {
                            continue;
                        };
                        let Some(query) = Query::parse(&buf[..n]) else {
                            continue;
                        };
                        seen.lock().unwrap().push(Seen {
                            query: query.clone(),
                        });
                        handler(&socket, &query, from);
                    }
                })
                .unwrap()
        };
        FakeServer {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// An honest server of `zones`.
    pub(super) fn honest(ip: Ipv4Addr, zones: Vec<Zone>) -> FakeServer {
        FakeServer::start(
            ip,
            Box::new(move |socket, q, from| {
                let _ = socket.send_to(&honest_answer(&zones, q).encode(), from);
            }),
        )
    }

    pub(super) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Whether a query for `qname` came (any type).
    pub(super) fn was_asked(&self, qname: &str) -> bool {
        self.seen().iter().any(|s| s.query.qname == qname)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A UDP socket on `ip:port`, the address added to `lo` first.
pub(super) fn bind(ip: Ipv4Addr, port: u16) -> UdpSocket {
    bulwark_testkit::netns::add_address(IpAddr::V4(ip)).expect("add an address to lo");
    UdpSocket::bind((ip, port)).unwrap_or_else(|e| panic!("bind {ip}:{port}: {e}"))
}
