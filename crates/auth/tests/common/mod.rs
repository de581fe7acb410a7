//! Shared test support: zones from text, queries built and responses read with
//! hickory-proto (an independent implementation of the wire format).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Transport};
use bulwark_proto::Name;
use bulwark_zone::{Zone, ZoneSet};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name as HName, RData, Record, RecordType};

pub fn name(s: &str) -> Name {
    Name::from_presentation(s.as_bytes(), None).unwrap()
}

/// A zone from master-file text (`$ORIGIN` is `origin`).
pub fn zone(origin: &str, text: &str) -> Arc<Zone> {
    let origin = name(origin);
    let records = bulwark_zone::parse_str(text, &origin, "test").unwrap();
    let (zone, _warnings) = Zone::build(origin, records).unwrap();
    Arc::new(zone)
}

pub fn zoneset(zones: &[Arc<Zone>]) -> ZoneSet {
    ZoneSet::new(zones.to_vec())
}

/// The zone most tests use.
pub const EXAMPLE: &str = r#"
$TTL 3600
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ NS ns1
@ NS ns2.other.net.
@ MX 10 mail
@ MX 20 mail.other.net.
@ A 192.0.2.1
@ TXT "hello"
ns1 A 192.0.2.53
ns1 AAAA 2001:db8::53
mail A 192.0.2.25
www CNAME web
web A 192.0.2.80
chain CNAME www
ext CNAME www.example.org.
loop1 CNAME loop2
loop2 CNAME loop1
dangling CNAME nowhere
*.wild A 192.0.2.7
*.wild TXT "wild"
*.wc CNAME web
a.b.ent A 192.0.2.9
*.ent A 192.0.2.10
sub NS ns.sub
sub NS ns.elsewhere.net.
ns.sub A 192.0.2.200
tosub CNAME www.sub
dn DNAME example.org.
dn2 DNAME target.example.com.
x.target A 192.0.2.11
multi TXT "t"
multi AAAA 2001:db8::1
multi A 192.0.2.1
multi2 MX 5 mail
multi2 HINFO "a" "b"
"#;

pub fn example() -> Arc<Zone> {
    zone("example.com.", EXAMPLE)
}

/// A query message for `qname`/`qtype`, RD set, no EDNS.
pub fn query(qname: &str, qtype: RecordType) -> Message {
    let mut m = Message::new();
    m.set_id(0x1234)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true);
    m.add_query(Query::query(HName::from_ascii(qname).unwrap(), qtype));
    m
}

pub fn with_edns(mut m: Message, payload: u16, dnssec_ok: bool) -> Message {
    let mut e = Edns::new();
    e.set_max_payload(payload);
    e.set_dnssec_ok(dnssec_ok);
    m.set_edns(e);
    m
}

pub struct Answered {
    /// Never `Divert`: these helpers answer queries, they do not divert them.
    pub outcome: AnswerOutcome<'static>,
    pub wire: Vec<u8>,
}

impl Answered {
    pub fn msg(&self) -> Message {
        Message::from_vec(&self.wire).expect("response parses")
    }
}

pub fn answer_with(
    config: AnswerConfig,
    zones: &ZoneSet,
    transport: Transport,
    wire: &[u8],
) -> Answered {
    let mut a = Answerer::new(Arc::new(config));
    let mut out = Vec::new();
    let outcome = match a.answer(zones, transport, wire, &mut out) {
        AnswerOutcome::Respond { rcode, truncated } => AnswerOutcome::Respond { rcode, truncated },
        AnswerOutcome::Drop => AnswerOutcome::Drop,
        AnswerOutcome::Denied => AnswerOutcome::Denied,
        AnswerOutcome::Divert(d, _) => panic!("diverted to {d:?}"),
        AnswerOutcome::Recurse(_) => panic!("recursion is off"),
    };
    Answered { outcome, wire: out }
}

pub fn ask(zones: &ZoneSet, m: &Message) -> Message {
    answer_with(
        AnswerConfig::default(),
        zones,
        Transport::Udp,
        &m.to_vec().unwrap(),
    )
    .msg()
}

pub fn ask_example(qname: &str, qtype: RecordType) -> Message {
    ask(&zoneset(&[example()]), &query(qname, qtype))
}

/// Records of a section as (owner, type, ttl, rdata text) with lowercased owners.
pub fn rows(records: &[Record]) -> Vec<(String, RecordType, u32, String)> {
    records
        .iter()
        .map(|r| {
            (
                r.name().to_ascii().to_lowercase(),
                r.record_type(),
                r.ttl(),
                r.data().map(rdata_text).unwrap_or_default(),
            )
        })
        .collect()
}

fn rdata_text(d: &RData) -> String {
    d.to_string()
}

pub fn types(records: &[Record]) -> Vec<RecordType> {
    records.iter().map(|r| r.record_type()).collect()
}

pub fn class_of(r: &Record) -> DNSClass {
    r.dns_class()
}
