//! Access control lists: ordered rules by network, first match wins.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Allow,
    /// Answer REFUSED.
    Refuse,
    /// Send nothing.
    Drop,
}

impl Access {
    /// The configuration keyword: `allow`, `refuse` or `drop`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Allow => "allow",
            Access::Refuse => "refuse",
            Access::Drop => "drop",
        }
    }
}

impl core::fmt::Display for Access {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown access keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown access action (expected allow, refuse or drop)")]
pub struct AccessError;

impl core::str::FromStr for Access {
    type Err = AccessError;
    /// Accepts `allow`, `refuse` (alias `deny`) and `drop`, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Access, AccessError> {
        if s.eq_ignore_ascii_case("allow") {
            Ok(Access::Allow)
        } else if s.eq_ignore_ascii_case("refuse") || s.eq_ignore_ascii_case("deny") {
            Ok(Access::Refuse)
        } else if s.eq_ignore_ascii_case("drop") {
            Ok(Access::Drop)
        } else {
            Err(AccessError)
        }
    }
}

/// An address prefix, `192.0.2.0/24` or `2001:db8::/32`; a bare address is a host.
///
/// The fields are public for pattern matching; a value built by hand with a
/// prefix longer than the family allows behaves as a host route, and host bits
/// beyond the prefix are ignored by [`Network::contains`]. Use [`Network::new`]
/// or `str::parse` to get the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Network {
    pub addr: IpAddr,
    pub prefix: u8,
}

/// Longest prefix of each family.
const IPV4_BITS: u8 = 32;
const IPV6_BITS: u8 = 128;

impl Network {
    /// A network from an address and prefix length, rejecting a prefix longer
    /// than the family's and host bits set beyond the prefix.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Network, NetworkError> {
        if prefix > family_bits(addr) {
            return Err(NetworkError::BadPrefix);
        }
        if truncate(addr, prefix) != addr {
            return Err(NetworkError::HostBits);
        }
        Ok(Network { addr, prefix })
    }

    /// The host route of one address (`/32` or `/128`).
    pub fn host(addr: IpAddr) -> Network {
        Network {
            addr,
            prefix: family_bits(addr),
        }
    }

    /// The network of `prefix` bits that contains `addr`, host bits cleared
    /// (a prefix longer than the family's is taken as a host route). An
    /// IPv4-mapped IPv6 address is taken as the IPv4 address it maps, with the
    /// prefix counted in IPv4 bits, as client networks are grouped in RRL.
    pub fn enclosing(addr: IpAddr, prefix: u8) -> Network {
        let addr = addr.to_canonical();
        let prefix = prefix.min(family_bits(addr));
        Network {
            addr: truncate(addr, prefix),
            prefix,
        }
    }

    /// Whether `ip` lies in this network (an IPv4-mapped IPv6 client matches IPv4 networks).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => v4_match(net, ip, self.prefix),
            // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2).
            (IpAddr::V4(net), IpAddr::V6(ip)) => match ip.to_ipv4_mapped() {
                Some(ip) => v4_match(net, ip, self.prefix),
                None => false,
            },
            (IpAddr::V6(net), IpAddr::V6(ip)) => v6_match(net, ip, self.prefix),
            // An IPv6 network written over the mapped range (::ffff:0:0/96) holds IPv4 clients too.
            (IpAddr::V6(net), IpAddr::V4(ip)) => v6_match(net, ip.to_ipv6_mapped(), self.prefix),
        }
    }
}

fn family_bits(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => IPV4_BITS,
        IpAddr::V6(_) => IPV6_BITS,
    }
}

/// The mask of the first `prefix` bits of a 32-bit address (all ones past 32).
fn v4_mask(prefix: u8) -> u32 {
    // A shift by 32 would overflow: /0 is the empty mask.
    u32::MAX
        .checked_shl(u32::from(IPV4_BITS.saturating_sub(prefix)))
        .unwrap_or(0)
}

fn v6_mask(prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(u32::from(IPV6_BITS.saturating_sub(prefix)))
        .unwrap_or(0)
}

fn v4_match(net: Ipv4Addr, ip: Ipv4Addr, prefix: u8) -> bool {
    let mask = v4_mask(prefix);
    u32::from(net) & mask == u32::from(ip) & mask
}

fn v6_match(net: Ipv6Addr, ip: Ipv6Addr, prefix: u8) -> bool {
    let mask = v6_mask(prefix);
    u128::from(net) & mask == u128::from(ip) & mask
}

/// `addr` with the bits beyond `prefix` cleared.
fn truncate(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & v4_mask(prefix))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & v6_mask(prefix))),
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

/// A prefix length is one to three decimal digits; `+24`, `24 ` and `` are not.
const MAX_PREFIX_DIGITS: usize = 3;

impl core::str::FromStr for Network {
    type Err = NetworkError;
    fn from_str(s: &str) -> Result<Network, NetworkError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| NetworkError::BadAddress)?;
        let prefix = match prefix {
            None => return Ok(Network::host(addr)),
            Some(p) => p,
        };
        if prefix.is_empty()
            || prefix.len() > MAX_PREFIX_DIGITS
            || !prefix.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(NetworkError::BadPrefix);
        }
        let prefix: u8 = prefix.parse().map_err(|_| NetworkError::BadPrefix)?;
        Network::new(addr, prefix)
    }
}

impl core::fmt::Display for Network {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A rule list that failed to parse: which rule and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("ACL rule {index}: {source}")]
pub struct AclError {
    /// Position of the offending rule (0-based).
    pub index: usize,
    pub source: NetworkError,
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

    /// Parses rules written as network strings, keeping their order.
    pub fn parse<S: AsRef<str>>(rules: &[(S, Access)], default: Access) -> Result<Acl, AclError> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(index, (net, access))| {
                net.as_ref()
                    .parse()
                    .map(|n| (n, *access))
                    .map_err(|source| AclError { index, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Acl { rules, default })
    }

    pub fn allow_all() -> Acl {
        Acl {
            rules: Vec::new(),
            default: Access::Allow,
        }
    }

    /// The rules, in the order they are checked.
    pub fn rules(&self) -> &[(Network, Access)] {
        &self.rules
    }

    /// What a client no rule matches gets.
    pub fn default_access(&self) -> Access {
        self.default
    }

    pub fn check(&self, client: IpAddr) -> Access {
        self.rules
            .iter()
            .find(|(n, _)| n.contains(client))
            .map_or(self.default, |(_, a)| *a)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn net(s: &str) -> Network {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_ipv4_and_ipv6_prefixes() {
        assert_eq!(
            net("192.0.2.0/24"),
            Network {
                addr: ip("192.0.2.0"),
                prefix: 24
            }
        );
        assert_eq!(
            net("2001:db8::/32"),
            Network {
                addr: ip("2001:db8::"),
                prefix: 32
            }
        );
        assert_eq!(net("0.0.0.0/0").prefix, 0);
        assert_eq!(net("::/0").prefix, 0);
    }

    #[test]
    fn bare_address_is_a_host_route() {
        assert_eq!(net("192.0.2.7").prefix, 32);
        assert_eq!(net("2001:db8::1").prefix, 128);
    }

    #[test]
    fn host_bits_beyond_prefix_are_rejected() {
        assert_eq!(
            "192.0.2.1/24".parse::<Network>(),
            Err(NetworkError::HostBits)
        );
        assert_eq!(
            "2001:db8::1/64".parse::<Network>(),
            Err(NetworkError::HostBits)
        );
        assert_eq!("11.0.0.0/7".parse::<Network>(), Err(NetworkError::HostBits));
    }

    #[test]
    fn prefix_longer_than_family_is_rejected() {
        assert_eq!(
            "192.0.2.0/33".parse::<Network>(),
            Err(NetworkError::BadPrefix)
        );
        assert_eq!("::/129".parse::<Network>(), Err(NetworkError::BadPrefix));
        assert_eq!("::/300".parse::<Network>(), Err(NetworkError::BadPrefix));
    }

    #[test]
    fn malformed_prefix_and_address_are_rejected() {
        for s in [
            "192.0.2.0/",
            "192.0.2.0/+24",
            "192.0.2.0/ 24",
            "192.0.2.0/0024",
            "::/x",
        ] {
            assert_eq!(s.parse::<Network>(), Err(NetworkError::BadPrefix), "{s}");
        }
        for s in [
            "",
            "/24",
            "192.0.2/24",
            "example.com",
            "fe80::1%eth0",
            " 192.0.2.1",
        ] {
            assert_eq!(s.parse::<Network>(), Err(NetworkError::BadAddress), "{s}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["192.0.2.0/24", "2001:db8::/32", "0.0.0.0/0", "::1/128"] {
            assert_eq!(net(s).to_string(), s);
            assert_eq!(net(&net(s).to_string()), net(s));
        }
        assert_eq!(net("192.0.2.9").to_string(), "192.0.2.9/32");
    }

    #[test]
    fn contains_checks_only_prefix_bits() {
        let n = net("192.0.2.0/24");
        assert!(n.contains(ip("192.0.2.0")));
        assert!(n.contains(ip("192.0.2.255")));
        assert!(!n.contains(ip("192.0.3.0")));
        let n = net("2001:db8::/32");
        assert!(n.contains(ip("2001:db8:ffff::1")));
        assert!(!n.contains(ip("2001:db9::1")));
        assert!(net("0.0.0.0/0").contains(ip("255.255.255.255")));
        assert!(net("::/0").contains(ip("2001:db8::1")));
    }

    #[test]
    fn ipv4_mapped_client_matches_ipv4_network() {
        assert!(net("192.0.2.0/24").contains(ip("::ffff:192.0.2.10")));
        assert!(!net("192.0.2.0/24").contains(ip("::ffff:198.51.100.1")));
        assert!(net("192.0.2.1").contains(ip("::ffff:192.0.2.1")));
    }

    #[test]
    fn families_do_not_match_each_other_outside_the_mapped_range() {
        assert!(!net("0.0.0.0/0").contains(ip("2001:db8::1")));
        assert!(!net("2001:db8::/32").contains(ip("192.0.2.1")));
        assert!(net("::ffff:0:0/96").contains(ip("192.0.2.1")));
    }

    #[test]
    fn hand_built_network_with_overlong_prefix_is_a_host() {
        let n = Network {
            addr: ip("192.0.2.1"),
            prefix: 200,
        };
        assert!(n.contains(ip("192.0.2.1")));
        assert!(!n.contains(ip("192.0.2.2")));
    }

    #[test]
    fn enclosing_clears_host_bits_and_unmaps() {
        assert_eq!(
            Network::enclosing(ip("192.0.2.77"), 24),
            net("192.0.2.0/24")
        );
        assert_eq!(
            Network::enclosing(ip("::ffff:192.0.2.77"), 24),
            net("192.0.2.0/24")
        );
        assert_eq!(
            Network::enclosing(ip("2001:db8:1:2ff:1::1"), 56),
            net("2001:db8:1:200::/56")
        );
        assert_eq!(Network::enclosing(ip("192.0.2.77"), 99), net("192.0.2.77"));
    }

    #[test]
    fn first_matching_rule_wins() {
        let acl = Acl::parse(
            &[
                ("192.0.2.1", Access::Allow),
                ("192.0.2.0/24", Access::Drop),
                ("0.0.0.0/0", Access::Refuse),
            ],
            Access::Allow,
        )
        .unwrap();
        assert_eq!(acl.check(ip("192.0.2.1")), Access::Allow);
        assert_eq!(acl.check(ip("192.0.2.2")), Access::Drop);
        assert_eq!(acl.check(ip("198.51.100.1")), Access::Refuse);
        assert_eq!(acl.check(ip("2001:db8::1")), Access::Allow);
        assert_eq!(acl.rules().len(), 3);
        assert_eq!(acl.default_access(), Access::Allow);
    }

    #[test]
    fn acl_parse_reports_the_bad_rule() {
        let err = Acl::parse(
            &[
                ("192.0.2.0/24", Access::Allow),
                ("192.0.2.1/24", Access::Drop),
            ],
            Access::Refuse,
        )
        .unwrap_err();
        assert_eq!(
            err,
            AclError {
                index: 1,
                source: NetworkError::HostBits
            }
        );
    }

    #[test]
    fn allow_all_allows_everyone() {
        assert_eq!(Acl::allow_all().check(ip("203.0.113.1")), Access::Allow);
    }

    #[test]
    fn access_keywords_parse() {
        assert_eq!("allow".parse(), Ok(Access::Allow));
        assert_eq!("REFUSE".parse(), Ok(Access::Refuse));
        assert_eq!("deny".parse(), Ok(Access::Refuse));
        assert_eq!("drop".parse(), Ok(Access::Drop));
        assert_eq!("nope".parse::<Access>(), Err(AccessError));
        assert_eq!(Access::Drop.to_string(), "drop");
    }
}
