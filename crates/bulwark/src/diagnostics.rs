//! The one way a per-packet event reaches the log. Anything a stranger can
//! trigger by sending a packet (a bad TSIG, a refused transfer, NOTIFY or
//! UPDATE, a malformed message, an ACL refusal, a rejected cookie) goes
//! through [`Reporter::report`]: a few lines per second per kind, each naming
//! the client, then silence, with a line every [`SUMMARY_EVERY`] saying how
//! many were left out. The metrics count every event.

use std::fmt::Display;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bulwark_guard::{ReportLimit, DEFAULT_LINES_PER_SECOND};
use bulwark_net::Shutdown;

use crate::clock::CoarseClock;

/// How often the counts of left-out lines are logged.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// A kind of event one packet can cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// RFC 8945 §5.2: a TSIG that did not verify.
    BadTsig,
    /// AXFR or IXFR from a client the zone's `allow_transfer` does not list.
    TransferRefused,
    /// NOTIFY from a sender that is not a primary of the zone.
    NotifyRefused,
    /// UPDATE refused by the zone's `allow_update`, or with nowhere to store it.
    UpdateRefused,
    /// A message that could not be read (FORMERR, or dropped unread).
    Malformed,
    /// A listener or zone ACL refused or dropped the client.
    AclDenied,
    /// RFC 7873 §5.2.3: an answer withheld for want of a valid cookie.
    CookieRejected,
}

impl Event {
    pub const ALL: [Event; 7] = [
        Event::BadTsig,
        Event::TransferRefused,
        Event::NotifyRefused,
        Event::UpdateRefused,
        Event::Malformed,
        Event::AclDenied,
        Event::CookieRejected,
    ];

    /// The label in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Event::BadTsig => "bad_tsig",
            Event::TransferRefused => "transfer_refused",
            Event::NotifyRefused => "notify_refused",
            Event::UpdateRefused => "update_refused",
            Event::Malformed => "malformed",
            Event::AclDenied => "acl_denied",
            Event::CookieRejected => "cookie_rejected",
        }
    }

    /// What the log line says happened.
    fn what(self) -> &'static str {
        match self {
            Event::BadTsig => "TSIG check failed",
            Event::TransferRefused => "transfer refused",
            Event::NotifyRefused => "NOTIFY refused",
            Event::UpdateRefused => "UPDATE refused",
            Event::Malformed => "malformed message",
            Event::AclDenied => "refused by ACL",
            Event::CookieRejected => "cookie rejected",
        }
    }

    /// Refusals of replication and bad signatures are worth an operator's
    /// eye (INFO); malformed packets, ACL hits and cookie failures are the
    /// internet's background noise (DEBUG).
    fn is_notable(self) -> bool {
        matches!(
            self,
            Event::BadTsig | Event::TransferRefused | Event::NotifyRefused | Event::UpdateRefused
        )
    }
}

/// Counts every per-packet event and logs a few of each kind per second.
#[derive(Debug)]
pub struct Reporter {
    limits: Limits,
    clock: CoarseClock,
}

/// One limit per [`Event`].
#[derive(Debug)]
struct Limits {
    bad_tsig: ReportLimit,
    transfer_refused: ReportLimit,
    notify_refused: ReportLimit,
    update_refused: ReportLimit,
    malformed: ReportLimit,
    acl_denied: ReportLimit,
    cookie_rejected: ReportLimit,
}

/// One kind's counts, for metrics.
#[derive(Debug, Clone, Copy)]
pub struct EventCount {
    pub event: Event,
    /// Every event, logged or not.
    pub events: u64,
    /// Events whose line was left out of the log.
    pub suppressed: u64,
}

impl Reporter {
    pub fn new(clock: CoarseClock) -> Reporter {
        Reporter::with_lines_per_second(clock, DEFAULT_LINES_PER_SECOND)
    }

    pub fn with_lines_per_second(clock: CoarseClock, lines: u32) -> Reporter {
        Reporter {
            limits: Limits {
                bad_tsig: ReportLimit::new(lines),
                transfer_refused: ReportLimit::new(lines),
                notify_refused: ReportLimit::new(lines),
                update_refused: ReportLimit::new(lines),
                malformed: ReportLimit::new(lines),
                acl_denied: ReportLimit::new(lines),
                cookie_rejected: ReportLimit::new(lines),
            },
            clock,
        }
    }

    fn limit(&self, event: Event) -> &ReportLimit {
        let l = &self.limits;
        match event {
            Event::BadTsig => &l.bad_tsig,
            Event::TransferRefused => &l.transfer_refused,
            Event::NotifyRefused => &l.notify_refused,
            Event::UpdateRefused => &l.update_refused,
            Event::Malformed => &l.malformed,
            Event::AclDenied => &l.acl_denied,
            Event::CookieRejected => &l.cookie_rejected,
        }
    }

    /// Counts `event` from `client`, and logs it with `detail` unless its
    /// kind has used up this second's lines. `detail` is only formatted when
    /// the line is written.
    pub fn report(&self, event: Event, client: IpAddr, detail: impl Display) {
        if !self.limit(event).admit(self.clock.now()) {
            return;
        }
        if event.is_notable() {
            tracing::info!(kind = event.name(), %client, "{}: {detail}", event.what());
        } else {
            tracing::debug!(kind = event.name(), %client, "{}: {detail}", event.what());
        }
    }

    /// Every kind's counts.
    pub fn counts(&self) -> Vec<EventCount> {
        Event::ALL
            .iter()
            .map(|&event| {
                let l = self.limit(event);
                EventCount {
                    event,
                    events: l.events(),
                    suppressed: l.suppressed_total(),
                }
            })
            .collect()
    }

    /// Logs, for each kind that had lines left out since the last call, how
    /// many.
    pub fn log_suppressed(&self) {
        for &event in &Event::ALL {
            let n = self.limit(event).take_suppressed();
            if n == 0 {
                continue;
            }
            let secs = SUMMARY_EVERY.as_secs();
            if event.is_notable() {
                tracing::info!(kind = event.name(), suppressed = n, "{n} more `{}` lines left out of the log in the last {secs}s (counted in metrics)", event.what());
            } else {
                tracing::debug!(kind = event.name(), suppressed = n, "{n} more `{}` lines left out of the log in the last {secs}s (counted in metrics)", event.what());
            }
        }
    }

    /// Logs the counts of left-out lines every [`SUMMARY_EVERY`] until
    /// shutdown, and once more then.
    pub async fn run_summaries(self: Arc<Self>, shutdown: Shutdown) {
        let mut ticks = tokio::time::interval(SUMMARY_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.wait() => break,
                _ = ticks.tick() => self.log_suppressed(),
            }
        }
        self.log_suppressed();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_event_has_its_own_counter() {
        let reporter = Reporter::with_lines_per_second(CoarseClock::new(), 1);
        let client: IpAddr = "192.0.2.1".parse().unwrap();
        for (n, &event) in (1..).zip(Event::ALL.iter()) {
            for _ in 0..n {
                reporter.report(event, client, "x");
            }
        }
        let counts = reporter.counts();
        for (n, c) in (1..).zip(counts.iter()) {
            assert_eq!(c.events, n, "{:?}", c.event);
            assert_eq!(c.suppressed, n - 1, "{:?}", c.event);
        }
        let names: std::collections::HashSet<_> = Event::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names.len(), Event::ALL.len());
    }
}
