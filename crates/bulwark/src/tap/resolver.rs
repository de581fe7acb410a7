//! dnstap for the resolving task: CLIENT_RESPONSE for answers it sends,
//! RESOLVER_QUERY/RESPONSE for its exchanges with authoritative servers and
//! FORWARDER_QUERY/RESPONSE for those with forwarders. A queue of its own,
//! like a UDP worker's; a full queue drops and counts.

use std::net::{Ipv4Addr, SocketAddr};

use bulwark_dnstap::{MessageContext, MessageKind, Protocol, Tap, Timestamp};

use super::wall_clock;

#[derive(Debug)]
pub struct ResolverTap {
    tap: Tap,
}

/// One exchange with a server, as the resolving task saw it.
#[derive(Debug, Clone, Copy)]
pub struct Upstream<'a> {
    pub server: SocketAddr,
    pub protocol: Protocol,
    /// To a forwarder rather than an authoritative server.
    pub forwarded: bool,
    pub query: &'a [u8],
    pub sent: Timestamp,
    /// `None` when no response came.
    pub response: Option<&'a [u8]>,
}

impl ResolverTap {
    /// `None` when none of the kinds the task logs is wanted.
    pub(super) fn new(tap: Tap) -> Option<ResolverTap> {
        let kinds = [
            MessageKind::ClientResponse,
            MessageKind::ResolverQuery,
            MessageKind::ResolverResponse,
            MessageKind::ForwarderQuery,
            MessageKind::ForwarderResponse,
        ];
        kinds
            .iter()
            .any(|k| tap.wants(*k))
            .then_some(ResolverTap { tap })
    }

    /// The wall clock, for an exchange's send time.
    pub fn now() -> Timestamp {
        wall_clock()
    }

    /// CLIENT_RESPONSE: a deferred answer sent to `client`.
    pub fn client_response(
        &mut self,
        client: SocketAddr,
        local: SocketAddr,
        protocol: Protocol,
        response: &[u8],
    ) {
        let ctx = MessageContext {
            protocol,
            client,
            server: local,
            query_time: None,
            response_time: Some(wall_clock()),
            query_zone: None,
        };
        self.tap.log(MessageKind::ClientResponse, &ctx, response);
    }

    /// RESOLVER_ or FORWARDER_ QUERY and RESPONSE of one exchange.
    pub fn upstream(&mut self, u: &Upstream<'_>) {
        let (q, r) = if u.forwarded {
            (MessageKind::ForwarderQuery, MessageKind::ForwarderResponse)
        } else {
            (MessageKind::ResolverQuery, MessageKind::ResolverResponse)
        };
        // The socket was ours alone and is closed: its address is not kept.
        let local = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
        let ctx = MessageContext {
            protocol: u.protocol,
            client: local,
            server: u.server,
            query_time: Some(u.sent),
            response_time: u.response.map(|_| wall_clock()),
            query_zone: None,
        };
        self.tap
            .log_exchange(&ctx, (q, u.query), u.response.map(|w| (r, w)));
    }

    pub fn flush(&mut self) {
        self.tap.flush();
    }
}
