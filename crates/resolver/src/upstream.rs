//! The queries the resolver sends: a question with RD clear when iterating
//! (RFC 1034 §5.3.3) and set when forwarding, EDNS unless the server is known
//! not to speak it, and with EDNS the DO bit (RFC 4035 §4.9.1): signatures
//! and denial proofs come back, for the validator and for clients that
//! validate themselves.

use bulwark_proto::message::{EdnsOption, Header, MessageBuilder, OptRecord};
use bulwark_proto::{Class, Name, Rtype};

/// One question to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub name: Name,
    pub rtype: Rtype,
    /// RD: set when the server is a resolver we forward to.
    pub recursion_desired: bool,
    /// With an OPT record (RFC 6891), advertising `udp_payload`.
    pub edns: bool,
    pub udp_payload: u16,
    /// Sent again after BADCOOKIE (RFC 7873 §5.3: once, then over TCP).
    pub cookie_retry: bool,
}

/// The largest query we build: a name of 255 octets and an OPT fit in far less.
const QUERY_LIMIT: usize = 512;

/// The COOKIE option of a query (RFC 7873 §5.1): our client cookie for
/// the server, and its server cookie once it sent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cookie<'a> {
    pub client: [u8; 8],
    pub server: Option<&'a [u8]>,
}

/// The query's wire form with `id`, with `cookie` in its OPT when it has one.
pub(crate) fn build(id: u16, q: &Query, cookie: Option<Cookie<'_>>) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    let mut b = MessageBuilder::new(&mut out, QUERY_LIMIT);
    *b.header_mut() = Header {
        id,
        ..Header::default()
    };
    b.header_mut().flags.rd = q.recursion_desired;
    b.push_question(&q.name, q.rtype, Class::IN).ok()?;
    let options: Vec<EdnsOption<'_>> = cookie
        .map(|c| EdnsOption::Cookie {
            client: c.client,
            server: c.server,
        })
        .into_iter()
        .collect();
    let opt = OptRecord {
        udp_payload_size: q.udp_payload,
        dnssec_ok: true,
        options: &options,
        ..OptRecord::default()
    };
    let len = b.finish(q.edns.then_some(&opt)).ok()?;
    out.truncate(len);
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use bulwark_proto::MessageView;

    #[test]
    fn an_iterative_query_has_rd_clear_and_edns_when_asked() {
        let q = Query {
            name: "www.Example.test.".parse().unwrap(),
            rtype: Rtype::AAAA,
            recursion_desired: false,
            edns: true,
            udp_payload: 1232,
            cookie_retry: false,
        };
        let wire = build(0x1234, &q, None).unwrap();
        let v = MessageView::parse(&wire).unwrap();
        assert_eq!(v.header().id, 0x1234);
        assert!(!v.header().flags.rd && !v.header().flags.qr);
        let question = v.question().unwrap();
        assert!(question.qname.eq_exact(&q.name));
        assert_eq!(question.qtype, Rtype::AAAA);
        assert_eq!(v.edns().unwrap().udp_payload_size, 1232);
        assert!(v.edns().unwrap().dnssec_ok);
        let plain = build(
            1,
            &Query {
                edns: false,
                recursion_desired: true,
                ..q
            },
            None,
        )
        .unwrap();
        let v = MessageView::parse(&plain).unwrap();
        assert!(v.edns().is_none() && v.header().flags.rd);
    }
}
