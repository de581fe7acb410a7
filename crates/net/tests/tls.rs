#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! DNS over TLS on real loopback connections, with a rustls client: queries
//! answered in RFC 7858 framing, ALPN, resumption, the handshake limits and a
//! certificate reload that leaves established connections alone. Tests wait on
//! what the client observes (an answer, a close), never on time.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::tls::{ServerCertificate, TlsServer, ALPN_DOT};
use bulwark_net::{bind_tcp, serve_tls, Shutdown, TcpConfig, TcpStats};
use bulwark_testkit::wire::{self, read_framed};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, HandshakeKind, RootCertStore, StreamOwned};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
const NAME: &str = "dot.bulwark.test";

/// A self-signed certificate for `NAME`, as PEM files in a fresh directory.
struct Identity {
    dir: PathBuf,
    der: CertificateDer<'static>,
}

impl Identity {
    fn new(tag: &str) -> Identity {
        let dir = std::env::temp_dir().join(format!(
            "bulwark-net-tls-{}-{tag}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let id = Identity {
            dir,
            der: CertificateDer::from(Vec::new()),
        };
        id.replace()
    }

    /// A new key and certificate in the same files.
    fn replace(mut self) -> Identity {
        let made = rcgen::generate_simple_self_signed(vec![NAME.to_string()]).unwrap();
        std::fs::write(self.cert(), made.cert.pem()).unwrap();
        std::fs::write(self.key(), made.key_pair.serialize_pem()).unwrap();
        self.der = made.cert.der().clone();
        self
    }

    fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }
}

impl Drop for Identity {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

struct Server {
    addr: SocketAddr,
    stats: Arc<TcpStats>,
    certificate: Arc<ServerCertificate>,
    shutdown: Shutdown,
    _rt: tokio::runtime::Runtime,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

fn server(id: &Identity, handshake_timeout: Duration) -> Server {
    server_with(id, handshake_timeout, TcpConfig::default())
}

fn server_with(id: &Identity, handshake_timeout: Duration, config: TcpConfig) -> Server {
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let certificate = ServerCertificate::load(&id.cert(), &id.key()).unwrap();
    let tls = TlsServer::new(Arc::clone(&certificate), &[ALPN_DOT], handshake_timeout).unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    rt.spawn(async move { serve_tls(vec![(listener, tls)], config, || common::echo, st, s).await });
    Server {
        addr,
        stats,
        certificate,
        shutdown,
        _rt: rt,
    }
}

fn client_config(trusted: &CertificateDer<'static>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

fn connect(server: SocketAddr, config: &Arc<ClientConfig>) -> Tls {
    let tcp = TcpStream::connect(server).unwrap();
    tcp.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let name = ServerName::try_from(NAME).unwrap();
    let conn = ClientConnection::new(Arc::clone(config), name).unwrap();
    StreamOwned::new(conn, tcp)
}

fn exchange(s: &mut Tls, id: u16) -> std::io::Result<Vec<u8>> {
    let q = wire::query(id, wire::RD, "www.example.", 1);
    s.write_all(&wire::framed(&q))?;
    s.flush()?;
    let r = read_framed(s)?;
    assert_eq!(&r[..2], &id.to_be_bytes());
    Ok(r)
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Reads until the server closes; fails the test on data or a timeout.
fn wait_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            // A TLS alert may come before the close.
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("the server did not close the connection")
            }
            Err(_) => return,
        }
    }
}

#[test]
fn pipelined_queries_over_tls_are_answered_with_the_dot_alpn() {
    let id = Identity::new("answer");
    let srv = server(&id, Duration::from_secs(600));
    let mut s = connect(srv.addr, &client_config(&id.der, &[ALPN_DOT]));
    let mut burst = Vec::new();
    for i in 1..=20u16 {
        burst.extend(wire::framed(&wire::query(i, wire::RD, "www.example.", 1)));
    }
    s.write_all(&burst).unwrap();
    s.flush().unwrap();
    for i in 1..=20u16 {
        let r = read_framed(&mut s).unwrap();
        assert_eq!(&r[..2], &i.to_be_bytes());
        assert_eq!(r[2] & 0x80, 0x80, "answers are responses");
    }
    assert_eq!(s.conn.alpn_protocol(), Some(ALPN_DOT));
    assert_eq!(load(&srv.stats.queries), 20);
}

#[test]
fn a_second_connection_resumes_the_session() {
    let id = Identity::new("resume");
    let srv = server(&id, Duration::from_secs(600));
    let config = client_config(&id.der, &[ALPN_DOT]);
    let mut first = connect(srv.addr, &config);
    // The first answer brings the TLS 1.3 tickets with it.
    exchange(&mut first, 1).unwrap();
    assert_eq!(first.conn.handshake_kind(), Some(HandshakeKind::Full));
    let mut second = connect(srv.addr, &config);
    exchange(&mut second, 2).unwrap();
    assert_eq!(second.conn.handshake_kind(), Some(HandshakeKind::Resumed));
}

#[test]
fn a_client_without_alpn_is_served_and_a_foreign_alpn_is_refused() {
    let id = Identity::new("alpn");
    let srv = server(&id, Duration::from_secs(600));
    let mut plain = connect(srv.addr, &client_config(&id.der, &[]));
    exchange(&mut plain, 7).unwrap();
    let mut h2 = connect(srv.addr, &client_config(&id.der, &[b"h2"]));
    let err = exchange(&mut h2, 8).unwrap_err();
    assert!(
        err.to_string().contains("NoApplicationProtocol"),
        "expected the no_application_protocol alert, got {err}"
    );
    // The failed handshake is counted before the server closes.
    wait_closed(&mut h2.sock);
    assert_eq!(load(&srv.stats.handshake_failed), 1);
}

#[test]
fn a_client_that_never_starts_the_handshake_is_cut_off_and_counted() {
    let id = Identity::new("stall");
    let srv = server(&id, Duration::from_millis(200));
    let mut silent = TcpStream::connect(srv.addr).unwrap();
    silent.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    wait_closed(&mut silent);
    assert_eq!(load(&srv.stats.handshake_timeout), 1);
    // Plain DNS on a TLS port is no handshake at all: refused, counted.
    let mut clear = TcpStream::connect(srv.addr).unwrap();
    clear.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    clear
        .write_all(&wire::framed(&wire::query(1, wire::RD, "www.example.", 1)))
        .unwrap();
    wait_closed(&mut clear);
    assert_eq!(load(&srv.stats.handshake_failed), 1);
}

#[test]
fn a_reloaded_certificate_serves_new_connections_and_spares_open_ones() {
    let id = Identity::new("reload");
    let srv = server(&id, Duration::from_secs(600));
    let old = id.der.clone();
    let mut before = connect(srv.addr, &client_config(&old, &[ALPN_DOT]));
    exchange(&mut before, 1).unwrap();

    let id = id.replace();
    srv.certificate.reload().unwrap();
    // A client that trusts only the new certificate gets in; one that
    // trusts only the old one does not.
    let mut after = connect(srv.addr, &client_config(&id.der, &[ALPN_DOT]));
    exchange(&mut after, 2).unwrap();
    let mut stale = connect(srv.addr, &client_config(&old, &[ALPN_DOT]));
    assert!(exchange(&mut stale, 3).is_err());
    // The connection made before the reload still answers.
    exchange(&mut before, 4).unwrap();
}

#[test]
fn a_reload_from_broken_files_keeps_the_certificate_and_names_the_file() {
    let id = Identity::new("broken");
    let srv = server(&id, Duration::from_secs(600));
    std::fs::write(id.key(), "not a key\n").unwrap();
    let err = srv.certificate.reload().unwrap_err().to_string();
    assert!(err.contains("key.pem"), "{err}");
    let mut s = connect(srv.addr, &client_config(&id.der, &[ALPN_DOT]));
    exchange(&mut s, 1).unwrap();
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused_at_load() {
    let id = Identity::new("mismatch");
    let other = Identity::new("other");
    let err = ServerCertificate::load(&id.cert(), &other.key())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be used with the certificate"), "{err}");
}

#[test]
fn at_the_query_cap_the_answers_go_out_then_a_close_notify() {
    let id = Identity::new("cap");
    let config = TcpConfig {
        max_queries_per_connection: 3,
        ..TcpConfig::default()
    };
    let srv = server_with(&id, Duration::from_secs(600), config);
    let mut s = connect(srv.addr, &client_config(&id.der, &[ALPN_DOT]));
    let mut burst = Vec::new();
    for i in 1..=3u16 {
        burst.extend(wire::framed(&wire::query(i, wire::RD, "www.example.", 1)));
    }
    s.write_all(&burst).unwrap();
    s.flush().unwrap();
    for i in 1..=3u16 {
        let r = read_framed(&mut s).unwrap();
        assert_eq!(&r[..2], &i.to_be_bytes());
    }
    // A clean end of stream: rustls reports a close without close_notify
    // as an error (UnexpectedEof), so Ok(0) means the server sent one.
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
    // The socket itself closes after the close is counted.
    wait_closed(&mut s.sock);
    assert_eq!(load(&srv.stats.query_limit), 1);
}
