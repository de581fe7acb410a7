//! Reading an UPDATE message (RFC 2136 §2) and writing its response (§3.8).

use bulwark_proto::message::{Header, MessageView};
use bulwark_proto::message::{MessageBuilder, OptRecord, Section, DEFAULT_UDP_PAYLOAD, HEADER_LEN};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Opcode, Rcode, Rdata, Rtype};

use super::UpdateError;

/// One record of the prerequisite or update section. Its class says what it
/// means (RFC 2136 §2.4, §2.5): the zone's class carries data, ANY and NONE
/// name RRsets or records to test for or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRecord {
    /// The owner, in the case it was sent.
    pub owner: Name,
    pub rtype: Rtype,
    pub class: Class,
    pub ttl: u32,
    /// Uncompressed wire-form record data, names inside it expanded; empty
    /// when RDLENGTH was 0.
    pub rdata: Vec<u8>,
}

/// An UPDATE message, read: the zone it names and its two working sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRequest {
    /// ZNAME and ZCLASS of the zone section (RFC 2136 §2.3).
    pub zone: Name,
    pub zone_class: Class,
    /// The prerequisite section (the answer section's place, RFC 2136 §2.4).
    pub prerequisites: Vec<UpdateRecord>,
    /// The update section (the authority section's place, RFC 2136 §2.5).
    pub updates: Vec<UpdateRecord>,
}

/// Reads an UPDATE message that [`MessageView::parse`] has validated. The
/// additional section is not read: RFC 2136 §3.4.1 gives it no part in the
/// update, and TSIG is the caller's.
///
/// Records are copied with their class, TTL and data as sent; whether they
/// make sense is [`ZoneEdit::apply`](super::ZoneEdit::apply)'s question, as
/// RFC 2136 §3 fixes the order of the checks (and so which rcode wins).
pub fn read_update(msg: &MessageView<'_>) -> Result<UpdateRequest, UpdateError> {
    let header = msg.header();
    if header.opcode != Opcode::UPDATE {
        return Err(UpdateError::NotUpdate(header.opcode));
    }
    // RFC 2136 §3.1.1: exactly one zone, named with type SOA, else FORMERR.
    if header.qdcount != 1 {
        return Err(UpdateError::ZoneCount(header.qdcount));
    }
    let zone = msg.question().ok_or(UpdateError::ZoneCount(0))?;
    if zone.qtype != Rtype::SOA {
        return Err(UpdateError::ZoneType(zone.qtype));
    }
    Ok(UpdateRequest {
        zone: zone.qname.clone(),
        zone_class: zone.qclass,
        prerequisites: read_section(msg, Section::Answer)?,
        updates: read_section(msg, Section::Authority)?,
    })
}

fn read_section(msg: &MessageView<'_>, section: Section) -> Result<Vec<UpdateRecord>, UpdateError> {
    let records = msg.records(section);
    let mut out = Vec::with_capacity(records.size_hint().1.unwrap_or(0));
    for rv in records {
        let rdata = if rv.rdata.is_empty() || rv.class == Class::ANY {
            // Class ANY carries no data (RFC 2136 §2.4.1, §2.5.2); what is
            // there is kept as sent for the checks to refuse.
            rv.rdata.to_vec()
        } else {
            // RFC 3597 §4: names in the RFC 1035 types may be compressed
            // against the whole message; expand them.
            let mut r = Reader::at(msg.as_bytes(), rv.rdata_offset);
            Rdata::read(rv.rtype, &mut r, rv.rdata.len())
                .map_err(|_| UpdateError::BadRdata {
                    at: rv.rdata_offset,
                    rtype: rv.rtype,
                })?
                .to_wire()
        };
        out.push(UpdateRecord {
            owner: rv.owner,
            rtype: rv.rtype,
            class: rv.class,
            ttl: rv.ttl,
            rdata,
        });
    }
    Ok(out)
}

/// Largest UPDATE response written here: a header, the zone and an OPT.
const RESPONSE_LIMIT: usize = 512;

/// Writes the response to the UPDATE `query` carrying `rcode` into `out` and
/// returns its length; `None` when the query is shorter than a header.
///
/// RFC 2136 §3.8: the ID and opcode are copied, QR set, and the zone section
/// echoed; the prerequisite, update and additional sections are left out
/// (the counts are zero). The zone is echoed only when the query has exactly
/// one that can be read. RFC 6891 §7: when the query carried an OPT record
/// (so the whole query parsed), the response carries one too. The caller
/// appends TSIG.
pub fn write_update_response(query: &[u8], rcode: Rcode, out: &mut Vec<u8>) -> Option<usize> {
    let query_header = Header::parse(query)?;
    let parsed = MessageView::parse(query).ok();
    let zone = match &parsed {
        Some(view) => view
            .sole_question()
            .map(|q| (q.qname.clone(), q.qtype, q.qclass)),
        None => first_zone(query, &query_header),
    };
    let mut b = MessageBuilder::new(out, RESPONSE_LIMIT);
    let header = b.header_mut();
    header.id = query_header.id;
    header.opcode = Opcode::UPDATE;
    header.flags.qr = true;
    if let Some((name, rtype, class)) = &zone {
        // A name is at most 255 octets: it always fits in 512.
        b.push_question(name, *rtype, *class).ok()?;
    }
    b.set_rcode(rcode);
    let opt = OptRecord {
        udp_payload_size: DEFAULT_UDP_PAYLOAD,
        ..OptRecord::default()
    };
    let with_opt = parsed.as_ref().is_some_and(|v| v.edns().is_some());
    // UPDATE's rcodes all fit in the header's four bits, so finishing
    // without the OPT loses nothing.
    match b.finish(with_opt.then_some(&opt)) {
        Ok(n) => Some(n),
        Err(_) => Some(out.len()),
    }
}

/// The zone entry of a query that failed to parse somewhere after it.
fn first_zone(query: &[u8], header: &Header) -> Option<(Name, Rtype, Class)> {
    if header.qdcount != 1 {
        return None;
    }
    let mut r = Reader::at(query, HEADER_LEN);
    let name = Name::read(&mut r).ok()?;
    let rtype = Rtype(r.read_u16().ok()?);
    let class = Class(r.read_u16().ok()?);
    Some((name, rtype, class))
}
