//! Connections held per client, and which of a client's own connections
//! gives way when it reaches its cap.
//!
//! RFC 7766 §6.2.2 lets a server cap the connections of one client, but a
//! plain count lets a client lock itself out: twenty connections that each
//! sent one octet and stalled would refuse every later connection from that
//! address (a resolver farm behind one NAT address, say) until a timeout
//! closes them. So at the cap the client's connection that has waited
//! longest for its next message (idle, or stalled mid-message) is closed to
//! make room; only when every one of its connections is busy answering or
//! writing is the new one refused. Other clients are untouched: the cap is
//! still per client, and eviction never crosses clients.
//!
//! Transports that hold connections (TCP, TLS, HTTPS, QUIC) share this
//! table (through `crate::caps`): each connection marks itself busy while it answers and
//! waiting while it reads, and listens for its eviction while waiting.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// Waiting for the next message (idle, or part of one read): may be evicted.
const WAITING: u8 = 0;
/// Answering or writing: not evicted.
const BUSY: u8 = 1;
/// Chosen to make room for a newer connection of the same client.
const EVICTED: u8 = 2;
/// Closing (for a reason of its own): no longer evictable.
const CLOSED: u8 = 3;

/// The connections each client holds, up to `limit` each.
pub(crate) struct ClientTable {
    limit: usize,
    clients: Mutex<HashMap<IpAddr, Vec<Arc<Activity>>>>,
    /// Orders connections by their last progress without reading a clock:
    /// the smaller a connection's stamp, the longer it has waited.
    stamps: AtomicU64,
}

/// What the table knows of one connection, shared with the connection.
#[derive(Debug)]
pub(crate) struct Activity {
    state: AtomicU8,
    /// When the connection last made progress (accepted, or a message read
    /// in full), as a value of [`ClientTable::stamps`].
    last_progress: AtomicU64,
    evicted: Notify,
}

/// How a new connection was admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// The client had room.
    Room,
    /// The client was at its cap; its longest-waiting connection was told to
    /// close to make room.
    Evicting,
}

/// The client is at its cap and every connection it holds is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AllBusy;

/// A connection's place in the table, given back when dropped (also when a
/// handler panic unwinds the connection's task).
pub(crate) struct ClientSlot {
    table: Arc<ClientTable>,
    client: IpAddr,
    activity: Arc<Activity>,
}

impl ClientTable {
    /// A table allowing `limit` connections per client; 0 sets no cap.
    pub(crate) fn new(limit: usize) -> ClientTable {
        ClientTable {
            limit,
            clients: Mutex::new(HashMap::new()),
            stamps: AtomicU64::new(0),
        }
    }

    fn stamp(&self) -> u64 {
        self.stamps.fetch_add(1, Ordering::Relaxed)
    }

    /// A place for a new connection from `peer`: `Ok(None)` when there is
    /// no cap.
    pub(crate) fn admit(
        self: &Arc<Self>,
        peer: IpAddr,
    ) -> Result<Option<(ClientSlot, Admitted)>, AllBusy> {
        if self.limit == 0 {
            return Ok(None);
        }
        let client = client_key(peer);
        let activity = Arc::new(Activity {
            state: AtomicU8::new(WAITING),
            last_progress: AtomicU64::new(self.stamp()),
            evicted: Notify::new(),
        });
        // A panic while the lock was held cannot leave the map inconsistent
        // (each update is one push or removal), so a poisoned lock is used.
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let held = clients.entry(client).or_default();
        let admitted = if held.len() < self.limit {
            Admitted::Room
        } else {
            let victim = evict_longest_waiting(held).ok_or(AllBusy)?;
            victim.evicted.notify_one();
            Admitted::Evicting
        };
        held.push(Arc::clone(&activity));
        Ok(Some((
            ClientSlot {
                table: Arc::clone(self),
                client,
                activity,
            },
            admitted,
        )))
    }

    #[cfg(test)]
    fn held(&self, peer: IpAddr) -> usize {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.get(&client_key(peer)).map_or(0, Vec::len)
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.is_empty()
    }
}

/// Takes out of `held` the waiting connection with the oldest progress and
/// marks it evicted; `None` when all are busy. A connection turning busy at
/// the same moment wins: the mark is a compare-and-swap from waiting.
fn evict_longest_waiting(held: &mut Vec<Arc<Activity>>) -> Option<Arc<Activity>> {
    loop {
        let (at, _) = held
            .iter()
            .enumerate()
            .filter(|(_, a)| a.state.load(Ordering::Acquire) == WAITING)
            .min_by_key(|(_, a)| a.last_progress.load(Ordering::Relaxed))?;
        let candidate = held.swap_remove(at);
        if candidate
            .state
            .compare_exchange(WAITING, EVICTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Some(candidate);
        }
        // It became busy after the scan: put it back and look again.
        held.push(candidate);
    }
}

impl ClientSlot {
    /// Marks the connection busy before it answers what it read. `false`
    /// when it has been evicted: it must close without answering.
    pub(crate) fn begin_work(&self) -> bool {
        self.activity
            .state
            .compare_exchange(WAITING, BUSY, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Marks the connection waiting again; `progressed` when it read at
    /// least one whole message, which makes it the newest of its client's.
    pub(crate) fn end_work(&self, progressed: bool) {
        if progressed {
            self.activity
                .last_progress
                .store(self.table.stamp(), Ordering::Relaxed);
        }
        // Only this connection leaves BUSY, so a plain store cannot lose an
        // eviction (evictions only take WAITING connections).
        self.activity.state.store(WAITING, Ordering::Release);
    }

    /// Marks the connection closing and tells whether it was evicted first:
    /// then its place in the server's total passed to the connection that
    /// evicted it, and is not given back. Once this returns, the connection
    /// can no longer be evicted, so the answer stays true.
    pub(crate) fn close(&self) -> bool {
        let state = &self.activity.state;
        let mut now = state.load(Ordering::Acquire);
        loop {
            if now == EVICTED {
                return true;
            }
            match state.compare_exchange(now, CLOSED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return false,
                Err(seen) => now = seen,
            }
        }
    }

    /// Resolves when the connection has been chosen to make room. A notice
    /// sent before the connection starts waiting is kept, not lost.
    pub(crate) async fn evicted(&self) {
        self.activity.evicted.notified().await;
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut clients = self
            .table
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = clients.get_mut(&self.client) {
            // An evicted connection was taken out already; then this finds
            // nothing to remove.
            held.retain(|a| !Arc::ptr_eq(a, &self.activity));
            if held.is_empty() {
                // Entries go with their last connection: the map holds only
                // clients with open connections, however many have come and gone.
                clients.remove(&self.client);
            }
        }
    }
}

/// Whom a connection is counted against: an IPv4 address, or an IPv6 /64
/// (RFC 7766 §6.2.2 allows limits per address "or subnet"; one IPv6 host
/// commonly has a whole /64 to draw addresses from).
pub(crate) fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !u128::from(u64::MAX);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn clients_are_counted_by_ipv4_address_and_ipv6_slash_64() {
        let key = |s: &str| client_key(ip(s));
        assert_eq!(key("192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
    }

    #[test]
    fn a_slot_is_given_back_and_its_entry_removed_when_dropped() {
        let table = Arc::new(ClientTable::new(2));
        let a = table.admit(ip("192.0.2.1")).unwrap().unwrap();
        let b = table.admit(ip("192.0.2.1")).unwrap().unwrap();
        assert_eq!((a.1, b.1), (Admitted::Room, Admitted::Room));
        assert!(table.admit(ip("192.0.2.2")).unwrap().is_some());
        drop(a);
        assert_eq!(table.held(ip("192.0.2.1")), 1);
        drop(b);
        assert!(table.is_empty());
    }

    #[test]
    fn at_the_cap_the_longest_waiting_connection_makes_room() {
        let table = Arc::new(ClientTable::new(3));
        let c = ip("192.0.2.1");
        let slots: Vec<_> = (0..3).map(|_| table.admit(c).unwrap().unwrap().0).collect();
        // The first read a message since: the second has waited longest.
        assert!(slots[0].begin_work());
        slots[0].end_work(true);
        let (_fourth, how) = table.admit(c).unwrap().unwrap();
        assert_eq!(how, Admitted::Evicting);
        assert_eq!(table.held(c), 3, "the cap holds");
        assert!(!slots[1].begin_work(), "the second was evicted");
        assert!(slots[0].begin_work() && slots[2].begin_work());
        // Its eviction notice waits for it.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(slots[1].evicted());
    }

    #[test]
    fn an_evicted_connection_passes_its_place_on_and_a_closing_one_cannot_be_evicted() {
        let table = Arc::new(ClientTable::new(1));
        let c = ip("192.0.2.1");
        let (first, _) = table.admit(c).unwrap().unwrap();
        let (second, how) = table.admit(c).unwrap().unwrap();
        assert_eq!(how, Admitted::Evicting);
        assert!(first.close(), "evicted: its place went to the second");
        assert!(first.close(), "and stays gone");
        // Closing for its own reasons first, the second keeps its place
        // and is not evicted by a third: that one is refused.
        assert!(!second.close());
        assert_eq!(table.admit(c).err(), Some(AllBusy));
    }

    #[test]
    fn a_message_in_progress_counts_as_waiting_but_busy_ones_are_spared() {
        let table = Arc::new(ClientTable::new(2));
        let c = ip("192.0.2.1");
        let a = table.admit(c).unwrap().unwrap().0;
        let b = table.admit(c).unwrap().unwrap().0;
        assert!(a.begin_work() && b.begin_work());
        assert!(table.admit(c).is_err(), "every connection is busy");
        assert_eq!(table.held(c), 2);
        b.end_work(false);
        assert!(table.admit(c).is_ok(), "the waiting one gives way");
        assert!(!b.begin_work());
        assert_eq!(a.activity.state.load(Ordering::Acquire), BUSY, "untouched");
    }

    #[test]
    fn eviction_never_crosses_clients() {
        let table = Arc::new(ClientTable::new(1));
        let a = table.admit(ip("192.0.2.1")).unwrap().unwrap().0;
        let (_b, how) = table.admit(ip("192.0.2.2")).unwrap().unwrap();
        assert_eq!(how, Admitted::Room);
        assert!(a.begin_work(), "another client's connection is untouched");
    }

    #[test]
    fn an_evicted_slot_dropped_later_leaves_the_newer_ones_counted() {
        let table = Arc::new(ClientTable::new(1));
        let c = ip("192.0.2.1");
        let old = table.admit(c).unwrap().unwrap().0;
        let new = table.admit(c).unwrap().unwrap().0;
        drop(old);
        assert_eq!(table.held(c), 1);
        drop(new);
        assert!(table.is_empty());
    }

    #[test]
    fn no_cap_tracks_nothing() {
        let table = Arc::new(ClientTable::new(0));
        for _ in 0..100 {
            assert!(table.admit(ip("192.0.2.1")).unwrap().is_none());
        }
        assert!(table.is_empty());
    }
}
