//! Reading a zone's master file with every core: a large file is parsed in
//! parts on scoped threads (the zone crate decides where to cut and checks
//! that the result is what one pass would give; see
//! `bulwark_zone::parse::split`).

use std::path::Path;
use std::thread;

use bulwark_proto::Name;
use bulwark_zone::load::{load_zone_file_keeping, LoadError, Loaded};
use bulwark_zone::{Fork, InTurn};

/// Loads the zone file at `path`, in as many parts as this process may use
/// cores (all in turn on this thread when that is one), keeping the first
/// `warnings` warnings in zone order and counting the rest
/// (`usize::MAX` keeps every one).
pub fn read_zone_file(origin: &Name, path: &Path, warnings: usize) -> Result<Loaded, LoadError> {
    let parts = thread::available_parallelism().map_or(1, usize::from);
    if parts > 1 {
        load_zone_file_keeping(origin, path, &ScopedThreads, parts, warnings)
    } else {
        load_zone_file_keeping(origin, path, &InTurn, 1, warnings)
    }
}

/// Runs the second closure on a scoped thread while the caller runs the
/// first, as the signer's scoped threads do.
struct ScopedThreads;

impl Fork for ScopedThreads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        thread::scope(|scope| {
            let b = scope.spawn(b);
            let a = a();
            let b = b
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (a, b)
        })
    }
}
