//! One question's resolution, step by step (RFC 1034 §5.3.3, RFC 9156).
//!
//! A step: is the answer in the cache? If not, which zone cut is the closest
//! one known (a forward zone, a cached NS set, or the root hints)? Which of
//! its servers' addresses are known, and which must be looked up first? Which
//! name to ask (the next label only, with QNAME minimisation)? Then one
//! query, and on its response the cache learns what may be believed and the
//! task moves: an answer ends it, a CNAME restarts it at the target, a
//! referral moves it one zone down, a lame or failing server sends it to the
//! next server.

use std::net::{IpAddr, SocketAddr};

use bulwark_proto::{MessageView, Name, Rcode, Rtype};

use crate::cache::Trust;
use crate::classify::{classify, ns_names, Asked, Kind};
use crate::engine::{ClientToken, ExchangeError, Outstanding, Resolver, Transmit, Transport};
use crate::infra::EdnsSupport;
use crate::response::{Resolution, Security};
use crate::rrset::RrSet;
use crate::upstream::{self, Query};
use crate::{ede, Millis};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u64);

/// What a client question has spent, its lookups included.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub queries: u32,
    pub referrals: u32,
    pub lookups: u32,
    pub hops: u32,
    /// Tasks drawing on it: it goes with the last.
    pub tasks: u32,
}

/// The zone whose servers are asked next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    pub zone: Name,
    /// Its NS targets, whose addresses come from the cache.
    pub ns_names: Vec<Name>,
    /// Servers given directly (root hints, forwarders).
    pub servers: Vec<SocketAddr>,
    /// The servers are resolvers we forward to (RD set, any name believed).
    pub forwarders: bool,
    /// The root, from the hints: not primed yet.
    pub from_hints: bool,
}

#[derive(Debug)]
pub(crate) struct Task {
    pub id: TaskId,
    pub qname: Name,
    pub qtype: Rtype,
    pub budget: u64,
    pub depth: u32,
    /// The questions whose resolution led here (address lookups of name
    /// servers of …): asking any of them again would wait on itself.
    pub ancestors: Vec<(Name, Rtype)>,
    pub deadline: Millis,
    pub clients: Vec<ClientToken>,
    pub waiters: Vec<TaskId>,
    /// The name being resolved now: `qname`, or the end of `chain`.
    pub current: Name,
    pub chain: Vec<RrSet>,
    pub cut: Option<Cut>,
    /// Labels of the next minimised query, when one answered NODATA (an
    /// empty non-terminal, or a name that is no zone cut).
    pub qmin_labels: Option<usize>,
    /// Minimisation given up for this task (a server broke on it, RFC 9156
    /// §2.3's relaxed fallback).
    pub qmin_off: bool,
    /// Servers asked in this cut since it was reached.
    pub tried: Vec<IpAddr>,
    pub lookups_pending: u32,
    pub looked_up: Vec<Name>,
    pub primed: bool,
    /// Every forwarder failed and the zone falls back to iteration.
    pub forward_failed: bool,
    /// What went wrong last, for the SERVFAIL's Extended DNS Error.
    pub last_error: Option<(u16, &'static str)>,
    /// When the waiting clients get stale data if there is some (RFC 8767
    /// §5's client response timer); `None` once done or without
    /// serve-stale.
    pub stale_at: Option<Millis>,
    /// A background refresh (prefetch): no client waits for it.
    pub refresh: bool,
    /// Times the task went back to a parent zone's servers because none of
    /// a cut's servers could be reached or found.
    pub climbs: u8,
    /// The resolution being validated, while the chain of trust waits for
    /// data.
    pub validating: Option<Resolution>,
    /// What validation had resolved for it (a zone's DS or DNSKEY set): if
    /// the cache still lacks it, it is judged missing, not asked again.
    pub fetched: Vec<(Name, Rtype)>,
    /// The servers whose answers the task used, and as servers of which
    /// zone: blamed when what they gave proves bogus.
    pub answered_by: Vec<(IpAddr, Name)>,
    /// Times bogus data sent the task to other servers.
    pub bogus_retries: u8,
    /// The NSEC/NSEC3 records proving the wildcard expansions of `chain`,
    /// for the answer's authority section.
    pub proofs: Vec<RrSet>,
}

impl Task {
    pub(crate) fn new(
        id: TaskId,
        qname: Name,
        qtype: Rtype,
        budget: u64,
        depth: u32,
        ancestors: Vec<(Name, Rtype)>,
        deadline: Millis,
    ) -> Task {
        Task {
            id,
            current: qname.clone(),
            qname,
            qtype,
            budget,
            depth,
            ancestors,
            deadline,
            clients: Vec::new(),
            waiters: Vec::new(),
            chain: Vec::new(),
            cut: None,
            qmin_labels: None,
            qmin_off: false,
            tried: Vec::new(),
            lookups_pending: 0,
            looked_up: Vec::new(),
            primed: false,
            forward_failed: false,
            last_error: None,
            stale_at: None,
            refresh: false,
            climbs: 0,
            validating: None,
            fetched: Vec::new(),
            answered_by: Vec::new(),
            bogus_retries: 0,
            proofs: Vec::new(),
        }
    }

    fn failure(&self) -> (u16, &'static str) {
        self.last_error.unwrap_or((
            ede::NO_REACHABLE_AUTHORITY,
            "no server of the zone answered",
        ))
    }
}

/// What a step leaves the task doing.
pub(crate) enum Step {
    /// Waiting for a response or for lookups.
    Wait,
    /// Go on at once (the response moved it along).
    Continue,
    Done(Resolution),
    Fail(u16, &'static str),
}

/// The port name servers listen on (RFC 1035 §4.2).
const DNS_PORT: u16 = 53;
/// Address lookups a task starts at once: enough to find a server without
/// fanning out (NXNSAttack sends referrals with many NS names and no glue).
const LOOKUPS_AT_ONCE: u32 = 2;

/// Questions whose answering server is remembered for validation; past
/// it the memory starts again.
const MAX_ORIGINS: usize = 100_000;

/// Times one task goes back to a parent zone for a delegation it cannot
/// use (each costs a query or two, within the budget).
const MAX_CLIMBS: u8 = 2;

impl Resolver {
    /// Runs task `id` until it waits or ends.
    pub(crate) fn advance(&mut self, id: TaskId, now: Millis) {
        let Some(mut task) = self.tasks.remove(&id) else {
            return;
        };
        let step = self.step(&mut task, now);
        self.settle(task, step, now);
    }

    fn settle(&mut self, mut task: Task, step: Step, now: Millis) {
        // Data from the servers is validated before any client has it. A
        // lookup of the resolver's own (a name server's address, a zone's
        // DS or DNSKEY set for the chain of trust) is not: the chain judges
        // what it fetched itself, and glue is never signed.
        let for_clients = task.depth == 0 || !task.clients.is_empty();
        let step = match step {
            Step::Done(r) if r.security == Security::Unchecked && for_clients => {
                self.validate(&mut task, r, now)
            }
            step => step,
        };
        let id = task.id;
        self.tasks.insert(id, task);
        match step {
            Step::Wait => {}
            Step::Continue => self.ready.push_back(id),
            Step::Done(r) => self.finish(id, r, now),
            Step::Fail(code, text) => self.fail(id, code, text, now),
        }
    }

    fn step(&mut self, task: &mut Task, now: Millis) -> Step {
        if task.deadline <= now {
            return Step::Fail(ede::NO_REACHABLE_AUTHORITY, "resolution timed out");
        }
        if let Some(r) = task.validating.take() {
            return self.validate(task, r, now);
        }
        // A refresh asks the servers even though the cache still holds the
        // answer (that is what it is for); once it has moved on (a CNAME's
        // target), the cache is used as usual.
        let use_cache = !(task.refresh && task.chain.is_empty());
        let cached = if use_cache {
            // A name server's address lookup may use glue; a client may not
            // be given it (RFC 2181 §5.4.1).
            if task.depth > 0 && task.clients.is_empty() {
                self.cache.answer_for_lookup(&task.current, task.qtype, now)
            } else {
                self.cache.answer_for_task(&task.current, task.qtype, now)
            }
        } else {
            None
        };
        if let Some(mut r) = cached {
            // The links followed to get here were not judged with the
            // cache's part: the whole answer is, before a client has it.
            if !task.chain.is_empty() && self.cache.arriving() == Security::Unchecked {
                r.security = Security::Unchecked;
                add_proofs(&mut r.authority, task.proofs.clone());
            }
            let mut answer = task.chain.clone();
            answer.append(&mut r.answer);
            r.answer = answer;
            return Step::Done(r);
        }
        // What secure NSEC spans and wildcards already answer (RFC 8198).
        if use_cache
            && self.config.validation.is_some()
            && !self.cache.negative_anchors().covers(&task.current, now)
        {
            if let Some(step) = self.answer_from_spans(task, now) {
                return step;
            }
        }
        // Part of the way is held (a CNAME, a DNAME above the name): go on
        // from where it leads.
        if let Some((chain, target)) = use_cache
            .then(|| self.cache.held_chain(&task.current, task.qtype, now))
            .flatten()
        {
            return self.follow_chain(task, chain, target, None, now);
        }
        let forward = if task.forward_failed {
            None
        } else {
            self.config.forward_for(&task.current).cloned()
        };
        let stale_cut = task.cut.as_ref().is_none_or(|c| {
            !task.current.ends_with(&c.zone) || (forward.is_some() != c.forwarders)
        });
        if stale_cut {
            task.cut = Some(self.find_cut(task, forward.as_ref(), now));
            task.tried.clear();
            task.qmin_labels = None;
        }
        let Some(cut) = task.cut.clone() else {
            return Step::Fail(ede::OTHER, "no zone cut");
        };
        if cut.from_hints && !task.primed {
            task.primed = true;
            // Every other question waits for one priming (RFC 8109), as
            // name server lookups are shared: a burst of questions at start
            // sends one priming query, not one each.
            if !(task.current.is_root() && task.qtype == Rtype::NS) {
                // Afterwards the cut is found again: the primed root NS set,
                // or the hints once more if priming failed.
                task.cut = None;
                if self.wait_for(task, Name::root(), Rtype::NS, now) {
                    return Step::Wait;
                }
                return Step::Continue;
            }
            if let Some(server) = self.pick(&cut.servers, &cut.servers, &cut.zone, task, now) {
                let query = Query {
                    name: Name::root(),
                    rtype: Rtype::NS,
                    recursion_desired: false,
                    edns: self.infra.edns(server.ip()) != EdnsSupport::Broken,
                    udp_payload: self.config.udp_payload,
                    cookie_retry: false,
                };
                return self.send(task, server, query, Transport::Udp, now);
            }
        }
        let servers = self.servers_of(&cut, now);
        let Some(server) = self.pick(&servers, &cut.servers, &cut.zone, task, now) else {
            if self.start_lookups(task, &cut, now) {
                return Step::Wait;
            }
            if let Some(parent) = self.parent_cut(task, &cut, now) {
                // No server of the cut can be asked: its addresses expired
                // and resolving them needs the cut itself (an in-zone name
                // server), or every one failed. The parent's servers give
                // the delegation again, glue included.
                task.climbs = task.climbs.saturating_add(1);
                task.cut = Some(parent);
                task.tried.clear();
                task.qmin_labels = None;
                task.looked_up.clear();
                return Step::Continue;
            }
            if cut.forwarders && forward.as_ref().is_some_and(|f| f.fallback_to_iteration) {
                task.forward_failed = true;
                task.cut = None;
                return Step::Continue;
            }
            let (code, text) = task.failure();
            return Step::Fail(code, text);
        };
        let (name, rtype) = self.query_for(task, &cut);
        let query = Query {
            name,
            rtype,
            recursion_desired: cut.forwarders,
            edns: self.infra.edns(server.ip()) != EdnsSupport::Broken,
            udp_payload: self.config.udp_payload,
            cookie_retry: false,
        };
        self.send(task, server, query, Transport::Udp, now)
    }

    /// The answer secure NSEC spans give the task's current name (RFC
    /// 8198): a denial or a wildcard's data ends it; a wildcard's CNAME is
    /// followed.
    fn answer_from_spans(&mut self, task: &mut Task, now: Millis) -> Option<Step> {
        let mut r = self.aggressive.answer(&task.current, task.qtype, now)?;
        self.stats.aggressive_answers = self.stats.aggressive_answers.saturating_add(1);
        let cname = r
            .answer
            .first()
            .filter(|s| s.rtype == Rtype::CNAME && task.qtype != Rtype::CNAME)
            .cloned();
        if let Some(cname) = cname {
            let target = cname.target_names().into_iter().next()?;
            add_proofs(&mut task.proofs, std::mem::take(&mut r.authority));
            return Some(self.follow_chain(task, vec![cname], target, None, now));
        }
        if !task.chain.is_empty() {
            // The links followed to get here are judged with it.
            let mut answer = task.chain.clone();
            answer.append(&mut r.answer);
            r.answer = answer;
            add_proofs(&mut r.authority, task.proofs.clone());
            r.security = Security::Unchecked;
        }
        Some(Step::Done(r))
    }

    /// The closest zone cut known for the task's current name: a forward
    /// zone, a cached NS set, or the root from the hints. A DS set lives in
    /// the parent (RFC 4035 §4.2), so for DS the search starts one label up.
    fn find_cut(
        &self,
        task: &Task,
        forward: Option<&crate::config::ForwardZone>,
        now: Millis,
    ) -> Cut {
        if let Some(f) = forward {
            return Cut {
                zone: f.zone.clone(),
                ns_names: Vec::new(),
                servers: f.addresses.clone(),
                forwarders: true,
                from_hints: false,
            };
        }
        let start = if task.qtype == Rtype::DS {
            task.current.parent().unwrap_or_else(Name::root)
        } else {
            task.current.clone()
        };
        let cached = self.cache.closest_ns(&start, now);
        // A stub zone's servers, unless the cache knows a cut below it
        // (learned from them).
        if let Some(stub) = self.config.stub_for(&start) {
            let deeper = cached
                .as_ref()
                .is_some_and(|ns| ns.owner.is_below(&stub.zone));
            if !deeper {
                return Cut {
                    zone: stub.zone.to_lowercase(),
                    ns_names: Vec::new(),
                    servers: stub.addresses.clone(),
                    forwarders: false,
                    from_hints: false,
                };
            }
        }
        self.cached_or_hints(cached)
    }

    /// The cut a cached NS set makes, or the root from the hints without one.
    fn cached_or_hints(&self, cached: Option<RrSet>) -> Cut {
        match cached {
            Some(ns) => Cut {
                zone: ns.owner.to_lowercase(),
                ns_names: ns_names(&ns),
                servers: Vec::new(),
                forwarders: false,
                from_hints: false,
            },
            None => Cut {
                zone: Name::root(),
                ns_names: Vec::new(),
                servers: self.config.root_hints.clone(),
                forwarders: false,
                from_hints: true,
            },
        }
    }

    /// The cut above `cut` to go back to, when that is worth a try: a name
    /// server's address is missing; not for the root, hints, forwarders or
    /// stub zones, nor more than twice.
    fn parent_cut(&self, task: &Task, cut: &Cut, now: Millis) -> Option<Cut> {
        if cut.from_hints || cut.forwarders || !cut.servers.is_empty() || task.climbs >= MAX_CLIMBS
        {
            return None;
        }
        // Only a name server whose address is unknown makes it worth it:
        // servers that were asked and failed would be given again.
        if cut
            .ns_names
            .iter()
            .all(|ns| !self.cache.addresses(ns, now).is_empty())
        {
            return None;
        }
        let parent = cut.zone.parent()?;
        Some(self.cached_or_hints(self.cache.closest_ns(&parent, now)))
    }

    /// The cut's servers: given ones, or its NS targets' cached addresses.
    /// The root's, when none of its servers' addresses is held (a priming
    /// answer without glue), are the hints: they name root servers too.
    fn servers_of(&self, cut: &Cut, now: Millis) -> Vec<SocketAddr> {
        let mut out: Vec<SocketAddr> = cut.servers.clone();
        for ns in &cut.ns_names {
            for ip in self.cache.addresses(ns, now) {
                let sa = SocketAddr::new(ip, DNS_PORT);
                if !out.contains(&sa) {
                    out.push(sa);
                }
            }
        }
        if out.is_empty() && cut.zone.is_root() && !cut.forwarders {
            out.clone_from(&self.config.root_hints);
        }
        out
    }

    /// The server to ask next among `servers`, the infrastructure cache
    /// choosing. Loopback addresses learned from the DNS are left out unless
    /// allowed; the ones the operator configured (`configured`: root hints,
    /// forwarders) are always used.
    fn pick(
        &mut self,
        servers: &[SocketAddr],
        configured: &[SocketAddr],
        zone: &Name,
        task: &Task,
        now: Millis,
    ) -> Option<SocketAddr> {
        let allowed: Vec<SocketAddr> = servers
            .iter()
            .filter(|s| {
                self.config.query_localhost
                    || !s.ip().is_loopback()
                    || configured.contains(s)
                    || self.config.is_configured(s.ip())
            })
            .copied()
            .collect();
        let ips: Vec<IpAddr> = allowed.iter().map(SocketAddr::ip).collect();
        let random = self.random();
        let ip = self.infra.choose(&ips, zone, &task.tried, now, random)?;
        allowed.into_iter().find(|s| s.ip() == ip)
    }

    /// What to ask the cut's servers: the current name and type, or with
    /// QNAME minimisation (RFC 9156 §3) the name one label below the cut,
    /// as an NS query, until the full name is reached.
    fn query_for(&self, task: &Task, cut: &Cut) -> (Name, Rtype) {
        let full = (task.current.clone(), task.qtype);
        if cut.forwarders || !self.config.qname_minimisation || task.qmin_off {
            return full;
        }
        let zone_labels = cut.zone.label_count();
        let labels = task.current.label_count();
        let want = task
            .qmin_labels
            .unwrap_or(zone_labels.saturating_add(1))
            .max(zone_labels.saturating_add(1));
        if want >= labels {
            return full;
        }
        match task.current.suffix(want) {
            Some(name) => (name, Rtype::NS),
            None => full,
        }
    }

    /// Starts address lookups for NS targets whose addresses are not known:
    /// a few at a time, within the budget, never for a name whose lookup
    /// would wait on this very task. Whether the task now waits on any.
    fn start_lookups(&mut self, task: &mut Task, cut: &Cut, now: Millis) -> bool {
        let limits = self.config.limits;
        let mut started = 0u32;
        for ns in &cut.ns_names {
            if task.lookups_pending.saturating_add(started) >= LOOKUPS_AT_ONCE {
                break;
            }
            if task.looked_up.contains(ns) || self.cache.addresses_known(ns, now) {
                continue;
            }
            let question = (ns.to_lowercase(), Rtype::A);
            let own = (task.qname.to_lowercase(), task.qtype);
            if question == own || task.ancestors.contains(&question) {
                // Resolving it needs the answer being resolved: a cycle.
                task.looked_up.push(ns.clone());
                continue;
            }
            if task.depth >= limits.max_depth {
                task.last_error = Some((ede::OTHER, "name server lookups nest too deep"));
                break;
            }
            let Some(budget) = self.budgets.get_mut(&task.budget) else {
                break;
            };
            if budget.lookups >= limits.max_ns_lookups {
                task.last_error =
                    Some((ede::OTHER, "too many name server lookups for one question"));
                self.stats.budget_exhausted = self.stats.budget_exhausted.saturating_add(1);
                break;
            }
            budget.lookups = budget.lookups.saturating_add(1);
            task.looked_up.push(ns.clone());
            let existing = self.by_question.get(&question).copied();
            let sub = match existing.filter(|id| self.tasks.contains_key(id)) {
                Some(id) => id,
                None => {
                    let mut ancestors = task.ancestors.clone();
                    ancestors.push(own);
                    let id = self.new_task(
                        ns.clone(),
                        Rtype::A,
                        task.budget,
                        task.depth.saturating_add(1),
                        ancestors,
                        now,
                    );
                    self.ready.push_back(id);
                    id
                }
            };
            if let Some(t) = self.tasks.get_mut(&sub) {
                t.waiters.push(task.id);
                started = started.saturating_add(1);
            }
        }
        task.lookups_pending = task.lookups_pending.saturating_add(started);
        task.lookups_pending > 0
    }

    /// Makes `task` wait for the resolution of `qname`/`qtype` (sharing one
    /// already under way), unless that would wait on itself. Whether it
    /// now waits.
    pub(crate) fn wait_for(
        &mut self,
        task: &mut Task,
        qname: Name,
        qtype: Rtype,
        now: Millis,
    ) -> bool {
        let question = (qname.to_lowercase(), qtype);
        let own = (task.qname.to_lowercase(), task.qtype);
        if question == own || task.ancestors.contains(&question) {
            return false;
        }
        let existing = self.by_question.get(&question).copied();
        let sub = match existing.filter(|id| self.tasks.contains_key(id)) {
            Some(id) => id,
            None => {
                let mut ancestors = task.ancestors.clone();
                ancestors.push(own);
                let id = self.new_task(
                    qname,
                    qtype,
                    task.budget,
                    task.depth.saturating_add(1),
                    ancestors,
                    now,
                );
                self.ready.push_back(id);
                id
            }
        };
        match self.tasks.get_mut(&sub) {
            Some(t) => {
                t.waiters.push(task.id);
                task.lookups_pending = task.lookups_pending.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// Sends `query` to `server` for `task`, within its budget.
    fn send(
        &mut self,
        task: &mut Task,
        server: SocketAddr,
        mut query: Query,
        transport: Transport,
        now: Millis,
    ) -> Step {
        let max = self.config.limits.max_upstream_queries;
        let Some(budget) = self.budgets.get_mut(&task.budget) else {
            return Step::Fail(ede::OTHER, "no budget");
        };
        if budget.queries >= max {
            self.stats.budget_exhausted = self.stats.budget_exhausted.saturating_add(1);
            return Step::Fail(ede::OTHER, "too many queries for one question");
        }
        if !task.tried.contains(&server.ip()) {
            task.tried.push(server.ip());
        }
        let busy = self.in_flight.get(&server.ip()).copied().unwrap_or(0);
        if busy >= self.config.limits.max_outstanding_per_server {
            // Another of the zone's servers, if it has one.
            task.last_error = Some((ede::OTHER, "a server has too many queries waiting"));
            return Step::Continue;
        }
        budget.queries = budget.queries.saturating_add(1);
        let qid = u16::try_from(self.random() & 0xffff).unwrap_or(0);
        let cookie =
            (query.edns && self.config.client_cookies).then(|| self.client_cookie(server.ip()));
        let server_cookie = self.infra.server_cookie(server.ip());
        // Issue 27: a server that knows us by its cookie may send a large
        // answer over UDP; we say we can take one only to such a server.
        if cookie.is_some() && server_cookie.is_some() {
            query.udp_payload = query.udp_payload.max(self.config.udp_payload_with_cookie);
        }
        let with_cookie = cookie.map(|client| upstream::Cookie {
            client,
            server: server_cookie,
        });
        let Some(message) = upstream::build(qid, &query, with_cookie) else {
            return Step::Fail(ede::OTHER, "cannot build the query");
        };
        let id = self.new_exchange();
        let forwarded = query.recursion_desired;
        let busy = self.in_flight.entry(server.ip()).or_insert(0);
        *busy = busy.saturating_add(1);
        self.exchanges.insert(
            id,
            Outstanding {
                task: task.id,
                server: server.ip(),
                query,
                qid,
                cookie,
                transport,
                sent_at: now,
            },
        );
        self.stats.upstream_queries = self.stats.upstream_queries.saturating_add(1);
        self.transmits.push_back(Transmit {
            id,
            to: server,
            message,
            transport,
            timeout_ms: self.config.limits.query_timeout_ms,
            forwarded,
        });
        Step::Wait
    }

    /// A response (or its absence) for the task that sent `out`.
    pub(crate) fn on_response(
        &mut self,
        out: Outstanding,
        result: Result<Vec<u8>, ExchangeError>,
        now: Millis,
    ) {
        let Some(mut task) = self.tasks.remove(&out.task) else {
            return;
        };
        let step = self.read_response(&mut task, &out, result, now);
        self.settle(task, step, now);
    }

    fn read_response(
        &mut self,
        task: &mut Task,
        out: &Outstanding,
        result: Result<Vec<u8>, ExchangeError>,
        now: Millis,
    ) -> Step {
        let server = SocketAddr::new(out.server, self.port_of(task, out.server));
        let bytes = match result {
            Ok(b) => b,
            Err(_) => {
                self.stats.upstream_timeouts = self.stats.upstream_timeouts.saturating_add(1);
                self.infra.timed_out(out.server, now);
                task.last_error.get_or_insert((
                    ede::NO_REACHABLE_AUTHORITY,
                    "no server of the zone answered",
                ));
                return Step::Continue;
            }
        };
        let Ok(view) = MessageView::parse(&bytes) else {
            task.last_error = Some((ede::NETWORK_ERROR, "a server's answer was malformed"));
            return Step::Continue;
        };
        // RFC 5452 §4.3 (the edge checks it too): not the response to our
        // query. RFC 7873 §5.3: a COOKIE option whose client cookie is not
        // ours is a forgery.
        let header = view.header();
        let returned = view.edns().and_then(|e| e.cookie());
        let cookie_forged =
            matches!((out.cookie, returned), (Some(ours), Some((theirs, _))) if ours != theirs);
        if header.id != out.qid || !header.flags.qr || cookie_forged {
            self.stats.forged = self.stats.forged.saturating_add(1);
            task.last_error = Some((
                ede::NETWORK_ERROR,
                "a server's answer did not match the query",
            ));
            return Step::Continue;
        }
        if let (Some(_), Some((_, Some(server_cookie)))) = (out.cookie, returned) {
            self.infra.set_server_cookie(out.server, server_cookie, now);
        }
        let rtt = u32::try_from(now.saturating_sub(out.sent_at)).unwrap_or(u32::MAX);
        self.infra.answered(out.server, rtt, now);
        let same_question = view
            .question()
            .is_some_and(|q| q.qname == out.query.name && q.qtype == out.query.rtype);
        if !same_question {
            task.last_error = Some((ede::NETWORK_ERROR, "a server answered another question"));
            return Step::Continue;
        }
        // RFC 1035 §4.2.1, RFC 7766 §5: truncated over UDP, ask again over TCP.
        if view.header().flags.tc && out.transport == Transport::Udp {
            task.tried.retain(|ip| *ip != out.server);
            return self.send(task, server, out.query.clone(), Transport::Tcp, now);
        }
        let rcode = view.rcode();
        // RFC 7873 §5.3: BADCOOKIE carries a fresh server cookie (kept
        // above); ask once more with it, then over TCP, which needs none.
        if rcode == Rcode::BADCOOKIE && out.cookie.is_some() {
            task.tried.retain(|ip| *ip != out.server);
            let (transport, query) = if out.query.cookie_retry {
                (Transport::Tcp, out.query.clone())
            } else {
                let retry = Query {
                    cookie_retry: true,
                    ..out.query.clone()
                };
                (out.transport, retry)
            };
            return self.send(task, server, query, transport, now);
        }
        // RFC 6891 §7: a server that does not know EDNS answers FORMERR or
        // NOTIMP; ask it again without.
        if out.query.edns && (rcode == Rcode::FORMERR || rcode == Rcode::NOTIMP) {
            self.infra.set_edns(out.server, EdnsSupport::Broken, now);
            task.tried.retain(|ip| *ip != out.server);
            let query = Query {
                edns: false,
                ..out.query.clone()
            };
            return self.send(task, server, query, out.transport, now);
        }
        let Some(cut) = task.cut.clone() else {
            return Step::Continue;
        };
        let priming = out.query.name.is_root() && out.query.rtype == Rtype::NS && cut.from_hints;
        let zone = if priming {
            Name::root()
        } else {
            cut.zone.clone()
        };
        let asked = Asked {
            qname: &out.query.name,
            qtype: out.query.rtype,
            zone: &zone,
            forwarding: out.query.recursion_desired,
        };
        let kind = classify(asked, &view);
        if priming {
            return self.primed(task, kind, now);
        }
        let minimised = out.query.name != task.current || out.query.rtype != task.qtype;
        let gave_data = !matches!(
            kind,
            Kind::Referral { .. } | Kind::Lame(_) | Kind::Failure(_)
        );
        self.remember_origin(task, out, &zone, gave_data && !minimised);
        self.act(task, out, &cut, kind, minimised, now)
    }

    /// Notes who answered `out`'s question, as a server of `zone`, and
    /// whether the task's answer holds what it gave (`gave_data`: not a
    /// referral or a minimised step).
    fn remember_origin(
        &mut self,
        task: &mut Task,
        out: &Outstanding,
        zone: &Name,
        gave_data: bool,
    ) {
        if self.config.validation.is_none() {
            return;
        }
        // Only who gave keys and DS sets is asked for again (a bogus
        // chain's retry elsewhere): for the rest, a 500-octet entry per
        // upstream answer would be written, rehashed and never read.
        if matches!(out.query.rtype, Rtype::DNSKEY | Rtype::DS) {
            if self.origins.len() >= MAX_ORIGINS {
                self.origins.clear();
            }
            let question = (out.query.name.to_lowercase(), out.query.rtype);
            self.origins.insert(question, (out.server, zone.clone()));
        }
        if gave_data && !task.answered_by.iter().any(|(ip, _)| *ip == out.server) {
            task.answered_by.push((out.server, zone.clone()));
        }
    }

    /// The port `ip` was asked on (forwarders and hints may name one).
    fn port_of(&self, task: &Task, ip: IpAddr) -> u16 {
        task.cut
            .as_ref()
            .and_then(|c| c.servers.iter().find(|s| s.ip() == ip))
            .map_or(DNS_PORT, SocketAddr::port)
    }

    /// RFC 8109: the root's NS set and addresses, from a hint server.
    fn primed(&mut self, task: &mut Task, kind: Kind, now: Millis) -> Step {
        if let Kind::Answer { data, glue, .. } = kind {
            if data.rtype == Rtype::NS && data.owner.is_root() {
                self.cache.insert_rrset(data, Trust::AuthAnswer, now);
                for g in glue {
                    self.cache.insert_rrset(g, Trust::Additional, now);
                }
                task.cut = None;
            }
        }
        Step::Continue
    }

    /// Goes on from `target`, where `chain` (a server's, to be cached with
    /// `trust`, or the cache's own) leads: within the question's budget of
    /// CNAME hops, and not round a loop.
    fn follow_chain(
        &mut self,
        task: &mut Task,
        chain: Vec<RrSet>,
        target: Name,
        trust: Option<Trust>,
        now: Millis,
    ) -> Step {
        let links = u32::try_from(chain.iter().filter(|s| s.rtype == Rtype::CNAME).count())
            .unwrap_or(u32::MAX);
        let max = self.config.limits.max_cname_hops;
        if let Some(b) = self.budgets.get_mut(&task.budget) {
            b.hops = b.hops.saturating_add(links);
            if b.hops > max {
                return Step::Fail(ede::OTHER, "CNAME chain too long");
            }
        }
        if task
            .chain
            .iter()
            .chain(chain.iter())
            .any(|s| s.owner == target)
            || target == task.qname
        {
            // The loop goes to the client as far as it was followed
            // (as Knot Resolver does), with the SERVFAIL.
            let mut failure = Resolution::failure(ede::OTHER, "CNAME loop");
            failure.answer = task.chain.iter().chain(chain.iter()).cloned().collect();
            return Step::Done(failure);
        }
        if let Some(trust) = trust {
            self.cache.insert_chain(&chain, trust, now);
        }
        for set in chain {
            let known = set.rtype == Rtype::DNAME
                && task
                    .chain
                    .iter()
                    .any(|s| s.rtype == Rtype::DNAME && s.owner == set.owner);
            if !known {
                task.chain.push(set);
            }
        }
        task.current = target;
        task.cut = None;
        Step::Continue
    }

    fn act(
        &mut self,
        task: &mut Task,
        out: &Outstanding,
        cut: &Cut,
        kind: Kind,
        minimised: bool,
        now: Millis,
    ) -> Step {
        let forwarding = cut.forwarders;
        match kind {
            Kind::Answer {
                chain,
                data,
                authoritative,
                glue,
                proof,
            } => {
                let trust = if authoritative && !forwarding {
                    Trust::AuthAnswer
                } else {
                    Trust::NonAuthAnswer
                };
                if minimised {
                    // An NS set at the minimised name: a zone cut the same
                    // servers also serve. Anything else: stop minimising.
                    if data.rtype == Rtype::NS && data.owner == out.query.name && chain.is_empty() {
                        return self.descend(task, data, glue, now);
                    }
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                self.cache.insert_chain(&chain, trust, now);
                // A CNAME a DNAME synthesised is made again from the DNAME.
                let synthesised = data.rtype == Rtype::CNAME
                    && chain
                        .iter()
                        .any(|s| s.rtype == Rtype::DNAME && data.owner.is_below(&s.owner));
                if !synthesised {
                    self.cache.insert_answer(data.clone(), &proof, trust, now);
                }
                for g in glue {
                    self.cache.insert_rrset(g, Trust::Additional, now);
                }
                let mut answer = task.chain.clone();
                answer.extend(chain);
                answer.push(data);
                let mut r = Resolution::answer(answer);
                r.authority = task.proofs.clone();
                add_proofs(&mut r.authority, proof);
                Step::Done(r.security(self.cache.arriving()))
            }
            Kind::Cname {
                chain,
                target,
                authoritative,
                proof,
            } => {
                if minimised {
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                let trust = if authoritative && !forwarding {
                    Trust::AuthAnswer
                } else {
                    Trust::NonAuthAnswer
                };
                add_proofs(&mut task.proofs, proof);
                self.follow_chain(task, chain, *target, Some(trust), now)
            }
            Kind::Referral {
                zone,
                ns,
                glue,
                ds,
                no_ds,
            } => {
                if !zone.is_below(&cut.zone) && !forwarding {
                    self.infra.lame_for(out.server, &cut.zone, now);
                    task.last_error = Some((ede::INVALID_DATA, "a referral that does not go down"));
                    return Step::Continue;
                }
                // What the parent says of the child's DS, for the validator
                // (it would otherwise ask the parent again), and who said it.
                if self.config.validation.is_some() && (ds.is_some() || !no_ds.is_empty()) {
                    self.origins.insert(
                        (zone.to_lowercase(), Rtype::DS),
                        (out.server, cut.zone.clone()),
                    );
                }
                if let Some(ds) = ds {
                    self.cache.insert_rrset(*ds, Trust::Referral, now);
                } else if !no_ds.is_empty() {
                    self.cache.insert_negative(
                        &zone,
                        Some(Rtype::DS),
                        None,
                        no_ds,
                        Trust::Referral,
                        now,
                    );
                }
                self.descend(task, ns, glue, now)
            }
            Kind::NxDomain { chain, soa, extra } => {
                let trust = if forwarding {
                    Trust::NonAuthAnswer
                } else {
                    Trust::AuthAuthority
                };
                if minimised {
                    // RFC 8020 says nothing exists below a name that does
                    // not exist, but servers that answer NXDOMAIN for empty
                    // non-terminals are common, and an unvalidated NXDOMAIN
                    // can be forged: the full name is asked (RFC 9156 §2.3,
                    // as Unbound does when not strict).
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                let missing = chain_end(&task.current, &chain);
                self.cache.insert_chain(&chain, trust, now);
                self.cache
                    .insert_negative(&missing, None, soa.clone(), extra.clone(), trust, now);
                let mut answer = task.chain.clone();
                answer.extend(chain);
                let ttl = negative_ttl(soa.as_ref(), &extra);
                let r = Resolution::negative(Rcode::NXDOMAIN, answer, &soa, &extra, ttl);
                Step::Done(r.security(self.cache.arriving()))
            }
            Kind::NoData { chain, soa, extra } => {
                if minimised {
                    // An empty non-terminal, or a name that is no zone cut:
                    // one label more, same servers.
                    task.qmin_labels = Some(out.query.name.label_count().saturating_add(1));
                    task.tried.clear();
                    return Step::Continue;
                }
                let trust = if forwarding {
                    Trust::NonAuthAnswer
                } else {
                    Trust::AuthAuthority
                };
                let end = chain_end(&task.current, &chain);
                self.cache.insert_chain(&chain, trust, now);
                self.cache.insert_negative(
                    &end,
                    Some(task.qtype),
                    soa.clone(),
                    extra.clone(),
                    trust,
                    now,
                );
                let mut answer = task.chain.clone();
                answer.extend(chain);
                let ttl = negative_ttl(soa.as_ref(), &extra);
                let r = Resolution::negative(Rcode::NOERROR, answer, &soa, &extra, ttl);
                Step::Done(r.security(self.cache.arriving()))
            }
            Kind::TooLong { dname } => {
                if minimised {
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                let mut answer = task.chain.clone();
                answer.push(dname);
                let mut r = Resolution::answer(answer);
                r.rcode = Rcode::YXDOMAIN;
                Step::Done(r.security(self.cache.arriving()))
            }
            Kind::Lame(reason) => {
                if minimised {
                    // RFC 9156 §2.3: a server that stumbles on a minimised
                    // query is asked the full name.
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                self.infra.lame_for(out.server, &cut.zone, now);
                task.last_error = Some((ede::NOT_AUTHORITATIVE, reason));
                Step::Continue
            }
            Kind::Failure(rcode) => {
                if minimised {
                    task.qmin_off = true;
                    task.tried.retain(|ip| *ip != out.server);
                    return Step::Continue;
                }
                if rcode == Rcode::REFUSED {
                    self.infra.lame_for(out.server, &cut.zone, now);
                }
                task.last_error = Some((
                    ede::NETWORK_ERROR,
                    "the zone's servers answered with errors",
                ));
                Step::Continue
            }
        }
    }

    /// Moves the task one zone down, to `ns`'s zone (a referral, or an NS
    /// answer to a minimised query), keeping the NS set and its glue.
    fn descend(&mut self, task: &mut Task, ns: RrSet, glue: Vec<RrSet>, now: Millis) -> Step {
        let max = self.config.limits.max_referrals;
        if let Some(b) = self.budgets.get_mut(&task.budget) {
            b.referrals = b.referrals.saturating_add(1);
            if b.referrals > max {
                self.stats.budget_exhausted = self.stats.budget_exhausted.saturating_add(1);
                return Step::Fail(ede::OTHER, "too many referrals for one question");
            }
        }
        let zone = ns.owner.to_lowercase();
        let names = ns_names(&ns);
        self.cache.insert_rrset(ns, Trust::Referral, now);
        for g in glue {
            self.cache.insert_rrset(g, Trust::Additional, now);
        }
        task.cut = Some(Cut {
            zone,
            ns_names: names,
            servers: Vec::new(),
            forwarders: false,
            from_hints: false,
        });
        task.tried.clear();
        task.qmin_labels = None;
        task.looked_up.clear();
        Step::Continue
    }
}

/// Adds `new` to `proofs`, each NSEC or NSEC3 set once.
fn add_proofs(proofs: &mut Vec<RrSet>, new: Vec<RrSet>) {
    for set in new {
        if !proofs
            .iter()
            .any(|p| p.rtype == set.rtype && p.owner == set.owner)
        {
            proofs.push(set);
        }
    }
}

/// The TTL a negative answer goes to its clients with: its SOA's, or
/// without one (a bare DS denial) its proof's.
fn negative_ttl(soa: Option<&RrSet>, extra: &[RrSet]) -> u32 {
    soa.map_or_else(|| extra.iter().map(|s| s.ttl).min().unwrap_or(0), |s| s.ttl)
}

/// The name a chain ends at (the last CNAME's target), or `start`.
fn chain_end(start: &Name, chain: &[RrSet]) -> Name {
    chain
        .iter()
        .rev()
        .find(|s| s.rtype == Rtype::CNAME)
        .and_then(|s| s.target_names().into_iter().next())
        .unwrap_or_else(|| start.clone())
}
