//! One DNS over QUIC connection (RFC 9250): each query on its own stream,
//! answered on that stream and finished; a zone transfer's messages one
//! after another on the stream that asked. Queries from 0-RTT data are
//! answered only when safe to replay. The connection closes with no error
//! when idle or once its query cap is answered, with a protocol error when
//! the client breaks the framing.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bulwark_proto::Rcode;
use bytes::Bytes;
use futures_util::future::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use quinn::{ReadToEndError, RecvStream, SendStream, VarInt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::client_conns::ClientSlot;
use crate::deferred::{Deferred, Responder, TCP_QUEUE};
use crate::doq::{self, DoqError};
use crate::https::message_wait;
use crate::tcp::{bump, ConnectionEnd, TcpConfig, TcpStats};
use crate::QueryHandler;

/// What the streams of one connection share.
struct Streams<H> {
    handler: Mutex<H>,
    peer: SocketAddr,
    local: SocketAddr,
    /// How long a stream's query may take to arrive, and each write.
    message_wait: Duration,
    /// How long a resolution's answer, or a transfer's next message, is
    /// waited for.
    reply_wait: Duration,
    cap: u32,
    answered: AtomicU32,
    stats: Arc<TcpStats>,
}

/// How a stream ended, for the connection.
enum StreamEnd {
    Done,
    /// The client broke the framing: the connection closes.
    Protocol,
}

/// Serves the connection's streams until it ends.
pub(super) async fn serve<H: QueryHandler + Send + 'static>(
    connection: &quinn::Connection,
    handler: H,
    local: SocketAddr,
    config: &TcpConfig,
    stats: &Arc<TcpStats>,
    slot: Option<&ClientSlot>,
) -> ConnectionEnd {
    let shared = Arc::new(Streams {
        handler: Mutex::new(handler),
        peer: connection.remote_address(),
        local,
        message_wait: message_wait(config),
        reply_wait: config.idle_timeout,
        cap: config.max_queries_per_connection,
        answered: AtomicU32::new(0),
        stats: Arc::clone(stats),
    });
    // The streams run in this task, not as tasks of their own: the answers
    // of the streams that one wake-up finds ready are written before quinn's
    // driver runs, which then sends them in as few packets as fit (see
    // `crate::h2_streams` for what a task per stream cost DoH). A stream
    // that panics is caught here, as a task's panic was by a JoinSet.
    let mut streams = FuturesUnordered::new();
    let mut last_busy = Instant::now();
    loop {
        let idle_at = last_busy
            .checked_add(config.idle_timeout)
            .unwrap_or(last_busy);
        let capped = shared.cap != 0 && shared.answered.load(Ordering::Relaxed) >= shared.cap;
        tokio::select! {
            () = super::evicted(slot), if streams.is_empty() => return ConnectionEnd::Evicted,
            accepted = connection.accept_bi(), if !capped => {
                let (send, recv) = match accepted {
                    Ok(s) => s,
                    Err(e) => return super::end_of(&e),
                };
                if streams.is_empty() {
                    if let Some(s) = slot {
                        if !s.begin_work() {
                            return ConnectionEnd::Evicted;
                        }
                    }
                }
                let stream = serve_stream(Arc::clone(&shared), send, recv);
                streams.push(std::panic::AssertUnwindSafe(stream).catch_unwind());
            }
            Some(done) = streams.next() => {
                last_busy = Instant::now();
                if streams.is_empty() {
                    if let Some(s) = slot {
                        s.end_work(true);
                    }
                }
                match done {
                    Ok(StreamEnd::Done) => {}
                    Ok(StreamEnd::Protocol) => return ConnectionEnd::Protocol,
                    // Answering the stream panicked: that query is lost, the
                    // connection goes on.
                    Err(_) => {}
                }
                // Read again: the stream just done may have been the last
                // the cap allows.
                let capped = shared.cap != 0 && shared.answered.load(Ordering::Relaxed) >= shared.cap;
                if capped && streams.is_empty() {
                    return ConnectionEnd::QueryLimit;
                }
            }
            () = tokio::time::sleep_until(idle_at), if streams.is_empty() => {
                return if capped { ConnectionEnd::QueryLimit } else { ConnectionEnd::Idle };
            }
        }
    }
}

/// Reads one stream's query to its FIN, answers it on the stream, and
/// finishes the stream once the client has it.
async fn serve_stream<H: QueryHandler + Send + 'static>(
    shared: Arc<Streams<H>>,
    mut send: SendStream,
    mut recv: RecvStream,
) -> StreamEnd {
    let read = tokio::time::timeout(shared.message_wait, recv.read_to_end(doq::MAX_STREAM)).await;
    let stream = match read {
        Ok(Ok(s)) => s,
        Ok(Err(ReadToEndError::TooLong)) => return protocol_error(&mut send),
        // Reset by the client (a cancelled query), or the connection went.
        Ok(Err(ReadToEndError::Read(_))) => return StreamEnd::Done,
        Err(_) => {
            // The query did not arrive in time: give the stream up.
            let _ = recv.stop(code(DoqError::RequestCancelled));
            let _ = send.reset(code(DoqError::RequestCancelled));
            return StreamEnd::Done;
        }
    };
    let Ok(query) = doq::read_query(&stream) else {
        return protocol_error(&mut send);
    };
    bump(&shared.stats.queries);
    shared.answered.fetch_add(1, Ordering::Relaxed);
    if recv.is_0rtt() && !doq::replay_safe(query) {
        // RFC 9250 §4.5: not from data anyone could replay.
        let mut out = Vec::new();
        if bulwark_proto::message::write_error_response(query, Rcode::REFUSED, &mut out).is_some() {
            let _ = write_messages(&shared, &mut send, Some(out), None).await;
        }
        return StreamEnd::Done;
    }
    let handled = {
        let mut handler = shared
            .handler
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        let answered = handler.handle(query, shared.peer, shared.local, &mut out);
        let handled = if answered {
            Some((Some(out), None))
        } else if let Some(job) = handler.take_deferred() {
            Some((None, Some(job)))
        } else {
            handler.take_deferred_reply().map(|job| (None, Some(job)))
        };
        handler.end_of_batch();
        handled
    };
    match handled {
        Some((now, job)) => {
            let _ = write_messages(&shared, &mut send, now, job).await;
        }
        // Dropped (an ACL, an unreadable message): no answer, and the
        // stream says so rather than hang.
        None => {
            let _ = send.reset(code(DoqError::UnspecifiedError));
        }
    }
    StreamEnd::Done
}

/// A stream that broke the framing gets no answer, not even an empty one
/// (a dropped stream would be finished); the connection then closes.
fn protocol_error(send: &mut SendStream) -> StreamEnd {
    let _ = send.reset(code(DoqError::ProtocolError));
    StreamEnd::Protocol
}

/// Writes the answer (`now`, or every message of a deferred `job`), each
/// framed, then finishes the stream and waits (bounded) for the client to
/// have it all, so a close that follows does not cut it off.
async fn write_messages<H>(
    shared: &Streams<H>,
    send: &mut SendStream,
    now: Option<Vec<u8>>,
    job: Option<Deferred>,
) -> Result<(), ()> {
    if let Some(m) = now {
        write(shared, send, m).await?;
    }
    if let Some(job) = job {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(TCP_QUEUE);
        job(Responder::tcp(tx));
        loop {
            let next = tokio::time::timeout(shared.reply_wait, rx.recv()).await;
            let message = match next {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(_) => {
                    let _ = send.reset(code(DoqError::UnspecifiedError));
                    return Err(());
                }
            };
            write(shared, send, message).await?;
        }
    }
    send.finish().map_err(|_| ())?;
    let _ = tokio::time::timeout(shared.reply_wait, send.stopped()).await;
    Ok(())
}

/// Writes one message after its length, bounded in time: a client that
/// stops reading loses the stream, not the server's memory or a task. The
/// message is handed to quinn as it is, not copied behind its length.
async fn write<H>(shared: &Streams<H>, send: &mut SendStream, message: Vec<u8>) -> Result<(), ()> {
    let Some(prefix) = doq::length_prefix(&message) else {
        return Err(());
    };
    let mut chunks = [Bytes::copy_from_slice(&prefix), Bytes::from(message)];
    match tokio::time::timeout(shared.reply_wait, send.write_all_chunks(&mut chunks)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(()),
        Err(_) => {
            let _ = send.reset(code(DoqError::UnspecifiedError));
            Err(())
        }
    }
}

fn code(e: DoqError) -> VarInt {
    VarInt::from_u32(e.code())
}
