//! How fast a large zone is written out as AXFR messages. Ignored by default
//! (it builds a million-record zone); run in release with
//! `cargo test --release -p bulwark-xfr --test transfer_speed -- --ignored --nocapture`.
//! It prints its measurements and asserts only what was written, never a time.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::Instant;

use bulwark_proto::message::{MessageView, Question};
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_xfr::transfer_in::{Progress, TransferLimits, TransferReader, TransferResult};
use bulwark_xfr::transfer_out::TransferWriter;
use bulwark_zone::Zone;

const RECORDS: usize = 1_000_000;

fn million_record_zone() -> Zone {
    let apex: Name = "example.com.".parse().unwrap();
    let origin = apex.clone();
    let rec = |owner: &Name, rtype: Rtype, text: &str| Record {
        owner: owner.clone(),
        class: Class::IN,
        ttl: 3600,
        rdata: Rdata::from_text(rtype, text, &origin).unwrap(),
    };
    let mut records = Vec::with_capacity(RECORDS + 3);
    records.push(rec(&apex, Rtype::SOA, "ns hostmaster 1 3600 600 86400 300"));
    records.push(rec(&apex, Rtype::NS, "ns"));
    let ns: Name = "ns.example.com.".parse().unwrap();
    records.push(rec(&ns, Rtype::A, "192.0.2.1"));
    for i in 0..RECORDS - 3 {
        let owner: Name = format!("host{i}.example.com.").parse().unwrap();
        let addr = format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255);
        records.push(rec(&owner, Rtype::A, &addr));
    }
    Zone::build(apex, records).unwrap().0
}

#[test]
#[ignore = "builds a million-record zone; run in release with --ignored --nocapture"]
fn a_million_record_zone_streams_out_and_back() {
    let started = Instant::now();
    let zone = million_record_zone();
    eprintln!("zone built in {:?}", started.elapsed());
    let question = Question {
        qname: zone.apex().clone(),
        qtype: Rtype::AXFR,
        qclass: Class::IN,
    };
    // The floor: walking the zone's nodes and rdata without writing anything.
    let started = Instant::now();
    let mut walked = 0usize;
    for (owner, node) in zone.nodes_canonical() {
        for set in node.rrsets() {
            for rd in set.rdatas() {
                walked += owner.wire_len() + rd.len() + usize::from(node.record_ttl(set, rd) > 0);
            }
        }
    }
    eprintln!(
        "walking the zone alone: {:?} ({walked} octets seen)",
        started.elapsed()
    );

    let mut out = Vec::with_capacity(65_535);
    let mut writer = TransferWriter::axfr(&zone, 7, &question).unwrap();
    let started = Instant::now();
    let (mut messages, mut records, mut octets) = (0usize, 0usize, 0usize);
    while let Some(info) = writer.next_message(&mut out, 0) {
        let info = info.unwrap();
        messages += 1;
        records += usize::from(info.records);
        octets += info.len;
    }
    let took = started.elapsed();
    eprintln!(
        "AXFR of {records} records: {messages} messages, {octets} octets, written in {took:?} ({:.0} ns/record)",
        took.as_nanos() as f64 / records as f64
    );
    assert_eq!(records, RECORDS + 1);

    // And read back by our reader, message by message.
    let mut writer = TransferWriter::axfr(&zone, 7, &question).unwrap();
    let mut reader = TransferReader::new(
        zone.apex().clone(),
        Rtype::AXFR,
        7,
        None,
        TransferLimits::default(),
    );
    let started = Instant::now();
    let mut progress = Progress::More;
    while let Some(info) = writer.next_message(&mut out, 0) {
        info.unwrap();
        MessageView::parse(&out).unwrap();
        progress = reader.feed(&out).unwrap();
    }
    assert_eq!(progress, Progress::Done);
    let TransferResult::Full { records, .. } = reader.finish().unwrap() else {
        panic!("not a full transfer");
    };
    eprintln!(
        "written, parsed and read back into {} records in {:?}",
        records.len(),
        started.elapsed()
    );
    assert_eq!(records.len(), RECORDS - 1);
}
