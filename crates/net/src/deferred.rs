//! Responses finished after the query's turn has passed: a dynamic update is
//! acknowledged only once it is durable, and a zone transfer is many messages
//! made by a background task. The handler hands the transport a [`Deferred`]
//! job; the transport gives the job a [`Responder`] that sends its messages to
//! the client the way the query came: a datagram from the queried address, or
//! framed messages on the TCP connection, in order, before the connection's
//! next response.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bulwark_proto::message::truncate_to_question;
use socket2::Socket;
use tokio::sync::mpsc;

use crate::sys::{self, ReplyControl};
use crate::udp::Counters;

/// Work a handler finishes later, given the way to reply. It must not block
/// the caller: spawn the work (a thread, a task) and move the responder in.
pub type Deferred = Box<dyn FnOnce(Responder) + Send>;

/// The responder's messages are gone: the client closed the connection or the
/// server is stopping. The job should stop making more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client connection is closed")]
pub struct ResponderClosed;

/// Where a deferred job sends its response messages. Dropping it ends the
/// response: over TCP, the connection goes back to reading queries.
#[derive(Debug)]
pub struct Responder {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Udp {
        socket: Arc<Socket>,
        peer: SocketAddr,
        control: Option<ReplyControl>,
        /// The receiving worker's, so a reply sent later is counted.
        counters: Arc<Counters>,
    },
    Tcp(mpsc::Sender<Vec<u8>>),
    /// To the AF_XDP worker that received the query, which owns its TX ring.
    Xdp {
        replier: crate::xdp::Replier,
        flow: crate::xdp::frame::Flow,
    },
}

/// Messages a TCP connection holds from a deferred job before the job waits:
/// enough to keep the socket busy, little enough that a client that reads
/// slowly holds a few messages of memory, not a whole zone.
pub(crate) const TCP_QUEUE: usize = 4;

impl Responder {
    pub(crate) fn udp(
        socket: Arc<Socket>,
        peer: SocketAddr,
        control: Option<ReplyControl>,
        counters: Arc<Counters>,
    ) -> Responder {
        Responder {
            kind: Kind::Udp {
                socket,
                peer,
                control,
                counters,
            },
        }
    }

    pub(crate) fn xdp(replier: crate::xdp::Replier, flow: crate::xdp::frame::Flow) -> Responder {
        Responder {
            kind: Kind::Xdp { replier, flow },
        }
    }

    pub(crate) fn tcp(sender: mpsc::Sender<Vec<u8>>) -> Responder {
        Responder {
            kind: Kind::Tcp(sender),
        }
    }

    /// Whether the response may be several messages (TCP), or only one
    /// datagram (UDP).
    pub fn is_stream(&self) -> bool {
        matches!(self.kind, Kind::Tcp(_))
    }

    /// Sends one message, waiting (outside an async runtime) for room in the
    /// connection's queue.
    pub fn send_blocking(&self, msg: Vec<u8>) -> Result<(), ResponderClosed> {
        match &self.kind {
            Kind::Udp {
                socket,
                peer,
                control,
                counters,
            } => send_datagram(socket, *peer, control.as_ref(), counters, msg),
            Kind::Tcp(tx) => tx.blocking_send(msg).map_err(|_| ResponderClosed),
            Kind::Xdp { replier, flow } => send_xdp(replier, flow, msg),
        }
    }

    /// Sends one message without waiting: from a task that must not wait on
    /// one client (a resolver answering many). A TCP connection whose queue
    /// is full counts as closed.
    pub fn try_send(&self, msg: Vec<u8>) -> Result<(), ResponderClosed> {
        match &self.kind {
            Kind::Udp {
                socket,
                peer,
                control,
                counters,
            } => send_datagram(socket, *peer, control.as_ref(), counters, msg),
            Kind::Tcp(tx) => tx.try_send(msg).map_err(|_| ResponderClosed),
            Kind::Xdp { replier, flow } => send_xdp(replier, flow, msg),
        }
    }

    /// Sends one message from an async task.
    pub async fn send(&self, msg: Vec<u8>) -> Result<(), ResponderClosed> {
        match &self.kind {
            Kind::Udp {
                socket,
                peer,
                control,
                counters,
            } => send_datagram(socket, *peer, control.as_ref(), counters, msg),
            Kind::Tcp(tx) => tx.send(msg).await.map_err(|_| ResponderClosed),
            Kind::Xdp { replier, flow } => send_xdp(replier, flow, msg),
        }
    }
}

/// One datagram, handed to the worker; like any UDP reply, one attempt.
fn send_xdp(
    replier: &crate::xdp::Replier,
    flow: &crate::xdp::frame::Flow,
    msg: Vec<u8>,
) -> Result<(), ResponderClosed> {
    if replier.send(*flow, msg) {
        Ok(())
    } else {
        Err(ResponderClosed)
    }
}

/// A UDP reply cannot be queued for later: one attempt, as for any reply. A
/// lost reply is the client's to retry, like any lost datagram. One too big
/// to leave unfragmented goes again truncated, as a batch's would.
fn send_datagram(
    socket: &Socket,
    peer: SocketAddr,
    control: Option<&ReplyControl>,
    counters: &Counters,
    mut msg: Vec<u8>,
) -> Result<(), ResponderClosed> {
    let fd = socket.as_raw_fd();
    let mut sent = sys::send_one(fd, peer, control, &msg);
    if matches!(&sent, Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE))
        && truncate_to_question(&mut msg)
    {
        counters.truncated.fetch_add(1, Ordering::Relaxed);
        sent = sys::send_one(fd, peer, control, &msg);
    }
    let counter = if sent.is_ok() {
        &counters.responded
    } else {
        &counters.send_errors
    };
    counter.fetch_add(1, Ordering::Relaxed);
    sent.map_err(|e| {
        tracing::debug!(%peer, error = %e, "deferred UDP reply not sent");
        ResponderClosed
    })
}
