#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! DNS over HTTPS on real loopback connections, HTTP/1.1 written by the test
//! over a rustls client: GET and POST answered with the DNS media type and a
//! max-age from the answer, every malformed request refused with its status,
//! and the query cap closing the connection after its last answer. (HTTP/2
//! is exercised by kdig, dig, curl and dnsperf in the binary's tests.)

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::https::ALPN_DOH;
use bulwark_net::tls::TlsServer;
use bulwark_net::{bind_tcp, serve_https, DohConfig, Shutdown, TcpConfig, TcpStats};
use bulwark_testkit::wire;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const NAME: &str = "doh.bulwark.test";

/// Answers every query with one A record of TTL 300 (and the question).
fn answer(query: &[u8], _peer: SocketAddr, _local: SocketAddr, out: &mut Vec<u8>) -> bool {
    if query.len() < 12 {
        return false;
    }
    out.clear();
    out.extend_from_slice(&query[..2]);
    out.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&query[12..]);
    out.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04\xc0\x00\x02\x01");
    true
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

fn server(config: TcpConfig) -> Server {
    let (certificate, der) = common::certificate(NAME);
    let tls = TlsServer::new(certificate, &ALPN_DOH, Duration::from_secs(600)).unwrap();
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
    rt.spawn(async move {
        serve_https(
            vec![(listener, tls, DohConfig::default())],
            config,
            || answer,
            st,
            s,
        )
        .await
    });
    Server {
        addr,
        stats,
        der,
        shutdown,
        _rt: rt,
    }
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

fn connect(s: &Server) -> Tls {
    let mut roots = RootCertStore::empty();
    roots.add(s.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(s.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let conn =
        ClientConnection::new(Arc::new(config), ServerName::try_from(NAME).unwrap()).unwrap();
    StreamOwned::new(conn, tcp)
}

/// One HTTP/1.1 response: status, headers (lowercased names), body.
struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn read_response(s: &mut Tls) -> HttpResponse {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let text = String::from_utf8(head).unwrap();
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn request(s: &mut Tls, head: &str, body: &[u8]) -> HttpResponse {
    let mut r = head.as_bytes().to_vec();
    r.extend_from_slice(body);
    s.write_all(&r).unwrap();
    s.flush().unwrap();
    read_response(s)
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

#[test]
fn get_and_post_are_answered_as_dns_messages_with_a_max_age() {
    let srv = server(TcpConfig::default());
    let mut s = connect(&srv);
    let q = wire::query(0, wire::RD, "www.example.", 1);
    let get = format!(
        "GET /dns-query?dns={} HTTP/1.1\r\nHost: {NAME}\r\nAccept: application/dns-message\r\n\r\n",
        wire::base64url(&q)
    );
    let r = request(&mut s, &get, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/dns-message"));
    assert_eq!(r.header("cache-control"), Some("max-age=300"));
    assert_eq!(&r.body[12..], &answer_of(&q)[12..]);

    let post = format!(
        "POST /dns-query HTTP/1.1\r\nHost: {NAME}\r\nContent-Type: application/dns-message\r\nContent-Length: {}\r\n\r\n",
        q.len()
    );
    let r = request(&mut s, &post, &q);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, answer_of(&q));
    assert_eq!(load(&srv.stats.queries), 2);
}

fn answer_of(q: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    answer(
        q,
        "127.0.0.1:1".parse().unwrap(),
        "127.0.0.1:2".parse().unwrap(),
        &mut out,
    );
    out
}

#[test]
fn malformed_requests_get_their_http_status_and_no_dns_answer() {
    let srv = server(TcpConfig::default());
    let mut s = connect(&srv);
    let q = wire::query(0, wire::RD, "www.example.", 1);
    let cases: Vec<(String, Vec<u8>, u16)> = vec![
        (format!("GET /elsewhere?dns={} HTTP/1.1\r\nHost: x\r\n\r\n", wire::base64url(&q)), vec![], 404),
        ("GET /dns-query HTTP/1.1\r\nHost: x\r\n\r\n".to_string(), vec![], 400),
        ("GET /dns-query?dns=%%% HTTP/1.1\r\nHost: x\r\n\r\n".to_string(), vec![], 400),
        (
            format!("PUT /dns-query HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", q.len()),
            q.clone(),
            405,
        ),
        (
            format!("POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n", q.len()),
            q.clone(),
            415,
        ),
    ];
    for (head, body, want) in cases {
        let r = request(&mut s, &head, &body);
        assert_eq!(r.status, want, "{head}");
        assert!(r.body.is_empty());
    }
    // A body over the query limit: 413, and hyper closes the connection
    // rather than read the rest.
    let big = vec![0u8; 20_000];
    let mut s = connect(&srv);
    let head = format!(
        "POST /dns-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/dns-message\r\nContent-Length: {}\r\n\r\n",
        big.len()
    );
    let r = request(&mut s, &head, &big);
    assert_eq!(r.status, 413);
    assert_eq!(load(&srv.stats.queries), 0, "nothing reached the handler");
}

#[test]
fn at_the_query_cap_the_last_answer_closes_the_connection() {
    let srv = server(TcpConfig {
        max_queries_per_connection: 2,
        ..TcpConfig::default()
    });
    let mut s = connect(&srv);
    let q = wire::query(0, wire::RD, "www.example.", 1);
    let get = format!(
        "GET /dns-query?dns={} HTTP/1.1\r\nHost: x\r\n\r\n",
        wire::base64url(&q)
    );
    assert_eq!(request(&mut s, &get, &[]).status, 200);
    let last = request(&mut s, &get, &[]);
    assert_eq!(last.status, 200);
    assert_eq!(last.header("connection"), Some("close"));
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
}

#[test]
fn a_post_body_that_stops_coming_is_answered_408_within_the_message_timeout() {
    let srv = server(TcpConfig {
        idle_timeout: Duration::from_secs(600),
        message_timeout: Duration::from_millis(200),
        ..TcpConfig::default()
    });
    let mut s = connect(&srv);
    // The head says 40 octets; 5 come, then nothing: the attack is the
    // silence, and the answer must come without the client sending more.
    let head = format!(
        "POST /dns-query HTTP/1.1\r\nHost: {NAME}\r\nContent-Type: application/dns-message\r\nContent-Length: 40\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&[0, 1, 2, 3, 4]).unwrap();
    s.flush().unwrap();
    let r = read_response(&mut s);
    assert_eq!(r.status, 408);
    assert_eq!(load(&srv.stats.queries), 0);
}
