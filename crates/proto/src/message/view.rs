//! Reading a received message in place (RFC 1035 §4.1): validated once, then
//! read through cheap accessors that borrow the message bytes.

use super::edns::Edns;
use super::header::{Header, HEADER_LEN};
use super::{ParseError, ParseErrorKind, Section};
use crate::class::Class;
use crate::name::{walk_compressed, Name};
use crate::rcode::Rcode;
use crate::rtype::Rtype;
use crate::wire::Reader;

/// A question: the name keeps the case it was sent with so it can be echoed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub qname: Name,
    pub qtype: Rtype,
    pub qclass: Class,
}

/// The question of a message with its name left in the message: the
/// uncompressed wire form, in the case it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuestionWire<'a> {
    pub qname: &'a [u8],
    pub qtype: Rtype,
    pub qclass: Class,
}

/// One resource record of a received message. The rdata is not interpreted:
/// names inside it may be compressed and resolve against the whole message
/// (read them with a [`Reader`] over [`MessageView::as_bytes`] at `rdata_offset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub owner: Name,
    pub rtype: Rtype,
    pub class: Class,
    pub ttl: u32,
    pub rdata: &'a [u8],
    /// Where the rdata starts in the message.
    pub rdata_offset: usize,
    /// Where the record (its owner name) starts in the message.
    pub offset: usize,
}

/// Where the first question is. Its name is never compressed: a pointer
/// may only reach back, and before it lies the header, which no pointer may
/// target ([`walk_compressed`]); so the name is the octets from the header's
/// end to `name_end`, and is copied into a [`Name`] only when asked for.
#[derive(Debug, Clone, Copy)]
struct FirstQuestion {
    name_end: usize,
    qtype: Rtype,
    qclass: Class,
}

/// A received message whose structure has been checked from end to end.
#[derive(Debug, Clone)]
pub struct MessageView<'a> {
    buf: &'a [u8],
    header: Header,
    question: Option<FirstQuestion>,
    /// Offsets where the answer, authority and additional sections start.
    section_starts: [usize; 3],
    edns: Option<Edns<'a>>,
    tsig_offset: Option<usize>,
}

impl<'a> MessageView<'a> {
    /// Validates the whole message: header, every question and record (names with
    /// backwards-only pointers, fixed fields and rdata lengths in bounds), the OPT
    /// rules of RFC 6891 §6.1.1, TSIG placement (RFC 8945 §5.1), and no bytes after
    /// the last counted record. Allocates nothing.
    pub fn parse(buf: &'a [u8]) -> Result<MessageView<'a>, ParseError> {
        #[cfg(feature = "parse-counter")]
        super::parse_count::count();
        let header =
            Header::parse(buf).ok_or(ParseError::new(buf.len(), ParseErrorKind::ShortHeader))?;
        let mut r = Reader::at(buf, HEADER_LEN);
        let mut question = None;
        for i in 0..header.qdcount {
            let name_end = check_name(buf, r.position())?.0;
            r = Reader::at(buf, name_end);
            let qtype = Rtype(r.read_u16()?);
            let qclass = Class(r.read_u16()?);
            if i == 0 {
                question = Some(FirstQuestion {
                    name_end,
                    qtype,
                    qclass,
                });
            }
        }
        let mut section_starts = [0usize; 3];
        let mut edns = None;
        let mut tsig_offset = None;
        let counts = [header.ancount, header.nscount, header.arcount];
        for (section, (count, start)) in [Section::Answer, Section::Authority, Section::Additional]
            .into_iter()
            .zip(counts.into_iter().zip(section_starts.iter_mut()))
        {
            *start = r.position();
            for i in 0..count {
                let offset = r.position();
                let (end, owner_is_root) = check_name(buf, offset)?;
                r = Reader::at(buf, end);
                let rtype = Rtype(r.read_u16()?);
                let class = r.read_u16()?;
                let ttl = r.read_u32()?;
                let rdlen = r.read_u16()?;
                let rdata_offset = r.position();
                let rdata = r.read_bytes(usize::from(rdlen))?;
                if rtype == Rtype::OPT {
                    // RFC 6891 §6.1.1: one OPT, in the additional section, owned by the root.
                    if section != Section::Additional {
                        return Err(ParseError::new(offset, ParseErrorKind::OptNotInAdditional));
                    }
                    if !owner_is_root {
                        return Err(ParseError::new(offset, ParseErrorKind::OptOwnerNotRoot));
                    }
                    if edns.is_some() {
                        return Err(ParseError::new(offset, ParseErrorKind::MultipleOpt));
                    }
                    edns = Some(Edns::from_opt(class, ttl, rdata, rdata_offset)?);
                } else if rtype == Rtype::TSIG {
                    // RFC 8945 §5.1: the TSIG record is the last one in the message.
                    let last = section == Section::Additional && i.checked_add(1) == Some(count);
                    if !last {
                        return Err(ParseError::new(offset, ParseErrorKind::TsigNotLast));
                    }
                    tsig_offset = Some(offset);
                }
            }
        }
        if !r.is_empty() {
            return Err(ParseError::new(r.position(), ParseErrorKind::TrailingData));
        }
        Ok(MessageView {
            buf,
            header,
            question,
            section_starts,
            edns,
            tsig_offset,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The message bytes this view reads.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// The first question, if the message has any. Its name is copied out
    /// of the message on each call: keep the result rather than asking again.
    pub fn question(&self) -> Option<Question> {
        let q = self.question?;
        let qname = Name::from_wire(self.buf.get(HEADER_LEN..q.name_end)?).ok()?;
        Some(Question {
            qname,
            qtype: q.qtype,
            qclass: q.qclass,
        })
    }

    /// The question of a message that has exactly one, as every standard query
    /// must (RFC 9619); `None` otherwise. Copied out as [`MessageView::question`] is.
    pub fn sole_question(&self) -> Option<Question> {
        if self.header.qdcount == 1 {
            self.question()
        } else {
            None
        }
    }

    /// [`MessageView::sole_question`] without copying the name out.
    pub fn sole_question_wire(&self) -> Option<QuestionWire<'a>> {
        let q = self.question.filter(|_| self.header.qdcount == 1)?;
        Some(QuestionWire {
            qname: self.buf.get(HEADER_LEN..q.name_end)?,
            qtype: q.qtype,
            qclass: q.qclass,
        })
    }

    /// The type asked by a message with exactly one question, without
    /// copying its name.
    pub fn sole_qtype(&self) -> Option<Rtype> {
        self.question
            .filter(|_| self.header.qdcount == 1)
            .map(|q| q.qtype)
    }

    /// Every question, in message order (UPDATE calls the first the zone section).
    pub fn questions(&self) -> Questions<'a> {
        Questions {
            buf: self.buf,
            pos: HEADER_LEN,
            left: self.header.qdcount,
        }
    }

    /// Records of one section, in message order.
    pub fn records(&self, section: Section) -> Records<'a> {
        let count = match section {
            Section::Answer => self.header.ancount,
            Section::Authority => self.header.nscount,
            Section::Additional => self.header.arcount,
        };
        let pos = self
            .section_starts
            .get(section.index())
            .copied()
            .unwrap_or(self.buf.len());
        Records {
            buf: self.buf,
            pos,
            left: count,
        }
    }

    pub fn answers(&self) -> Records<'a> {
        self.records(Section::Answer)
    }

    pub fn authority(&self) -> Records<'a> {
        self.records(Section::Authority)
    }

    pub fn additional(&self) -> Records<'a> {
        self.records(Section::Additional)
    }

    /// The EDNS information, if the message carries an OPT record.
    pub fn edns(&self) -> Option<Edns<'a>> {
        self.edns
    }

    /// The full response code: header bits joined with the OPT's upper bits.
    pub fn rcode(&self) -> Rcode {
        Rcode::from_parts(
            self.header.rcode_low,
            self.edns.map_or(0, |e| e.ext_rcode_high),
        )
    }

    /// Where the TSIG record starts, if there is one: the bytes before it (with
    /// ARCOUNT decremented) are what its MAC covers (RFC 8945 §4.3.1).
    pub fn tsig_offset(&self) -> Option<usize> {
        self.tsig_offset
    }

    /// The TSIG record, if any.
    pub fn tsig(&self) -> Option<RecordView<'a>> {
        let at = self.tsig_offset?;
        Records {
            buf: self.buf,
            pos: at,
            left: 1,
        }
        .next()
    }
}

/// Checks a possibly compressed name at `start` by the rules of [`Name::read`]
/// (the same walk, [`walk_compressed`]) without copying it. Returns where the
/// name ends in the record and whether it is the root.
fn check_name(buf: &[u8], start: usize) -> Result<(usize, bool), ParseError> {
    let walked = walk_compressed(buf, start, |_| Ok(()))?;
    Ok((walked.end, walked.wire_len == 1))
}

/// Iterator over the questions of a validated message.
#[derive(Debug, Clone)]
pub struct Questions<'a> {
    buf: &'a [u8],
    pos: usize,
    left: u16,
}

impl Iterator for Questions<'_> {
    type Item = Question;

    fn next(&mut self) -> Option<Question> {
        self.left = self.left.checked_sub(1)?;
        let mut r = Reader::at(self.buf, self.pos);
        let qname = Name::read(&mut r).ok()?;
        let qtype = Rtype(r.read_u16().ok()?);
        let qclass = Class(r.read_u16().ok()?);
        self.pos = r.position();
        Some(Question {
            qname,
            qtype,
            qclass,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}

/// Iterator over the records of one section of a validated message.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
    left: u16,
}

impl<'a> Iterator for Records<'a> {
    type Item = RecordView<'a>;

    fn next(&mut self) -> Option<RecordView<'a>> {
        self.left = self.left.checked_sub(1)?;
        let offset = self.pos;
        let mut r = Reader::at(self.buf, offset);
        // The message was validated, so these reads succeed; should one fail the
        // iteration simply ends.
        let owner = Name::read(&mut r).ok()?;
        let rtype = Rtype(r.read_u16().ok()?);
        let class = Class(r.read_u16().ok()?);
        let ttl = r.read_u32().ok()?;
        let rdlen = r.read_u16().ok()?;
        let rdata_offset = r.position();
        let rdata = r.read_bytes(usize::from(rdlen)).ok()?;
        self.pos = r.position();
        Some(RecordView {
            owner,
            rtype,
            class,
            ttl,
            rdata,
            rdata_offset,
            offset,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}
