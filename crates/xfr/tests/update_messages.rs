//! Reading UPDATE messages (RFC 2136 §2, §3.1.1) and writing responses
//! (§3.8). The oracle messages were written by dnspython 2.3's
//! `dns.update.UpdateMessage` (id 0x1234), which compresses names inside
//! record data; the response bytes are what its `make_response` gives.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod update_support;

use bulwark_proto::message::MessageView;
use bulwark_proto::{Class, Name, Rcode, Rdata, Rtype};
use bulwark_xfr::update::{
    read_update, write_update_response, UpdateError, UpdateOptions, UpdateRecord, ZoneEdit,
};
use update_support::{n, origin, zone, Msg, ZONE};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// ```python
/// u = dns.update.UpdateMessage('example.')
/// u.present('www'); u.present('www', 'A'); u.absent('nothere'); u.absent('www', 'AAAA')
/// u.present('mail', dns.rdata.from_text('IN', 'MX', '10 mx.example.'))
/// u.add('www', 300, 'A', '192.0.2.12'); u.add('mail', 600, 'MX', '20 mx2.example.')
/// u.delete('old'); u.delete('www', 'TXT'); u.delete('www', 'A', '192.0.2.10')
/// ```
const DNSPYTHON_MIXED: &str = "123428000001000500050000076578616d706c65000006000103777777c00c00ff00ff000000000000c019000100ff000000000000076e6f7468657265c00c00ff00fe000000000000c019001c00fe000000000000046d61696cc00c000f0001000000000007000a026d78c00cc019000100010000012c0004c000020cc055000f00010000025800080014036d7832c00c036f6c64c00c00ff00ff000000000000c019001000ff000000000000c019000100fe000000000004c000020a";

/// ```python
/// u.add('example.', 300, 'NS', 'ns3.example.')
/// u.add('alias2.example.', 300, 'CNAME', 'www.example.')
/// u.add('example.', 300, 'SOA', 'ns.example. hostmaster.example. 7 3600 600 86400 300')
/// ```
const DNSPYTHON_COMPRESSED: &str = "123428000001000000030000076578616d706c650000060001c00c000200010000012c0006036e7333c00c06616c69617332c00c000500010000012c000603777777c00cc00c000600010000012c0026026e73c00c0a686f73746d6173746572c00c0000000700000e1000000258000151800000012c";

fn record(owner: &str, ttl: u32, class: Class, rtype: Rtype, rdata: &str) -> UpdateRecord {
    UpdateRecord {
        owner: n(owner),
        rtype,
        class,
        ttl,
        rdata: if rdata.is_empty() {
            Vec::new()
        } else {
            Rdata::from_text(rtype, rdata, &origin()).unwrap().to_wire()
        },
    }
}

#[test]
fn dnspython_update_is_read_section_by_section_with_rdata_names_expanded() {
    let wire = hex(DNSPYTHON_MIXED);
    let req = read_update(&MessageView::parse(&wire).unwrap()).unwrap();
    assert_eq!(req.zone, n("example."));
    assert_eq!(req.zone_class, Class::IN);
    assert_eq!(
        req.prerequisites,
        [
            record("www.example.", 0, Class::ANY, Rtype::ANY, ""),
            record("www.example.", 0, Class::ANY, Rtype::A, ""),
            record("nothere.example.", 0, Class::NONE, Rtype::ANY, ""),
            record("www.example.", 0, Class::NONE, Rtype::AAAA, ""),
            record("mail.example.", 0, Class::IN, Rtype::MX, "10 mx.example."),
        ]
    );
    assert_eq!(
        req.updates,
        [
            record("www.example.", 300, Class::IN, Rtype::A, "192.0.2.12"),
            record(
                "mail.example.",
                600,
                Class::IN,
                Rtype::MX,
                "20 mx2.example."
            ),
            record("old.example.", 0, Class::ANY, Rtype::ANY, ""),
            record("www.example.", 0, Class::ANY, Rtype::TXT, ""),
            record("www.example.", 0, Class::NONE, Rtype::A, "192.0.2.10"),
        ]
    );
    // Applied to the test zone: every prerequisite holds.
    let base = zone(ZONE);
    let mut edit = ZoneEdit::new(&base);
    let applied = edit.apply(&req, &UpdateOptions::default()).unwrap();
    assert_eq!(applied.changed, 4, "the delete of `old` finds nothing");
}

#[test]
fn compressed_names_in_ns_cname_and_soa_data_are_stored_uncompressed() {
    let wire = hex(DNSPYTHON_COMPRESSED);
    let req = read_update(&MessageView::parse(&wire).unwrap()).unwrap();
    let ns3 = n("ns3.example.");
    assert_eq!(req.updates[0].rdata, ns3.as_wire());
    assert_eq!(req.updates[1].rdata, n("www.example.").as_wire());
    let soa = record(
        "example.",
        300,
        Class::IN,
        Rtype::SOA,
        "ns.example. hostmaster.example. 7 3600 600 86400 300",
    );
    assert_eq!(req.updates[2], soa);
    // The wire data has pointers; what was read has none.
    assert!(wire.windows(2).any(|w| w == [0xc0, 0x0c]));
    assert!(!req.updates.iter().any(|u| u.rdata.contains(&0xc0)));
}

#[test]
fn malformed_messages_are_refused_with_their_rcode() {
    let mut two_zones = Msg::new();
    two_zones.zones.push((n("example."), Rtype::SOA, Class::IN));
    let mut no_zone = Msg::new();
    no_zone.zones.clear();
    let mut zone_type_a = Msg::new();
    zone_type_a.zones[0].1 = Rtype::A;
    let short_a = Msg::new().update_raw("www", 300, Class::IN, Rtype::A, &[192, 0, 2]);
    let bad_name_in_mx =
        Msg::new().update_raw("mail", 300, Class::IN, Rtype::MX, &[0, 10, 0xc0, 0xff]);
    let cases: [(&str, Vec<u8>, UpdateError); 5] = [
        ("two zones", two_zones.wire(), UpdateError::ZoneCount(2)),
        ("no zone", no_zone.wire(), UpdateError::ZoneCount(0)),
        (
            "zone type A",
            zone_type_a.wire(),
            UpdateError::ZoneType(Rtype::A),
        ),
        // 12 header + 13 zone + 13 owner + 10 fixed fields: the rdata is at 48.
        (
            "A with three octets",
            short_a.wire(),
            UpdateError::BadRdata {
                at: 48,
                rtype: Rtype::A,
            },
        ),
        (
            "MX with a bad pointer",
            bad_name_in_mx.wire(),
            UpdateError::BadRdata {
                at: 49,
                rtype: Rtype::MX,
            },
        ),
    ];
    for (what, wire, want) in cases {
        let got = read_update(&MessageView::parse(&wire).unwrap()).unwrap_err();
        assert_eq!(got, want, "{what}");
        assert_eq!(got.rcode(), Rcode::FORMERR, "{what}");
    }
    let mut query = Msg::new().wire();
    query[2] = 0x00; // opcode QUERY
    let got = read_update(&MessageView::parse(&query).unwrap()).unwrap_err();
    assert_eq!(got.rcode(), Rcode::NOTIMP);
}

#[test]
fn a_zone_section_for_another_zone_or_class_is_notauth() {
    let base = zone(ZONE);
    let mut edit = ZoneEdit::new(&base);
    let mut other_class = Msg::new().update("x 300 IN A 192.0.2.1");
    other_class.zones[0].2 = Class::CH;
    let mut other_zone = Msg::new().update("x 300 IN A 192.0.2.1");
    other_zone.zones[0].0 = n("example.net.");
    let mut child = Msg::new().update("x 300 IN A 192.0.2.1");
    child.zones[0].0 = n("sub.example.");
    for msg in [other_class, other_zone, child] {
        let err = edit
            .apply(&msg.request(), &UpdateOptions::default())
            .unwrap_err();
        assert_eq!(err.rcode(), Rcode::NOTAUTH, "{err}");
    }
    // The zone name compares without case.
    let mut upper = Msg::new().update("x 300 IN A 192.0.2.1");
    upper.zones[0].0 = n("EXAMPLE.");
    assert!(edit
        .apply(&upper.request(), &UpdateOptions::default())
        .is_ok());
}

#[test]
fn response_echoes_id_opcode_and_zone_only() {
    // dnspython: make_response(u) with set_rcode(NXRRSET), for the update
    // `u.add('www', 300, 'A', '192.0.2.12')` with id 0x1234.
    let query = hex("123428000001000000010000076578616d706c65000006000103777777c00c000100010000012c0004c000020c");
    let expected = hex("1234a8080001000000000000076578616d706c650000060001");
    let mut out = Vec::new();
    let len = write_update_response(&query, Rcode::NXRRSET, &mut out).unwrap();
    assert_eq!(len, out.len());
    assert_eq!(out, expected);
}

#[test]
fn response_carries_an_opt_when_the_update_did() {
    // dnspython: the same update after u.use_edns(0, payload=1232), id 0x0102.
    let query = hex(
        "010228000001000000010001076578616d706c65000006000103777777c00c000100010000012c0004c000020c00002904d0000000000000",
    );
    let mut out = Vec::new();
    write_update_response(&query, Rcode::NOERROR, &mut out).unwrap();
    let resp = MessageView::parse(&out).unwrap();
    assert_eq!(resp.header().id, 0x0102);
    assert!(resp.header().flags.qr);
    assert_eq!(resp.header().opcode, bulwark_proto::Opcode::UPDATE);
    assert_eq!(resp.rcode(), Rcode::NOERROR);
    let counts = (
        resp.header().qdcount,
        resp.header().ancount,
        resp.header().nscount,
    );
    assert_eq!(counts, (1, 0, 0));
    assert!(resp.edns().is_some());
}

#[test]
fn response_to_a_broken_update_still_answers_the_id() {
    let mut out = Vec::new();
    assert_eq!(
        write_update_response(&[0x12, 0x34, 0x28], Rcode::FORMERR, &mut out),
        None
    );
    // Two zones: counts all zero (RFC 2136 §3.8 allows either form).
    let mut two = Msg::new();
    two.zones.push((n("example."), Rtype::SOA, Class::IN));
    write_update_response(&two.wire(), Rcode::FORMERR, &mut out).unwrap();
    assert_eq!(out, [0x42, 0x42, 0xa8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
    // Cut short after the zone: the zone is still echoed.
    let whole = Msg::new().update("www 300 IN A 192.0.2.1").wire();
    let cut = &whole[..whole.len() - 3];
    write_update_response(cut, Rcode::FORMERR, &mut out).unwrap();
    let resp = MessageView::parse(&out).unwrap();
    assert_eq!(
        resp.question().map(|q| q.qname.clone()),
        Some(Name::from_wire(origin().as_wire()).unwrap())
    );
    assert_eq!(resp.rcode(), Rcode::FORMERR);
}
