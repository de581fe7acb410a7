//! The server's memory allocator, and handing its free memory back to the
//! system after a large load.
//!
//! The binary uses mimalloc (2.x) rather than the C library's malloc. Loading
//! a zone makes millions of small allocations (one per RRset and per node)
//! and frees as many parse buffers, on two threads at once. With glibc's
//! malloc, allocating and freeing took a tenth of a 1,000,000-record zone's
//! load, every small block carried a 16-octet header, and memory given back
//! and taken again page-faulted anew. With mimalloc `check-zone` reads that
//! zone in 0.49 s instead of 0.59 s, and the server holds it in 88 MiB
//! instead of 126 MiB (bench/RESULTS.md, "Memory and load time"). Answering
//! does not allocate, so the choice matters only for loading, reloading,
//! transfers and signing. This lives in the crate that holds the project's
//! foreign calls.
//!
//! It is built without its request for transparent huge pages (the crate's
//! `no_thp` feature), so the system's policy applies to it as it does to the
//! C library's malloc. With the request, where the system grants huge pages
//! only when asked (the usual `madvise` setting), every fault has to find or
//! compact a free 2 MiB page and zero it whole: measured here, the
//! 1,000,000-record zone loaded in 0.42 s on some runs and 0.70 s on others,
//! with zeroing up to half the time; without it, in 0.48-0.50 s on every run.
#![allow(unsafe_code)]

/// The global allocator the server binary declares (`#[global_allocator]`).
pub use mimalloc::MiMalloc as Allocator;

/// Returns free memory to the system: mimalloc keeps pages freed by a load
/// (the parse buffers, the replaced zone) for reuse until told otherwise,
/// which left a 1,000,000-record zone 50% more resident than it needs, and
/// twice that after a reload. The call visits every page the allocator
/// holds (8 to 20 ms with that zone loaded), so it belongs after loads,
/// reloads and full transfers, not after each small change.
pub fn release_free_memory() {
    // SAFETY: mi_collect takes a flag and touches only the allocator's own
    // bookkeeping; freed memory is never handed out again by the call.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}
