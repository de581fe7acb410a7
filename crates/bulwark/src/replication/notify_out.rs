//! NOTIFY sent (RFC 1996): after each new version of a zone, its secondaries
//! are told at once rather than waiting for their next REFRESH. Each target
//! is tried a few times (§3.6) with growing waits; a newer version of the
//! same zone replaces a notification still being retried.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bulwark_proto::Name;
use bulwark_xfr::notify::{build_notify, check_notify_response};
use bulwark_xfr::tsig::TsigKey;
use tokio::task::JoinHandle;

use super::client::{self, check_response, Request};
use crate::zones::Zones;

/// RFC 1996 §3.6 leaves the retry count and interval to the server; five
/// tries with waits of 1, 2, 4, 8 and 16 seconds cover a secondary that is
/// restarting without holding on to a dead one.
const ATTEMPTS: u32 = 5;
const FIRST_WAIT: Duration = Duration::from_secs(1);
/// NOTIFY to NS targets goes to the standard port.
const DNS_PORT: u16 = 53;

/// Notifications under way, by zone and target.
#[derive(Debug, Default)]
pub struct Notifier {
    pending: Mutex<HashMap<(Name, SocketAddr), JoinHandle<()>>>,
}

impl Notifier {
    /// Notifies every target of `origin` that its serial is now `serial`.
    pub fn zone_changed(&self, zones: &Arc<Zones>, origin: &Name, serial: u32) {
        let Some(spec) = zones.spec(origin) else {
            return;
        };
        let mut targets: Vec<(SocketAddr, Option<IpAddr>, Option<Arc<TsigKey>>)> = Vec::new();
        for remote in &spec.replication.notify {
            for &addr in &remote.addresses {
                targets.push((addr, remote.via, remote.key.clone()));
            }
        }
        if spec.replication.notify_ns {
            for addr in ns_addresses(zones, origin) {
                if !targets.iter().any(|(a, ..)| *a == addr) {
                    targets.push((addr, None, None));
                }
            }
        }
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        pending.retain(|_, h| !h.is_finished());
        for (addr, via, key) in targets {
            if let Some(old) = pending.remove(&(origin.clone(), addr)) {
                old.abort();
            }
            let handle = tokio::spawn(notify_target(
                Arc::clone(zones),
                origin.clone(),
                serial,
                addr,
                via,
                key,
            ));
            pending.insert((origin.clone(), addr), handle);
        }
    }
}

/// The addresses of the zone's NS targets that the zone itself holds (glue
/// or in-zone A/AAAA), except the SOA MNAME: RFC 1996 §3.6 says the primary
/// named there is not notified.
fn ns_addresses(zones: &Zones, origin: &Name) -> Vec<SocketAddr> {
    let Some(zone) = zones.current().get(origin).cloned() else {
        return Vec::new();
    };
    let records: Vec<bulwark_proto::Record> = zone.records().collect();
    let mname = records.iter().find_map(|r| match &r.rdata {
        bulwark_proto::Rdata::Soa(s) => Some(s.mname.clone()),
        _ => None,
    });
    let targets: Vec<Name> = records
        .iter()
        .filter(|r| r.owner == *origin)
        .filter_map(|r| match &r.rdata {
            bulwark_proto::Rdata::Ns(n) if Some(n) != mname.as_ref() => Some(n.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for r in &records {
        if !targets.contains(&r.owner) {
            continue;
        }
        match &r.rdata {
            bulwark_proto::Rdata::A(ip) => out.push(SocketAddr::new(IpAddr::V4(*ip), DNS_PORT)),
            bulwark_proto::Rdata::Aaaa(ip) => {
                out.push(SocketAddr::new(IpAddr::V6(*ip), DNS_PORT));
            }
            _ => {}
        }
    }
    out
}

async fn notify_target(
    zones: Arc<Zones>,
    origin: Name,
    serial: u32,
    addr: SocketAddr,
    via: Option<IpAddr>,
    key: Option<Arc<TsigKey>>,
) {
    let mut wait = FIRST_WAIT;
    for attempt in 1..=ATTEMPTS {
        let soa = zones
            .current()
            .get(&origin)
            .and_then(|z| bulwark_zone::diff::soa_record(z));
        let id = match client::random_id() {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(zone = %origin, error = %e, "cannot draw a NOTIFY ID");
                return;
            }
        };
        let mut msg = Vec::new();
        if let Err(e) = build_notify(id, &origin, soa.as_ref(), &mut msg) {
            tracing::error!(zone = %origin, error = %e, "cannot build NOTIFY");
            return;
        }
        let result = async {
            let request = Request::new(msg, key.as_deref())?;
            let response = client::exchange(addr, via, &request.bytes, wait).await?;
            let mut verifier = request.verifier();
            check_response(&mut verifier, &response)?;
            check_notify_response(&response, id, &origin)
                .map_err(|e| client::ClientError::Malformed(e.to_string()))
        }
        .await;
        match result {
            Ok(()) => {
                tracing::info!(zone = %origin, serial, target = %addr, "NOTIFY acknowledged");
                super::counters::bump(&super::counters::COUNTERS.notify_acknowledged);
                return;
            }
            Err(e) => {
                tracing::debug!(zone = %origin, target = %addr, attempt, error = %e, "NOTIFY not acknowledged");
                if !e.is_timeout() {
                    tokio::time::sleep(wait).await;
                }
            }
        }
        wait = wait.saturating_mul(2);
    }
    tracing::warn!(zone = %origin, serial, target = %addr, attempts = ATTEMPTS, "NOTIFY was never acknowledged");
    super::counters::bump(&super::counters::COUNTERS.notify_unanswered);
}
