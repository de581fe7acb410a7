//! The engine: client questions in, queries to servers out, answers back.
//!
//! Each question being resolved is a task (`task.rs`); identical questions
//! share one task (a thousand clients asking the same name cost one
//! resolution). A task may wait on other tasks: the addresses of the name
//! servers it must ask. What a client question may cost is bounded by its
//! budget (queries sent, referrals followed, name server names looked up,
//! how deep the lookups nest), which its lookups share.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bulwark_proto::{Name, Rtype};

use crate::cache::Cache;
use crate::config::ResolverConfig;
use crate::infra::Infra;
use crate::response::Resolution;
use crate::task::{Budget, Task, TaskId};
use crate::upstream::Query;
use crate::Millis;

/// The edge's handle for a client waiting for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientToken(pub u64);

/// One query sent to a server, named so its outcome comes back to the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExchangeId(pub u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// A query for the edge to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub id: ExchangeId,
    pub to: SocketAddr,
    pub message: Vec<u8>,
    pub transport: Transport,
    /// How long to wait for the answer before reporting a time-out.
    pub timeout_ms: u64,
    /// To a forwarder (RD set), not an authoritative server: dnstap logs
    /// it as FORWARDER_QUERY rather than RESOLVER_QUERY.
    pub forwarded: bool,
}

/// Why an exchange brought no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeError {
    Timeout,
    /// The server could not be reached (ICMP unreachable, connection refused).
    Unreachable,
}

/// A client's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientQuestion {
    pub token: ClientToken,
    /// Who asked: one address may have only so many questions waiting.
    pub client: IpAddr,
    pub qname: Name,
    pub qtype: Rtype,
}

/// A client's answer, ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub token: ClientToken,
    pub resolution: Resolution,
    /// The client waited past `discard_after_ms`: forget it, send nothing.
    pub discard: bool,
}

/// Unpredictable numbers for query IDs (RFC 5452) and for spreading load
/// over servers. The edge backs it with the OS CSPRNG.
pub trait Randomness: Send {
    fn next_u32(&mut self) -> u32;
}

/// A query in flight.
#[derive(Debug, Clone)]
pub(crate) struct Outstanding {
    pub task: TaskId,
    pub server: IpAddr,
    pub query: Query,
    /// The query's ID: the response must carry it (RFC 5452 §4.3).
    pub qid: u16,
    /// The client cookie sent, when one was.
    pub cookie: Option<[u8; 8]>,
    pub transport: Transport,
    pub sent_at: Millis,
}

/// Counters for metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResolverStats {
    pub questions: u64,
    pub answered_from_cache: u64,
    pub coalesced: u64,
    pub upstream_queries: u64,
    pub upstream_timeouts: u64,
    pub servfail: u64,
    pub budget_exhausted: u64,
    pub stale_served: u64,
    /// Questions refused because their client had too many waiting.
    pub client_limited: u64,
    /// Responses dropped: wrong ID, no QR, or a client cookie not ours.
    pub forged: u64,
    /// Background refreshes of entries near expiry.
    pub prefetches: u64,
    /// Answers not sent: the client had waited too long (DNSBomb).
    pub discarded: u64,
    /// NXDOMAIN and NODATA answers made from cached NSEC spans (RFC 8198).
    pub aggressive_answers: u64,
    /// Resolutions validated, by verdict (RFC 4033 §5): secure, insecure,
    /// bogus, and those whose chain could not be walked.
    pub secure: u64,
    pub insecure: u64,
    pub bogus: u64,
    pub indeterminate: u64,
    /// Signatures checked (a cryptographic verification each; those a
    /// verdict already held for are not counted).
    pub signature_checks: u64,
}

pub struct Resolver {
    pub(crate) config: ResolverConfig,
    pub(crate) cache: Arc<Cache>,
    pub(crate) infra: Infra,
    pub(crate) tasks: HashMap<TaskId, Task>,
    pub(crate) by_question: HashMap<(Name, Rtype), TaskId>,
    pub(crate) budgets: HashMap<u64, Budget>,
    pub(crate) exchanges: HashMap<ExchangeId, Outstanding>,
    pub(crate) transmits: VecDeque<Transmit>,
    answers: VecDeque<Answer>,
    /// Tasks to advance before returning to the edge.
    pub(crate) ready: VecDeque<TaskId>,
    next_task: u64,
    next_exchange: u64,
    next_budget: u64,
    pub(crate) random: Box<dyn Randomness>,
    pub(crate) stats: ResolverStats,
    /// Client questions waiting.
    pending_clients: usize,
    /// Questions waiting per client address, and whose each token is.
    per_client: HashMap<IpAddr, usize>,
    /// Each waiting client's address and when it asked.
    client_of: HashMap<ClientToken, (IpAddr, Millis)>,
    /// The time of the latest event, for telling late answers.
    now: Millis,
    /// Queries in flight per server address.
    pub(crate) in_flight: HashMap<IpAddr, usize>,
    /// The key our client cookies are made with (RFC 7873 §4.1).
    cookie_secret: [u8; 16],
    /// When tasks' deadlines and serve-stale timers fall, soonest first. An
    /// entry may be out of date (the task ended, or its timer was cleared):
    /// it is checked against the task when it comes up. Finding the next
    /// wake-up must not cost a walk over every task in flight: it is asked
    /// after every event.
    timers: BinaryHeap<Reverse<(Millis, TaskId)>>,
    /// What validation knows of each zone's keys.
    pub(crate) keys: HashMap<Name, crate::validator::KeyEntry>,
    /// Which server answered each DNSKEY and DS question last (the DS from
    /// a referral too), and as a server of which zone: a zone whose keys
    /// prove bogus is asked again elsewhere.
    pub(crate) origins: HashMap<(Name, Rtype), (IpAddr, Name)>,
    /// The zones whose keys the current judgement found bogus.
    pub(crate) bogus_zones: Vec<Name>,
    /// Secure denials' NSEC spans, answering what they cover (RFC 8198).
    pub(crate) aggressive: crate::aggressive::Aggressive,
    /// The trust anchors RFC 5011 keeps up to date.
    pub(crate) managed: Vec<crate::anchor_upkeep::Managed>,
    /// RRsets whose signatures held, not checked again while that lasts.
    pub(crate) sig_memo: crate::validator::SignatureMemo,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("tasks", &self.tasks.len())
            .field("exchanges", &self.exchanges.len())
            .finish_non_exhaustive()
    }
}

impl Resolver {
    pub fn new(
        config: ResolverConfig,
        cache: Arc<Cache>,
        mut random: Box<dyn Randomness>,
    ) -> Resolver {
        let mut cookie_secret = [0u8; 16];
        for chunk in cookie_secret.chunks_mut(4) {
            chunk.copy_from_slice(&random.next_u32().to_be_bytes());
        }
        let cache_bytes = config.cache_bytes;
        let managed = config
            .validation
            .as_ref()
            .map(|v| crate::anchor_upkeep::managed_from(&v.anchors))
            .unwrap_or_default();
        Resolver {
            managed,
            config,
            cache,
            infra: Infra::new(),
            tasks: HashMap::new(),
            by_question: HashMap::new(),
            budgets: HashMap::new(),
            exchanges: HashMap::new(),
            transmits: VecDeque::new(),
            answers: VecDeque::new(),
            ready: VecDeque::new(),
            next_task: 1,
            next_exchange: 1,
            next_budget: 1,
            random,
            stats: ResolverStats::default(),
            pending_clients: 0,
            per_client: HashMap::new(),
            client_of: HashMap::new(),
            now: 0,
            in_flight: HashMap::new(),
            cookie_secret,
            timers: BinaryHeap::new(),
            keys: HashMap::new(),
            origins: HashMap::new(),
            bogus_zones: Vec::new(),
            aggressive: crate::aggressive::Aggressive::new(cache_bytes),
            sig_memo: crate::validator::SignatureMemo::default(),
        }
    }

    /// Our client cookie for `server`: HMAC-SHA-256 of its address under a
    /// secret of ours, cut to 8 octets (RFC 7873 §4.1, RFC 9018 appendix
    /// A): the same for every query to one server, different per server
    /// and unguessable.
    pub(crate) fn client_cookie(&self, server: IpAddr) -> [u8; 8] {
        let mut mac = bulwark_crypto::HmacContext::new(
            bulwark_crypto::HmacAlgorithm::Sha256,
            &self.cookie_secret,
        );
        match server {
            IpAddr::V4(v4) => mac.update(&v4.octets()),
            IpAddr::V6(v6) => mac.update(&v6.octets()),
        }
        let tag = mac.finish();
        let mut cookie = [0u8; 8];
        if let Some(head) = tag.get(..8) {
            cookie.copy_from_slice(head);
        }
        cookie
    }

    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    pub fn config(&self) -> &ResolverConfig {
        &self.config
    }

    pub fn stats(&self) -> ResolverStats {
        self.stats
    }

    /// A client's question. The answer comes at once when the cache has it;
    /// otherwise later, from [`Resolver::poll_answer`].
    pub fn handle_query(&mut self, q: ClientQuestion, now: Millis) -> Option<Resolution> {
        self.apply_flushes();
        self.stats.questions = self.stats.questions.saturating_add(1);
        if let Some(r) = self.cache.answer(&q.qname, q.qtype, now, false) {
            self.stats.answered_from_cache = self.stats.answered_from_cache.saturating_add(1);
            if r.refresh_due && self.config.prefetch {
                self.prefetch(&q.qname, q.qtype, now);
            }
            return Some(r);
        }
        if self.config.validation.is_some() && !self.cache.negative_anchors().covers(&q.qname, now)
        {
            // A wildcard's CNAME made for the name is for a task to follow.
            let whole = |r: &Resolution| {
                q.qtype == Rtype::CNAME || r.answer.iter().all(|s| s.rtype != Rtype::CNAME)
            };
            if let Some(r) = self.aggressive.answer(&q.qname, q.qtype, now).filter(whole) {
                self.stats.aggressive_answers = self.stats.aggressive_answers.saturating_add(1);
                return Some(r);
            }
        }
        let waiting = self.per_client.get(&q.client).copied().unwrap_or(0);
        if waiting >= self.config.limits.max_pending_per_client {
            self.stats.client_limited = self.stats.client_limited.saturating_add(1);
            self.stats.servfail = self.stats.servfail.saturating_add(1);
            return Some(Resolution::failure(
                crate::ede::OTHER,
                "too many questions from this client being resolved",
            ));
        }
        let key = (q.qname.to_lowercase(), q.qtype);
        if let Some(id) = self.by_question.get(&key).copied() {
            if let Some(task) = self.tasks.get_mut(&id) {
                task.clients.push(q.token);
                self.stats.coalesced = self.stats.coalesced.saturating_add(1);
                self.waits(q.token, q.client, now);
                return None;
            }
        }
        if self.pending_clients >= self.config.limits.max_pending {
            self.stats.servfail = self.stats.servfail.saturating_add(1);
            return Some(Resolution::failure(
                crate::ede::OTHER,
                "too many questions being resolved",
            ));
        }
        let budget = self.new_budget();
        let id = self.new_task(q.qname, q.qtype, budget, 0, Vec::new(), now);
        if let Some(task) = self.tasks.get_mut(&id) {
            task.clients.push(q.token);
            task.stale_at = self
                .config
                .stale
                .map(|s| now.saturating_add(s.client_timeout_ms));
            if let Some(at) = task.stale_at {
                self.timers.push(Reverse((at, id)));
            }
            self.waits(q.token, q.client, now);
        }
        self.ready.push_back(id);
        self.run(now);
        None
    }

    /// Refreshes `qname`/`qtype` in the background, no client waiting: a
    /// cache entry near expiry that a client asked for (prefetch). Nothing
    /// is done when it is being resolved already or the resolver is busy.
    pub fn prefetch(&mut self, qname: &Name, qtype: Rtype, now: Millis) {
        self.apply_flushes();
        let key = (qname.to_lowercase(), qtype);
        if self.by_question.contains_key(&key) || self.tasks.len() >= self.config.limits.max_pending
        {
            return;
        }
        self.stats.prefetches = self.stats.prefetches.saturating_add(1);
        let budget = self.new_budget();
        let id = self.new_task(qname.clone(), qtype, budget, 0, Vec::new(), now);
        if let Some(task) = self.tasks.get_mut(&id) {
            task.refresh = true;
        }
        self.ready.push_back(id);
        self.run(now);
    }

    /// `token`, from `client`, now waits for an answer.
    fn waits(&mut self, token: ClientToken, client: IpAddr, now: Millis) {
        self.pending_clients = self.pending_clients.saturating_add(1);
        let n = self.per_client.entry(client).or_insert(0);
        *n = n.saturating_add(1);
        self.client_of.insert(token, (client, now));
    }

    /// The outcome of exchange `id`: the response's octets, or why none came.
    pub fn handle_response(
        &mut self,
        id: ExchangeId,
        result: Result<Vec<u8>, ExchangeError>,
        now: Millis,
    ) {
        self.apply_flushes();
        let Some(out) = self.exchanges.remove(&id) else {
            return;
        };
        if let Some(n) = self.in_flight.get_mut(&out.server) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.in_flight.remove(&out.server);
            }
        }
        self.on_response(out, result, now);
        self.run(now);
    }

    /// Time passed: tasks past their deadline give up, and clients waiting
    /// past serve-stale's client time-out get stale data if there is some.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.apply_flushes();
        let mut late: Vec<TaskId> = Vec::new();
        let mut stale: Vec<TaskId> = Vec::new();
        while let Some(&Reverse((at, id))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(t) = self.tasks.get(&id) else {
                continue;
            };
            if t.deadline <= now {
                late.push(id);
            } else if t.stale_at.is_some_and(|s| s <= now) {
                stale.push(id);
            }
        }
        for id in late {
            self.fail(
                id,
                crate::ede::NO_REACHABLE_AUTHORITY,
                "resolution timed out",
                now,
            );
        }
        for id in stale {
            self.answer_stale(id, now);
        }
        self.refresh_anchors(now);
        self.run(now);
    }

    /// RFC 8767 §5: the clients of task `id` have waited long enough; if the
    /// cache holds stale data for the question they get it now, and the task
    /// goes on without them to refresh the cache.
    fn answer_stale(&mut self, id: TaskId, now: Millis) {
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        task.stale_at = None;
        let Some(r) = self.cache.answer(&task.qname, task.qtype, now, true) else {
            return;
        };
        if !r.stale {
            return;
        }
        let clients = std::mem::take(&mut task.clients);
        self.stats.stale_served = self.stats.stale_served.saturating_add(1);
        for token in clients {
            self.answers.push_back(Answer {
                token,
                resolution: r.clone(),
                discard: false,
            });
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    pub fn poll_answer(&mut self) -> Option<Answer> {
        let mut a = self.answers.pop_front()?;
        self.pending_clients = self.pending_clients.saturating_sub(1);
        if let Some((client, asked)) = self.client_of.remove(&a.token) {
            if let Some(n) = self.per_client.get_mut(&client) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_client.remove(&client);
                }
            }
            let waited = self.now.saturating_sub(asked);
            a.discard = waited > self.config.limits.discard_after_ms && !a.resolution.stale;
            if a.discard {
                self.stats.discarded = self.stats.discarded.saturating_add(1);
            }
        }
        Some(a)
    }

    /// When [`Resolver::handle_timeout`] should be called next. Timers of
    /// tasks that ended are dropped on the way; what remains is at most one
    /// deadline and one serve-stale timer per task in flight.
    pub fn poll_timeout(&mut self) -> Option<Millis> {
        let mut next = None;
        while let Some(&Reverse((at, id))) = self.timers.peek() {
            let live = self
                .tasks
                .get(&id)
                .is_some_and(|t| t.deadline == at || t.stale_at == Some(at));
            if live {
                next = Some(at);
                break;
            }
            self.timers.pop();
        }
        // A managed trust anchor's keys are due to be fetched again.
        match (next, self.next_anchor_refresh()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Tasks being worked on, for metrics.
    pub fn pending(&self) -> usize {
        self.tasks.len()
    }

    pub(crate) fn new_budget(&mut self) -> u64 {
        let id = self.next_budget;
        self.next_budget = self.next_budget.saturating_add(1);
        self.budgets.insert(id, Budget::default());
        id
    }

    pub(crate) fn new_task(
        &mut self,
        qname: Name,
        qtype: Rtype,
        budget: u64,
        depth: u32,
        ancestors: Vec<(Name, Rtype)>,
        now: Millis,
    ) -> TaskId {
        let id = TaskId(self.next_task);
        self.next_task = self.next_task.saturating_add(1);
        let key = (qname.to_lowercase(), qtype);
        let deadline = now.saturating_add(self.config.limits.resolution_timeout_ms);
        let task = Task::new(id, qname, qtype, budget, depth, ancestors, deadline);
        self.timers.push(Reverse((deadline, id)));
        if let Some(b) = self.budgets.get_mut(&budget) {
            b.tasks = b.tasks.saturating_add(1);
        }
        self.by_question.insert(key, id);
        self.tasks.insert(id, task);
        id
    }

    pub(crate) fn new_exchange(&mut self) -> ExchangeId {
        let id = ExchangeId(self.next_exchange);
        self.next_exchange = self.next_exchange.saturating_add(1);
        id
    }

    /// Advances every ready task until each waits or is done.
    fn run(&mut self, now: Millis) {
        self.now = self.now.max(now);
        // Each step either waits, finishes or makes progress bounded by the
        // budgets; this bound only guards against a bug looping forever.
        let mut steps = 0u32;
        while let Some(id) = self.ready.pop_front() {
            steps = steps.saturating_add(1);
            if steps > 1_000_000 {
                break;
            }
            self.advance(id, now);
        }
    }

    /// Ends task `id` with `resolution`: its clients get it, the tasks waiting
    /// on it go on.
    pub(crate) fn finish(&mut self, id: TaskId, resolution: Resolution, _now: Millis) {
        let Some(task) = self.tasks.remove(&id) else {
            return;
        };
        let key = (task.qname.to_lowercase(), task.qtype);
        if self.by_question.get(&key) == Some(&id) {
            self.by_question.remove(&key);
        }
        if resolution.rcode == bulwark_proto::Rcode::SERVFAIL {
            self.stats.servfail = self.stats.servfail.saturating_add(1);
        }
        for token in &task.clients {
            self.answers.push_back(Answer {
                token: *token,
                resolution: resolution.clone(),
                discard: false,
            });
        }
        for waiter in task.waiters {
            if let Some(w) = self.tasks.get_mut(&waiter) {
                w.lookups_pending = w.lookups_pending.saturating_sub(1);
                if w.lookups_pending == 0 {
                    self.ready.push_back(waiter);
                }
            }
        }
        // The budget goes with the last task drawing on it (counted, not
        // searched for: a walk over every task at each end would make a
        // busy resolver slower the busier it is).
        if let Some(b) = self.budgets.get_mut(&task.budget) {
            b.tasks = b.tasks.saturating_sub(1);
            if b.tasks == 0 {
                self.budgets.remove(&task.budget);
            }
        }
    }

    /// Ends task `id` with SERVFAIL, unless serve-stale has an answer for
    /// it (RFC 8767 §4: when the servers fail, stale data beats none).
    pub(crate) fn fail(&mut self, id: TaskId, code: u16, text: &str, now: Millis) {
        let Some(task) = self.tasks.get(&id) else {
            return;
        };
        if self.config.stale.is_some() {
            if let Some(r) = self.cache.answer(&task.qname, task.qtype, now, true) {
                self.stats.stale_served = self.stats.stale_served.saturating_add(1);
                self.finish(id, r, now);
                return;
            }
        }
        self.finish(id, Resolution::failure(code, text), now);
    }

    pub(crate) fn random(&mut self) -> u32 {
        self.random.next_u32()
    }
}
