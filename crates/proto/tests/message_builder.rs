//! Building messages: exact bytes, compression pointers, limits and rollback, OPT.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use bulwark_proto::message::{
    append_additional, write_error_response, write_not_implemented, BuildError, EdnsOption,
    MessageBuilder, MessageView, OptRecord, Section,
};
use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn wire(s: &str) -> Vec<u8> {
    n(s).as_wire().to_vec()
}

/// A query for `Example.COM. A` with RD and CD set, id 0xbeef, and an OPT.
fn query() -> Vec<u8> {
    let mut m = vec![0xbe, 0xef, 0x01, 0x10, 0, 1, 0, 0, 0, 0, 0, 1];
    m.extend_from_slice(&wire("Example.COM."));
    m.extend_from_slice(&[0, 1, 0, 1]);
    m.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    m
}

#[test]
fn response_echoes_id_flags_and_question_case_and_compresses_owner() {
    let q = query();
    let view = MessageView::parse(&q).unwrap();
    let mut buf = Vec::new();
    let mut b = MessageBuilder::response_to(&mut buf, 512, &view).unwrap();
    b.header_mut().flags.aa = true;
    b.push_rrset(
        Section::Answer,
        &n("example.com."),
        Rtype::A,
        Class::IN,
        300,
        [&[192u8, 0, 2, 1][..], &[192, 0, 2, 2][..]],
    )
    .unwrap();
    let len = b.finish(None).unwrap();
    let mut expected = vec![0xbe, 0xef, 0x85, 0x10, 0, 1, 0, 2, 0, 0, 0, 0];
    expected.extend_from_slice(&wire("Example.COM."));
    expected.extend_from_slice(&[0, 1, 0, 1]);
    for last in [1u8, 2] {
        expected.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, last]);
    }
    assert_eq!(buf, expected);
    assert_eq!(len, buf.len());
}

#[test]
fn names_inside_rfc1035_rdata_are_compressed_and_others_are_not() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    b.push_question(&n("example.com."), Rtype::ANY, Class::IN)
        .unwrap();
    // NS: the whole target is known after the first record.
    let ns = wire("ns.example.com.");
    b.push_record(
        Section::Answer,
        &n("example.com."),
        Rtype::NS,
        Class::IN,
        1,
        &ns,
    )
    .unwrap();
    // MX: preference, then a name that can point at "example.com.".
    let mut mx = vec![0, 10];
    mx.extend_from_slice(&wire("mail.example.com."));
    b.push_record(
        Section::Answer,
        &n("example.com."),
        Rtype::MX,
        Class::IN,
        1,
        &mx,
    )
    .unwrap();
    // SOA: both names compress, the 20 fixed octets follow.
    let mut soa = wire("ns.example.com.");
    soa.extend_from_slice(&wire("hostmaster.example.com."));
    soa.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
    b.push_record(
        Section::Authority,
        &n("example.com."),
        Rtype::SOA,
        Class::IN,
        1,
        &soa,
    )
    .unwrap();
    // SRV (RFC 2782): its target must not be compressed (RFC 3597 §4).
    let mut srv = vec![0, 1, 0, 2, 0, 3];
    srv.extend_from_slice(&wire("mail.example.com."));
    b.push_record(
        Section::Additional,
        &n("example.com."),
        Rtype::SRV,
        Class::IN,
        1,
        &srv,
    )
    .unwrap();
    b.finish(None).unwrap();

    let q_end = 12 + 13 + 4; // question name at 12, "com." at 20
    let ns_rec = q_end; // owner pointer, 10 fixed octets, then rdata at +12
    let ns_rdata = ns_rec + 12;
    assert_eq!(&buf[ns_rec..ns_rec + 2], &[0xc0, 12]);
    assert_eq!(&buf[ns_rdata - 2..ns_rdata], &[0, 5]); // rdlength 5
    assert_eq!(&buf[ns_rdata..ns_rdata + 5], &[2, b'n', b's', 0xc0, 12]);
    let mx_rec = ns_rdata + 5;
    let mx_rdata = mx_rec + 12;
    assert_eq!(&buf[mx_rdata - 2..mx_rdata], &[0, 9]);
    assert_eq!(
        &buf[mx_rdata..mx_rdata + 9],
        &[0, 10, 4, b'm', b'a', b'i', b'l', 0xc0, 12]
    );
    let soa_rec = mx_rdata + 9;
    let soa_rdata = soa_rec + 12;
    let mut soa_expected = vec![0xc0, ns_rdata as u8]; // "ns.example.com." written in the NS rdata
    soa_expected.extend_from_slice(&[10]);
    soa_expected.extend_from_slice(b"hostmaster");
    soa_expected.extend_from_slice(&[0xc0, 12]);
    soa_expected.extend_from_slice(&soa[soa.len() - 20..]);
    assert_eq!(
        &buf[soa_rdata - 2..soa_rdata],
        &(soa_expected.len() as u16).to_be_bytes()
    );
    assert_eq!(
        &buf[soa_rdata..soa_rdata + soa_expected.len()],
        &soa_expected[..]
    );
    let srv_rec = soa_rdata + soa_expected.len();
    assert_eq!(&buf[srv_rec + 12..], &srv[..]);

    // And the result reads back with the counts it claims.
    let v = MessageView::parse(&buf).unwrap();
    assert_eq!(v.answers().count(), 2);
    assert_eq!(v.authority().count(), 1);
    assert_eq!(v.additional().count(), 1);
}

#[test]
fn rrset_that_does_not_fit_is_rolled_back_whole() {
    let mut buf = Vec::new();
    let limit = 12 + 17 + 2 * 16; // question + two A records
    let mut b = MessageBuilder::new(&mut buf, limit);
    b.push_question(&n("example.com."), Rtype::A, Class::IN)
        .unwrap();
    let a: &[u8] = &[192, 0, 2, 1];
    let owner = n("example.com.");
    b.push_rrset(Section::Answer, &owner, Rtype::A, Class::IN, 1, [a])
        .unwrap();
    let before = b.len();
    let err = b
        .push_rrset(Section::Authority, &owner, Rtype::A, Class::IN, 1, [a, a])
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::DoesNotFit {
            section: Section::Authority
        }
    );
    assert_eq!(b.len(), before);
    assert_eq!(b.count(Section::Authority), 0);
    assert_eq!(b.count(Section::Answer), 1);
    // One more record still fits, and may go in the same section as the failure.
    b.push_rrset(Section::Authority, &owner, Rtype::A, Class::IN, 1, [a])
        .unwrap();
    let len = b.finish(None).unwrap();
    assert_eq!(len, limit);
    let v = MessageView::parse(&buf).unwrap();
    assert_eq!((v.header().ancount, v.header().nscount), (1, 1));
}

#[test]
fn rollback_also_forgets_compression_targets() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 12 + 17 + 40);
    b.push_question(&n("example.com."), Rtype::NS, Class::IN)
        .unwrap();
    let big = [0u8; 100];
    let err = b
        .push_rrset(
            Section::Answer,
            &n("x.example.com."),
            Rtype::TXT,
            Class::IN,
            1,
            [&big[..]],
        )
        .unwrap_err();
    assert!(matches!(err, BuildError::DoesNotFit { .. }));
    // "x.example.com." must not point into the bytes that were removed.
    b.push_rrset(
        Section::Answer,
        &n("x.example.com."),
        Rtype::A,
        Class::IN,
        1,
        [&[1u8, 2, 3, 4][..]],
    )
    .unwrap();
    b.finish(None).unwrap();
    let v = MessageView::parse(&buf).unwrap();
    assert_eq!(v.answers().next().unwrap().owner, n("x.example.com."));
}

#[test]
fn reserved_room_keeps_space_for_the_opt() {
    let opts = [EdnsOption::Nsid(b"ns1")];
    let opt = OptRecord {
        options: &opts,
        ..OptRecord::default()
    };
    assert_eq!(opt.wire_len(), 11 + 4 + 3);
    let limit = 12 + 17 + 16 + opt.wire_len();
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, limit);
    b.reserve(opt.wire_len());
    b.push_question(&n("example.com."), Rtype::A, Class::IN)
        .unwrap();
    let a: &[u8] = &[192, 0, 2, 1];
    b.push_rrset(
        Section::Answer,
        &n("example.com."),
        Rtype::A,
        Class::IN,
        1,
        [a],
    )
    .unwrap();
    assert!(b
        .push_rrset(
            Section::Additional,
            &n("example.com."),
            Rtype::A,
            Class::IN,
            1,
            [a]
        )
        .is_err());
    assert_eq!(b.finish(Some(&opt)).unwrap(), limit);
    let v = MessageView::parse(&buf).unwrap();
    let e = v.edns().unwrap();
    assert_eq!(e.udp_payload_size, 1232);
    assert_eq!(e.options().collect::<Vec<_>>(), opts);
}

#[test]
fn badvers_goes_half_in_header_half_in_opt() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 512);
    b.set_rcode(Rcode::BADVERS);
    let opt = OptRecord::default();
    b.finish(Some(&opt)).unwrap();
    assert_eq!(buf[3] & 0x0f, 0);
    assert_eq!(&buf[12..], &[0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 0]);
    assert_eq!(MessageView::parse(&buf).unwrap().rcode(), Rcode::BADVERS);

    let mut buf2 = Vec::new();
    let mut b = MessageBuilder::new(&mut buf2, 512);
    b.set_rcode(Rcode::BADVERS);
    assert_eq!(b.finish(None), Err(BuildError::ExtendedRcodeWithoutOpt));
    assert!(MessageView::parse(&buf2).is_ok());
}

#[test]
fn padding_rounds_the_message_to_the_block() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 1232);
    b.push_question(&n("example.com."), Rtype::A, Class::IN)
        .unwrap();
    let opt = OptRecord {
        pad_to_block: Some(468),
        ..OptRecord::default()
    };
    assert_eq!(b.finish(Some(&opt)).unwrap(), 468);
    let v = MessageView::parse(&buf).unwrap();
    let padding = v.edns().unwrap().options().next().unwrap();
    assert_eq!(padding, EdnsOption::Padding(468 - 12 - 17 - 11 - 4));

    // Near the limit, padding stops at the limit.
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 100);
    b.push_question(&n("example.com."), Rtype::A, Class::IN)
        .unwrap();
    assert_eq!(b.finish(Some(&opt)).unwrap(), 100);
}

#[test]
fn sections_are_written_in_order() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 512);
    let a: &[u8] = &[1, 2, 3, 4];
    b.push_record(Section::Authority, &n("a."), Rtype::A, Class::IN, 1, a)
        .unwrap();
    assert_eq!(
        b.push_record(Section::Answer, &n("a."), Rtype::A, Class::IN, 1, a),
        Err(BuildError::OutOfOrder)
    );
    assert_eq!(
        b.push_question(&n("a."), Rtype::A, Class::IN),
        Err(BuildError::OutOfOrder)
    );
}

#[test]
fn error_response_for_unparsable_query_keeps_id_and_opcode() {
    let mut out = Vec::new();
    assert_eq!(
        write_error_response(&[1, 2, 3], Rcode::FORMERR, &mut out),
        None
    );

    // A NOTIFY with a question and then junk: the question is echoed.
    let mut q = vec![0x77, 0x66, 0x20, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(&wire("Example.com."));
    q.extend_from_slice(&[0, 6, 0, 1, 0xff]);
    let len = write_error_response(&q, Rcode::FORMERR, &mut out).unwrap();
    let v = MessageView::parse(&out[..len]).unwrap();
    assert_eq!(v.header().id, 0x7766);
    assert_eq!(v.header().opcode, Opcode::NOTIFY);
    assert!(v.header().flags.qr);
    assert_eq!(v.rcode(), Rcode::FORMERR);
    assert!(v.question().unwrap().qname.eq_exact(&n("Example.com.")));
    assert!(v.edns().is_none());

    // Header only, with a count that lies: no question.
    let h = [0x77, 0x66, 0x00, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    let len = write_error_response(&h, Rcode::FORMERR, &mut out).unwrap();
    assert_eq!(len, 12);
    assert_eq!(&out[..4], &[0x77, 0x66, 0x80, 0x01]);
}

#[test]
fn not_implemented_echoes_id_and_opcode_and_nothing_else() {
    let mut out = Vec::new();
    assert_eq!(write_not_implemented(&[1, 2, 3], &mut out), None);
    // Opcode 15 with every flag bit set (TC, RD, RA, Z, AD, CD, AA), a
    // question and an OPT record: none of it comes back.
    let mut q = query();
    q[2] = (15 << 3) | 0x07;
    q[3] = 0xf0;
    let len = write_not_implemented(&q, &mut out).unwrap();
    assert_eq!(len, 12);
    assert_eq!(
        out,
        [0xbe, 0xef, 0x80 | (15 << 3), 0x04, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    // Opcode 2 (STATUS), header only.
    let h = [0x12, 0x34, 2 << 3 | 0x01, 0x10, 0, 0, 0, 0, 0, 0, 0, 0];
    write_not_implemented(&h, &mut out).unwrap();
    assert_eq!(
        out,
        [0x12, 0x34, 0x80 | (2 << 3), 0x04, 0, 0, 0, 0, 0, 0, 0, 0]
    );
}

#[test]
fn error_response_to_a_valid_opt_carries_an_opt() {
    // RFC 6891 §7: BADVERS needs the OPT for its upper bits.
    let mut q = query();
    q[12 + 13 + 4 + 6] = 1; // EDNS version 1
    let mut out = Vec::new();
    write_error_response(&q, Rcode::BADVERS, &mut out).unwrap();
    let v = MessageView::parse(&out).unwrap();
    assert_eq!(v.rcode(), Rcode::BADVERS);
    assert_eq!(v.header().id, 0xbeef);
    assert!(v.header().flags.rd && v.header().flags.cd);
    assert_eq!(v.edns().unwrap().version, 0);
}

#[test]
fn builder_reuses_its_buffer() {
    let mut buf = Vec::with_capacity(512);
    let cap = buf.capacity();
    for id in 0..3u16 {
        let mut b = MessageBuilder::new(&mut buf, 512);
        b.header_mut().id = id;
        b.push_question(&n("example.com."), Rtype::A, Class::IN)
            .unwrap();
        b.finish(None).unwrap();
        assert_eq!(MessageView::parse(&buf).unwrap().header().id, id);
    }
    assert_eq!(buf.capacity(), cap);
}

#[test]
fn tsig_appended_after_finish_is_the_last_record() {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 512);
    b.push_question(&n("example.com."), Rtype::SOA, Class::IN)
        .unwrap();
    b.finish(Some(&OptRecord::default())).unwrap();
    let before = buf.clone();
    let key = n("key.example.");
    let rdata = [0u8; 20];
    assert_eq!(
        append_additional(&mut buf, 60, &key, Rtype::TSIG, Class::ANY, 0, &rdata),
        Err(BuildError::DoesNotFit {
            section: Section::Additional
        })
    );
    assert_eq!(buf, before);
    append_additional(&mut buf, 512, &key, Rtype::TSIG, Class::ANY, 0, &rdata).unwrap();
    let v = MessageView::parse(&buf).unwrap();
    assert_eq!(v.header().arcount, 2);
    assert_eq!(v.tsig_offset(), Some(before.len()));
    assert_eq!(v.tsig().unwrap().owner, key);
    assert!(v.edns().is_some());
}
