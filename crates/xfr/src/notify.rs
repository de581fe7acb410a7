//! NOTIFY (RFC 1996): a primary tells its secondaries that a zone changed, so
//! they check its serial now rather than at the next refresh.
//!
//! Both sides, as functions over bytes: the primary builds a NOTIFY and checks
//! the answer; the secondary reads a NOTIFY and writes the answer. A TSIG, when
//! used, is added by the caller after building and checked before reading.

use bulwark_proto::message::{
    BuildError, MessageBuilder, MessageView, OptRecord, ParseError, Section, DEFAULT_UDP_PAYLOAD,
};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Record, Rtype};

/// A NOTIFY and its answer are small: a question and one SOA.
const NOTIFY_LIMIT: usize = 512;

/// What a received NOTIFY says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyRequest {
    /// The zone that changed (the question name, as sent).
    pub apex: Name,
    /// The serial from the SOA in the answer section, when there is one. RFC
    /// 1996 §3.7: only a hint; the secondary still asks the primary.
    pub serial: Option<u32>,
}

/// Why a NOTIFY or its answer was not accepted, or could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    #[error("malformed message: {0}")]
    Malformed(ParseError),
    #[error("opcode {0:?} is not NOTIFY")]
    NotNotify(Opcode),
    /// A request arrived with QR set.
    #[error("message is a response, not a NOTIFY request")]
    IsResponse,
    /// An answer arrived with QR clear.
    #[error("message is not a response (QR clear)")]
    NotAResponse,
    /// RFC 1996 §3.7: a NOTIFY holds exactly one question.
    #[error("NOTIFY with {0} questions, not one")]
    QuestionCount(u16),
    /// RFC 1996 §3.7: the question asks for the SOA.
    #[error("NOTIFY for type {0}, not SOA")]
    NotSoa(Rtype),
    #[error("NOTIFY for class {0:?}, not IN")]
    WrongClass(Class),
    #[error("response ID {got} does not match NOTIFY ID {expected}")]
    IdMismatch { expected: u16, got: u16 },
    /// The secondary answered with an error (NOTAUTH, REFUSED, NOTIMP...).
    #[error("the secondary answered with rcode {0:?}")]
    ErrorRcode(Rcode),
    #[error("the response's question is not the NOTIFY's")]
    QuestionMismatch,
    #[error("message could not be built: {0}")]
    Build(BuildError),
}

impl NotifyError {
    /// The rcode a secondary answers a NOTIFY it did not accept with.
    pub fn rcode(&self) -> Rcode {
        match self {
            // We serve class IN only: not authoritative for anything else.
            NotifyError::WrongClass(_) => Rcode::NOTAUTH,
            NotifyError::NotNotify(_) => Rcode::NOTIMP,
            NotifyError::ErrorRcode(r) => *r,
            NotifyError::Build(_) => Rcode::SERVFAIL,
            _ => Rcode::FORMERR,
        }
    }
}

/// Builds a NOTIFY for the zone at `apex` into `out` and returns its length:
/// opcode NOTIFY, AA, the question `apex SOA IN`, and the zone's SOA in the
/// answer section when given (RFC 1996 §3.7).
pub fn build_notify(
    id: u16,
    apex: &Name,
    soa: Option<&Record>,
    out: &mut Vec<u8>,
) -> Result<usize, NotifyError> {
    let mut b = MessageBuilder::new(out, NOTIFY_LIMIT);
    let h = b.header_mut();
    h.id = id;
    h.opcode = Opcode::NOTIFY;
    // RFC 1996 §3.7: the primary speaks for the zone.
    h.flags.aa = true;
    b.push_question(apex, Rtype::SOA, Class::IN)
        .map_err(NotifyError::Build)?;
    if let Some(soa) = soa.filter(|r| r.rtype() == Rtype::SOA) {
        let rdata = soa.rdata.to_wire();
        b.push_record(
            Section::Answer,
            apex,
            Rtype::SOA,
            Class::IN,
            soa.ttl,
            &rdata,
        )
        .map_err(NotifyError::Build)?;
    }
    b.finish(None).map_err(NotifyError::Build)
}

/// Reads a received NOTIFY request (RFC 1996 §3.7): opcode NOTIFY, QR clear,
/// one question, of type SOA and class IN. The serial of a SOA for the zone in
/// the answer section is returned as a hint; one that does not parse is no
/// hint.
pub fn read_notify(msg: &MessageView<'_>) -> Result<NotifyRequest, NotifyError> {
    let h = msg.header();
    if h.opcode != Opcode::NOTIFY {
        return Err(NotifyError::NotNotify(h.opcode));
    }
    if h.flags.qr {
        return Err(NotifyError::IsResponse);
    }
    let Some(q) = msg.sole_question() else {
        return Err(NotifyError::QuestionCount(h.qdcount));
    };
    if q.qtype != Rtype::SOA {
        return Err(NotifyError::NotSoa(q.qtype));
    }
    if q.qclass != Class::IN {
        return Err(NotifyError::WrongClass(q.qclass));
    }
    let serial = msg
        .answers()
        .filter(|r| r.rtype == Rtype::SOA && r.class == Class::IN && r.owner == q.qname)
        .find_map(|r| {
            let mut reader = Reader::at(msg.as_bytes(), r.rdata_offset);
            match Rdata::read(Rtype::SOA, &mut reader, r.rdata.len()) {
                Ok(Rdata::Soa(soa)) => Some(soa.serial),
                _ => None,
            }
        });
    Ok(NotifyRequest {
        apex: q.qname.clone(),
        serial,
    })
}

/// Writes the answer to a NOTIFY `query` into `out` and returns its length
/// (RFC 1996 §4.7): the query's ID and question, QR, AA, opcode NOTIFY,
/// NOERROR, and an OPT when the query had one (RFC 6891 §7). The caller has
/// already accepted the NOTIFY (see [`read_notify`]).
pub fn write_notify_response(query: &[u8], out: &mut Vec<u8>) -> Result<usize, NotifyError> {
    let view = MessageView::parse(query).map_err(NotifyError::Malformed)?;
    if view.header().opcode != Opcode::NOTIFY {
        return Err(NotifyError::NotNotify(view.header().opcode));
    }
    let mut b =
        MessageBuilder::response_to(out, NOTIFY_LIMIT, &view).map_err(NotifyError::Build)?;
    b.header_mut().flags.aa = true;
    b.set_rcode(Rcode::NOERROR);
    let opt = OptRecord {
        udp_payload_size: DEFAULT_UDP_PAYLOAD,
        ..OptRecord::default()
    };
    let opt = view.edns().is_some().then_some(&opt);
    b.finish(opt).map_err(NotifyError::Build)
}

/// Checks the secondary's answer to our NOTIFY: our ID, QR set, opcode NOTIFY,
/// NOERROR, and the question (when echoed) ours. RFC 1996 §4.7: without it
/// the primary sends the NOTIFY again.
pub fn check_notify_response(msg: &[u8], id: u16, apex: &Name) -> Result<(), NotifyError> {
    let view = MessageView::parse(msg).map_err(NotifyError::Malformed)?;
    let h = view.header();
    if h.id != id {
        return Err(NotifyError::IdMismatch {
            expected: id,
            got: h.id,
        });
    }
    if !h.flags.qr {
        return Err(NotifyError::NotAResponse);
    }
    if h.opcode != Opcode::NOTIFY {
        return Err(NotifyError::NotNotify(h.opcode));
    }
    let rcode = view.rcode();
    if rcode != Rcode::NOERROR {
        return Err(NotifyError::ErrorRcode(rcode));
    }
    match (h.qdcount, view.question()) {
        (0, _) => Ok(()),
        (1, Some(q)) if q.qname == *apex && q.qtype == Rtype::SOA && q.qclass == Class::IN => {
            Ok(())
        }
        _ => Err(NotifyError::QuestionMismatch),
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::panic
    )]
    use super::*;

    fn apex() -> Name {
        "example.".parse().unwrap()
    }

    fn soa(serial: u32) -> Record {
        Record {
            owner: apex(),
            class: Class::IN,
            ttl: 3600,
            rdata: Rdata::from_text(Rtype::SOA, &format!("ns h {serial} 1 2 3 4"), &apex())
                .unwrap(),
        }
    }

    #[rustfmt::skip]
    const NOTIFY_WITH_SOA: &[u8] = &[
        0x12, 0x34, 0x24, 0x00, 0, 1, 0, 1, 0, 0, 0, 0,
        7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1,
        0xc0, 12, 0, 6, 0, 1, 0, 0, 0x0e, 0x10, 0, 29,
        2, b'n', b's', 0xc0, 12,
        1, b'h', 0xc0, 12,
        0, 0, 0, 42, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4,
    ];

    #[test]
    fn notify_is_exact_bytes_with_and_without_the_soa() {
        let mut out = Vec::new();
        let len = build_notify(0x1234, &apex(), Some(&soa(42)), &mut out).unwrap();
        assert_eq!(out, NOTIFY_WITH_SOA);
        assert_eq!(len, out.len());
        build_notify(0x1234, &apex(), None, &mut out).unwrap();
        #[rustfmt::skip]
        let bare: &[u8] = &[
            0x12, 0x34, 0x24, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1,
        ];
        assert_eq!(out, bare);
    }

    #[test]
    fn a_notify_reads_back_with_its_serial_hint() {
        let view = MessageView::parse(NOTIFY_WITH_SOA).unwrap();
        assert_eq!(
            read_notify(&view),
            Ok(NotifyRequest {
                apex: apex(),
                serial: Some(42)
            })
        );
        let bare = &NOTIFY_WITH_SOA[..25];
        let mut bare = bare.to_vec();
        bare[7] = 0; // ANCOUNT 0
        let view = MessageView::parse(&bare).unwrap();
        assert_eq!(read_notify(&view).unwrap().serial, None);
    }

    #[test]
    fn notifies_that_break_rfc_1996_are_refused_with_their_rcode() {
        let with = |at: usize, value: u8| {
            let mut m = NOTIFY_WITH_SOA.to_vec();
            m[at] = value;
            m
        };
        let cases: [(Vec<u8>, NotifyError, Rcode); 4] = [
            (
                with(2, 0x04),
                NotifyError::NotNotify(Opcode::QUERY),
                Rcode::NOTIMP,
            ),
            (with(2, 0xa4), NotifyError::IsResponse, Rcode::FORMERR),
            (with(22, 2), NotifyError::NotSoa(Rtype::NS), Rcode::FORMERR),
            (
                with(24, 3),
                NotifyError::WrongClass(Class::CH),
                Rcode::NOTAUTH,
            ),
        ];
        for (msg, want, rcode) in cases {
            let view = MessageView::parse(&msg).unwrap();
            let got = read_notify(&view).unwrap_err();
            assert_eq!(got, want);
            assert_eq!(got.rcode(), rcode);
        }
        // No question at all.
        let empty = [0x12, 0x34, 0x24, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let view = MessageView::parse(&empty).unwrap();
        assert_eq!(read_notify(&view), Err(NotifyError::QuestionCount(0)));
    }

    #[test]
    fn the_response_echoes_id_and_question_and_sets_qr_aa() {
        let mut out = Vec::new();
        let len = write_notify_response(NOTIFY_WITH_SOA, &mut out).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0x12, 0x34, 0xa4, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1,
        ];
        assert_eq!(out, want);
        assert_eq!(len, want.len());
        assert_eq!(check_notify_response(&out, 0x1234, &apex()), Ok(()));
    }

    #[test]
    fn a_notify_with_edns_gets_an_opt_back() {
        let mut query = Vec::new();
        build_notify(7, &apex(), None, &mut query).unwrap();
        // Append an OPT (root owner, type 41, payload 1232, no options).
        query.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
        query[11] = 1;
        let mut out = Vec::new();
        write_notify_response(&query, &mut out).unwrap();
        let view = MessageView::parse(&out).unwrap();
        assert!(view.edns().is_some());
        assert_eq!(check_notify_response(&out, 7, &apex()), Ok(()));
    }

    #[test]
    fn the_sender_checks_the_answer() {
        let mut ok = Vec::new();
        write_notify_response(NOTIFY_WITH_SOA, &mut ok).unwrap();
        let with = |at: usize, value: u8| {
            let mut m = ok.clone();
            m[at] = value;
            m
        };
        let other: Name = "example.org.".parse().unwrap();
        assert_eq!(
            check_notify_response(&ok, 1, &apex()),
            Err(NotifyError::IdMismatch {
                expected: 1,
                got: 0x1234
            })
        );
        assert_eq!(
            check_notify_response(&ok, 0x1234, &other),
            Err(NotifyError::QuestionMismatch)
        );
        assert_eq!(
            check_notify_response(&with(3, 9), 0x1234, &apex()),
            Err(NotifyError::ErrorRcode(Rcode::NOTAUTH))
        );
        assert_eq!(
            check_notify_response(&with(2, 0x24), 0x1234, &apex()),
            Err(NotifyError::NotAResponse)
        );
        assert_eq!(
            check_notify_response(&with(2, 0x84), 0x1234, &apex()),
            Err(NotifyError::NotNotify(Opcode::QUERY))
        );
        assert!(matches!(
            check_notify_response(&ok[..5], 0x1234, &apex()),
            Err(NotifyError::Malformed(_))
        ));
    }
}
