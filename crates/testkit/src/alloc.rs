//! A global allocator that counts, for tests that prove a path does not
//! allocate once warm (the query path, TSIG over a zone transfer).
//!
//! Counting needs a global allocator, which is an `unsafe` trait: this
//! module (not any library crate) allows it, and only forwards to `System`.
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: bulwark_testkit::CountingAllocator = bulwark_testkit::CountingAllocator::new();
//!
//! fn main() {
//!     let buffer: Vec<u8> = Vec::with_capacity(64);
//!     let before = GLOBAL.allocations();
//!     let reused = buffer; // the code under test
//!     assert_eq!(GLOBAL.allocations() - before, 0);
//!     let _grown = vec![0u8; reused.capacity() + 1];
//!     assert_eq!(GLOBAL.allocations() - before, 1);
//! }
//! ```
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Allocations (and reallocations) made by this thread so far. Per
    /// thread, so that the test harness's other threads (other tests, the
    /// output capture) do not count against the code being measured.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Forwards every call to [`System`] and counts `alloc` and `realloc` calls
/// per thread. Install it with `#[global_allocator]`; the count means
/// nothing in a binary where it is not the global allocator.
#[derive(Debug, Default)]
pub struct CountingAllocator {
    _private: (),
}

impl CountingAllocator {
    /// The allocator, for a `#[global_allocator]` static.
    pub const fn new() -> CountingAllocator {
        CountingAllocator { _private: () }
    }

    /// How many times the calling thread has allocated or reallocated so
    /// far (deallocations are not counted). Compare two readings around
    /// the code under test.
    pub fn allocations(&self) -> usize {
        ALLOCATIONS.with(Cell::get)
    }
}

fn count_one() {
    // `try_with`: during thread teardown the slot may be gone, and an
    // allocation then must still succeed (it is simply not counted).
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get().wrapping_add(1)));
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds
// the `GlobalAlloc` contract; the counter is a const-initialised thread-local
// without a destructor, so touching it never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: as for `dealloc`; `new_size` is the caller's, unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
