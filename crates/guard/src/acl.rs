//! Access control lists: ordered rules by network, first match wins.

use std::net::IpAddr;

/// What to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Allow,
    /// Answer REFUSED.
    Refuse,
    /// Send nothing.
    Drop,
}

/// An address prefix, `192.0.2.0/24` or `2001:db8::/32`; a bare address is a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Network {
    /// Whether `ip` lies in this network (an IPv4-mapped IPv6 client matches IPv4 networks).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let _ = ip;
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkError {
    #[error("not an IP address or prefix")]
    BadAddress,
    #[error("prefix length too long for the address family")]
    BadPrefix,
    #[error("address has bits set beyond the prefix length")]
    HostBits,
}

impl core::str::FromStr for Network {
    type Err = NetworkError;
    fn from_str(s: &str) -> Result<Network, NetworkError> {
        let _ = s;
        Err(NetworkError::BadAddress)
    }
}

/// Rules checked in order; the first network that contains the client decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    rules: Vec<(Network, Access)>,
    default: Access,
}

impl Acl {
    pub fn new(rules: Vec<(Network, Access)>, default: Access) -> Acl {
        Acl { rules, default }
    }

    pub fn allow_all() -> Acl {
        Acl {
            rules: Vec::new(),
            default: Access::Allow,
        }
    }

    pub fn check(&self, client: IpAddr) -> Access {
        self.rules
            .iter()
            .find(|(n, _)| n.contains(client))
            .map_or(self.default, |(_, a)| *a)
    }
}
