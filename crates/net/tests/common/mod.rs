//! What the net tests share: the handler that echoes each query back as its
//! answer, and a self-signed certificate for a test server. Each test
//! binary uses what it needs of this.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use bulwark_net::tls::ServerCertificate;
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
