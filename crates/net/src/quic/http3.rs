//! One DNS over HTTPS connection on HTTP/3 (RFC 9114, h3 over quinn): each
//! request answered as over HTTP/2 (see [`crate::https`], which reads and
//! answers it); the connection ends gracefully with a GOAWAY once idle or
//! at its query cap.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use futures_util::future::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h3::server::RequestStream;
use http::header::CONTENT_TYPE;
use tokio::time::Instant;

use crate::client_conns::ClientSlot;
use crate::https::{into_http, method_of, target_of, BodyError, DohConfig, Exchange};
use crate::tcp::{ConnectionEnd, TcpConfig, TcpStats};
use crate::QueryHandler;

type Stream = RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Largest request header section read (RFC 9114 §4.2.2's
/// SETTINGS_MAX_FIELD_SECTION_SIZE): a DoH GET's query fits many times over.
const MAX_FIELD_SECTION: u64 = 16 * 1024;

/// Serves the connection's requests until it ends.
pub(super) async fn serve<H: QueryHandler + Send + 'static>(
    connection: &quinn::Connection,
    handler: H,
    local: SocketAddr,
    config: &TcpConfig,
    doh: &DohConfig,
    stats: &Arc<TcpStats>,
    slot: Option<&ClientSlot>,
) -> ConnectionEnd {
    let peer = connection.remote_address();
    let exchange = Exchange::new(handler, peer, local, config, doh, stats);
    let built = h3::server::builder()
        .max_field_section_size(MAX_FIELD_SECTION)
        .build::<_, Bytes>(h3_quinn::Connection::new(connection.clone()))
        .await;
    let mut h3 = match built {
        Ok(c) => c,
        Err(_) => return ConnectionEnd::Protocol,
    };
    // The requests run in this task, as DoQ's streams do (see
    // `doq_conn`): the answers one wake-up finds ready are written before
    // quinn's driver sends them. A request that panics is caught here, as
    // a task's panic was by a JoinSet.
    let mut requests = FuturesUnordered::new();
    let mut last_busy = Instant::now();
    let mut closing: Option<ConnectionEnd> = None;
    loop {
        let idle_at = last_busy
            .checked_add(config.idle_timeout)
            .unwrap_or(last_busy);
        tokio::select! {
            () = super::evicted(slot), if requests.is_empty() && closing.is_none() => {
                return ConnectionEnd::Evicted;
            }
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    if requests.is_empty() {
                        if let Some(s) = slot {
                            if !s.begin_work() {
                                return ConnectionEnd::Evicted;
                            }
                        }
                    }
                    let exchange = Arc::clone(&exchange);
                    let request = async move {
                        if let Ok((request, stream)) = resolver.resolve_request().await {
                            answer(&exchange, request, stream).await;
                        }
                    };
                    requests.push(std::panic::AssertUnwindSafe(request).catch_unwind());
                }
                // The client's GOAWAY, or ours, and every request done.
                Ok(None) => return closing.unwrap_or(ConnectionEnd::PeerClosed),
                Err(e) if e.is_h3_no_error() => {
                    return closing.unwrap_or(ConnectionEnd::PeerClosed);
                }
                Err(_) => return closing.unwrap_or(ConnectionEnd::Protocol),
            },
            Some(_) = requests.next() => {
                last_busy = Instant::now();
                if requests.is_empty() {
                    if let Some(s) = slot {
                        s.end_work(true);
                    }
                }
                if closing.is_none() && exchange.capped() {
                    closing = Some(ConnectionEnd::QueryLimit);
                    let _ = h3.shutdown(0).await;
                }
            }
            () = tokio::time::sleep_until(idle_at), if requests.is_empty() => {
                if closing.is_some() {
                    // The client has not closed after our GOAWAY.
                    return closing.unwrap_or(ConnectionEnd::Idle);
                }
                closing = Some(ConnectionEnd::Idle);
                let _ = h3.shutdown(0).await;
                last_busy = Instant::now();
            }
        }
        if exchange.activity.in_flight.load(Ordering::Relaxed) > 0 {
            last_busy = Instant::now();
        }
    }
}

/// Answers one request on its stream.
async fn answer<H: QueryHandler + Send + 'static>(
    exchange: &Exchange<H>,
    request: http::Request<()>,
    stream: Stream,
) {
    exchange.activity.in_flight.fetch_add(1, Ordering::Relaxed);
    let method = method_of(request.method());
    let (mut stream, mut recv) = stream.split();
    let body = move |limit: usize| async move { read_body(&mut recv, limit).await };
    let reply = exchange
        .reply(
            method,
            target_of(request.uri()),
            request
                .headers()
                .get(CONTENT_TYPE)
                .map(http::HeaderValue::as_bytes),
            body,
        )
        .await;
    let (head, body) = into_http(reply).into_parts();
    let sent = async {
        stream
            .send_response(http::Response::from_parts(head, ()))
            .await?;
        if !body.is_empty() {
            stream.send_data(body).await?;
        }
        stream.finish().await
    };
    let _ = tokio::time::timeout(exchange.reply_wait(), sent).await;
    exchange.activity.touch();
    exchange.activity.in_flight.fetch_sub(1, Ordering::Relaxed);
}

/// A POST body, up to `limit` octets.
async fn read_body<S: h3::quic::RecvStream>(
    stream: &mut RequestStream<S, Bytes>,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                let len = chunk.remaining();
                if body.len().saturating_add(len) > limit {
                    return Err(BodyError::TooLarge);
                }
                while chunk.has_remaining() {
                    let part = chunk.chunk();
                    body.extend_from_slice(part);
                    let n = part.len();
                    chunk.advance(n);
                }
            }
            Ok(None) => return Ok(body),
            Err(_) => return Err(BodyError::Unreadable),
        }
    }
}
