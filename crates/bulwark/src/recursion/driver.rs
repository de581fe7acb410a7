//! The task that owns the resolver engine: it feeds the engine client
//! questions, the outcomes of its exchanges and the passing of time, sends
//! the queries the engine asks for, and replies to clients as answers come.
//!
//! One task, so the engine needs no lock; each exchange with a server is a
//! task of its own (`bulwark_net::Client`: a fresh socket on a random port
//! per UDP query, answers matched by address, port, ID and question).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bulwark_dnstap::Protocol;
use bulwark_net::client::UpstreamTls;
use bulwark_net::{Client, ClientConfig, Shutdown};
use bulwark_resolver::{
    ClientQuestion, ClientToken, ExchangeError, ExchangeId, Resolver, Transmit, Transport,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::anchor_store::AnchorStore;
use super::{reply, Job, RecursionCounters, Replies, Work};
use crate::clock::CoarseClock;
use crate::tap::{ResolverTap, Upstream};
use bulwark_guard::Rrl;

/// Kept TCP connections to servers: servers close theirs after a few
/// seconds, so a short idle time; a few per server.
const CLIENT: ClientConfig = ClientConfig {
    idle_timeout: Duration::from_secs(5),
    max_idle_per_server: 4,
};

/// What one exchange came to.
struct Outcome {
    id: ExchangeId,
    result: Result<Vec<u8>, ExchangeError>,
    took: Duration,
    /// The query as sent, kept for dnstap when it is on.
    logged: Option<Logged>,
}

struct Logged {
    server: std::net::SocketAddr,
    protocol: Protocol,
    forwarded: bool,
    query: Vec<u8>,
    sent: bulwark_dnstap::Timestamp,
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn run(
    mut engine: Resolver,
    anchors: AnchorStore,
    upstream_tls: Arc<HashMap<std::net::SocketAddr, UpstreamTls>>,
    mut jobs: mpsc::Receiver<Work>,
    clock: CoarseClock,
    mut tap: Option<ResolverTap>,
    rrl: Option<Arc<Rrl>>,
    counters: Arc<RecursionCounters>,
    shutdown: Shutdown,
) {
    let client = Client::new(CLIENT);
    let mut waiting: HashMap<ClientToken, Box<Job>> = HashMap::new();
    let mut exchanges: JoinSet<Outcome> = JoinSet::new();
    let mut next_token = 0u64;
    loop {
        while let Some(t) = engine.poll_transmit() {
            counters.upstream_queries.fetch_add(1, Ordering::Relaxed);
            let tls = upstream_tls.get(&t.to).cloned();
            exchanges.spawn(exchange(client.clone(), t, tls, tap.is_some()));
        }
        while let Some(answer) = engine.poll_answer() {
            let Some(job) = waiting.remove(&answer.token) else {
                continue;
            };
            if answer.discard {
                // The client gave up long ago (DNSBomb): nothing is sent.
                counters.discarded.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let replies = Replies {
                counters: &counters,
                rrl: rrl.as_deref().map(|r| (r, clock.now())),
                tap: tap.as_mut(),
            };
            reply(&job, &answer.resolution, replies);
        }
        if let Some(tap) = tap.as_mut() {
            tap.flush();
        }
        if let Ok(mut g) = counters.engine.lock() {
            *g = engine.stats();
        }
        if anchors.save(&mut engine) {
            if let Ok(mut report) = counters.anchors.lock() {
                *report = engine.trust_anchor_report();
            }
        }
        // The engine's deadlines are on its clock, which a test may move:
        // the wait is worked out again after every event.
        let wait = engine
            .poll_timeout()
            .map(|at| Duration::from_millis(at.saturating_sub(clock.now_ms())));
        tokio::select! {
            _ = shutdown.wait() => return,
            work = jobs.recv() => {
                let job = match work {
                    None => return,
                    Some(Work::Prefetch(qname, qtype)) => {
                        engine.prefetch(&qname, qtype, clock.now_ms());
                        continue;
                    }
                    Some(Work::Resolve(job)) => job,
                };
                next_token = next_token.wrapping_add(1);
                let token = ClientToken(next_token);
                let question = ClientQuestion {
                    token,
                    client: job.client.peer.ip().to_canonical(),
                    qname: job.qname.clone(),
                    qtype: job.qtype,
                };
                match engine.handle_query(question, clock.now_ms()) {
                    Some(resolution) => {
                        let replies = Replies {
                            counters: &counters,
                            rrl: rrl.as_deref().map(|r| (r, clock.now())),
                            tap: tap.as_mut(),
                        };
                        reply(&job, &resolution, replies);
                    }
                    None => {
                        waiting.insert(token, job);
                    }
                }
            }
            Some(done) = exchanges.join_next(), if !exchanges.is_empty() => {
                if let Ok(Outcome { id, result, took, logged }) = done {
                    if let (Some(tap), Some(l)) = (tap.as_mut(), &logged) {
                        tap.upstream(&Upstream {
                            server: l.server,
                            protocol: l.protocol,
                            forwarded: l.forwarded,
                            query: &l.query,
                            sent: l.sent,
                            response: result.as_deref().ok(),
                        });
                    }
                    match &result {
                        Ok(_) => {
                            counters.upstream_answered.fetch_add(1, Ordering::Relaxed);
                            let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
                            counters.upstream_rtt_us.fetch_add(us, Ordering::Relaxed);
                        }
                        Err(ExchangeError::Timeout) => {
                            counters.upstream_timeouts.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(ExchangeError::Unreachable) => {
                            counters.upstream_errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    engine.handle_response(id, result, clock.now_ms());
                }
            }
            () = sleep(wait), if wait.is_some() => {
                engine.handle_timeout(clock.now_ms());
            }
        }
    }
}

async fn sleep(wait: Option<Duration>) {
    if let Some(w) = wait {
        tokio::time::sleep(w).await;
    }
}

/// Sends one query and waits for its answer, as the engine asked: over
/// TLS to a forwarder configured for it (whatever transport the engine
/// chose: a stream answer is never truncated), else UDP or TCP.
async fn exchange(client: Client, t: Transmit, tls: Option<UpstreamTls>, log: bool) -> Outcome {
    let timeout = Duration::from_millis(t.timeout_ms.max(1));
    let started = tokio::time::Instant::now();
    let sent = log.then(ResolverTap::now);
    let protocol = match (&tls, t.transport) {
        (Some(_), _) => Protocol::Dot,
        (None, Transport::Udp) => Protocol::Udp,
        (None, Transport::Tcp) => Protocol::Tcp,
    };
    let result = match (&tls, t.transport) {
        (Some(tls), _) => {
            client
                .exchange_tls(t.to, None, tls, &t.message, timeout)
                .await
        }
        (None, Transport::Udp) => client.exchange_udp(t.to, None, &t.message, timeout).await,
        (None, Transport::Tcp) => client.exchange_tcp(t.to, None, &t.message, timeout).await,
    };
    let result = result.map_err(|e| {
        if e.is_timeout() {
            ExchangeError::Timeout
        } else {
            tracing::debug!(server = %t.to, error = %e, "exchange failed");
            ExchangeError::Unreachable
        }
    });
    let took = started.elapsed();
    let logged = sent.map(|sent| Logged {
        server: t.to,
        protocol,
        forwarded: t.forwarded,
        query: t.message,
        sent,
    });
    Outcome {
        id: t.id,
        result,
        took,
        logged,
    }
}
