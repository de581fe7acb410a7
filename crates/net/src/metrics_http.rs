//! A metrics endpoint: `GET /metrics` over HTTP/1.1, the body rendered by a
//! function the edge supplies (bulwark's Prometheus text).
//!
//! A deliberately small HTTP/1.1 responder (RFC 9112): one request per
//! connection, its head read with a size limit and a deadline, answered, then the
//! connection is closed. At most [`MAX_CONNECTIONS`] are served at once, so a
//! scraper cannot be turned into a way to exhaust the server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::Shutdown;

/// Connections served at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 16;
/// The request line and headers of a scrape fit easily in this.
const MAX_REQUEST_HEAD: usize = 8192;
/// Header lines accepted in one request.
const MAX_HEADERS: usize = 64;
/// A client that has not sent its whole request head in this long is dropped.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// A client that does not take the response in this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The one path served.
const METRICS_PATH: &str = "/metrics";

/// A bound metrics endpoint, ready for [`serve_metrics`].
#[derive(Debug)]
pub struct MetricsListener {
    listener: std::net::TcpListener,
}

impl MetricsListener {
    /// The address bound, with a port 0 resolved.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Binds the endpoint (before privileges are dropped).
pub fn bind_metrics(addr: SocketAddr) -> std::io::Result<MetricsListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    Ok(MetricsListener { listener })
}

/// What the endpoint serves at `/metrics`: the body's content type, and the
/// function that renders the body (called once per scrape, and only for a
/// scrape).
#[derive(Debug, Clone, Copy)]
pub struct MetricsBody<F> {
    pub content_type: &'static str,
    pub render: F,
}

/// Serves scrapes until `shutdown`. Must run inside a tokio runtime.
pub async fn serve_metrics<F>(listener: MetricsListener, body: MetricsBody<F>, shutdown: Shutdown)
where
    F: Fn() -> String + Send + Sync + 'static,
{
    let listener = match tokio::net::TcpListener::from_std(listener.listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "metrics endpoint failed to start");
            return;
        }
    };
    if let Ok(a) = listener.local_addr() {
        tracing::info!(address = %a, "metrics endpoint ready");
    }
    let content_type = body.content_type;
    let render = Arc::new(body.render);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        // Take a slot before accepting: while all are busy, new connections
        // wait in the kernel's backlog instead of costing anything here.
        let slot = tokio::select! {
            _ = shutdown.wait() => return,
            s = Arc::clone(&slots).acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        let stream = tokio::select! {
            _ = shutdown.wait() => return,
            s = listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics endpoint accept failed");
                    continue;
                }
            },
        };
        let render = Arc::clone(&render);
        tokio::spawn(async move {
            let _slot = slot;
            scrape(stream, content_type, &*render).await;
        });
    }
}

/// One connection: read the head, answer, close.
async fn scrape(mut stream: TcpStream, content_type: &str, render: &(dyn Fn() -> String + Sync)) {
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        // Timed out, closed early, or failed: nothing worth answering.
        _ => return,
    };
    let response = respond(head.as_deref(), content_type, render);
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    })
    .await;
}

/// Reads up to the blank line ending the head. `Ok(None)` when the head is
/// longer than [`MAX_REQUEST_HEAD`].
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if let Some(end) = head_end(&head) {
            head.truncate(end);
            return Ok(Some(head));
        }
        if head.len() >= MAX_REQUEST_HEAD {
            return Ok(None);
        }
    }
}

/// Where the head ends: after CRLF CRLF, or LF LF (RFC 9112 §2.2 lets a
/// recipient accept a bare LF as a line terminator).
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .and_then(|p| p.checked_add(4));
    let lf = buf
        .windows(2)
        .position(|w| w == b"\n\n")
        .and_then(|p| p.checked_add(2));
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The whole response to a request head (`None`: the head was too long).
/// `metrics` renders the body, and is called only for a scrape.
fn respond(head: Option<&[u8]>, content_type: &str, metrics: impl FnOnce() -> String) -> Vec<u8> {
    let Some(head) = head else {
        return response(431, "Request Header Fields Too Large", &[], b"", true);
    };
    let Some((method, path)) = request_line(head) else {
        return response(400, "Bad Request", &[], b"bad request\n", true);
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return response(
            405,
            "Method Not Allowed",
            &[("Allow", "GET, HEAD")],
            b"only GET and HEAD\n",
            true,
        );
    }
    if path != METRICS_PATH {
        return response(
            404,
            "Not Found",
            &[],
            b"not found: metrics are at /metrics\n",
            !head_only,
        );
    }
    let body = metrics();
    response(
        200,
        "OK",
        &[("Content-Type", content_type)],
        body.as_bytes(),
        !head_only,
    )
}

/// The method and path (without any query string) of a well-formed HTTP/1.x
/// request head (RFC 9112 §3: `method SP request-target SP HTTP-version`).
fn request_line(head: &[u8]) -> Option<(&str, &str)> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
        || !target.starts_with('/')
        || !matches!(version, "HTTP/1.0" | "HTTP/1.1")
    {
        return None;
    }
    let mut headers = 0usize;
    for line in lines.take_while(|l| !l.is_empty()) {
        headers = headers.saturating_add(1);
        // RFC 9112 §5: `field-name ":" OWS field-value`, no space before the colon.
        let name = line.split(':').next().filter(|_| line.contains(':'))?;
        if headers > MAX_HEADERS || name.is_empty() || name.contains([' ', '\t']) {
            return None;
        }
    }
    let path = target.split('?').next().unwrap_or(target);
    Some((method, path))
}

/// A complete response that closes the connection. `with_body` is false for
/// HEAD, which gets the headers a GET would (RFC 9110 §9.3.2).
fn response(
    code: u16,
    reason: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    with_body: bool,
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {code} {reason}\r\n");
    let has_type = headers.iter().any(|(k, _)| *k == "Content-Type");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_type {
        out.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    if with_body {
        out.extend_from_slice(body);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    /// Prometheus's text exposition format, as bulwark serves it.
    const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

    fn metrics() -> String {
        "# TYPE bulwark_up gauge\nbulwark_up 1\n".to_string()
    }

    fn no_metrics() -> String {
        panic!("rendered metrics for a request that is not a scrape")
    }

    #[test]
    fn get_metrics_is_200_with_the_exposition_content_type() {
        let r = respond(
            Some(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            EXPOSITION,
            metrics,
        );
        assert_eq!(
            r,
            b"HTTP/1.1 200 OK\r\n\
              Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
              Content-Length: 37\r\n\
              Connection: close\r\n\r\n\
              # TYPE bulwark_up gauge\nbulwark_up 1\n"
        );
    }

    #[test]
    fn head_has_the_headers_of_get_and_no_body() {
        let r = respond(Some(b"HEAD /metrics HTTP/1.0\r\n\r\n"), EXPOSITION, metrics);
        assert_eq!(
            r,
            b"HTTP/1.1 200 OK\r\n\
              Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
              Content-Length: 37\r\n\
              Connection: close\r\n\r\n"
        );
    }

    #[test]
    fn query_string_and_bare_lf_are_accepted() {
        let r = respond(
            Some(b"GET /metrics?x=1 HTTP/1.1\nAccept: */*\n\n"),
            EXPOSITION,
            metrics,
        );
        assert!(r.starts_with(b"HTTP/1.1 200 OK\r\n"));
    }

    #[test]
    fn other_paths_are_404() {
        let r = respond(Some(b"GET / HTTP/1.1\r\n\r\n"), EXPOSITION, no_metrics);
        assert!(r.starts_with(b"HTTP/1.1 404 Not Found\r\n"), "{r:?}");
        let r = respond(
            Some(b"GET /metricsx HTTP/1.1\r\n\r\n"),
            EXPOSITION,
            no_metrics,
        );
        assert!(r.starts_with(b"HTTP/1.1 404 Not Found\r\n"));
    }

    #[test]
    fn other_methods_are_405_with_allow() {
        let r = respond(
            Some(b"POST /metrics HTTP/1.1\r\n\r\n"),
            EXPOSITION,
            no_metrics,
        );
        let text = String::from_utf8(r).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nAllow: GET, HEAD\r\n"), "{text}");
    }

    #[test]
    fn malformed_heads_are_400() {
        for head in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET /metrics HTTP/2.0\r\n\r\n",
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"get /metrics HTTP/1.1\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",
            b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
        ] {
            let r = respond(Some(head), EXPOSITION, no_metrics);
            assert!(r.starts_with(b"HTTP/1.1 400 Bad Request\r\n"), "{head:?}");
        }
        let many: String = std::iter::once("GET /metrics HTTP/1.1\r\n".to_string())
            .chain((0..=MAX_HEADERS).map(|i| format!("X-{i}: y\r\n")))
            .chain(std::iter::once("\r\n".to_string()))
            .collect();
        let r = respond(Some(many.as_bytes()), EXPOSITION, no_metrics);
        assert!(r.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
    }

    #[test]
    fn oversized_head_is_431() {
        let r = respond(None, EXPOSITION, no_metrics);
        assert!(r.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    }

    #[test]
    fn head_ends_at_the_first_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }

    #[test]
    fn a_scrape_over_tcp_gets_the_rendered_body() {
        use std::io::{Read, Write};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = bind_metrics("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = Shutdown::new().unwrap();
        let server = rt.spawn(serve_metrics(
            listener,
            MetricsBody {
                content_type: EXPOSITION,
                render: metrics,
            },
            shutdown.clone(),
        ));
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with("bulwark_up 1\n"), "{reply}");
        shutdown.trigger();
        rt.block_on(server).unwrap();
    }
}
