//! A response cut down to its truncated form: the header with TC set, the
//! question and the OPT record, no other records. It carries no amplification
//! and tells a real client to retry over TCP (RFC 7766 §5): the "slipped"
//! answer of response rate limiting, and the fallback when a signed response
//! would not fit in UDP.

use super::header::{bits, HEADER_LEN};
use super::view::MessageView;
use crate::rtype::Rtype;
/// Offsets of ANCOUNT, NSCOUNT and ARCOUNT in the header.
const ANCOUNT_AT: usize = 6;
const NSCOUNT_AT: usize = 8;
const ARCOUNT_AT: usize = 10;
/// QTYPE and QCLASS after the question name.
const QUESTION_FIXED_LEN: usize = 4;

/// Rewrites the response in `out` into its truncated form, in place and without
/// allocating. Returns whether there is something to send; a response that does
/// not parse (which our own never fail to) is not sent.
pub fn truncate_to_question(out: &mut Vec<u8>) -> bool {
    let Some((question_end, opt)) = layout(out) else {
        out.clear();
        return false;
    };
    let mut end = question_end;
    if let Some((start, stop)) = opt {
        // The OPT record comes after the question, so moving it left is safe.
        out.copy_within(start..stop, question_end);
        end = question_end.saturating_add(stop.saturating_sub(start));
    }
    out.truncate(end);
    let arcount: u16 = if opt.is_some() { 1 } else { 0 };
    let ok = set_u16(out, ANCOUNT_AT, 0)
        && set_u16(out, NSCOUNT_AT, 0)
        && set_u16(out, ARCOUNT_AT, arcount);
    bits::set_truncated(out);
    ok
}

/// Where the question ends and the OPT record's span, if there is one.
fn layout(out: &[u8]) -> Option<(usize, Option<(usize, usize)>)> {
    let view = MessageView::parse(out).ok()?;
    // Our responses carry at most one question, its name never compressed (it
    // is the first name in the message).
    let question_end = match view.sole_question() {
        Some(q) => HEADER_LEN
            .checked_add(q.qname.wire_len())?
            .checked_add(QUESTION_FIXED_LEN)?,
        None => HEADER_LEN,
    };
    let opt = view
        .additional()
        .find(|r| r.rtype == Rtype::OPT)
        .and_then(|r| Some((r.offset, r.rdata_offset.checked_add(r.rdata.len())?)));
    Some((question_end, opt))
}

fn set_u16(out: &mut [u8], at: usize, value: u16) -> bool {
    match out.get_mut(at..at.saturating_add(2)) {
        Some(slot) => {
            slot.copy_from_slice(&value.to_be_bytes());
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    /// id 0x1234, QR AA, 1 question, 1 answer, 0 authority, 1 additional (OPT).
    fn response() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x84, 0x00, 0, 1, 0, 1, 0, 0, 0, 1];
        m.extend_from_slice(b"\x01a\x04test\x00\x00\x10\x00\x01");
        // TXT answer, owner compressed to the question.
        m.extend_from_slice(&[
            0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 4, 3, b'a', b'b', b'c',
        ]);
        // OPT: root owner, payload 1232, with a 4-octet NSID option.
        m.extend_from_slice(&[
            0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 8, 0, 3, 0, 4, b'n', b's', b'0', b'1',
        ]);
        m
    }

    #[test]
    fn slipped_response_keeps_header_question_and_opt_with_tc_set() {
        let mut out = response();
        assert!(truncate_to_question(&mut out));
        let view = MessageView::parse(&out).unwrap();
        assert!(view.header().flags.tc);
        assert_eq!(view.header().ancount, 0);
        assert_eq!(view.header().nscount, 0);
        assert_eq!(view.header().arcount, 1);
        assert_eq!(view.sole_question().unwrap().qtype, Rtype::TXT);
        assert!(view.edns().is_some_and(|e| e.requests_nsid()));
        assert_eq!(&out[..2], &[0x12, 0x34]);
    }

    #[test]
    fn slipped_response_without_opt_has_no_additional() {
        let mut out = response();
        out[11] = 0;
        out.truncate(out.len() - 19);
        assert!(truncate_to_question(&mut out));
        let view = MessageView::parse(&out).unwrap();
        assert!(view.header().flags.tc);
        assert_eq!(view.header().arcount, 0);
        assert_eq!(out.len(), HEADER_LEN + 12);
    }

    #[test]
    fn garbage_is_not_sent() {
        let mut out = vec![1, 2, 3];
        assert!(!truncate_to_question(&mut out));
        assert!(out.is_empty());
    }
}
