//! Secondary zones: each has a task that keeps its copy current with its
//! primaries (RFC 1034 §4.3.5): it asks a primary for its SOA every REFRESH
//! seconds (at once on a NOTIFY, RFC 1996), transfers the zone when the
//! primary's serial is newer (IXFR when it holds a copy, RFC 1995, falling
//! back to AXFR, RFC 5936), retries every RETRY seconds when no primary
//! answers, and stops serving the zone once EXPIRE seconds passed without a
//! successful refresh. Timers are kept in the store, so a restart goes on
//! where it was.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bulwark_proto::rdata::Soa;
use bulwark_proto::{Name, Rdata, Record, Rtype};
use bulwark_xfr::serial::serial_gt;
use bulwark_xfr::transfer_in::{
    build_soa_query, build_transfer_query, read_soa_response, Progress, TransferLimits,
    TransferReader, TransferResult,
};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::client::{self, check_response, ClientError, Request};
use super::settings::Remote;
use crate::config::ZoneSpec;
use crate::signing::unix_now;
use crate::zones::{ChangeError, Incoming, Zones};

/// How long one query or one message of a transfer may take.
const QUERY_WAIT: Duration = Duration::from_secs(5);
/// Retries of a zone never transferred start here and double up to
/// [`MAX_FIRST_RETRY`]: a new secondary should not wait a whole SOA RETRY
/// for a primary that was merely starting.
const FIRST_RETRY: u64 = 1;
const MAX_FIRST_RETRY: u64 = 60;
/// Bounds on the SOA timers a primary may set, as Knot's
/// `refresh-min-interval`/`refresh-max-interval` do: a REFRESH of 0 must not
/// make a busy loop, one of years must not leave a zone stale for years.
const MIN_INTERVAL: u64 = 2;
const MAX_INTERVAL: u64 = 86_400;

/// A zone's refresh task, and the way to wake it.
type RefreshTask = (Arc<Notify>, JoinHandle<()>);

/// Refreshes (SOA query and transfer) under way at once, over all zones. A
/// secondary of many zones (a catalog's thousand) must not open a thousand
/// connections to one primary at start: the primary would close most of them
/// (its per-client connection cap), and every refused zone would retry at
/// the same moments. Knot runs zone events on a small worker pool likewise.
const CONCURRENT_REFRESHES: usize = 8;

/// The refresh tasks of every secondary zone, and how to wake one.
#[derive(Debug)]
pub struct Secondaries {
    tasks: Mutex<HashMap<Name, RefreshTask>>,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Default for Secondaries {
    fn default() -> Self {
        Secondaries {
            tasks: Mutex::new(HashMap::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_REFRESHES)),
        }
    }
}

/// `seconds` plus up to a quarter more, at random: zones that failed
/// together must not all retry together.
fn jittered(seconds: u64) -> u64 {
    let spread = seconds / 4;
    if spread == 0 {
        return seconds;
    }
    // Jitter only spreads retries; without randomness there is none.
    let r = super::client::random_id().map_or(0, u64::from);
    seconds.saturating_add(r.checked_rem(spread.saturating_add(1)).unwrap_or(0))
}

impl Secondaries {
    /// Starts a task for each secondary zone of `zones` that has none, and
    /// stops those of zones no longer secondary.
    pub fn sync(&self, zones: &Arc<Zones>, shutdown: &bulwark_net::Shutdown) {
        let specs: Vec<ZoneSpec> = zones
            .specs()
            .into_iter()
            .filter(|s| s.replication.is_secondary())
            .collect();
        let Ok(mut tasks) = self.tasks.lock() else {
            return;
        };
        tasks.retain(|origin, (_, handle)| {
            let keep = specs.iter().any(|s| &s.origin == origin) && !handle.is_finished();
            if !keep {
                handle.abort();
            }
            keep
        });
        for spec in specs {
            if tasks.contains_key(&spec.origin) {
                continue;
            }
            let poke = Arc::new(Notify::new());
            let handle = tokio::spawn(refresh_forever(
                Arc::clone(zones),
                spec.origin.clone(),
                Arc::clone(&poke),
                Arc::clone(&self.slots),
                shutdown.clone(),
            ));
            tasks.insert(spec.origin, (poke, handle));
        }
    }

    /// Asks the zone's task to refresh now (a NOTIFY came). `false` when the
    /// zone is not a secondary here.
    pub fn poke(&self, origin: &Name) -> bool {
        let Ok(tasks) = self.tasks.lock() else {
            return false;
        };
        match tasks.get(origin) {
            Some((poke, _)) => {
                poke.notify_one();
                true
            }
            None => false,
        }
    }
}

/// The SOA fields a secondary runs its timers on.
fn soa_fields(soa: &Record) -> Option<&Soa> {
    match &soa.rdata {
        Rdata::Soa(s) => Some(s),
        _ => None,
    }
}

fn clamp(seconds: u32) -> u64 {
    u64::from(seconds).clamp(MIN_INTERVAL, MAX_INTERVAL)
}

/// What one refresh attempt found.
enum Refreshed {
    /// The copy is current (or now is): the primary's SOA timers.
    Current { soa: Box<Record>, primary: String },
    /// No primary answered or none could transfer.
    Failed,
}

async fn refresh_forever(
    zones: Arc<Zones>,
    origin: Name,
    poke: Arc<Notify>,
    slots: Arc<tokio::sync::Semaphore>,
    shutdown: bulwark_net::Shutdown,
) {
    let mut first_retry = FIRST_RETRY;
    loop {
        let now = unix_now();
        let timers = zones.timers(&origin).unwrap_or_default();
        let have_copy = zones.held_soa(&origin).is_some();
        // A zone with no copy, or whose stored timers are due, refreshes now.
        let due = if have_copy { timers.next_refresh } else { 0 };
        let wait = due.saturating_sub(now);
        if wait > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(wait)) => {}
                _ = poke.notified() => {
                    tracing::debug!(zone = %origin, "refresh asked for (NOTIFY)");
                }
                _ = shutdown.wait() => return,
            }
        }
        let Some(spec) = zones.spec(&origin) else {
            return;
        };
        let outcome = tokio::select! {
            r = async {
                // Closed only when the server stops.
                let _slot = slots.acquire().await.ok();
                refresh_once(&zones, &spec).await
            } => r,
            _ = shutdown.wait() => return,
        };
        let now = unix_now();
        let mut timers = zones.timers(&origin).unwrap_or_default();
        match outcome {
            Refreshed::Current { soa, primary } => {
                first_retry = FIRST_RETRY;
                if let Some(f) = soa_fields(&soa) {
                    timers.last_refresh = now;
                    timers.next_refresh = now.saturating_add(clamp(f.refresh));
                    timers.expire_at = now.saturating_add(clamp(f.expire).max(clamp(f.refresh)));
                    timers.last_serial = Some(f.serial);
                    timers.primary = Some(primary);
                }
                zones.set_timers(&origin, &timers);
            }
            Refreshed::Failed => {
                let held = zones.held_soa(&origin);
                let retry = jittered(match held.as_ref().and_then(soa_fields) {
                    Some(f) => clamp(f.retry),
                    None => {
                        let r = first_retry;
                        first_retry = first_retry.saturating_mul(2).min(MAX_FIRST_RETRY);
                        r
                    }
                });
                timers.next_refresh = now.saturating_add(retry);
                if timers.expire_at != 0 && timers.expire_at <= now {
                    zones.expire(&origin);
                }
                zones.set_timers(&origin, &timers);
                // Without a copy there is nothing stored to wake from: wait here.
                if held.is_none() {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(retry)) => {}
                        _ = poke.notified() => {}
                        _ = shutdown.wait() => return,
                    }
                }
            }
        }
    }
}

/// One refresh: the primaries in order, each address in order, until one
/// says the copy is current or sends a newer one.
async fn refresh_once(zones: &Arc<Zones>, spec: &ZoneSpec) -> Refreshed {
    for remote in &spec.replication.primaries {
        for &addr in &remote.addresses {
            match refresh_from(zones, spec, remote, addr).await {
                Ok(soa) => {
                    return Refreshed::Current {
                        soa: Box::new(soa),
                        primary: addr.to_string(),
                    }
                }
                Err(e) => {
                    super::counters::bump(&super::counters::COUNTERS.refresh_failures);
                    tracing::warn!(zone = %spec.origin, primary = %addr, remote = %remote.name, error = %e, "refresh from primary failed");
                }
            }
        }
    }
    Refreshed::Failed
}

/// Why a refresh from one primary failed.
#[derive(Debug, thiserror::Error)]
enum RefreshError {
    #[error("{0}")]
    Client(#[from] ClientError),
    #[error("{0}")]
    Transfer(#[from] bulwark_xfr::transfer_in::TransferError),
    #[error("{0}")]
    Change(#[from] ChangeError),
    #[error("the primary's serial {primary} is older than ours ({ours})")]
    Older { primary: u32, ours: u32 },
}

async fn refresh_from(
    zones: &Arc<Zones>,
    spec: &ZoneSpec,
    remote: &Remote,
    addr: SocketAddr,
) -> Result<Record, RefreshError> {
    let origin = &spec.origin;
    let key = remote.key.as_deref();
    let held = zones.held_soa(origin);
    // RFC 1996 §3.11 / RFC 1034 §4.3.5: compare serials before transferring.
    let id = client::random_id()?;
    let mut q = Vec::new();
    build_soa_query(id, origin, &mut q)?;
    let request = Request::new(q, key)?;
    let response = client::exchange(addr, remote.via, &request, QUERY_WAIT).await?;
    let mut verifier = request.verifier();
    check_response(&mut verifier, &response)?;
    let answer = read_soa_response(&response, id, origin)?;
    let held_serial = held.as_ref().and_then(soa_fields).map(|s| s.serial);
    if let Some(ours) = held_serial {
        if !serial_gt(answer.serial, ours) {
            if answer.serial != ours {
                tracing::warn!(zone = %origin, primary = %addr, "{}", RefreshError::Older { primary: answer.serial, ours });
            }
            // Served again if it had expired: the primary vouches for it.
            if !zones.is_available(origin) {
                let z = Arc::clone(zones);
                let o = origin.clone();
                let _ = tokio::task::spawn_blocking(move || z.revive(&o)).await;
            }
            tracing::debug!(zone = %origin, serial = ours, "zone is current");
            return Ok(answer.soa);
        }
    }
    // IXFR from the copy held, AXFR when none or when IXFR fails.
    if let Some(soa) = &held {
        match transfer(zones, spec, remote, addr, Rtype::IXFR, Some(soa)).await {
            Ok(soa) => return Ok(soa),
            Err(e) => {
                tracing::info!(zone = %origin, primary = %addr, error = %e, "IXFR failed; trying AXFR");
            }
        }
    }
    transfer(zones, spec, remote, addr, Rtype::AXFR, None).await
}

/// One transfer over TCP, applied when complete. Returns the new SOA.
async fn transfer(
    zones: &Arc<Zones>,
    spec: &ZoneSpec,
    remote: &Remote,
    addr: SocketAddr,
    qtype: Rtype,
    held: Option<&Record>,
) -> Result<Record, RefreshError> {
    let origin = &spec.origin;
    let id = client::random_id()?;
    let mut q = Vec::new();
    build_transfer_query(id, origin, qtype, held, &mut q)?;
    let request = Request::new(q, remote.key.as_deref())?;
    let mut verifier = request.verifier();
    let mut stream = client::transfer(addr, remote.via, &request, QUERY_WAIT).await?;
    let held_serial = held.and_then(soa_fields).map(|s| s.serial);
    let mut reader = TransferReader::new(
        origin.clone(),
        qtype,
        id,
        held_serial,
        TransferLimits::default(),
    );
    let started = std::time::Instant::now();
    let mut msg = Vec::new();
    loop {
        stream
            .next_message(&mut msg, QUERY_WAIT)
            .await
            .map_err(ClientError::from)?;
        check_response(&mut verifier, &msg)?;
        if let Progress::Done = reader.feed(&msg)? {
            break;
        }
    }
    if let Some(v) = verifier.as_ref() {
        v.finish().map_err(|e| ClientError::Tsig(e.to_string()))?;
    }
    let messages = reader.messages();
    let records = reader.records();
    let result = reader.finish()?;
    let answer = match &result {
        TransferResult::Full { .. } => "full",
        _ => "incremental",
    };
    let (incoming, soa) = match result {
        TransferResult::UpToDate { .. } => {
            return held.cloned().ok_or_else(|| {
                RefreshError::Client(ClientError::Malformed(
                    "an up-to-date answer to AXFR".to_string(),
                ))
            });
        }
        TransferResult::Full { soa, mut records } => {
            records.push(soa.clone());
            (Incoming::Full(records), soa)
        }
        TransferResult::RetryOverTcp { serial } => {
            // Only a UDP answer says this; over TCP it means the primary sent
            // a newer SOA and nothing else: treat as a failed transfer.
            return Err(RefreshError::Client(ClientError::Malformed(format!(
                "the primary answered with SOA {serial} alone"
            ))));
        }
        TransferResult::Incremental { diffs } => {
            let soa = diffs.last().map(|d| d.new_soa.clone()).ok_or_else(|| {
                RefreshError::Client(ClientError::Malformed("an empty IXFR".to_string()))
            })?;
            (Incoming::Incremental(diffs), soa)
        }
        other => {
            return Err(RefreshError::Client(ClientError::Malformed(format!(
                "an answer this server cannot use: {other:?}"
            ))));
        }
    };
    let zones2 = Arc::clone(zones);
    let origin2 = origin.clone();
    let serial = tokio::task::spawn_blocking(move || zones2.apply_transfer(&origin2, incoming))
        .await
        .map_err(|e| RefreshError::Change(ChangeError::Rejected(e.to_string())))??;
    super::counters::bump(if qtype == Rtype::AXFR {
        &super::counters::COUNTERS.axfr_in
    } else {
        &super::counters::COUNTERS.ixfr_in
    });
    tracing::info!(
        zone = %origin,
        primary = %addr,
        kind = %qtype,
        answer,
        serial,
        messages,
        records,
        seconds = started.elapsed().as_secs_f64(),
        "zone transferred"
    );
    Ok(soa)
}
