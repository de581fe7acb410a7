//! Error responses that can be written for any input with a header, even one
//! that failed to parse.

use super::builder::MessageBuilder;
use super::edns::{OptRecord, DEFAULT_UDP_PAYLOAD};
use super::header::{Flags, Header, HEADER_LEN};
use super::view::{MessageView, Question};
use crate::class::Class;
use crate::name::Name;
use crate::rcode::Rcode;
use crate::rtype::Rtype;
use crate::wire::Reader;

/// Largest error response: a header, one question and an OPT fit well below it.
const ERROR_RESPONSE_LIMIT: usize = 512;

/// Writes a response carrying `rcode` to `query` into `out`, and returns its length;
/// `None` when the query is shorter than a header (there is no id to answer to).
///
/// The id, opcode, RD and CD are copied. The question is included only when the
/// header counts exactly one and it can be read. RFC 6891 §7: when the query
/// carried a valid OPT record (so the whole query parsed), the response carries
/// one too; it is required for an extended rcode such as BADVERS.
pub fn write_error_response(query: &[u8], rcode: Rcode, out: &mut Vec<u8>) -> Option<usize> {
    let header = Header::parse(query)?;
    let parsed = MessageView::parse(query).ok();
    let question = match &parsed {
        Some(view) => view.sole_question(),
        // Echoed only when it is the sole question the header counts.
        None if header.qdcount == 1 => first_question(query),
        None => None,
    };
    let with_opt = parsed.as_ref().is_some_and(|v| v.edns().is_some());
    let mut b =
        match MessageBuilder::response(out, ERROR_RESPONSE_LIMIT, &header, question.as_ref()) {
            Ok(b) => b,
            // A question too long for the limit cannot happen (names are ≤ 255
            // octets); answer without it all the same.
            Err(_) => MessageBuilder::response(out, ERROR_RESPONSE_LIMIT, &header, None).ok()?,
        };
    b.set_rcode(rcode);
    let opt = OptRecord {
        udp_payload_size: DEFAULT_UDP_PAYLOAD,
        ..OptRecord::default()
    };
    // Without an OPT an extended rcode is cut to its header bits; finish reports
    // that, and the message is still complete.
    match b.finish(with_opt.then_some(&opt)) {
        Ok(n) => Some(n),
        Err(_) => Some(out.len()),
    }
}

/// Writes the NOTIMP response to a message whose opcode this server does not
/// implement, and returns its length; `None` when `query` is shorter than a
/// header.
///
/// RFC 1035 §4.1.1 and RFC 6895 §2.2: with an unknown opcode the rest of the
/// message has no known meaning, so nothing of it is judged or echoed: the
/// answer is the id, the opcode, QR and the rcode, with every other flag clear
/// and no section (as BIND answers; ISC's `opcodeflg` compliance test).
pub fn write_not_implemented(query: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let asked = Header::parse(query)?;
    let header = Header {
        id: asked.id,
        flags: Flags {
            qr: true,
            ..Flags::default()
        },
        opcode: asked.opcode,
        rcode_low: Rcode::NOTIMP.header_bits(),
        qdcount: 0,
        ancount: 0,
        nscount: 0,
        arcount: 0,
    };
    out.clear();
    out.extend_from_slice(&header.to_bytes());
    Some(HEADER_LEN)
}

/// The first question of a message that may fail to parse somewhere later,
/// if its header counts one or more and the first can be read.
pub fn first_question(query: &[u8]) -> Option<Question> {
    if Header::parse(query)?.qdcount == 0 {
        return None;
    }
    let mut r = Reader::at(query, HEADER_LEN);
    let qname = Name::read(&mut r).ok()?;
    let qtype = Rtype(r.read_u16().ok()?);
    let qclass = Class(r.read_u16().ok()?);
    Some(Question {
        qname,
        qtype,
        qclass,
    })
}
