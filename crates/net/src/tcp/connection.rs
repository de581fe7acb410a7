//! One DNS over TCP or TLS connection (RFC 7766, RFC 7858): queries read as
//! they come, answered in order (a resolution's answer when it is ready),
//! responses written in batches, each limit ending the connection with its
//! reason.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::deferred::{Deferred, Responder, TCP_QUEUE};
use crate::frame::FrameDecoder;
use crate::QueryHandler;

use super::{bump, ConnectionEnd, Peer, TcpConfig, TcpStats, WRITE_BATCH};

/// Reads, answers and writes until a limit or the client ends the connection.
pub(super) async fn serve_connection<H: QueryHandler, S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    who: Peer<'_>,
    mut handler: H,
    config: &TcpConfig,
    stats: &TcpStats,
) -> ConnectionEnd {
    let Peer {
        addr: peer,
        local,
        slot,
    } = who;
    let mut decoder = FrameDecoder::new(config.max_query_size);
    let mut out: Vec<u8> = Vec::new();
    let mut responses: Vec<u8> = Vec::new();
    let mut answered: u32 = 0;
    // Responses still being made that later ones may overtake (RFC 7766
    // §6.2.1.1): each ends with its message, or with none.
    let mut replies: JoinSet<Option<Vec<u8>>> = JoinSet::new();
    // When the message now in progress must be complete by.
    let mut message_deadline: Option<Instant> = None;
    loop {
        // Evicted while reading: what was read is not answered.
        if slot.is_some_and(|s| !s.begin_work()) {
            return ConnectionEnd::Evicted;
        }
        // Answer every message already received, in order (RFC 7766 §6.2.1.1);
        // their responses leave together.
        let mut completed = false;
        loop {
            // A client with many resolutions waiting reads no more until
            // one ends: its connection holds a bounded amount of work.
            if replies.len() >= MAX_REPLIES_WAITING {
                if let Err(end) =
                    next_reply(stream, &mut replies, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
            }
            let query = match decoder.next_frame() {
                Ok(Some(q)) => q,
                Ok(None) => break,
                Err(e) => {
                    // Send what was answered before the bad prefix; the close
                    // follows either way.
                    let _ = write_responses(stream, &mut responses, config.idle_timeout).await;
                    return ConnectionEnd::BadLength(e);
                }
            };
            completed = true;
            bump(&stats.queries);
            if handler.handle(query, peer, local, &mut out) {
                push_framed(&mut responses, &out);
            } else if let Some(job) = handler.take_deferred() {
                // The job's messages follow the responses already made, and
                // the next query waits for them (a transfer is contiguous).
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
                if let Err(end) = relay_deferred(stream, job, config.idle_timeout).await {
                    return end;
                }
            } else if let Some(job) = handler.take_deferred_reply() {
                let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
                job(Responder::tcp(tx));
                replies.spawn(async move { rx.recv().await });
            }
            answered = answered.saturating_add(1);
            if config.max_queries_per_connection != 0
                && answered >= config.max_queries_per_connection
            {
                // RFC 7766 §6.2.3: the server may close; the answers go first.
                return match finish(stream, &mut replies, &mut responses, config).await {
                    Ok(()) => ConnectionEnd::QueryLimit,
                    Err(end) => end,
                };
            }
            if responses.len() >= WRITE_BATCH {
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
            }
        }
        handler.end_of_batch();
        if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await {
            return end;
        }

        // The clock for a message starts with its first octet: at the read that
        // brought it, which is now if that read also completed a message.
        let now = Instant::now();
        if decoder.pending() == 0 {
            message_deadline = None;
        } else if completed || message_deadline.is_none() {
            message_deadline = now.checked_add(config.message_timeout);
        }
        let (deadline, expired) = match message_deadline {
            Some(d) if !config.message_timeout.is_zero() => (d, ConnectionEnd::MessageTimeout),
            _ => (
                now.checked_add(config.idle_timeout).unwrap_or(now),
                if decoder.pending() == 0 {
                    ConnectionEnd::Idle
                } else {
                    ConnectionEnd::MessageTimeout
                },
            ),
        };
        if let Some(s) = slot {
            s.end_work(completed);
        }
        // Waiting on its own resolutions, a connection is not idle.
        let idle_waits = !(replies.is_empty() || decoder.pending() > 0);
        let evicted = async {
            match slot {
                Some(s) => s.evicted().await,
                None => std::future::pending().await,
            }
        };
        let read = tokio::select! {
            () = evicted => return ConnectionEnd::Evicted,
            () = tokio::time::sleep_until(deadline), if !idle_waits => return expired,
            Some(done) = replies.join_next(), if !replies.is_empty() => {
                if let Ok(Some(msg)) = done {
                    push_framed(&mut responses, &msg);
                }
                if let Err(end) = write_responses(stream, &mut responses, config.idle_timeout).await
                {
                    return end;
                }
                continue;
            }
            r = stream.read(decoder.read_space()) => r,
        };
        match read {
            Ok(0) => {
                // The client sent all it will: what it still waits for goes
                // out before the close.
                return match finish(stream, &mut replies, &mut responses, config).await {
                    Ok(()) => ConnectionEnd::PeerClosed,
                    Err(end) => end,
                };
            }
            Ok(n) => decoder.commit(n),
            Err(e) => return ConnectionEnd::Io(e),
        }
    }
}

/// Resolutions one connection may have waiting at once (a client that
/// pipelines more waits for the first ones).
const MAX_REPLIES_WAITING: usize = 64;

/// Waits for the next of the connection's waiting responses and writes it.
async fn next_reply<S: AsyncWrite + Unpin>(
    stream: &mut S,
    replies: &mut JoinSet<Option<Vec<u8>>>,
    responses: &mut Vec<u8>,
    write_limit: Duration,
) -> Result<(), ConnectionEnd> {
    if let Some(Ok(Some(msg))) = replies.join_next().await {
        push_framed(responses, &msg);
    }
    write_responses(stream, responses, write_limit).await
}

/// Writes what is ready, then every waiting response as it comes (each
/// resolution ends, answered or not, within the resolver's own limits; the
/// idle timeout bounds the whole wait all the same).
async fn finish<S: AsyncWrite + Unpin>(
    stream: &mut S,
    replies: &mut JoinSet<Option<Vec<u8>>>,
    responses: &mut Vec<u8>,
    config: &TcpConfig,
) -> Result<(), ConnectionEnd> {
    write_responses(stream, responses, config.idle_timeout).await?;
    let wait = async {
        while !replies.is_empty() {
            next_reply(stream, replies, responses, config.idle_timeout).await?;
        }
        Ok(())
    };
    tokio::time::timeout(config.idle_timeout, wait)
        .await
        .unwrap_or(Err(ConnectionEnd::Idle))
}

/// Appends one response with its two-octet length (RFC 7766 §8). A response
/// over 65535 octets cannot be framed; handlers keep to that limit, so this
/// only guards against a bug.
fn push_framed(responses: &mut Vec<u8>, msg: &[u8]) {
    if let Ok(n) = u16::try_from(msg.len()) {
        responses.extend_from_slice(&n.to_be_bytes());
        responses.extend_from_slice(msg);
    }
}

/// Runs a deferred job and writes each message it sends, until it drops its
/// responder. Messages are written one by one: a transfer of a large zone is
/// never held whole, and a client that stops reading stops the job through
/// the bounded queue.
async fn relay_deferred<S: AsyncWrite + Unpin>(
    stream: &mut S,
    job: Deferred,
    write_limit: Duration,
) -> Result<(), ConnectionEnd> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(TCP_QUEUE);
    job(Responder::tcp(tx));
    let mut framed: Vec<u8> = Vec::new();
    while let Some(msg) = rx.recv().await {
        push_framed(&mut framed, &msg);
        write_responses(stream, &mut framed, write_limit).await?;
    }
    Ok(())
}

/// Writes and clears the gathered responses. write_all copes with partial
/// writes; the timeout stops a client that never reads from holding the
/// connection forever.
async fn write_responses<S: AsyncWrite + Unpin>(
    stream: &mut S,
    responses: &mut Vec<u8>,
    limit: Duration,
) -> Result<(), ConnectionEnd> {
    if responses.is_empty() {
        return Ok(());
    }
    // Flushed too: TLS holds records until then.
    let written = tokio::time::timeout(limit, async {
        stream.write_all(responses).await?;
        stream.flush().await
    })
    .await;
    responses.clear();
    match written {
        Err(_) => Err(ConnectionEnd::WriteTimeout),
        Ok(Err(e)) => Err(ConnectionEnd::Io(e)),
        Ok(Ok(())) => Ok(()),
    }
}
