//! EDNS (RFC 6891): the response size limit and the OPT record we send back.

use bulwark_proto::message::{udp_response_limit, Edns, EdnsOption, OPTION_TCP_KEEPALIVE};

use crate::response::{CookieOption, ResponseOpt};
use crate::{AnswerConfig, Transport, MAX_NSID_LEN};

/// RFC 1035 §4.2.2: the two-octet length prefix bounds a TCP message.
pub(crate) const TCP_LIMIT: usize = 65535;

/// The largest response allowed. Over UDP: 512 without EDNS (RFC 1035 §4.2.1);
/// with it, the client's advertised size (values below 512 count as 512, RFC 6891
/// §6.2.5) capped by our own maximum, and never below 512.
pub(crate) fn size_limit(transport: Transport, edns: Option<&Edns<'_>>, max_udp: u16) -> usize {
    match transport {
        Transport::Tcp => TCP_LIMIT,
        Transport::Udp => udp_response_limit(edns, max_udp),
    }
}

/// RFC 6891 §7: a response to a query with EDNS carries an OPT: our payload size,
/// version 0 and (RFC 3225 §3) the DO bit echoed. Its options answer the
/// query's, and only for EDNS version 0, whose options we understand:
/// - NSID (RFC 5001 §2.2) when the query asked and one is configured;
/// - COOKIE (RFC 7873 §5.2) as decided by the cookie step;
/// - edns-tcp-keepalive (RFC 7828 §3.3.2) over TCP when the query carried it;
///   over UDP the option is ignored (§3.3.1).
pub(crate) fn response_opt<'c>(
    edns: Option<&Edns<'_>>,
    config: &'c AnswerConfig,
    transport: Transport,
    cookie: Option<CookieOption>,
) -> Option<ResponseOpt<'c>> {
    let e = edns?;
    let mut opt = ResponseOpt::plain(config.max_udp_payload, e.dnssec_ok);
    if e.version != 0 {
        return Some(opt);
    }
    opt.nsid = config
        .nsid
        .as_deref()
        .filter(|n| n.len() <= MAX_NSID_LEN && e.requests_nsid());
    opt.cookie = cookie;
    if transport == Transport::Tcp && e.option(OPTION_TCP_KEEPALIVE).is_some() {
        opt.keepalive = config.tcp_keepalive;
    }
    Some(opt)
}

/// RFC 7828 §3.2.1: a client sends edns-tcp-keepalive empty; over TCP, one
/// carrying a TIMEOUT is a malformed query (FORMERR). Over UDP the option is
/// ignored whatever it holds (§3.3.1).
pub(crate) fn keepalive_malformed(transport: Transport, edns: Option<&Edns<'_>>) -> bool {
    transport == Transport::Tcp
        && edns.is_some_and(|e| {
            matches!(
                e.option(OPTION_TCP_KEEPALIVE),
                Some(EdnsOption::TcpKeepalive(Some(_)))
            )
        })
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;
    use bulwark_proto::message::{MessageView, OPTION_NSID};

    /// `a.` IN A with an OPT of EDNS `version` holding one option.
    fn query(version: u8, code: u16, data: &[u8]) -> Vec<u8> {
        let mut q = vec![0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, b'a', 0, 0, 1, 0, 1];
        q.extend_from_slice(&[0, 0, 41, 4, 208, 0, version, 0, 0]);
        let len = u16::try_from(data.len() + 4).unwrap();
        q.extend_from_slice(&len.to_be_bytes());
        q.extend_from_slice(&code.to_be_bytes());
        q.extend_from_slice(&u16::try_from(data.len()).unwrap().to_be_bytes());
        q.extend_from_slice(data);
        q
    }

    fn config() -> AnswerConfig {
        AnswerConfig {
            nsid: Some(b"ns".to_vec()),
            tcp_keepalive: Some(50),
            ..AnswerConfig::default()
        }
    }

    #[test]
    fn options_answer_only_version_zero_queries() {
        let cfg = config();
        let q = query(0, OPTION_NSID, b"");
        let v = MessageView::parse(&q).unwrap();
        let opt = response_opt(v.edns().as_ref(), &cfg, Transport::Udp, None).unwrap();
        assert_eq!(opt.nsid, Some(&b"ns"[..]));
        let q = query(1, OPTION_NSID, b"");
        let v = MessageView::parse(&q).unwrap();
        let opt = response_opt(v.edns().as_ref(), &cfg, Transport::Udp, None).unwrap();
        assert_eq!(opt.nsid, None);
    }

    #[test]
    fn keepalive_answers_tcp_only_and_a_timeout_is_malformed_over_tcp_only() {
        let cfg = config();
        let empty = query(0, OPTION_TCP_KEEPALIVE, b"");
        let v = MessageView::parse(&empty).unwrap();
        let e = v.edns();
        let tcp = response_opt(e.as_ref(), &cfg, Transport::Tcp, None).unwrap();
        let udp = response_opt(e.as_ref(), &cfg, Transport::Udp, None).unwrap();
        assert_eq!((tcp.keepalive, udp.keepalive), (Some(50), None));
        assert!(!keepalive_malformed(Transport::Tcp, e.as_ref()));
        let timed = query(0, OPTION_TCP_KEEPALIVE, &[0, 1]);
        let v = MessageView::parse(&timed).unwrap();
        assert!(keepalive_malformed(Transport::Tcp, v.edns().as_ref()));
        assert!(!keepalive_malformed(Transport::Udp, v.edns().as_ref()));
    }

    #[test]
    fn udp_limit_is_512_without_edns_and_tcp_is_65535() {
        assert_eq!(size_limit(Transport::Udp, None, 1232), 512);
        assert_eq!(size_limit(Transport::Tcp, None, 1232), 65535);
        // A configured maximum below 512 cannot shrink the classic limit.
        assert_eq!(size_limit(Transport::Udp, None, 100), 512);
    }
}
