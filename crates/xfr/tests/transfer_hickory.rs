//! hickory-proto 0.24 as an independent oracle for zone transfers: every
//! message we write parses in hickory to the records we meant, in order; and
//! AXFR and IXFR answers hickory builds (with its own name compression and
//! message cutting) read in our `TransferReader` to the same zone or diffs.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use bulwark_proto::message::Question;
use bulwark_proto::{Class, Name, Record, Rtype};
use bulwark_xfr::transfer_in::{TransferLimits, TransferReader, TransferResult};
use bulwark_xfr::transfer_out::TransferWriter;
use bulwark_zone::diff::soa_record;
use bulwark_zone::{diff_zones, parse_str, Zone, ZoneDiff};
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name as HName, RData, Record as HRecord, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};

/// Lowercase names only, so a decompressed name never differs in case.
const ZONE: &str = r#"
$ORIGIN example.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
@ NS ns2.other.net.
@ MX 10 mail
ns1 A 192.0.2.1
mail A 192.0.2.2
mail AAAA 2001:db8::2
www CNAME mail
txt 60 TXT "hello world" "second"
_sip._udp SRV 0 5 5060 sip
sip A 192.0.2.3
sub NS ns.sub
ns.sub A 192.0.2.4
deep.a.b.c A 192.0.2.5
@ CAA 0 issue "ca.example.net"
"#;

fn apex() -> Name {
    "example.".parse().unwrap()
}

fn zone_text(serial: u32, extra: usize) -> String {
    let mut text = ZONE.replace(" 1 3600 600", &format!(" {serial} 3600 600"));
    text.push_str(&format!("v{serial} TXT \"only in {serial}\"\n"));
    for i in 0..extra {
        text.push_str(&format!("h{i} A 198.51.{}.{}\n", i / 250, i % 250));
    }
    text
}

fn zone(serial: u32, extra: usize) -> Zone {
    let records = parse_str(&zone_text(serial, extra), &apex(), "test").unwrap();
    Zone::build(apex(), records).unwrap().0
}

/// Owner (lowercase wire), type, class, TTL, uncompressed rdata.
type Content = (Vec<u8>, u16, u16, u32, Vec<u8>);

fn ours(r: &Record) -> Content {
    (
        r.owner.to_lowercase().as_wire().to_vec(),
        r.rtype().0,
        r.class.0,
        r.ttl,
        r.rdata.to_wire(),
    )
}

fn hickory(r: &HRecord) -> Content {
    let mut owner = Vec::new();
    let mut e = BinEncoder::new(&mut owner);
    e.set_canonical_names(true);
    r.name().to_lowercase().emit(&mut e).unwrap();
    let mut rdata = Vec::new();
    let mut e = BinEncoder::new(&mut rdata);
    // Canonical mode writes names uncompressed (all our names are lowercase).
    e.set_canonical_names(true);
    if let Some(d) = r.data() {
        d.emit(&mut e).unwrap();
    }
    (
        owner,
        u16::from(r.record_type()),
        u16::from(r.dns_class()),
        r.ttl(),
        rdata,
    )
}

/// Our record decoded by hickory from its uncompressed wire form.
fn to_hickory(r: &Record) -> HRecord {
    let rdata = r.rdata.to_wire();
    let mut wire = r.owner.as_wire().to_vec();
    wire.extend_from_slice(&r.rtype().0.to_be_bytes());
    wire.extend_from_slice(&r.class.0.to_be_bytes());
    wire.extend_from_slice(&r.ttl.to_be_bytes());
    wire.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
    wire.extend_from_slice(&rdata);
    HRecord::read(&mut BinDecoder::new(&wire)).unwrap()
}

fn question(qtype: Rtype) -> Question {
    Question {
        qname: apex(),
        qtype,
        qclass: Class::IN,
    }
}

/// Parses each of our messages with hickory, checks its header, and returns
/// the answer records in order.
fn hickory_reads(mut w: TransferWriter<'_>, id: u16) -> (usize, Vec<Content>) {
    let mut out = Vec::new();
    let mut records = Vec::new();
    let mut n = 0usize;
    while let Some(info) = w.next_message(&mut out, 0) {
        info.unwrap();
        let m = Message::from_vec(&out).unwrap();
        assert_eq!(m.id(), id);
        assert_eq!(m.message_type(), MessageType::Response);
        assert_eq!(m.op_code(), OpCode::Query);
        assert_eq!(m.response_code(), ResponseCode::NoError);
        assert!(m.authoritative());
        assert!(!m.truncated());
        assert_eq!(m.queries().len(), usize::from(n == 0), "message {n}");
        assert!(m.name_servers().is_empty() && m.additionals().is_empty());
        records.extend(m.answers().iter().map(hickory));
        n += 1;
    }
    (n, records)
}

#[test]
fn hickory_reads_our_axfr_as_soa_every_record_soa() {
    let z = zone(1, 2000);
    let soa = soa_record(&z).unwrap();
    let mut want = vec![ours(&soa)];
    want.extend(
        z.records()
            .filter(|r| r.rtype() != Rtype::SOA)
            .map(|r| ours(&r)),
    );
    want.push(ours(&soa));
    for limit in [65_535, 4096, 512] {
        let w = TransferWriter::axfr(&z, 4242, &question(Rtype::AXFR))
            .unwrap()
            .with_message_limit(limit);
        let (n, got) = hickory_reads(w, 4242);
        assert!(limit < 65_535 || n == 1, "{n} messages");
        assert_eq!(got.len(), want.len(), "limit {limit}");
        assert_eq!(got, want, "limit {limit}");
    }
}

fn diffs(serials: &[u32]) -> (Vec<Zone>, Vec<ZoneDiff>) {
    let zones: Vec<Zone> = serials.iter().map(|&s| zone(s, 50)).collect();
    let diffs = zones
        .windows(2)
        .map(|w| diff_zones(&w[0], &w[1]).unwrap())
        .collect();
    (zones, diffs)
}

/// RFC 1995 §4 order: SOA(current), per diff SOA(old) removed SOA(new) added, SOA(current).
fn ixfr_order(current: &Record, diffs: &[ZoneDiff]) -> Vec<Record> {
    let mut v = vec![current.clone()];
    for d in diffs {
        v.push(d.old_soa.clone());
        v.extend(d.removed.iter().cloned());
        v.push(d.new_soa.clone());
        v.extend(d.added.iter().cloned());
    }
    v.push(current.clone());
    v
}

#[test]
fn hickory_reads_our_ixfr_in_rfc_1995_order() {
    let (zones, journal) = diffs(&[1, 2, 3]);
    let current = soa_record(&zones[2]).unwrap();
    let want: Vec<Content> = ixfr_order(&current, &journal).iter().map(ours).collect();
    let w = TransferWriter::ixfr(&zones[2], &journal, 9, &question(Rtype::IXFR))
        .unwrap()
        .with_message_limit(256);
    let (n, got) = hickory_reads(w, 9);
    assert!(n > 1);
    assert_eq!(got, want);
}

/// hickory's messages for `records`, `per_message` answers each, the question
/// in the first only.
fn hickory_messages(
    records: &[Record],
    qtype: RecordType,
    per_message: usize,
    id: u16,
) -> Vec<Vec<u8>> {
    let hrecords: Vec<HRecord> = records.iter().map(to_hickory).collect();
    hrecords
        .chunks(per_message)
        .enumerate()
        .map(|(i, chunk)| {
            let mut m = Message::new();
            m.set_id(id)
                .set_message_type(MessageType::Response)
                .set_op_code(OpCode::Query)
                .set_authoritative(true);
            if i == 0 {
                let mut q = Query::query(HName::from_ascii("example.").unwrap(), qtype);
                q.set_query_class(DNSClass::IN);
                m.add_query(q);
            }
            m.add_answers(chunk.iter().cloned());
            m.to_vec().unwrap()
        })
        .collect()
}

#[test]
fn our_reader_takes_hickorys_axfr() {
    let z = zone(5, 500);
    let soa = soa_record(&z).unwrap();
    let mut stream = vec![soa.clone()];
    stream.extend(z.records().filter(|r| r.rtype() != Rtype::SOA));
    stream.push(soa.clone());
    for per_message in [1, 7, 100, 10_000] {
        let msgs = hickory_messages(&stream, RecordType::AXFR, per_message, 31);
        let mut r = TransferReader::new(apex(), Rtype::AXFR, 31, None, TransferLimits::default());
        for m in &msgs {
            r.feed(m).unwrap();
        }
        let TransferResult::Full {
            soa: got_soa,
            records,
        } = r.finish().unwrap()
        else {
            panic!("not full");
        };
        assert_eq!(got_soa, soa);
        let want: Vec<Record> = stream[1..stream.len() - 1].to_vec();
        assert_eq!(records, want, "{per_message} per message");
    }
}

#[test]
fn our_reader_takes_hickorys_ixfr() {
    let (zones, journal) = diffs(&[7, 8, 9, 10]);
    let current = soa_record(&zones[3]).unwrap();
    let stream = ixfr_order(&current, &journal);
    for per_message in [1, 3, 1000] {
        let msgs = hickory_messages(&stream, RecordType::IXFR, per_message, 32);
        let mut r =
            TransferReader::new(apex(), Rtype::IXFR, 32, Some(7), TransferLimits::default());
        for m in &msgs {
            r.feed(m).unwrap();
        }
        assert_eq!(
            r.finish().unwrap(),
            TransferResult::Incremental {
                diffs: journal.clone()
            }
        );
    }
    // The single-SOA answer hickory would send to a client that is current.
    let msgs = hickory_messages(&[current], RecordType::IXFR, 1, 33);
    let mut r = TransferReader::new(apex(), Rtype::IXFR, 33, Some(10), TransferLimits::default());
    r.feed(&msgs[0]).unwrap();
    assert_eq!(r.finish(), Ok(TransferResult::UpToDate { serial: 10 }));
}

#[test]
fn hickory_reads_our_queries() {
    use bulwark_xfr::transfer_in::{build_soa_query, build_transfer_query};
    let z = zone(3, 0);
    let soa = soa_record(&z).unwrap();
    let mut out = Vec::new();
    build_transfer_query(11, &apex(), Rtype::IXFR, Some(&soa), &mut out).unwrap();
    let m = Message::from_vec(&out).unwrap();
    assert_eq!(m.id(), 11);
    assert_eq!(m.message_type(), MessageType::Query);
    assert_eq!(m.queries()[0].query_type(), RecordType::IXFR);
    assert_eq!(m.name_servers().len(), 1);
    assert!(matches!(m.name_servers()[0].data(), Some(RData::SOA(s)) if s.serial() == 3));
    build_soa_query(12, &apex(), &mut out).unwrap();
    let m = Message::from_vec(&out).unwrap();
    assert_eq!(m.queries()[0].query_type(), RecordType::SOA);
    assert!(!m.recursion_desired());
}
