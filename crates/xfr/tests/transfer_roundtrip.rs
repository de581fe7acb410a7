//! Zone transfers end to end through our own two halves: a zone written out by
//! `TransferWriter` and read back by `TransferReader` must give the same
//! records (AXFR) or the same diffs (IXFR), however the messages are cut.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use bulwark_proto::message::{append_additional, MessageView, Question};
use bulwark_proto::{Class, Name, Record, Rtype};
use bulwark_xfr::transfer_in::{
    Progress, TransferError, TransferLimits, TransferReader, TransferResult,
};
use bulwark_xfr::transfer_out::{plan_ixfr, IxfrPlan, TransferWriter, WriteError};
use bulwark_zone::{apply_diff, diff_zones, parse_str, Zone, ZoneDiff};

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
"#;

fn apex() -> Name {
    "example.".parse().unwrap()
}

fn zone(text: &str) -> Zone {
    let records = parse_str(text, &apex(), "test").unwrap();
    Zone::build(apex(), records).unwrap().0
}

/// The test zone at `serial`, with one record that exists only in that version.
fn version(serial: u32) -> Zone {
    let text = ZONE.replace(" 1 3600 600", &format!(" {serial} 3600 600"));
    zone(&format!("{text}v{serial} TXT \"only in {serial}\"\n"))
}

fn question(qtype: Rtype) -> Question {
    Question {
        qname: apex(),
        qtype,
        qclass: Class::IN,
    }
}

/// Every message a writer produces, checked to parse.
fn messages(mut w: TransferWriter<'_>, reserve: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut all = Vec::new();
    while let Some(info) = w.next_message(&mut out, reserve) {
        let info = info.unwrap();
        assert_eq!(info.len, out.len());
        MessageView::parse(&out).unwrap();
        all.push(out.clone());
    }
    all
}

fn read_all(
    msgs: &[Vec<u8>],
    qtype: Rtype,
    client_serial: Option<u32>,
) -> Result<TransferResult, TransferError> {
    let mut r = TransferReader::new(apex(), qtype, 77, client_serial, TransferLimits::default());
    let mut progress = Progress::More;
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(progress, Progress::More, "Done before message {i}");
        progress = r.feed(m)?;
    }
    let result = r.finish()?;
    // Only a newer SOA alone leaves the stream open (for its end to decide).
    let open = matches!(result, TransferResult::RetryOverTcp { .. });
    assert_eq!(progress == Progress::More, open, "{result:?}");
    Ok(result)
}

fn lines(records: impl IntoIterator<Item = Record>) -> Vec<String> {
    let mut v: Vec<String> = records.into_iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}

fn full_records(result: TransferResult) -> Vec<String> {
    let TransferResult::Full { soa, records } = result else {
        panic!("not a full transfer: {result:?}");
    };
    lines(std::iter::once(soa).chain(records))
}

#[test]
fn axfr_round_trip_gives_the_zone_back() {
    let z = zone(ZONE);
    let msgs = messages(
        TransferWriter::axfr(&z, 77, &question(Rtype::AXFR)).unwrap(),
        0,
    );
    assert_eq!(msgs.len(), 1);
    let got = full_records(read_all(&msgs, Rtype::AXFR, None).unwrap());
    assert_eq!(got, lines(z.records()));
}

#[test]
fn axfr_cut_into_many_small_messages_reads_the_same() {
    let z = zone(ZONE);
    for limit in [100, 150, 220] {
        let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
            .unwrap()
            .with_message_limit(limit);
        let msgs = messages(w, 0);
        assert!(msgs.len() > 2, "limit {limit}: {} messages", msgs.len());
        for (i, m) in msgs.iter().enumerate() {
            assert!(m.len() <= limit);
            let view = MessageView::parse(m).unwrap();
            assert_eq!(view.header().qdcount, u16::from(i == 0));
            assert_eq!(view.header().id, 77);
            assert!(view.header().flags.aa && view.header().flags.qr);
        }
        let got = full_records(read_all(&msgs, Rtype::AXFR, None).unwrap());
        assert_eq!(got, lines(z.records()), "limit {limit}");
    }
}

#[test]
fn an_rrset_larger_than_a_message_spans_several() {
    let mut text = String::from(ZONE);
    for i in 0..600 {
        text.push_str(&format!("big TXT \"record number {i}\"\n"));
    }
    let z = zone(&text);
    let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
        .unwrap()
        .with_message_limit(1024);
    let msgs = messages(w, 0);
    assert!(msgs.len() > 10);
    let got = full_records(read_all(&msgs, Rtype::AXFR, None).unwrap());
    assert_eq!(got, lines(z.records()));
}

#[test]
fn the_reservation_leaves_room_for_a_tsig_on_every_message() {
    let mut text = String::from(ZONE);
    for i in 0..3000 {
        text.push_str(&format!("h{i} A 198.51.{}.{}\n", i / 250, i % 250));
    }
    let z = zone(&text);
    // A TSIG with HMAC-SHA256: owner, fixed fields, 32-octet MAC, no other data.
    let key: Name = "transfer-key.example.".parse().unwrap();
    let tsig_rdata = vec![0u8; 61];
    let reserve = key.wire_len() + 10 + tsig_rdata.len();
    let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
        .unwrap()
        .with_message_limit(4096);
    let mut signed = Vec::new();
    for mut m in messages(w, reserve) {
        assert!(m.len() + reserve <= 4096);
        append_additional(&mut m, 4096, &key, Rtype::TSIG, Class::ANY, 0, &tsig_rdata).unwrap();
        assert!(MessageView::parse(&m).unwrap().tsig().is_some());
        signed.push(m);
    }
    // The reader leaves the TSIG to the caller and reads the rest.
    let got = full_records(read_all(&signed, Rtype::AXFR, None).unwrap());
    assert_eq!(got, lines(z.records()));
}

#[test]
fn rrsigs_go_out_with_the_ttl_of_the_rrset_they_cover() {
    let sig = "20300101000000 20200101000000 12345 example. AAAA";
    let z = zone(&format!(
        "{ZONE}sig 300 A 192.0.2.9\nsig 300 RRSIG A 8 2 300 {sig}\nsig 900 TXT x\nsig 900 RRSIG TXT 8 2 900 {sig}\n"
    ));
    let msgs = messages(
        TransferWriter::axfr(&z, 77, &question(Rtype::AXFR)).unwrap(),
        0,
    );
    let view = MessageView::parse(&msgs[0]).unwrap();
    let ttls: Vec<u32> = view
        .answers()
        .filter(|r| r.rtype == Rtype::RRSIG)
        .map(|r| r.ttl)
        .collect();
    assert_eq!(ttls.len(), 2);
    assert!(ttls.contains(&300) && ttls.contains(&900), "{ttls:?}");
    let got = full_records(read_all(&msgs, Rtype::AXFR, None).unwrap());
    assert_eq!(got, lines(z.records()));
}

/// Versions 1..=4 and the journal between them.
fn journal(serials: &[u32]) -> (Vec<Zone>, Vec<ZoneDiff>) {
    let zones: Vec<Zone> = serials.iter().map(|&s| version(s)).collect();
    let diffs = zones
        .windows(2)
        .map(|w| diff_zones(&w[0], &w[1]).unwrap())
        .collect();
    (zones, diffs)
}

#[test]
fn ixfr_round_trip_gives_the_journal_diffs_and_they_apply() {
    let (zones, journal) = journal(&[1, 2, 3, 4]);
    let current = &zones[3];
    let plan = plan_ixfr(1, current, &journal);
    assert_eq!(plan, IxfrPlan::Incremental(0..3));
    let w = TransferWriter::for_ixfr_plan(current, &plan, &journal, 77, &question(Rtype::IXFR))
        .unwrap()
        .with_message_limit(300);
    let msgs = messages(w, 0);
    assert!(msgs.len() > 1);
    let TransferResult::Incremental { diffs } = read_all(&msgs, Rtype::IXFR, Some(1)).unwrap()
    else {
        panic!("not incremental");
    };
    assert_eq!(diffs, journal);
    let mut records: Vec<Record> = zones[0].records().collect();
    for d in &diffs {
        records = apply_diff(records, d).unwrap();
    }
    assert_eq!(lines(records), lines(current.records()));
}

#[test]
fn ixfr_across_the_serial_wraparound() {
    let serials = [u32::MAX - 1, u32::MAX, 0, 1];
    let (zones, journal) = journal(&serials);
    let plan = plan_ixfr(u32::MAX - 1, &zones[3], &journal);
    assert_eq!(plan, IxfrPlan::Incremental(0..3));
    let w = TransferWriter::for_ixfr_plan(&zones[3], &plan, &journal, 77, &question(Rtype::IXFR))
        .unwrap();
    let msgs = messages(w, 0);
    let result = read_all(&msgs, Rtype::IXFR, Some(u32::MAX - 1)).unwrap();
    assert_eq!(result, TransferResult::Incremental { diffs: journal });
}

#[test]
fn ixfr_from_a_version_the_journal_lost_is_a_full_zone() {
    let (zones, mut journal) = journal(&[1, 2, 3, 4]);
    journal.remove(1); // a gap between 2 and 3
    let plan = plan_ixfr(1, &zones[3], &journal);
    assert_eq!(plan, IxfrPlan::Axfr);
    let w = TransferWriter::for_ixfr_plan(&zones[3], &plan, &journal, 77, &question(Rtype::IXFR))
        .unwrap();
    let msgs = messages(w, 0);
    // RFC 1995 §4: SOA then a non-SOA: the reader sees a whole zone.
    let got = full_records(read_all(&msgs, Rtype::IXFR, Some(1)).unwrap());
    assert_eq!(got, lines(zones[3].records()));
    // With an empty journal too.
    assert_eq!(plan_ixfr(3, &zones[3], &[]), IxfrPlan::Axfr);
}

#[test]
fn a_single_soa_answer_means_up_to_date_or_retry() {
    let z = version(7);
    let msgs = messages(
        TransferWriter::single_soa(&z, 77, &question(Rtype::IXFR)).unwrap(),
        0,
    );
    assert_eq!(msgs.len(), 1);
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(7)),
        Ok(TransferResult::UpToDate { serial: 7 })
    );
    // Our copy is newer than theirs: still nothing to fetch.
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(9)),
        Ok(TransferResult::UpToDate { serial: 7 })
    );
    // Theirs is newer but they sent only the SOA (as over UDP): ask again.
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(5)),
        Ok(TransferResult::RetryOverTcp { serial: 7 })
    );
    // For AXFR the SOA alone is only the start.
    let msgs = messages(
        TransferWriter::single_soa(&z, 77, &question(Rtype::AXFR)).unwrap(),
        0,
    );
    let mut r = TransferReader::new(apex(), Rtype::AXFR, 77, None, TransferLimits::default());
    assert_eq!(r.feed(&msgs[0]), Ok(Progress::More));
    assert_eq!(r.finish(), Err(TransferError::Incomplete));
}

#[test]
fn a_broken_ixfr_chain_is_refused() {
    let (zones, journal) = journal(&[1, 2, 3, 4]);
    let broken = [journal[0].clone(), journal[2].clone()];
    let w = TransferWriter::ixfr(&zones[3], &broken, 77, &question(Rtype::IXFR)).unwrap();
    let msgs = messages(w, 0);
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(1)),
        Err(TransferError::BrokenChain {
            expected: 2,
            got: 3
        })
    );
    // A chain that stops short of the closing serial.
    let short = &journal[..2];
    let msgs = messages(
        TransferWriter::ixfr(&zones[3], short, 77, &question(Rtype::IXFR)).unwrap(),
        0,
    );
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(1)),
        Err(TransferError::BrokenChain {
            expected: 3,
            got: 4
        })
    );
    // Diffs from another version than ours.
    let msgs = messages(
        TransferWriter::ixfr(&zones[3], &journal[1..], 77, &question(Rtype::IXFR)).unwrap(),
        0,
    );
    assert_eq!(
        read_all(&msgs, Rtype::IXFR, Some(1)),
        Err(TransferError::WrongStartSerial {
            expected: 1,
            got: 2
        })
    );
}

#[test]
fn a_message_with_another_id_stops_the_transfer() {
    let z = zone(ZONE);
    let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
        .unwrap()
        .with_message_limit(120);
    let mut msgs = messages(w, 0);
    assert!(msgs.len() > 3);
    msgs[2][1] ^= 1;
    let mut r = TransferReader::new(apex(), Rtype::AXFR, 77, None, TransferLimits::default());
    r.feed(&msgs[0]).unwrap();
    r.feed(&msgs[1]).unwrap();
    assert_eq!(
        r.feed(&msgs[2]),
        Err(TransferError::IdMismatch {
            expected: 77,
            got: 76
        })
    );
    assert_eq!(r.feed(&msgs[3]), Err(TransferError::DataAfterEnd));
}

#[test]
fn a_transfer_for_another_zone_is_refused() {
    let z = zone(ZONE);
    let msgs = messages(
        TransferWriter::axfr(&z, 77, &question(Rtype::AXFR)).unwrap(),
        0,
    );
    // Read as if we had asked for a zone below it: the question differs.
    let other: Name = "sub.example.".parse().unwrap();
    let mut r = TransferReader::new(other, Rtype::AXFR, 77, None, TransferLimits::default());
    assert_eq!(r.feed(&msgs[0]), Err(TransferError::QuestionMismatch));
    // Without the question, the records outside the zone give it away.
    let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
        .unwrap()
        .with_message_limit(100);
    let msgs = messages(w, 0);
    let other: Name = "ns1.example.".parse().unwrap();
    let mut r = TransferReader::new(other, Rtype::AXFR, 77, None, TransferLimits::default());
    let err = msgs.iter().skip(1).find_map(|m| r.feed(m).err()).unwrap();
    assert!(
        matches!(
            err,
            TransferError::OutOfZone { .. } | TransferError::SoaNotAtApex { .. }
        ),
        "{err:?}"
    );
}

#[test]
fn limits_end_a_transfer_that_is_too_big() {
    let mut text = String::from(ZONE);
    for i in 0..500 {
        text.push_str(&format!("h{i} A 198.51.100.{}\n", i % 250));
    }
    let z = zone(&text);
    let w = TransferWriter::axfr(&z, 77, &question(Rtype::AXFR))
        .unwrap()
        .with_message_limit(512);
    let msgs = messages(w, 0);
    let total: usize = msgs.iter().map(Vec::len).sum();
    let cases = [
        (
            TransferLimits {
                max_records: 100,
                max_octets: usize::MAX,
            },
            TransferError::TooManyRecords { limit: 100 },
        ),
        (
            TransferLimits {
                max_records: usize::MAX,
                max_octets: total / 2,
            },
            TransferError::TooManyOctets { limit: total / 2 },
        ),
    ];
    for (limits, want) in cases {
        let mut r = TransferReader::new(apex(), Rtype::AXFR, 77, None, limits);
        let err = msgs.iter().find_map(|m| r.feed(m).err());
        assert_eq!(err, Some(want));
    }
    // Exactly at the limits passes.
    let limits = TransferLimits {
        max_records: z.records().count() + 1,
        max_octets: total,
    };
    let mut r = TransferReader::new(apex(), Rtype::AXFR, 77, None, limits);
    for m in &msgs {
        r.feed(m).unwrap();
    }
    assert!(r.finish().is_ok());
}

#[test]
fn a_zone_without_soa_cannot_be_transferred() {
    let z = Zone::empty(apex());
    assert_eq!(
        TransferWriter::axfr(&z, 1, &question(Rtype::AXFR)).err(),
        Some(WriteError::NoSoa)
    );
    assert_eq!(plan_ixfr(1, &z, &[]), IxfrPlan::Axfr);
}
