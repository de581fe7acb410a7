//! EDNS(0) padding (RFC 7830) with the block-length policy of RFC 8467 §4.1:
//! over an encrypted transport, a response to a query that carried the
//! Padding option is padded to a multiple of 468 octets, so its length tells
//! an observer little about the name asked. Done on the finished message, the
//! last step before it is sent, because the padding depends on its length.

use super::edns::OPTION_PADDING;
use super::header::{Header, HEADER_LEN};
use crate::rtype::Rtype;

/// RFC 8467 §4.1: the block length recommended for responses.
pub const RESPONSE_BLOCK: usize = 468;
/// RFC 8467 §4.1: the block length recommended for queries.
pub const QUERY_BLOCK: usize = 128;
/// An option's code and length fields (RFC 6891 §6.1.2).
const OPTION_HEADER: usize = 4;

/// Whether `query` carries the Padding option in its OPT record (RFC 7830
/// §4: a responder that sees it must pad its response).
pub fn carries_padding(query: &[u8]) -> bool {
    let Some(records) = Records::after_questions(query) else {
        return false;
    };
    for r in records {
        if r.rtype == Rtype::OPT {
            return options(query.get(r.rdata..r.end).unwrap_or_default())
                .any(|code| code == OPTION_PADDING);
        }
    }
    false
}

/// Pads `msg` to a multiple of `block` octets with a Padding option added to
/// its OPT record, which must be the message's last record: a TSIG after it
/// signed the message as it was. Leaves `msg` alone and returns false when
/// there is no such OPT, or when padding would take it past `limit`.
pub fn pad_to_block(msg: &mut Vec<u8>, block: usize, limit: usize) -> bool {
    let Some(opt) = Records::after_questions(msg).and_then(|r| r.last()) else {
        return false;
    };
    if opt.rtype != Rtype::OPT || opt.end != msg.len() || block == 0 {
        return false;
    }
    let Some(with_option) = msg.len().checked_add(OPTION_HEADER) else {
        return false;
    };
    let fill = with_option
        .checked_rem(block)
        .and_then(|r| block.checked_sub(r))
        .and_then(|f| f.checked_rem(block))
        .unwrap_or(0);
    let Some(padded) = with_option.checked_add(fill) else {
        return false;
    };
    let rdlen_at = opt.rdata.wrapping_sub(2);
    let old_rdlen = opt.end.saturating_sub(opt.rdata);
    let (Ok(fill16), Some(new_rdlen)) = (
        u16::try_from(fill),
        old_rdlen
            .checked_add(OPTION_HEADER)
            .and_then(|n| n.checked_add(fill))
            .and_then(|n| u16::try_from(n).ok()),
    ) else {
        return false;
    };
    if padded > limit {
        return false;
    }
    let Some(rdlen) = msg.get_mut(rdlen_at..opt.rdata) else {
        return false;
    };
    rdlen.copy_from_slice(&new_rdlen.to_be_bytes());
    msg.extend_from_slice(&OPTION_PADDING.to_be_bytes());
    msg.extend_from_slice(&fill16.to_be_bytes());
    // RFC 7830 §3: the padding octets should be zero.
    msg.resize(padded, 0);
    true
}

/// One resource record's place in a message.
#[derive(Debug, Clone, Copy)]
struct Record {
    rtype: Rtype,
    /// Where its RDATA starts and ends.
    rdata: usize,
    end: usize,
}

/// The records of every section after the question, in order; ends early at
/// anything malformed.
struct Records<'a> {
    msg: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> Records<'a> {
    fn after_questions(msg: &'a [u8]) -> Option<Records<'a>> {
        let h = Header::parse(msg)?;
        let mut at = HEADER_LEN;
        for _ in 0..h.qdcount {
            at = skip_name(msg, at)?.checked_add(4)?;
        }
        let left = [h.ancount, h.nscount, h.arcount]
            .iter()
            .map(|&n| usize::from(n))
            .fold(0usize, usize::saturating_add);
        Some(Records { msg, at, left })
    }
}

impl Iterator for Records<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.left = self.left.checked_sub(1)?;
        let fixed = skip_name(self.msg, self.at)?;
        let t = self.msg.get(fixed..fixed.checked_add(10)?)?;
        let rtype = Rtype(u16::from_be_bytes([*t.first()?, *t.get(1)?]));
        let rdlen = usize::from(u16::from_be_bytes([*t.get(8)?, *t.get(9)?]));
        let rdata = fixed.checked_add(10)?;
        let end = rdata.checked_add(rdlen)?;
        if end > self.msg.len() {
            self.left = 0;
            return None;
        }
        self.at = end;
        Some(Record { rtype, rdata, end })
    }
}

/// The offset just past the name at `at` (a pointer ends it).
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)?;
        match len & 0xc0 {
            0x00 if len == 0 => return at.checked_add(1),
            0x00 => at = at.checked_add(usize::from(len))?.checked_add(1)?,
            0xc0 => return at.checked_add(2),
            _ => return None,
        }
    }
}

/// The option codes in an OPT record's RDATA, until one runs past its end.
fn options(mut rdata: &[u8]) -> impl Iterator<Item = u16> + '_ {
    std::iter::from_fn(move || {
        let (head, rest) = rdata.split_first_chunk::<4>()?;
        let code = u16::from_be_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        rdata = rest.get(len..)?;
        Some(code)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::unwrap_used)]
    use super::*;

    /// A response: `a.` A with one answer and an OPT (with `opt_rdata`) last.
    fn response(opt_rdata: &[u8]) -> Vec<u8> {
        let mut m = vec![0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 1];
        m.extend_from_slice(b"\x01a\x00\x00\x01\x00\x01");
        m.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\xc0\x00\x02\x01");
        m.extend_from_slice(&[0, 0, 41, 4, 208, 0, 0, 0, 0]);
        m.extend_from_slice(&u16::try_from(opt_rdata.len()).unwrap().to_be_bytes());
        m.extend_from_slice(opt_rdata);
        m
    }

    #[test]
    fn a_response_is_padded_to_the_block_with_a_zero_filled_option() {
        let mut m = response(&[]);
        let before = m.len();
        assert!(pad_to_block(&mut m, RESPONSE_BLOCK, 65535));
        assert_eq!(m.len(), RESPONSE_BLOCK);
        // The OPT's RDLENGTH now covers the option; the option its fill.
        let rdlen = usize::from(u16::from_be_bytes([m[before - 2], m[before - 1]]));
        assert_eq!(rdlen, RESPONSE_BLOCK - before);
        assert_eq!(&m[before..before + 2], &OPTION_PADDING.to_be_bytes());
        let fill = usize::from(u16::from_be_bytes([m[before + 2], m[before + 3]]));
        assert_eq!(fill, RESPONSE_BLOCK - before - 4);
        assert!(m[before + 4..].iter().all(|&b| b == 0));
        // What the padding does not change, a parser still reads.
        let view = crate::message::MessageView::parse(&m).unwrap();
        let edns = view.edns().unwrap();
        assert!(edns.option(OPTION_PADDING).is_some());
    }

    #[test]
    fn options_already_in_the_opt_are_kept_before_the_padding() {
        let nsid = [0, 3, 0, 2, b'n', b's'];
        let mut m = response(&nsid);
        assert!(pad_to_block(&mut m, 128, 65535));
        assert_eq!(m.len(), 128);
        let view = crate::message::MessageView::parse(&m).unwrap();
        let edns = view.edns().unwrap();
        assert!(edns.option(3).is_some() && edns.option(OPTION_PADDING).is_some());
    }

    #[test]
    fn a_message_one_option_header_short_of_a_block_needs_no_fill() {
        let mut m = response(&[]);
        let block = m.len() + 4;
        assert!(pad_to_block(&mut m, block, 65535));
        assert_eq!(m.len(), block);
        assert_eq!(&m[block - 2..], &[0, 0], "an empty Padding option");
    }

    #[test]
    fn padding_past_the_limit_or_without_a_last_opt_leaves_the_message_alone() {
        let m = response(&[]);
        let mut over = m.clone();
        assert!(!pad_to_block(&mut over, RESPONSE_BLOCK, 400));
        assert_eq!(over, m);
        // A TSIG (any record) after the OPT: the signature would break.
        let mut signed = m.clone();
        signed[11] = 2;
        signed.extend_from_slice(b"\x00\x00\xfa\x00\xff\x00\x00\x00\x00\x00\x00");
        let copy = signed.clone();
        assert!(!pad_to_block(&mut signed, RESPONSE_BLOCK, 65535));
        assert_eq!(signed, copy);
        // No EDNS at all: nothing to pad with.
        let mut plain = m[..m.len() - 11].to_vec();
        plain[11] = 0;
        assert!(!pad_to_block(&mut plain, RESPONSE_BLOCK, 65535));
        for cut in 0..m.len() {
            let mut short = m[..cut].to_vec();
            assert!(!pad_to_block(&mut short, RESPONSE_BLOCK, 65535));
        }
    }

    #[test]
    fn a_query_asks_for_padding_only_with_the_option() {
        let mut q = vec![0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        q.extend_from_slice(b"\x01a\x00\x00\x01\x00\x01");
        let opt = |rdlen: u8, rdata: &[u8]| {
            let mut m = q.clone();
            m.extend_from_slice(&[0, 0, 41, 4, 208, 0, 0, 0, 0, 0, rdlen]);
            m.extend_from_slice(rdata);
            m
        };
        // A cookie-sized option 10, then Padding (12) of two octets.
        let both = [0, 10, 0, 2, 1, 2, 0, 12, 0, 2, 0, 0];
        assert!(carries_padding(&opt(12, &both)));
        assert!(!carries_padding(&opt(6, &both[..6])));
        // RDLENGTH ends before the Padding option: it is not in the OPT.
        assert!(!carries_padding(&opt(10, &both)));
        assert!(!carries_padding(&q));
    }
}
