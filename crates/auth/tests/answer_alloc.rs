//! The query path does not allocate once the answerer and buffer are warm.
//!
//! Counting allocations needs a global allocator, which is an `unsafe` trait: this
//! test binary (not the library) allows it, and only forwards to `System`.
#![allow(unsafe_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use bulwark_auth::{AnswerConfig, Answerer, Transport};
use common::*;
use hickory_proto::rr::RecordType;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds
// the `GlobalAlloc` contract; the counter is a const-initialised thread-local, so
// touching it never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: as for `dealloc`; `new_size` is the caller's, unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn answering_does_not_allocate_once_warm() {
    let zones = zoneset(&[example()]);
    let queries: Vec<Vec<u8>> = [
        ("web.example.com.", RecordType::A),
        ("chain.example.com.", RecordType::A),
        ("example.com.", RecordType::MX),
        ("example.com.", RecordType::NS),
        ("nothere.example.com.", RecordType::A),
        ("FoO.wild.example.com.", RecordType::TXT),
        ("foo.wc.example.com.", RecordType::A),
        ("www.sub.example.com.", RecordType::A),
        ("x.dn2.example.com.", RecordType::A),
        ("example.com.", RecordType::ANY),
        ("www.example.net.", RecordType::A),
    ]
    .iter()
    .map(|(n, t)| with_edns(query(n, *t), 1232, false).to_vec().unwrap())
    .collect();
    let mut a = Answerer::new(Arc::new(AnswerConfig::default()));
    let mut out = Vec::with_capacity(65535);
    for q in &queries {
        a.answer(&zones, Transport::Udp, q, &mut out);
    }
    for q in &queries {
        let before = allocations();
        a.answer(&zones, Transport::Udp, q, &mut out);
        let after = allocations();
        assert_eq!(after - before, 0, "query {:02x?} allocated", &q[12..]);
    }
}
