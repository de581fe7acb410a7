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
use bulwark_proto::message::{write_error_response, Header};
use bulwark_proto::Rcode;
use bulwark_zone::ZoneSet;

use crate::clock::CoarseClock;
use crate::defences::ZoneAcls;
use crate::diagnostics::{Event, Reporter};
use crate::query_log::QueryLog;
use crate::slip::truncate_in_place;
use crate::stats::{DropReason, Fate, StatsRegistry, WorkerRecorder};
use crate::tap::{QueryTap, TapSource};

/// Header octet 2: QR (RFC 1035 §4.1.1).
const QR_BIT: u8 = 0x80;

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
    transport: Transport,
    stats: WorkerRecorder,
    tap: QueryTap,
    query_log: QueryLog,
    replication: crate::replication::serve::ReplicationShared,
    reporter: Arc<Reporter>,
    /// A response to be finished later, taken by the transport.
    deferred: Option<Deferred>,
}

impl ServerHandler {
    pub fn new(shared: &Shared, transport: Transport) -> ServerHandler {
        ServerHandler {
            answerer: Answerer::new(Arc::clone(&shared.config)),
            zones: Cache::new(Arc::clone(&shared.zones)),
            zone_acls: Cache::new(Arc::clone(&shared.zone_acls)),
            cookies: shared.cookies.as_ref().map(|c| Cache::new(Arc::clone(c))),
            listener_acls: Arc::clone(&shared.listener_acls),
            rrl: shared.rrl.clone(),
            rrl_tally: RrlStats::default(),
            clock: shared.clock.clone(),
            transport,
            stats: shared.stats.recorder(transport),
            tap: QueryTap::new(shared.dnstap.as_ref(), transport),
            query_log: QueryLog::new(shared.query_log, transport),
            replication: shared.replication.clone(),
            reporter: Arc::clone(&shared.reporter),
            deferred: None,
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
            .field("transport", &self.transport)
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
        let fate = self.decide(query, peer, local, out);
        let response = fate.sent().then_some(out.as_slice());
        self.stats.record(query, response, fate, started);
        self.tap.auth(peer, local, query, response);
        if self.query_log.is_on() {
            self.query_log.log(peer, query, response);
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
}

impl ServerHandler {
    /// The pipeline proper: listener ACL, answering, rate limiting.
    fn decide(
        &mut self,
        query: &[u8],
        peer: SocketAddr,
        local: SocketAddr,
        out: &mut Vec<u8>,
    ) -> Fate {
        let client = client_ip(peer);
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
                    if query.get(2).is_none_or(|b| b & QR_BIT != 0)
                        || write_error_response(query, Rcode::REFUSED, out).is_none()
                    {
                        return Fate::Dropped(DropReason::Unanswerable);
                    }
                    // A refusal is an error response like any other: a spoofed
                    // flood of denied queries is rate-limited too.
                    let judged = (ResponseClass::Error, &[][..]);
                    return rate_limit(rrl, &mut self.rrl_tally, client, judged, now, out);
                }
                Access::Drop => {
                    self.reporter
                        .report(Event::AclDenied, client, "listener ACL: dropped");
                    return Fate::Dropped(DropReason::Acl);
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
        };
        match self.answerer.answer_request(zones, &request, query, out) {
            AnswerOutcome::Respond { rcode, .. } => {
                if rcode == Rcode::FORMERR {
                    self.reporter.report(Event::Malformed, client, "FORMERR");
                } else if rcode == Rcode::BADCOOKIE {
                    self.reporter
                        .report(Event::CookieRejected, client, "BADCOOKIE");
                }
            }
            AnswerOutcome::Denied => {
                self.reporter
                    .report(Event::AclDenied, client, "zone ACL: dropped");
                return Fate::Dropped(DropReason::Acl);
            }
            AnswerOutcome::Drop => {
                self.reporter.report(
                    Event::Malformed,
                    client,
                    "dropped: shorter than a header, or a response",
                );
                return Fate::Dropped(DropReason::Unanswerable);
            }
            AnswerOutcome::Divert(divert) => {
                use crate::replication::serve::{handle, Diverted};
                return match handle(
                    &self.replication,
                    &mut self.answerer,
                    zones,
                    &request,
                    divert,
                    query,
                    out,
                ) {
                    // A signature that verified proves the client holds
                    // the key, so its answers are not limited.
                    Diverted::Respond { verified: true } => Fate::Answered,
                    // Anyone can send an unsigned NOTIFY or transfer
                    // request, or a bad signature, from a spoofed address:
                    // those answers are rate-limited like any other.
                    Diverted::Respond { verified: false } => {
                        let class = if response_rcode(out) == Rcode::NOERROR {
                            ResponseClass::Positive
                        } else {
                            ResponseClass::Error
                        };
                        rate_limit(rrl, &mut self.rrl_tally, client, (class, &[]), now, out)
                    }
                    Diverted::Drop => Fate::Dropped(DropReason::Unanswerable),
                    Diverted::Later(job) => {
                        self.deferred = Some(job);
                        Fate::Deferred
                    }
                };
            }
        }
        // RFC 7873 §5.2.4: a valid server cookie proves the source address, so
        // the response cannot be a reflection and is not limited.
        if rrl.is_none() || self.answerer.cookie_valid() {
            return Fate::Answered;
        }
        let judged = self.answerer.rrl_key();
        rate_limit(rrl, &mut self.rrl_tally, client, judged, now, out)
    }
}

/// The header rcode of a response (the extended bits need its OPT, and no
/// error that matters here has any).
fn response_rcode(response: &[u8]) -> Rcode {
    Header::parse(response).map_or(Rcode::NOERROR, |h| Rcode::new(u16::from(h.rcode_low)))
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
            if truncate_in_place(out) {
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
}
