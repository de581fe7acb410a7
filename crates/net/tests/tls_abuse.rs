#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Abuse of the encrypted listeners, bounded in count and time, loopback
//! only: connections that never finish a handshake, a query dripped an octet
//! at a time inside TLS, and HTTP/2 streams opened and reset at once (the
//! "rapid reset" of CVE-2023-44487), and HTTP/2 connections opened under
//! pressure, which get fewer streams. Each time the server stays within its
//! caps, counts what it closed, and keeps answering an honest client.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::https::ALPN_DOH;
use bulwark_net::tls::{TlsServer, ALPN_DOT};
use bulwark_net::{bind_tcp, serve_https, serve_tls, DohConfig, Shutdown, TcpConfig, TcpStats};
use bulwark_testkit::wire::{self, read_framed};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const NAME: &str = "abuse.bulwark.test";

struct Server {
    addr: SocketAddr,
    stats: Arc<TcpStats>,
    der: CertificateDer<'static>,
    shutdown: Shutdown,
    rt: tokio::runtime::Runtime,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

fn server(config: TcpConfig, https: bool) -> Server {
    let (certificate, der) = common::certificate(NAME);
    let alpn: &[&[u8]] = if https { &ALPN_DOH } else { &[ALPN_DOT] };
    let tls = TlsServer::new(certificate, alpn, Duration::from_secs(600)).unwrap();
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    if https {
        let listeners = vec![(listener, tls, DohConfig::default())];
        rt.spawn(async move { serve_https(listeners, config, || common::echo, st, s).await });
    } else {
        rt.spawn(
            async move { serve_tls(vec![(listener, tls)], config, || common::echo, st, s).await },
        );
    }
    Server {
        addr,
        stats,
        der,
        shutdown,
        rt,
    }
}

fn client_config(s: &Server, alpn: &[u8]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(s.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

/// A TCP connection from `source` (any 127/8 address is local on Linux).
fn tcp_from(source: [u8; 4], server: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect(&server.into()).unwrap();
    let s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn dot_from(source: [u8; 4], s: &Server) -> StreamOwned<ClientConnection, TcpStream> {
    let conn = ClientConnection::new(
        client_config(s, ALPN_DOT),
        ServerName::try_from(NAME).unwrap(),
    )
    .unwrap();
    StreamOwned::new(conn, tcp_from(source, s.addr))
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

#[test]
fn connections_that_never_finish_a_handshake_hold_only_their_clients_share() {
    let srv = server(
        TcpConfig {
            max_connections: 10,
            max_connections_per_client: 4,
            ..TcpConfig::default()
        },
        false,
    );
    // 40 silent connections from one address: each past the fourth evicts
    // that client's oldest, still in its handshake.
    let mut silent = Vec::new();
    for _ in 0..40 {
        silent.push(tcp_from([127, 0, 0, 2], srv.addr));
    }
    // Once the last is accepted, an honest client from another address is
    // served: the flood never held more than its four places.
    let mut last = tcp_from([127, 0, 0, 2], srv.addr);
    let mut honest = dot_from([127, 0, 0, 3], &srv);
    honest
        .write_all(&wire::framed(&wire::query(7, wire::RD, "www.example.", 1)))
        .unwrap();
    honest.flush().unwrap();
    let r = read_framed(&mut honest).unwrap();
    assert_eq!(&r[..2], &[0, 7]);
    // The evictions are counted before each evicted socket closes; the
    // first silent connection was evicted long before the last arrived.
    let mut buf = [0u8; 8];
    assert_eq!(silent[0].read(&mut buf).unwrap_or(0), 0);
    assert!(
        load(&srv.stats.evicted) >= 36,
        "{}",
        load(&srv.stats.evicted)
    );
    assert_eq!(load(&srv.stats.too_many_total), 0);
    let _ = last.write_all(b"\x16");
}

#[test]
fn a_query_dripped_an_octet_per_tls_record_is_cut_off() {
    let srv = server(
        TcpConfig {
            idle_timeout: Duration::from_secs(30),
            message_timeout: Duration::from_millis(200),
            ..TcpConfig::default()
        },
        false,
    );
    let mut s = dot_from([127, 0, 0, 1], &srv);
    let mut wire = vec![0x01, 0x00];
    wire.extend_from_slice(&[0u8; 256]);
    // Each octet in its own record, well within the idle timeout: only the
    // limit on a whole message ends it. The pauses are the attack.
    for b in wire {
        if s.write_all(&[b]).and_then(|()| s.flush()).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(load(&srv.stats.message_timeout), 1);
    assert_eq!(load(&srv.stats.queries), 0);
}

#[test]
fn http2_streams_reset_as_fast_as_they_open_end_that_connection_not_the_server() {
    let srv = server(TcpConfig::default(), true);
    let config = client_config(&srv, b"h2");
    let addr = srv.addr;
    let q = wire::query(0, wire::RD, "www.example.", 1);
    let body_octets = bytes::Bytes::from(q.clone());
    let (opened, ended) = srv.rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(ServerName::try_from(NAME).unwrap(), tcp)
            .await
            .unwrap();
        let (client, connection) = h2::client::handshake(tls).await.unwrap();
        let mut client = Some(client);
        let driver = tokio::spawn(connection);
        let mut opened = 0u32;
        // At most 5,000 requests, each reset at once.
        for _ in 0..5000 {
            let Some(c) = client.take() else { break };
            let Ok(mut ready) = c.ready().await else {
                break;
            };
            let request = http::Request::post(format!("https://{NAME}/dns-query"))
                .header("content-type", "application/dns-message")
                .body(())
                .unwrap();
            let Ok((_response, mut body)) = ready.send_request(request, false) else {
                break;
            };
            client = Some(ready);
            let _ = body.send_data(body_octets.clone(), false);
            body.send_reset(h2::Reason::CANCEL);
            opened += 1;
        }
        drop(client);
        let ended = tokio::time::timeout(Duration::from_secs(20), driver).await;
        (opened, ended.is_ok())
    });
    assert!(ended, "the abusive connection ended");
    assert!(
        opened < 5000,
        "the server stopped the flood after {opened} resets"
    );
    // Everyone else is still answered.
    let mut s = StreamOwned::new(
        ClientConnection::new(
            client_config(&srv, b"http/1.1"),
            ServerName::try_from(NAME).unwrap(),
        )
        .unwrap(),
        tcp_from([127, 0, 0, 4], srv.addr),
    );
    let post = format!(
        "POST /dns-query HTTP/1.1\r\nHost: {NAME}\r\nContent-Type: application/dns-message\r\nContent-Length: {}\r\n\r\n",
        q.len()
    );
    let mut request = post.into_bytes();
    request.extend_from_slice(&q);
    s.write_all(&request).unwrap();
    s.flush().unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
}

#[test]
fn http2_connections_accepted_under_pressure_get_fewer_streams() {
    // Four connections in all: the third finds half of them in use.
    let srv = server(
        TcpConfig {
            max_connections: 4,
            max_connections_per_client: 0,
            ..TcpConfig::default()
        },
        true,
    );
    let config = client_config(&srv, b"h2");
    let addr = srv.addr;
    let q = bytes::Bytes::from(wire::query(0, wire::RD, "www.example.", 1));
    let allowed = srv.rt.block_on(async move {
        let mut held = Vec::new();
        let mut allowed = Vec::new();
        for _ in 0..3 {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(&config))
                .connect(ServerName::try_from(NAME).unwrap(), tcp)
                .await
                .unwrap();
            let (client, connection) = h2::client::handshake(tls).await.unwrap();
            let driver = tokio::spawn(connection);
            // One answered request: the server's SETTINGS have arrived.
            let mut ready = client.ready().await.unwrap();
            let request = http::Request::post(format!("https://{NAME}/dns-query"))
                .header("content-type", "application/dns-message")
                .body(())
                .unwrap();
            let (response, mut body) = ready.send_request(request, false).unwrap();
            body.send_data(q.clone(), true).unwrap();
            let response = tokio::time::timeout(Duration::from_secs(10), response)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(response.status(), 200);
            allowed.push(ready.current_max_send_streams());
            held.push((ready, driver));
        }
        allowed
    });
    assert_eq!(
        allowed,
        [
            bulwark_net::https::DEFAULT_MAX_CONCURRENT_STREAMS as usize,
            bulwark_net::https::DEFAULT_MAX_CONCURRENT_STREAMS as usize,
            bulwark_net::quic::PRESSED_MAX_STREAMS as usize,
        ]
    );
}
