#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! The client's DNS over TLS (RFC 7858), against bulwark's own DoT listener:
//! an upstream proven by name under a trusted root, or by its key's pin, is
//! asked and its connection kept; one that proves neither is never asked.
//! (Against Unbound as the upstream: the binary's resolver tests.)

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::client::{random_id, Authentication, UpstreamTls};
use bulwark_net::tls::{ServerCertificate, TlsServer, ALPN_DOT};
use bulwark_net::{
    bind_tcp, serve_tls, Client, ClientConfig, ClientError, Shutdown, TcpConfig, TcpStats,
};
use bulwark_testkit::wire;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const NAME: &str = "upstream.bulwark.test";
const TIMEOUT: Duration = Duration::from_secs(10);

/// SHA-256, from the TLS provider's own hash (the pin's digest).
fn sha256(data: &[u8]) -> [u8; 32] {
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let suite = provider
        .cipher_suites
        .iter()
        .find_map(|s| {
            s.tls13().filter(|t| {
                t.common.hash_provider.algorithm() == rustls::crypto::hash::HashAlgorithm::SHA256
            })
        })
        .unwrap();
    let out = suite.common.hash_provider.hash(data);
    out.as_ref().try_into().unwrap()
}

struct Upstream {
    addr: SocketAddr,
    der: CertificateDer<'static>,
    spki_pin: [u8; 32],
    stats: Arc<TcpStats>,
    shutdown: Shutdown,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}

fn upstream(rt: &tokio::runtime::Runtime) -> Upstream {
    let made = rcgen::generate_simple_self_signed(vec![NAME.to_string()]).unwrap();
    let der = made.cert.der().clone();
    let spki_pin = sha256(&made.key_pair.public_key_der());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let certificate = ServerCertificate::fixed(vec![der.clone()], key).unwrap();
    let tls = TlsServer::new(certificate, &[ALPN_DOT], TIMEOUT).unwrap();
    let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::new().unwrap();
    let stats = Arc::new(TcpStats::default());
    let (s, st) = (shutdown.clone(), Arc::clone(&stats));
    let config = TcpConfig::default();
    rt.spawn(async move { serve_tls(vec![(listener, tls)], config, || common::echo, st, s).await });
    Upstream {
        addr,
        der,
        spki_pin,
        stats,
        shutdown,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn client() -> Client {
    Client::new(ClientConfig {
        idle_timeout: Duration::from_secs(60),
        max_idle_per_server: 2,
    })
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

fn query() -> Vec<u8> {
    wire::query(random_id().unwrap(), wire::RD, "www.example.", 1)
}

#[test]
fn an_upstream_proven_by_name_is_asked_on_one_kept_connection() {
    let rt = runtime();
    let up = upstream(&rt);
    let tls = UpstreamTls::new(
        up.addr.ip(),
        Authentication::Name {
            name: NAME.to_string(),
            roots: vec![up.der.clone()],
        },
    )
    .unwrap();
    let client = client();
    rt.block_on(async {
        for _ in 0..3 {
            let q = query();
            let r = client
                .exchange_tls(up.addr, None, &tls, &q, TIMEOUT)
                .await
                .unwrap();
            assert_eq!(&r[..2], &q[..2]);
        }
    });
    assert_eq!(load(&up.stats.accepted), 1, "one connection, kept");
    assert_eq!(client.idle_connections(), 1);
}

#[test]
fn an_upstream_proven_by_its_key_pin_is_asked_whatever_signed_it() {
    let rt = runtime();
    let up = upstream(&rt);
    let tls = UpstreamTls::new(
        up.addr.ip(),
        Authentication::Pins {
            name: None,
            pins: vec![[0u8; 32], up.spki_pin],
            digest: sha256,
        },
    )
    .unwrap();
    let client = client();
    let q = query();
    let r = rt
        .block_on(client.exchange_tls(up.addr, None, &tls, &q, TIMEOUT))
        .unwrap();
    assert_eq!(&r[..2], &q[..2]);
}

#[test]
fn an_upstream_that_proves_neither_name_nor_pin_is_never_asked() {
    let rt = runtime();
    let up = upstream(&rt);
    let other = rcgen::generate_simple_self_signed(vec![NAME.to_string()]).unwrap();
    let wrong_root = UpstreamTls::new(
        up.addr.ip(),
        Authentication::Name {
            name: NAME.to_string(),
            roots: vec![other.cert.der().clone()],
        },
    )
    .unwrap();
    let wrong_name = UpstreamTls::new(
        up.addr.ip(),
        Authentication::Name {
            name: "elsewhere.bulwark.test".to_string(),
            roots: vec![up.der.clone()],
        },
    )
    .unwrap();
    let wrong_pin = UpstreamTls::new(
        up.addr.ip(),
        Authentication::Pins {
            name: None,
            pins: vec![sha256(&other.key_pair.public_key_der())],
            digest: sha256,
        },
    )
    .unwrap();
    let client = client();
    for tls in [wrong_root, wrong_name, wrong_pin] {
        let r = rt.block_on(client.exchange_tls(up.addr, None, &tls, &query(), TIMEOUT));
        assert!(matches!(r, Err(ClientError::Tls(_))), "{r:?}");
    }
    assert_eq!(load(&up.stats.queries), 0);
    assert_eq!(client.idle_connections(), 0);
}
