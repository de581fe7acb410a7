//! Sockets: UDP with batched syscalls (`recvmmsg`/`sendmmsg`), TCP per RFC 7766,
//! DNS over TLS per RFC 7858, DNS over HTTPS per RFC 8484 (HTTP/2, HTTP/1.1
//! and HTTP/3), DNS over QUIC per RFC 9250.
//!
//! This is the only crate allowed `unsafe`: each block is small, sits in `sys.rs`
//! or beside the syscall it wraps, and carries a `// SAFETY:` comment. Everything
//! here is transport: what to answer is decided by a [`QueryHandler`].
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

mod caps;
pub mod client;
mod client_conns;
mod control;
mod deferred;
pub mod doh;
pub mod doq;
mod error;
pub mod frame;
mod h2_streams;
mod heap;
pub mod https;
mod metrics_http;
pub mod quic;
mod shutdown;
mod stream;
mod sys;
mod systemd;
pub mod tcp;
pub mod tls;
pub mod udp;
pub mod xdp;

use std::net::SocketAddr;

pub use client::{Client, ClientConfig, ClientError, Response, TransferStream, Transport};
pub use control::{
    bind_control, control_request, serve_control, ControlBindError, ControlListener, MAX_COMMAND,
};
pub use deferred::{Deferred, Responder, ResponderClosed};
pub use error::NetError;
pub use frame::{FrameDecoder, FrameError};
pub use heap::{release_free_memory, Allocator};
pub use https::DohConfig;
pub use metrics_http::{bind_metrics, serve_metrics, MetricsBody, MetricsListener};
pub use quic::{bind_quic, serve_quic, BoundQuic, QuicServer, QuicService};
pub use shutdown::Shutdown;
pub use stream::{AsyncStreamListener, Stream, StreamAddr, StreamListener};
pub use systemd::sd_notify;
pub use tcp::{bind_tcp, serve_https, serve_tcp, serve_tls, BoundTcp, TcpConfig, TcpStats};
pub use tls::{ServerCertificate, TlsError, TlsServer};
pub use udp::{bind_udp, Fragmentation, UdpConfig, UdpListeners, UdpStats, UdpWorkers};
pub use xdp::{bind_xdp, BoundXdp, XdpConfig, XdpInfo, XdpStats, XdpWorkers};

/// The queries of one received batch, by index, for
/// [`QueryHandler::start_of_batch`]: a handler may read them more than once.
pub trait Batch {
    /// How many messages the batch holds (some may be unreadable).
    fn len(&self) -> usize;
    /// The `i`th query's octets, if it was received whole.
    fn query(&self, i: usize) -> Option<&[u8]>;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Turns one query into at most one response. Each UDP worker thread and each TCP
/// connection owns its handler, so a handler keeps scratch space between queries
/// and needs no locks.
pub trait QueryHandler {
    /// Writes the response to `query` from `peer`, received on the listener bound
    /// to `local`, into `out` (cleared by the handler) and returns whether to send
    /// it; `false` drops the query silently.
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool;

    /// Called with the queries of a batch (a `recvmmsg` batch on UDP) before
    /// any of them is handled, so a handler can start the memory reads their
    /// answers will need and wait for them all at once instead of one query
    /// at a time.
    fn start_of_batch(&mut self, _batch: &dyn Batch) {}

    /// Called after each batch of queries has been answered, just before
    /// its responses are sent (a `recvmmsg` batch on UDP, the messages of one
    /// read on TCP), so a handler can hand work it batched (log entries,
    /// counts) to whoever waits for it, complete by the time a client holds
    /// its answer.
    fn end_of_batch(&mut self) {}

    /// Asked after `handle` returned `false`: a response the handler will
    /// finish later (see [`Deferred`]). The transport calls the job at once
    /// with a [`Responder`] for the query's client. Over TCP, the connection
    /// sends the job's messages before answering its next query.
    fn take_deferred(&mut self) -> Option<Deferred> {
        None
    }

    /// Asked after `handle` returned `false` and `take_deferred` had
    /// nothing: a single response the handler will finish later that may go
    /// out after responses to later queries (a resolution). Over TCP the
    /// connection goes on reading and answering while it runs and sends it
    /// when it comes (RFC 7766 §6.2.1.1); over UDP it is like
    /// `take_deferred`.
    fn take_deferred_reply(&mut self) -> Option<Deferred> {
        None
    }
}

impl<F> QueryHandler for F
where
    F: FnMut(&[u8], SocketAddr, SocketAddr, &mut Vec<u8>) -> bool,
{
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        self(query, peer, local, out)
    }
}
