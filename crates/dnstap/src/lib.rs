//! dnstap (<https://dnstap.info>): the schema, the Frame Streams protocol, the
//! bounded queues that copy messages off the query path without ever waiting,
//! and a reader.
//!
//! The query path only ever touches a [`Tap`]: it encodes the message into a
//! recycled buffer and pushes it on a bounded lock-free queue, or counts a drop
//! when the queue is full. Whoever owns the [`Drain`] (bulwark's writer thread)
//! empties the queues and does all the I/O (the design of the dnstap talk:
//! duplicate in process, queue, write asynchronously, drop rather than slow the
//! server).
//!
//! Pure: no sockets, files, threads or clocks here. Times come in with each
//! message ([`MessageContext`]), bytes in and out through `Read`/`Write`.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

pub mod capture;
mod encode;
pub mod format;
pub mod frame;
mod queue;
pub mod read;
pub mod sender;

/// The prost types generated from `proto/dnstap.proto` at build time.
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]
pub mod schema {
    include!(concat!(env!("OUT_DIR"), "/dnstap.rs"));
}

pub use queue::{Drain, Sink, Tap};
pub use read::Reader;

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// The Frame Streams content type of dnstap streams, sent in READY, ACCEPT and
/// START control frames.
pub const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

/// The dnstap message types (dnstap.proto `Message.Type`), all of them, so the
/// resolver's and forwarder's drop in later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    AuthQuery,
    AuthResponse,
    ResolverQuery,
    ResolverResponse,
    ClientQuery,
    ClientResponse,
    ForwarderQuery,
    ForwarderResponse,
    StubQuery,
    StubResponse,
    ToolQuery,
    ToolResponse,
    UpdateQuery,
    UpdateResponse,
}

impl MessageKind {
    /// Every kind, in schema order.
    pub const ALL: [MessageKind; 14] = [
        MessageKind::AuthQuery,
        MessageKind::AuthResponse,
        MessageKind::ResolverQuery,
        MessageKind::ResolverResponse,
        MessageKind::ClientQuery,
        MessageKind::ClientResponse,
        MessageKind::ForwarderQuery,
        MessageKind::ForwarderResponse,
        MessageKind::StubQuery,
        MessageKind::StubResponse,
        MessageKind::ToolQuery,
        MessageKind::ToolResponse,
        MessageKind::UpdateQuery,
        MessageKind::UpdateResponse,
    ];

    /// The `Message.Type` number in dnstap.proto (1..=14).
    pub const fn code(self) -> u8 {
        match self {
            MessageKind::AuthQuery => 1,
            MessageKind::AuthResponse => 2,
            MessageKind::ResolverQuery => 3,
            MessageKind::ResolverResponse => 4,
            MessageKind::ClientQuery => 5,
            MessageKind::ClientResponse => 6,
            MessageKind::ForwarderQuery => 7,
            MessageKind::ForwarderResponse => 8,
            MessageKind::StubQuery => 9,
            MessageKind::StubResponse => 10,
            MessageKind::ToolQuery => 11,
            MessageKind::ToolResponse => 12,
            MessageKind::UpdateQuery => 13,
            MessageKind::UpdateResponse => 14,
        }
    }

    /// The kind with this `Message.Type` number.
    pub fn from_code(code: i32) -> Option<MessageKind> {
        let index = usize::try_from(code).ok()?.checked_sub(1)?;
        MessageKind::ALL.get(index).copied()
    }

    /// True for the query half of each pair (the odd type numbers): the
    /// message goes in `query_message`, otherwise in `response_message`.
    pub const fn query(self) -> bool {
        self.code() % 2 == 1
    }

    /// The schema name, e.g. "AUTH_QUERY".
    pub const fn name(self) -> &'static str {
        match self {
            MessageKind::AuthQuery => "AUTH_QUERY",
            MessageKind::AuthResponse => "AUTH_RESPONSE",
            MessageKind::ResolverQuery => "RESOLVER_QUERY",
            MessageKind::ResolverResponse => "RESOLVER_RESPONSE",
            MessageKind::ClientQuery => "CLIENT_QUERY",
            MessageKind::ClientResponse => "CLIENT_RESPONSE",
            MessageKind::ForwarderQuery => "FORWARDER_QUERY",
            MessageKind::ForwarderResponse => "FORWARDER_RESPONSE",
            MessageKind::StubQuery => "STUB_QUERY",
            MessageKind::StubResponse => "STUB_RESPONSE",
            MessageKind::ToolQuery => "TOOL_QUERY",
            MessageKind::ToolResponse => "TOOL_RESPONSE",
            MessageKind::UpdateQuery => "UPDATE_QUERY",
            MessageKind::UpdateResponse => "UPDATE_RESPONSE",
        }
    }

    /// The two-letter mnemonic of the dnstap diagram ("AQ", "AR", ...), as
    /// dnstap-ldns prints it.
    pub const fn mnemonic(self) -> &'static str {
        match self {
            MessageKind::AuthQuery => "AQ",
            MessageKind::AuthResponse => "AR",
            MessageKind::ResolverQuery => "RQ",
            MessageKind::ResolverResponse => "RR",
            MessageKind::ClientQuery => "CQ",
            MessageKind::ClientResponse => "CR",
            MessageKind::ForwarderQuery => "FQ",
            MessageKind::ForwarderResponse => "FR",
            MessageKind::StubQuery => "SQ",
            MessageKind::StubResponse => "SR",
            MessageKind::ToolQuery => "TQ",
            MessageKind::ToolResponse => "TR",
            MessageKind::UpdateQuery => "UQ",
            MessageKind::UpdateResponse => "UR",
        }
    }

    /// True when the server that logs the message is the responder (the peer
    /// initiated): AUTH_*, CLIENT_* and UPDATE_*. Only used to describe the
    /// message; the addresses in [`MessageContext`] are initiator/responder.
    pub const fn server_side(self) -> bool {
        matches!(
            self,
            MessageKind::AuthQuery
                | MessageKind::AuthResponse
                | MessageKind::ClientQuery
                | MessageKind::ClientResponse
                | MessageKind::UpdateQuery
                | MessageKind::UpdateResponse
        )
    }

    const fn bit(self) -> u16 {
        match 1u16.checked_shl((self.code() as u32).saturating_sub(1)) {
            Some(bit) => bit,
            None => 0,
        }
    }
}

impl std::fmt::Display for MessageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MessageKind {
    type Err = DnstapError;

    /// Accepts the schema name in either case ("AUTH_QUERY", "auth_query");
    /// `-` may stand for `_` ("auth-query").
    fn from_str(s: &str) -> Result<MessageKind, DnstapError> {
        MessageKind::ALL
            .iter()
            .copied()
            .find(|kind| {
                let name = kind.name().as_bytes();
                name.len() == s.len()
                    && name.iter().zip(s.bytes()).all(|(&n, c)| {
                        let c = if c == b'-' { b'_' } else { c };
                        n == c.to_ascii_uppercase()
                    })
            })
            .ok_or_else(|| DnstapError::UnknownKind(s.to_owned()))
    }
}

/// A set of message kinds (which ones are logged).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindSet(pub u16);

impl KindSet {
    pub const fn empty() -> KindSet {
        KindSet(0)
    }

    /// All fourteen kinds.
    pub const fn all() -> KindSet {
        KindSet(0x3fff)
    }

    /// What an authoritative server logs by default: AUTH_QUERY and AUTH_RESPONSE.
    pub const fn auth() -> KindSet {
        KindSet::empty()
            .with(MessageKind::AuthQuery)
            .with(MessageKind::AuthResponse)
    }

    #[must_use]
    pub const fn with(self, kind: MessageKind) -> KindSet {
        KindSet(self.0 | kind.bit())
    }

    pub fn insert(&mut self, kind: MessageKind) {
        self.0 |= kind.bit();
    }

    #[inline]
    pub const fn contains(self, kind: MessageKind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 & 0x3fff == 0
    }

    /// The kinds in the set, in schema order.
    pub fn iter(self) -> impl Iterator<Item = MessageKind> {
        MessageKind::ALL
            .into_iter()
            .filter(move |&kind| self.contains(kind))
    }
}

impl FromIterator<MessageKind> for KindSet {
    fn from_iter<I: IntoIterator<Item = MessageKind>>(iter: I) -> KindSet {
        iter.into_iter().fold(KindSet::empty(), KindSet::with)
    }
}

/// dnstap.proto `SocketProtocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Udp,
    Tcp,
    Dot,
    Doh,
    Doq,
}

impl Protocol {
    /// The `SocketProtocol` number in dnstap.proto.
    pub const fn code(self) -> i32 {
        match self {
            Protocol::Udp => 1,
            Protocol::Tcp => 2,
            Protocol::Dot => 3,
            Protocol::Doh => 4,
            Protocol::Doq => 7,
        }
    }
}

/// Seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    pub secs: u64,
    pub nanos: u32,
}

impl Timestamp {
    /// The time `since_epoch` after 1970-01-01T00:00:00Z. The clock is read
    /// at the edge (once per message, after checking [`Tap::wants`]) and the
    /// result passed in the [`MessageContext`].
    pub const fn from_unix(since_epoch: Duration) -> Timestamp {
        Timestamp {
            secs: since_epoch.as_secs(),
            nanos: since_epoch.subsec_nanos(),
        }
    }
}

/// What the queues of a [`Sink`] hold and how much.
#[derive(Debug, Clone)]
pub struct SinkConfig {
    pub identity: Option<Vec<u8>>,
    pub version: Option<Vec<u8>>,
    pub kinds: KindSet,
    /// Entries per queue; a full queue drops (and counts) instead of waiting.
    pub queue_capacity: usize,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Data frames written to the destination.
    pub sent: u64,
    /// Messages lost: a queue was full, or the destination was disconnected.
    pub dropped: u64,
    /// Times a socket destination was connected again (handshake complete)
    /// after the first connection: each one follows a lost connection.
    pub reconnects: u64,
}

/// Where and when a DNS message was seen, passed by the caller of [`Tap::log`].
///
/// `client` is the initiator of the exchange (dnstap `query_address`/`query_port`)
/// and `server` the responder (`response_address`/`response_port`): for AUTH_*
/// messages the peer and the local socket, for RESOLVER_* the local socket and
/// the upstream server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageContext<'a> {
    pub protocol: Protocol,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub query_time: Option<Timestamp>,
    pub response_time: Option<Timestamp>,
    /// The zone (bailiwick) of the query, a wire-format name.
    pub query_zone: Option<&'a [u8]>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnstapError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {len} bytes exceeds the limit of {limit}")]
    FrameTooLarge { len: u64, limit: u64 },
    #[error("malformed control frame: {0}")]
    BadControl(&'static str),
    #[error("unexpected frame: {0}")]
    UnexpectedFrame(&'static str),
    #[error("content type {0:?} is not protobuf:dnstap.Dnstap")]
    ContentType(String),
    #[error("bad dnstap payload: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("unknown dnstap message type {0:?}")]
    UnknownKind(String),
    #[error("invalid sink configuration: {0}")]
    Config(&'static str),
    #[error("handshake with the receiver failed: {0}")]
    Handshake(&'static str),
}
