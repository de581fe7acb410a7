//! dnstap on the query path: each handler holds a `QueryTap` that copies the
//! query and its response to the dnstap queues without ever waiting.
//!
//! The queues (crate `bulwark-dnstap`, one bounded queue per `Tap`) are
//! emptied by the writer thread in `tap/writer.rs`. Every UDP worker gets a
//! queue of its own, so workers never contend; TCP connections come and go, so
//! they share one queue (siblings of the one TCP tap kept here). A full queue
//! drops the message and counts it: answering never waits for the logger.

mod resolver;
mod writer;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bulwark_dnstap::{MessageContext, MessageKind, Protocol, SinkConfig, Tap, Timestamp};

use crate::settings::{Destination, DnstapSettings};
use crate::via::Via;
pub use resolver::{ResolverTap, Upstream};
pub use writer::TapWriter;

/// Counters the statistics show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapCounters {
    pub sent: u64,
    pub dropped: u64,
    pub reconnects: u64,
}

/// The running writer that every `QueryTap` feeds.
#[derive(Debug)]
pub struct TapSource {
    /// `None` once stopped.
    sink: Mutex<Option<TapWriter>>,
    /// The queue all TCP connections share; each takes a sibling of it.
    tcp: Mutex<Option<Tap>>,
    /// What the sink said when it stopped, so counters outlive it.
    last: Mutex<TapCounters>,
}

impl TapSource {
    /// Opens the destination (a file now; a socket is connected by the writer,
    /// with back-off) and starts the writer thread.
    pub fn start(settings: &DnstapSettings) -> anyhow::Result<Arc<TapSource>> {
        let config = SinkConfig {
            identity: settings.identity.clone(),
            version: settings.version.clone(),
            kinds: settings.kinds,
            queue_capacity: settings.queue_size,
        };
        let sink = TapWriter::start(&settings.destination, &config)
            .map_err(|e| anyhow::anyhow!("{}: {e}", describe(&settings.destination)))?;
        let tcp = sink.tap();
        tracing::info!(destination = %describe(&settings.destination), "dnstap on");
        Ok(Arc::new(TapSource {
            sink: Mutex::new(Some(sink)),
            tcp: Mutex::new(Some(tcp)),
            last: Mutex::new(TapCounters::default()),
        }))
    }

    pub fn counters(&self) -> TapCounters {
        if let Ok(g) = self.sink.lock() {
            if let Some(sink) = g.as_ref() {
                return from_stats(sink.stats());
            }
        }
        self.last.lock().map(|c| *c).unwrap_or_default()
    }

    /// SIGHUP / `ctl reload`: a file destination is reopened (rotated).
    pub fn rotate(&self) {
        if let Ok(g) = self.sink.lock() {
            if let Some(sink) = g.as_ref() {
                sink.rotate();
            }
        }
    }

    /// Flushes, ends the stream cleanly (STOP/FINISH) and joins the writer.
    /// Later calls do nothing.
    pub fn stop(&self) {
        if let Ok(mut t) = self.tcp.lock() {
            t.take();
        }
        let sink = self.sink.lock().ok().and_then(|mut g| g.take());
        if let Some(sink) = sink {
            sink.stop();
            // The final numbers: what the writer flushed before it ended.
            if let Ok(mut last) = self.last.lock() {
                *last = from_stats(sink.stats());
            }
            let c = self.counters();
            tracing::info!(
                sent = c.sent,
                dropped = c.dropped,
                reconnects = c.reconnects,
                "dnstap stopped"
            );
        }
    }

    /// A queue of its own for the resolving task; `None` once stopped or
    /// when none of the kinds it logs is wanted.
    pub fn resolver_tap(&self) -> Option<ResolverTap> {
        let tap = self.sink.lock().ok()?.as_ref().map(TapWriter::tap)?;
        ResolverTap::new(tap)
    }

    /// A queue for one handler: its own for a UDP worker, the shared TCP
    /// queue for a TCP connection. `None` once stopped.
    fn tap_for(&self, via: Via) -> Option<Tap> {
        match via {
            Via::Udp => self.sink.lock().ok()?.as_ref().map(TapWriter::tap),
            Via::Tcp | Via::Tls | Via::Https | Via::Quic => {
                self.tcp.lock().ok()?.as_ref().map(Tap::sibling)
            }
        }
    }
}

fn from_stats(s: bulwark_dnstap::SinkStats) -> TapCounters {
    TapCounters {
        sent: s.sent,
        dropped: s.dropped,
        reconnects: s.reconnects,
    }
}

fn describe(d: &Destination) -> String {
    match d {
        Destination::File { path, .. } => format!("file:{}", path.display()),
        Destination::Unix(p) => format!("unix:{}", p.display()),
        Destination::Tcp(a) => format!("tcp:{a}"),
    }
}

/// One handler's tap. Cheap when dnstap is off: one branch per query.
#[derive(Debug)]
pub struct QueryTap {
    on: Option<TapOn>,
}

#[derive(Debug)]
struct TapOn {
    tap: Tap,
    protocol: Protocol,
}

impl QueryTap {
    pub fn new(source: Option<&Arc<TapSource>>, via: Via) -> QueryTap {
        // Off altogether (no clock read per query) unless one of the kinds
        // this role produces is wanted.
        let on = source.and_then(|s| s.tap_for(via)).and_then(|tap| {
            let wanted = [
                MessageKind::AuthQuery,
                MessageKind::AuthResponse,
                MessageKind::ClientQuery,
                MessageKind::ClientResponse,
            ]
            .iter()
            .any(|k| tap.wants(*k));
            wanted.then_some(TapOn {
                tap,
                protocol: via.protocol(),
            })
        });
        QueryTap { on }
    }

    /// AUTH_QUERY for `query`, and AUTH_RESPONSE for `response` if one is sent.
    #[inline]
    pub fn auth(
        &mut self,
        peer: SocketAddr,
        local: SocketAddr,
        query: &[u8],
        response: Option<&[u8]>,
    ) {
        let Some(on) = self.on.as_mut() else {
            return;
        };
        on.log(peer, local, query, response, ROLE_AUTH);
    }

    /// CLIENT_QUERY for a query the server recursed for, and CLIENT_RESPONSE
    /// when it was answered at once (from the cache); a resolved answer's
    /// CLIENT_RESPONSE is logged by the resolving task when it is sent.
    #[inline]
    pub fn client(
        &mut self,
        peer: SocketAddr,
        local: SocketAddr,
        query: &[u8],
        response: Option<&[u8]>,
    ) {
        let Some(on) = self.on.as_mut() else {
            return;
        };
        on.log(peer, local, query, response, ROLE_CLIENT);
    }

    /// Queues what was logged since the last call (see `Tap::flush`).
    pub fn flush(&mut self) {
        if let Some(on) = self.on.as_mut() {
            on.tap.flush();
        }
    }
}

/// The kinds a query and its response are logged as, by the server's role.
const ROLE_AUTH: (MessageKind, MessageKind) = (MessageKind::AuthQuery, MessageKind::AuthResponse);
const ROLE_CLIENT: (MessageKind, MessageKind) =
    (MessageKind::ClientQuery, MessageKind::ClientResponse);

impl TapOn {
    fn log(
        &mut self,
        peer: SocketAddr,
        local: SocketAddr,
        query: &[u8],
        response: Option<&[u8]>,
        (query_kind, response_kind): (MessageKind, MessageKind),
    ) {
        // One clock read per query: the answer is computed in microseconds,
        // below what dnstap readers show, and the handler is called after it.
        let now = wall_clock();
        let ctx = MessageContext {
            protocol: self.protocol,
            client: peer,
            server: local,
            query_time: Some(now),
            response_time: response.map(|_| now),
            query_zone: None,
        };
        // The kinds the sink does not want are skipped inside.
        self.tap.log_exchange(
            &ctx,
            (query_kind, query),
            response.map(|r| (response_kind, r)),
        );
    }
}

/// The wall clock now, as dnstap carries it. A clock before 1970 is
/// misconfigured; log zero rather than fail.
fn wall_clock() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(Timestamp::from_unix)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn the_wall_clock_is_after_2020() {
        let now = wall_clock();
        assert!(now.secs > 1_577_836_800);
        assert!(now.nanos < 1_000_000_000);
    }

    #[test]
    fn off_tap_logs_nothing() {
        let mut t = QueryTap::new(None, Via::Udp);
        assert!(t.on.is_none());
        t.auth(
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:53".parse().unwrap(),
            &[0; 12],
            None,
        );
    }
}
