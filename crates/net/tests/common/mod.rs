//! What the net tests share: the handler that echoes each query back as its
//! answer, one that answers later from a task as a resolver does, and a
//! self-signed certificate for a test server. Each test binary uses what it
//! needs of this.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use bulwark_net::tls::ServerCertificate;
use bulwark_net::{Deferred, QueryHandler, Shutdown, UdpConfig, UdpListeners, UdpWorkers};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Answers every query with itself, QR set.
pub fn echo(query: &[u8], _peer: SocketAddr, _local: SocketAddr, out: &mut Vec<u8>) -> bool {
    out.clear();
    out.extend_from_slice(query);
    if let Some(b) = out.get_mut(2) {
        *b |= 0x80;
    }
    true
}

/// Defers every query to a task on `runtime`, which replies, after yielding
/// once, with what `reply` makes of the query (nothing for `None`): a
/// resolver's answers come so.
pub struct Later {
    runtime: tokio::runtime::Handle,
    reply: fn(&[u8]) -> Option<Vec<u8>>,
    pending: Option<Deferred>,
}

impl QueryHandler for Later {
    fn handle(
        &mut self,
        query: &[u8],
        _peer: SocketAddr,
        _local: SocketAddr,
        _out: &mut Vec<u8>,
    ) -> bool {
        let Some(reply) = (self.reply)(query) else {
            return false;
        };
        let runtime = self.runtime.clone();
        self.pending = Some(Box::new(move |responder| {
            runtime.spawn(async move {
                tokio::task::yield_now().await;
                let _ = responder.send(reply).await;
            });
        }));
        false
    }

    fn take_deferred(&mut self) -> Option<Deferred> {
        self.pending.take()
    }
}

/// `listeners` served as tasks on `runtime` by [`Later`] handlers.
pub fn spawn_later(
    runtime: &tokio::runtime::Runtime,
    listeners: UdpListeners,
    reply: fn(&[u8]) -> Option<Vec<u8>>,
    shutdown: &Shutdown,
) -> UdpWorkers {
    let handle = runtime.handle().clone();
    listeners
        .spawn_tasks(
            runtime.handle(),
            &UdpConfig::default(),
            move |_| Later {
                runtime: handle.clone(),
                reply,
                pending: None,
            },
            shutdown,
        )
        .unwrap()
}

/// A self-signed certificate for `name`, made now: the server's, and the
/// DER a client trusts it by.
pub fn certificate(name: &str) -> (Arc<ServerCertificate>, CertificateDer<'static>) {
    let made = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    let der = made.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    (
        ServerCertificate::fixed(vec![der.clone()], key).unwrap(),
        der,
    )
}
