//! The response being written: a thin layer over `MessageBuilder` that keeps the
//! answer steps to DNS terms (sections, RRsets, flags) and remembers the record
//! class and the OPT to append.

use bulwark_proto::message::{Checkpoint, EdnsOption, Header, MessageBuilder, OptRecord, Section};
use bulwark_proto::{Class, Name, Rcode, Rtype};

/// The RRset would push the message past its size limit; nothing of it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DoesNotFit;

/// Extended DNS errors we attach (RFC 8914).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtendedError {
    /// The name is in none of our zones (what Knot says with its REFUSED).
    NotAuthoritative,
    /// The zone's access control refused the client.
    Prohibited,
}

impl ExtendedError {
    /// RFC 8914 §5.2: the INFO-CODE.
    fn info_code(self) -> u16 {
        match self {
            ExtendedError::Prohibited => 18,
            ExtendedError::NotAuthoritative => 20,
        }
    }
}

/// A COOKIE option for the response (RFC 7873 §4): the client's cookie echoed
/// and our 16-octet server cookie (RFC 9018 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CookieOption {
    pub(crate) client: [u8; 8],
    pub(crate) server: [u8; 16],
}

/// What the OPT record of the response says (RFC 6891 §6.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseOpt<'c> {
    pub(crate) payload: u16,
    pub(crate) dnssec_ok: bool,
    /// RFC 5001 §2.2: the server's identifier, for a client that asked.
    pub(crate) nsid: Option<&'c [u8]>,
    pub(crate) cookie: Option<CookieOption>,
    /// RFC 7828 §3.3.2: the idle timeout, in 100 ms units (TCP only).
    pub(crate) keepalive: Option<u16>,
}

impl ResponseOpt<'_> {
    pub(crate) fn plain(payload: u16, dnssec_ok: bool) -> ResponseOpt<'static> {
        ResponseOpt {
            payload,
            dnssec_ok,
            nsid: None,
            cookie: None,
            keepalive: None,
        }
    }
}

/// At most NSID, COOKIE, keepalive and one EDE.
const MAX_OPTIONS: usize = 4;

/// Builds the OPT record on the stack and hands it to `f`: the options borrow
/// from `opt` and static data, so nothing allocates.
fn with_opt_record<R>(
    opt: &ResponseOpt<'_>,
    ede: Option<ExtendedError>,
    f: impl FnOnce(&OptRecord<'_>) -> R,
) -> R {
    let mut options = [EdnsOption::Padding(0); MAX_OPTIONS];
    let mut n = 0usize;
    let wanted = [
        opt.nsid.map(EdnsOption::Nsid),
        opt.cookie.as_ref().map(|c| EdnsOption::Cookie {
            client: c.client,
            server: Some(&c.server[..]),
        }),
        opt.keepalive.map(|t| EdnsOption::TcpKeepalive(Some(t))),
        ede.map(|e| EdnsOption::Ede {
            code: e.info_code(),
            text: b"",
        }),
    ];
    for o in wanted.into_iter().flatten() {
        if let Some(slot) = options.get_mut(n) {
            *slot = o;
            n = n.saturating_add(1);
        }
    }
    let record = OptRecord {
        udp_payload_size: opt.payload,
        version: 0,
        dnssec_ok: opt.dnssec_ok,
        options: options.get(..n).unwrap_or(&[]),
        ..OptRecord::default()
    };
    f(&record)
}

#[derive(Debug)]
pub(crate) struct Response<'b> {
    builder: MessageBuilder<'b>,
    opt: Option<ResponseOpt<'b>>,
    /// Where the records start, to take them all back (see `clear_records`).
    records_start: Option<Checkpoint>,
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
        opt: Option<ResponseOpt<'b>>,
    ) -> Response<'b> {
        // Built in place: the builder is a few hundred octets (its
        // compression table), and moving it into the response cost a copy.
        let mut resp = Response {
            builder: MessageBuilder::new(buf, limit),
            opt,
            records_start: None,
            ede: None,
            class: Class::IN,
        };
        let h = resp.builder.header_mut();
        h.id = query.id;
        h.opcode = query.opcode;
        h.flags.qr = true;
        h.flags.rd = query.flags.rd;
        h.flags.cd = query.flags.cd;
        if let Some(o) = opt {
            resp.builder
                .reserve(with_opt_record(&o, None, |r| r.wire_len()));
        }
        resp
    }

    /// Echoes the question exactly as received (case preserved). It always fits:
    /// the limit is at least 512 and a question at most 259 octets.
    pub(crate) fn question(&mut self, qname: &Name, qtype: Rtype, qclass: Class) {
        let _ = self.builder.push_question(qname, qtype, qclass);
        self.records_start = Some(self.builder.checkpoint());
    }

    /// Takes back every record written after the question (the OPT is added at
    /// `finish`), for a response that must not carry its answer after all.
    pub(crate) fn clear_records(&mut self) {
        if let Some(mark) = self.records_start {
            self.builder.rollback(mark);
        }
    }

    /// The size the message will have once finished, OPT included.
    pub(crate) fn finished_len(&self) -> usize {
        let opt_len = self
            .opt
            .as_ref()
            .map_or(0, |o| with_opt_record(o, self.ede, |r| r.wire_len()));
        self.builder.len().saturating_add(opt_len)
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

    pub(crate) fn clear_truncated(&mut self) {
        self.builder.header_mut().flags.tc = false;
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

    pub(crate) fn rcode(&self) -> Rcode {
        self.builder.rcode()
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
        // The OPT's room was reserved at the start, so it always fits.
        match self.opt {
            Some(o) => with_opt_record(&o, ede, |r| {
                let _ = self.builder.finish(Some(r));
            }),
            None => {
                let _ = self.builder.finish(None);
            }
        }
        (rcode, truncated)
    }
}
