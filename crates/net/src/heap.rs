//! Handing freed heap memory back to the system after a large load.
//!
//! glibc's allocator returns freed memory only from the top of its heap, and
//! once a large block has been freed it serves later large requests from the
//! heap rather than from their own mappings. Loading a big zone frees tens of
//! megabytes of parse buffers below the zone's own data, which then stay
//! resident for the life of the process: 40% more resident memory for a
//! 1,000,000-record zone read on two threads. `malloc_trim` releases those
//! free pages (Knot DNS does the same after loading zones). This lives in the
//! crate that holds the project's libc calls.
#![allow(unsafe_code)]

/// Returns the allocator's free pages to the system. A no-op where the C
/// library has no `malloc_trim`.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes a byte count and touches only the allocator's
    // own bookkeeping, under its own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
