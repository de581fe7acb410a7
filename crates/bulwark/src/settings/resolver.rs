//! `[resolver]`, validated: the engine's configuration and who may ask for
//! recursion.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bulwark_guard::Acl;
use bulwark_resolver::ResolverConfig;

/// Recursion, when `[resolver]` is in the file.
#[derive(Debug, Clone)]
pub struct ResolverSettings {
    pub engine: ResolverConfig,
    /// Forwarders asked over DNS over TLS, and how each proves itself.
    pub tls_upstreams: Vec<TlsUpstream>,
    /// Clients that may ask for recursion (RD); everyone else gets REFUSED
    /// with Extended DNS Error 18, Prohibited (RFC 8914). Loopback only by
    /// default: no open resolver by accident.
    pub allow_recursion: Arc<Acl>,
}

/// Where a forwarder's certificate chain is checked by default: Debian's
/// bundle of the system's trusted roots (package ca-certificates).
pub const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A `[[resolver.forward]]` address with `tls = true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsUpstream {
    pub address: SocketAddr,
    /// The name its certificate must carry (and SNI).
    pub name: Option<String>,
    /// SHA-256 pins of acceptable public keys (RFC 7858 §4.2); when given,
    /// the key decides and the chain is not checked.
    pub pins: Vec<[u8; 32]>,
    /// PEM roots for the name check (default [`SYSTEM_CA_FILE`]).
    pub ca_file: Option<PathBuf>,
}

/// The root servers' addresses (the IANA root hints, RFC 8109 §3), where
/// priming starts unless `root_hints` says otherwise.
pub const IANA_ROOT_HINTS: [&str; 26] = [
    "198.41.0.4",
    "170.247.170.2",
    "192.33.4.12",
    "199.7.91.13",
    "192.203.230.10",
    "192.5.5.241",
    "192.112.36.4",
    "198.97.190.53",
    "192.36.148.17",
    "192.58.128.30",
    "193.0.14.129",
    "199.7.83.42",
    "202.12.27.33",
    "2001:503:ba3e::2:30",
    "2801:1b8:10::b",
    "2001:500:2::c",
    "2001:500:2d::d",
    "2001:500:a8::e",
    "2001:500:2f::f",
    "2001:500:12::d0d",
    "2001:500:1::53",
    "2001:7fe::53",
    "2001:503:c27::2:30",
    "2001:7fd::1",
    "2001:500:9f::42",
    "2001:dc3::35",
];
