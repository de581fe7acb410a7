//! The channel a client's query came in on, as the edge knows it. The
//! answering code sees only whether that is a datagram or a stream (auth's
//! `Transport`); statistics, logs and dnstap name the channel itself, and
//! padding (RFC 7830) applies only where it is encrypted.

use bulwark_auth::Transport;
use bulwark_dnstap::Protocol;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Udp,
    Tcp,
    /// DNS over TLS (RFC 7858).
    Tls,
    /// DNS over HTTPS (RFC 8484), on any HTTP version.
    Https,
    /// DNS over QUIC (RFC 9250).
    Quic,
}

impl Via {
    /// How many channels there are, for tables indexed by [`Via::index`].
    pub const COUNT: usize = 5;

    /// A small number for each channel, below [`Via::COUNT`].
    pub fn index(self) -> usize {
        match self {
            Via::Udp => 0,
            Via::Tcp => 1,
            Via::Tls => 2,
            Via::Https => 3,
            Via::Quic => 4,
        }
    }

    /// What the answering code is told: DoT is a stream like TCP (the same
    /// size limit, keepalive, no cookies required, no rate limiting).
    pub fn transport(self) -> Transport {
        match self {
            Via::Udp => Transport::Udp,
            Via::Tcp | Via::Tls | Via::Https | Via::Quic => Transport::Tcp,
        }
    }

    /// The label in metrics and the query log.
    pub fn name(self) -> &'static str {
        match self {
            Via::Udp => "udp",
            Via::Tcp => "tcp",
            Via::Tls => "tls",
            Via::Https => "https",
            Via::Quic => "quic",
        }
    }

    /// dnstap's `SocketProtocol`.
    pub fn protocol(self) -> Protocol {
        match self {
            Via::Udp => Protocol::Udp,
            Via::Tcp => Protocol::Tcp,
            Via::Tls => Protocol::Dot,
            Via::Https => Protocol::Doh,
            Via::Quic => Protocol::Doq,
        }
    }

    /// Whether the channel is a stream: the client's address is proven.
    pub fn is_stream(self) -> bool {
        self != Via::Udp
    }

    /// RFC 7830 §6: padding is for encrypted channels only.
    pub fn is_encrypted(self) -> bool {
        matches!(self, Via::Tls | Via::Https | Via::Quic)
    }
}
