//! How many messages [`MessageView::parse`](super::MessageView::parse) read
//! on this thread: for tests that check a message is read once on its way
//! through the server (feature `parse-counter`, never in a release build).

use std::cell::Cell;

thread_local! {
    static PARSES: Cell<u64> = const { Cell::new(0) };
}

pub(crate) fn count() {
    PARSES.with(|p| p.set(p.get().wrapping_add(1)));
}

/// Parses on this thread since it started.
pub fn parses() -> u64 {
    PARSES.with(Cell::get)
}
