//! How the crate's parallel work runs. The zone crate spawns no threads: a
//! caller that has threads (the server) passes a [`Fork`] that uses them, and
//! everything else runs the same work in turn with [`InTurn`].

/// Runs two closures, possibly at the same time (a thread pool's or a scoped
/// thread's `join`), and returns both results.
pub trait Fork: Sync {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B);
}

/// A [`Fork`] that runs one closure after the other.
#[derive(Debug, Clone, Copy, Default)]
pub struct InTurn;

impl Fork for InTurn {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        let a = a();
        (a, b())
    }
}

/// Below this many records or names, halves of the build run in turn: a
/// thread costs tens of microseconds to start, and a server with thousands of
/// small zones would pay that for each.
pub(crate) const MIN_FORKED_ITEMS: usize = 1 << 16;

/// `fork.join(a, b)` for work on `items` items, in turn when they are few.
pub(crate) fn join_if_large<A: Send, B: Send>(
    fork: &impl Fork,
    items: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if items < MIN_FORKED_ITEMS {
        InTurn.join(a, b)
    } else {
        fork.join(a, b)
    }
}
