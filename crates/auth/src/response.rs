//! The response being written: a thin layer over `MessageBuilder` that keeps the
//! answer steps to DNS terms (sections, RRsets, flags) and remembers the record
//! class and the OPT to append.

use bulwark_proto::message::{EdnsOption, Header, MessageBuilder, OptRecord, Section};
use bulwark_proto::{Class, Name, Rcode, Rtype};

/// The RRset would push the message past its size limit; nothing of it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DoesNotFit;

/// RFC 8914 §5.2: info code 20, "Not Authoritative".
const EDE_NOT_AUTHORITATIVE: &[EdnsOption<'static>] = &[EdnsOption::Ede {
    code: 20,
    text: b"",
}];

/// Extended DNS errors we attach (RFC 8914).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtendedError {
    /// The name is in none of our zones (what Knot says with its REFUSED).
    NotAuthoritative,
}

/// What the OPT record of the response says (RFC 6891 §6.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseOpt {
    pub(crate) payload: u16,
    pub(crate) dnssec_ok: bool,
}

/// Builds the OPT record; the options come from static data, so nothing allocates.
fn opt_record(opt: ResponseOpt, ede: Option<ExtendedError>) -> OptRecord<'static> {
    let options = match ede {
        Some(ExtendedError::NotAuthoritative) => EDE_NOT_AUTHORITATIVE,
        None => &[],
    };
    OptRecord {
        udp_payload_size: opt.payload,
        version: 0,
        dnssec_ok: opt.dnssec_ok,
        options,
        ..OptRecord::default()
    }
}

#[derive(Debug)]
pub(crate) struct Response<'b> {
    builder: MessageBuilder<'b>,
    opt: Option<ResponseOpt>,
    ede: Option<ExtendedError>,
    class: Class,
}

impl<'b> Response<'b> {
    /// Starts a response to the query with `query` as header: id and opcode echoed,
    /// QR set, RD and CD copied (RFC 1035 §4.1.1, RFC 6840 §5.9); AA, TC, RA, AD
    /// and Z clear. `limit` is the largest message allowed, OPT included.
    pub(crate) fn start(
        buf: &'b mut Vec<u8>,
        query: &Header,
        limit: usize,
        opt: Option<ResponseOpt>,
    ) -> Response<'b> {
        let mut builder = MessageBuilder::new(buf, limit);
        let h = builder.header_mut();
        h.id = query.id;
        h.opcode = query.opcode;
        h.flags.qr = true;
        h.flags.rd = query.flags.rd;
        h.flags.cd = query.flags.cd;
        if let Some(o) = opt {
            builder.reserve(opt_record(o, None).wire_len());
        }
        Response {
            builder,
            opt,
            ede: None,
            class: Class::IN,
        }
    }

    /// Echoes the question exactly as received (case preserved). It always fits:
    /// the limit is at least 512 and a question at most 259 octets.
    pub(crate) fn question(&mut self, qname: &Name, qtype: Rtype, qclass: Class) {
        let _ = self.builder.push_question(qname, qtype, qclass);
    }

    /// The class of the records that follow (IN, or CH for the server identity).
    pub(crate) fn set_record_class(&mut self, class: Class) {
        self.class = class;
    }

    pub(crate) fn set_authoritative(&mut self, aa: bool) {
        self.builder.header_mut().flags.aa = aa;
    }

    /// RFC 2181 §9: set when a required RRset was cut.
    pub(crate) fn set_truncated(&mut self) {
        self.builder.header_mut().flags.tc = true;
    }

    pub(crate) fn is_truncated(&self) -> bool {
        self.builder.header().flags.tc
    }

    /// Adds an extended error to the OPT, when the query had EDNS (RFC 8914 §3).
    /// Only set on short error responses, so it needs no reserved room.
    pub(crate) fn set_extended_error(&mut self, ede: ExtendedError) {
        self.ede = Some(ede);
    }

    pub(crate) fn set_rcode(&mut self, rcode: Rcode) {
        self.builder.set_rcode(rcode);
    }

    pub(crate) fn count(&self, section: Section) -> u16 {
        self.builder.count(section)
    }

    /// Appends a whole RRset to `section` (RFC 2181 §5: never split), or nothing.
    pub(crate) fn push_rrset<'r, I>(
        &mut self,
        section: Section,
        owner: &Name,
        rtype: Rtype,
        ttl: u32,
        rdatas: I,
    ) -> Result<(), DoesNotFit>
    where
        I: IntoIterator<Item = &'r [u8]>,
    {
        self.builder
            .push_rrset(section, owner, rtype, self.class, ttl, rdatas)
            .map_err(|_| DoesNotFit)
    }

    /// Appends the OPT record (if any) and writes the header; returns the rcode
    /// and whether TC is set.
    pub(crate) fn finish(self) -> (Rcode, bool) {
        let rcode = self.builder.rcode();
        let truncated = self.is_truncated();
        let ede = self.ede;
        let opt = self.opt.map(|o| opt_record(o, ede));
        // The OPT's room was reserved at the start, so it always fits.
        let _ = self.builder.finish(opt.as_ref());
        (rcode, truncated)
    }
}
