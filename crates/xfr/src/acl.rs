//! Who may transfer, notify and update: networks, and when keys are named,
//! requests signed with one of them (RFC 8945). Pure policy: the answer
//! depends on the client's address and the verified key name only.

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_guard::{Access, Acl};
use bulwark_proto::Name;

/// An ACL for replication: clients by network, and when `keys` is not empty,
/// requests signed with one of them (RFC 8945) only.
#[derive(Debug, Clone)]
pub struct KeyedAcl {
    pub networks: Arc<Acl>,
    /// Lowercased key names; empty: no signature needed.
    pub keys: Vec<Name>,
}

impl KeyedAcl {
    /// Whether a request from `client`, signed with `key` (if any, its name
    /// lowercased), passes.
    pub fn allows(&self, client: IpAddr, key: Option<&Name>) -> bool {
        if self.networks.check(client) != Access::Allow {
            return false;
        }
        self.keys.is_empty() || key.is_some_and(|k| self.keys.iter().any(|want| want == k))
    }
}

/// Whether any of `acls` allows the request (no ACL: nobody).
pub fn any_allows(acls: &[Arc<KeyedAcl>], client: IpAddr, key: Option<&Name>) -> bool {
    acls.iter().any(|a| a.allows(client, key))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn acl(rules: &[(&str, Access)], keys: &[&str]) -> Arc<KeyedAcl> {
        Arc::new(KeyedAcl {
            networks: Arc::new(Acl::parse(rules, Access::Refuse).unwrap()),
            keys: keys.iter().map(|k| k.parse().unwrap()).collect(),
        })
    }

    #[test]
    fn no_acl_allows_nobody() {
        assert!(!any_allows(&[], "192.0.2.1".parse().unwrap(), None));
    }

    #[test]
    fn a_keyed_acl_wants_the_network_and_one_of_its_keys() {
        let a = acl(&[("192.0.2.0/24", Access::Allow)], &["k."]);
        let k: Name = "k.".parse().unwrap();
        let other: Name = "other.".parse().unwrap();
        let inside = "192.0.2.7".parse().unwrap();
        assert!(a.allows(inside, Some(&k)));
        assert!(!a.allows(inside, None));
        assert!(!a.allows(inside, Some(&other)));
        assert!(!a.allows("198.51.100.1".parse().unwrap(), Some(&k)));
    }

    #[test]
    fn an_acl_without_keys_takes_unsigned_requests() {
        let a = acl(&[("192.0.2.0/24", Access::Allow)], &[]);
        assert!(any_allows(&[a], "192.0.2.7".parse().unwrap(), None));
    }
}
