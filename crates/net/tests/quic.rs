#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
//! DNS over QUIC (RFC 9250) and DoH on HTTP/3 on real loopback connections,
//! with a quinn client written by the test: each query answered on its own
//! stream and the stream finished, the framing rules enforced by closing the
//! connection with a protocol error, the query cap, the idle timeout, a
//! stalled stream given up, a client that never reads, the per-client cap
//! evicting a client's idle connection, 0-RTT, and an HTTP/3 GET and POST.
//! Every wait is bounded; every server is stopped when its test ends.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::doq::ALPN_DOQ;
use bulwark_net::quic::ALPN_H3;
use bulwark_net::{
    bind_quic, serve_quic, DohConfig, QuicServer, QuicService, Shutdown, TcpConfig, TcpStats,
};
use bulwark_testkit::wire;
use bytes::{Buf, Bytes};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{ConnectionError, ReadError, ReadToEndError, VarInt};
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;
use tokio::time::{timeout, Instant};

const NAME: &str = "doq.bulwark.test";
/// How long any one step of a test may take before it fails.
const STEP: Duration = Duration::from_secs(10);
/// The largest stream a DoQ answer takes (a length and a message).
const MAX_ANSWER: usize = 2 + 65_535;

const NO_ERROR: u32 = 0x0;
const PROTOCOL_ERROR: u32 = 0x2;
const REQUEST_CANCELLED: u32 = 0x3;
const EXCESSIVE_LOAD: u32 = 0x4;
const UNSPECIFIED_ERROR: u32 = 0x5;

/// Echoes the query with QR set; a query for a name starting with `drop`
/// gets no answer.
fn echo(query: &[u8], peer: SocketAddr, local: SocketAddr, out: &mut Vec<u8>) -> bool {
    if query.get(13..17) == Some(b"drop") {
        return false;
    }
    common::echo(query, peer, local, out)
}

struct Server {
    addr: SocketAddr,
    stats: Arc<TcpStats>,
    der: CertificateDer<'static>,
    shutdown: Shutdown,
    _rt: tokio::runtime::Runtime,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

fn server(config: TcpConfig, service: QuicService) -> Server {
    let (certificate, der) = common::certificate(NAME);
    let quic = QuicServer::new(certificate, service, &config, Duration::from_secs(5)).unwrap();
    let bound = bind_quic("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = bound.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    rt.spawn(async move { serve_quic(vec![(bound, quic)], config, || echo, st, s).await });
    Server {
        addr,
        stats,
        der,
        shutdown,
        _rt: rt,
    }
}

fn doq_server(config: TcpConfig) -> Server {
    server(config, QuicService::Doq)
}

/// The client's own runtime: the test's thread drives the client while the
/// server's runtime serves.
fn client_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn rustls_client(s: &Server, alpn: &[u8], early_data: bool) -> rustls::ClientConfig {
    let mut roots = RootCertStore::empty();
    roots.add(s.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    config.enable_early_data = early_data;
    config
}

fn quinn_client(
    tls: rustls::ClientConfig,
    transport: quinn::TransportConfig,
) -> quinn::ClientConfig {
    let crypto = QuicClientConfig::try_from(tls).unwrap();
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    config
}

/// A client endpoint on loopback whose connections go to `s` speaking DoQ.
fn doq_endpoint(s: &Server) -> quinn::Endpoint {
    doq_endpoint_with(s, quinn::TransportConfig::default(), false)
}

fn doq_endpoint_with(
    s: &Server,
    transport: quinn::TransportConfig,
    early_data: bool,
) -> quinn::Endpoint {
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn_client(
        rustls_client(s, ALPN_DOQ, early_data),
        transport,
    ));
    endpoint
}

async fn connect(endpoint: &quinn::Endpoint, s: &Server) -> quinn::Connection {
    let connecting = endpoint.connect(s.addr, NAME).unwrap();
    timeout(STEP, connecting).await.unwrap().unwrap()
}

/// A query as DoQ sends it: message ID 0 (RFC 9250 §4.2.1).
fn query(qname: &str) -> Vec<u8> {
    wire::query(0, wire::RD, qname, 1)
}

/// What the echo handler answers to `query`, framed as on the stream.
fn echoed(query: &[u8]) -> Vec<u8> {
    let mut answer = query.to_vec();
    answer[2] |= 0x80;
    wire::framed(&answer)
}

/// Sends `octets` on a new stream, finishes it, and reads the stream's
/// whole answer (to the server's FIN).
async fn exchange(conn: &quinn::Connection, octets: &[u8]) -> Result<Vec<u8>, ReadToEndError> {
    let (mut send, mut recv) = timeout(STEP, conn.open_bi()).await.unwrap().unwrap();
    send.write_all(octets).await.unwrap();
    send.finish().unwrap();
    timeout(STEP, recv.read_to_end(MAX_ANSWER)).await.unwrap()
}

/// Asks `qname` on a new stream and checks the answer.
async fn ask(conn: &quinn::Connection, qname: &str) {
    let q = query(qname);
    let answer = exchange(conn, &wire::framed(&q)).await.unwrap();
    assert_eq!(answer, echoed(&q), "the answer to {qname}");
}

/// A stream that broke the framing gets no answer: the server resets it
/// with DOQ_PROTOCOL_ERROR, or the connection's close cuts it off first.
fn no_answer(got: Result<Vec<u8>, ReadToEndError>) {
    match got {
        Err(ReadToEndError::Read(ReadError::ConnectionLost(_))) => {}
        Err(ReadToEndError::Read(ReadError::Reset(c))) => assert_eq!(c, code(2)),
        other => panic!("{other:?}"),
    }
}

/// The application error code and reason the server closed `conn` with.
async fn closed_with(conn: &quinn::Connection) -> (VarInt, Bytes) {
    match timeout(STEP, conn.closed()).await.unwrap() {
        ConnectionError::ApplicationClosed(close) => (close.error_code, close.reason),
        other => panic!("closed by something other than the application: {other:?}"),
    }
}

fn code(c: u32) -> VarInt {
    VarInt::from_u32(c)
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Waits (bounded) until `counter` reaches `want`, and checks it stays
/// exactly there.
async fn counted(counter: &AtomicU64, want: u64) {
    let deadline = Instant::now() + STEP;
    while load(counter) < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(load(counter), want);
}

#[test]
fn each_query_is_answered_on_its_own_stream_which_is_then_finished() {
    let srv = doq_server(TcpConfig::default());
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let conn = connect(&endpoint, &srv).await;
        // One query: the answer comes back on its stream, framed with its
        // length, and the stream ends there (read_to_end needs the FIN).
        ask(&conn, "www.example.").await;
        // Several at once on the same connection: each stream gets its
        // own answer.
        let names: Vec<String> = (0..20).map(|i| format!("q{i}.example.")).collect();
        let asked = names.iter().map(|n| ask(&conn, n));
        timeout(STEP, futures_join_all(asked)).await.unwrap();
        counted(&srv.stats.queries, 21).await;
        assert_eq!(load(&srv.stats.protocol_error), 0);
        conn.close(code(NO_ERROR), b"");
        counted(&srv.stats.peer_closed, 1).await;
    });
}

/// Runs every future to completion, concurrently, on this task.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    std::future::poll_fn(move |cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

#[test]
fn a_nonzero_message_id_or_trailing_data_closes_with_a_protocol_error() {
    let srv = doq_server(TcpConfig::default());
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);

        // RFC 9250 §4.2.1: the message ID must be 0.
        let conn = connect(&endpoint, &srv).await;
        ask(&conn, "before.example.").await;
        let with_id = wire::query(0x1234, wire::RD, "www.example.", 1);
        no_answer(exchange(&conn, &wire::framed(&with_id)).await);
        let (c, reason) = closed_with(&conn).await;
        assert_eq!(c, code(PROTOCOL_ERROR));
        assert_eq!(&reason[..], b"protocol error");
        counted(&srv.stats.protocol_error, 1).await;

        // A stream carrying more than its one message.
        let conn = connect(&endpoint, &srv).await;
        let mut trailing = wire::framed(&query("www.example."));
        trailing.extend_from_slice(&wire::framed(&query("second.example.")));
        no_answer(exchange(&conn, &trailing).await);
        let (c, _) = closed_with(&conn).await;
        assert_eq!(c, code(PROTOCOL_ERROR));
        counted(&srv.stats.protocol_error, 2).await;

        // A stream that ends before the message its length announced.
        let conn = connect(&endpoint, &srv).await;
        let framed = wire::framed(&query("www.example."));
        no_answer(exchange(&conn, &framed[..framed.len() - 3]).await);
        let (c, _) = closed_with(&conn).await;
        assert_eq!(c, code(PROTOCOL_ERROR));
        counted(&srv.stats.protocol_error, 3).await;

        assert_eq!(load(&srv.stats.queries), 1, "only the good query");
    });
}

#[test]
fn the_query_cap_closes_with_no_error_once_the_last_answer_is_out() {
    let srv = doq_server(TcpConfig {
        max_queries_per_connection: 3,
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let conn = connect(&endpoint, &srv).await;
        for i in 0..3 {
            ask(&conn, &format!("q{i}.example.")).await;
        }
        let (c, reason) = closed_with(&conn).await;
        assert_eq!(c, code(NO_ERROR));
        assert_eq!(&reason[..], b"query limit");
        counted(&srv.stats.query_limit, 1).await;
        assert_eq!(load(&srv.stats.queries), 3);
        // A new connection is served as before.
        let conn = connect(&endpoint, &srv).await;
        ask(&conn, "after.example.").await;
    });
}

#[test]
fn an_idle_connection_is_closed_with_no_error() {
    let srv = doq_server(TcpConfig {
        idle_timeout: Duration::from_secs(1),
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        // The client keeps the QUIC connection alive (as a client holding a
        // connection for later queries does): the close is the server's
        // DoQ idle timeout, not the transport's silent one.
        let mut transport = quinn::TransportConfig::default();
        transport.keep_alive_interval(Some(Duration::from_millis(200)));
        let endpoint = doq_endpoint_with(&srv, transport, false);
        let conn = connect(&endpoint, &srv).await;
        ask(&conn, "www.example.").await;
        let asked = Instant::now();
        let (c, reason) = closed_with(&conn).await;
        assert_eq!(c, code(NO_ERROR));
        assert_eq!(&reason[..], b"idle");
        assert!(
            asked.elapsed() >= Duration::from_millis(900),
            "not before the idle timeout"
        );
        counted(&srv.stats.idle, 1).await;
    });
}

#[test]
fn an_idle_silent_connection_is_closed_and_counted_idle() {
    // Without keep-alives the transport's idle timeout (the same second)
    // and the DoQ one race; either way the connection ends and is counted
    // as idle.
    let srv = doq_server(TcpConfig {
        idle_timeout: Duration::from_secs(1),
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let conn = connect(&endpoint, &srv).await;
        ask(&conn, "www.example.").await;
        let why = timeout(STEP, conn.closed()).await.unwrap();
        match why {
            ConnectionError::ApplicationClosed(close) => {
                assert_eq!(close.error_code, code(NO_ERROR));
            }
            ConnectionError::TimedOut => {}
            other => panic!("{other:?}"),
        }
        counted(&srv.stats.idle, 1).await;
    });
}

#[test]
fn a_stalled_stream_is_cancelled_and_the_connection_goes_on() {
    let srv = doq_server(TcpConfig {
        message_timeout: Duration::from_millis(500),
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let conn = connect(&endpoint, &srv).await;
        // Part of a query, and never the rest nor the FIN.
        let framed = wire::framed(&query("stalled.example."));
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&framed[..7]).await.unwrap();
        let started = Instant::now();
        match timeout(STEP, recv.read_to_end(MAX_ANSWER)).await.unwrap() {
            Err(ReadToEndError::Read(ReadError::Reset(c))) => {
                assert_eq!(c, code(REQUEST_CANCELLED));
            }
            other => panic!("{other:?}"),
        }
        assert!(started.elapsed() >= Duration::from_millis(400));
        // The server stopped reading it too.
        let stopped = timeout(STEP, send.stopped()).await.unwrap().unwrap();
        assert_eq!(stopped, Some(code(REQUEST_CANCELLED)));
        // The connection is still good.
        ask(&conn, "after.example.").await;
        assert_eq!(load(&srv.stats.queries), 1);
        assert_eq!(load(&srv.stats.protocol_error), 0);
        assert!(conn.close_reason().is_none());
    });
}

#[test]
fn a_dropped_query_resets_its_stream_and_the_connection_goes_on() {
    let srv = doq_server(TcpConfig::default());
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let conn = connect(&endpoint, &srv).await;
        match exchange(&conn, &wire::framed(&query("drop.example."))).await {
            Err(ReadToEndError::Read(ReadError::Reset(c))) => {
                assert_eq!(c, code(UNSPECIFIED_ERROR));
            }
            other => panic!("{other:?}"),
        }
        ask(&conn, "kept.example.").await;
        assert!(conn.close_reason().is_none());
    });
}

#[test]
fn a_client_that_never_reads_does_not_slow_an_honest_one() {
    const STREAMS: usize = 200;
    let srv = doq_server(TcpConfig {
        idle_timeout: Duration::from_secs(1),
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        // The greedy client grants the server room for about three answers
        // on the whole connection and never reads any of them: every other
        // answer is stuck until the server's write limit gives its stream up.
        let mut transport = quinn::TransportConfig::default();
        transport.receive_window(VarInt::from_u32(100));
        transport.keep_alive_interval(Some(Duration::from_millis(200)));
        let greedy_endpoint = doq_endpoint_with(&srv, transport, false);
        let greedy = connect(&greedy_endpoint, &srv).await;
        let greedy_done = std::sync::atomic::AtomicBool::new(false);
        let greedy_task = async {
            let mut held = Vec::with_capacity(STREAMS);
            for i in 0..STREAMS {
                // quinn waits here while the server's stream limit is
                // reached; the server frees streams as it gives up on
                // writing their answers.
                let (mut send, recv) = timeout(STEP, greedy.open_bi()).await.unwrap().unwrap();
                send.write_all(&wire::framed(&query(&format!("g{i}.example."))))
                    .await
                    .unwrap();
                send.finish().unwrap();
                held.push((send, recv));
            }
            greedy_done.store(true, Ordering::Relaxed);
            held
        };
        // Meanwhile an honest client asks, one query after another, for as
        // long as the greedy one is at it.
        let honest_endpoint = doq_endpoint(&srv);
        let honest = connect(&honest_endpoint, &srv).await;
        // (`ask` fails the test if any answer does not come.)
        let honest_task = async {
            let mut asked = 0u32;
            while !greedy_done.load(Ordering::Relaxed) && asked < 100_000 {
                ask(&honest, &format!("h{asked}.example.")).await;
                asked += 1;
            }
            asked
        };
        let (mut held, asked) = tokio::join!(greedy_task, honest_task);
        assert!(asked > 0);
        // Every one of the greedy client's streams was settled: the few
        // answers that fitted its window arrived whole, and the server gave
        // up on writing the rest (reset, rather than held for ever).
        let mut answered = 0;
        let mut reset = 0;
        for (_, recv) in &mut held {
            match timeout(STEP, recv.read_to_end(MAX_ANSWER)).await.unwrap() {
                Ok(_) => answered += 1,
                Err(ReadToEndError::Read(ReadError::Reset(c))) => {
                    assert_eq!(c, code(UNSPECIFIED_ERROR));
                    reset += 1;
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(answered + reset, STREAMS);
        assert!(answered > 0, "the answers that fitted arrived");
        assert!(reset > 0, "some answers were given up");
        assert!(
            greedy.close_reason().is_none(),
            "the connection itself stays"
        );
        assert_eq!(load(&srv.stats.protocol_error), 0);
        assert_eq!(load(&srv.stats.rejected), 0);
        assert_eq!(load(&srv.stats.accepted), 2);
    });
}

#[test]
fn at_the_per_client_cap_the_clients_longest_waiting_connection_is_evicted() {
    let srv = doq_server(TcpConfig {
        max_connections_per_client: 2,
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let first = connect(&endpoint, &srv).await;
        let second = connect(&endpoint, &srv).await;
        // The first asks a query: now the second has waited longest for its
        // next one (or the first is still busy with its answer, and cannot
        // be evicted), so a third connection from the same address takes
        // the second's place.
        ask(&first, "first.example.").await;
        let third = connect(&endpoint, &srv).await;
        ask(&third, "third.example.").await;
        let (c, reason) = closed_with(&second).await;
        assert_eq!(c, code(EXCESSIVE_LOAD));
        assert_eq!(&reason[..], b"evicted");
        counted(&srv.stats.evicted, 1).await;
        // The others are untouched.
        ask(&first, "first-again.example.").await;
        ask(&third, "third-again.example.").await;
        assert!(first.close_reason().is_none());
        assert!(third.close_reason().is_none());
        assert_eq!(load(&srv.stats.rejected), 0);
    });
}

#[test]
fn zero_rtt_answers_only_queries_safe_to_replay() {
    let srv = doq_server(TcpConfig::default());
    client_rt().block_on(async {
        let endpoint = doq_endpoint_with(&srv, quinn::TransportConfig::default(), true);
        // A first, full handshake brings the session ticket.
        let first = connect(&endpoint, &srv).await;
        ask(&first, "first.example.").await;
        first.close(code(NO_ERROR), b"");
        timeout(STEP, endpoint.wait_idle()).await.unwrap();

        // The client's 0-RTT packets can reach the server after its
        // Initial's handshake has completed (or be dropped, arriving before
        // the Initial), and their data is then sent again in 1-RTT, where an
        // UPDATE is served. So a few tries: one must carry it in 0-RTT.
        let mut refused_once = false;
        for _ in 0..5 {
            let connecting = endpoint.connect(srv.addr, NAME).unwrap();
            let Ok((conn, accepted)) = connecting.into_0rtt() else {
                panic!("the client holds no 0-RTT keys: the server's ticket allowed no early data");
            };
            // Both queries go out in 0-RTT, before the handshake completes.
            let update = wire::query(0, 5 << 11, "example.", 6);
            let (mut send_u, mut recv_u) = conn.open_bi().await.unwrap();
            send_u.write_all(&wire::framed(&update)).await.unwrap();
            send_u.finish().unwrap();
            let plain = query("www.example.");
            let (mut send_q, mut recv_q) = conn.open_bi().await.unwrap();
            send_q.write_all(&wire::framed(&plain)).await.unwrap();
            send_q.finish().unwrap();
            assert!(
                timeout(STEP, accepted).await.unwrap(),
                "the server took the 0-RTT data"
            );

            let answer_u = timeout(STEP, recv_u.read_to_end(MAX_ANSWER))
                .await
                .unwrap()
                .unwrap();
            let message = &answer_u[2..];
            assert_eq!(
                usize::from(u16::from_be_bytes([answer_u[0], answer_u[1]])),
                message.len()
            );
            assert_eq!(&message[..2], &[0, 0], "ID 0");
            assert_ne!(message[2] & 0x80, 0, "a response");
            assert_eq!((message[2] >> 3) & 0x0f, 5, "to the UPDATE");
            let answer = timeout(STEP, recv_q.read_to_end(MAX_ANSWER))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(answer, echoed(&plain), "a plain query is answered");
            assert!(conn.close_reason().is_none());
            conn.close(code(NO_ERROR), b"");
            if message[3] & 0x0f == 5 {
                // REFUSED: it came in 0-RTT, and was not served.
                refused_once = true;
                break;
            }
            // Served: it came again in 1-RTT (the echo's NOERROR).
            assert_eq!(message[3] & 0x0f, 0, "{message:?}");
            timeout(STEP, endpoint.wait_idle()).await.unwrap();
        }
        assert!(refused_once, "an UPDATE in 0-RTT data was never refused");
    });
}

#[test]
fn http3_answers_get_and_post_at_the_doh_path() {
    let srv = server(
        TcpConfig::default(),
        QuicService::Http3(DohConfig::default()),
    );
    client_rt().block_on(async {
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn_client(
            rustls_client(&srv, ALPN_H3, false),
            quinn::TransportConfig::default(),
        ));
        let conn = connect(&endpoint, &srv).await;
        let (mut driver, mut requests) =
            timeout(STEP, h3::client::new(h3_quinn::Connection::new(conn)))
                .await
                .unwrap()
                .unwrap();
        let driving = tokio::spawn(async move { driver.wait_idle().await });

        let q = query("www.example.");
        let mut want = q.clone();
        want[2] |= 0x80;

        let get = http::Request::get(format!(
            "https://{NAME}/dns-query?dns={}",
            wire::base64url(&q)
        ))
        .header("accept", "application/dns-message")
        .body(())
        .unwrap();
        let (status, content_type, body) = timeout(STEP, h3_request(&mut requests, get, None))
            .await
            .unwrap();
        assert_eq!(status, http::StatusCode::OK);
        assert_eq!(content_type.as_deref(), Some("application/dns-message"));
        assert_eq!(body, want);

        let post = http::Request::post(format!("https://{NAME}/dns-query"))
            .header("content-type", "application/dns-message")
            .header("accept", "application/dns-message")
            .body(())
            .unwrap();
        let (status, content_type, body) =
            timeout(STEP, h3_request(&mut requests, post, Some(q.clone())))
                .await
                .unwrap();
        assert_eq!(status, http::StatusCode::OK);
        assert_eq!(content_type.as_deref(), Some("application/dns-message"));
        assert_eq!(body, want);

        let elsewhere = http::Request::get(format!(
            "https://{NAME}/elsewhere?dns={}",
            wire::base64url(&q)
        ))
        .body(())
        .unwrap();
        let (status, _, _) = timeout(STEP, h3_request(&mut requests, elsewhere, None))
            .await
            .unwrap();
        assert_eq!(status, http::StatusCode::NOT_FOUND);

        counted(&srv.stats.queries, 2).await;
        drop(requests);
        driving.abort();
    });
}

/// Sends `request` (with `body`, if any), and returns the response's
/// status, content type and body.
async fn h3_request<T: h3::quic::OpenStreams<Bytes>>(
    requests: &mut h3::client::SendRequest<T, Bytes>,
    request: http::Request<()>,
    body: Option<Vec<u8>>,
) -> (http::StatusCode, Option<String>, Vec<u8>) {
    let mut stream = requests.send_request(request).await.unwrap();
    if let Some(b) = body {
        stream.send_data(Bytes::from(b)).await.unwrap();
    }
    stream.finish().await.unwrap();
    let response = stream.recv_response().await.unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.unwrap() {
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    (response.status(), content_type, body)
}

/// Starts a QUIC handshake with `s` that will never finish: a real client's
/// first datagram (its Initial) is sent on from a socket of its own, which
/// then says nothing more. Returns that socket, to keep for the test.
async fn half_open(endpoint: &quinn::Endpoint, s: &Server) -> std::net::UdpSocket {
    let relay = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    relay.set_read_timeout(Some(STEP)).unwrap();
    // The client dials the relay; its handshake is left to fail by itself.
    let connecting = endpoint.connect(relay.local_addr().unwrap(), NAME).unwrap();
    tokio::spawn(async move {
        let _ = connecting.await;
    });
    let mut initial = [0u8; 1500];
    let n = tokio::task::block_in_place(|| relay.recv(&mut initial)).unwrap();
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    silent.send_to(&initial[..n], s.addr).unwrap();
    silent
}

#[test]
fn handshakes_that_never_finish_are_cut_off_and_a_flood_of_them_meets_a_retry() {
    // Eight connections in all, no per-client cap: from the fifth on, a new
    // client must prove its address (a Retry) before it holds a place.
    let srv = doq_server(TcpConfig {
        max_connections: 8,
        max_connections_per_client: 0,
        ..TcpConfig::default()
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let flooder = doq_endpoint(&srv);
        let mut silent = Vec::new();
        for _ in 0..4 {
            silent.push(half_open(&flooder, &srv).await);
        }
        counted(&srv.stats.accepted, 4).await;
        // Twenty more half-open handshakes: each is asked to retry, which
        // a sender that never reads (or a spoofed address) cannot, so none
        // takes a place.
        for _ in 0..20 {
            silent.push(half_open(&flooder, &srv).await);
        }
        // An honest client answers the Retry and is served meanwhile.
        let honest = doq_endpoint(&srv);
        let conn = connect(&honest, &srv).await;
        ask(&conn, "www.example.").await;
        counted(&srv.stats.accepted, 5).await;
        // The four half-open ones end at the handshake timeout (5 s).
        counted(&srv.stats.handshake_timeout, 4).await;
        assert_eq!(load(&srv.stats.rejected), 0);
        // And the honest connection was never disturbed.
        ask(&conn, "again.example.").await;
        drop(silent);
    });
}

/// How many streams `conn` can open at once, up to `most`, without waiting
/// for more credit from the server: each is opened (and kept) while the
/// server's grant lasts; the first open that would wait ends the count.
fn streams_granted(conn: &quinn::Connection, most: usize) -> (usize, Vec<quinn::SendStream>) {
    use std::future::Future;
    let mut kept = Vec::new();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    while kept.len() < most {
        let mut open = std::pin::pin!(conn.open_bi());
        match open.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(Ok((send, _recv))) => kept.push(send),
            _ => break,
        }
    }
    (kept.len(), kept)
}

#[test]
fn a_connection_accepted_under_pressure_is_granted_fewer_streams() {
    // Four connections in all: the third finds half of them taken.
    let srv = doq_server(TcpConfig {
        max_connections: 4,
        max_connections_per_client: 0,
        ..TcpConfig::default()
    });
    client_rt().block_on(async {
        let endpoint = doq_endpoint(&srv);
        let first = connect(&endpoint, &srv).await;
        let second = connect(&endpoint, &srv).await;
        let third = connect(&endpoint, &srv).await;
        // The grant comes with the handshake, so it is known now.
        let (unpressed, _a) = streams_granted(&first, 150);
        let (pressed, _b) = streams_granted(&third, 150);
        assert_eq!(unpressed, bulwark_net::quic::DEFAULT_MAX_STREAMS as usize);
        assert_eq!(pressed, bulwark_net::quic::PRESSED_MAX_STREAMS as usize);
        // Both still answer.
        drop((_a, _b));
        ask(&second, "second.example.").await;
        counted(&srv.stats.accepted, 3).await;
    });
}
