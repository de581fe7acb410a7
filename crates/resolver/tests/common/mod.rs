//! An in-memory internet for the engine: servers by address, each answering
//! from its zones with bulwark's authoritative engine, no sockets, no clock.
//! A test drives the resolver as the edge would: it hands transmits to the
//! servers and their answers back, and counts what was asked.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Transport as AuthTransport};
use bulwark_proto::{MessageView, Name, Rtype};
use bulwark_resolver::{
    Cache, ClientQuestion, ClientToken, ExchangeError, Randomness, Resolution, Resolver,
    ResolverConfig, Transport,
};
use bulwark_zone::{Zone, ZoneSet};

pub fn name(s: &str) -> Name {
    s.parse().unwrap()
}

pub fn zone(origin: &str, text: &str) -> Arc<Zone> {
    let origin = name(origin);
    let records = bulwark_zone::parse_str(text, &origin, "test").unwrap();
    let (zone, _warnings) = Zone::build(origin, records).unwrap();
    Arc::new(zone)
}

/// A deterministic stand-in for the CSPRNG.
pub struct Counter(pub u32);

impl Randomness for Counter {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12345);
        self.0 >> 8
    }
}

/// What a server does with a query.
#[derive(Clone)]
pub enum Behaviour {
    /// Answers from these zones.
    Zones(Arc<ZoneSet>),
    /// Never answers.
    Silent,
    /// Answers with this function of the query.
    Custom(Responder),
}

/// A scripted server: the response to a query's octets, or silence.
pub type Responder = Arc<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync>;

pub struct Net {
    pub servers: HashMap<IpAddr, Behaviour>,
    /// Every query sent: server, name, type, transport.
    pub log: Vec<(IpAddr, Name, Rtype, Transport)>,
    pub answerer: Answerer,
    pub now: u64,
}

impl Net {
    pub fn new() -> Net {
        Net {
            servers: HashMap::new(),
            log: Vec::new(),
            answerer: Answerer::new(Arc::new(AnswerConfig::default())),
            now: 1_700_000_000_000,
        }
    }

    pub fn serve(&mut self, ip: &str, zones: Vec<Arc<Zone>>) {
        self.servers.insert(
            ip.parse().unwrap(),
            Behaviour::Zones(Arc::new(ZoneSet::new(zones))),
        );
    }

    pub fn set(&mut self, ip: &str, b: Behaviour) {
        self.servers.insert(ip.parse().unwrap(), b);
    }

    pub fn answer(
        &mut self,
        to: IpAddr,
        message: &[u8],
        transport: Transport,
    ) -> Result<Vec<u8>, ExchangeError> {
        let view = MessageView::parse(message).unwrap();
        let q = view.question().unwrap();
        self.log.push((to, q.qname.clone(), q.qtype, transport));
        let behaviour = self.servers.get(&to).cloned();
        match behaviour {
            None | Some(Behaviour::Silent) => Err(ExchangeError::Timeout),
            Some(Behaviour::Custom(f)) => f(message).ok_or(ExchangeError::Timeout),
            Some(Behaviour::Zones(zones)) => {
                let mut out = Vec::new();
                let t = match transport {
                    Transport::Udp => AuthTransport::Udp,
                    Transport::Tcp => AuthTransport::Tcp,
                };
                match self.answerer.answer(&zones, t, message, &mut out) {
                    AnswerOutcome::Respond { .. } => Ok(out),
                    _ => Err(ExchangeError::Timeout),
                }
            }
        }
    }

    /// Asks `resolver` `qname`/`qtype` and runs the exchanges until the
    /// answer comes (or nothing is left to do).
    pub fn resolve(&mut self, resolver: &mut Resolver, qname: &str, qtype: Rtype) -> Resolution {
        let token = ClientToken(u64::try_from(self.log.len()).unwrap() + 1_000_000);
        let q = ClientQuestion {
            token,
            client: CLIENT,
            qname: name(qname),
            qtype,
        };
        if let Some(r) = resolver.handle_query(q, self.now) {
            return r;
        }
        for _ in 0..10_000 {
            while let Some(t) = resolver.poll_transmit() {
                self.now += 1;
                let result = self.answer(t.to.ip(), &t.message, t.transport);
                resolver.handle_response(t.id, result, self.now);
            }
            if let Some(a) = resolver.poll_answer() {
                assert_eq!(a.token, token);
                return a.resolution;
            }
            // Nothing in flight and no answer: let time pass to the deadline.
            match resolver.poll_timeout() {
                Some(at) => {
                    self.now = self.now.max(at);
                    resolver.handle_timeout(self.now);
                }
                None => panic!("no answer and nothing to wait for"),
            }
        }
        panic!("the resolution did not end");
    }

    pub fn queries_to(&self, ip: &str) -> usize {
        let ip: IpAddr = ip.parse().unwrap();
        self.log.iter().filter(|(to, ..)| *to == ip).count()
    }

    pub fn asked(&self) -> Vec<String> {
        self.log
            .iter()
            .map(|(ip, n, t, tr)| format!("{ip} {n} {t} {tr:?}"))
            .collect()
    }
}

pub const ROOT_IP: &str = "10.0.0.1";
/// The address the test questions come from.
pub const CLIENT: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 200));

pub fn resolver(net_config: impl FnOnce(&mut ResolverConfig)) -> Resolver {
    let mut config = ResolverConfig {
        root_hints: vec![SocketAddr::new(ROOT_IP.parse().unwrap(), 53)],
        ..ResolverConfig::default()
    };
    net_config(&mut config);
    let cache = Arc::new(Cache::new(&config));
    Resolver::new(config, cache, Box::new(Counter(7)))
}

/// The root zone: `com.` and `net.` delegated with glue.
pub fn root_zone() -> Arc<Zone> {
    zone(
        ".",
        r#"
$TTL 86400
@ SOA a.root. admin.root. 1 1800 900 604800 86400
@ NS a.root.
a.root. A 10.0.0.1
com. NS ns.com.
ns.com. A 10.0.1.1
net. NS ns.net.
ns.net. A 10.0.2.1
org. NS ns.org.
ns.org. A 10.0.5.1
"#,
    )
}

pub fn com_zone() -> Arc<Zone> {
    zone(
        "com.",
        r#"
$TTL 86400
@ SOA ns.com. admin.com. 1 1800 900 604800 3600
@ NS ns.com.
ns A 10.0.1.1
example NS ns1.example.com.
ns1.example A 10.0.3.1
outsourced NS ns.hoster.net.
"#,
    )
}

pub fn net_zone() -> Arc<Zone> {
    zone(
        "net.",
        r#"
$TTL 86400
@ SOA ns.net. admin.net. 1 1800 900 604800 3600
@ NS ns.net.
ns A 10.0.2.1
hoster NS ns.hoster.net.
ns.hoster A 10.0.4.1
"#,
    )
}

pub fn example_zone() -> Arc<Zone> {
    zone(
        "example.com.",
        r#"
$TTL 3600
@ SOA ns1 admin 1 1800 900 604800 300
@ NS ns1
ns1 A 10.0.3.1
www A 192.0.2.80
alias CNAME www.outsourced.com.
a.b.c A 192.0.2.9
old DNAME outsourced.com.
"#,
    )
}

pub fn outsourced_zone() -> Arc<Zone> {
    zone(
        "outsourced.com.",
        r#"
$TTL 3600
@ SOA ns.hoster.net. admin 1 1800 900 604800 300
@ NS ns.hoster.net.
www A 192.0.2.81
"#,
    )
}

pub fn hoster_zone() -> Arc<Zone> {
    zone(
        "hoster.net.",
        r#"
$TTL 3600
@ SOA ns admin 1 1800 900 604800 300
@ NS ns
ns A 10.0.4.1
"#,
    )
}

/// A referral for whatever is asked, to `zone`'s server `ns`, without glue.
pub fn referral_without_glue(zone: &'static str, ns: &'static str) -> Behaviour {
    Behaviour::Custom(Arc::new(move |query: &[u8]| {
        use bulwark_proto::message::{MessageBuilder, Section};
        let view = MessageView::parse(query).ok()?;
        let mut out = Vec::new();
        let mut b = MessageBuilder::response_to(&mut out, 4096, &view).ok()?;
        let target = bulwark_proto::rdata::Rdata::Ns(name(ns)).to_wire();
        b.push_record(
            Section::Authority,
            &name(zone),
            Rtype::NS,
            bulwark_proto::Class::IN,
            3600,
            &target,
        )
        .ok()?;
        let len = b.finish(None).ok()?;
        out.truncate(len);
        Some(out)
    }))
}

/// The internet most tests use.
pub fn internet() -> Net {
    let mut net = Net::new();
    net.serve("10.0.0.1", vec![root_zone()]);
    net.serve("10.0.1.1", vec![com_zone()]);
    net.serve("10.0.2.1", vec![net_zone()]);
    net.serve("10.0.3.1", vec![example_zone()]);
    net.serve("10.0.4.1", vec![outsourced_zone(), hoster_zone()]);
    // org.'s server delegates loop.org. to ns.loop.org., glue missing.
    net.set(
        "10.0.5.1",
        referral_without_glue("loop.org.", "ns.loop.org."),
    );
    net
}

pub fn addresses(r: &Resolution, rtype: Rtype) -> Vec<IpAddr> {
    r.answer
        .iter()
        .filter(|s| s.rtype == rtype)
        .flat_map(|s| s.addresses())
        .collect()
}

pub fn set_of(ips: &[IpAddr]) -> HashSet<IpAddr> {
    ips.iter().copied().collect()
}
