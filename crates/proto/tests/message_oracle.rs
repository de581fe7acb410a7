//! Differential test against hickory-proto 0.24: messages we build read the same
//! in hickory, and messages hickory builds (with its compression) read the same in ours.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use bulwark_proto::message::{EdnsOption, MessageBuilder, MessageView, OptRecord, Section};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};
use hickory_proto::op::{Edns as HEdns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption as HOption};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, MX, NS, NULL, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{DNSClass, Name as HName, RData, Record as HRecord, RecordType};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, BinEncoder, Restrict};
use proptest::prelude::*;

/// Owner, type, class, TTL, rdata.
type RecordContent = (Vec<u8>, u16, u16, u32, Vec<u8>);
/// Payload size, version, DO, options sorted by code.
type EdnsContent = (u16, u8, bool, Vec<(u16, Vec<u8>)>);

/// What both libraries must agree on. Names are lowercased wire bytes except the
/// question's, which must keep its case.
#[derive(Debug, PartialEq, Eq)]
struct Content {
    id: u16,
    flags: [bool; 7], // qr aa tc rd ra ad cd
    opcode: u8,
    rcode: u16,
    question: Option<(Vec<u8>, u16, u16)>,
    sections: [Vec<RecordContent>; 3],
    edns: Option<EdnsContent>,
}

fn hname(s: &str) -> HName {
    HName::from_str(s).unwrap()
}

fn hname_wire(n: &HName) -> Vec<u8> {
    let mut v = Vec::new();
    let mut e = BinEncoder::new(&mut v);
    e.set_canonical_names(true);
    n.emit(&mut e).unwrap();
    v
}

/// Rdata in uncompressed form, names lowercased (hickory lowercases some in
/// canonical mode, so both sides are normalised).
fn hickory_rdata(rd: &RData) -> Vec<u8> {
    let mut v = Vec::new();
    let mut e = BinEncoder::new(&mut v);
    e.set_canonical_names(true);
    rd.emit(&mut e).unwrap();
    lower_names(rd.record_type().into(), &v)
}

fn lower_names(rtype: u16, rdata: &[u8]) -> Vec<u8> {
    match Rtype(rtype) {
        Rtype::NS | Rtype::CNAME | Rtype::PTR => rdata.to_ascii_lowercase(),
        Rtype::MX => [&rdata[..2], &rdata[2..].to_ascii_lowercase()].concat(),
        Rtype::SRV => [&rdata[..6], &rdata[6..].to_ascii_lowercase()].concat(),
        Rtype::SOA => {
            let cut = rdata.len() - 20;
            [&rdata[..cut].to_ascii_lowercase(), &rdata[cut..]].concat()
        }
        _ => rdata.to_vec(),
    }
}

/// Our side: decompress names in rdata. SRV too, because hickory compresses its
/// target (RFC 3597 §4 lets receivers decompress it; we never compress it).
fn our_rdata(msg: &[u8], rtype: Rtype, rdata_offset: usize, rdata: &[u8]) -> Vec<u8> {
    let mut r = Reader::at(msg, rdata_offset);
    let name = |r: &mut Reader<'_>| Name::read(r).unwrap().to_lowercase().as_wire().to_vec();
    match rtype {
        Rtype::NS | Rtype::CNAME | Rtype::PTR => name(&mut r),
        Rtype::MX => [r.read_bytes(2).unwrap().to_vec(), name(&mut r)].concat(),
        Rtype::SRV => [r.read_bytes(6).unwrap().to_vec(), name(&mut r)].concat(),
        Rtype::SOA => {
            let m = name(&mut r);
            let rn = name(&mut r);
            [m, rn, r.read_bytes(20).unwrap().to_vec()].concat()
        }
        _ => rdata.to_vec(),
    }
}

fn hickory_content(m: &Message) -> Content {
    let h = m.header();
    let rec = |r: &HRecord| {
        (
            hname_wire(&r.name().to_lowercase()),
            u16::from(r.record_type()),
            u16::from(r.dns_class()),
            r.ttl(),
            r.data().map(hickory_rdata).unwrap_or_default(),
        )
    };
    Content {
        id: h.id(),
        flags: [
            h.message_type() == MessageType::Response,
            h.authoritative(),
            h.truncated(),
            h.recursion_desired(),
            h.recursion_available(),
            h.authentic_data(),
            h.checking_disabled(),
        ],
        opcode: u8::from(h.op_code()),
        rcode: u16::from(m.response_code()),
        question: m.query().map(|q| {
            (
                hname_wire(q.name()),
                u16::from(q.query_type()),
                u16::from(q.query_class()),
            )
        }),
        sections: [
            m.answers().iter().map(rec).collect(),
            m.name_servers().iter().map(rec).collect(),
            m.additionals().iter().map(rec).collect(),
        ],
        edns: m.extensions().as_ref().map(|e| {
            let mut opts: Vec<(u16, Vec<u8>)> = e
                .options()
                .as_ref()
                .iter()
                .map(|(code, o)| (u16::from(*code), Vec::<u8>::try_from(o).unwrap()))
                .collect();
            opts.sort();
            (e.max_payload(), e.version(), e.dnssec_ok(), opts)
        }),
    }
}

fn our_content(v: &MessageView<'_>) -> Content {
    let h = v.header();
    let f = h.flags;
    let msg = v.as_bytes();
    let section = |s: Section| {
        v.records(s)
            .filter(|r| r.rtype != Rtype::OPT)
            .map(|r| {
                (
                    r.owner.to_lowercase().as_wire().to_vec(),
                    r.rtype.0,
                    r.class.0,
                    r.ttl,
                    our_rdata(msg, r.rtype, r.rdata_offset, r.rdata),
                )
            })
            .collect()
    };
    Content {
        id: h.id,
        flags: [f.qr, f.aa, f.tc, f.rd, f.ra, f.ad, f.cd],
        opcode: h.opcode.value(),
        rcode: v.rcode().value(),
        question: v
            .question()
            .map(|q| (q.qname.as_wire().to_vec(), q.qtype.0, q.qclass.0)),
        sections: [
            section(Section::Answer),
            section(Section::Authority),
            section(Section::Additional),
        ],
        edns: v.edns().map(|e| {
            let mut opts: Vec<(u16, Vec<u8>)> = e
                .options()
                .map(|o| {
                    let mut w = Vec::new();
                    o.write(&mut w);
                    (o.code(), w[4..].to_vec())
                })
                .collect();
            opts.sort();
            (e.udp_payload_size, e.version, e.dnssec_ok, opts)
        }),
    }
}

/// The records used in both directions: (section, owner, type, ttl, hickory rdata).
fn records() -> Vec<(usize, &'static str, RData)> {
    let soa = SOA::new(
        hname("ns1.Example.com."),
        hname("hostmaster.example.com."),
        2024010101,
        7200,
        3600,
        1209600,
        300,
    );
    vec![
        (
            0,
            "www.Example.com.",
            RData::CNAME(CNAME(hname("web.example.com."))),
        ),
        (
            0,
            "web.example.com.",
            RData::A(A(Ipv4Addr::new(192, 0, 2, 1))),
        ),
        (
            0,
            "web.example.com.",
            RData::AAAA(AAAA(Ipv6Addr::LOCALHOST)),
        ),
        (
            0,
            "example.com.",
            RData::MX(MX::new(10, hname("mail.example.com."))),
        ),
        (
            0,
            "example.com.",
            RData::TXT(TXT::new(vec!["v=spf1 -all".into(), "x".into()])),
        ),
        (
            0,
            "_sip._udp.example.com.",
            RData::SRV(SRV::new(1, 2, 5060, hname("sip.example.com."))),
        ),
        (
            0,
            "1.2.0.192.in-addr.arpa.",
            RData::PTR(PTR(hname("web.example.com."))),
        ),
        (
            0,
            "odd.example.com.",
            RData::Unknown {
                code: RecordType::Unknown(65280),
                rdata: NULL::with(vec![1, 2, 3, 0xc0, 12]),
            },
        ),
        (1, "example.com.", RData::NS(NS(hname("ns1.example.com.")))),
        (1, "example.com.", RData::NS(NS(hname("NS2.example.net.")))),
        (1, "example.com.", RData::SOA(soa)),
        (
            2,
            "ns1.example.com.",
            RData::A(A(Ipv4Addr::new(198, 51, 100, 53))),
        ),
    ]
}

const QNAME: &str = "WWW.example.COM.";
const NSID: &[u8] = b"ns-a.lab";
const COOKIE: [u8; 24] = [
    1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
];

#[test]
fn messages_we_build_read_the_same_in_hickory() {
    let recs = records();
    let encoded: Vec<Vec<u8>> = recs
        .iter()
        .map(|(_, _, rd)| {
            let mut v = Vec::new();
            let mut e = BinEncoder::new(&mut v);
            e.set_canonical_names(true);
            rd.emit(&mut e).unwrap();
            v
        })
        .collect();
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    {
        let h = b.header_mut();
        h.id = 0x5a5a;
        h.opcode = Opcode::QUERY;
        h.flags.qr = true;
        h.flags.aa = true;
        h.flags.rd = true;
        h.flags.cd = true;
    }
    b.set_rcode(Rcode::BADCOOKIE);
    b.push_question(&QNAME.parse().unwrap(), Rtype::A, Class::IN)
        .unwrap();
    // Group consecutive records of one owner/type into RRsets, as a server would.
    let mut i = 0;
    while i < recs.len() {
        let (sec, owner, rd) = &recs[i];
        let mut j = i + 1;
        while j < recs.len() && recs[j].1 == *owner && recs[j].2.record_type() == rd.record_type() {
            j += 1;
        }
        let section = [Section::Answer, Section::Authority, Section::Additional][*sec];
        b.push_rrset(
            section,
            &owner.parse().unwrap(),
            Rtype(rd.record_type().into()),
            Class::IN,
            3600,
            encoded[i..j].iter().map(Vec::as_slice),
        )
        .unwrap();
        i = j;
    }
    let opts = [
        EdnsOption::Nsid(NSID),
        EdnsOption::Cookie {
            client: COOKIE[..8].try_into().unwrap(),
            server: Some(&COOKIE[8..]),
        },
        EdnsOption::TcpKeepalive(Some(300)),
        EdnsOption::Ede {
            code: 23,
            text: b"network error",
        },
    ];
    let opt = OptRecord {
        udp_payload_size: 1232,
        dnssec_ok: true,
        options: &opts,
        ..OptRecord::default()
    };
    b.finish(Some(&opt)).unwrap();

    let ours = our_content(&MessageView::parse(&buf).unwrap());
    let theirs = hickory_content(&Message::from_vec(&buf).unwrap());
    assert_eq!(ours, theirs);
    assert_eq!(ours.rcode, Rcode::BADCOOKIE.value());
    assert_eq!(
        ours.question.as_ref().unwrap().0,
        QNAME.parse::<Name>().unwrap().as_wire()
    );
    assert_eq!(ours.sections[0].len(), 8);
}

#[test]
fn messages_hickory_builds_read_the_same_in_ours() {
    let mut m = Message::new();
    m.set_id(0xa5a5)
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_authoritative(true)
        .set_recursion_desired(true)
        .set_recursion_available(true)
        .set_authentic_data(true)
        .set_response_code(ResponseCode::NXDomain);
    m.add_query(Query::query(hname(QNAME), RecordType::A));
    for (sec, owner, rd) in records() {
        let r = HRecord::from_rdata(hname(owner), 3600, rd);
        match sec {
            0 => m.add_answer(r),
            1 => m.add_name_server(r),
            _ => m.add_additional(r),
        };
    }
    let mut e = HEdns::new();
    e.set_max_payload(4096).set_version(0).set_dnssec_ok(true);
    e.options_mut()
        .insert(HOption::Unknown(EdnsCode::NSID.into(), NSID.to_vec()));
    e.options_mut().insert(HOption::Unknown(
        EdnsCode::Cookie.into(),
        COOKIE[..8].to_vec(),
    ));
    m.set_edns(e);
    let bytes = m.to_vec().unwrap();
    // hickory compresses: the message must be shorter than its names written out.
    assert!(bytes.windows(2).any(|w| w[0] & 0xc0 == 0xc0));

    let v = MessageView::parse(&bytes).unwrap();
    let ours = our_content(&v);
    let theirs = hickory_content(&Message::from_vec(&bytes).unwrap());
    assert_eq!(ours, theirs);
    assert_eq!(v.rcode(), Rcode::NXDOMAIN);
    let edns = v.edns().unwrap();
    assert_eq!(
        edns.option(10),
        Some(EdnsOption::Cookie {
            client: COOKIE[..8].try_into().unwrap(),
            server: None
        })
    );
}

#[test]
fn hickory_queries_answered_by_our_builder_read_back_in_hickory() {
    let mut q = Message::new();
    q.set_id(7)
        .set_recursion_desired(true)
        .add_query(Query::query(hname("Mixed.Case.example."), RecordType::MX));
    let qb = q.to_vec().unwrap();
    let view = MessageView::parse(&qb).unwrap();
    let mut buf = Vec::new();
    let mut b = MessageBuilder::response_to(&mut buf, 512, &view).unwrap();
    b.set_rcode(Rcode::NXDOMAIN);
    b.finish(None).unwrap();
    let r = Message::from_vec(&buf).unwrap();
    assert_eq!(r.id(), 7);
    assert_eq!(r.message_type(), MessageType::Response);
    assert!(r.recursion_desired());
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    // The question goes back byte for byte as hickory sent it.
    let qlen = view.question().unwrap().qname.wire_len() + 4;
    assert_eq!(&buf[12..12 + qlen], &qb[12..12 + qlen]);
    assert!(r
        .query()
        .unwrap()
        .name()
        .to_string()
        .eq_ignore_ascii_case("Mixed.Case.example."));
    assert_eq!(r.query().unwrap().query_type(), RecordType::MX);
    let _ = DNSClass::IN;
}

fn arb_name() -> impl Strategy<Value = Name> {
    let label = prop::sample::select(vec!["a", "B", "www", "Example", "com", "org", "x-y"]);
    prop::collection::vec(label, 0..4)
        .prop_map(|ls| Name::from_labels(ls.iter().map(|l| l.as_bytes())).unwrap())
}

/// A record type and well-formed rdata for it, in uncompressed wire form.
fn arb_rdata() -> impl Strategy<Value = (Rtype, Vec<u8>)> {
    let name = || arb_name().prop_map(|n| n.as_wire().to_vec());
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| (Rtype::A, a.to_vec())),
        any::<[u8; 16]>().prop_map(|a| (Rtype::AAAA, a.to_vec())),
        name().prop_map(|n| (Rtype::NS, n)),
        name().prop_map(|n| (Rtype::CNAME, n)),
        name().prop_map(|n| (Rtype::PTR, n)),
        (any::<u16>(), name()).prop_map(|(p, n)| (Rtype::MX, [&p.to_be_bytes()[..], &n].concat())),
        (any::<[u8; 6]>(), name()).prop_map(|(p, n)| (Rtype::SRV, [&p[..], &n].concat())),
        (name(), name(), any::<[u8; 20]>())
            .prop_map(|(m, r, f)| (Rtype::SOA, [&m[..], &r[..], &f[..]].concat())),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 1..3).prop_map(|ss| {
            let mut out = Vec::new();
            for s in ss {
                out.push(s.len() as u8);
                out.extend_from_slice(&s);
            }
            (Rtype::TXT, out)
        }),
    ]
}

fn to_hname(n: &Name) -> HName {
    HName::from_str(&n.to_string()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_messages_read_the_same_in_both_libraries(
        recs in prop::collection::vec((0..3usize, arb_name(), arb_rdata(), any::<u32>()), 0..10),
        qname in arb_name(),
        id in any::<u16>(),
        rcode in 0u16..4096,
        edns in prop::option::of((512u16..4096, any::<bool>(), prop::collection::vec(any::<u8>(), 0..8))),
    ) {
        let mut recs = recs;
        recs.sort_by_key(|r| r.0);
        let rcode = if edns.is_some() { rcode } else { rcode & 0x0f };

        // Ours, read by hickory.
        let mut buf = Vec::new();
        let mut b = MessageBuilder::new(&mut buf, 65535);
        b.header_mut().id = id;
        b.header_mut().flags.qr = true;
        b.set_rcode(Rcode::new(rcode));
        b.push_question(&qname, Rtype::A, Class::IN).unwrap();
        for (sec, owner, (rtype, rdata), ttl) in &recs {
            let section = [Section::Answer, Section::Authority, Section::Additional][*sec];
            b.push_record(section, owner, *rtype, Class::IN, *ttl, rdata).unwrap();
        }
        let nsid = edns.as_ref().map(|e| e.2.clone()).unwrap_or_default();
        let opts = [EdnsOption::Nsid(&nsid)];
        let opt = edns.as_ref().map(|(payload, dnssec_ok, _)| OptRecord {
            udp_payload_size: *payload,
            dnssec_ok: *dnssec_ok,
            options: &opts,
            ..OptRecord::default()
        });
        b.finish(opt.as_ref()).unwrap();
        let ours = our_content(&MessageView::parse(&buf).unwrap());
        let theirs = hickory_content(&Message::from_vec(&buf).unwrap());
        prop_assert_eq!(&ours, &theirs);

        // Hickory's, with its compression, read by ours.
        let mut m = Message::new();
        m.set_id(id).set_message_type(MessageType::Response);
        m.add_query(Query::query(to_hname(&qname), RecordType::A));
        for (sec, owner, (rtype, rdata), ttl) in &recs {
            let mut d = BinDecoder::new(rdata);
            let rd = RData::read(&mut d, RecordType::from(rtype.0), Restrict::new(rdata.len() as u16)).unwrap();
            let r = HRecord::from_rdata(to_hname(owner), *ttl, rd);
            match sec {
                0 => m.add_answer(r),
                1 => m.add_name_server(r),
                _ => m.add_additional(r),
            };
        }
        if let Some((payload, dnssec_ok, nsid)) = &edns {
            let mut e = HEdns::new();
            e.set_max_payload(*payload).set_dnssec_ok(*dnssec_ok);
            e.options_mut().insert(HOption::Unknown(EdnsCode::NSID.into(), nsid.clone()));
            m.set_edns(e);
        }
        m.set_response_code(ResponseCode::from((rcode >> 4) as u8, (rcode & 0x0f) as u8));
        let bytes = m.to_vec().unwrap();
        let v = MessageView::parse(&bytes).unwrap();
        let ours = our_content(&v);
        let theirs = hickory_content(&Message::from_vec(&bytes).unwrap());
        prop_assert_eq!(ours, theirs);
    }
}
