//! The glue between a transport and the answering code: each UDP worker and each
//! TCP connection owns one [`ServerHandler`]. The pipeline per query is the
//! listener ACL, then answering (cookies and zone ACLs are decided inside auth),
//! then response rate limiting over UDP.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use arc_swap::{ArcSwap, Cache};
use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Request, Transport, ZoneAccess};
use bulwark_guard::{Access, Acl, ResponseClass, Rrl, RrlStats, RrlVerdict, ServerCookies};
use bulwark_net::{Batch, Deferred, QueryHandler};
use bulwark_proto::message::padding::{carries_padding, pad_to_block, RESPONSE_BLOCK};
use bulwark_proto::message::{bits, truncate_to_question, write_error_response};
use bulwark_proto::Rcode;
use bulwark_zone::ZoneSet;

use crate::clock::CoarseClock;
use crate::diagnostics::{Event, Reporter};
use crate::query_log::QueryLog;
use crate::recursion::Recursion;
use crate::settings::ZoneAcls;
use crate::stats::{Asked, DropReason, Fate, StatsRegistry, Told, WorkerRecorder};
use crate::tap::{QueryTap, TapSource};
use crate::via::Via;

/// What every handler of the server shares: the defences' state.
#[derive(Debug, Clone)]
pub struct Shared {
    pub config: Arc<AnswerConfig>,
    pub zones: Arc<ArcSwap<ZoneSet>>,
    pub listener_acls: Arc<ListenerAcls>,
    /// Swapped on reload with the zone list.
    pub zone_acls: Arc<ArcSwap<ZoneAcls>>,
    /// `None` when rate limiting is off.
    pub rrl: Option<Arc<Rrl>>,
    /// Swapped by the rotation task; `None` when cookies are off.
    pub cookies: Option<Arc<ArcSwap<ServerCookies>>>,
    pub clock: CoarseClock,
    pub stats: Arc<StatsRegistry>,
    /// `None` when dnstap is off.
    pub dnstap: Option<Arc<TapSource>>,
    /// `[log] queries`.
    pub query_log: bool,
    /// Signed queries, NOTIFY, transfers and updates.
    pub replication: crate::replication::serve::ReplicationShared,
    /// Where per-packet events are counted and, a few a second, logged.
    pub reporter: Arc<Reporter>,
    /// `None` when `[resolver]` is absent: authoritative only.
    pub recursion: Option<Recursion>,
}

/// The ACL each listener applies before parsing.
#[derive(Debug, Clone, Default)]
pub struct ListenerAcls {
    /// For listeners not named below; `None` allows everyone.
    pub all: Option<Arc<Acl>>,
    /// Bound addresses with their own ACL; usually empty, so no search.
    pub by_address: Vec<(SocketAddr, Arc<Acl>)>,
}

impl ListenerAcls {
    pub fn for_listener(&self, local: SocketAddr) -> Option<&Acl> {
        self.by_address
            .iter()
            .find(|(a, _)| *a == local)
            .map(|(_, acl)| &**acl)
            .or(self.all.as_deref())
    }
}

pub struct ServerHandler {
    answerer: Answerer,
    /// Sees a swapped-in ZoneSet on the next query; until then it costs one
    /// atomic load per query, no reference-count traffic.
    zones: Cache<Arc<ArcSwap<ZoneSet>>, Arc<ZoneSet>>,
    zone_acls: Cache<Arc<ArcSwap<ZoneAcls>>, Arc<ZoneAcls>>,
    cookies: Option<Cache<Arc<ArcSwap<ServerCookies>>, Arc<ServerCookies>>>,
    listener_acls: Arc<ListenerAcls>,
    rrl: Option<Arc<Rrl>>,
    /// Rate-limiting verdicts of the batch being answered, added to the
    /// shared counters when it ends.
    rrl_tally: RrlStats,
    clock: CoarseClock,
    via: Via,
    /// `via.transport()`, what the answering code is told.
    transport: Transport,
    stats: WorkerRecorder,
    tap: QueryTap,
    query_log: QueryLog,
    replication: crate::replication::serve::ReplicationShared,
    reporter: Arc<Reporter>,
    recursion: Option<Recursion>,
    /// The last query was recursed for (dnstap logs it as a client's).
    recursed: bool,
    /// A response to be finished later, taken by the transport.
    deferred: Option<Deferred>,
    /// A resolution's answer: one message, which responses to later queries
    /// may overtake (RFC 7766 §6.2.1.1).
    deferred_reply: Option<Deferred>,
}

impl ServerHandler {
    pub fn new(shared: &Shared, via: Via) -> ServerHandler {
        ServerHandler {
            answerer: Answerer::new(Arc::clone(&shared.config)),
            zones: Cache::new(Arc::clone(&shared.zones)),
            zone_acls: Cache::new(Arc::clone(&shared.zone_acls)),
            cookies: shared.cookies.as_ref().map(|c| Cache::new(Arc::clone(c))),
            listener_acls: Arc::clone(&shared.listener_acls),
            rrl: shared.rrl.clone(),
            rrl_tally: RrlStats::default(),
            clock: shared.clock.clone(),
            via,
            transport: via.transport(),
            stats: shared.stats.recorder(via),
            tap: QueryTap::new(shared.dnstap.as_ref(), via),
            query_log: QueryLog::new(shared.query_log, via),
            replication: shared.replication.clone(),
            reporter: Arc::clone(&shared.reporter),
            recursion: shared.recursion.clone(),
            recursed: false,
            deferred: None,
            deferred_reply: None,
        }
    }

    /// Replays remembered responses to repeated questions (a UDP worker's
    /// handler; see `bulwark_auth::Answerer::with_response_cache`).
    pub fn with_response_cache(mut self, slots: usize) -> ServerHandler {
        self.answerer = self.answerer.with_response_cache(slots);
        self
    }
}

impl std::fmt::Debug for ServerHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandler")
            .field("via", &self.via)
            .field("deferred", &self.deferred.is_some())
            .finish_non_exhaustive()
    }
}

/// An IPv4 client reaching an IPv6 socket is still an IPv4 client for ACLs and
/// rate-limit networks.
fn client_ip(peer: SocketAddr) -> IpAddr {
    peer.ip().to_canonical()
}

impl QueryHandler for ServerHandler {
    fn handle(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> bool {
        let started = self.stats.start();
        let Decided { fate, asked, said } = self.decide(query, peer, local, out);
        if fate.sent() && self.via.is_encrypted() && carries_padding(query) {
            // RFC 7830 §4 with RFC 8467 §4.1's block length.
            pad_to_block(out, RESPONSE_BLOCK, usize::from(u16::MAX));
        }
        let response = fate.sent().then_some(out.as_slice());
        let told = response.map(|r| Told {
            rcode: said.rcode,
            truncated: said.truncated || fate == Fate::Slipped,
            size: r.len(),
        });
        self.stats.record(asked, told, fate, started);
        if self.recursed {
            self.tap.client(peer, local, query, response);
        } else {
            self.tap.auth(peer, local, query, response);
        }
        if self.query_log.is_on() {
            self.query_log.log(peer, query, told);
        }
        fate.sent()
    }

    fn start_of_batch(&mut self, batch: &dyn Batch) {
        let cookies_on = self.cookies.is_some();
        let queries = (0..batch.len()).filter_map(|i| batch.query(i));
        self.answerer
            .prefetch_batch(queries, self.transport, cookies_on);
    }

    fn end_of_batch(&mut self) {
        self.answerer.end_of_batch();
        if let Some(rrl) = self.rrl.as_deref() {
            rrl.add_tally(&mut self.rrl_tally);
        }
        self.tap.flush();
    }

    fn take_deferred(&mut self) -> Option<Deferred> {
        self.deferred.take()
    }

    fn take_deferred_reply(&mut self) -> Option<Deferred> {
        self.deferred_reply.take()
    }
}

/// What the pipeline made of one query: what becomes of it, what it asked
/// and what the response says (read once, where they were decided).
struct Decided {
    fate: Fate,
    asked: Asked,
    said: Said,
}

/// The rcode and TC of the response in `out`, as the step that wrote it knew
/// them (before rate limiting's slip).
#[derive(Debug, Clone, Copy)]
struct Said {
    rcode: Rcode,
    truncated: bool,
}

impl Said {
    const NOTHING: Said = Said {
        rcode: Rcode::NOERROR,
        truncated: false,
    };
}

impl ServerHandler {
    /// The pipeline proper: listener ACL, answering, rate limiting.
    fn decide(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> Decided {
        let refused = |fate, said| Decided {
            fate,
            asked: Asked::peek(query),
            said,
        };
        let client = client_ip(peer);
        self.recursed = false;
        // Only UDP is limited: a TCP client has proved its address.
        let rrl = self
            .rrl
            .as_deref()
            .filter(|_| self.transport == Transport::Udp);
        let now = self.clock.now();
        // Denied clients cost no parsing beyond the header.
        if let Some(acl) = self.listener_acls.for_listener(local) {
            match acl.check(client) {
                Access::Allow => {}
                Access::Refuse => {
                    self.reporter
                        .report(Event::AclDenied, client, "listener ACL: REFUSED");
                    out.clear();
                    // RFC 1035 §4.1.1: never answer a response (QR set), or two
                    // servers could bounce REFUSED between them.
                    if bits::is_response(query).is_none_or(|qr| qr)
                        || write_error_response(query, Rcode::REFUSED, out).is_none()
                    {
                        return refused(Fate::Dropped(DropReason::Unanswerable), Said::NOTHING);
                    }
                    // A refusal is an error response like any other: a spoofed
                    // flood of denied queries is rate-limited too.
                    let judged = (ResponseClass::Error, &[][..]);
                    let fate = rate_limit(rrl, &mut self.rrl_tally, client, judged, now, out);
                    let said = Said {
                        rcode: Rcode::REFUSED,
                        truncated: false,
                    };
                    return refused(fate, said);
                }
                Access::Drop => {
                    self.reporter
                        .report(Event::AclDenied, client, "listener ACL: dropped");
                    return refused(Fate::Dropped(DropReason::Acl), Said::NOTHING);
                }
            }
        }
        let zones = self.zones.load();
        let zone_acls = self.zone_acls.load();
        let zone_access: Option<&dyn ZoneAccess> = if zone_acls.is_empty() {
            None
        } else {
            Some(&**zone_acls)
        };
        let cookies = self.cookies.as_mut().map(|c| &**c.load());
        let request = Request {
            transport: self.transport,
            client,
            now,
            cookies,
            zone_access,
            recursion: self
                .recursion
                .as_ref()
                .map_or(bulwark_auth::Recursion::Off, |r| r.offer(client, local)),
        };
        let outcome = self.answerer.answer_request(zones, &request, query, out);
        let said = match outcome {
            AnswerOutcome::Respond { rcode, truncated } => {
                if rcode == Rcode::FORMERR {
                    self.reporter.report(Event::Malformed, client, "FORMERR");
                } else if rcode == Rcode::BADCOOKIE {
                    self.reporter
                        .report(Event::CookieRejected, client, "BADCOOKIE");
                }
                Said { rcode, truncated }
            }
            AnswerOutcome::Denied => {
                self.reporter
                    .report(Event::AclDenied, client, "zone ACL: dropped");
                return self.decided(Fate::Dropped(DropReason::Acl), Said::NOTHING);
            }
            AnswerOutcome::Drop => {
                self.reporter.report(
                    Event::Malformed,
                    client,
                    "dropped: shorter than a header, or a response",
                );
                return self.decided(Fate::Dropped(DropReason::Unanswerable), Said::NOTHING);
            }
            AnswerOutcome::Divert(divert, message) => {
                use crate::replication::serve::{handle, Diverted};
                let diverted = handle(
                    &self.replication,
                    &mut self.answerer,
                    zones,
                    &request,
                    divert,
                    &message,
                    out,
                );
                let asked = self.answerer.asked();
                let (fate, said) = match diverted {
                    // A signature that verified proves the client holds
                    // the key, so its answers are not limited.
                    Diverted::Respond {
                        verified: true,
                        rcode,
                        truncated,
                    } => (Fate::Answered, Said { rcode, truncated }),
                    // Anyone can send an unsigned NOTIFY or transfer
                    // request, or a bad signature, from a spoofed address:
                    // those answers are rate-limited like any other.
                    Diverted::Respond {
                        verified: false,
                        rcode,
                        truncated,
                    } => {
                        let class = if rcode == Rcode::NOERROR {
                            ResponseClass::Positive
                        } else {
                            ResponseClass::Error
                        };
                        let fate =
                            rate_limit(rrl, &mut self.rrl_tally, client, (class, &[]), now, out);
                        (fate, Said { rcode, truncated })
                    }
                    Diverted::Drop => (Fate::Dropped(DropReason::Unanswerable), Said::NOTHING),
                    Diverted::Later(job) => {
                        self.deferred = Some(job);
                        (Fate::Deferred, Said::NOTHING)
                    }
                };
                return Decided { fate, asked, said };
            }
            AnswerOutcome::Recurse(request) => {
                let Some(recursion) = self.recursion.as_ref() else {
                    return self.decided(Fate::Dropped(DropReason::Unanswerable), Said::NOTHING);
                };
                self.recursed = true;
                if let Some(a) = recursion.answer_from_cache(&request, out) {
                    let said = Said {
                        rcode: a.rcode,
                        truncated: a.truncated,
                    };
                    // As for an authoritative answer: a valid cookie proves
                    // the address, anything else is rate-limited.
                    if rrl.is_none() || request.cookie_valid {
                        return self.decided(Fate::Answered, said);
                    }
                    let qname = request
                        .query
                        .sole_question_wire()
                        .map_or(&[][..], |q| q.qname);
                    let judged = (
                        a.class,
                        a.imputed
                            .as_ref()
                            .map_or(qname, bulwark_proto::Name::as_wire),
                    );
                    let fate = rate_limit(rrl, &mut self.rrl_tally, client, judged, now, out);
                    return self.decided(fate, said);
                }
                let client = crate::recursion::Client {
                    peer,
                    local,
                    via: self.via,
                    padded: self.via.is_encrypted() && carries_padding(query),
                };
                return match recursion.defer(&request, client) {
                    Some(job) => {
                        self.deferred_reply = Some(job);
                        self.decided(Fate::Deferred, Said::NOTHING)
                    }
                    None => self.decided(Fate::Dropped(DropReason::Unanswerable), Said::NOTHING),
                };
            }
        };
        // RFC 7873 §5.2.4: a valid server cookie proves the source address, so
        // the response cannot be a reflection and is not limited.
        if rrl.is_none() || self.answerer.cookie_valid() {
            return self.decided(Fate::Answered, said);
        }
        let judged = self.answerer.rrl_key();
        let fate = rate_limit(rrl, &mut self.rrl_tally, client, judged, now, out);
        self.decided(fate, said)
    }

    /// What became of a query the answerer read.
    fn decided(&self, fate: Fate, said: Said) -> Decided {
        Decided {
            fate,
            asked: self.answerer.asked(),
            said,
        }
    }
}

/// Applies response rate limiting to the response in `out`: whether to send it.
fn rate_limit(
    rrl: Option<&Rrl>,
    tally: &mut RrlStats,
    client: IpAddr,
    (class, name): (ResponseClass, &[u8]),
    now: u64,
    out: &mut Vec<u8>,
) -> Fate {
    let Some(rrl) = rrl else {
        return Fate::Answered;
    };
    match rrl.check_tallied(client, class, name, now, tally) {
        RrlVerdict::Pass => Fate::Answered,
        RrlVerdict::Drop => Fate::Dropped(DropReason::RateLimited),
        // Every Nth limited response goes out truncated so a real client
        // behind the limited network retries over TCP and gets its answer.
        RrlVerdict::Slip => {
            if truncate_to_question(out) {
                Fate::Slipped
            } else {
                Fate::Dropped(DropReason::RateLimited)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn listener_with_its_own_acl_overrides_the_server_acl() {
        let own = Arc::new(Acl::new(Vec::new(), Access::Drop));
        let all = Arc::new(Acl::new(Vec::new(), Access::Refuse));
        let here: SocketAddr = "127.0.0.2:53".parse().unwrap();
        let acls = ListenerAcls {
            all: Some(all),
            by_address: vec![(here, own)],
        };
        let client = "192.0.2.1".parse().unwrap();
        let check = |at: &str| {
            acls.for_listener(at.parse().unwrap())
                .map(|a| a.check(client))
        };
        assert_eq!(check("127.0.0.2:53"), Some(Access::Drop));
        assert_eq!(check("127.0.0.1:53"), Some(Access::Refuse));
        assert_eq!(
            ListenerAcls::default()
                .for_listener(here)
                .map(|a| a.check(client)),
            None
        );
    }

    #[test]
    fn ipv4_mapped_clients_count_as_ipv4() {
        let peer: SocketAddr = "[::ffff:192.0.2.1]:5353".parse().unwrap();
        assert_eq!(client_ip(peer), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    /// A server handler for `test.` (one A record), with `key` in its keyring.
    fn handler_with_key(
        dir: &std::path::Path,
        key: bulwark_xfr::tsig::TsigKey,
        runtime: &tokio::runtime::Runtime,
    ) -> ServerHandler {
        let zone = dir.join("test.zone");
        std::fs::write(
            &zone,
            "$ORIGIN test.\n$TTL 60\n@ SOA ns h 1 60 60 60 60\n@ NS ns\nns A 192.0.2.1\n",
        )
        .unwrap();
        let zones = Arc::new(crate::zones::Zones::new(None));
        let origin = "test.".parse::<bulwark_proto::Name>().unwrap();
        zones.load(&[crate::settings::ZoneSpec::from_file(origin, zone)]);
        let mut keyring = bulwark_xfr::tsig::KeyRing::new();
        keyring.insert(key);
        let clock = CoarseClock::new();
        let reporter = Arc::new(Reporter::new(clock.clone()));
        let shared = Shared {
            config: Arc::new(AnswerConfig::default()),
            zones: zones.snapshot(),
            listener_acls: Arc::new(ListenerAcls::default()),
            zone_acls: Arc::new(ArcSwap::from_pointee(ZoneAcls::default())),
            rrl: None,
            cookies: None,
            clock,
            stats: StatsRegistry::new(&crate::settings::StatsSettings { enabled: true }),
            dnstap: None,
            query_log: false,
            replication: crate::replication::serve::ReplicationShared {
                zones,
                keyring: Arc::new(ArcSwap::from_pointee(keyring)),
                secondaries: Arc::default(),
                runtime: runtime.handle().clone(),
                reporter: Arc::clone(&reporter),
            },
            reporter,
            recursion: None,
        };
        ServerHandler::new(&shared, Via::Udp)
    }

    #[test]
    fn a_signed_query_is_parsed_once_on_its_way_through_the_server() {
        use bulwark_xfr::tsig::{sign_request, ResponseVerifier, TsigAlgorithm, TsigKey};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let name = "key.".parse::<bulwark_proto::Name>().unwrap();
        let key = TsigKey::new(name, TsigAlgorithm::HmacSha256, vec![7; 32]);
        let mut handler = handler_with_key(dir.path(), key.clone(), &runtime);
        // `ns.test. A` with EDNS, signed.
        let mut query = vec![0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        query.extend_from_slice(b"\x02ns\x04test\x00\x00\x01\x00\x01");
        query.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]);
        let now = crate::signing::unix_now();
        let mac = sign_request(&mut query, &key, now, 300).unwrap();
        let peer: SocketAddr = "192.0.2.9:5353".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:53".parse().unwrap();
        let mut out = Vec::new();
        let before = bulwark_proto::message::parse_count::parses();
        assert!(handler.handle(&query, peer, local, &mut out));
        let parses = bulwark_proto::message::parse_count::parses() - before;
        // The answer is the real one, signed: the query went the whole way.
        let view = bulwark_proto::MessageView::parse(&out).unwrap();
        assert_eq!(view.rcode(), Rcode::NOERROR);
        assert_eq!(view.answers().count(), 1);
        ResponseVerifier::new(&key, &mac).verify(&out, now).unwrap();
        assert_eq!(parses, 1, "the signed query was read {parses} times");
    }
}
