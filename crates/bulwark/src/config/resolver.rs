//! `[resolver]`: recursion. Its presence turns recursion on for the clients
//! `allow_recursion` lists (loopback unless it says otherwise).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use bulwark_guard::{Access, Acl, Network};
use bulwark_resolver::validate::parse_anchors;
use bulwark_resolver::{
    ForwardZone, Limits, ResolverConfig, StaleConfig, StubZone, ValidationConfig,
};
use serde::Deserialize;
use toml::Spanned;

use super::source::Source;
use crate::settings::{parse_origin, ResolverSettings, IANA_ROOT_HINTS};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolverSection {
    /// Where priming goes (RFC 8109): addresses, with an optional port.
    pub root_hints: Option<Vec<Spanned<String>>>,
    pub qname_minimisation: Option<bool>,
    /// Networks that may ask for recursion.
    pub allow_recursion: Option<Vec<Spanned<String>>>,
    /// Whether loopback addresses may be asked.
    pub query_localhost: Option<bool>,
    /// Octets the cache may hold.
    pub cache_size: Option<Spanned<u64>>,
    pub ttl_min: Option<u32>,
    pub ttl_max: Option<u32>,
    pub negative_ttl_max: Option<u32>,
    /// RFC 8767: serve expired answers for this long when servers fail.
    pub serve_stale: Option<Spanned<String>>,
    /// RFC 8767 §5: how long a client waits before a stale answer is sent.
    pub serve_stale_client_timeout_ms: Option<u64>,
    /// Refresh popular entries before they expire.
    pub prefetch: Option<bool>,
    /// RFC 7873 cookies on queries to servers.
    pub client_cookies: Option<bool>,
    /// The EDNS payload offered to a server whose cookie is held.
    pub udp_payload_with_cookie: Option<Spanned<u16>>,
    #[serde(default)]
    pub forward: Vec<ForwardSection>,
    #[serde(default)]
    pub stub: Vec<StubSection>,
    /// Queries one client question may send upstream in all.
    pub max_upstream_queries: Option<u32>,
    /// Milliseconds to wait for one server.
    pub query_timeout_ms: Option<u64>,
    /// Questions one client address may have waiting (DNSBomb).
    pub max_pending_per_client: Option<usize>,
    /// Queries in flight to one server at once.
    pub max_outstanding_per_server: Option<usize>,
    /// An answer resolved after the client waited this long is not sent.
    pub discard_timeout_ms: Option<u64>,
    /// DNSSEC validation (RFC 4035 §5).
    pub dnssec_validation: Option<bool>,
    /// Trust anchors, each a DS or DNSKEY record in zone-file form; given,
    /// they replace the built-in root anchors.
    pub trust_anchors: Option<Vec<Spanned<String>>>,
    /// Files of trust anchors: zone-file DS or DNSKEY lines (Unbound's
    /// and Debian's), or BIND's `trust-anchors` statements.
    pub trust_anchor_files: Option<Vec<Spanned<String>>>,
    /// Negative trust anchors (RFC 7646): zones not validated.
    pub negative_trust_anchors: Option<Vec<Spanned<String>>>,
    /// How long a bogus answer is kept.
    pub bogus_ttl: Option<u32>,
    /// RFC 8145 key tag signalling to the root.
    pub key_tag_signaling: Option<bool>,
    /// Experimental algorithms to validate: `FALCON512` (PRIVATEOID).
    pub experimental_algorithms: Option<Vec<Spanned<String>>>,
}

/// `[[resolver.stub]]`: a zone whose authoritative servers are given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StubSection {
    pub zone: Spanned<String>,
    pub addresses: Vec<Spanned<String>>,
}

/// `[[resolver.forward]]`: a zone whose questions go to other resolvers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardSection {
    pub zone: Spanned<String>,
    pub addresses: Vec<Spanned<String>>,
    /// `first`: when every forwarder fails, resolve it iteratively.
    pub first: Option<bool>,
    /// Ask these forwarders over DNS over TLS (RFC 7858), port 853 unless
    /// an address says otherwise.
    pub tls: Option<bool>,
    /// The name the forwarders' certificates must carry.
    pub tls_name: Option<Spanned<String>>,
    /// Base64 SHA-256 pins of the forwarders' public keys (RFC 7858 §4.2).
    pub tls_pin_sha256: Option<Vec<Spanned<String>>>,
    /// PEM roots for checking `tls_name` (default: the system's).
    pub tls_ca_file: Option<String>,
}

/// RFC 7858 §3.1: the port of DNS over TLS.
const DOT_PORT: u16 = 853;

/// Loopback: who may recurse unless `allow_recursion` says otherwise.
const DEFAULT_ALLOW: [&str; 2] = ["127.0.0.0/8", "::1/128"];
/// The smallest cache that still holds a working set of delegations.
const MIN_CACHE: u64 = 1 << 20;

/// An address with an optional port (`192.0.2.1`, `192.0.2.1:5353`,
/// `[2001:db8::1]:53`), port 53 when none is given.
fn server_address(text: &str) -> Option<SocketAddr> {
    let t = text.trim();
    if let Ok(sa) = t.parse::<SocketAddr>() {
        return Some(sa);
    }
    t.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 53))
}

fn addresses(
    items: &[Spanned<String>],
    key: &str,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for item in items {
        match server_address(item.get_ref()) {
            Some(a) => out.push(a),
            None => problems.push(src.at(
                item.span(),
                format!(
                    "[resolver] {key}: `{}` is not an address (like 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:53)",
                    item.get_ref()
                ),
            )),
        }
    }
    out
}

/// A forward or stub zone's name, or the problem with it.
fn zone_name(
    text: &Spanned<String>,
    table: &str,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<bulwark_proto::Name> {
    match parse_origin(text.get_ref()) {
        Ok(z) => Some(z),
        Err(e) => {
            problems.push(src.at(
                text.span(),
                format!("{table} zone: `{}`: {e}", text.get_ref()),
            ));
            None
        }
    }
}

/// The validation settings, unless `dnssec_validation = false`: the trust
/// anchors given inline and in files (the built-in root anchors when none
/// are), negative trust anchors, and the bogus TTL.
fn build_validation(
    s: &ResolverSection,
    base_dir: &Path,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<ValidationConfig> {
    // On unless turned off: an operator of Unbound or Knot Resolver
    // expects a resolver to validate, from the root's anchors.
    let given = s.trust_anchors.is_some() || s.trust_anchor_files.is_some();
    if !s.dnssec_validation.unwrap_or(true) {
        return None;
    }
    let defaults = ValidationConfig::default();
    let mut anchors = Vec::new();
    for item in s.trust_anchors.iter().flatten() {
        match parse_anchors(item.get_ref(), "trust_anchors") {
            Ok(a) if !a.is_empty() => anchors.extend(a),
            Ok(_) => problems.push(src.at(
                item.span(),
                "[resolver] trust_anchors: no DS or DNSKEY record in this entry",
            )),
            Err(diagnostics) => {
                for d in diagnostics {
                    problems.push(src.at(
                        item.span(),
                        format!(
                            "[resolver] trust_anchors: `{}`: {}",
                            item.get_ref(),
                            d.message
                        ),
                    ));
                }
            }
        }
    }
    for item in s.trust_anchor_files.iter().flatten() {
        let path = base_dir.join(item.get_ref());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(src.at(
                    item.span(),
                    format!("[resolver] trust_anchor_files: {}: {e}", path.display()),
                ));
                continue;
            }
        };
        match parse_anchors(&text, &path.display().to_string()) {
            Ok(a) if !a.is_empty() => anchors.extend(a),
            Ok(_) => problems.push(src.at(
                item.span(),
                format!(
                    "[resolver] trust_anchor_files: {} holds no trust anchor",
                    path.display()
                ),
            )),
            Err(diagnostics) => problems.extend(diagnostics.iter().map(ToString::to_string)),
        }
    }
    if !given {
        anchors = defaults.anchors.clone();
    }
    let mut negative_anchors = Vec::new();
    for item in s.negative_trust_anchors.iter().flatten() {
        if let Some(zone) = zone_name(item, "[resolver] negative_trust_anchors", src, problems) {
            negative_anchors.push(zone.to_lowercase());
        }
    }
    for a in &mut anchors {
        a.owner = a.owner.to_lowercase();
    }
    let mut experimental_algorithms = false;
    for item in s.experimental_algorithms.iter().flatten() {
        if item.get_ref().eq_ignore_ascii_case("FALCON512") {
            experimental_algorithms = true;
        } else {
            problems.push(src.at(
                item.span(),
                format!(
                    "[resolver] experimental_algorithms: `{}` is not one (FALCON512)",
                    item.get_ref()
                ),
            ));
        }
    }
    Some(ValidationConfig {
        anchors,
        negative_anchors,
        bogus_ttl: s.bogus_ttl.unwrap_or(defaults.bogus_ttl),
        key_tag_signaling: s.key_tag_signaling.unwrap_or(defaults.key_tag_signaling),
        experimental_algorithms,
        ..defaults
    })
}

/// Validates `[resolver]`; `None` when it is absent.
pub fn build_resolver(
    section: Option<&ResolverSection>,
    base_dir: &Path,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Option<ResolverSettings> {
    let s = section?;
    let defaults = ResolverConfig::default();
    let root_hints = match &s.root_hints {
        Some(items) => {
            let hints = addresses(items, "root_hints", src, problems);
            if hints.is_empty() && problems.is_empty() {
                problems.push(format!(
                    "{}: [resolver] root_hints: give at least one address",
                    src.file.display()
                ));
            }
            hints
        }
        None => IANA_ROOT_HINTS
            .iter()
            .filter_map(|a| server_address(a))
            .collect(),
    };
    let mut rules = Vec::new();
    match &s.allow_recursion {
        Some(items) => {
            for item in items {
                match item.get_ref().trim().parse::<Network>() {
                    Ok(n) => rules.push((n, Access::Allow)),
                    Err(e) => problems.push(src.at(
                        item.span(),
                        format!("[resolver] allow_recursion: `{}`: {e}", item.get_ref()),
                    )),
                }
            }
        }
        None => {
            for n in DEFAULT_ALLOW
                .iter()
                .filter_map(|n| n.parse::<Network>().ok())
            {
                rules.push((n, Access::Allow));
            }
        }
    }
    let allow_recursion = Arc::new(Acl::new(rules, Access::Refuse));
    let cache_bytes = match &s.cache_size {
        Some(v) if *v.get_ref() < MIN_CACHE => {
            problems.push(src.at(
                v.span(),
                format!("[resolver] cache_size: at least {MIN_CACHE} octets"),
            ));
            defaults.cache_bytes
        }
        Some(v) => usize::try_from(*v.get_ref()).unwrap_or(usize::MAX),
        None => defaults.cache_bytes,
    };
    let stale = match &s.serve_stale {
        None => None,
        Some(v) => match crate::settings::parse_duration(v.get_ref()) {
            Ok(0) => None,
            Ok(secs) => Some(StaleConfig {
                max_stale_secs: u32::try_from(secs).unwrap_or(u32::MAX),
                stale_answer_ttl: 30,
                client_timeout_ms: s.serve_stale_client_timeout_ms.unwrap_or(1_800),
            }),
            Err(e) => {
                problems.push(src.at(v.span(), format!("[resolver] serve_stale: {e}")));
                None
            }
        },
    };
    let mut forwards = Vec::new();
    let mut tls_upstreams = Vec::new();
    for f in &s.forward {
        let Some(zone) = zone_name(&f.zone, "[[resolver.forward]]", src, problems) else {
            continue;
        };
        let mut addrs = addresses(&f.addresses, "forward addresses", src, problems);
        if f.tls == Some(true) {
            dot_ports(&mut addrs, &f.addresses);
            tls_upstreams.extend(tls_forwarders(f, &zone, &addrs, base_dir, src, problems));
        } else if f.tls_name.is_some() || f.tls_pin_sha256.is_some() || f.tls_ca_file.is_some() {
            problems.push(src.at(
                f.zone.span(),
                format!("[[resolver.forward]] {zone}: tls_* settings need `tls = true`"),
            ));
        }
        if addrs.is_empty() {
            problems.push(src.at(
                f.zone.span(),
                format!("[[resolver.forward]] {zone}: give at least one address"),
            ));
        }
        forwards.push(ForwardZone {
            zone,
            addresses: addrs,
            fallback_to_iteration: f.first.unwrap_or(false),
        });
    }
    let mut stubs = Vec::new();
    for st in &s.stub {
        let Some(zone) = zone_name(&st.zone, "[[resolver.stub]]", src, problems) else {
            continue;
        };
        let addrs = addresses(&st.addresses, "stub addresses", src, problems);
        if addrs.is_empty() {
            problems.push(src.at(
                st.zone.span(),
                format!("[[resolver.stub]] {zone}: give at least one address"),
            ));
        }
        stubs.push(StubZone {
            zone,
            addresses: addrs,
        });
    }
    let limits = Limits {
        max_upstream_queries: s
            .max_upstream_queries
            .unwrap_or(defaults.limits.max_upstream_queries)
            .max(1),
        query_timeout_ms: s
            .query_timeout_ms
            .unwrap_or(defaults.limits.query_timeout_ms)
            .max(1),
        max_pending_per_client: s
            .max_pending_per_client
            .unwrap_or(defaults.limits.max_pending_per_client)
            .max(1),
        max_outstanding_per_server: s
            .max_outstanding_per_server
            .unwrap_or(defaults.limits.max_outstanding_per_server)
            .max(1),
        discard_after_ms: s
            .discard_timeout_ms
            .unwrap_or(defaults.limits.discard_after_ms),
        ..defaults.limits
    };
    let udp_payload_with_cookie = match &s.udp_payload_with_cookie {
        Some(v) if *v.get_ref() < defaults.udp_payload => {
            problems.push(src.at(
                v.span(),
                format!(
                    "[resolver] udp_payload_with_cookie: must be at least {}",
                    defaults.udp_payload
                ),
            ));
            defaults.udp_payload_with_cookie
        }
        Some(v) => *v.get_ref(),
        None => defaults.udp_payload_with_cookie,
    };
    let engine = ResolverConfig {
        root_hints,
        udp_payload_with_cookie,
        qname_minimisation: s.qname_minimisation.unwrap_or(defaults.qname_minimisation),
        forwards,
        stubs,
        prefetch: s.prefetch.unwrap_or(defaults.prefetch),
        client_cookies: s.client_cookies.unwrap_or(defaults.client_cookies),
        query_localhost: s.query_localhost.unwrap_or(defaults.query_localhost),
        ttl_min: s.ttl_min.unwrap_or(defaults.ttl_min),
        ttl_max: s.ttl_max.unwrap_or(defaults.ttl_max),
        negative_ttl_max: s.negative_ttl_max.unwrap_or(defaults.negative_ttl_max),
        stale,
        cache_bytes,
        limits,
        validation: build_validation(s, base_dir, src, problems),
        ..defaults
    };
    Some(ResolverSettings {
        engine,
        allow_recursion,
        tls_upstreams,
    })
}

/// Forwarder addresses written without a port get DoT's.
fn dot_ports(addrs: &mut [SocketAddr], written: &[Spanned<String>]) {
    for (a, text) in addrs.iter_mut().zip(written) {
        if text.get_ref().trim().parse::<SocketAddr>().is_err() {
            a.set_port(DOT_PORT);
        }
    }
}

/// A `tls = true` forward zone's forwarders with how each proves itself:
/// by `tls_name` under the roots of `tls_ca_file` (or the system's), or by
/// a `tls_pin_sha256` key pin.
fn tls_forwarders(
    f: &ForwardSection,
    zone: &bulwark_proto::Name,
    addrs: &[SocketAddr],
    base_dir: &Path,
    src: &Source<'_>,
    problems: &mut Vec<String>,
) -> Vec<crate::settings::TlsUpstream> {
    let pins = super::tls::pins(f.tls_pin_sha256.as_ref(), src, problems);
    let name = f.tls_name.as_ref().map(|n| n.get_ref().trim().to_string());
    if name.is_none() && f.tls_pin_sha256.is_none() {
        problems.push(src.at(
            f.zone.span(),
            format!(
                "[[resolver.forward]] {zone}: with `tls = true`, give `tls_name` (checked against trusted roots) or `tls_pin_sha256`"
            ),
        ));
        return Vec::new();
    }
    let ca_file = f.tls_ca_file.as_ref().map(|c| base_dir.join(c));
    addrs
        .iter()
        .map(|a| crate::settings::TlsUpstream {
            address: *a,
            name: name.clone(),
            pins: pins.clone(),
            ca_file: ca_file.clone(),
        })
        .collect()
}
