//! Replication at the edge: the configuration of keys, remotes and zone
//! roles; the diverted queries (signed queries, NOTIFY, transfers, updates);
//! the tasks that keep secondary zones current, notify secondaries, write
//! changed zones back to their files and follow consumed catalogs. The DNS
//! of it (TSIG, transfers, UPDATE, catalogs) is `bulwark-xfr`'s.

pub mod client;
pub mod counters;
pub mod notify_out;
pub mod secondary;
pub mod serve;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::Notify;

use crate::settings::CatalogRole;
use crate::zones::{ZoneEvent, Zones};
use notify_out::Notifier;
use secondary::Secondaries;

/// The background side of replication, started once the zones are loaded.
#[derive(Debug)]
pub struct Replication {
    pub secondaries: Arc<Secondaries>,
    notifier: Notifier,
    /// Woken when a zone file may have become due for writing.
    files: Notify,
}

impl Replication {
    /// Subscribes to `zones`' events and starts the tasks. Must run inside
    /// the runtime.
    pub fn start(zones: &Arc<Zones>, shutdown: &bulwark_net::Shutdown) -> Arc<Replication> {
        let (tx, rx) = unbounded_channel();
        zones.subscribe(tx);
        let repl = Arc::new(Replication {
            secondaries: Arc::new(Secondaries::default()),
            notifier: Notifier::default(),
            files: Notify::new(),
        });
        repl.secondaries.sync(zones, shutdown);
        // Zones loaded before the subscription: their events were missed.
        for spec in zones.specs() {
            if matches!(spec.replication.catalog, CatalogRole::Consume { .. }) {
                let z = Arc::clone(zones);
                tokio::task::spawn_blocking(move || z.consume_catalog(&spec.origin));
            }
        }
        tokio::spawn(dispatch(
            Arc::clone(&repl),
            Arc::clone(zones),
            rx,
            shutdown.clone(),
        ));
        tokio::spawn(write_files_forever(
            Arc::clone(&repl),
            Arc::clone(zones),
            shutdown.clone(),
        ));
        repl
    }
}

/// Hands each zone event to whoever acts on it.
async fn dispatch(
    repl: Arc<Replication>,
    zones: Arc<Zones>,
    mut rx: UnboundedReceiver<ZoneEvent>,
    shutdown: bulwark_net::Shutdown,
) {
    loop {
        let event = tokio::select! {
            e = rx.recv() => match e {
                Some(e) => e,
                None => return,
            },
            _ = shutdown.wait() => return,
        };
        match event {
            ZoneEvent::Changed { origin, serial } => {
                repl.notifier.zone_changed(&zones, &origin, serial);
                repl.files.notify_one();
                let consumed = zones
                    .spec(&origin)
                    .is_some_and(|s| matches!(s.replication.catalog, CatalogRole::Consume { .. }));
                if consumed {
                    let z = Arc::clone(&zones);
                    tokio::task::spawn_blocking(move || z.consume_catalog(&origin));
                }
            }
            ZoneEvent::ListChanged => {
                repl.secondaries.sync(&zones, &shutdown);
                repl.files.notify_one();
            }
        }
    }
}

/// The longest the file writer sleeps without being woken: zones whose
/// delay passes meanwhile are written at the latest then.
const FILE_CHECK: Duration = Duration::from_secs(60);

/// Writes zone files back once their `zonefile_sync` delay has passed
/// since their first unwritten change.
async fn write_files_forever(
    repl: Arc<Replication>,
    zones: Arc<Zones>,
    shutdown: bulwark_net::Shutdown,
) {
    loop {
        let now = Instant::now();
        let wait = zones
            .next_file_due()
            .map_or(FILE_CHECK, |due| due.saturating_duration_since(now))
            .min(FILE_CHECK);
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = repl.files.notified() => continue,
                _ = shutdown.wait() => return,
            }
        }
        let due = zones.files_due(Instant::now());
        if due.is_empty() {
            // Woken for nothing due yet: wait for the next change.
            tokio::select! {
                _ = repl.files.notified() => {}
                _ = tokio::time::sleep(FILE_CHECK) => {}
                _ = shutdown.wait() => return,
            }
            continue;
        }
        let z = Arc::clone(&zones);
        let written = tokio::task::spawn_blocking(move || {
            for origin in due {
                if let Err(e) = z.write_file(&origin) {
                    tracing::error!(zone = %origin, "{e}");
                }
            }
        })
        .await;
        if let Err(e) = written {
            tracing::error!(error = %e, "zone file writer failed");
        }
    }
}

/// Writes every zone with unwritten changes now (at shutdown).
pub fn flush_files(zones: &Zones) {
    for origin in zones.files_due(
        Instant::now()
            .checked_add(Duration::from_secs(365 * 86_400))
            .unwrap_or_else(Instant::now),
    ) {
        if let Err(e) = zones.write_file(&origin) {
            tracing::error!(zone = %origin, "{e}");
        }
    }
}
