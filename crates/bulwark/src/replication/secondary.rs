//! Secondary zones: each has a task that drives its `bulwark_xfr::refresh`
//! engine (the SOA REFRESH/RETRY/EXPIRE machine of RFC 1034 §4.3.5, with
//! NOTIFY, IXFR and AXFR). The task waits for the engine's timer, a NOTIFY
//! or shutdown; sends the queries the engine builds with the shared
//! `bulwark_net` client; applies what transfers bring to the zones; and
//! carries out the engine's events (timers stored, so a restart goes on
//! where it was; copies expired or served again).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bulwark_proto::Name;
use bulwark_store::ZoneTimers;
use bulwark_xfr::refresh::{
    Event, Fetched, Randomness, Refresh, RefreshError, Reply, Start, Timers, TransferCheck,
    Transferred, Transmit, TransmitKind,
};
use bulwark_xfr::transfer_in::Progress;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::client::{self, ClientError};
use super::counters::{bump, COUNTERS};
use crate::settings::ZoneSpec;
use crate::signing::unix_now;
use crate::zones::{Incoming, Zones};

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
    slots: Arc<Semaphore>,
}

impl Default for Secondaries {
    fn default() -> Self {
        Secondaries {
            tasks: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(CONCURRENT_REFRESHES)),
        }
    }
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

/// Query IDs and jitter from the CSPRNG (RFC 5452 §9.2).
struct Csprng;

impl Randomness for Csprng {
    fn random_u16(&mut self) -> Option<u16> {
        client::random_id().ok()
    }
}

fn from_store(t: ZoneTimers) -> Timers {
    Timers {
        last_refresh: t.last_refresh,
        next_refresh: t.next_refresh,
        expire_at: t.expire_at,
        last_serial: t.last_serial,
        primary: t.primary,
    }
}

fn to_store(t: Timers) -> ZoneTimers {
    ZoneTimers {
        last_refresh: t.last_refresh,
        next_refresh: t.next_refresh,
        expire_at: t.expire_at,
        last_serial: t.last_serial,
        primary: t.primary,
    }
}

/// What ended a wait.
enum Woken {
    Due,
    Notified,
}

async fn refresh_forever(
    zones: Arc<Zones>,
    origin: Name,
    poke: Arc<Notify>,
    slots: Arc<Semaphore>,
    shutdown: bulwark_net::Shutdown,
) {
    let Some(spec) = zones.spec(&origin) else {
        return;
    };
    let start = Start {
        held: zones.held_soa(&origin),
        timers: zones.timers(&origin).map(from_store),
        served: zones.is_available(&origin),
    };
    let mut engine = Refresh::new(
        origin.clone(),
        spec.replication.primaries,
        start,
        Box::new(Csprng),
    );
    // Held while a refresh is under way.
    let mut slot: Option<OwnedSemaphorePermit> = None;
    loop {
        carry_out(&zones, &origin, &mut engine).await;
        if let Some(transmit) = engine.poll_transmit(unix_now()) {
            if slot.is_none() {
                tokio::select! {
                    // Closed only when the server stops.
                    s = Arc::clone(&slots).acquire_owned() => slot = s.ok(),
                    _ = shutdown.wait() => return,
                }
            }
            let reply = tokio::select! {
                r = perform(&zones, &origin, transmit) => r,
                _ = shutdown.wait() => return,
            };
            engine.handle_response(unix_now(), reply);
            continue;
        }
        slot = None;
        let now = unix_now();
        let woken = match engine.poll_timeout() {
            Some(at) if at <= now => Woken::Due,
            wait => {
                let sleep = async {
                    match wait {
                        Some(at) => {
                            tokio::time::sleep(Duration::from_secs(at.saturating_sub(now))).await
                        }
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = sleep => Woken::Due,
                    _ = poke.notified() => {
                        tracing::debug!(zone = %origin, "refresh asked for (NOTIFY)");
                        Woken::Notified
                    }
                    _ = shutdown.wait() => return,
                }
            }
        };
        // The configuration may have changed meanwhile (a reload).
        let Some(spec) = zones.spec(&origin) else {
            return;
        };
        engine.set_primaries(spec.replication.primaries);
        match woken {
            Woken::Due => engine.handle_timeout(unix_now()),
            Woken::Notified => engine.handle_notify(unix_now()),
        }
    }
}

/// Does what the engine's events ask of the zones and the store.
async fn carry_out(zones: &Arc<Zones>, origin: &Name, engine: &mut Refresh) {
    while let Some(event) = engine.poll_event() {
        match event {
            Event::SaveTimers(t) => zones.set_timers(origin, &to_store(t)),
            Event::Expire => zones.expire(origin),
            Event::Revive => {
                let z = Arc::clone(zones);
                let o = origin.clone();
                let _ = tokio::task::spawn_blocking(move || z.revive(&o)).await;
            }
            Event::Current { serial } => {
                tracing::debug!(zone = %origin, serial, "zone is current");
            }
            Event::Older {
                from,
                primary,
                ours,
            } => {
                tracing::warn!(zone = %origin, primary = %from, "the primary's serial {primary} is older than ours ({ours})");
            }
            Event::PrimaryFailed {
                remote,
                from,
                error,
            } => {
                bump(&COUNTERS.refresh_failures);
                tracing::warn!(zone = %origin, primary = %from, remote = %remote, error = %error, "refresh from primary failed");
            }
            Event::IxfrFailed { from, error } => {
                tracing::info!(zone = %origin, primary = %from, error = %error, "IXFR failed; trying AXFR");
            }
        }
    }
}

fn exchange_error(e: ClientError) -> RefreshError {
    RefreshError::Exchange(e.to_string())
}

/// Sends what the engine asked, and says what came of it.
async fn perform(zones: &Arc<Zones>, origin: &Name, transmit: Transmit) -> Reply {
    let Transmit {
        to,
        via,
        message,
        wait,
        kind,
        ..
    } = transmit;
    match kind {
        TransmitKind::Soa => Reply::Soa(
            client::ask_primary(to, via, &message, wait)
                .await
                .map_err(exchange_error),
        ),
        TransmitKind::Transfer(check) => {
            Reply::Transfer(transfer(zones, origin, to, via, &message, *check, wait).await)
        }
    }
}

/// One transfer over TCP, each message checked as it comes, applied when
/// complete.
async fn transfer(
    zones: &Arc<Zones>,
    origin: &Name,
    to: SocketAddr,
    via: Option<IpAddr>,
    message: &[u8],
    mut check: TransferCheck,
    wait: Duration,
) -> Result<Transferred, RefreshError> {
    let started = std::time::Instant::now();
    let mut stream = client::transfer(to, via, message, wait)
        .await
        .map_err(exchange_error)?;
    let mut msg = Vec::new();
    loop {
        stream
            .next_message(&mut msg, wait)
            .await
            .map_err(|e| exchange_error(ClientError::from(e)))?;
        if let Progress::Done = check.feed(&msg, unix_now())? {
            break;
        }
    }
    let (qtype, messages, records) = (check.qtype(), check.messages(), check.records());
    let (incoming, soa, answer) = match check.finish()? {
        Fetched::UpToDate => return Ok(Transferred::UpToDate),
        Fetched::Full { soa, records } => (Incoming::Full(records), soa, "full"),
        Fetched::Incremental { soa, diffs } => (Incoming::Incremental(diffs), soa, "incremental"),
    };
    let z = Arc::clone(zones);
    let o = origin.clone();
    let serial = tokio::task::spawn_blocking(move || z.apply_transfer(&o, incoming))
        .await
        .map_err(|e| RefreshError::Apply(e.to_string()))?
        .map_err(|e| RefreshError::Apply(e.to_string()))?;
    bump(if qtype == bulwark_proto::Rtype::AXFR {
        &COUNTERS.axfr_in
    } else {
        &COUNTERS.ixfr_in
    });
    tracing::info!(
        zone = %origin,
        primary = %to,
        kind = %qtype,
        answer,
        serial,
        messages,
        records,
        seconds = started.elapsed().as_secs_f64(),
        "zone transferred"
    );
    Ok(Transferred::Applied { soa: Box::new(soa) })
}
