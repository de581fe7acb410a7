//! Parse → rebuild with `MessageBuilder` → parse again: the content survives.
//!
//! The header, every question, every record (each pushed as a one-record RRset,
//! its rdata decompressed through the typed `Rdata` reader so the builder may
//! compress it again), the OPT record and a TSIG record (appended last with
//! `append_additional`) must all read back the same. Names compare ignoring
//! ASCII case: compression may point a name at an earlier spelling of it.
#![no_main]

use bulwark_proto::message::{
    append_additional, BuildError, EdnsOption, Flags, MessageBuilder, MessageView, OptRecord,
    Question, Section,
};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Rtype};
use libfuzzer_sys::fuzz_target;

/// A message's largest size (RFC 1035 §4.2.2: the TCP length prefix is 16 bits).
const MAX_MESSAGE: usize = 65535;

#[derive(Debug)]
struct RecordContent {
    owner: Name,
    rtype: Rtype,
    class: Class,
    ttl: u32,
    rdata: Rdata,
}

impl PartialEq for RecordContent {
    /// Rdata compares in canonical form (RFC 4034 §6.2): the names the builder
    /// may compress are exactly those lowercased there, and a compressed name
    /// may take another spelling's case. Data we hold as opaque bytes (MB,
    /// MINFO...) would otherwise compare case-sensitively.
    fn eq(&self, other: &RecordContent) -> bool {
        let canonical = |r: &Rdata| {
            let mut out = Vec::new();
            r.write_canonical(&mut out);
            out
        };
        self.owner == other.owner
            && self.rtype == other.rtype
            && self.class == other.class
            && self.ttl == other.ttl
            && canonical(&self.rdata) == canonical(&other.rdata)
    }
}

#[derive(Debug, PartialEq)]
struct EdnsContent<'a> {
    udp_payload_size: u16,
    version: u8,
    dnssec_ok: bool,
    options: Vec<EdnsOption<'a>>,
}

#[derive(Debug, PartialEq)]
struct TsigContent<'a> {
    owner: Name,
    class: Class,
    ttl: u32,
    rdata: &'a [u8],
}

/// What a message says, in a form that does not depend on how it was encoded.
#[derive(Debug, PartialEq)]
struct Content<'a> {
    id: u16,
    flags: Flags,
    opcode: Opcode,
    rcode: Rcode,
    questions: Vec<Question>,
    sections: [Vec<RecordContent>; 3],
    edns: Option<EdnsContent<'a>>,
    tsig: Option<TsigContent<'a>>,
}

const SECTIONS: [Section; 3] = [Section::Answer, Section::Authority, Section::Additional];

/// Reads everything a message holds; `None` when some rdata cannot be read as
/// its type (the builder could not rewrite it faithfully then).
fn content<'a>(view: &MessageView<'a>) -> Option<Content<'a>> {
    let bytes = view.as_bytes();
    let mut sections: [Vec<RecordContent>; 3] = Default::default();
    let mut tsig = None;
    for (section, records) in SECTIONS.into_iter().zip(sections.iter_mut()) {
        for rr in view.records(section) {
            if rr.rtype == Rtype::OPT {
                continue;
            }
            if Some(rr.offset) == view.tsig_offset() {
                tsig = Some(TsigContent {
                    owner: rr.owner,
                    class: rr.class,
                    ttl: rr.ttl,
                    rdata: rr.rdata,
                });
                continue;
            }
            let mut r = Reader::at(bytes, rr.rdata_offset);
            let rdata = Rdata::read(rr.rtype, &mut r, rr.rdata.len()).ok()?;
            records.push(RecordContent {
                owner: rr.owner,
                rtype: rr.rtype,
                class: rr.class,
                ttl: rr.ttl,
                rdata,
            });
        }
    }
    Some(Content {
        id: view.header().id,
        flags: view.header().flags,
        opcode: view.header().opcode,
        rcode: view.rcode(),
        questions: view.questions().collect(),
        sections,
        edns: view.edns().map(|e| EdnsContent {
            udp_payload_size: e.udp_payload_size,
            version: e.version,
            dnssec_ok: e.dnssec_ok,
            options: e.options().collect(),
        }),
        tsig,
    })
}

/// Whether a build error only means the rebuilt message grew past 65535 octets
/// (decompressed names can outgrow the original).
fn is_size_error(e: BuildError) -> bool {
    matches!(
        e,
        BuildError::DoesNotFit { .. } | BuildError::QuestionDoesNotFit | BuildError::OptDoesNotFit
    )
}

/// Writes `c` as a new message into `buf`; `None` if it does not fit.
fn rebuild(c: &Content<'_>, buf: &mut Vec<u8>) -> Option<()> {
    let mut b = MessageBuilder::new(buf, MAX_MESSAGE);
    {
        let h = b.header_mut();
        h.id = c.id;
        h.flags = c.flags;
        h.opcode = c.opcode;
    }
    b.set_rcode(c.rcode);
    let check = |r: Result<(), BuildError>| match r {
        Ok(()) => Some(()),
        Err(e) if is_size_error(e) => None,
        Err(e) => panic!("building a parsed message failed: {e:?}"),
    };
    for q in &c.questions {
        check(b.push_question(&q.qname, q.qtype, q.qclass))?;
    }
    for (section, records) in SECTIONS.into_iter().zip(&c.sections) {
        for rr in records {
            let wire = rr.rdata.to_wire();
            check(b.push_record(section, &rr.owner, rr.rtype, rr.class, rr.ttl, &wire))?;
        }
    }
    let opt = c.edns.as_ref().map(|e| OptRecord {
        udp_payload_size: e.udp_payload_size,
        version: e.version,
        dnssec_ok: e.dnssec_ok,
        options: &e.options,
        pad_to_block: None,
    });
    match b.finish(opt.as_ref()) {
        Ok(_) => {}
        Err(e) if is_size_error(e) => return None,
        Err(e) => panic!("finishing a parsed message failed: {e:?}"),
    }
    if let Some(t) = &c.tsig {
        check(append_additional(
            buf,
            MAX_MESSAGE,
            &t.owner,
            Rtype::TSIG,
            t.class,
            t.ttl,
            t.rdata,
        ))?;
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let Ok(view) = MessageView::parse(data) else {
        return;
    };
    let Some(first) = content(&view) else {
        return;
    };
    let mut buf = Vec::new();
    if rebuild(&first, &mut buf).is_none() {
        return;
    }
    assert!(buf.len() <= MAX_MESSAGE);
    let view2 = match MessageView::parse(&buf) {
        Ok(v) => v,
        Err(e) => panic!("rebuilt message does not parse: {e}\n{buf:02x?}"),
    };
    let second = content(&view2).expect("rdata we wrote reads back as its type");
    assert_eq!(first, second);
});
