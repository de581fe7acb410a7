//! EDNS (RFC 6891): the response size limit and the OPT record we send back.

use bulwark_proto::message::{Edns, MIN_UDP_PAYLOAD};

use crate::response::ResponseOpt;
use crate::Transport;

/// RFC 1035 §4.2.2: the two-octet length prefix bounds a TCP message.
pub(crate) const TCP_LIMIT: usize = 65535;

/// The largest response allowed. Over UDP: 512 without EDNS (RFC 1035 §4.2.1);
/// with it, the client's advertised size (values below 512 count as 512, RFC 6891
/// §6.2.5) capped by our own maximum, and never below 512.
pub(crate) fn size_limit(transport: Transport, edns: Option<&Edns<'_>>, max_udp: u16) -> usize {
    match transport {
        Transport::Tcp => TCP_LIMIT,
        Transport::Udp => {
            let client = edns.map_or(MIN_UDP_PAYLOAD, Edns::effective_payload);
            usize::from(client.min(max_udp).max(MIN_UDP_PAYLOAD))
        }
    }
}

/// RFC 6891 §7: a response to a query with EDNS carries an OPT: our payload size,
/// version 0 and (RFC 3225 §3) the DO bit echoed.
pub(crate) fn response_opt(edns: Option<&Edns<'_>>, max_udp: u16) -> Option<ResponseOpt> {
    edns.map(|e| ResponseOpt {
        payload: max_udp,
        dnssec_ok: e.dnssec_ok,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_limit_is_512_without_edns_and_tcp_is_65535() {
        assert_eq!(size_limit(Transport::Udp, None, 1232), 512);
        assert_eq!(size_limit(Transport::Tcp, None, 1232), 65535);
        // A configured maximum below 512 cannot shrink the classic limit.
        assert_eq!(size_limit(Transport::Udp, None, 100), 512);
    }
}
