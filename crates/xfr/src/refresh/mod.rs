//! A secondary zone kept current with its primaries (RFC 1034 §4.3.5), as
//! a sans-I/O engine the server drives, in the manner of quinn-proto's
//! `Connection`.
//!
//! The engine asks a primary for its SOA every REFRESH seconds (at once on
//! a NOTIFY, RFC 1996 §3.11), transfers the zone when the primary's serial
//! is newer (IXFR from the copy held, RFC 1995, falling back to AXFR, RFC
//! 5936), tries the primaries in order and each address in order, retries
//! every RETRY seconds when none answers (a zone never transferred retries
//! after 1, 2, 4... up to 60 seconds), and says to stop serving the copy
//! once EXPIRE seconds passed without a successful refresh.
//!
//! The server feeds it time ([`Refresh::handle_timeout`] when
//! [`Refresh::poll_timeout`] passes), NOTIFYs ([`Refresh::handle_notify`])
//! and answers ([`Refresh::handle_response`]); it sends what
//! [`Refresh::poll_transmit`] asks (queries already built and signed), and
//! carries out [`Refresh::poll_event`]'s events on its store and zones. The
//! engine reads no clock and draws its query IDs and jitter from the
//! [`Randomness`] it is given.

mod check;
mod timers;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bulwark_proto::rdata::Soa;
use bulwark_proto::{Name, Rdata, Record, Rtype};

use crate::remote::Remote;
use crate::serial::serial_gt;
use crate::transfer_in::{
    build_soa_query, build_transfer_query, read_soa_response, TransferError, TransferLimits,
    TransferReader,
};
use crate::tsig::{sign_request, ResponseVerifier, TsigError, TsigFailure, TsigKey, DEFAULT_FUDGE};

pub use check::{Fetched, TransferCheck};
pub use timers::{
    clamp, jittered, Timers, FIRST_RETRY, MAX_FIRST_RETRY, MAX_INTERVAL, MIN_INTERVAL,
};

/// How long one query, or one message of a transfer, may take.
pub const QUERY_WAIT: Duration = Duration::from_secs(5);

/// Where query IDs and jitter come from. Query IDs must be unpredictable
/// (RFC 5452 §9.2): the server gives a cryptographic generator; `None` when
/// it fails, and then no query is sent.
pub trait Randomness: Send {
    fn random_u16(&mut self) -> Option<u16>;
}

/// What the server holds of the zone when its refresh starts.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// The SOA of the copy held (served or expired), if any.
    pub held: Option<Record>,
    /// The timers stored by an earlier run.
    pub timers: Option<Timers>,
    /// Whether the copy is being served (not expired).
    pub served: bool,
}

/// A query to send to a primary, built and signed.
#[derive(Debug)]
pub struct Transmit {
    /// The primary, as configured.
    pub remote: Arc<Remote>,
    /// The address to send to, and the local address to send from.
    pub to: SocketAddr,
    pub via: Option<IpAddr>,
    pub message: Vec<u8>,
    /// How long each step (the answer, each message of a transfer) may take.
    pub wait: Duration,
    pub kind: TransmitKind,
}

/// How to send a [`Transmit`] and what to report back.
#[derive(Debug)]
pub enum TransmitKind {
    /// An SOA query: over UDP (again over TCP when truncated); hand the
    /// answer to [`Refresh::handle_response`] as [`Reply::Soa`].
    Soa,
    /// A zone transfer over TCP: feed each message to the check, apply what
    /// its `finish` gives, and report as [`Reply::Transfer`].
    Transfer(Box<TransferCheck>),
}

/// What became of a [`Transmit`].
#[derive(Debug)]
pub enum Reply {
    /// The answer to the SOA query, or why none came.
    Soa(Result<Vec<u8>, RefreshError>),
    /// The transfer, applied or not.
    Transfer(Result<Transferred, RefreshError>),
}

/// A transfer that went through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transferred {
    /// The primary said the copy held is current.
    UpToDate,
    /// The version fetched is now the copy held; its SOA.
    Applied { soa: Box<Record> },
}

/// What the server must do, or may log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Store these timers (after every refresh, successful or not).
    SaveTimers(Timers),
    /// RFC 1034 §4.3.5: EXPIRE passed without a successful refresh: stop
    /// serving the copy (keep it: the next transfer may be incremental).
    Expire,
    /// A primary confirmed the expired copy is current: serve it again.
    Revive,
    /// A primary confirmed the copy at `serial` is current.
    Current { serial: u32 },
    /// A primary's serial is older than the copy's (the copy is kept).
    Older {
        from: SocketAddr,
        primary: u32,
        ours: u32,
    },
    /// A refresh from one address of a primary failed; the next is tried.
    PrimaryFailed {
        remote: String,
        from: SocketAddr,
        error: RefreshError,
    },
    /// The IXFR failed; an AXFR from the same address comes next.
    IxfrFailed {
        from: SocketAddr,
        error: RefreshError,
    },
}

/// Why a refresh from one primary failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefreshError {
    /// The exchange itself: no answer in time, connection refused...
    #[error("{0}")]
    Exchange(String),
    #[error("no random number for a query ID")]
    NoRandom,
    #[error("cannot build the query: {0}")]
    Build(TransferError),
    #[error("cannot sign the request: {0}")]
    Sign(TsigError),
    #[error("the response's TSIG does not verify: {0}")]
    Tsig(TsigFailure),
    /// The answer was refused (RFC 5936 §3: a primary is not trusted).
    #[error("{0}")]
    Answer(TransferError),
    #[error("the response is malformed: {0}")]
    Unusable(String),
    /// The server could not apply what was fetched.
    #[error("{0}")]
    Apply(String),
}

/// One secondary zone's refresh.
pub struct Refresh {
    apex: Name,
    primaries: Vec<Arc<Remote>>,
    /// The SOA of the copy held.
    held: Option<Record>,
    timers: Timers,
    /// The copy is held but not served.
    expired: bool,
    /// The next retry of a zone never transferred.
    first_retry: u64,
    state: State,
    /// A NOTIFY came during a refresh: refresh again once it ends.
    notified: bool,
    events: VecDeque<Event>,
    random: Box<dyn Randomness>,
}

impl std::fmt::Debug for Refresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refresh")
            .field("apex", &self.apex)
            .field("timers", &self.timers)
            .field("expired", &self.expired)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
enum State {
    /// Waiting until `at` (Unix seconds).
    Idle {
        at: u64,
    },
    Refreshing(Attempt),
}

/// One refresh: the primaries as they were when it began, the address
/// being tried, and the step there.
#[derive(Debug)]
struct Attempt {
    primaries: Vec<Arc<Remote>>,
    remote: usize,
    address: usize,
    step: Step,
}

#[derive(Debug)]
enum Step {
    /// Send the SOA query.
    Soa,
    /// The SOA query went out with `id`.
    AwaitSoa {
        id: u16,
        verifier: Option<Box<ResponseVerifier>>,
    },
    /// Send the transfer query.
    Transfer(Rtype),
    /// The transfer is under way.
    AwaitTransfer(Rtype),
}

impl Attempt {
    fn new(primaries: Vec<Arc<Remote>>) -> Attempt {
        let mut a = Attempt {
            primaries,
            remote: 0,
            address: 0,
            step: Step::Soa,
        };
        a.skip_empty();
        a
    }

    /// The primary and address being tried; `None` once all were.
    fn current(&self) -> Option<(Arc<Remote>, SocketAddr)> {
        let remote = self.primaries.get(self.remote)?;
        let addr = remote.addresses.get(self.address)?;
        Some((Arc::clone(remote), *addr))
    }

    /// On to the next address, or the next primary's first.
    fn advance(&mut self) {
        self.step = Step::Soa;
        self.address = self.address.saturating_add(1);
        self.skip_empty();
    }

    fn skip_empty(&mut self) {
        while let Some(r) = self.primaries.get(self.remote) {
            if self.address < r.addresses.len() {
                return;
            }
            self.remote = self.remote.saturating_add(1);
            self.address = 0;
        }
    }
}

/// The SOA fields of `record`, if it is an SOA.
fn soa_fields(record: &Record) -> Option<&Soa> {
    match &record.rdata {
        Rdata::Soa(s) => Some(s),
        _ => None,
    }
}

impl Refresh {
    /// The refresh of the zone at `apex` from `primaries` (tried in order),
    /// starting from what the server holds. A zone with no copy refreshes at
    /// once; one with a copy when its stored timers say.
    pub fn new(
        apex: Name,
        primaries: Vec<Arc<Remote>>,
        start: Start,
        random: Box<dyn Randomness>,
    ) -> Refresh {
        let timers = start.timers.unwrap_or_default();
        let at = if start.held.is_some() {
            timers.next_refresh
        } else {
            0
        };
        Refresh {
            apex,
            primaries,
            expired: start.held.is_some() && !start.served,
            held: start.held,
            timers,
            first_retry: FIRST_RETRY,
            state: State::Idle { at },
            notified: false,
            events: VecDeque::new(),
            random,
        }
    }

    pub fn apex(&self) -> &Name {
        &self.apex
    }

    /// The timers as they stand.
    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// The primaries the next refresh asks (the configuration was reloaded).
    pub fn set_primaries(&mut self, primaries: Vec<Arc<Remote>>) {
        self.primaries = primaries;
    }

    /// When [`Refresh::handle_timeout`] is next due; `None` while a refresh
    /// waits on an answer (the server bounds each by [`Transmit::wait`]).
    pub fn poll_timeout(&self) -> Option<u64> {
        match &self.state {
            State::Idle { at } => Some(*at),
            State::Refreshing(_) => None,
        }
    }

    /// Time has come to `now`: a refresh starts when due.
    pub fn handle_timeout(&mut self, now: u64) {
        if let State::Idle { at } = self.state {
            if at <= now {
                self.begin();
            }
        }
    }

    /// RFC 1996 §3.11: a NOTIFY was accepted: refresh now, or once the
    /// refresh under way ends.
    pub fn handle_notify(&mut self, _now: u64) {
        match self.state {
            State::Idle { .. } => self.begin(),
            State::Refreshing(_) => self.notified = true,
        }
    }

    /// The next query to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit> {
        loop {
            let State::Refreshing(attempt) = &mut self.state else {
                return None;
            };
            let Some((remote, to)) = attempt.current() else {
                self.failed(now);
                return None;
            };
            let built = match attempt.step {
                Step::Soa => self
                    .soa_query(&remote, now)
                    .map(|(message, step)| (message, step, TransmitKind::Soa)),
                Step::Transfer(qtype) => {
                    self.transfer_query(&remote, qtype, now)
                        .map(|(message, check)| {
                            (
                                message,
                                Step::AwaitTransfer(qtype),
                                TransmitKind::Transfer(Box::new(check)),
                            )
                        })
                }
                Step::AwaitSoa { .. } | Step::AwaitTransfer(_) => return None,
            };
            match built {
                Ok((message, step, kind)) => {
                    if let State::Refreshing(attempt) = &mut self.state {
                        attempt.step = step;
                    }
                    return Some(Transmit {
                        via: remote.via,
                        remote,
                        to,
                        message,
                        wait: QUERY_WAIT,
                        kind,
                    });
                }
                Err(error) => self.address_failed(now, &remote, to, error),
            }
        }
    }

    /// What came of the last [`Transmit`], at `now`.
    pub fn handle_response(&mut self, now: u64, reply: Reply) {
        let State::Refreshing(attempt) = &mut self.state else {
            return;
        };
        let Some((remote, from)) = attempt.current() else {
            return;
        };
        let step = std::mem::replace(&mut attempt.step, Step::Soa);
        match (step, reply) {
            (Step::AwaitSoa { id, verifier }, Reply::Soa(answer)) => {
                match answer.and_then(|msg| self.judge_soa(&msg, id, verifier, now)) {
                    Ok(soa) => self.compare(now, from, soa),
                    Err(error) => self.address_failed(now, &remote, from, error),
                }
            }
            (Step::AwaitTransfer(qtype), Reply::Transfer(result)) => {
                let outcome = result.and_then(|t| match t {
                    Transferred::Applied { soa } => {
                        self.held = Some((*soa).clone());
                        self.expired = false;
                        Ok(*soa)
                    }
                    Transferred::UpToDate => self.held.clone().ok_or_else(|| {
                        RefreshError::Unusable("an up-to-date answer to AXFR".to_string())
                    }),
                });
                match outcome {
                    Ok(soa) => self.succeeded(now, from, &soa),
                    // IXFR from the copy held, AXFR when it fails.
                    Err(error) if qtype == Rtype::IXFR => {
                        self.events.push_back(Event::IxfrFailed { from, error });
                        if let State::Refreshing(attempt) = &mut self.state {
                            attempt.step = Step::Transfer(Rtype::AXFR);
                        }
                    }
                    Err(error) => self.address_failed(now, &remote, from, error),
                }
            }
            // Not the answer awaited: the step stands.
            (step, _) => {
                if let State::Refreshing(attempt) = &mut self.state {
                    attempt.step = step;
                }
            }
        }
    }

    /// The next thing the server must do or may log.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn begin(&mut self) {
        self.notified = false;
        self.state = State::Refreshing(Attempt::new(self.primaries.clone()));
    }

    /// Checks the SOA answer's TSIG and reads the primary's SOA.
    fn judge_soa(
        &self,
        msg: &[u8],
        id: u16,
        verifier: Option<Box<ResponseVerifier>>,
        now: u64,
    ) -> Result<Record, RefreshError> {
        if let Some(mut v) = verifier {
            v.verify(msg, now).map_err(RefreshError::Tsig)?;
        }
        let answer = read_soa_response(msg, id, &self.apex).map_err(RefreshError::Answer)?;
        Ok(answer.soa)
    }

    /// RFC 1996 §3.11, RFC 1034 §4.3.5: the copy is current unless the
    /// primary's serial is newer (RFC 1982); then it is transferred.
    fn compare(&mut self, now: u64, from: SocketAddr, soa: Record) {
        let primary = soa_fields(&soa).map(|s| s.serial);
        let ours = self.held.as_ref().and_then(soa_fields).map(|s| s.serial);
        if let (Some(primary), Some(ours)) = (primary, ours) {
            if !serial_gt(primary, ours) {
                if primary != ours {
                    self.events.push_back(Event::Older {
                        from,
                        primary,
                        ours,
                    });
                }
                // Served again if it had expired: the primary vouches for it.
                if self.expired {
                    self.expired = false;
                    self.events.push_back(Event::Revive);
                }
                self.events.push_back(Event::Current { serial: ours });
                self.succeeded(now, from, &soa);
                return;
            }
        }
        let qtype = if self.held.is_some() {
            Rtype::IXFR
        } else {
            Rtype::AXFR
        };
        if let State::Refreshing(attempt) = &mut self.state {
            attempt.step = Step::Transfer(qtype);
        }
    }

    /// The copy is current as of `soa`, confirmed by `from`: its timers run
    /// from now.
    fn succeeded(&mut self, now: u64, from: SocketAddr, soa: &Record) {
        self.first_retry = FIRST_RETRY;
        if let Some(fields) = soa_fields(soa) {
            self.timers.refreshed(fields, now, from.to_string());
        }
        self.events
            .push_back(Event::SaveTimers(self.timers.clone()));
        self.idle(now, self.timers.next_refresh);
    }

    fn address_failed(&mut self, now: u64, remote: &Remote, from: SocketAddr, error: RefreshError) {
        self.events.push_back(Event::PrimaryFailed {
            remote: remote.name.clone(),
            from,
            error,
        });
        if let State::Refreshing(attempt) = &mut self.state {
            attempt.advance();
            if attempt.current().is_none() {
                self.failed(now);
            }
        }
    }

    /// No primary answered, or none could transfer: retry after the copy's
    /// RETRY (or the doubling first retry when there is no copy), and expire
    /// the copy once EXPIRE has passed.
    fn failed(&mut self, now: u64) {
        let retry = match self.held.as_ref().and_then(soa_fields) {
            Some(f) => clamp(f.retry),
            None => {
                let r = self.first_retry;
                self.first_retry = self.first_retry.saturating_mul(2).min(MAX_FIRST_RETRY);
                r
            }
        };
        let retry = jittered(retry, self.random.random_u16());
        self.timers.next_refresh = now.saturating_add(retry);
        if self.timers.expired(now) {
            self.expired = self.held.is_some();
            self.events.push_back(Event::Expire);
        }
        self.events
            .push_back(Event::SaveTimers(self.timers.clone()));
        self.idle(now, self.timers.next_refresh);
    }

    /// Waits until `at`, or not at all when a NOTIFY came meanwhile.
    fn idle(&mut self, now: u64, at: u64) {
        let at = if self.notified { now } else { at };
        self.notified = false;
        self.state = State::Idle { at };
    }

    fn query_id(&mut self) -> Result<u16, RefreshError> {
        self.random.random_u16().ok_or(RefreshError::NoRandom)
    }

    /// RFC 1996 §3.11 / RFC 1034 §4.3.5: the serial is compared before
    /// transferring.
    fn soa_query(&mut self, remote: &Remote, now: u64) -> Result<(Vec<u8>, Step), RefreshError> {
        let id = self.query_id()?;
        let mut message = Vec::new();
        build_soa_query(id, &self.apex, &mut message).map_err(RefreshError::Build)?;
        let verifier = sign(&mut message, remote.key.as_deref(), now)?.map(Box::new);
        Ok((message, Step::AwaitSoa { id, verifier }))
    }

    /// An AXFR, or an IXFR from the copy held (RFC 1995 §3).
    fn transfer_query(
        &mut self,
        remote: &Remote,
        qtype: Rtype,
        now: u64,
    ) -> Result<(Vec<u8>, TransferCheck), RefreshError> {
        let id = self.query_id()?;
        let held = if qtype == Rtype::IXFR {
            self.held.clone()
        } else {
            None
        };
        let mut message = Vec::new();
        build_transfer_query(id, &self.apex, qtype, held.as_ref(), &mut message)
            .map_err(RefreshError::Build)?;
        let verifier = sign(&mut message, remote.key.as_deref(), now)?;
        let held_serial = held.as_ref().and_then(soa_fields).map(|s| s.serial);
        let reader = TransferReader::new(
            self.apex.clone(),
            qtype,
            id,
            held_serial,
            TransferLimits::default(),
        );
        Ok((
            message,
            TransferCheck {
                verifier,
                reader,
                qtype,
                held,
            },
        ))
    }
}

/// Signs `message` with `key` when there is one (RFC 8945 §4.3.1); the
/// checker of the response's messages.
fn sign(
    message: &mut Vec<u8>,
    key: Option<&TsigKey>,
    now: u64,
) -> Result<Option<ResponseVerifier>, RefreshError> {
    let Some(key) = key else {
        return Ok(None);
    };
    let mac = sign_request(message, key, now, DEFAULT_FUDGE).map_err(RefreshError::Sign)?;
    Ok(Some(ResponseVerifier::new(key, &mac)))
}
