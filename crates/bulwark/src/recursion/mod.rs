//! Recursion at the edge: the handle the query path uses and the task that
//! drives `bulwark_resolver`'s engine.
//!
//! A question auth hands on ([`bulwark_auth::AnswerOutcome::Recurse`]) is
//! first looked up in the shared cache by the worker that received it: a hit
//! is answered there and then, like an authoritative answer. A miss becomes
//! a deferred job: the question and the way to reply go to the driver task
//! ([`driver`]), which owns the engine, sends its queries with
//! `bulwark_net::Client` and replies when the engine has an answer.
//!
//! The engine is pure; the clock it reads is the server's [`CoarseClock`],
//! which a scenario test may start in the past and move forward.

mod anchor_store;
mod driver;
mod random;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bulwark_auth::{Recursion as Offer, RecursionRequest};
use bulwark_guard::{Access, Acl, ResponseClass, Rrl, RrlVerdict};
use bulwark_net::{Deferred, Responder, Shutdown};
use bulwark_proto::message::padding::{pad_to_block, RESPONSE_BLOCK};
use bulwark_proto::message::{truncate_to_question, EdnsOption};
use bulwark_proto::{Name, Rcode, Rtype};
use bulwark_resolver::{write_response, Cache, Resolution, Security};
use tokio::sync::mpsc;

use crate::clock::CoarseClock;
use crate::settings::ResolverSettings;
use crate::stats::resolver::ResolverFigures;
use crate::tap::ResolverTap;

/// Questions waiting for the driver task: beyond this a question is
/// answered SERVFAIL at once rather than queued without bound.
const JOB_QUEUE: usize = 4096;

/// What the query path holds: the cache, who may recurse, and the way to
/// the driver. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Recursion {
    cache: Arc<Cache>,
    allow: Arc<Acl>,
    jobs: mpsc::Sender<Work>,
    clock: CoarseClock,
    counters: Arc<RecursionCounters>,
    prefetch: bool,
    /// Bound addresses whose clients never recurse (`[[listener]]
    /// recursion = false`).
    local_only: Arc<Vec<SocketAddr>>,
}

/// Counted where questions are answered (workers and the driver).
#[derive(Debug, Default)]
pub struct RecursionCounters {
    /// Answered by a worker from the cache.
    pub cache_answers: AtomicU64,
    /// Handed to the driver.
    pub resolutions: AtomicU64,
    /// Refused at once: the driver's queue was full.
    pub queue_full: AtomicU64,
    /// Answers the driver sent.
    pub driver_answers: AtomicU64,
    /// Answers not sent: the client had waited too long (DNSBomb).
    pub discarded: AtomicU64,
    /// The engine's own counters, copied by the driver as they change.
    pub engine: std::sync::Mutex<bulwark_resolver::engine::ResolverStats>,
    /// The managed trust anchors' keys, as `ctl anchors` shows them.
    pub anchors: std::sync::Mutex<Vec<String>>,
    /// SERVFAIL answers, by why (index of [`FAILURE_REASONS`]).
    pub servfail: [AtomicU64; FAILURE_REASONS.len()],
    /// Queries sent to servers, and how many brought no usable answer.
    pub upstream_queries: AtomicU64,
    pub upstream_timeouts: AtomicU64,
    pub upstream_errors: AtomicU64,
    /// Sum of upstream round trips (microseconds) over the answered ones.
    pub upstream_rtt_us: AtomicU64,
    pub upstream_answered: AtomicU64,
}

/// The reasons SERVFAIL answers are counted under (the EDE they carry):
/// failures to resolve, then bogus data (RFC 8914's DNSSEC codes).
pub const FAILURE_REASONS: [(&str, u16); 12] = [
    ("other", bulwark_resolver::ede::OTHER),
    ("dnssec_bogus", bulwark_resolver::ede::DNSSEC_BOGUS),
    (
        "signature_expired",
        bulwark_resolver::ede::SIGNATURE_EXPIRED,
    ),
    (
        "signature_not_yet_valid",
        bulwark_resolver::ede::SIGNATURE_NOT_YET_VALID,
    ),
    ("dnskey_missing", bulwark_resolver::ede::DNSKEY_MISSING),
    ("rrsigs_missing", bulwark_resolver::ede::RRSIGS_MISSING),
    (
        "no_zone_key_bit_set",
        bulwark_resolver::ede::NO_ZONE_KEY_BIT_SET,
    ),
    ("nsec_missing", bulwark_resolver::ede::NSEC_MISSING),
    (
        "not_authoritative",
        bulwark_resolver::ede::NOT_AUTHORITATIVE,
    ),
    (
        "no_reachable_authority",
        bulwark_resolver::ede::NO_REACHABLE_AUTHORITY,
    ),
    ("network_error", bulwark_resolver::ede::NETWORK_ERROR),
    ("invalid_data", bulwark_resolver::ede::INVALID_DATA),
];

impl RecursionCounters {
    /// Counts `resolution` if it goes out as SERVFAIL: a failure, or bogus
    /// data to a client that did not set CD.
    fn servfail(&self, resolution: &Resolution, checking_disabled: bool) {
        let bogus = matches!(resolution.security, Security::Bogus { .. }) && !checking_disabled;
        if resolution.rcode != Rcode::SERVFAIL && !bogus {
            return;
        }
        let code = resolution.ede.as_ref().map_or(0, |(c, _)| *c);
        let at = FAILURE_REASONS
            .iter()
            .position(|(_, c)| *c == code)
            .unwrap_or(0);
        if let Some(counter) = self.servfail.get(at) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Who asked, and how: for the reply's dnstap record.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub via: crate::via::Via,
    /// The answer is padded (RFC 7830 §4): an encrypted channel, and the
    /// query carried the Padding option.
    pub padded: bool,
}

/// What the driver is sent.
enum Work {
    /// Boxed: a job is large (a name, the query, the responder) and the
    /// queue holds thousands.
    Resolve(Box<Job>),
    /// A cache entry a client was answered from is near expiry: refresh it.
    Prefetch(Box<Name>, Rtype),
}

/// A question for the driver, with everything needed to reply.
struct Job {
    client: Client,
    query: Vec<u8>,
    qname: Name,
    qtype: Rtype,
    limit: usize,
    cookie: Option<([u8; 8], [u8; 16])>,
    /// A valid server cookie proved the client's address: not rate-limited.
    cookie_valid: bool,
    responder: Responder,
}

impl Recursion {
    /// Starts the driver task on the current runtime and returns the handle.
    pub fn start(
        settings: &ResolverSettings,
        clock: CoarseClock,
        tap: Option<ResolverTap>,
        rrl: Option<Arc<Rrl>>,
        store: Option<Arc<bulwark_store::Store>>,
        shutdown: &Shutdown,
    ) -> anyhow::Result<Recursion> {
        let cache = Arc::new(Cache::new(&settings.engine));
        let (jobs, queue) = mpsc::channel(JOB_QUEUE);
        let counters = Arc::new(RecursionCounters::default());
        let random = random::OsRandom::new()?;
        let mut engine = bulwark_resolver::Resolver::new(
            settings.engine.clone(),
            Arc::clone(&cache),
            Box::new(random),
        );
        let upstream_tls = Arc::new(crate::upstream_tls::prepare(&settings.tls_upstreams)?);
        let anchors = anchor_store::AnchorStore::new(store);
        anchors.restore(&mut engine);
        if let Ok(mut report) = counters.anchors.lock() {
            *report = engine.trust_anchor_report();
        }
        tokio::spawn(driver::run(
            engine,
            anchors,
            upstream_tls,
            queue,
            clock.clone(),
            tap,
            rrl,
            Arc::clone(&counters),
            shutdown.clone(),
        ));
        Ok(Recursion {
            cache,
            allow: Arc::clone(&settings.allow_recursion),
            jobs,
            clock,
            counters,
            prefetch: settings.engine.prefetch,
            local_only: Arc::new(Vec::new()),
        })
    }

    /// The same, with recursion off for clients reaching `addresses`.
    pub fn without_recursion_on(mut self, addresses: Vec<SocketAddr>) -> Recursion {
        self.local_only = Arc::new(addresses);
        self
    }

    /// What auth does with `client`'s questions in none of our zones, asked
    /// on the listener bound to `local`.
    pub fn offer(&self, client: IpAddr, local: SocketAddr) -> Offer {
        if !self.local_only.is_empty() && self.local_only.contains(&local) {
            return Offer::Refused;
        }
        match self.allow.check(client) {
            Access::Allow => Offer::Offered,
            Access::Refuse | Access::Drop => Offer::Refused,
        }
    }

    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The managed trust anchors' keys and their RFC 5011 states.
    pub fn trust_anchor_report(&self) -> Vec<String> {
        self.counters
            .anchors
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The figures metrics show.
    pub fn figures(&self) -> ResolverFigures {
        let c = &*self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let cache = self.cache.stats();
        ResolverFigures {
            cache_entries: cache.entries,
            cache_bytes: cache.bytes,
            cache_hits: cache.hits,
            cache_misses: cache.misses,
            cache_inserts: cache.inserts,
            cache_evictions: cache.evictions,
            answered_from_cache: load(&c.cache_answers),
            resolutions: load(&c.resolutions),
            queue_full: load(&c.queue_full),
            upstream_queries: load(&c.upstream_queries),
            upstream_timeouts: load(&c.upstream_timeouts),
            upstream_errors: load(&c.upstream_errors),
            upstream_answered: load(&c.upstream_answered),
            upstream_rtt_us: load(&c.upstream_rtt_us),
            engine: c.engine.lock().map(|g| *g).unwrap_or_default(),
            discarded: load(&c.discarded),
            servfail: FAILURE_REASONS
                .iter()
                .zip(&c.servfail)
                .map(|((reason, _), n)| (*reason, load(n)))
                .collect(),
        }
    }

    /// Answers `request` from the cache into `out` when it can: the rcode,
    /// whether it was truncated, and the class and name rate limiting goes
    /// by. `None` when the engine must resolve it ([`Recursion::defer`]).
    pub fn answer_from_cache(
        &self,
        request: &RecursionRequest<'_>,
        out: &mut Vec<u8>,
    ) -> Option<Answered> {
        let now = self.clock.now_ms();
        if let Some(hit) = self.reply_rendered(request, now, out) {
            return Some(hit);
        }
        let q = request.query.question()?;
        let resolution = self.cache.answer(&q.qname, q.qtype, now, false)?;
        let (rcode, truncated) = write(request, &resolution, out)?;
        self.counters.cache_answers.fetch_add(1, Ordering::Relaxed);
        // A bogus entry goes out as SERVFAIL (counted) unless CD is set.
        self.counters
            .servfail(&resolution, request.query.header().flags.cd);
        if resolution.refresh_due && self.prefetch {
            // Best effort: a full queue means the driver is busy enough.
            let _ = self
                .jobs
                .try_send(Work::Prefetch(Box::new(q.qname.clone()), q.qtype));
        }
        let (class, imputed) = rate_limit_key(rcode, &resolution);
        Some(Answered {
            rcode,
            truncated,
            class,
            imputed,
        })
    }

    /// Answers `request` from a rendered cache entry: the same bytes as
    /// the long way, copied and patched ([`Cache::reply`]).
    fn reply_rendered(
        &self,
        request: &RecursionRequest<'_>,
        now: u64,
        out: &mut Vec<u8>,
    ) -> Option<Answered> {
        let options = cookie_option(request);
        let hit = self
            .cache
            .reply(&request.query, request.limit, options.as_slice(), now, out)?;
        self.counters.cache_answers.fetch_add(1, Ordering::Relaxed);
        if hit.refresh_due && self.prefetch {
            if let Some(q) = request.query.question() {
                let _ = self
                    .jobs
                    .try_send(Work::Prefetch(Box::new(q.qname), q.qtype));
            }
        }
        let (class, imputed) = match hit.rcode {
            Rcode::NXDOMAIN => (ResponseClass::Nxdomain, hit.zone),
            _ if hit.nodata => (ResponseClass::Nodata, None),
            _ => (ResponseClass::Positive, None),
        };
        Some(Answered {
            rcode: hit.rcode,
            truncated: false,
            class,
            imputed,
        })
    }

    /// The job that resolves `request` and replies; `None` for a query
    /// with no question to resolve (auth already checked there is one).
    pub fn defer(&self, request: &RecursionRequest<'_>, client: Client) -> Option<Deferred> {
        let q = request.query.question()?;
        let query = request.query.as_bytes().to_vec();
        let (limit, cookie, cookie_valid) = (request.limit, request.cookie, request.cookie_valid);
        let jobs = self.jobs.clone();
        let counters = Arc::clone(&self.counters);
        self.counters.resolutions.fetch_add(1, Ordering::Relaxed);
        Some(Box::new(move |responder: Responder| {
            let job = Job {
                client,
                query,
                qname: q.qname,
                qtype: q.qtype,
                limit,
                cookie,
                cookie_valid,
                responder,
            };
            if let Err(e) = jobs.try_send(Work::Resolve(Box::new(job))) {
                // Full (or stopping): the client hears at once, not never.
                counters.queue_full.fetch_add(1, Ordering::Relaxed);
                let (mpsc::error::TrySendError::Full(Work::Resolve(job))
                | mpsc::error::TrySendError::Closed(Work::Resolve(job))) = e
                else {
                    return;
                };
                let failure = Resolution::failure(
                    bulwark_resolver::ede::OTHER,
                    "too many questions being resolved",
                );
                let replies = Replies {
                    counters: &counters,
                    rrl: None,
                    tap: None,
                };
                reply(&job, &failure, replies);
            }
        }))
    }
}

/// A response written from the cache.
#[derive(Debug, Clone)]
pub struct Answered {
    pub rcode: Rcode,
    pub truncated: bool,
    /// What response rate limiting counts it under (RRL's class and
    /// imputed name, as for an authoritative answer): `None` for the
    /// question's own name (RRL folds its case).
    pub class: ResponseClass,
    pub imputed: Option<Name>,
}

/// The class and imputed name rate limiting counts a resolver's answer
/// under: the question's name (`None`), or for NXDOMAIN the zone whose SOA
/// came with it, so that random names under one zone share one budget.
fn rate_limit_key(rcode: Rcode, resolution: &Resolution) -> (ResponseClass, Option<Name>) {
    match rcode {
        Rcode::NOERROR if !resolution.authority.is_empty() => (ResponseClass::Nodata, None),
        Rcode::NOERROR => (ResponseClass::Positive, None),
        Rcode::NXDOMAIN => (
            ResponseClass::Nxdomain,
            resolution.authority.first().map(|soa| soa.owner.clone()),
        ),
        _ => (ResponseClass::Error, Some(Name::root())),
    }
}

/// Writes the response to `request` into `out`, with the client's COOKIE.
fn write(
    request: &RecursionRequest<'_>,
    resolution: &Resolution,
    out: &mut Vec<u8>,
) -> Option<(Rcode, bool)> {
    out.clear();
    let options = cookie_option(request);
    write_response(
        &request.query,
        resolution,
        request.limit,
        options.as_slice(),
        out,
    )
}

/// The COOKIE option a response to `request` carries, if any.
fn cookie_option<'r>(request: &'r RecursionRequest<'_>) -> Option<EdnsOption<'r>> {
    request
        .cookie
        .as_ref()
        .map(|(client, server)| EdnsOption::Cookie {
            client: *client,
            server: Some(&server[..]),
        })
}

/// What replying needs beside the job: counters, and in the driver the
/// rate limiter and dnstap.
struct Replies<'a> {
    counters: &'a RecursionCounters,
    /// `None` when rate limiting is off, or for the immediate SERVFAIL of a
    /// full queue.
    rrl: Option<(&'a Rrl, u64)>,
    tap: Option<&'a mut ResolverTap>,
}

/// Sends `resolution` to the job's client: rate-limited over UDP as every
/// answer is (a resolved answer is as good a reflection as a cached one),
/// and logged to dnstap when on.
fn reply(job: &Job, resolution: &Resolution, replies: Replies<'_>) {
    let counters = replies.counters;
    // The header's fourth octet holds CD (0x10).
    let checking_disabled = job.query.get(3).is_some_and(|b| b & 0x10 != 0);
    counters.servfail(resolution, checking_disabled);
    let Ok(view) = bulwark_proto::message::MessageView::parse(&job.query) else {
        return;
    };
    let request = RecursionRequest {
        query: view,
        limit: job.limit,
        cookie: job.cookie,
        cookie_valid: job.cookie_valid,
    };
    let mut out = Vec::new();
    let Some((rcode, _)) = write(&request, resolution, &mut out) else {
        return;
    };
    if let Some((rrl, now)) = replies
        .rrl
        .filter(|_| !job.client.via.is_stream() && !job.cookie_valid)
    {
        let (class, imputed) = rate_limit_key(rcode, resolution);
        match rrl.check(
            job.client.peer.ip().to_canonical(),
            class,
            imputed.as_ref().unwrap_or(&job.qname).as_wire(),
            now,
        ) {
            RrlVerdict::Pass => {}
            RrlVerdict::Drop => return,
            RrlVerdict::Slip => {
                if !truncate_to_question(&mut out) {
                    return;
                }
            }
        }
    }
    if job.client.padded {
        pad_to_block(&mut out, RESPONSE_BLOCK, usize::from(u16::MAX));
    }
    counters.driver_answers.fetch_add(1, Ordering::Relaxed);
    if let Some(tap) = replies.tap {
        let c = job.client;
        tap.client_response(c.peer, c.local, c.via.protocol(), &out);
    }
    // A client gone (a closed TCP connection) is no one's loss.
    let _ = job.responder.try_send(out);
}
