//! What a client is told: the result of a resolution, and the response
//! message written from it.

use bulwark_proto::message::{
    EdnsOption, MessageBuilder, MessageView, OptRecord, Section, DEFAULT_UDP_PAYLOAD,
};
use bulwark_proto::{Name, Rcode, Rtype};

use crate::rrset::RrSet;

/// What DNSSEC validation found (RFC 4033 §5, RFC 4035 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Security {
    /// Not validated yet: never given to a client while validation is on.
    Unchecked,
    /// No chain of trust reaches it (an unsigned zone, an insecure
    /// delegation, no trust anchor above it), or validation is off.
    Insecure,
    /// Its signatures hold, from a trust anchor down.
    Secure,
    /// Its signatures or proofs should hold and do not: a client gets
    /// SERVFAIL with this Extended DNS Error code, unless it set CD.
    Bogus { ede: u16 },
}

impl Security {
    /// Of two, the one that speaks for an answer made of both: bogus
    /// before unchecked before insecure before secure.
    pub fn weaker(self, other: Security) -> Security {
        let rank = |s: Security| match s {
            Security::Bogus { .. } => 0,
            Security::Unchecked => 1,
            Security::Insecure => 2,
            Security::Secure => 3,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

/// The outcome of resolving one question, TTLs already counted down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub rcode: Rcode,
    /// The CNAME/DNAME chain, then the data (in order).
    pub answer: Vec<RrSet>,
    /// The SOA of a negative answer.
    pub authority: Vec<RrSet>,
    /// RFC 8914: why it failed, or that it is stale.
    pub ede: Option<(u16, String)>,
    /// Served from data past its TTL (RFC 8767).
    pub stale: bool,
    /// From the cache, with a link in the last tenth of its TTL: the edge
    /// should have it refreshed ([`crate::Resolver::prefetch`]). Not sent.
    pub refresh_due: bool,
    /// What validation found: AD for secure data, SERVFAIL for bogus.
    pub security: Security,
}

impl Resolution {
    /// A positive answer.
    pub fn answer(answer: Vec<RrSet>) -> Resolution {
        Resolution {
            rcode: Rcode::NOERROR,
            answer,
            authority: Vec::new(),
            ede: None,
            stale: false,
            refresh_due: false,
            security: Security::Insecure,
        }
    }

    /// NXDOMAIN or NODATA (`rcode` NOERROR) after `answer`'s chain, with the
    /// SOA counted down to `ttl` (RFC 2308 §3: the SOA goes in the
    /// authority section, its TTL the negative TTL), then the `extra`
    /// authority records received with it, none kept longer than the SOA.
    pub fn negative(
        rcode: Rcode,
        answer: Vec<RrSet>,
        soa: &Option<RrSet>,
        extra: &[RrSet],
        ttl: u32,
    ) -> Resolution {
        let authority = soa
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.ttl = ttl;
                s
            })
            .chain(extra.iter().map(|s| {
                let mut s = s.clone();
                s.ttl = s.ttl.min(ttl);
                s
            }))
            .collect();
        Resolution {
            rcode,
            answer,
            authority,
            ede: None,
            stale: false,
            refresh_due: false,
            security: Security::Insecure,
        }
    }

    /// SERVFAIL, saying why (RFC 8914).
    pub fn failure(code: u16, text: impl Into<String>) -> Resolution {
        Resolution {
            rcode: Rcode::SERVFAIL,
            answer: Vec::new(),
            authority: Vec::new(),
            ede: Some((code, text.into())),
            stale: false,
            refresh_due: false,
            security: Security::Insecure,
        }
    }

    /// REFUSED, saying why.
    pub fn refused(code: u16, text: impl Into<String>) -> Resolution {
        Resolution {
            rcode: Rcode::REFUSED,
            ede: Some((code, text.into())),
            ..Resolution::failure(code, "")
        }
    }

    /// Marks the answer as served stale (RFC 8767 §4, RFC 8914 §4: code 3, or
    /// 19 for an NXDOMAIN).
    pub fn stale(mut self, stale: bool) -> Resolution {
        if stale {
            self.stale = true;
            let code = if self.rcode == Rcode::NXDOMAIN {
                crate::ede::STALE_NXDOMAIN
            } else {
                crate::ede::STALE_ANSWER
            };
            self.ede.get_or_insert((code, String::new()));
        }
        self
    }

    pub fn refresh_due(mut self, due: bool) -> Resolution {
        self.refresh_due = due;
        self
    }

    pub fn security(mut self, security: Security) -> Resolution {
        self.security = security;
        self
    }

    /// The data records the chain ends in, for a question of `qtype`.
    pub fn data(&self, qtype: Rtype) -> impl Iterator<Item = &RrSet> {
        self.answer.iter().filter(move |s| s.rtype == qtype)
    }
}

/// Writes the response to `query` from `resolution` into `out`, at most
/// `limit` octets (the client's UDP size, or 65535 over TCP). RA is set (we
/// recurse), RD and CD are copied, AA is clear (RFC 1035 §4.1.1: answers from
/// cache are not authoritative). With EDNS in the query, an OPT goes back
/// with our payload size, DO echoed and the Extended DNS Error, if any; with
/// DO, each RRset's signatures follow it.
/// When the answer does not fit, TC is set and only the question and the OPT
/// go out (RFC 2181 §9): the client asks again over TCP. Secure data gets
/// AD when the client set DO or AD (RFC 6840 §5.7); bogus data is SERVFAIL
/// with its Extended DNS Error, unless the client set CD and gets the data
/// to judge itself (RFC 4035 §3.2.2, RFC 6840 §5.9). `extra` are
/// options the edge adds to the OPT (the COOKIE). Returns the rcode
/// written and whether the message was truncated.
pub fn write_response(
    query: &MessageView<'_>,
    resolution: &Resolution,
    limit: usize,
    extra: &[EdnsOption<'_>],
    out: &mut Vec<u8>,
) -> Option<(Rcode, bool)> {
    let edns = query.edns();
    let flags = query.header().flags;
    let bogus_hidden;
    let resolution = match resolution.security {
        Security::Bogus { ede } if !flags.cd => {
            let why = resolution
                .ede
                .as_ref()
                .map_or("validation failed", |(_, text)| text.as_str());
            bogus_hidden = Resolution::failure(ede, why);
            &bogus_hidden
        }
        _ => resolution,
    };
    let authentic = resolution.security == Security::Secure
        && (flags.ad || edns.as_ref().is_some_and(|e| e.dnssec_ok));
    let mut ede: Vec<EdnsOption<'_>> = resolution
        .ede
        .iter()
        .map(|(code, text)| EdnsOption::Ede {
            code: *code,
            text: text.as_bytes(),
        })
        .collect();
    ede.extend_from_slice(extra);
    let opt = edns.as_ref().map(|e| OptRecord {
        udp_payload_size: DEFAULT_UDP_PAYLOAD,
        dnssec_ok: e.dnssec_ok,
        options: &ede,
        ..OptRecord::default()
    });
    let reserve = opt.as_ref().map_or(0, OptRecord::wire_len);
    let dnssec_ok = edns.as_ref().is_some_and(|e| e.dnssec_ok);
    let write = |out: &mut Vec<u8>, with_records: bool| -> Option<(usize, bool)> {
        let mut b = MessageBuilder::response_to(out, limit, query).ok()?;
        b.header_mut().flags.ra = true;
        b.header_mut().flags.aa = false;
        b.header_mut().flags.ad = authentic;
        b.set_rcode(resolution.rcode);
        b.reserve(reserve);
        let mut complete = true;
        if with_records {
            for (section, sets) in [
                (Section::Answer, &resolution.answer),
                (Section::Authority, &resolution.authority),
            ] {
                for set in sets.iter() {
                    // RFC 4035 §3.2.1: a client that did not set DO gets
                    // no denial proofs (it could not check them).
                    let proof = matches!(set.rtype, Rtype::NSEC | Rtype::NSEC3 | Rtype::RRSIG);
                    if section == Section::Authority && proof && !dnssec_ok {
                        continue;
                    }
                    let mut pushed = b.push_rrset(
                        section,
                        &set.owner,
                        set.rtype,
                        set.class,
                        set.ttl,
                        set.rdata.iter().map(Vec::as_slice),
                    );
                    // RFC 4035 §3.2.1: the signatures go to a client that
                    // set DO, after the set they cover, with its TTL.
                    if pushed.is_ok() && dnssec_ok && !set.sigs.is_empty() {
                        pushed = b.push_rrset(
                            section,
                            &set.owner,
                            Rtype::RRSIG,
                            set.class,
                            set.ttl,
                            set.sigs.iter().map(Vec::as_slice),
                        );
                    }
                    if pushed.is_err() {
                        complete = false;
                        break;
                    }
                }
                if !complete {
                    break;
                }
            }
        }
        if !complete {
            return Some((0, false));
        }
        let len = b.finish(opt.as_ref()).ok()?;
        Some((len, true))
    };
    match write(out, true)? {
        (_, true) => Some((resolution.rcode, false)),
        (_, false) => {
            // RFC 2181 §9: TC when the answer's RRsets cannot all go in.
            let mut b = MessageBuilder::response_to(out, limit, query).ok()?;
            b.header_mut().flags.ra = true;
            b.header_mut().flags.tc = true;
            b.set_rcode(resolution.rcode);
            b.finish(opt.as_ref()).ok()?;
            Some((resolution.rcode, true))
        }
    }
}

/// The question a response answers, for logs.
pub fn describe(name: &Name, rtype: Rtype) -> String {
    format!("{name} {rtype}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use bulwark_proto::message::{MessageBuilder, OptRecord, DEFAULT_UDP_PAYLOAD};
    use bulwark_proto::{Class, MessageView, Name, Rcode, Rtype};

    use super::*;

    fn query(edns: bool) -> Vec<u8> {
        query_with(edns, false)
    }

    fn query_with(edns: bool, dnssec_ok: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut b = MessageBuilder::new(&mut out, 512);
        b.header_mut().id = 0x4242;
        b.header_mut().flags.rd = true;
        b.push_question(
            &Name::from_presentation(b"www.example.", None).unwrap(),
            Rtype::A,
            Class::IN,
        )
        .unwrap();
        let opt = edns.then(|| OptRecord {
            udp_payload_size: DEFAULT_UDP_PAYLOAD,
            dnssec_ok,
            ..OptRecord::default()
        });
        let len = b.finish(opt.as_ref()).unwrap();
        out.truncate(len);
        out
    }

    fn a_set(count: u8) -> RrSet {
        RrSet {
            owner: Name::from_presentation(b"www.example.", None).unwrap(),
            rtype: Rtype::A,
            class: Class::IN,
            ttl: 60,
            rdata: (0..count).map(|i| vec![192, 0, 2, i]).collect(),
            sigs: Vec::new(),
        }
    }

    #[test]
    fn signatures_go_only_to_a_client_that_set_do() {
        let mut set = a_set(2);
        set.push_sig(vec![
            0, 1, 13, 3, 0, 0, 0, 60, 0, 0, 0, 9, 0, 0, 0, 1, 0, 7, 0, 9, 9,
        ]);
        let r = Resolution::answer(vec![set]);
        let mut out = Vec::new();
        for (dnssec_ok, records) in [(false, 2), (true, 3)] {
            let q = query_with(true, dnssec_ok);
            let view = MessageView::parse(&q).unwrap();
            write_response(&view, &r, 1232, &[], &mut out).unwrap();
            let m = MessageView::parse(&out).unwrap();
            assert_eq!(usize::from(m.header().ancount), records, "DO {dnssec_ok}");
            let types: Vec<Rtype> = m.answers().map(|r| r.rtype).collect();
            assert_eq!(types.last() == Some(&Rtype::RRSIG), dnssec_ok);
            // The signature carries the set's TTL.
            assert!(m.answers().all(|r| r.ttl == 60));
        }
    }

    #[test]
    fn an_answer_carries_ra_not_aa_and_the_records() {
        let q = query(true);
        let view = MessageView::parse(&q).unwrap();
        let mut out = Vec::new();
        let r = Resolution::answer(vec![a_set(2)]);
        assert_eq!(
            write_response(&view, &r, 1232, &[], &mut out),
            Some((Rcode::NOERROR, false))
        );
        let m = MessageView::parse(&out).unwrap();
        let h = m.header();
        assert!(h.flags.qr && h.flags.ra && h.flags.rd && !h.flags.aa && !h.flags.tc);
        assert_eq!(h.id, 0x4242);
        assert_eq!(h.ancount, 2);
        assert!(m.edns().is_some());
    }

    #[test]
    fn a_failure_says_why_in_an_extended_error_and_the_cookie_goes_along() {
        let q = query(true);
        let view = MessageView::parse(&q).unwrap();
        let mut out = Vec::new();
        let r = Resolution::failure(crate::ede::NO_REACHABLE_AUTHORITY, "all timed out");
        let cookie = EdnsOption::Cookie {
            client: [1; 8],
            server: Some(&[2; 16]),
        };
        write_response(&view, &r, 1232, &[cookie], &mut out).unwrap();
        let m = MessageView::parse(&out).unwrap();
        assert_eq!(m.rcode(), Rcode::SERVFAIL);
        let e = m.edns().unwrap();
        let raw = e.option_bytes();
        // EDE (15): code 22 then the text; then the COOKIE (10).
        assert_eq!(&raw[..4], &[0, 15, 0, 2 + 13]);
        assert_eq!(&raw[4..6], &[0, 22]);
        assert_eq!(&raw[6..19], b"all timed out");
        assert_eq!(&raw[19..23], &[0, 10, 0, 24]);
    }

    #[test]
    fn without_edns_no_opt_goes_back_and_an_oversized_answer_is_truncated() {
        let q = query(false);
        let view = MessageView::parse(&q).unwrap();
        let mut out = Vec::new();
        // 40 addresses of 16 octets each: more than 512.
        let r = Resolution::answer(vec![a_set(40)]);
        assert_eq!(
            write_response(&view, &r, 512, &[], &mut out),
            Some((Rcode::NOERROR, true))
        );
        let m = MessageView::parse(&out).unwrap();
        assert!(m.header().flags.tc);
        assert_eq!(m.header().ancount, 0);
        assert!(m.edns().is_none());
        assert!(out.len() <= 512);
        // Over TCP it all goes.
        assert_eq!(
            write_response(&view, &r, 65535, &[], &mut out),
            Some((Rcode::NOERROR, false))
        );
        assert_eq!(MessageView::parse(&out).unwrap().header().ancount, 40);
    }
}
