//! Flushes the engine has still to hear of. The cache's entries go at
//! once, wherever the flush comes from (the control socket, a negative
//! trust anchor); what the engine keeps beside them (zone key verdicts,
//! the aggressive cache's spans, checked signatures) is its own, behind no
//! lock, so a flush leaves a note here that the engine reads before its
//! next step. Without it, a flushed zone's keys stay trusted and its
//! spans go on denying names until their TTLs run out: a zone whose keys
//! or names an operator just fixed would not see the fix.
//!
//! What the engine knows of the servers (round trips, time-outs, lameness,
//! EDNS, cookies) is flushed apart from the data, as Unbound's
//! `flush_infra` is: an operator who fixed a server the resolver gave up
//! on wants it asked again, without losing the cache.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use bulwark_proto::Name;

/// What a flush covered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flushed {
    All,
    /// A zone: every name at or below it.
    Zone(Name),
    /// One name, every type.
    Name(Name),
}

/// Which servers' records a flush of the engine's server knowledge covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServersFlushed {
    All,
    One(IpAddr),
}

/// Notes kept at most, of each kind: past them, they make one flush of
/// everything of that kind (which is what many flushes in a row amount to).
const MAX_NOTES: usize = 64;

#[derive(Debug, Default)]
pub(super) struct Flushes {
    /// Whether `notes` or `servers` holds any: read on every step of the
    /// engine, so a load rather than a lock.
    pending: AtomicBool,
    notes: Mutex<Vec<Flushed>>,
    servers: Mutex<Vec<ServersFlushed>>,
}

impl Flushes {
    pub(super) fn note(&self, what: Flushed) {
        self.push(&self.notes, what, Flushed::All);
    }

    pub(super) fn note_servers(&self, what: ServersFlushed) {
        self.push(&self.servers, what, ServersFlushed::All);
    }

    /// Adds `what` to `notes`, where `all` stands for every note of the kind.
    fn push<T: PartialEq>(&self, notes: &Mutex<Vec<T>>, what: T, all: T) {
        let mut notes = notes.lock().unwrap_or_else(PoisonError::into_inner);
        if what == all || notes.len() >= MAX_NOTES {
            notes.clear();
            notes.push(all);
        } else if notes.first() != Some(&all) {
            notes.push(what);
        }
        self.pending.store(true, Ordering::Release);
    }

    /// The data flushes and the server flushes noted since the last take.
    pub(super) fn take(&self) -> (Vec<Flushed>, Vec<ServersFlushed>) {
        if !self.pending.load(Ordering::Acquire) {
            return (Vec::new(), Vec::new());
        }
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.store(false, Ordering::Release);
        (std::mem::take(&mut *notes), std::mem::take(&mut *servers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        s.parse().unwrap_or_else(|_| Name::root())
    }

    #[test]
    fn notes_are_taken_once_and_many_become_all() {
        let f = Flushes::default();
        assert!(f.take().0.is_empty());
        f.note(Flushed::Zone(name("example.")));
        f.note(Flushed::Name(name("www.example.")));
        assert_eq!(
            f.take().0,
            [
                Flushed::Zone(name("example.")),
                Flushed::Name(name("www.example."))
            ]
        );
        assert!(f.take().0.is_empty());
        for i in 0..=MAX_NOTES {
            f.note(Flushed::Name(name(&format!("n{i}.example."))));
        }
        assert_eq!(f.take().0, [Flushed::All]);
        // After everything, a narrower flush adds nothing.
        f.note(Flushed::All);
        f.note(Flushed::Zone(name("example.")));
        assert_eq!(f.take().0, [Flushed::All]);
    }

    #[test]
    fn server_notes_are_kept_apart_from_data_notes() {
        let f = Flushes::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        f.note_servers(ServersFlushed::One(a));
        assert_eq!(f.take(), (Vec::new(), vec![ServersFlushed::One(a)]));
        // Many data flushes become one flush of all data, not of the servers.
        for i in 0..=MAX_NOTES {
            f.note(Flushed::Name(name(&format!("n{i}.example."))));
        }
        f.note_servers(ServersFlushed::One(a));
        assert_eq!(f.take(), (vec![Flushed::All], vec![ServersFlushed::One(a)]));
        for _ in 0..=MAX_NOTES {
            f.note_servers(ServersFlushed::One(a));
        }
        f.note_servers(ServersFlushed::One(a));
        assert_eq!(f.take(), (Vec::new(), vec![ServersFlushed::All]));
    }
}
