//! Answering zone transfers: AXFR (RFC 5936) and IXFR (RFC 1995) as a stream
//! of complete DNS messages, read straight from a [`Zone`]'s wire-form rdata.
//!
//! Nothing here holds a transfer in memory: [`TransferWriter`] walks the zone
//! (or the journal's diffs) and fills one message at a time into a buffer the
//! caller reuses, so a zone of millions of records goes out in constant
//! memory. Each message leaves `reserve` octets free so the caller can sign it
//! with TSIG (RFC 8945 §5.3.1) after it is built.

mod names;

use core::cmp::Ordering;
use core::ops::Range;

use bulwark_proto::message::{
    BuildError, Flags, Header, MessageBuilder, MessageView, OptRecord, Question, Section,
    HEADER_LEN,
};
use bulwark_proto::rdata::{compressible_pieces, RdataPiece};
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Rtype};
use bulwark_zone::zone::Node;
use bulwark_zone::{Zone, ZoneDiff};

use crate::serial::serial_cmp;
#[cfg(test)]
use names::ascii_lowercase_word;
use names::NameMemory;

/// Largest message over TCP: its length goes in a two-octet prefix (RFC 1035 §4.2.2).
pub const MAX_TCP_MESSAGE: usize = 65_535;

/// How to answer an IXFR query for a client at some serial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IxfrPlan {
    /// The client is at our serial or newer: RFC 1995 §2 answers with our
    /// current SOA alone.
    UpToDate,
    /// These journal diffs, applied in order, take the client to our serial.
    Incremental(Range<usize>),
    /// The journal cannot take the client to our serial: answer with the whole
    /// zone, AXFR-style (RFC 1995 §4).
    Axfr,
}

/// Decides how to answer an IXFR from a client at `client_serial`, given the
/// current zone and its journal (oldest diff first).
///
/// The chosen diffs are the shortest contiguous chain that starts at the
/// client's serial and ends at the zone's: found by walking back from the
/// newest diff, so an old, since-reused serial earlier in the journal is not
/// taken for the client's.
pub fn plan_ixfr(client_serial: u32, current: &Zone, journal: &[ZoneDiff]) -> IxfrPlan {
    let Some(serial) = current.serial() else {
        return IxfrPlan::Axfr;
    };
    match serial_cmp(client_serial, serial) {
        // RFC 1995 §2: the client is not behind us.
        Some(Ordering::Equal | Ordering::Greater) => return IxfrPlan::UpToDate,
        Some(Ordering::Less) => {}
        // RFC 1982 §3.2: serials 2^31 apart are not ordered; a full copy is
        // the only answer that cannot be wrong.
        None => return IxfrPlan::Axfr,
    }
    let mut expected_new = serial;
    for (i, diff) in journal.iter().enumerate().rev() {
        if diff.new_serial() != expected_new {
            break;
        }
        if diff.old_serial() == client_serial {
            return IxfrPlan::Incremental(i..journal.len());
        }
        expected_new = diff.old_serial();
    }
    IxfrPlan::Axfr
}

/// The client's serial from an IXFR query: RFC 1995 §3 puts the SOA of the
/// version the client holds in the authority section. `None` when there is no
/// SOA for the queried name there (the server answers FORMERR).
pub fn ixfr_client_serial(query: &MessageView<'_>) -> Option<u32> {
    let question = query.sole_question()?;
    query
        .authority()
        .filter(|r| r.rtype == Rtype::SOA && r.owner == question.qname)
        .find_map(|r| soa_serial_in_message(query.as_bytes(), r.rdata_offset, r.rdata.len()))
}

/// The serial of SOA rdata that may hold compressed names.
fn soa_serial_in_message(msg: &[u8], at: usize, len: usize) -> Option<u32> {
    let mut r = bulwark_proto::wire::Reader::at(msg, at);
    match Rdata::read(Rtype::SOA, &mut r, len).ok()? {
        Rdata::Soa(soa) => Some(soa.serial),
        _ => None,
    }
}

/// Why a transfer could not be written. The caller answers SERVFAIL (or ends
/// the TCP connection if messages already went out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The zone has no SOA at its apex: there is nothing to start a transfer with.
    #[error("the zone has no SOA record")]
    NoSoa,
    /// One record does not fit in a message on its own.
    #[error("a {rtype} record at {owner} is too large for a message of its own")]
    RecordTooLarge { owner: Box<Name>, rtype: Rtype },
    /// The question does not fit within the limit less the reservation.
    #[error("the question does not fit in the message")]
    QuestionTooLarge,
    #[error("message could not be built: {0}")]
    Build(BuildError),
}

/// What one call of [`TransferWriter::next_message`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// Length of the message in the buffer.
    pub len: usize,
    /// Records in its answer section.
    pub records: u16,
    /// Whether this is the last message of the transfer: RFC 8945 §5.3.1
    /// requires TSIG on it even when intermediate messages go unsigned.
    pub is_last: bool,
}

/// Writes one zone transfer as a sequence of messages.
///
/// Every message has the query's ID, QR, AA, opcode QUERY and NOERROR; only
/// the first carries the question (as BIND does; RFC 5936 §2.2.1 allows it in
/// the others too, and Knot repeats it). Records fill a message until the next
/// one would pass the size limit less `reserve`, names are compressed
/// (RFC 1035 §4.1.4), and the answer section holds:
/// - AXFR (RFC 5936 §2.2): SOA, every other record of the zone, SOA;
/// - IXFR (RFC 1995 §4): SOA(current), then per diff SOA(old), removed records,
///   SOA(new), added records, then SOA(current);
/// - up to date (RFC 1995 §2): the current SOA alone.
#[derive(Debug)]
pub struct TransferWriter<'z> {
    id: u16,
    question: Question,
    class: Class,
    apex: Name,
    soa_ttl: u32,
    soa_rdata: &'z [u8],
    body: Body<'z>,
    stage: Stage,
    limit: usize,
    messages: usize,
    /// Rdata of a diff record in wire form (diffs hold typed records).
    scratch: Vec<u8>,
    names: NameMemory,
}

/// Where the writer is in the transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    LeadingSoa,
    Body,
    TrailingSoa,
    Done,
}

/// What comes between the two SOAs (one per transfer).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Body<'z> {
    /// Nothing: a single-SOA answer.
    SoaOnly,
    Zone(ZoneWalk<'z>),
    Diffs(DiffWalk<'z>),
}

/// Position in a walk over the zone's nodes in canonical order.
struct ZoneWalk<'z> {
    nodes: Box<dyn Iterator<Item = (Name, &'z Node)> + 'z>,
    node: Option<(Name, &'z Node)>,
    /// Index of the RRset being written in the node.
    set: usize,
    /// Records of that RRset already written.
    written: usize,
}

impl core::fmt::Debug for ZoneWalk<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZoneWalk")
            .field("node", &self.node.as_ref().map(|(n, _)| n))
            .field("set", &self.set)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

/// Position in a sequence of diffs.
#[derive(Debug)]
struct DiffWalk<'z> {
    diffs: &'z [ZoneDiff],
    diff: usize,
    part: DiffPart,
}

/// The four parts of one diff in IXFR order (RFC 1995 §4).
#[derive(Debug, Clone, Copy)]
enum DiffPart {
    OldSoa,
    Removed(usize),
    NewSoa,
    Added(usize),
}

/// Whether a record went in or the message is full.
enum Pushed {
    Written,
    Full,
}

/// Whether a body filled the message or ran out of records.
enum Fill {
    Full,
    Exhausted,
}

impl<'z> TransferWriter<'z> {
    /// An AXFR answer (also the answer to an IXFR the journal cannot serve).
    pub fn axfr(
        zone: &'z Zone,
        query_id: u16,
        question: &Question,
    ) -> Result<TransferWriter<'z>, WriteError> {
        let walk = ZoneWalk {
            nodes: Box::new(zone.nodes_canonical()),
            node: None,
            set: 0,
            written: 0,
        };
        TransferWriter::new(zone, query_id, question, Body::Zone(walk))
    }

    /// An incremental IXFR answer made of `diffs` (a contiguous chain ending
    /// at the zone's current serial, such as [`plan_ixfr`] picks).
    pub fn ixfr(
        zone: &'z Zone,
        diffs: &'z [ZoneDiff],
        query_id: u16,
        question: &Question,
    ) -> Result<TransferWriter<'z>, WriteError> {
        let walk = DiffWalk {
            diffs,
            diff: 0,
            part: DiffPart::OldSoa,
        };
        TransferWriter::new(zone, query_id, question, Body::Diffs(walk))
    }

    /// The current SOA alone (RFC 1995 §2: the client is up to date).
    pub fn single_soa(
        zone: &'z Zone,
        query_id: u16,
        question: &Question,
    ) -> Result<TransferWriter<'z>, WriteError> {
        TransferWriter::new(zone, query_id, question, Body::SoaOnly)
    }

    /// The answer to an IXFR query as `plan` decided it, `journal` being the
    /// one the plan was made from.
    pub fn for_ixfr_plan(
        zone: &'z Zone,
        plan: &IxfrPlan,
        journal: &'z [ZoneDiff],
        query_id: u16,
        question: &Question,
    ) -> Result<TransferWriter<'z>, WriteError> {
        match plan {
            IxfrPlan::UpToDate => TransferWriter::single_soa(zone, query_id, question),
            IxfrPlan::Incremental(range) => match journal.get(range.clone()) {
                Some(diffs) => TransferWriter::ixfr(zone, diffs, query_id, question),
                None => TransferWriter::axfr(zone, query_id, question),
            },
            IxfrPlan::Axfr => TransferWriter::axfr(zone, query_id, question),
        }
    }

    fn new(
        zone: &'z Zone,
        id: u16,
        question: &Question,
        body: Body<'z>,
    ) -> Result<TransferWriter<'z>, WriteError> {
        let set = zone.soa().ok_or(WriteError::NoSoa)?;
        let soa_rdata = set.first().ok_or(WriteError::NoSoa)?;
        Ok(TransferWriter {
            id,
            question: question.clone(),
            class: zone.class(),
            apex: zone.apex().clone(),
            soa_ttl: set.ttl(),
            soa_rdata,
            body,
            stage: Stage::LeadingSoa,
            limit: MAX_TCP_MESSAGE,
            messages: 0,
            scratch: Vec::new(),
            names: NameMemory::new(),
        })
    }

    /// Caps each message at `limit` octets (at most [`MAX_TCP_MESSAGE`]), for
    /// peers that want smaller messages. The default is the TCP maximum.
    pub fn with_message_limit(mut self, limit: usize) -> TransferWriter<'z> {
        self.limit = limit.min(MAX_TCP_MESSAGE);
        self
    }

    /// Messages written so far.
    pub fn messages_written(&self) -> usize {
        self.messages
    }

    /// Clears `out` and writes the next message into it, leaving `reserve`
    /// octets under the limit for the TSIG record the caller adds. `None` once
    /// the last message has been written, or after an error.
    pub fn next_message(
        &mut self,
        out: &mut Vec<u8>,
        reserve: usize,
    ) -> Option<Result<MessageInfo, WriteError>> {
        if self.stage == Stage::Done {
            out.clear();
            return None;
        }
        match self.write_message(out, reserve) {
            Ok(info) => Some(Ok(info)),
            Err(e) => {
                self.stage = Stage::Done;
                out.clear();
                Some(Err(e))
            }
        }
    }

    fn write_message(
        &mut self,
        out: &mut Vec<u8>,
        reserve: usize,
    ) -> Result<MessageInfo, WriteError> {
        let mut m =
            TransferMessage::start(out, self.limit.saturating_sub(reserve), &mut self.names);
        if self.messages == 0 {
            let q = &self.question;
            m.push_question(&q.qname, q.qtype, q.qclass)?;
        }
        loop {
            match self.stage {
                Stage::LeadingSoa | Stage::TrailingSoa => {
                    let pushed = m.push_answer(
                        &self.apex,
                        Rtype::SOA,
                        self.class,
                        self.soa_ttl,
                        self.soa_rdata,
                    )?;
                    if let Pushed::Full = pushed {
                        break;
                    }
                    self.stage = match (self.stage, &self.body) {
                        (Stage::LeadingSoa, Body::SoaOnly) | (Stage::TrailingSoa, _) => Stage::Done,
                        _ => Stage::Body,
                    };
                }
                Stage::Body => {
                    let fill = match &mut self.body {
                        Body::SoaOnly => Fill::Exhausted,
                        Body::Zone(walk) => walk.fill(&mut m, self.class)?,
                        Body::Diffs(walk) => walk.fill(&mut m, &mut self.scratch)?,
                    };
                    match fill {
                        Fill::Full => break,
                        Fill::Exhausted => self.stage = Stage::TrailingSoa,
                    }
                }
                Stage::Done => break,
            }
        }
        let header = Header {
            id: self.id,
            flags: Flags {
                qr: true,
                // RFC 5936 §2.2.1: the server is authoritative for what it transfers.
                aa: true,
                ..Flags::default()
            },
            opcode: Opcode::QUERY,
            rcode_low: Rcode::NOERROR.header_bits(),
            ..Header::default()
        };
        let (len, records) = m.finish(header);
        self.messages = self.messages.saturating_add(1);
        Ok(MessageInfo {
            len,
            records,
            is_last: self.stage == Stage::Done,
        })
    }
}

impl ZoneWalk<'_> {
    /// Writes records of the zone in canonical order until the message is
    /// full or the zone is done.
    fn fill(&mut self, m: &mut TransferMessage<'_>, class: Class) -> Result<Fill, WriteError> {
        loop {
            if self.node.is_none() {
                self.node = self.nodes.next();
                self.set = 0;
                self.written = 0;
            }
            let Some((owner, node)) = &self.node else {
                return Ok(Fill::Exhausted);
            };
            let node: &Node = node;
            while let Some(set) = node.rrsets().get(self.set) {
                // RFC 5936 §2.2: the SOA goes first and last, not in between.
                if set.rtype() != Rtype::SOA {
                    // A large RRset may span messages: skip what went out
                    // already (a walk over lengths, not a copy).
                    for rd in set.rdatas().skip(self.written) {
                        let ttl = node.record_ttl(set, rd);
                        match m.push_answer(owner, set.rtype(), class, ttl, rd)? {
                            Pushed::Written => self.written = self.written.saturating_add(1),
                            Pushed::Full => return Ok(Fill::Full),
                        }
                    }
                }
                self.set = self.set.saturating_add(1);
                self.written = 0;
            }
            self.node = None;
        }
    }
}

impl DiffWalk<'_> {
    /// Writes the diffs' records in IXFR order until the message is full or
    /// the diffs are done.
    fn fill(
        &mut self,
        m: &mut TransferMessage<'_>,
        scratch: &mut Vec<u8>,
    ) -> Result<Fill, WriteError> {
        loop {
            let Some(diff) = self.diffs.get(self.diff) else {
                return Ok(Fill::Exhausted);
            };
            let record = match self.part {
                DiffPart::OldSoa => Some(&diff.old_soa),
                DiffPart::Removed(i) => diff.removed.get(i),
                DiffPart::NewSoa => Some(&diff.new_soa),
                DiffPart::Added(i) => diff.added.get(i),
            };
            let Some(record) = record else {
                // This part is done.
                match self.part {
                    DiffPart::Removed(_) => self.part = DiffPart::NewSoa,
                    _ => {
                        self.diff = self.diff.saturating_add(1);
                        self.part = DiffPart::OldSoa;
                    }
                }
                continue;
            };
            // A SOA among the removed or added records would read as the end
            // of a part to the client (RFC 1995 §4); ZoneDiff never holds one.
            let stray_soa = matches!(self.part, DiffPart::Removed(_) | DiffPart::Added(_))
                && record.rtype() == Rtype::SOA;
            if !stray_soa {
                scratch.clear();
                record.rdata.write_wire(scratch);
                let pushed = m.push_answer(
                    &record.owner,
                    record.rtype(),
                    record.class,
                    record.ttl,
                    scratch,
                )?;
                if let Pushed::Full = pushed {
                    return Ok(Fill::Full);
                }
            }
            self.part = match self.part {
                DiffPart::OldSoa => DiffPart::Removed(0),
                DiffPart::Removed(i) => DiffPart::Removed(i.saturating_add(1)),
                DiffPart::NewSoa => DiffPart::Added(0),
                DiffPart::Added(i) => DiffPart::Added(i.saturating_add(1)),
            };
        }
    }
}

// Writing transfer messages.

/// One message of a transfer being written into the caller's buffer.
struct TransferMessage<'o> {
    out: &'o mut Vec<u8>,
    /// The size limit less the reservation.
    limit: usize,
    qdcount: u16,
    ancount: u16,
    names: &'o mut NameMemory,
}

impl<'o> TransferMessage<'o> {
    fn start(out: &'o mut Vec<u8>, limit: usize, names: &'o mut NameMemory) -> TransferMessage<'o> {
        out.clear();
        out.extend_from_slice(&[0; HEADER_LEN]);
        names.clear();
        TransferMessage {
            out,
            limit,
            qdcount: 0,
            ancount: 0,
            names,
        }
    }

    fn push_question(
        &mut self,
        qname: &Name,
        qtype: Rtype,
        qclass: Class,
    ) -> Result<(), WriteError> {
        self.names.write_name(self.out, qname.as_wire());
        self.out.extend_from_slice(&qtype.0.to_be_bytes());
        self.out.extend_from_slice(&qclass.0.to_be_bytes());
        if self.out.len() > self.limit {
            return Err(WriteError::QuestionTooLarge);
        }
        self.qdcount = 1;
        Ok(())
    }

    /// Adds one record to the answer section: `Full` when it does not fit
    /// but the message already holds records (it goes into the next one), an
    /// error when it would not fit even alone.
    fn push_answer(
        &mut self,
        owner: &Name,
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<Pushed, WriteError> {
        let start = self.out.len();
        let count = self.ancount.checked_add(1);
        self.names.write_name(self.out, owner.as_wire());
        self.out.extend_from_slice(&rtype.0.to_be_bytes());
        self.out.extend_from_slice(&class.0.to_be_bytes());
        self.out.extend_from_slice(&ttl.to_be_bytes());
        let rdlen_at = self.out.len();
        self.out.extend_from_slice(&[0, 0]);
        let rdata_start = self.out.len();
        self.write_rdata(rtype, rdata);
        let rdlen = u16::try_from(self.out.len().saturating_sub(rdata_start));
        match (count, rdlen) {
            (Some(count), Ok(rdlen)) if self.out.len() <= self.limit => {
                if let Some(slot) = self.out.get_mut(rdlen_at..rdata_start) {
                    slot.copy_from_slice(&rdlen.to_be_bytes());
                }
                self.ancount = count;
                Ok(Pushed::Written)
            }
            _ => {
                self.out.truncate(start);
                // Names remembered from the record just dropped point past
                // the end; the message ends here, but forget them regardless.
                self.names.clear();
                if self.ancount > 0 {
                    Ok(Pushed::Full)
                } else {
                    Err(WriteError::RecordTooLarge {
                        owner: Box::new(owner.clone()),
                        rtype,
                    })
                }
            }
        }
    }

    fn write_rdata(&mut self, rtype: Rtype, rdata: &[u8]) {
        // Other types, and rdata that does not match its type's layout, go
        // out exactly as stored.
        let Some(pieces) = compressible_pieces(rtype, rdata) else {
            self.out.extend_from_slice(rdata);
            return;
        };
        for piece in pieces {
            match piece {
                RdataPiece::Name(name) => self.names.write_name(self.out, name),
                RdataPiece::Octets(bytes) => self.out.extend_from_slice(bytes),
            }
        }
    }

    /// Writes the header with the counts; returns the length and the answer count.
    fn finish(self, mut header: Header) -> (usize, u16) {
        header.qdcount = self.qdcount;
        header.ancount = self.ancount;
        if let Some(dst) = self.out.get_mut(..HEADER_LEN) {
            dst.copy_from_slice(&header.to_bytes());
        }
        (self.out.len(), self.ancount)
    }
}

/// The answer to an IXFR over UDP: the current SOA alone, which tells the
/// client to ask again over TCP unless it is up to date (RFC 1995 §2). Writes
/// into `out` within `limit` (the client's UDP payload size), with `opt` when
/// the query had EDNS, and returns the length.
pub fn write_ixfr_udp_answer(
    zone: &Zone,
    query_id: u16,
    question: &Question,
    out: &mut Vec<u8>,
    limit: usize,
    opt: Option<&OptRecord<'_>>,
) -> Result<usize, WriteError> {
    let set = zone.soa().ok_or(WriteError::NoSoa)?;
    let rdata = set.first().ok_or(WriteError::NoSoa)?;
    let mut b = MessageBuilder::new(out, limit);
    if let Some(opt) = opt {
        b.reserve(opt.wire_len());
    }
    let h = b.header_mut();
    h.id = query_id;
    h.opcode = Opcode::QUERY;
    h.flags.qr = true;
    h.flags.aa = true;
    b.push_question(&question.qname, question.qtype, question.qclass)
        .map_err(|_| WriteError::QuestionTooLarge)?;
    b.push_record(
        Section::Answer,
        zone.apex(),
        Rtype::SOA,
        zone.class(),
        set.ttl(),
        rdata,
    )
    .map_err(|_| WriteError::RecordTooLarge {
        owner: Box::new(zone.apex().clone()),
        rtype: Rtype::SOA,
    })?;
    b.finish(opt).map_err(WriteError::Build)
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
    use bulwark_zone::{diff_zones, parse_str};

    fn zone(text: &str) -> Zone {
        let origin: Name = "example.".parse().unwrap();
        let records = parse_str(text, &origin, "test").unwrap();
        Zone::build(origin, records).unwrap().0
    }

    fn zone_at(serial: u32) -> Zone {
        zone(&format!(
            "$TTL 300\n@ SOA ns h {serial} 2 3 4 5\n@ NS ns\nns A 192.0.2.1\nv{serial} TXT x\n"
        ))
    }

    fn chain(serials: &[u32]) -> Vec<ZoneDiff> {
        serials
            .windows(2)
            .map(|w| diff_zones(&zone_at(w[0]), &zone_at(w[1])).unwrap())
            .collect()
    }

    fn question(qtype: Rtype) -> Question {
        Question {
            qname: "Example.".parse().unwrap(),
            qtype,
            qclass: Class::IN,
        }
    }

    #[test]
    fn ixfr_plan_follows_the_journal_chain() {
        let journal = chain(&[1, 2, 3, 4]);
        let z = zone_at(4);
        let cases: &[(u32, IxfrPlan)] = &[
            (4, IxfrPlan::UpToDate),
            (5, IxfrPlan::UpToDate),
            (1, IxfrPlan::Incremental(0..3)),
            (2, IxfrPlan::Incremental(1..3)),
            (3, IxfrPlan::Incremental(2..3)),
            // Older than the journal reaches.
            (0, IxfrPlan::Axfr),
            // 2^31 from ours: not comparable (RFC 1982 §3.2).
            (4u32.wrapping_add(0x8000_0000), IxfrPlan::Axfr),
        ];
        for (client, want) in cases {
            assert_eq!(&plan_ixfr(*client, &z, &journal), want, "client {client}");
        }
        assert_eq!(plan_ixfr(1, &z, &[]), IxfrPlan::Axfr);
    }

    #[test]
    fn ixfr_plan_crosses_the_serial_wraparound() {
        let journal = chain(&[u32::MAX - 1, u32::MAX, 0, 1]);
        let z = zone_at(1);
        assert_eq!(
            plan_ixfr(u32::MAX - 1, &z, &journal),
            IxfrPlan::Incremental(0..3)
        );
        assert_eq!(plan_ixfr(0, &z, &journal), IxfrPlan::Incremental(2..3));
        // Past the wrap, 1 is newer than u32::MAX - 1, so u32::MAX - 1 is behind.
        assert_eq!(
            plan_ixfr(1, &zone_at(u32::MAX - 1), &[]),
            IxfrPlan::UpToDate
        );
    }

    #[test]
    fn ixfr_plan_with_a_gap_falls_back_to_axfr() {
        let mut journal = chain(&[1, 2]);
        journal.extend(chain(&[3, 4]));
        let z = zone_at(4);
        assert_eq!(plan_ixfr(1, &z, &journal), IxfrPlan::Axfr);
        assert_eq!(plan_ixfr(3, &z, &journal), IxfrPlan::Incremental(1..2));
        // A journal that does not reach the zone's serial serves nobody.
        assert_eq!(
            plan_ixfr(1, &zone_at(5), &chain(&[1, 2, 3])),
            IxfrPlan::Axfr
        );
    }

    #[test]
    fn single_soa_answer_is_one_exact_message() {
        let z = zone("@ 300 SOA ns h 7 2 3 4 5\n@ 300 NS ns\nns 300 A 192.0.2.1\n");
        let mut w = TransferWriter::single_soa(&z, 0xbeef, &question(Rtype::IXFR)).unwrap();
        let mut out = Vec::new();
        let info = w.next_message(&mut out, 0).unwrap().unwrap();
        assert!(info.is_last);
        assert_eq!(info.records, 1);
        #[rustfmt::skip]
        let want: &[u8] = &[
            0xbe, 0xef, 0x84, 0x00, 0, 1, 0, 1, 0, 0, 0, 0,
            // Question, the case of the query kept.
            7, b'E', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 251, 0, 1,
            // SOA: owner points at the question name.
            0xc0, 12, 0, 6, 0, 1, 0, 0, 1, 0x2c, 0, 29,
            2, b'n', b's', 0xc0, 12,
            1, b'h', 0xc0, 12,
            0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
        ];
        assert_eq!(out, want);
        assert_eq!(info.len, want.len());
        assert!(w.next_message(&mut out, 0).is_none());
        assert!(out.is_empty());
    }

    #[test]
    fn axfr_starts_and_ends_with_the_soa_and_skips_it_between() {
        let z = zone("$TTL 60\n@ SOA ns h 9 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
        let mut w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR)).unwrap();
        let mut out = Vec::new();
        let info = w.next_message(&mut out, 0).unwrap().unwrap();
        assert!(info.is_last);
        let view = MessageView::parse(&out).unwrap();
        let types: Vec<Rtype> = view.answers().map(|r| r.rtype).collect();
        assert_eq!(types, [Rtype::SOA, Rtype::NS, Rtype::A, Rtype::SOA]);
        let h: &Header = view.header();
        assert!(h.flags.qr && h.flags.aa && !h.flags.tc);
        assert_eq!(h.qdcount, 1);
    }

    #[test]
    fn reserve_and_limit_split_the_transfer_and_only_the_first_has_the_question() {
        let mut text = String::from("$TTL 60\n@ SOA ns h 9 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
        for i in 0..200 {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
        }
        let z = zone(&text);
        let mut w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR))
            .unwrap()
            .with_message_limit(512);
        let mut out = Vec::new();
        let mut total = 0usize;
        let mut n = 0usize;
        while let Some(info) = w.next_message(&mut out, 100) {
            let info = info.unwrap();
            assert!(out.len() <= 412, "message {n} is {} octets", out.len());
            let view = MessageView::parse(&out).unwrap();
            assert_eq!(view.header().qdcount, u16::from(n == 0));
            total += usize::from(info.records);
            n += 1;
        }
        assert!(n > 5);
        assert_eq!(w.messages_written(), n);
        assert_eq!(total, 204);
    }

    #[test]
    fn a_record_too_large_for_any_message_is_an_error() {
        let long = "x".repeat(200);
        let z = zone(&format!(
            "@ 60 SOA ns h 9 2 3 4 5\n@ 60 NS ns\nns 60 A 192.0.2.1\nbig 60 TXT {long}\n"
        ));
        let mut w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR))
            .unwrap()
            .with_message_limit(200);
        let mut out = Vec::new();
        assert!(w.next_message(&mut out, 0).unwrap().is_ok());
        match w.next_message(&mut out, 0) {
            Some(Err(WriteError::RecordTooLarge { owner, rtype })) => {
                assert_eq!(rtype, Rtype::TXT);
                assert_eq!(owner.to_string(), "big.example.");
            }
            other => panic!("{other:?}"),
        }
        assert!(w.next_message(&mut out, 0).is_none());
    }

    #[test]
    fn ixfr_udp_answer_is_the_soa_with_the_opt() {
        let z = zone("@ 300 SOA ns h 7 2 3 4 5\n@ 300 NS ns\nns 300 A 192.0.2.1\n");
        let opt = OptRecord {
            udp_payload_size: 1232,
            ..OptRecord::default()
        };
        let mut out = Vec::new();
        let len = write_ixfr_udp_answer(&z, 5, &question(Rtype::IXFR), &mut out, 512, Some(&opt))
            .unwrap();
        assert_eq!(len, out.len());
        let view = MessageView::parse(&out).unwrap();
        assert_eq!(view.answers().count(), 1);
        assert!(view.edns().is_some());
        assert!(view.header().flags.aa);
    }

    fn wire(name: &str) -> Vec<u8> {
        name.parse::<Name>().unwrap().as_wire().to_vec()
    }

    #[test]
    fn names_point_at_the_longest_suffix_written_before() {
        let mut m = NameMemory::new();
        let mut out = vec![0u8; HEADER_LEN];
        m.write_name(&mut out, &wire("ns1.provider.net."));
        assert_eq!(out.len(), 12 + 18);
        // Many other names in between do not push it out.
        for i in 0..500 {
            m.write_name(&mut out, &wire(&format!("d{i}.tld.")));
        }
        let at = out.len();
        m.write_name(&mut out, &wire("ns1.provider.net."));
        assert_eq!(&out[at..], &[0xc0, 12]);
        // A sibling: its own label, then a pointer to "provider.net." at 16.
        let at = out.len();
        m.write_name(&mut out, &wire("NS2.Provider.NET."));
        assert_eq!(&out[at..], &[3, b'N', b'S', b'2', 0xc0, 16]);
        // The root and unrelated names go out whole.
        let at = out.len();
        m.write_name(&mut out, &wire("org."));
        assert_eq!(&out[at..], &[3, b'o', b'r', b'g', 0]);
        m.write_name(&mut out, &[0]);
        assert_eq!(out.last(), Some(&0));
    }

    #[test]
    fn nothing_points_past_the_pointer_range_or_into_an_earlier_message() {
        let mut m = NameMemory::new();
        let mut out = vec![0u8; 0x4000];
        m.write_name(&mut out, &wire("far.example."));
        let at = out.len();
        m.write_name(&mut out, &wire("far.example."));
        assert_eq!(out.len() - at, 13, "written in full");
        // A new message: what the last one held is forgotten.
        let mut out = vec![0u8; HEADER_LEN];
        m.write_name(&mut out, &wire("a.example."));
        m.clear();
        let mut next = vec![0u8; HEADER_LEN];
        next.extend_from_slice(&wire("x.example."));
        m.write_name(&mut next, &wire("a.example."));
        assert_eq!(&next[23..], &wire("a.example.")[..]);
    }

    #[test]
    fn only_rfc_1035_types_have_their_rdata_names_compressed() {
        let z = zone(
            "$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n@ MX 10 ns\n\
             _s._tcp SRV 0 0 1 ns\n",
        );
        let mut w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR)).unwrap();
        let mut out = Vec::new();
        w.next_message(&mut out, 0).unwrap().unwrap();
        let view = MessageView::parse(&out).unwrap();
        let rdata = |t: Rtype| {
            view.answers()
                .find(|r| r.rtype == t)
                .unwrap()
                .rdata
                .to_vec()
        };
        // MX (RFC 1035): preference, then a pointer.
        assert_eq!(rdata(Rtype::MX).len(), 4);
        // SRV (RFC 2782): RFC 3597 §4 keeps its target uncompressed.
        assert_eq!(&rdata(Rtype::SRV)[6..], &wire("ns.example.")[..]);
    }

    #[test]
    fn a_tld_like_zone_packs_at_least_as_tight_as_the_general_builder() {
        let mut text = String::from("$TTL 300\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n");
        for i in 0..600 {
            text.push_str(&format!(
                "d{i} NS ns{}.provider{}.net.\nd{i} NS ns{}.provider{}.net.\n",
                i % 3,
                i % 40,
                (i + 1) % 3,
                i % 40
            ));
        }
        let z = zone(&text);
        let mut w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR)).unwrap();
        let mut out = Vec::new();
        let info = w.next_message(&mut out, 0).unwrap().unwrap();
        assert!(info.is_last);
        let ours = info.len;
        let mut buf = Vec::new();
        let mut b = MessageBuilder::new(&mut buf, MAX_TCP_MESSAGE);
        let q = question(Rtype::AXFR);
        b.push_question(&q.qname, q.qtype, q.qclass).unwrap();
        let soa = bulwark_zone::diff::soa_record(&z).unwrap();
        let records = core::iter::once(soa.clone())
            .chain(z.records().filter(|r| r.rtype() != Rtype::SOA))
            .chain(core::iter::once(soa));
        for r in records {
            let rd = r.rdata.to_wire();
            b.push_record(Section::Answer, &r.owner, r.rtype(), r.class, r.ttl, &rd)
                .unwrap();
        }
        let general = b.finish(None).unwrap();
        assert!(ours <= general, "ours {ours} octets, general {general}");
    }

    #[test]
    fn word_lowercasing_changes_only_ascii_capitals() {
        for b in 0..=255u8 {
            let w = u64::from_le_bytes([b, b'A', b'z', 0x5b, 0x40, 0xc1, b'Z', b]);
            let want = u64::from_le_bytes([
                b.to_ascii_lowercase(),
                b'a',
                b'z',
                0x5b,
                0x40,
                0xc1,
                b'z',
                b.to_ascii_lowercase(),
            ]);
            assert_eq!(ascii_lowercase_word(w), want, "octet {b:#x}");
        }
    }

    #[test]
    fn ixfr_client_serial_comes_from_the_authority_soa() {
        #[rustfmt::skip]
        let query: &[u8] = &[
            0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0,
            7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 251, 0, 1,
            0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 23,
            0, 0xc0, 12,
            0x12, 0x34, 0x56, 0x78, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
        ];
        let view = MessageView::parse(query).unwrap();
        assert_eq!(ixfr_client_serial(&view), Some(0x1234_5678));
        let no_soa: &[u8] = &[
            0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0,
            251, 0, 1,
        ];
        assert_eq!(
            ixfr_client_serial(&MessageView::parse(no_soa).unwrap()),
            None
        );
    }
}
