//! A metrics endpoint: `GET /metrics` over HTTP/1.1, the body rendered by a
//! function the edge supplies (bulwark's Prometheus text). hyper speaks HTTP;
//! this decides what each request gets. One request per connection, its head
//! read within a deadline, the whole exchange within another; at most
//! [`MAX_CONNECTIONS`] are served at once, so a scraper cannot be turned into
//! a way to exhaust the server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use crate::Shutdown;

/// Connections served at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 16;
/// A client that has not sent its whole request head in this long is dropped.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection, request and response, ends within this whatever the client
/// does (it stops reading the response, say).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(15);
/// The request heads hyper buffers: a scrape's fits many times over.
const MAX_REQUEST_BUFFER: usize = 8192;
/// The one path served.
const METRICS_PATH: &str = "/metrics";
const TEXT: &str = "text/plain; charset=utf-8";

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
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let render = Arc::clone(&render);
                async move { Ok::<_, Infallible>(respond(&req, content_type, &*render)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(REQUEST_TIMEOUT)
                .max_buf_size(MAX_REQUEST_BUFFER)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
        });
    }
}

/// The response to one request. `metrics` renders the body, and is called
/// only for a scrape (GET or HEAD of the path; hyper leaves out a HEAD's
/// body, RFC 9110 §9.3.2).
fn respond<B>(
    req: &Request<B>,
    content_type: &'static str,
    metrics: &dyn Fn() -> String,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if req.uri().path() != METRICS_PATH {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
        );
    }
    let mut r = Response::new(Full::new(Bytes::from(metrics())));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(TEXT));
    r
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
    use std::io::{Read, Write};

    use super::*;

    /// Prometheus's text exposition format, as bulwark serves it.
    const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

    fn metrics() -> String {
        "# TYPE bulwark_up gauge\nbulwark_up 1\n".to_string()
    }

    fn no_metrics() -> String {
        panic!("rendered metrics for a request that is not a scrape")
    }

    fn request(method: &str, uri: &str) -> Request<()> {
        Request::builder().method(method).uri(uri).body(()).unwrap()
    }

    #[test]
    fn get_metrics_is_200_with_the_exposition_content_type() {
        let r = respond(&request("GET", "/metrics?x=1"), EXPOSITION, &metrics);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], EXPOSITION);
    }

    #[test]
    fn other_paths_are_404_and_other_methods_405_with_allow_without_rendering() {
        for path in ["/", "/metricsx", "/metrics/"] {
            let r = respond(&request("GET", path), EXPOSITION, &no_metrics);
            assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        }
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            let r = respond(&request(method, "/metrics"), EXPOSITION, &no_metrics);
            assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(r.headers()[ALLOW], "GET, HEAD");
        }
    }

    /// Serves on a loopback port; what one raw request gets back.
    fn exchange(raw: &[u8]) -> String {
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
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(raw).unwrap();
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        shutdown.trigger();
        rt.block_on(server).unwrap();
        String::from_utf8_lossy(&reply).to_string()
    }

    #[test]
    fn a_scrape_over_tcp_gets_the_rendered_body_and_the_connection_closes() {
        let reply = exchange(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(
            reply
                .to_ascii_lowercase()
                .contains("content-length: 37\r\n"),
            "{reply}"
        );
        assert!(reply.ends_with("bulwark_up 1\n"), "{reply}");
    }

    #[test]
    fn head_gets_the_headers_of_get_and_no_body() {
        let reply = exchange(b"HEAD /metrics HTTP/1.0\r\n\r\n");
        assert!(
            reply.starts_with("HTTP/1.0 200 OK\r\n") || reply.starts_with("HTTP/1.1 200 OK\r\n"),
            "{reply}"
        );
        assert!(reply.ends_with("\r\n\r\n"), "no body: {reply}");
    }

    #[test]
    fn malformed_and_oversized_heads_are_refused() {
        let reply = exchange(b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
        let many: String = std::iter::once("GET /metrics HTTP/1.1\r\n".to_string())
            .chain((0..400).map(|i| format!("X-Header-Number-{i}: some value\r\n")))
            .chain(std::iter::once("\r\n".to_string()))
            .collect();
        let reply = exchange(many.as_bytes());
        assert!(reply.starts_with("HTTP/1.1 431"), "{reply}");
    }
}
