//! The connection caps every connection-holding transport shares (TCP, TLS,
//! HTTPS, QUIC): a total, taken without waiting (a connection beyond it is
//! refused at once, RFC 7766 §6.2.2, rather than queued), and a cap per
//! client with eviction of the client's own longest-waiting connection (see
//! [`crate::client_conns`]). A [`Place`] is a connection's share of both,
//! given back when it is dropped.

use std::net::IpAddr;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::client_conns::{Admitted, AllBusy, ClientSlot, ClientTable};

/// The caps of one group of listeners.
pub(crate) struct Caps {
    max: usize,
    slots: Semaphore,
    clients: Arc<ClientTable>,
}

/// Why a new connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its client is at its cap, every connection it holds busy.
    TooManyForClient,
    /// Every place is taken.
    TooManyTotal,
}

/// A connection's places in the caps; dropping it gives them back.
pub(crate) struct Place {
    caps: Arc<Caps>,
    client: Option<ClientSlot>,
}

impl Caps {
    /// `max` connections in all, `per_client` each (0: no per-client cap).
    pub(crate) fn new(max: usize, per_client: usize) -> Arc<Caps> {
        let max = max.max(1);
        Arc::new(Caps {
            max,
            slots: Semaphore::new(max),
            clients: Arc::new(ClientTable::new(per_client)),
        })
    }

    /// Half the places or more are taken: a new connection gets fewer
    /// streams, and over QUIC a new client proves its address first.
    pub(crate) fn pressed(&self) -> bool {
        self.slots.available_permits().saturating_mul(2) <= self.max
    }

    /// A place for a connection from `peer`. At its cap a client's
    /// longest-waiting connection gives way; only a client whose every
    /// connection is busy is refused.
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Place, Refused> {
        let (client, evicting) = match self.clients.admit(peer) {
            Ok(Some((slot, how))) => (Some(slot), how == Admitted::Evicting),
            Ok(None) => (None, false),
            Err(AllBusy) => return Err(Refused::TooManyForClient),
        };
        // A connection that evicted one of its client's own takes that
        // one's place in the total (the evicted one gives it over, not
        // back), so a client flooding connections holds no more than its
        // cap however fast they come.
        if !evicting {
            let Ok(permit) = self.slots.try_acquire() else {
                return Err(Refused::TooManyTotal);
            };
            // Given back by `Place`, which owns it as a count rather than a
            // borrow of the caps.
            permit.forget();
        }
        Ok(Place {
            caps: Arc::clone(self),
            client,
        })
    }
}

impl Place {
    /// The connection's place among its client's, when clients are capped.
    pub(crate) fn slot(&self) -> Option<&ClientSlot> {
        self.client.as_ref()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        // An evicted connection's place went to its evictor.
        let passed_on = self.client.as_ref().is_some_and(ClientSlot::close);
        if !passed_on {
            self.caps.slots.add_permits(1);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn the_total_is_refused_at_once_and_given_back_on_drop() {
        let caps = Caps::new(4, 0);
        let held: Vec<_> = (0..2).map(|_| caps.admit(A).unwrap()).collect();
        // Half the places taken: pressed.
        assert!(caps.pressed());
        let more: Vec<_> = (0..2).map(|_| caps.admit(B).unwrap()).collect();
        assert_eq!(caps.admit(A).err(), Some(Refused::TooManyTotal));
        drop(held);
        let again = caps.admit(A).unwrap();
        drop((more, again));
        assert_eq!(caps.slots.available_permits(), 4);
        assert!(!caps.pressed());
    }

    #[test]
    fn fewer_than_half_taken_is_not_pressed() {
        let caps = Caps::new(4, 0);
        let one = caps.admit(A).unwrap();
        assert!(!caps.pressed());
        drop(one);
    }

    #[test]
    fn an_eviction_passes_the_place_on_rather_than_taking_another() {
        let caps = Caps::new(2, 1);
        let old = caps.admit(A).unwrap();
        let other = caps.admit(B).unwrap();
        // A is at its cap, its connection waiting: the new one takes its
        // place though every place in the total is taken.
        let new = caps.admit(A).unwrap();
        drop(old);
        assert_eq!(caps.slots.available_permits(), 0);
        drop((new, other));
        assert_eq!(caps.slots.available_permits(), 2);
    }

    #[test]
    fn a_client_whose_connections_are_all_busy_is_refused() {
        let caps = Caps::new(4, 1);
        let busy = caps.admit(A).unwrap();
        assert!(busy.slot().unwrap().begin_work());
        assert_eq!(caps.admit(A).err(), Some(Refused::TooManyForClient));
    }
}
