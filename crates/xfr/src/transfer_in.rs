//! Pulling a zone as a secondary: the SOA query that tells whether the primary
//! has a newer version, the AXFR or IXFR query, and a reader that checks each
//! received message and assembles the transfer (RFC 5936, RFC 1995).
//!
//! The reader is fed one message at a time as the caller receives them (and,
//! with TSIG, after the caller has verified each). A primary is not trusted:
//! every message is checked, and limits on records and octets stop a hostile
//! or broken primary from exhausting memory.

use bulwark_proto::message::{BuildError, MessageBuilder, MessageView, ParseError, Section};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Record, Rtype};
use bulwark_zone::diff::soa_serial_of;
use bulwark_zone::ZoneDiff;

use crate::serial::serial_gt;

/// Largest query we build: a question and one SOA fit well within it.
const QUERY_LIMIT: usize = 512;

/// Why a query could not be built or a response was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    #[error("malformed message: {0}")]
    Malformed(ParseError),
    #[error("response ID {got} does not match query ID {expected}")]
    IdMismatch { expected: u16, got: u16 },
    #[error("message is not a response (QR clear)")]
    NotAResponse,
    #[error("response has opcode {0:?}, not QUERY")]
    WrongOpcode(Opcode),
    /// The primary refused or failed (NOTAUTH, REFUSED, SERVFAIL, NOTIMP...).
    #[error("the primary answered with rcode {0:?}")]
    ErrorRcode(Rcode),
    /// A truncated answer: over UDP, ask again over TCP; over TCP it is broken.
    #[error("response is truncated (TC set)")]
    Truncated,
    #[error("the response's question is not the one asked")]
    QuestionMismatch,
    #[error("the SOA answer is not authoritative (AA clear)")]
    NotAuthoritative,
    /// RFC 5936 §2.2: a transfer starts with the zone's SOA; a SOA query's
    /// answer must hold it.
    #[error("no SOA record for the zone where one is required")]
    NoSoa,
    /// RFC 5936 §3: a record outside the zone is an error, not data to skip.
    #[error("record owner {owner} is outside the zone")]
    OutOfZone { owner: Box<Name> },
    #[error("record of class {0:?}, not IN")]
    WrongClass(Class),
    #[error("record of type {0}, which a zone cannot hold")]
    UnexpectedType(Rtype),
    #[error("record data of type {rtype} does not parse at offset {at}")]
    BadRdata { rtype: Rtype, at: usize },
    /// A SOA at another name than the apex.
    #[error("SOA record at {owner}, not at the zone apex")]
    SoaNotAtApex { owner: Box<Name> },
    /// RFC 5936 §2.2: the closing SOA repeats the opening one.
    #[error("the transfer opened with serial {first} and closed with {last}")]
    SoaMismatch { first: u32, last: u32 },
    /// RFC 1995 §4: each diff starts where the previous one ended, and the last
    /// ends at the serial the transfer opened with.
    #[error("diff chain broken: expected serial {expected}, got {got}")]
    BrokenChain { expected: u32, got: u32 },
    /// The incremental answer starts from another version than ours.
    #[error("incremental answer starts at serial {got}, we hold {expected}")]
    WrongStartSerial { expected: u32, got: u32 },
    #[error("data after the closing SOA")]
    DataAfterEnd,
    #[error("the transfer ended before its closing SOA")]
    Incomplete,
    #[error("more than {limit} records")]
    TooManyRecords { limit: usize },
    #[error("more than {limit} octets")]
    TooManyOctets { limit: usize },
    /// RFC 1995 §3: an IXFR query carries the SOA of the version we hold.
    #[error("an IXFR query needs the SOA of the version held")]
    NoClientSoa,
    #[error("{0} is not a zone transfer type")]
    NotATransferType(Rtype),
    #[error("query could not be built: {0}")]
    Build(BuildError),
}

impl TransferError {
    /// The rcode the primary answered with, when that is why the transfer failed.
    pub fn rcode(&self) -> Option<Rcode> {
        match self {
            TransferError::ErrorRcode(r) => Some(*r),
            _ => None,
        }
    }
}

/// Bounds on what one transfer may bring in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferLimits {
    /// Records in the whole transfer, SOAs included.
    pub max_records: usize,
    /// Octets of all messages together.
    pub max_octets: usize,
}

impl Default for TransferLimits {
    /// Ten million records and 1 GiB of messages: far above ordinary zones,
    /// low enough that one transfer cannot take the machine's memory.
    fn default() -> TransferLimits {
        TransferLimits {
            max_records: 10_000_000,
            max_octets: 1 << 30,
        }
    }
}

/// Whether more messages are needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    More,
    Done,
}

/// What a finished transfer brought.
// One per transfer: boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransferResult {
    /// RFC 1995 §4: the IXFR answer was our own serial or an older one, as a
    /// single SOA: nothing to do.
    UpToDate { serial: u32 },
    /// RFC 1995 §2/§4: the IXFR answer was a single SOA newer than ours: the
    /// primary will not send the changes this way (over UDP: ask over TCP;
    /// over TCP: ask with AXFR).
    RetryOverTcp { serial: u32 },
    /// The whole zone (AXFR, or an AXFR-style IXFR answer): the SOA, and every
    /// other record in the order received (the SOA is not repeated in `records`).
    Full { soa: Record, records: Vec<Record> },
    /// The changes from our version to the primary's, oldest first.
    Incremental { diffs: Vec<ZoneDiff> },
}

/// Builds a SOA query for `apex` (RFC 1996 §3.11: a secondary checks the
/// primary's serial before it transfers) into `out`; returns the length.
pub fn build_soa_query(id: u16, apex: &Name, out: &mut Vec<u8>) -> Result<usize, TransferError> {
    let mut b = query_builder(out, id);
    b.push_question(apex, Rtype::SOA, Class::IN)
        .map_err(TransferError::Build)?;
    b.finish(None).map_err(TransferError::Build)
}

/// Builds an AXFR or IXFR query for `apex` into `out`; returns the length. An
/// IXFR query carries `current_soa`, the SOA of the version we hold, in the
/// authority section (RFC 1995 §3).
pub fn build_transfer_query(
    id: u16,
    apex: &Name,
    qtype: Rtype,
    current_soa: Option<&Record>,
    out: &mut Vec<u8>,
) -> Result<usize, TransferError> {
    if qtype != Rtype::AXFR && qtype != Rtype::IXFR {
        return Err(TransferError::NotATransferType(qtype));
    }
    let mut b = query_builder(out, id);
    b.push_question(apex, qtype, Class::IN)
        .map_err(TransferError::Build)?;
    if qtype == Rtype::IXFR {
        let soa = current_soa
            .filter(|r| r.rtype() == Rtype::SOA)
            .ok_or(TransferError::NoClientSoa)?;
        let rdata = soa.rdata.to_wire();
        b.push_record(
            Section::Authority,
            apex,
            Rtype::SOA,
            Class::IN,
            soa.ttl,
            &rdata,
        )
        .map_err(TransferError::Build)?;
    }
    b.finish(None).map_err(TransferError::Build)
}

/// A query header: our id, opcode QUERY, no recursion wanted.
fn query_builder(out: &mut Vec<u8>, id: u16) -> MessageBuilder<'_> {
    let mut b = MessageBuilder::new(out, QUERY_LIMIT);
    let h = b.header_mut();
    h.id = id;
    h.opcode = Opcode::QUERY;
    b
}

/// The primary's SOA, from the answer to a SOA query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoaAnswer {
    pub soa: Record,
    pub serial: u32,
}

/// Reads the answer to [`build_soa_query`]: the ID, QR, opcode, rcode and
/// question must match, the answer must be authoritative (the primary serves
/// the zone), and hold the SOA of `apex`.
pub fn read_soa_response(msg: &[u8], id: u16, apex: &Name) -> Result<SoaAnswer, TransferError> {
    let view = MessageView::parse(msg).map_err(TransferError::Malformed)?;
    check_response_header(&view, id)?;
    check_question(&view, apex, Rtype::SOA, true)?;
    if !view.header().flags.aa {
        return Err(TransferError::NotAuthoritative);
    }
    for r in view.answers() {
        if r.rtype == Rtype::SOA && r.owner == *apex && r.class == Class::IN {
            let soa = read_record(&view, &r)?;
            let serial = soa_serial_of(&soa).ok_or(TransferError::NoSoa)?;
            return Ok(SoaAnswer { soa, serial });
        }
    }
    Err(TransferError::NoSoa)
}

/// Checks what every response to our queries must have: our ID, QR, opcode
/// QUERY, no TC, and NOERROR.
fn check_response_header(view: &MessageView<'_>, id: u16) -> Result<(), TransferError> {
    let h = view.header();
    if h.id != id {
        return Err(TransferError::IdMismatch {
            expected: id,
            got: h.id,
        });
    }
    if !h.flags.qr {
        return Err(TransferError::NotAResponse);
    }
    if h.opcode != Opcode::QUERY {
        return Err(TransferError::WrongOpcode(h.opcode));
    }
    let rcode = view.rcode();
    if rcode != Rcode::NOERROR {
        return Err(TransferError::ErrorRcode(rcode));
    }
    // RFC 5936 §2.2.1: TC is never set in a transfer; over UDP it means "use TCP".
    if h.flags.tc {
        return Err(TransferError::Truncated);
    }
    Ok(())
}

/// The question, when present (or when `required`), must be the one asked.
/// RFC 5936 §2.2.1: messages after the first may leave it out.
fn check_question(
    view: &MessageView<'_>,
    apex: &Name,
    qtype: Rtype,
    required: bool,
) -> Result<(), TransferError> {
    match (view.header().qdcount, view.question()) {
        (0, _) if !required => Ok(()),
        (1, Some(q)) if q.qname == *apex && q.qtype == qtype && q.qclass == Class::IN => Ok(()),
        _ => Err(TransferError::QuestionMismatch),
    }
}

/// A received record as typed data, its rdata names resolved against the
/// message (RFC 1035 §4.1.4).
fn read_record(
    view: &MessageView<'_>,
    r: &bulwark_proto::message::RecordView<'_>,
) -> Result<Record, TransferError> {
    let mut reader = Reader::at(view.as_bytes(), r.rdata_offset);
    let rdata =
        Rdata::read(r.rtype, &mut reader, r.rdata.len()).map_err(|_| TransferError::BadRdata {
            rtype: r.rtype,
            at: r.rdata_offset,
        })?;
    Ok(Record {
        owner: r.owner.clone(),
        class: r.class,
        ttl: r.ttl,
        rdata,
    })
}

/// Reads an AXFR or IXFR answer, message by message.
#[derive(Debug)]
pub struct TransferReader {
    apex: Name,
    qtype: Rtype,
    id: u16,
    client_serial: Option<u32>,
    limits: TransferLimits,
    records: usize,
    octets: usize,
    messages: usize,
    state: State,
}

/// Where the reader is in the answer (one per transfer).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum State {
    /// Nothing yet: the first record must be the zone's SOA.
    Start,
    /// Only the opening SOA so far; the next record tells the answer's shape
    /// (RFC 1995 §4).
    Opened {
        soa: Record,
    },
    /// A full zone: every record until the SOA comes again.
    Full {
        soa: Record,
        records: Vec<Record>,
    },
    /// Diffs: `open` is the one being read.
    Incremental {
        soa: Record,
        diffs: Vec<ZoneDiff>,
        open: OpenDiff,
    },
    Done(TransferResult),
    /// An error was returned; nothing more is accepted.
    Failed,
}

/// A diff being read: its old SOA and removals, then (once its new SOA came)
/// its additions.
#[derive(Debug)]
struct OpenDiff {
    old_soa: Record,
    removed: Vec<Record>,
    new_soa: Option<Record>,
    added: Vec<Record>,
}

impl OpenDiff {
    fn starting_at(old_soa: Record) -> OpenDiff {
        OpenDiff {
            old_soa,
            removed: Vec::new(),
            new_soa: None,
            added: Vec::new(),
        }
    }
}

/// What one record did to the transfer.
enum Step {
    Continue,
    /// It was the closing SOA.
    Ended,
}

impl TransferReader {
    /// A reader for the answer to a `qtype` (AXFR or IXFR) query with ID
    /// `query_id` for the zone at `apex`. `client_serial` is the serial we
    /// hold (sent in the IXFR query); it tells "up to date" from "newer" in a
    /// single-SOA IXFR answer and where the first diff must start.
    pub fn new(
        apex: Name,
        qtype: Rtype,
        query_id: u16,
        client_serial: Option<u32>,
        limits: TransferLimits,
    ) -> TransferReader {
        TransferReader {
            apex,
            qtype,
            id: query_id,
            client_serial,
            limits,
            records: 0,
            octets: 0,
            messages: 0,
            state: State::Start,
        }
    }

    /// Messages accepted so far.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// Records accepted so far, SOAs included.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Reads one received message. After an error the transfer is over:
    /// further messages are refused.
    pub fn feed(&mut self, msg: &[u8]) -> Result<Progress, TransferError> {
        if matches!(self.state, State::Done(_) | State::Failed) {
            self.state = State::Failed;
            return Err(TransferError::DataAfterEnd);
        }
        match self.feed_message(msg) {
            Ok(p) => Ok(p),
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    fn feed_message(&mut self, msg: &[u8]) -> Result<Progress, TransferError> {
        self.octets = self.octets.saturating_add(msg.len());
        if self.octets > self.limits.max_octets {
            return Err(TransferError::TooManyOctets {
                limit: self.limits.max_octets,
            });
        }
        let view = MessageView::parse(msg).map_err(TransferError::Malformed)?;
        // AA is not required here: Knot leaves it clear in its AXFR answers.
        check_response_header(&view, self.id)?;
        check_question(&view, &self.apex, self.qtype, false)?;
        self.messages = self.messages.saturating_add(1);
        // RFC 5936 §2.2.4/§2.2.5: the authority and additional sections have
        // no meaning in a transfer (OPT and TSIG are read by the caller).
        let mut answers = view.answers();
        while let Some(r) = answers.next() {
            self.records = self.records.saturating_add(1);
            if self.records > self.limits.max_records {
                return Err(TransferError::TooManyRecords {
                    limit: self.limits.max_records,
                });
            }
            if r.class != Class::IN {
                return Err(TransferError::WrongClass(r.class));
            }
            if !r.owner.ends_with(&self.apex) {
                return Err(TransferError::OutOfZone {
                    owner: Box::new(r.owner),
                });
            }
            if r.rtype.is_meta() || r.rtype.is_query_only() {
                return Err(TransferError::UnexpectedType(r.rtype));
            }
            let record = read_record(&view, &r)?;
            if let Step::Ended = self.accept(record)? {
                // RFC 5936 §2.2: the closing SOA is the last record.
                if answers.next().is_some() {
                    return Err(TransferError::DataAfterEnd);
                }
                return Ok(Progress::Done);
            }
        }
        // RFC 1995 §4: an IXFR answer that is the SOA alone. When that SOA is
        // not newer than ours, the primary has nothing for us and the answer
        // is complete. When it is newer, it may be a "use TCP" answer or the
        // first message of a transfer sent one record per message (BIND's
        // `transfer-format one-answer`): only the end of the stream tells,
        // and `finish` then reads it as "ask again".
        if self.qtype == Rtype::IXFR {
            if let (State::Opened { soa }, Some(ours)) = (&self.state, self.client_serial) {
                let serial = soa_serial_of(soa).ok_or(TransferError::NoSoa)?;
                if !serial_gt(serial, ours) {
                    self.state = State::Done(TransferResult::UpToDate { serial });
                    return Ok(Progress::Done);
                }
            }
        }
        Ok(Progress::More)
    }

    /// Takes one checked record into the transfer.
    fn accept(&mut self, record: Record) -> Result<Step, TransferError> {
        let soa_serial = if record.rtype() == Rtype::SOA {
            if record.owner != self.apex {
                return Err(TransferError::SoaNotAtApex {
                    owner: Box::new(record.owner),
                });
            }
            Some(soa_serial_of(&record).ok_or(TransferError::NoSoa)?)
        } else {
            None
        };
        let state = core::mem::replace(&mut self.state, State::Failed);
        let (next, step) = match (state, soa_serial) {
            // RFC 5936 §2.2: the first record is the zone's SOA.
            (State::Start, Some(_)) => (State::Opened { soa: record }, Step::Continue),
            (State::Start, None) => return Err(TransferError::NoSoa),
            // RFC 1995 §4: SOA then a non-SOA is a full zone, AXFR-style.
            (State::Opened { soa }, None) => (
                State::Full {
                    soa,
                    records: vec![record],
                },
                Step::Continue,
            ),
            (State::Opened { soa }, Some(serial)) => {
                let first = soa_serial_of(&soa).ok_or(TransferError::NoSoa)?;
                if serial == first {
                    // A zone holding nothing but its SOA.
                    let result = TransferResult::Full {
                        soa,
                        records: Vec::new(),
                    };
                    (State::Done(result), Step::Ended)
                } else if self.qtype == Rtype::AXFR {
                    return Err(TransferError::SoaMismatch {
                        first,
                        last: serial,
                    });
                } else {
                    // RFC 1995 §4: two SOAs open an incremental answer; the
                    // second is the version the first diff starts from.
                    if let Some(ours) = self.client_serial.filter(|&s| s != serial) {
                        return Err(TransferError::WrongStartSerial {
                            expected: ours,
                            got: serial,
                        });
                    }
                    let incremental = State::Incremental {
                        soa,
                        diffs: Vec::new(),
                        open: OpenDiff::starting_at(record),
                    };
                    (incremental, Step::Continue)
                }
            }
            (State::Full { soa, mut records }, None) => {
                records.push(record);
                (State::Full { soa, records }, Step::Continue)
            }
            (State::Full { soa, records }, Some(serial)) => {
                let first = soa_serial_of(&soa).ok_or(TransferError::NoSoa)?;
                if serial != first {
                    return Err(TransferError::SoaMismatch {
                        first,
                        last: serial,
                    });
                }
                (
                    State::Done(TransferResult::Full { soa, records }),
                    Step::Ended,
                )
            }
            (State::Incremental { soa, diffs, open }, soa_serial) => {
                accept_incremental(soa, diffs, open, record, soa_serial)?
            }
            (State::Done(_) | State::Failed, _) => return Err(TransferError::DataAfterEnd),
        };
        self.state = next;
        Ok(step)
    }

    /// The result, once [`TransferReader::feed`] has returned `Done`, or once
    /// the stream ended after an IXFR answer that was a newer SOA alone
    /// (RFC 1995 §2/§4: ask again over TCP, or with AXFR).
    pub fn finish(self) -> Result<TransferResult, TransferError> {
        match self.state {
            State::Done(result) => Ok(result),
            State::Opened { soa } if self.qtype == Rtype::IXFR => {
                let serial = soa_serial_of(&soa).ok_or(TransferError::NoSoa)?;
                Ok(TransferResult::RetryOverTcp { serial })
            }
            State::Failed => Err(TransferError::DataAfterEnd),
            _ => Err(TransferError::Incomplete),
        }
    }
}

/// One record of an incremental answer (RFC 1995 §4): between a diff's old
/// and new SOA the records are removals, after the new SOA additions; a SOA
/// after additions either opens the next diff or, repeating the opening SOA,
/// closes the answer.
fn accept_incremental(
    soa: Record,
    mut diffs: Vec<ZoneDiff>,
    mut open: OpenDiff,
    record: Record,
    soa_serial: Option<u32>,
) -> Result<(State, Step), TransferError> {
    let Some(serial) = soa_serial else {
        if open.new_soa.is_none() {
            open.removed.push(record);
        } else {
            open.added.push(record);
        }
        return Ok((State::Incremental { soa, diffs, open }, Step::Continue));
    };
    let Some(new_soa) = open.new_soa.take() else {
        open.new_soa = Some(record);
        return Ok((State::Incremental { soa, diffs, open }, Step::Continue));
    };
    let diff = ZoneDiff {
        old_soa: open.old_soa,
        new_soa,
        removed: open.removed,
        added: open.added,
    };
    let reached = diff.new_serial();
    diffs.push(diff);
    let last = soa_serial_of(&soa).ok_or(TransferError::NoSoa)?;
    if serial == last {
        // The closing SOA: the chain must have arrived at it.
        if reached != last {
            return Err(TransferError::BrokenChain {
                expected: reached,
                got: last,
            });
        }
        return Ok((
            State::Done(TransferResult::Incremental { diffs }),
            Step::Ended,
        ));
    }
    if serial != reached {
        return Err(TransferError::BrokenChain {
            expected: reached,
            got: serial,
        });
    }
    let open = OpenDiff::starting_at(record);
    Ok((State::Incremental { soa, diffs, open }, Step::Continue))
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

    /// Message header bytes: id 0x0102, then flags and counts.
    fn header(flags: [u8; 2], qd: u16, an: u16) -> Vec<u8> {
        let mut m = vec![0x01, 0x02, flags[0], flags[1]];
        m.extend_from_slice(&qd.to_be_bytes());
        m.extend_from_slice(&an.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m
    }

    const QUESTION_AXFR: &[u8] = &[7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 252, 0, 1];

    /// A SOA record at the apex (written in full, no compression) with `serial`.
    fn soa_rr(serial: u32) -> Vec<u8> {
        let mut r = vec![
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1, 0, 0, 0, 60, 0, 22,
        ];
        r.extend_from_slice(&[0, 0]); // mname and rname: the root
        r.extend_from_slice(&serial.to_be_bytes());
        r.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]);
        r
    }

    /// An A record `name.example.` 192.0.2.`last`.
    fn a_rr(label: &[u8], last: u8) -> Vec<u8> {
        let mut r = vec![u8::try_from(label.len()).unwrap()];
        r.extend_from_slice(label);
        r.extend_from_slice(&[7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0]);
        r.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, last]);
        r
    }

    fn response(records: &[Vec<u8>], with_question: bool) -> Vec<u8> {
        let n = u16::try_from(records.len()).unwrap();
        let mut m = header([0x84, 0x00], u16::from(with_question), n);
        if with_question {
            m.extend_from_slice(QUESTION_AXFR);
        }
        for r in records {
            m.extend_from_slice(r);
        }
        m
    }

    /// An IXFR answer in one message, question included.
    fn ixfr_response(records: &[Vec<u8>]) -> Vec<u8> {
        let mut m = response(records, true);
        m[22] = 251; // qtype IXFR
        m
    }

    fn ixfr_read(records: &[Vec<u8>], ours: u32) -> Result<TransferResult, TransferError> {
        let mut r = TransferReader::new(
            apex(),
            Rtype::IXFR,
            0x0102,
            Some(ours),
            TransferLimits::default(),
        );
        let progress = r.feed(&ixfr_response(records))?;
        let result = r.finish()?;
        // Only a newer SOA alone leaves the stream open.
        let open = matches!(result, TransferResult::RetryOverTcp { .. });
        assert_eq!(progress == Progress::More, open, "{result:?}");
        Ok(result)
    }

    #[test]
    fn every_ixfr_answer_shape_is_recognised() {
        // RFC 1995 §4, condensed: one diff from 1 to 3.
        let condensed = ixfr_read(
            &[
                soa_rr(3),
                soa_rr(1),
                a_rr(b"a", 1),
                soa_rr(3),
                a_rr(b"a", 2),
                soa_rr(3),
            ],
            1,
        )
        .unwrap();
        let TransferResult::Incremental { diffs } = condensed else {
            panic!("{condensed:?}")
        };
        assert_eq!(diffs.len(), 1);
        assert_eq!((diffs[0].old_serial(), diffs[0].new_serial()), (1, 3));
        assert_eq!(
            diffs[0].removed[0].to_string(),
            "a.example.\t60\tIN\tA\t192.0.2.1"
        );
        assert_eq!(
            diffs[0].added[0].to_string(),
            "a.example.\t60\tIN\tA\t192.0.2.2"
        );

        // Not condensed: 1 to 2 (a deletion only), 2 to 3 (an addition only).
        let chain = ixfr_read(
            &[
                soa_rr(3),
                soa_rr(1),
                a_rr(b"a", 1),
                soa_rr(2),
                soa_rr(2),
                soa_rr(3),
                a_rr(b"b", 2),
                soa_rr(3),
            ],
            1,
        )
        .unwrap();
        let TransferResult::Incremental { diffs } = chain else {
            panic!("{chain:?}")
        };
        let shape: Vec<(u32, u32, usize, usize)> = diffs
            .iter()
            .map(|d| {
                (
                    d.old_serial(),
                    d.new_serial(),
                    d.removed.len(),
                    d.added.len(),
                )
            })
            .collect();
        assert_eq!(shape, [(1, 2, 1, 0), (2, 3, 0, 1)]);

        // AXFR-style: SOA then a non-SOA.
        let full = ixfr_read(&[soa_rr(3), a_rr(b"a", 1), soa_rr(3)], 1).unwrap();
        assert!(matches!(full, TransferResult::Full { ref records, .. } if records.len() == 1));
        // A zone of nothing but its SOA.
        let bare = ixfr_read(&[soa_rr(3), soa_rr(3)], 1).unwrap();
        assert!(matches!(bare, TransferResult::Full { ref records, .. } if records.is_empty()));
        // The SOA alone.
        assert_eq!(
            ixfr_read(&[soa_rr(3)], 3),
            Ok(TransferResult::UpToDate { serial: 3 })
        );
        assert_eq!(
            ixfr_read(&[soa_rr(3)], 1),
            Ok(TransferResult::RetryOverTcp { serial: 3 })
        );
        // Serials compare on the circle (RFC 1982): 3 is newer than 2^32 - 2.
        assert_eq!(
            ixfr_read(&[soa_rr(3)], u32::MAX - 1),
            Ok(TransferResult::RetryOverTcp { serial: 3 })
        );
    }

    #[test]
    fn a_record_after_the_closing_ixfr_soa_is_refused() {
        assert_eq!(
            ixfr_read(
                &[soa_rr(3), soa_rr(1), soa_rr(3), soa_rr(3), a_rr(b"x", 1)],
                1
            ),
            Err(TransferError::DataAfterEnd)
        );
    }

    fn axfr_reader() -> TransferReader {
        TransferReader::new(apex(), Rtype::AXFR, 0x0102, None, TransferLimits::default())
    }

    #[test]
    fn soa_query_is_exact_bytes() {
        let mut out = Vec::new();
        let len = build_soa_query(0xabcd, &apex(), &mut out).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1,
        ];
        assert_eq!(out, want);
        assert_eq!(len, want.len());
    }

    #[test]
    fn ixfr_query_carries_our_soa_in_authority() {
        let soa = Record {
            owner: apex(),
            class: Class::IN,
            ttl: 60,
            rdata: Rdata::from_text(Rtype::SOA, ". . 7 1 2 3 4", &apex()).unwrap(),
        };
        let mut out = Vec::new();
        build_transfer_query(9, &apex(), Rtype::IXFR, Some(&soa), &mut out).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 9, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0,
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 251, 0, 1,
            0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 60, 0, 22,
            0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4,
        ];
        assert_eq!(out, want);
        assert_eq!(
            build_transfer_query(9, &apex(), Rtype::IXFR, None, &mut out),
            Err(TransferError::NoClientSoa)
        );
        assert_eq!(
            build_transfer_query(9, &apex(), Rtype::A, None, &mut out),
            Err(TransferError::NotATransferType(Rtype::A))
        );
        let len = build_transfer_query(9, &apex(), Rtype::AXFR, Some(&soa), &mut out).unwrap();
        assert_eq!(len, 25);
    }

    #[test]
    fn soa_response_checks_header_question_and_answer() {
        let mut good = header([0x84, 0x00], 1, 1);
        good.extend_from_slice(&[7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1]);
        good.extend_from_slice(&soa_rr(42));
        let answer = read_soa_response(&good, 0x0102, &apex()).unwrap();
        assert_eq!(answer.serial, 42);
        assert_eq!(answer.soa.rtype(), Rtype::SOA);

        let mut not_aa = good.clone();
        not_aa[2] = 0x80;
        let mut refused = good.clone();
        refused[3] = 5;
        let mut query = good.clone();
        query[2] = 0x04;
        let mut other_q = good.clone();
        other_q[23] = 2; // qtype NS
        let cases: [(&[u8], u16, TransferError); 5] = [
            (
                &good,
                7,
                TransferError::IdMismatch {
                    expected: 7,
                    got: 0x0102,
                },
            ),
            (&not_aa, 0x0102, TransferError::NotAuthoritative),
            (&refused, 0x0102, TransferError::ErrorRcode(Rcode::REFUSED)),
            (&query, 0x0102, TransferError::NotAResponse),
            (&other_q, 0x0102, TransferError::QuestionMismatch),
        ];
        for (msg, id, want) in cases {
            assert_eq!(read_soa_response(msg, id, &apex()), Err(want));
        }
        let mut empty = header([0x84, 0x00], 1, 0);
        empty.extend_from_slice(&[7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1]);
        assert_eq!(
            read_soa_response(&empty, 0x0102, &apex()),
            Err(TransferError::NoSoa)
        );
    }

    #[test]
    fn axfr_in_one_message() {
        let mut r = axfr_reader();
        let msg = response(&[soa_rr(5), a_rr(b"a", 1), a_rr(b"b", 2), soa_rr(5)], true);
        assert_eq!(r.feed(&msg), Ok(Progress::Done));
        let TransferResult::Full { soa, records } = r.finish().unwrap() else {
            panic!()
        };
        assert_eq!(soa_serial_of(&soa), Some(5));
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].to_string(), "b.example.\t60\tIN\tA\t192.0.2.2");
    }

    #[test]
    fn axfr_across_messages_without_questions_after_the_first() {
        let mut r = axfr_reader();
        assert_eq!(r.feed(&response(&[soa_rr(5)], true)), Ok(Progress::More));
        assert_eq!(
            r.feed(&response(&[a_rr(b"a", 1)], false)),
            Ok(Progress::More)
        );
        assert_eq!(r.feed(&response(&[], false)), Ok(Progress::More));
        assert_eq!(
            r.feed(&response(&[a_rr(b"b", 2), soa_rr(5)], false)),
            Ok(Progress::Done)
        );
        assert_eq!(r.messages(), 4);
        assert_eq!(r.records(), 4);
        assert!(matches!(r.finish(), Ok(TransferResult::Full { .. })));
    }

    #[test]
    fn each_broken_answer_has_its_error() {
        let mut wrong_id = response(&[soa_rr(5), soa_rr(5)], true);
        wrong_id[1] = 3;
        let mut ch = a_rr(b"a", 1);
        ch[14] = 3; // class CH
        let out_of_zone = {
            let mut r = vec![3, b'o', b'r', b'g', 0];
            r.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
            r
        };
        let mut notauth = response(&[], true);
        notauth[3] = 9;
        let cases: Vec<(Vec<u8>, TransferError)> = vec![
            (
                wrong_id,
                TransferError::IdMismatch {
                    expected: 0x0102,
                    got: 0x0103,
                },
            ),
            (notauth, TransferError::ErrorRcode(Rcode::NOTAUTH)),
            (response(&[a_rr(b"a", 1)], true), TransferError::NoSoa),
            (
                response(&[soa_rr(5), out_of_zone], true),
                TransferError::OutOfZone {
                    owner: Box::new("org.".parse().unwrap()),
                },
            ),
            (
                response(&[soa_rr(5), ch], true),
                TransferError::WrongClass(Class::CH),
            ),
            (
                response(&[soa_rr(5), a_rr(b"a", 1), soa_rr(6)], true),
                TransferError::SoaMismatch { first: 5, last: 6 },
            ),
            (
                response(&[soa_rr(5), a_rr(b"a", 1), soa_rr(5), a_rr(b"b", 1)], true),
                TransferError::DataAfterEnd,
            ),
        ];
        for (msg, want) in cases {
            let mut r = axfr_reader();
            assert_eq!(r.feed(&msg), Err(want.clone()), "{want}");
            // After an error nothing more is taken.
            assert_eq!(r.feed(&msg), Err(TransferError::DataAfterEnd));
        }
    }

    #[test]
    fn a_message_after_the_end_is_refused() {
        let mut r = axfr_reader();
        assert_eq!(
            r.feed(&response(&[soa_rr(5), soa_rr(5)], true)),
            Ok(Progress::Done)
        );
        assert_eq!(
            r.feed(&response(&[a_rr(b"a", 1)], false)),
            Err(TransferError::DataAfterEnd)
        );
    }

    #[test]
    fn an_unfinished_transfer_is_incomplete() {
        let mut r = axfr_reader();
        r.feed(&response(&[soa_rr(5), a_rr(b"a", 1)], true))
            .unwrap();
        assert_eq!(r.finish(), Err(TransferError::Incomplete));
    }

    #[test]
    fn limits_stop_the_transfer() {
        let limits = TransferLimits {
            max_records: 3,
            max_octets: usize::MAX,
        };
        let mut r = TransferReader::new(apex(), Rtype::AXFR, 0x0102, None, limits);
        let msg = response(&[soa_rr(5), a_rr(b"a", 1), a_rr(b"b", 2), soa_rr(5)], true);
        assert_eq!(
            r.feed(&msg),
            Err(TransferError::TooManyRecords { limit: 3 })
        );
        let limits = TransferLimits {
            max_records: usize::MAX,
            max_octets: msg.len() - 1,
        };
        let mut r = TransferReader::new(apex(), Rtype::AXFR, 0x0102, None, limits);
        assert_eq!(
            r.feed(&msg),
            Err(TransferError::TooManyOctets {
                limit: msg.len() - 1
            })
        );
    }
}
