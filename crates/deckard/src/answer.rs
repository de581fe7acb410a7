//! Turning a range entry into the answer a simulated server sends, as
//! Deckard's `Entry.reply` and `DNSReply.adjust_reply` do:
//!
//! - `ADJUST do_not_answer`: nothing is sent.
//! - `RAW`: the octets as written; `ADJUST raw_id` puts the query's id in the
//!   first two.
//! - otherwise the entry's message (flags, opcode and rcode of its `REPLY`
//!   line, its sections). With `copy_id` or `copy_query` the message takes
//!   the query's EDNS: none if the query had none, else the query's version
//!   and flags (`DO` included: an entry's own `DO` then does not count) with
//!   dnspython's default payload of 1232; `copy_id` takes the query's id and
//!   the spelling of its question name, `copy_query` its whole question
//!   section. Without either, the message goes out as written: Deckard's
//!   default EDNS (version 0, 4096, `DO` if the entry says so) and an id of
//!   its own, which the resolver will not accept as an answer.
//!
//! Names are compressed without regard to case, as dnspython compresses
//! them: a record owner equal to the question's name takes the spelling
//! `copy_id` gave the question (Deckard's "copy_id bug", kept because the
//! resolvers' 0x20 checks have been tested against it).

use crate::message::{Edns, Message};
use crate::scenario::Entry;

/// dnspython's `DEFAULT_EDNS_PAYLOAD`, which `use_edns` puts in an adjusted answer.
pub const DNSPYTHON_PAYLOAD: u16 = 1232;

/// The octets to send in answer to `query`,
/// or `None` for `do_not_answer`. `own_id` is the id of an answer that does
/// not copy the query's.
pub fn answer(entry: &Entry, query: &Message, own_id: u16) -> Option<Vec<u8>> {
    let adjust = entry.adjust;
    if adjust.do_not_answer {
        return None;
    }
    if let Some(raw) = &entry.raw {
        let mut wire = raw.clone();
        if adjust.raw_id {
            if let Some(id) = wire.get_mut(..2) {
                id.copy_from_slice(&query.id.to_be_bytes());
            }
        }
        return Some(wire);
    }
    let mut m = entry.message.clone();
    if adjust.copy_id || adjust.copy_query {
        let template_options = m
            .edns
            .as_ref()
            .map(|e| e.options.clone())
            .unwrap_or_default();
        m.edns = query
            .edns
            .as_ref()
            .filter(|_| !entry.no_edns)
            .map(|q| Edns {
                version: q.version,
                payload: DNSPYTHON_PAYLOAD,
                dnssec_ok: q.dnssec_ok,
                z: q.z,
                options: template_options,
            });
        if adjust.copy_id {
            m.id = query.id;
            if let (Some(ours), Some(theirs)) = (m.question.first_mut(), query.question.first()) {
                ours.qname = theirs.qname.clone();
            }
        }
        if adjust.copy_query {
            m.question = query.question.clone();
        }
    } else {
        m.id = own_id;
    }
    Some(m.to_wire())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_str;
    use std::path::Path;

    fn range_entry(body: &str) -> Entry {
        let text = format!(
            "CONFIG_END\nSCENARIO_BEGIN t\nRANGE_BEGIN 0 100\nADDRESS 192.0.2.1\nENTRY_BEGIN\n{body}\nENTRY_END\nRANGE_END\nSCENARIO_END\n"
        );
        parse_str(Path::new("t.rpl"), &text).unwrap().ranges[0].entries[0].clone()
    }

    fn query(qname: &str, edns: Option<Edns>) -> Message {
        let mut m = range_entry(&format!("SECTION QUESTION\n{qname} IN A")).message;
        m.id = 0xabcd;
        m.edns = edns;
        m
    }

    #[test]
    fn copy_id_takes_the_id_and_the_question_spelling() {
        let e = range_entry(
            "MATCH opcode subdomain\nADJUST copy_id\nREPLY QR AA NOERROR\nSECTION QUESTION\n\
             MORECOWBELL. IN NS\nSECTION AUTHORITY\nMORECOWBELL. IN NS a.gtld-servers.net.",
        );
        let q = query("CaTALYSt.MoReCoWBEll.", Some(Edns::deckard_default()));
        let a = Message::from_wire(&answer(&e, &q, 1).unwrap()).unwrap();
        assert_eq!(a.id, 0xabcd);
        // The name's spelling comes from the query, the type from the entry.
        assert!(a.question[0]
            .qname
            .eq_exact(&"CaTALYSt.MoReCoWBEll.".parse().unwrap()));
        assert_eq!(a.question[0].qtype, bulwark_proto::Rtype::NS);
        assert_eq!(a.authority.len(), 1);
        assert_eq!(a.edns.unwrap().payload, DNSPYTHON_PAYLOAD);
    }

    #[test]
    fn an_adjusted_answer_octet_by_octet() {
        let e = range_entry(
            "ADJUST copy_id\nREPLY QR AA NOERROR\nSECTION QUESTION\nexample. IN A\n\
             SECTION ANSWER\nexample. 300 IN A 192.0.2.1",
        );
        let wire = answer(&e, &query("ExAmple.", None), 1).unwrap();
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0xab, 0xcd, 0x84, 0x00, 0, 1, 0, 1, 0, 0, 0, 0, // id, QR AA, one question and answer, no OPT
            7, b'E', b'x', b'A', b'm', b'p', b'l', b'e', 0, 0, 1, 0, 1, // the query's spelling
            0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1, // owner compressed onto it
        ];
        assert_eq!(wire, expected);
    }

    #[test]
    fn copy_query_takes_the_whole_question() {
        let e = range_entry("ADJUST copy_id copy_query\nREPLY QR\nSECTION QUESTION\nx. IN NS");
        let q = query("Www.Example.", None);
        let a = Message::from_wire(&answer(&e, &q, 1).unwrap()).unwrap();
        assert_eq!(a.question, q.question);
        assert_eq!(a.question[0].qtype, bulwark_proto::Rtype::A);
    }

    #[test]
    fn edns_follows_the_query_when_adjusted() {
        let e = range_entry("ADJUST copy_id\nREPLY QR DO NXDOMAIN");
        let without = Message::from_wire(&answer(&e, &query("x.", None), 1).unwrap()).unwrap();
        assert_eq!(without.edns, None);
        assert_eq!(without.rcode, bulwark_proto::Rcode::NXDOMAIN);
        let q = query(
            "x.",
            Some(Edns {
                dnssec_ok: false,
                ..Edns::deckard_default()
            }),
        );
        let with = Message::from_wire(&answer(&e, &q, 1).unwrap()).unwrap();
        let edns = with.edns.unwrap();
        assert!(!edns.dnssec_ok, "DO comes from the query, not the entry");
        assert_eq!(edns.version, 0);
    }

    #[test]
    fn an_unadjusted_entry_goes_out_as_written() {
        let e = range_entry("REPLY QR DO\nSECTION QUESTION\nx. IN A");
        let a = Message::from_wire(&answer(&e, &query("y.", None), 77).unwrap()).unwrap();
        assert_eq!(a.id, 77);
        assert_eq!(a.question[0].qname, "x.".parse().unwrap());
        let edns = a.edns.unwrap();
        assert_eq!((edns.payload, edns.dnssec_ok), (4096, true));
    }

    #[test]
    fn raw_answers_take_the_id_only_with_raw_id() {
        let e = range_entry("ADJUST raw_id\nRAW\n0000 8180 0000");
        assert_eq!(
            answer(&e, &query("x.", None), 1).unwrap(),
            [0xab, 0xcd, 0x81, 0x80, 0, 0]
        );
        let e = range_entry("RAW\n0000 8180 0000");
        assert_eq!(
            answer(&e, &query("x.", None), 1).unwrap(),
            [0, 0, 0x81, 0x80, 0, 0]
        );
    }

    #[test]
    fn no_edns_answers_without_opt_and_matches_only_queries_without() {
        let e = range_entry(
            "MATCH opcode qname edns\nADJUST copy_id\nNO_EDNS\nREPLY QR FORMERR\nSECTION QUESTION\nx. IN A",
        );
        let with = query("x.", Some(Edns::deckard_default()));
        let a = Message::from_wire(&answer(&e, &with, 1).unwrap()).unwrap();
        assert_eq!((a.edns, a.rcode), (None, bulwark_proto::Rcode::FORMERR));
        assert!(crate::matching::match_entry(&e, &with).is_err());
        assert_eq!(crate::matching::match_entry(&e, &query("x.", None)), Ok(()));
    }

    #[test]
    fn do_not_answer_sends_nothing() {
        let e = range_entry("ADJUST copy_id do_not_answer\nREPLY QR\nSECTION QUESTION\nx. IN A");
        assert_eq!(answer(&e, &query("x.", None), 1), None);
    }
}
