//! Another server a zone talks to: a primary to pull from, a secondary to
//! notify. Validated configuration, plain data.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use crate::tsig::TsigKey;

/// A remote server: its addresses, tried in order; the TSIG key that signs
/// what is sent to it and must sign what it sends (RFC 8945); the local
/// address to send from.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The name the configuration gives it, for logs.
    pub name: String,
    pub addresses: Vec<SocketAddr>,
    pub key: Option<Arc<TsigKey>>,
    pub via: Option<IpAddr>,
}

impl Remote {
    /// Whether a request from `client` signed with `key` (its lowercased
    /// name, if any) comes from this server: one of its addresses and, when
    /// it has a key, signed with that key.
    pub fn sent(&self, client: IpAddr, key: Option<&bulwark_proto::Name>) -> bool {
        self.addresses
            .iter()
            .any(|a| a.ip().to_canonical() == client)
            && self
                .key
                .as_ref()
                .is_none_or(|k| key == Some(&k.name().to_lowercase()))
    }
}
