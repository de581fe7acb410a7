//! Flushes the engine has still to hear of. The cache's entries go at
//! once, wherever the flush comes from (the control socket, a negative
//! trust anchor); what the engine keeps beside them (zone key verdicts,
//! the aggressive cache's spans, checked signatures) is its own, behind no
//! lock, so a flush leaves a note here that the engine reads before its
//! next step. Without it, a flushed zone's keys stay trusted and its
//! spans go on denying names until their TTLs run out: a zone whose keys
//! or names an operator just fixed would not see the fix.

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

/// Notes kept at most: past them, they make one flush of everything
/// (which is what many flushes in a row amount to).
const MAX_NOTES: usize = 64;

#[derive(Debug, Default)]
pub(super) struct Flushes {
    /// Whether `notes` holds any: read on every step of the engine, so a
    /// load rather than a lock.
    pending: AtomicBool,
    notes: Mutex<Vec<Flushed>>,
}

impl Flushes {
    pub(super) fn note(&self, what: Flushed) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if what == Flushed::All || notes.len() >= MAX_NOTES {
            notes.clear();
            notes.push(Flushed::All);
        } else if notes.first() != Some(&Flushed::All) {
            notes.push(what);
        }
        self.pending.store(true, Ordering::Release);
    }

    pub(super) fn take(&self) -> Vec<Flushed> {
        if !self.pending.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        self.pending.store(false, Ordering::Release);
        std::mem::take(&mut *notes)
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
        assert!(f.take().is_empty());
        f.note(Flushed::Zone(name("example.")));
        f.note(Flushed::Name(name("www.example.")));
        assert_eq!(
            f.take(),
            [
                Flushed::Zone(name("example.")),
                Flushed::Name(name("www.example."))
            ]
        );
        assert!(f.take().is_empty());
        for i in 0..=MAX_NOTES {
            f.note(Flushed::Name(name(&format!("n{i}.example."))));
        }
        assert_eq!(f.take(), [Flushed::All]);
        // After everything, a narrower flush adds nothing.
        f.note(Flushed::All);
        f.note(Flushed::Zone(name("example.")));
        assert_eq!(f.take(), [Flushed::All]);
    }
}
