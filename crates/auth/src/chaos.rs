//! The server's identity over CH-class TXT (RFC 4892 §2.3; BIND's `version.bind`
//! convention): answered only for the names configured, REFUSED otherwise.

use bulwark_proto::message::Section;
use bulwark_proto::{Class, Name, Rcode, Rtype};

use crate::response::Response;
use crate::ChaosIdentity;

/// Knot answers these with TTL 0 so nothing caches them.
const CHAOS_TTL: u32 = 0;
/// A TXT character-string holds at most 255 octets (RFC 1035 §3.3).
const MAX_STRING: usize = 255;

/// The configured text for `qname`, if it is one of the identity names.
fn identity_text<'c>(identity: &'c ChaosIdentity, qname: &Name) -> Option<&'c str> {
    let is = |s: &[u8]| Name::from_presentation(s, None).is_ok_and(|n| &n == qname);
    if is(b"id.server.") {
        identity
            .id_server
            .as_deref()
            .or(identity.hostname.as_deref())
    } else if is(b"hostname.bind.") {
        identity
            .hostname
            .as_deref()
            .or(identity.id_server.as_deref())
    } else if is(b"version.bind.") || is(b"version.server.") {
        identity.version.as_deref()
    } else {
        None
    }
}

/// Answers a CH query, authoritatively, or refuses it.
pub(crate) fn chaos(
    resp: &mut Response<'_>,
    identity: &ChaosIdentity,
    qname: &Name,
    qtype: Rtype,
    rdata: &mut Vec<u8>,
) {
    let text = if qtype == Rtype::TXT {
        identity_text(identity, qname)
    } else {
        None
    };
    let Some(text) = text else {
        resp.set_rcode(Rcode::REFUSED);
        return;
    };
    rdata.clear();
    let bytes = text.as_bytes();
    let bytes = bytes.get(..MAX_STRING).unwrap_or(bytes);
    rdata.push(u8::try_from(bytes.len()).unwrap_or(u8::MAX));
    rdata.extend_from_slice(bytes);
    resp.set_authoritative(true);
    resp.set_record_class(Class::CH);
    if resp
        .push_rrset(
            Section::Answer,
            qname,
            Rtype::TXT,
            CHAOS_TTL,
            std::iter::once(rdata.as_slice()),
        )
        .is_err()
    {
        resp.set_truncated();
    }
}
