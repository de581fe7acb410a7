//! Reading messages: table-driven wire cases with byte literals.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use bulwark_proto::message::{EdnsOption, MessageView, ParseErrorKind, Section};
use bulwark_proto::name::NameError;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};

const HEADER_QUERY_1Q_1AR: [u8; 12] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
const QUESTION_EXAMPLE_COM_A: [u8; 17] = [
    7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1,
];
/// OPT: root owner, type 41, payload 4096, rcode/version 0, DO set, no options.
const OPT_4096_DO: [u8; 11] = [0, 0, 41, 0x10, 0x00, 0, 0, 0x80, 0, 0, 0];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

#[test]
fn query_with_opt_parses_to_its_fields() {
    let msg = cat(&[&HEADER_QUERY_1Q_1AR, &QUESTION_EXAMPLE_COM_A, &OPT_4096_DO]);
    let v = MessageView::parse(&msg).unwrap();
    let h = v.header();
    assert_eq!(h.id, 0x1234);
    assert!(h.flags.rd && !h.flags.qr);
    assert_eq!(h.opcode, Opcode::QUERY);
    let q = v.sole_question().unwrap();
    assert_eq!(q.qname, n("example.com."));
    assert_eq!((q.qtype, q.qclass), (Rtype::A, Class::IN));
    let e = v.edns().unwrap();
    assert_eq!(e.udp_payload_size, 4096);
    assert!(e.dnssec_ok);
    assert_eq!(e.version, 0);
    assert_eq!(e.options().count(), 0);
    assert_eq!(v.additional().count(), 1);
    assert_eq!(v.answers().count(), 0);
    assert_eq!(v.rcode(), Rcode::NOERROR);
}

#[test]
fn question_case_is_kept_for_echoing() {
    let mut q = QUESTION_EXAMPLE_COM_A;
    q[1] = b'E';
    let mut h = HEADER_QUERY_1Q_1AR;
    h[11] = 0;
    let msg = cat(&[&h, &q]);
    let v = MessageView::parse(&msg).unwrap();
    assert!(v.question().unwrap().qname.eq_exact(&n("Example.com.")));
    assert!(v.edns().is_none());
}

#[test]
fn response_records_resolve_compressed_owners() {
    // Response: example.com. A with one answer whose owner points to offset 12.
    let header = [0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
    let answer = [0xc0, 12, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1];
    let msg = cat(&[&header, &QUESTION_EXAMPLE_COM_A, &answer]);
    let v = MessageView::parse(&msg).unwrap();
    let recs: Vec<_> = v.records(Section::Answer).collect();
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r.owner, n("example.com."));
    assert_eq!((r.rtype, r.class, r.ttl), (Rtype::A, Class::IN, 3600));
    assert_eq!(r.rdata, &[192, 0, 2, 1]);
    assert_eq!(r.rdata_offset, 12 + 17 + 12);
    assert_eq!(r.offset, 29);
}

#[test]
fn badvers_is_split_between_header_and_opt() {
    // RFC 6891 §6.1.3: BADVERS = 16 is 0 in the header and 1 in the OPT.
    let header = [0, 1, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 1];
    let opt = [0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 0];
    let msg = cat(&[&header, &opt]);
    let v = MessageView::parse(&msg).unwrap();
    assert_eq!(v.header().rcode_low, 0);
    assert_eq!(v.edns().unwrap().ext_rcode_high, 1);
    assert_eq!(v.rcode(), Rcode::BADVERS);
}

#[test]
fn edns_options_are_typed() {
    let header = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let mut opt = vec![0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0];
    let options: &[u8] = &[
        0, 3, 0, 0, // NSID request
        0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, // client cookie
        0, 11, 0, 0, // keepalive, query form
        0, 12, 0, 2, 0, 0, // padding
        0, 15, 0, 3, 0, 22, b'x', // EDE 22
        0, 8, 0, 4, 0, 1, 0, 0, // subnet, raw
        0xfd, 0xe9, 0, 1, 9, // unknown 65001
    ];
    opt.extend_from_slice(&(options.len() as u16).to_be_bytes());
    opt.extend_from_slice(options);
    let msg = cat(&[&header, &opt]);
    let v = MessageView::parse(&msg).unwrap();
    let e = v.edns().unwrap();
    assert_eq!(e.cookie(), Some(([1, 2, 3, 4, 5, 6, 7, 8], None)));
    assert!(e.requests_nsid());
    let got: Vec<_> = e.options().collect();
    assert_eq!(
        got,
        [
            EdnsOption::Nsid(&[]),
            EdnsOption::Cookie {
                client: [1, 2, 3, 4, 5, 6, 7, 8],
                server: None
            },
            EdnsOption::TcpKeepalive(None),
            EdnsOption::Padding(2),
            EdnsOption::Ede {
                code: 22,
                text: b"x"
            },
            EdnsOption::ClientSubnet(&[0, 1, 0, 0]),
            EdnsOption::Unknown {
                code: 65001,
                data: &[9]
            },
        ]
    );
}

#[test]
fn malformed_messages_are_rejected_with_their_offset() {
    let q = &QUESTION_EXAMPLE_COM_A[..];
    let opt = &OPT_4096_DO[..];
    let h = |qd: u8, an: u8, ns: u8, ar: u8| [0u8, 1, 0, 0, 0, qd, 0, an, 0, ns, 0, ar];
    // A TSIG record (type 250) with empty rdata, owner root.
    let tsig: &[u8] = &[0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0];
    let a_rec: &[u8] = &[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4];
    let opt_at_name: &[u8] = &[0xc0, 12, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0];
    let cases: Vec<(&str, Vec<u8>, usize, ParseErrorKind)> = vec![
        (
            "short header",
            vec![0, 1, 0],
            3,
            ParseErrorKind::ShortHeader,
        ),
        (
            "question count larger than data",
            cat(&[&h(2, 0, 0, 0), q]),
            29,
            ParseErrorKind::BadName(NameError::Truncated),
        ),
        (
            "answer count larger than data",
            cat(&[&h(1, 1, 0, 0), q]),
            29,
            ParseErrorKind::BadName(NameError::Truncated),
        ),
        (
            "rdata longer than message",
            cat(&[&h(1, 1, 0, 0), q, &a_rec[..14]]),
            41,
            ParseErrorKind::Truncated,
        ),
        (
            "trailing bytes",
            cat(&[&h(1, 0, 0, 0), q, &[0]]),
            29,
            ParseErrorKind::TrailingData,
        ),
        (
            "pointer to itself",
            cat(&[&h(1, 0, 0, 0), &[0xc0, 12, 0, 1, 0, 1]]),
            12,
            ParseErrorKind::BadName(NameError::BadPointer),
        ),
        (
            "forward pointer",
            cat(&[&h(1, 0, 0, 0), &[0xc0, 14, 0, 0, 1, 0, 1]]),
            12,
            ParseErrorKind::BadName(NameError::BadPointer),
        ),
        (
            "pointer loop in an owner",
            cat(&[&h(1, 1, 0, 0), q, &[0xc0, 29], &a_rec[2..]]),
            29,
            ParseErrorKind::BadName(NameError::BadPointer),
        ),
        (
            "reserved label type",
            cat(&[&h(1, 0, 0, 0), &[0x40, 0, 0, 1, 0, 1]]),
            12,
            ParseErrorKind::BadName(NameError::BadLabelType),
        ),
        (
            "two OPT records",
            cat(&[&h(1, 0, 0, 2), q, opt, opt]),
            40,
            ParseErrorKind::MultipleOpt,
        ),
        (
            "OPT owner not root",
            cat(&[&h(1, 0, 0, 1), q, opt_at_name]),
            29,
            ParseErrorKind::OptOwnerNotRoot,
        ),
        (
            "OPT in the answer section",
            cat(&[&h(1, 1, 0, 0), q, opt]),
            29,
            ParseErrorKind::OptNotInAdditional,
        ),
        (
            "TSIG before OPT",
            cat(&[&h(1, 0, 0, 2), q, tsig, opt]),
            29,
            ParseErrorKind::TsigNotLast,
        ),
        (
            "TSIG in the answer section",
            cat(&[&h(1, 1, 0, 0), q, tsig]),
            29,
            ParseErrorKind::TsigNotLast,
        ),
        (
            "OPT option running past its data",
            cat(&[
                &h(0, 0, 0, 1),
                &[0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 4, 0, 3, 0, 9],
            ]),
            23,
            ParseErrorKind::OptionTruncated,
        ),
        (
            "cookie of a bad length",
            cat(&[
                &h(0, 0, 0, 1),
                &[0, 0, 41, 2, 0, 0, 0, 0, 0, 0, 5, 0, 10, 0, 1, 7],
            ]),
            23,
            ParseErrorKind::BadOption { code: 10 },
        ),
    ];
    for (what, msg, at, kind) in cases {
        let err = MessageView::parse(&msg).unwrap_err();
        assert_eq!((err.at, err.kind), (at, kind), "{what}");
    }
}

#[test]
fn tsig_last_is_accepted_and_located() {
    let tsig: &[u8] = &[0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0];
    let h = [0u8, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2];
    let msg = cat(&[&h, &QUESTION_EXAMPLE_COM_A, &OPT_4096_DO, tsig]);
    let v = MessageView::parse(&msg).unwrap();
    assert_eq!(v.tsig_offset(), Some(40));
    assert_eq!(v.tsig().unwrap().rtype, Rtype::TSIG);
    assert!(v.edns().is_some());
}

#[test]
fn several_questions_parse_but_have_no_sole_question() {
    let h = [0u8, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0];
    let msg = cat(&[&h, &QUESTION_EXAMPLE_COM_A, &[0xc0, 12, 0, 28, 0, 1]]);
    let v = MessageView::parse(&msg).unwrap();
    assert_eq!(v.question().unwrap().qtype, Rtype::A);
    assert!(v.sole_question().is_none());
    let all: Vec<_> = v.questions().map(|q| (q.qname, q.qtype)).collect();
    assert_eq!(
        all,
        [
            (n("example.com."), Rtype::A),
            (n("example.com."), Rtype::AAAA)
        ]
    );
}
