//! DNS over HTTPS (RFC 8484) on HTTP/2 and HTTP/1.1 over TLS. hyper speaks
//! HTTP; [`crate::doh`] reads what a request asks; the connection's handler
//! answers it as it answers any other transport. A connection shares the
//! stream listeners' caps and counters (see [`crate::tcp`]) and ends the way
//! HTTP ends one gracefully: GOAWAY on HTTP/2, `Connection: close` on
//! HTTP/1.1, once idle for the idle timeout or at the query cap. The
//! request-to-answer part (`Exchange::reply`) does not depend on the HTTP
//! version: HTTP/3 (`crate::quic`) answers through it too.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALT_SVC, CACHE_CONTROL, CONNECTION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::doh::{self, Method, Query, Rejection};
use crate::h2_streams::{StreamInbox, StreamRunner};
use crate::tcp::{ConnectionEnd, TcpConfig, TcpStats};
use crate::{Deferred, QueryHandler, Responder};

/// What a DoH listener serves beyond what every stream listener has.
#[derive(Debug, Clone)]
pub struct DohConfig {
    /// The request path queries are sent to (`/dns-query` by default).
    pub path: String,
    /// HTTP/2 streams one connection may have open at once: a client
    /// pipelines this many queries before it waits.
    pub max_concurrent_streams: u32,
    /// The `Alt-Svc` value that tells HTTP/2 and HTTP/1.1 clients where the
    /// same service runs on HTTP/3 (RFC 7838), when it does.
    pub alt_svc: Option<String>,
}

impl Default for DohConfig {
    fn default() -> Self {
        DohConfig {
            path: doh::DEFAULT_PATH.to_string(),
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS,
            alt_svc: None,
        }
    }
}

/// Enough streams for a busy client's pipeline; few enough that one
/// connection's work stays small (hyper also limits streams reset early,
/// the HTTP/2 "rapid reset" of CVE-2023-44487).
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 100;
/// ALPN protocols offered: HTTP/2 first (RFC 8484 §5.2 recommends it).
pub const ALPN_DOH: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// What the requests of one connection share: when it was last busy, how
/// many are being answered, and how many it has answered.
pub(crate) struct Activity {
    started: Instant,
    /// Milliseconds from `started` to the end of the last request.
    last_ms: AtomicU64,
    pub(crate) in_flight: AtomicU32,
    answered: AtomicU32,
    /// Woken when the query cap is reached.
    pub(crate) capped: Notify,
}

impl Activity {
    pub(crate) fn touch(&self) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// When the connection is idle long enough to close, if nothing is
    /// being answered.
    pub(crate) fn idle_deadline(&self, idle: Duration) -> Instant {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.started
            .checked_add(last)
            .and_then(|t| t.checked_add(idle))
            .unwrap_or(self.started)
    }
}

/// Serves one TLS connection with HTTP until the client closes it, it idles
/// out, or it reaches the query cap.
pub(crate) async fn serve_http<H, S>(
    stream: S,
    peer: SocketAddr,
    local: SocketAddr,
    handler: H,
    config: &TcpConfig,
    doh_config: &DohConfig,
    stats: &Arc<TcpStats>,
) -> ConnectionEnd
where
    H: QueryHandler + Send + 'static,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let shared = Exchange::new(handler, peer, local, config, doh_config, stats);
    let activity = Arc::clone(&shared.activity);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(shared.answer(req).await) }
    });
    // The HTTP/2 streams run in this task (see `crate::h2_streams`).
    let inbox = StreamInbox::default();
    let mut streams = StreamRunner::new(inbox.clone());
    let mut builder = auto::Builder::new(inbox);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(message_wait(config))
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(doh_config.max_concurrent_streams);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let mut closing: Option<ConnectionEnd> = None;
    // A graceful close waits for the answers in flight, but no longer than
    // this: a client that stops reading them does not hold the connection.
    let mut closing_deadline = Instant::now();
    loop {
        let deadline = activity.idle_deadline(config.idle_timeout);
        let busy = activity.in_flight.load(Ordering::Relaxed) > 0;
        if closing.is_none() {
            closing_deadline = Instant::now()
                .checked_add(config.idle_timeout)
                .unwrap_or_else(Instant::now);
        }
        tokio::select! {
            done = std::future::poll_fn(|cx| streams.poll_drive(conn.as_mut(), cx)) => {
                return match (done, closing) {
                    (_, Some(end)) => end,
                    (Ok(()), None) => ConnectionEnd::PeerClosed,
                    (Err(e), None) => ConnectionEnd::Io(std::io::Error::other(e)),
                };
            }
            () = tokio::time::sleep_until(closing_deadline), if closing.is_some() => {
                return closing.unwrap_or(ConnectionEnd::WriteTimeout);
            }
            () = tokio::time::sleep_until(deadline), if closing.is_none() && !busy => {
                if activity.idle_deadline(config.idle_timeout) <= Instant::now()
                    && activity.in_flight.load(Ordering::Relaxed) == 0
                {
                    closing = Some(ConnectionEnd::Idle);
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = activity.capped.notified(), if closing.is_none() => {
                closing = Some(ConnectionEnd::QueryLimit);
                conn.as_mut().graceful_shutdown();
            }
            // Waiting on a request being answered: look again when it ends.
            () = tokio::time::sleep(config.idle_timeout), if busy && closing.is_none() => {}
        }
    }
}

/// How long a request's head, or its body, may take to arrive: the stream
/// transports' message timeout, or (when that is off) the idle timeout.
pub(crate) fn message_wait(config: &TcpConfig) -> Duration {
    if config.message_timeout.is_zero() {
        config.idle_timeout
    } else {
        config.message_timeout
    }
}

/// What every request of one connection needs.
pub(crate) struct Exchange<H> {
    handler: Mutex<H>,
    peer: SocketAddr,
    local: SocketAddr,
    path: String,
    /// Sent with each HTTP/2 and HTTP/1.1 response.
    alt_svc: Option<HeaderValue>,
    max_query: usize,
    /// How long a POST body may take to arrive once its request has (the
    /// stream transports' message timeout): a body sent an octet at a time
    /// does not hold a request open.
    body_wait: Duration,
    /// How long a resolution's answer is waited for.
    reply_wait: Duration,
    cap: u32,
    stats: Arc<TcpStats>,
    pub(crate) activity: Arc<Activity>,
}

/// What a DoH request is answered with.
#[derive(Debug)]
pub(crate) enum Reply {
    /// 200 with this DNS message.
    Message(Vec<u8>),
    /// This status and no body.
    Status(u16),
}

/// Why a POST request's body is not a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    TooLarge,
    Unreadable,
}

/// RFC 8484's methods, as [`doh`] names them.
pub(crate) fn method_of(method: &hyper::Method) -> Method {
    match *method {
        hyper::Method::GET => Method::Get,
        hyper::Method::POST => Method::Post,
        _ => Method::Other,
    }
}

/// The request target: the path and query of the URI.
pub(crate) fn target_of(uri: &hyper::Uri) -> &str {
    uri.path_and_query().map_or(uri.path(), |p| p.as_str())
}

impl<H> Exchange<H> {
    /// What the requests of one connection from `peer` to `local` share.
    pub(crate) fn new(
        handler: H,
        peer: SocketAddr,
        local: SocketAddr,
        config: &TcpConfig,
        doh_config: &DohConfig,
        stats: &Arc<TcpStats>,
    ) -> Arc<Exchange<H>> {
        Arc::new(Exchange {
            handler: Mutex::new(handler),
            peer,
            local,
            path: doh_config.path.clone(),
            alt_svc: doh_config
                .alt_svc
                .as_deref()
                .and_then(|a| HeaderValue::from_str(a).ok()),
            max_query: config.max_query_size,
            body_wait: message_wait(config),
            reply_wait: config.idle_timeout,
            cap: config.max_queries_per_connection,
            stats: Arc::clone(stats),
            activity: Arc::new(Activity {
                started: Instant::now(),
                last_ms: AtomicU64::new(0),
                in_flight: AtomicU32::new(0),
                answered: AtomicU32::new(0),
                capped: Notify::new(),
            }),
        })
    }
}

/// What the handler made of a query.
enum Handled {
    Now(Vec<u8>),
    Later(Deferred),
    /// A transfer (many messages): not served over DoH.
    Stream(Deferred),
    Dropped,
}

impl<H: QueryHandler + Send + 'static> Exchange<H> {
    async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        self.activity.in_flight.fetch_add(1, Ordering::Relaxed);
        let http1 = req.version() < hyper::Version::HTTP_2;
        let mut response = self.answer_request(req).await;
        // HTTP/1.1 ends with this response (RFC 9112 §9.6), whenever the
        // connection's task gets to its graceful shutdown.
        if http1 && self.capped() {
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        if let Some(alt) = &self.alt_svc {
            response.headers_mut().insert(ALT_SVC, alt.clone());
        }
        self.activity.touch();
        self.activity.in_flight.fetch_sub(1, Ordering::Relaxed);
        response
    }

    /// How long an answer may take to be resolved, or written.
    pub(crate) fn reply_wait(&self) -> Duration {
        self.reply_wait
    }

    /// Whether the connection has answered its cap of queries.
    pub(crate) fn capped(&self) -> bool {
        self.cap != 0 && self.activity.answered.load(Ordering::Relaxed) >= self.cap
    }

    async fn answer_request(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        // The head is read in place; only the body moves to be collected.
        let (head, body) = req.into_parts();
        let method = method_of(&head.method);
        let body = move |limit: usize| async move {
            match Limited::new(body, limit).collect().await {
                // No copy when the body came in one piece.
                Ok(body) => Ok(Vec::from(body.to_bytes())),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
                Err(_) => Err(BodyError::Unreadable),
            }
        };
        let reply = self
            .reply(
                method,
                target_of(&head.uri),
                head.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes),
                body,
            )
            .await;
        into_http(reply).map(Full::new)
    }

    /// Answers one DoH request, whichever HTTP carried it: the query from
    /// its target or from its body (read by `body`, given the most it may
    /// hold), the DNS message or the status that refuses it.
    pub(crate) async fn reply<F, Fut>(
        &self,
        method: Method,
        target: &str,
        content_type: Option<&[u8]>,
        body: F,
    ) -> Reply
    where
        F: FnOnce(usize) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<u8>, BodyError>>,
    {
        let query = match doh::read_head(method, target, content_type, &self.path, self.max_query) {
            Ok(Query::Inline(q)) => q,
            Ok(Query::Body) => {
                match tokio::time::timeout(self.body_wait, body(self.max_query)).await {
                    Ok(Ok(body)) => body,
                    Ok(Err(BodyError::TooLarge)) => {
                        return Reply::Status(Rejection::TooLarge.status());
                    }
                    Ok(Err(BodyError::Unreadable)) => return Reply::Status(400),
                    // RFC 9110 §15.5.9: 408 Request Timeout.
                    Err(_) => return Reply::Status(408),
                }
            }
            Err(r) => {
                // The body is read (within the query limit) all the same, so
                // the refusal ends the exchange cleanly rather than with a
                // reset of a request still being sent.
                if method == Method::Post {
                    let _ = tokio::time::timeout(self.body_wait, body(self.max_query)).await;
                }
                return Reply::Status(r.status());
            }
        };
        self.stats.queries.fetch_add(1, Ordering::Relaxed);
        let answered = self
            .activity
            .answered
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if self.cap != 0 && answered == self.cap {
            self.activity.capped.notify_one();
        }
        let message = match self.handle(&query) {
            Handled::Now(m) => Some(m),
            Handled::Later(job) => self.deferred_reply(job).await,
            Handled::Stream(job) => {
                // A transfer's messages are not one HTTP response: end the
                // job (its responder gone) and refuse.
                drop(job);
                return Reply::Status(400);
            }
            Handled::Dropped => None,
        };
        match message {
            Some(m) => Reply::Message(m),
            // Dropped (an ACL, an unreadable message): the client hears no
            // DNS answer, and HTTP says the request was at fault.
            None => Reply::Status(400),
        }
    }

    fn handle(&self, query: &[u8]) -> Handled {
        let mut handler = self.handler.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        let answered = handler.handle(query, self.peer, self.local, &mut out);
        let handled = if answered {
            Handled::Now(out)
        } else if let Some(job) = handler.take_deferred() {
            Handled::Stream(job)
        } else if let Some(job) = handler.take_deferred_reply() {
            Handled::Later(job)
        } else {
            Handled::Dropped
        };
        handler.end_of_batch();
        handled
    }

    /// Runs a resolution and waits (within the connection's idle timeout)
    /// for its one message.
    async fn deferred_reply(&self, job: Deferred) -> Option<Vec<u8>> {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(1);
        job(Responder::tcp(tx));
        tokio::time::timeout(self.reply_wait, rx.recv())
            .await
            .ok()
            .flatten()
    }
}

/// The HTTP response to a reply: 200 with the DNS message, cacheable for
/// its smallest TTL (RFC 8484 §5.1), or a status with no body.
pub(crate) fn into_http(reply: Reply) -> Response<Bytes> {
    match reply {
        Reply::Message(message) => {
            let max_age = bulwark_proto::message::freshness::freshness_lifetime(&message);
            let mut r = Response::new(Bytes::from(message));
            let headers = r.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(doh::MEDIA_TYPE));
            if let Ok(v) = HeaderValue::from_str(&format!("max-age={max_age}")) {
                headers.insert(CACHE_CONTROL, v);
            }
            r
        }
        Reply::Status(code) => {
            let mut r = Response::new(Bytes::new());
            *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
            r
        }
    }
}
