//! Whether a message matches an entry, element by element, as Deckard's
//! `pydnstest/matchpart.py` decides (the guide's table, plus what the code
//! adds to it):
//!
//! - `qtype`, `qname`, `qcase`: the first question of each. Both empty
//!   match; one empty and not the other is a mismatch (the guide says an
//!   empty expected question is ignored; Deckard's code, which the scenarios
//!   were written against, does not ignore it).
//! - `subdomain`: the received name equals or is below the expected one (an
//!   expected message without a question accepts anything).
//! - `flags`: QR AA TC RD RA AD CD (not DO, not Z).
//! - `rcode`: the full rcode, header and OPT bits together.
//! - sections: the same number of records, every expected record among the
//!   received ones and every received one among the expected: owner without
//!   regard to case, class and type equal, TTL ignored, data compared in
//!   canonical wire form (RFC 4034 §6.2 as amended by RFC 6840 §5.1, which is
//!   what dnspython compares).
//! - `edns`: version (or its absence) and payload size; `nsid`: the NSID
//!   option's presence and value.
//! - `ttl` (the project's own, for its own scenarios; Unbound's testbound
//!   has one too): every expected answer record received with the TTL
//!   written.

use std::fmt;

use bulwark_proto::message::Question;
use bulwark_proto::Record;

use crate::message::{flags_text, question_text, record_text, Message};
use crate::scenario::{Entry, MatchElement};

/// The EDNS option code of NSID (RFC 5001).
const OPTION_NSID: u16 = 3;

/// Why a message does not match: the element and both values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub element: MatchElement,
    pub expected: String,
    pub got: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.expected.contains('\n') || self.got.contains('\n') {
            writeln!(f, "{} differs", self.element.keyword())?;
            writeln!(f, "  expected:")?;
            for l in self.expected.lines() {
                writeln!(f, "    {l}")?;
            }
            writeln!(f, "  got:")?;
            for l in self.got.lines() {
                writeln!(f, "    {l}")?;
            }
            Ok(())
        } else {
            write!(
                f,
                "{}: expected {}, got {}",
                self.element.keyword(),
                self.expected,
                self.got
            )
        }
    }
}

/// Every `MATCH` element of `entry` against `got`; the first that differs.
pub fn match_entry(entry: &Entry, got: &Message) -> Result<(), Mismatch> {
    entry
        .match_elements()
        .into_iter()
        .try_for_each(|el| match_element(el, &entry.message, got))
}

/// One element.
pub fn match_element(el: MatchElement, exp: &Message, got: &Message) -> Result<(), Mismatch> {
    let mismatch = |expected: String, got: String| {
        Err(Mismatch {
            element: el,
            expected,
            got,
        })
    };
    match el {
        MatchElement::Opcode => {
            if exp.opcode != got.opcode {
                return mismatch(exp.opcode.to_string(), got.opcode.to_string());
            }
        }
        MatchElement::Qtype | MatchElement::Qname | MatchElement::Qcase => {
            match (exp.question.first(), got.question.first()) {
                (None, None) => {}
                (Some(e), Some(g)) => {
                    let same = match el {
                        MatchElement::Qtype => e.qtype == g.qtype,
                        MatchElement::Qname => e.qname == g.qname,
                        _ => e.qname.eq_exact(&g.qname),
                    };
                    if !same {
                        return mismatch(question_text(e), question_text(g));
                    }
                }
                (e, g) => return mismatch(question_or_empty(e), question_or_empty(g)),
            }
        }
        MatchElement::Subdomain => {
            if let Some(e) = exp.question.first() {
                let root = bulwark_proto::Name::root();
                let qname = got.question.first().map_or(&root, |q| &q.qname);
                if !qname.ends_with(&e.qname) {
                    return mismatch(format!("a name at or below {}", e.qname), qname.to_string());
                }
            }
        }
        MatchElement::Flags => {
            let (e, g) = (flags_text(&exp.flags), flags_text(&got.flags));
            if e != g {
                return mismatch(format!("[{e}]"), format!("[{g}]"));
            }
        }
        MatchElement::Rcode => {
            if exp.rcode != got.rcode {
                return mismatch(exp.rcode.to_string(), got.rcode.to_string());
            }
        }
        MatchElement::Answer => return section(el, &exp.answer, &got.answer),
        MatchElement::Authority => return section(el, &exp.authority, &got.authority),
        MatchElement::Additional => return section(el, &exp.additional, &got.additional),
        MatchElement::Edns => {
            let describe = |m: &Message| match &m.edns {
                Some(e) => format!("version {} payload {}", e.version, e.payload),
                None => "no EDNS".to_string(),
            };
            let same = match (&exp.edns, &got.edns) {
                (None, None) => true,
                (Some(e), Some(g)) => e.version == g.version && e.payload == g.payload,
                _ => false,
            };
            if !same {
                return mismatch(describe(exp), describe(got));
            }
        }
        MatchElement::Nsid => {
            let nsid = |m: &Message| {
                m.edns.as_ref().and_then(|e| {
                    e.options
                        .iter()
                        .find(|(code, _)| *code == OPTION_NSID)
                        .map(|(_, data)| data.clone())
                })
            };
            let (e, g) = (nsid(exp), nsid(got));
            if e != g {
                let show = |v: Option<Vec<u8>>| {
                    v.map_or("no NSID".to_string(), |d| {
                        format!("NSID {:?}", String::from_utf8_lossy(&d))
                    })
                };
                return mismatch(show(e), show(g));
            }
        }
        MatchElement::Ttl => {
            let missing: Vec<String> = exp
                .answer
                .iter()
                .filter(|e| {
                    !got.answer
                        .iter()
                        .any(|g| same_record(e, g) && e.ttl == g.ttl)
                })
                .map(record_text)
                .collect();
            if !missing.is_empty() {
                let got_text = got.answer.iter().map(record_text).collect::<Vec<_>>();
                return mismatch(missing.join("\n"), got_text.join("\n"));
            }
        }
        // The network checks the transport (`Entry::transport_matches`).
        MatchElement::Tcp | MatchElement::Udp => {}
        // `match_elements` has expanded these.
        MatchElement::Question | MatchElement::All => {
            for basic in el.expand() {
                match_element(*basic, exp, got)?;
            }
        }
    }
    Ok(())
}

fn question_or_empty(q: Option<&Question>) -> String {
    q.map_or("<empty question>".to_string(), question_text)
}

/// dnspython's record equality: TTL ignored, owner without case, data in
/// canonical form.
pub fn same_record(a: &Record, b: &Record) -> bool {
    if a.owner != b.owner || a.class != b.class || a.rtype() != b.rtype() {
        return false;
    }
    let (mut ca, mut cb) = (Vec::new(), Vec::new());
    a.rdata.write_canonical(&mut ca);
    b.rdata.write_canonical(&mut cb);
    ca == cb
}

/// Deckard's `compare_rrs`: each expected record received, each received
/// record expected, and as many of both.
fn section(el: MatchElement, exp: &[Record], got: &[Record]) -> Result<(), Mismatch> {
    let all_found =
        |xs: &[Record], ys: &[Record]| xs.iter().all(|x| ys.iter().any(|y| same_record(x, y)));
    if exp.len() == got.len() && all_found(exp, got) && all_found(got, exp) {
        return Ok(());
    }
    let list = |rs: &[Record]| {
        if rs.is_empty() {
            "(nothing)".to_string()
        } else {
            rs.iter().map(record_text).collect::<Vec<_>>().join("\n")
        }
    };
    Err(Mismatch {
        element: el,
        expected: list(exp),
        got: list(got),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_str;
    use std::path::Path;

    /// The entry of step 10 of a small scenario whose expected answer is `entry`.
    fn expected(entry: &str) -> Entry {
        let text = format!(
            "CONFIG_END\nSCENARIO_BEGIN t\nSTEP 10 CHECK_ANSWER\nENTRY_BEGIN\n{entry}\nENTRY_END\nSCENARIO_END\n"
        );
        let s = parse_str(Path::new("t.rpl"), &text).unwrap();
        s.steps[0].entry.clone().unwrap()
    }

    fn received(entry: &str) -> Message {
        // The same syntax, read as a message and sent through the wire.
        let m = expected(entry).message;
        Message::from_wire(&m.to_wire()).unwrap()
    }

    const ANSWER: &str = "REPLY QR RD RA NOERROR\nSECTION QUESTION\nwww.example.com. IN A\n\
        SECTION ANSWER\nwww.example.com. IN CNAME www.next.com.\nwww.next.com. IN A 10.20.30.40";

    #[test]
    fn match_all_accepts_the_same_answer_in_another_order_case_and_ttl() {
        let e = expected(&format!("MATCH all\n{ANSWER}"));
        let got = received(
            "REPLY QR RD RA\nSECTION QUESTION\nWWW.example.COM. IN A\n\
             SECTION ANSWER\nwww.next.com. 5 IN A 10.20.30.40\nWWW.EXAMPLE.COM. 77 IN CNAME WWW.NEXT.COM.",
        );
        assert_eq!(match_entry(&e, &got), Ok(()));
    }

    #[test]
    fn a_missing_or_extra_record_or_flag_is_a_mismatch() {
        let e = expected(&format!("MATCH all\n{ANSWER}"));
        let fewer = received(
            "REPLY QR RD RA\nSECTION QUESTION\nwww.example.com. IN A\nSECTION ANSWER\n\
             www.next.com. IN A 10.20.30.40",
        );
        let err = match_entry(&e, &fewer).unwrap_err();
        assert_eq!(err.element, MatchElement::Answer);
        assert!(err
            .to_string()
            .contains("www.example.com. 3600 IN CNAME www.next.com."));
        let aa = received(&ANSWER.replace("REPLY QR", "REPLY QR AA"));
        let err = match_entry(&e, &aa).unwrap_err();
        assert_eq!(
            err.to_string(),
            "flags: expected [QR RD RA], got [QR AA RD RA]"
        );
    }

    #[test]
    fn a_received_message_written_octet_by_octet_matches() {
        #[rustfmt::skip]
        let wire: &[u8] = &[
            0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0, // QR RD RA, NOERROR
            3, b'W', b'w', b'W', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1,
            // www.example.com. CNAME www.next.com. ("www" "NEXT" + a pointer to "com" at 24)
            0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 11, 3, b'w', b'w', b'w', 4, b'N', b'E', b'X', b'T', 0xc0, 24,
            // www.next.com. A 10.20.30.40 (pointer to the CNAME's target at 45)
            0xc0, 45, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 20, 30, 40,
        ];
        let got = Message::from_wire(wire).unwrap();
        let e = expected(&format!("MATCH all\n{ANSWER}"));
        assert_eq!(match_entry(&e, &got), Ok(()));
    }

    #[test]
    fn rdata_compares_in_canonical_form() {
        let e = expected("MATCH answer\nSECTION ANSWER\nx. NS Ns.Example.");
        assert_eq!(
            match_entry(&e, &received("SECTION ANSWER\nx. NS ns.example.")),
            Ok(())
        );
        assert!(match_entry(&e, &received("SECTION ANSWER\nx. NS ns2.example.")).is_err());
    }

    #[test]
    fn qname_ignores_case_and_qcase_does_not() {
        let q = "SECTION QUESTION\nCaTALYSt.MoReCoWBEll. IN A";
        let got = received(q);
        let e = expected("MATCH qname qtype\nSECTION QUESTION\ncatalyst.morecowbell. IN A");
        assert_eq!(match_entry(&e, &got), Ok(()));
        let e = expected("MATCH qcase\nSECTION QUESTION\ncatalyst.morecowbell. IN A");
        assert!(match_entry(&e, &got).is_err());
        let e = expected(&format!("MATCH qcase\n{q}"));
        assert_eq!(match_entry(&e, &got), Ok(()));
        let e = expected("MATCH qtype\nSECTION QUESTION\ncatalyst.morecowbell. IN AAAA");
        assert_eq!(
            match_entry(&e, &got).unwrap_err().to_string(),
            "qtype: expected catalyst.morecowbell. IN AAAA, got CaTALYSt.MoReCoWBEll. IN A"
        );
    }

    #[test]
    fn subdomain_accepts_the_name_itself_and_below_only() {
        let e = expected("MATCH opcode subdomain\nSECTION QUESTION\nMORECOWBELL. IN A");
        assert_eq!(
            match_entry(
                &e,
                &received("SECTION QUESTION\ncatalyst.morecowbell. IN NS")
            ),
            Ok(())
        );
        assert_eq!(
            match_entry(&e, &received("SECTION QUESTION\nmorecowbell. IN A")),
            Ok(())
        );
        assert!(match_entry(&e, &received("SECTION QUESTION\ncowbell. IN A")).is_err());
        // Without a question the received name counts as the root.
        assert!(match_entry(&e, &received("REPLY QR")).is_err());
    }

    #[test]
    fn an_empty_expected_question_matches_only_an_empty_one() {
        let e = expected("MATCH qname");
        assert_eq!(match_entry(&e, &received("REPLY QR")), Ok(()));
        assert!(match_entry(&e, &received("SECTION QUESTION\nx. A")).is_err());
    }

    #[test]
    fn rcode_includes_the_extended_bits_and_opcode_is_compared() {
        let e = expected("MATCH rcode opcode\nREPLY QR BADVERS");
        assert_eq!(match_entry(&e, &received("REPLY QR BADVERS")), Ok(()));
        let err = match_entry(&e, &received("REPLY QR NOERROR")).unwrap_err();
        assert_eq!(err.to_string(), "rcode: expected BADVERS, got NOERROR");
        let e = expected("MATCH opcode\nREPLY NOTIFY");
        assert!(match_entry(&e, &received("REPLY QUERY")).is_err());
    }

    #[test]
    fn edns_and_nsid_compare_the_opt_record() {
        let e = expected("MATCH edns nsid");
        let mut got = received("REPLY QR");
        assert_eq!(match_entry(&e, &got), Ok(()));
        got.edns.as_mut().unwrap().payload = 1232;
        assert!(match_entry(&e, &got).is_err());
        got.edns.as_mut().unwrap().payload = 4096;
        got.edns
            .as_mut()
            .unwrap()
            .options
            .push((OPTION_NSID, b"ns1".to_vec()));
        assert_eq!(
            match_entry(&e, &got).unwrap_err().to_string(),
            "nsid: expected no NSID, got NSID \"ns1\""
        );
        got.edns = None;
        assert!(match_entry(&e, &got).is_err());
    }

    #[test]
    fn ttl_compares_the_answer_ttls() {
        let e = expected("MATCH answer ttl\nSECTION ANSWER\nx. 30 IN A 192.0.2.1");
        assert_eq!(
            match_entry(&e, &received("SECTION ANSWER\nx. 30 IN A 192.0.2.1")),
            Ok(())
        );
        let err = match_entry(&e, &received("SECTION ANSWER\nx. 300 IN A 192.0.2.1")).unwrap_err();
        assert_eq!(err.element, MatchElement::Ttl);
        // Without `ttl`, TTLs are ignored.
        let e = expected("MATCH answer\nSECTION ANSWER\nx. 30 IN A 192.0.2.1");
        assert_eq!(
            match_entry(&e, &received("SECTION ANSWER\nx. 300 IN A 192.0.2.1")),
            Ok(())
        );
    }

    #[test]
    fn an_entry_without_match_accepts_anything() {
        let e = expected("REPLY QR\nSECTION ANSWER\nx. A 1.2.3.4");
        assert_eq!(match_entry(&e, &received("REPLY NXDOMAIN")), Ok(()));
    }
}
