//! connperf: DNS load over connections, for bench/transports.sh.
//!
//! usage: connperf doq|h3|tcp|dot ADDR:PORT SECONDS CONNECTIONS IN_FLIGHT QUERIES_PER_CONNECTION QUERYFILE
//!
//! Keeps CONNECTIONS connections busy for SECONDS, each with IN_FLIGHT
//! queries outstanding, and replaces a connection after
//! QUERIES_PER_CONNECTION answers (0: never): DNS over QUIC (RFC 9250, each
//! query on a new stream), DNS over HTTPS on HTTP/3 (RFC 8484 POSTs to
//! /dns-query, one request per stream), DNS over TCP (RFC 7766,
//! pipelined), or DNS over TLS (RFC 7858, ALPN dot). No certificate check: the bench's own
//! self-signed one. QUERYFILE holds `NAME TYPE` lines (A and AAAA), cycled.
//! Prints `sent N`, `answered N`, `connections N`, `failed N`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A framed DoQ query (ID 0) for `name` and `qtype`.
fn query(name: &str, qtype: u16) -> Vec<u8> {
    let mut m = vec![0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.trim_end_matches('.').split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    let mut framed = (m.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&m);
    framed
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    answered: AtomicU64,
    connections: AtomicU64,
    failed: AtomicU64,
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    if args.len() != 8 {
        eprintln!("usage: connperf doq|h3|tcp|dot ADDR:PORT SECONDS CONNECTIONS IN_FLIGHT QUERIES_PER_CONNECTION QUERYFILE");
        std::process::exit(2);
    }
    let mode = args.remove(1);
    let server: SocketAddr = args[1].parse().expect("ADDR:PORT");
    let seconds: u64 = args[2].parse().expect("SECONDS");
    let connections: usize = args[3].parse().expect("CONNECTIONS");
    let streams: usize = args[4].parse().expect("IN_FLIGHT");
    let per_connection: u64 = args[5].parse().expect("QUERIES_PER_CONNECTION");
    let queries: Arc<Vec<Vec<u8>>> = Arc::new(
        std::fs::read_to_string(&args[6])
            .expect("QUERYFILE")
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let name = w.next()?;
                let qtype = if w.next() == Some("AAAA") { 28 } else { 1 };
                Some(query(name, qtype))
            })
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let counts = Arc::new(Counts::default());
    let end = Instant::now() + Duration::from_secs(seconds);
    if mode == "h3" {
        runtime.block_on(h3_load(server, connections, streams, per_connection, end, queries, Arc::clone(&counts)));
        report(&counts);
        return;
    }
    if mode != "doq" {
        let tls = (mode == "dot").then(|| client_tls(b"dot"));
        runtime.block_on(streams_load(server, tls, connections, streams, per_connection, end, queries, Arc::clone(&counts)));
        report(&counts);
        return;
    }
    runtime.block_on(async {
        let endpoint = quic_endpoint(b"doq");
        let mut tasks = Vec::new();
        for c in 0..connections {
            let (endpoint, queries, counts) = (endpoint.clone(), Arc::clone(&queries), Arc::clone(&counts));
            tasks.push(tokio::spawn(async move {
                let mut next = c;
                while Instant::now() < end {
                    let Ok(connecting) = endpoint.connect(server, "localhost") else { break };
                    let Ok(conn) = connecting.await else {
                        counts.failed.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    counts.connections.fetch_add(1, Ordering::Relaxed);
                    let budget = answer_budget(per_connection);
                    let mut workers = Vec::new();
                    for s in 0..streams {
                        let (conn, queries, counts, budget) =
                            (conn.clone(), Arc::clone(&queries), Arc::clone(&counts), Arc::clone(&budget));
                        let start = next + s * 7;
                        workers.push(tokio::spawn(async move {
                            let mut i = start;
                            while Instant::now() < end {
                                if !spend(&budget) {
                                    return;
                                }
                                let Ok((mut send, mut recv)) = conn.open_bi().await else { return };
                                counts.sent.fetch_add(1, Ordering::Relaxed);
                                let q = &queries[i % queries.len()];
                                i += 1;
                                if send.write_all(q).await.is_err() || send.finish().is_err() {
                                    counts.failed.fetch_add(1, Ordering::Relaxed);
                                    return;
                                }
                                match recv.read_to_end(65537).await {
                                    Ok(a) if a.len() > 14 => {
                                        counts.answered.fetch_add(1, Ordering::Relaxed);
                                    }
                                    _ => {
                                        counts.failed.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                            }
                        }));
                    }
                    for w in workers {
                        let _ = w.await;
                    }
                    next += streams;
                    conn.close(0u32.into(), b"");
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        endpoint.close(0u32.into(), b"");
    });
    report(&counts);
}

fn report(counts: &Counts) {
    println!("sent {}", counts.sent.load(Ordering::Relaxed));
    println!("answered {}", counts.answered.load(Ordering::Relaxed));
    println!("connections {}", counts.connections.load(Ordering::Relaxed));
    println!("failed {}", counts.failed.load(Ordering::Relaxed));
}

/// A QUIC client endpoint on a port of its own, offering `alpn`.
fn quic_endpoint(alpn: &[u8]) -> quinn::Endpoint {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(client_tls(alpn)).expect("QUIC TLS");
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("socket");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

/// The queries one connection may still send: QUERIES_PER_CONNECTION, or
/// no end for 0.
fn answer_budget(per_connection: u64) -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(if per_connection == 0 { u64::MAX } else { per_connection }))
}

/// Takes one query from `budget`; false when it is spent.
fn spend(budget: &AtomicU64) -> bool {
    budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1)).is_ok()
}

/// TLS 1.3 (and 1.2 for DoT) offering `alpn`, any certificate accepted.
fn client_tls(alpn: &[u8]) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls
}

/// DNS over TCP or TLS: each connection sends up to IN_FLIGHT framed
/// queries at once and reads their answers, until its budget is spent.
#[allow(clippy::too_many_arguments)]
async fn streams_load(
    server: SocketAddr,
    tls: Option<rustls::ClientConfig>,
    connections: usize,
    in_flight: usize,
    per_connection: u64,
    end: Instant,
    queries: Arc<Vec<Vec<u8>>>,
    counts: Arc<Counts>,
) {
    let connector = tls.map(|t| tokio_rustls::TlsConnector::from(Arc::new(t)));
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (connector, queries, counts) = (connector.clone(), Arc::clone(&queries), Arc::clone(&counts));
        tasks.push(tokio::spawn(async move {
            let mut next = c * 13;
            while Instant::now() < end {
                let Ok(tcp) = tokio::net::TcpStream::connect(server).await else {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let done = match &connector {
                    None => exchange(tcp, &queries, &mut next, in_flight, per_connection, end, &counts).await,
                    Some(connector) => {
                        let name = ServerName::try_from("localhost").expect("name");
                        match connector.connect(name, tcp).await {
                            Ok(tls) => exchange(tls, &queries, &mut next, in_flight, per_connection, end, &counts).await,
                            Err(_) => false,
                        }
                    }
                };
                if done {
                    counts.connections.fetch_add(1, Ordering::Relaxed);
                } else {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// One connection's queries; `false` when it broke.
async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    queries: &[Vec<u8>],
    next: &mut usize,
    in_flight: usize,
    per_connection: u64,
    end: Instant,
    counts: &Counts,
) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut budget = if per_connection == 0 { u64::MAX } else { per_connection };
    let mut out = Vec::new();
    let mut answer = vec![0u8; 65535];
    while budget > 0 && Instant::now() < end {
        let n = (in_flight as u64).min(budget);
        budget -= n;
        out.clear();
        for _ in 0..n {
            out.extend_from_slice(&queries[*next % queries.len()]);
            *next += 1;
        }
        if stream.write_all(&out).await.is_err() {
            return false;
        }
        counts.sent.fetch_add(n, Ordering::Relaxed);
        for _ in 0..n {
            let mut len = [0u8; 2];
            if stream.read_exact(&mut len).await.is_err() {
                return false;
            }
            let len = usize::from(u16::from_be_bytes(len));
            if stream.read_exact(&mut answer[..len]).await.is_err() {
                return false;
            }
            counts.answered.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = stream.shutdown().await;
    true
}

/// DoH over HTTP/3: each connection keeps IN_FLIGHT POSTs outstanding,
/// each request on a stream of its own, until its budget is spent.
async fn h3_load(
    server: SocketAddr,
    connections: usize,
    in_flight: usize,
    per_connection: u64,
    end: Instant,
    queries: Arc<Vec<Vec<u8>>>,
    counts: Arc<Counts>,
) {
    let endpoint = quic_endpoint(b"h3");
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (endpoint, queries, counts) = (endpoint.clone(), Arc::clone(&queries), Arc::clone(&counts));
        tasks.push(tokio::spawn(async move {
            let mut next = c;
            while Instant::now() < end {
                let Ok(connecting) = endpoint.connect(server, "localhost") else { break };
                let Ok(conn) = connecting.await else {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let Ok((mut driver, send_request)) = h3::client::new(h3_quinn::Connection::new(conn.clone())).await else {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                counts.connections.fetch_add(1, Ordering::Relaxed);
                let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
                let budget = answer_budget(per_connection);
                let mut workers = Vec::new();
                for s in 0..in_flight {
                    let (mut send_request, queries, counts, budget) =
                        (send_request.clone(), Arc::clone(&queries), Arc::clone(&counts), Arc::clone(&budget));
                    let start = next + s * 7;
                    workers.push(tokio::spawn(async move {
                        let mut i = start;
                        while Instant::now() < end {
                            if !spend(&budget) {
                                return;
                            }
                            // The query without DoQ's length prefix.
                            let q = bytes::Bytes::copy_from_slice(&queries[i % queries.len()][2..]);
                            i += 1;
                            let request = http::Request::post("https://localhost/dns-query")
                                .header("content-type", "application/dns-message")
                                .header("accept", "application/dns-message")
                                .body(())
                                .expect("request");
                            counts.sent.fetch_add(1, Ordering::Relaxed);
                            let Ok(mut stream) = send_request.send_request(request).await else {
                                counts.failed.fetch_add(1, Ordering::Relaxed);
                                return;
                            };
                            if stream.send_data(q).await.is_err() || stream.finish().await.is_err() {
                                counts.failed.fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                            let ok = match stream.recv_response().await {
                                Ok(r) if r.status() == http::StatusCode::OK => {
                                    let mut len = 0;
                                    while let Ok(Some(chunk)) = stream.recv_data().await {
                                        len += bytes::Buf::remaining(&chunk);
                                    }
                                    len > 12
                                }
                                _ => false,
                            };
                            if ok {
                                counts.answered.fetch_add(1, Ordering::Relaxed);
                            } else {
                                counts.failed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }));
                }
                drop(send_request);
                for w in workers {
                    let _ = w.await;
                }
                next += in_flight;
                conn.close(0u32.into(), b"");
                drive.abort();
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    endpoint.close(0u32.into(), b"");
}
