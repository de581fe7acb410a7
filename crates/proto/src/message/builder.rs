//! Building a message into a caller-owned buffer that is reused between messages.

use super::compress::CompressionTable;
use super::edns::OptRecord;
use super::header::{Header, HEADER_LEN};
use super::view::{MessageView, Question};
use super::Section;
use crate::class::Class;
use crate::name::Name;
use crate::rcode::Rcode;
use crate::rdata::layout::{compressible, layout, split, Part};
use crate::rtype::Rtype;

/// Why a question or record was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The RRset would pass the size limit; the message is as it was before it.
    #[error("RRset does not fit in the {section:?} section")]
    DoesNotFit { section: Section },
    #[error("question does not fit")]
    QuestionDoesNotFit,
    /// Sections are written in order: question, answer, authority, additional.
    #[error("section written out of order")]
    OutOfOrder,
    #[error("more than 65535 entries in a section")]
    TooManyRecords,
    /// `finish` could not add the OPT record within the limit (too little was reserved);
    /// the message was completed without it.
    #[error("OPT record does not fit")]
    OptDoesNotFit,
    /// An extended rcode needs an OPT record (RFC 6891 §6.1.3); the message was
    /// completed with only the low 4 bits.
    #[error("extended rcode without an OPT record")]
    ExtendedRcodeWithoutOpt,
}

/// A position to return to with [`MessageBuilder::rollback`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    len: usize,
    counts: [u16; 4],
    stage: usize,
    names: usize,
}

/// The layout to write `rdata` by, if `rtype`'s embedded names may be
/// compressed (RFC 3597 §4) and the rdata matches its layout exactly.
fn compressible_parts(rtype: Rtype, rdata: &[u8]) -> Option<&'static [Part]> {
    let l = layout(rtype).filter(|_| compressible(rtype))?;
    l.fits_exactly(rdata).then_some(l.parts)
}

/// Writes a DNS message into a reused `Vec<u8>`, within a size limit, compressing
/// names. Sections must be filled in order. An RRset that does not fit is rolled
/// back whole, so the message is always consistent.
#[derive(Debug)]
pub struct MessageBuilder<'b> {
    buf: &'b mut Vec<u8>,
    limit: usize,
    reserved: usize,
    header: Header,
    rcode: Rcode,
    /// Entries in question, answer, authority, additional.
    counts: [u16; 4],
    /// Index into `counts` of the section being written.
    stage: usize,
    names: CompressionTable,
}

impl<'b> MessageBuilder<'b> {
    /// Starts an empty message (zeroed header) in `buf`, which is cleared. The
    /// finished message will be at most `limit` octets.
    pub fn new(buf: &'b mut Vec<u8>, limit: usize) -> MessageBuilder<'b> {
        buf.clear();
        buf.extend_from_slice(&[0; HEADER_LEN]);
        MessageBuilder {
            buf,
            limit,
            reserved: 0,
            header: Header::default(),
            rcode: Rcode::NOERROR,
            counts: [0; 4],
            stage: 0,
            names: CompressionTable::new(),
        }
    }

    /// Starts a response to a query with this header and question: the id, opcode,
    /// RD and CD are copied (RFC 1035 §4.1.1, RFC 4035 §3.1.6), QR is set, and the
    /// question is echoed with its original case.
    pub fn response(
        buf: &'b mut Vec<u8>,
        limit: usize,
        query: &Header,
        question: Option<&Question>,
    ) -> Result<MessageBuilder<'b>, BuildError> {
        let mut b = MessageBuilder::new(buf, limit);
        b.header.id = query.id;
        b.header.opcode = query.opcode;
        b.header.flags.qr = true;
        b.header.flags.rd = query.flags.rd;
        b.header.flags.cd = query.flags.cd;
        if let Some(q) = question {
            b.push_question(&q.qname, q.qtype, q.qclass)?;
        }
        Ok(b)
    }

    /// [`MessageBuilder::response`] for a parsed query; its question is echoed only
    /// when it has exactly one.
    pub fn response_to(
        buf: &'b mut Vec<u8>,
        limit: usize,
        query: &MessageView<'_>,
    ) -> Result<MessageBuilder<'b>, BuildError> {
        MessageBuilder::response(buf, limit, query.header(), query.sole_question().as_ref())
    }

    /// The header to be written; its counts are filled in by `finish`.
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Sets the full rcode; bits above the low four go into the OPT at `finish`.
    pub fn set_rcode(&mut self, rcode: Rcode) {
        self.rcode = rcode;
    }

    pub fn rcode(&self) -> Rcode {
        self.rcode
    }

    /// Keeps `n` octets free for what `finish` appends (the OPT record): records
    /// may then fill only up to `limit - n`.
    pub fn reserve(&mut self, n: usize) {
        self.reserved = n;
    }

    /// Octets written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() <= HEADER_LEN
    }

    /// Octets still available to records (after the reservation).
    pub fn remaining(&self) -> usize {
        self.record_limit().saturating_sub(self.buf.len())
    }

    fn record_limit(&self) -> usize {
        self.limit.saturating_sub(self.reserved)
    }

    /// Entries written in a section so far.
    pub fn count(&self, section: Section) -> u16 {
        self.counts
            .get(section.index().saturating_add(1))
            .copied()
            .unwrap_or(0)
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            len: self.buf.len(),
            counts: self.counts,
            stage: self.stage,
            names: self.names.len(),
        }
    }

    /// Returns to a checkpoint taken earlier on this builder.
    pub fn rollback(&mut self, to: Checkpoint) {
        self.buf.truncate(to.len.max(HEADER_LEN));
        self.counts = to.counts;
        self.stage = to.stage;
        self.names.truncate(to.names);
    }

    /// Adds a question, writing the name with the case it has.
    pub fn push_question(
        &mut self,
        qname: &Name,
        qtype: Rtype,
        qclass: Class,
    ) -> Result<(), BuildError> {
        if self.stage != 0 {
            return Err(BuildError::OutOfOrder);
        }
        let mark = self.checkpoint();
        let count = self.counts[0]
            .checked_add(1)
            .ok_or(BuildError::TooManyRecords)?;
        self.names.write_name(self.buf, qname.as_wire());
        self.buf.extend_from_slice(&qtype.0.to_be_bytes());
        self.buf.extend_from_slice(&qclass.0.to_be_bytes());
        if self.buf.len() > self.record_limit() {
            self.rollback(mark);
            return Err(BuildError::QuestionDoesNotFit);
        }
        self.counts[0] = count;
        Ok(())
    }

    /// Adds one record.
    pub fn push_record(
        &mut self,
        section: Section,
        owner: &Name,
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), BuildError> {
        self.push_rrset(section, owner, rtype, class, ttl, core::iter::once(rdata))
    }

    /// Adds an RRset: one record per rdata (each in uncompressed wire form), the
    /// owner compressed, and names inside the rdata compressed for the RFC 1035
    /// types that allow it (RFC 3597 §4). If the set passes the limit, nothing of
    /// it stays and `DoesNotFit` names the section.
    pub fn push_rrset<'r, I>(
        &mut self,
        section: Section,
        owner: &Name,
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdatas: I,
    ) -> Result<(), BuildError>
    where
        I: IntoIterator<Item = &'r [u8]>,
    {
        self.push_rrset_inner(section, owner.as_wire(), rtype, class, ttl, rdatas)
    }

    fn push_rrset_inner<'r, I>(
        &mut self,
        section: Section,
        owner: &[u8],
        rtype: Rtype,
        class: Class,
        ttl: u32,
        rdatas: I,
    ) -> Result<(), BuildError>
    where
        I: IntoIterator<Item = &'r [u8]>,
    {
        let stage = section.index().saturating_add(1);
        if stage < self.stage {
            return Err(BuildError::OutOfOrder);
        }
        let mark = self.checkpoint();
        self.stage = stage;
        let limit = self.record_limit();
        let mut count = self.counts.get(stage).copied().unwrap_or(0);
        for rdata in rdatas {
            count = match count.checked_add(1) {
                Some(c) => c,
                None => {
                    self.rollback(mark);
                    return Err(BuildError::TooManyRecords);
                }
            };
            self.write_record(owner, rtype, class, ttl, rdata);
            if self.buf.len() > limit {
                self.rollback(mark);
                return Err(BuildError::DoesNotFit { section });
            }
        }
        if let Some(c) = self.counts.get_mut(stage) {
            *c = count;
        }
        Ok(())
    }

    fn write_record(&mut self, owner: &[u8], rtype: Rtype, class: Class, ttl: u32, rdata: &[u8]) {
        self.names.write_name(self.buf, owner);
        self.buf.extend_from_slice(&rtype.0.to_be_bytes());
        self.buf.extend_from_slice(&class.0.to_be_bytes());
        self.buf.extend_from_slice(&ttl.to_be_bytes());
        let rdlen_at = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        let start = self.buf.len();
        match compressible_parts(rtype, rdata) {
            Some(parts) => {
                for (part, from, to) in split(parts, rdata).flatten() {
                    let bytes = rdata.get(from..to).unwrap_or(&[]);
                    match part {
                        Part::Name => self.names.write_name(self.buf, bytes),
                        Part::Fixed(_) | Part::CharString => self.buf.extend_from_slice(bytes),
                    }
                }
            }
            // Other types, and rdata that does not match its type's layout, go
            // out exactly as given.
            None => self.buf.extend_from_slice(rdata),
        }
        let rdlen = u16::try_from(self.buf.len().saturating_sub(start)).unwrap_or(u16::MAX);
        if let Some(slot) = self.buf.get_mut(rdlen_at..start) {
            slot.copy_from_slice(&rdlen.to_be_bytes());
        }
    }

    /// Completes the message: appends the OPT record if given (carrying the upper
    /// rcode bits), writes the header, and returns the message length. On error
    /// the message is still complete and consistent, only without the OPT.
    pub fn finish(mut self, opt: Option<&OptRecord<'_>>) -> Result<usize, BuildError> {
        let mut result = Ok(());
        match opt {
            Some(opt) => {
                let fits = self
                    .buf
                    .len()
                    .checked_add(opt.wire_len())
                    .is_some_and(|end| end <= self.limit);
                match self.counts[3].checked_add(1) {
                    Some(c) if fits => {
                        opt.write(self.buf, self.rcode.extended_bits(), self.limit);
                        self.counts[3] = c;
                    }
                    Some(_) => result = Err(BuildError::OptDoesNotFit),
                    None => result = Err(BuildError::TooManyRecords),
                }
            }
            None if self.rcode.is_extended() => result = Err(BuildError::ExtendedRcodeWithoutOpt),
            None => {}
        }
        let mut h = self.header;
        h.rcode_low = self.rcode.header_bits();
        [h.qdcount, h.ancount, h.nscount, h.arcount] = self.counts;
        if let Some(dst) = self.buf.get_mut(..HEADER_LEN) {
            dst.copy_from_slice(&h.to_bytes());
        }
        result.map(|()| self.buf.len())
    }
}

/// The header of finished message `msg` with one more record counted in
/// ARCOUNT, to be written back once the record is appended.
fn with_one_more_additional(msg: &[u8]) -> Result<Header, BuildError> {
    let mut header = Header::parse(msg).ok_or(BuildError::OutOfOrder)?;
    header.arcount = header
        .arcount
        .checked_add(1)
        .ok_or(BuildError::TooManyRecords)?;
    Ok(header)
}

/// Appends an OPT record to a finished message that has none and counts it
/// in ARCOUNT, with the extended bits of `rcode` (RFC 6891 §6.1.3): for a
/// response copied from a stored one, whose OPT depends on the query
/// answered (its DO bit, the client's cookie). Fails, leaving `msg`
/// unchanged, if the message has no header, the count is full, or the OPT
/// would pass `limit`.
pub fn append_opt(
    msg: &mut Vec<u8>,
    limit: usize,
    opt: &OptRecord<'_>,
    rcode: Rcode,
) -> Result<(), BuildError> {
    let header = with_one_more_additional(msg)?;
    if msg
        .len()
        .checked_add(opt.wire_len())
        .is_none_or(|end| end > limit)
    {
        return Err(BuildError::OptDoesNotFit);
    }
    opt.write(msg, rcode.extended_bits(), limit);
    if let Some(dst) = msg.get_mut(..HEADER_LEN) {
        dst.copy_from_slice(&header.to_bytes());
    }
    Ok(())
}

/// Appends one record, written uncompressed, at the end of a finished message's
/// additional section and counts it in ARCOUNT. This is how a TSIG record goes
/// after the OPT (RFC 8945 §4.2: it is the last record; its MAC is computed over
/// the message as it was before this call). Fails if the message has no header,
/// the count is full, or the record would pass `limit`; `msg` is then unchanged.
pub fn append_additional(
    msg: &mut Vec<u8>,
    limit: usize,
    owner: &Name,
    rtype: Rtype,
    class: Class,
    ttl: u32,
    rdata: &[u8],
) -> Result<(), BuildError> {
    let header = with_one_more_additional(msg)?;
    let rdlen = u16::try_from(rdata.len()).map_err(|_| BuildError::DoesNotFit {
        section: Section::Additional,
    })?;
    let end = msg
        .len()
        .checked_add(owner.wire_len())
        .and_then(|n| n.checked_add(10))
        .and_then(|n| n.checked_add(rdata.len()));
    if end.is_none_or(|e| e > limit) {
        return Err(BuildError::DoesNotFit {
            section: Section::Additional,
        });
    }
    msg.extend_from_slice(owner.as_wire());
    msg.extend_from_slice(&rtype.0.to_be_bytes());
    msg.extend_from_slice(&class.0.to_be_bytes());
    msg.extend_from_slice(&ttl.to_be_bytes());
    msg.extend_from_slice(&rdlen.to_be_bytes());
    msg.extend_from_slice(rdata);
    if let Some(dst) = msg.get_mut(..HEADER_LEN) {
        dst.copy_from_slice(&header.to_bytes());
    }
    Ok(())
}
