//! What the engine is told at start: where the root is, what to forward, and
//! the limits that bound what any one question may cost.

use std::net::SocketAddr;

use bulwark_proto::Name;

use crate::validate::{AnchorData, TrustAnchor, WorkLimits};

/// How the resolver works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverConfig {
    /// Where priming queries go (RFC 8109): the root servers' addresses.
    pub root_hints: Vec<SocketAddr>,
    /// RFC 9156: ask each server only for the next label it must know, in
    /// the relaxed form (a server that fails a minimised query is asked for
    /// the full name).
    pub qname_minimisation: bool,
    /// Zones whose questions go to other resolvers instead of being resolved
    /// from the root.
    pub forwards: Vec<ForwardZone>,
    /// Zones whose authoritative servers are given instead of found by
    /// referral from the root (Unbound's stub-zone): iterated from there.
    pub stubs: Vec<StubZone>,
    /// RFC 7873: send a client cookie with every query that has EDNS, send
    /// back the server cookie a server gave, and drop a response whose
    /// client cookie is not ours (an off-path forgery).
    pub client_cookies: bool,
    /// Refresh an entry a client asks for in the last tenth of its TTL in the
    /// background, so popular names never expire from the cache (Unbound's
    /// `prefetch`).
    pub prefetch: bool,
    /// Whether loopback addresses learned from the DNS (glue, name server
    /// addresses) may be asked (Unbound's `do-not-query-localhost`, on by
    /// default there): a delegation to 127.0.0.1 is most often a mistake or
    /// an attack on the host. Root hints and forwarders the operator
    /// configured are asked wherever they are.
    pub query_localhost: bool,
    /// The EDNS payload size advertised upstream (DNS flag day 2020).
    pub udp_payload: u16,
    /// The payload size advertised instead to a server whose cookie this
    /// resolver holds (RFC 7873): a server that sends large answers over
    /// UDP only to clients that proved their address (bulwark's
    /// `require_for_udp_above`) then answers in one round trip where the
    /// 1,232-octet rule would make it TC and TCP. Experimental; at
    /// `udp_payload` (the default) it changes nothing.
    pub udp_payload_with_cookie: u16,
    /// Bounds on the TTLs kept in the cache, in seconds.
    pub ttl_min: u32,
    pub ttl_max: u32,
    /// RFC 2308 §5: the longest a negative answer is kept.
    pub negative_ttl_max: u32,
    /// RFC 8767: answers kept past their TTL, served when the servers fail.
    pub stale: Option<StaleConfig>,
    /// Octets the cache may hold, roughly.
    pub cache_bytes: usize,
    pub limits: Limits,
    /// DNSSEC validation (RFC 4035 §5), or `None` for none.
    pub validation: Option<ValidationConfig>,
}

/// How answers are validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationConfig {
    /// Where chains of trust start: the root's built in, or the
    /// operator's. Names with no anchor at or above them are insecure.
    pub anchors: Vec<TrustAnchor>,
    /// Negative trust anchors (RFC 7646): zones below which nothing is
    /// validated (a zone known broken, until its operator mends it); the
    /// cache holds them with those set at run time
    /// ([`crate::Cache::negative_anchors`]).
    pub negative_anchors: Vec<Name>,
    /// The longest a bogus answer is kept (RFC 4035 §4.7: so a broken
    /// zone is not asked again for every client; Unbound's
    /// `val-bogus-ttl`).
    pub bogus_ttl: u32,
    /// What one validation may cost (KeyTrap, CVE-2023-50387/50868).
    pub work: WorkLimits,
    /// RFC 8145 §5: tell the root's operators which root keys this
    /// resolver trusts (a `_ta-XXXX` query) when it fetches the root's keys.
    pub key_tag_signaling: bool,
    /// Validate experimental algorithms (Falcon-512 on PRIVATEOID, by its
    /// object identifier); off, such zones are insecure as any algorithm
    /// not implemented is (RFC 4035 §5.2).
    pub experimental_algorithms: bool,
}

impl Default for ValidationConfig {
    fn default() -> ValidationConfig {
        ValidationConfig {
            anchors: crate::validate::root_anchors(),
            negative_anchors: Vec::new(),
            bogus_ttl: 60,
            work: WorkLimits::default(),
            key_tag_signaling: true,
            experimental_algorithms: false,
        }
    }
}

impl ValidationConfig {
    /// The trust anchor closest above or at `name`: the zone whose keys
    /// the chain for `name` starts from.
    pub fn anchor_for(&self, name: &Name) -> Option<&Name> {
        self.anchors
            .iter()
            .map(|a| &a.owner)
            .filter(|o| name.ends_with(o))
            .max_by_key(|o| o.label_count())
    }
}

/// A zone forwarded to other resolvers (RD set, no iteration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardZone {
    pub zone: Name,
    pub addresses: Vec<SocketAddr>,
    /// `first` in Unbound's and BIND's terms: when every forwarder fails,
    /// resolve iteratively instead of failing.
    pub fallback_to_iteration: bool,
}

/// A zone whose authoritative servers are configured (RD clear, iterated
/// from there: referrals below it are followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StubZone {
    pub zone: Name,
    pub addresses: Vec<SocketAddr>,
}

/// RFC 8767 serve-stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleConfig {
    /// How long past its TTL an answer may still be served (RFC 8767 §5
    /// suggests one to three days).
    pub max_stale_secs: u32,
    /// The TTL a stale answer carries (RFC 8767 §4: 30 seconds).
    pub stale_answer_ttl: u32,
    /// RFC 8767 §5: a client whose question has waited this long for a
    /// resolution gets the stale answer now (1.8 s suggested), while the
    /// resolution goes on to refresh the cache.
    pub client_timeout_ms: u64,
}

/// What one client question may cost, each limit a defence (NXNSAttack,
/// CVE-2020-12667, and resolution loops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Queries sent upstream for one client question, sub-resolutions
    /// included.
    pub max_upstream_queries: u32,
    /// CNAME and DNAME links followed (Unbound stops at 11, BIND at 17).
    pub max_cname_hops: u32,
    /// Referrals followed for one question.
    pub max_referrals: u32,
    /// Name server names whose addresses one question may look up.
    pub max_ns_lookups: u32,
    /// How deep sub-resolutions (addresses of name servers of name servers)
    /// may nest.
    pub max_depth: u32,
    /// The wait for one server's answer, before asking another.
    pub query_timeout_ms: u64,
    /// The longest a client question may take in all.
    pub resolution_timeout_ms: u64,
    /// Client questions being resolved at once; more are refused (SERVFAIL).
    pub max_pending: usize,
    /// Client questions one client address may have waiting at once
    /// (DNSBomb, CVE-2024-33655: many slow questions from one spoofed
    /// address, answered all at once at its victim).
    pub max_pending_per_client: usize,
    /// Queries in flight to one server address at once: a slow server
    /// cannot hold the resolver's work (and a target cannot be flooded
    /// through it, TsuKing).
    pub max_outstanding_per_server: usize,
    /// An answer resolved after the client has waited this long is not
    /// sent (DNSBomb's fix in Unbound, `discard-timeout`): the client has
    /// given up, and a burst of late answers is the attack.
    pub discard_after_ms: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_upstream_queries: 64,
            max_cname_hops: 11,
            max_referrals: 32,
            max_ns_lookups: 16,
            max_depth: 6,
            query_timeout_ms: 800,
            resolution_timeout_ms: 10_000,
            max_pending: 10_000,
            max_pending_per_client: 100,
            max_outstanding_per_server: 1000,
            discard_after_ms: 1_900,
        }
    }
}

/// DNS flag day 2020: 1232 octets avoid fragmentation on common paths.
pub const DEFAULT_UDP_PAYLOAD: u16 = 1232;

impl Default for ResolverConfig {
    fn default() -> ResolverConfig {
        ResolverConfig {
            root_hints: Vec::new(),
            qname_minimisation: true,
            forwards: Vec::new(),
            stubs: Vec::new(),
            client_cookies: true,
            prefetch: true,
            query_localhost: false,
            udp_payload: DEFAULT_UDP_PAYLOAD,
            udp_payload_with_cookie: DEFAULT_UDP_PAYLOAD,
            ttl_min: 0,
            // Unbound's cache-max-ttl and cache-max-negative-ttl.
            ttl_max: 86_400,
            negative_ttl_max: 3_600,
            stale: None,
            cache_bytes: 64 * 1024 * 1024,
            limits: Limits::default(),
            validation: None,
        }
    }
}

impl ResolverConfig {
    /// Whether `ip` is a server the operator named (a root hint, a
    /// forwarder, a stub server): such an address is used even when it is
    /// loopback and the DNS told us about it too.
    pub fn is_configured(&self, ip: std::net::IpAddr) -> bool {
        self.root_hints.iter().any(|s| s.ip() == ip)
            || self
                .forwards
                .iter()
                .any(|f| f.addresses.iter().any(|s| s.ip() == ip))
            || self
                .stubs
                .iter()
                .any(|z| z.addresses.iter().any(|s| s.ip() == ip))
    }

    /// The stub zone covering `name`, the longest that does.
    pub fn stub_for(&self, name: &Name) -> Option<&StubZone> {
        self.stubs
            .iter()
            .filter(|s| name.ends_with(&s.zone))
            .max_by_key(|s| s.zone.label_count())
    }

    /// The forward zone covering `name`, the longest that does.
    pub fn forward_for(&self, name: &Name) -> Option<&ForwardZone> {
        self.forwards
            .iter()
            .filter(|f| name.ends_with(&f.zone))
            .max_by_key(|f| f.zone.label_count())
    }
}

/// The key tags of `anchors` (RFC 8509 §3.1, RFC 8145 §5), sorted, each
/// once.
pub fn key_tags(anchors: &[TrustAnchor]) -> Vec<u16> {
    let mut tags: Vec<u16> = anchors
        .iter()
        .map(|a| match &a.data {
            AnchorData::Ds(ds) => ds.key_tag,
            AnchorData::Dnskey(key) => {
                bulwark_dnssec::key_tag(&bulwark_proto::Rdata::Dnskey(key.clone()).to_wire())
            }
        })
        .collect();
    tags.sort_unstable();
    tags.dedup();
    tags
}
