//! An AF_XDP socket with its UMEM and four rings, on the kernel's interface
//! (`linux/if_xdp.h`, through `libc`'s definitions): the only `unsafe` of the
//! AF_XDP path, each block beside the call it wraps.
//!
//! The rings are single-producer, single-consumer queues shared with the
//! kernel through `mmap`: frames go to the kernel on the fill ring and come
//! back received on the RX ring; replies go out on the TX ring and their
//! frames come back on the completion ring. One worker thread owns the
//! socket, so each ring has one user-space side, as the kernel requires.
//!
//! A frame is in exactly one place at a time: a ring, or the worker's hands.
//! The worker only reads and writes frames in its hands, which is what makes
//! handing out slices of the shared UMEM sound.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// One UMEM chunk per frame, a page each: room for any Ethernet frame and
/// for a reply written over its query.
pub(crate) const FRAME_SIZE: u32 = 4096;
/// The offset of an address within its chunk (FRAME_SIZE is a power of two).
const IN_CHUNK: u64 = (FRAME_SIZE as u64).wrapping_sub(1);

/// The chunk a frame address lies in: what the fill ring takes back.
pub(crate) fn chunk_of(addr: u64) -> u64 {
    addr & !IN_CHUNK
}

/// The address of the `i`th chunk.
fn chunk(i: u32) -> u64 {
    u64::from(i).wrapping_mul(u64::from(FRAME_SIZE))
}
/// Frames per socket: the fill ring holds them all at the start. The kernel
/// takes them from the fill ring in turn, so every frame is touched once per
/// round of the pool: a smaller pool keeps fewer pages and cache lines in
/// play. 2048 frames (8 MiB) still hold 4 ms of traffic at 500,000 queries
/// a second; against 4096 the benchmark's figures moved within their noise
/// (-3% to +10%), so the smaller pool is kept for its memory.
pub(crate) const FRAMES: u32 = 2048;
const FILL_RING: u32 = 2048;
const COMPLETION_RING: u32 = 2048;
const RX_RING: u32 = 1024;
const TX_RING: u32 = 1024;
/// Kicks one flush may make: enough for a full TX ring at the kernel's 32
/// frames a kick, and a bound if the kernel keeps saying EAGAIN.
const MAX_KICKS: u32 = TX_RING / 32 + 1;

/// Whether the socket may map the UMEM into the driver (zero-copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMode {
    /// Zero-copy where the driver supports it, else copy.
    Auto,
    /// Copy: works on every driver and in generic XDP.
    Copy,
    /// Zero-copy or fail.
    ZeroCopy,
}

/// A region from `mmap`, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is memory this value owns, used by one thread at a
// time; moving it between threads moves that ownership.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Anonymous memory for the UMEM, in huge pages where the kernel allows
    /// (transparent huge pages on `madvise`, the common default): frames
    /// are used in turn, and with 4 KiB pages every one was a TLB miss.
    fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; no pointer is passed in.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let mapping = Mapping::from_raw(ptr, len)?;
        // SAFETY: advice on the mapping just made, whole; it changes how
        // pages are backed, not what they hold. Refused advice (THP off)
        // leaves 4 KiB pages, which work.
        unsafe {
            libc::madvise(mapping.ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
        }
        Ok(mapping)
    }

    fn ring(fd: RawFd, len: usize, offset: u64) -> io::Result<Mapping> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: maps the ring the kernel made for `fd` at `offset`; the
        // kernel checks `len` against the ring's size.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        Mapping::from_raw(ptr, len)
    }

    fn from_raw(ptr: *mut libc::c_void, len: usize) -> io::Result<Mapping> {
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
        Ok(Mapping { ptr, len })
    }

    /// A pointer `offset` octets in, where `size` octets fit and `align`
    /// divides the address.
    fn at(&self, offset: u64, size: usize, align: usize) -> io::Result<*mut u8> {
        let bad = || io::Error::from(io::ErrorKind::InvalidData);
        let offset = usize::try_from(offset).map_err(|_| bad())?;
        if offset.checked_add(size).is_none_or(|end| end > self.len) {
            return Err(bad());
        }
        // SAFETY: `offset + size` lies within the mapping, checked above.
        let ptr = unsafe { self.ptr.as_ptr().add(offset) };
        if (ptr as usize).checked_rem(align) != Some(0) {
            return Err(bad());
        }
        Ok(ptr)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the region came from mmap with this length, and nothing
        // borrowed from it outlives `self` (rings and frames borrow `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// One ring's shared indices and entries.
#[derive(Debug)]
struct Ring<T> {
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    entries: NonNull<T>,
    mask: u32,
    /// Last: unmapped after the pointers above stop being used.
    _map: Mapping,
}

// SAFETY: as for Mapping; the pointers point into `_map`.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, size: u32, off: &libc::xdp_ring_offset, pgoff: u64) -> io::Result<Ring<T>> {
        let entry = std::mem::size_of::<T>();
        let entries_len = usize::try_from(size)
            .ok()
            .and_then(|n| n.checked_mul(entry))
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let len = usize::try_from(off.desc)
            .ok()
            .and_then(|d| d.checked_add(entries_len))
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
        let map = Mapping::ring(fd, len, pgoff)?;
        let index = |offset| {
            map.at(offset, 4, std::mem::align_of::<AtomicU32>())
                .and_then(|p| {
                    NonNull::new(p.cast::<AtomicU32>())
                        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))
                })
        };
        let producer = index(off.producer)?;
        let consumer = index(off.consumer)?;
        let flags = index(off.flags)?;
        let entries = map.at(off.desc, entries_len, std::mem::align_of::<T>())?;
        let entries = NonNull::new(entries.cast::<T>())
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
        Ok(Ring {
            producer,
            consumer,
            flags,
            entries,
            mask: size.wrapping_sub(1),
            _map: map,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: in bounds and aligned (checked in `map`), and the kernel
        // only ever accesses it atomically; it lives as long as `_map`.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    fn flags(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.flags.as_ref() }
    }

    fn read(&self, index: u32) -> T {
        let slot = usize::try_from(index & self.mask).unwrap_or(0);
        // SAFETY: `slot` ≤ mask < size, so within the entries checked in
        // `map`; the entry belongs to this side between the index loads and
        // stores that bracket it (Acquire before, Release after).
        unsafe { self.entries.as_ptr().add(slot).read() }
    }

    fn write(&mut self, index: u32, value: T) {
        let slot = usize::try_from(index & self.mask).unwrap_or(0);
        // SAFETY: as for `read`.
        unsafe { self.entries.as_ptr().add(slot).write(value) }
    }
}

/// A ring user space fills: fill and TX.
#[derive(Debug)]
pub(crate) struct Producer<T> {
    ring: Ring<T>,
    size: u32,
    head: u32,
    tail: u32,
}

impl<T: Copy> Producer<T> {
    fn new(ring: Ring<T>, size: u32) -> Producer<T> {
        let head = ring.producer().load(Ordering::Relaxed);
        let tail = ring.consumer().load(Ordering::Acquire);
        Producer {
            ring,
            size,
            head,
            tail,
        }
    }

    /// Entries free to write, looking at the kernel's side only when the
    /// last look is used up.
    pub(crate) fn free(&mut self) -> u32 {
        let free = self.size.wrapping_sub(self.head.wrapping_sub(self.tail));
        if free > 0 {
            return free;
        }
        self.tail = self.ring.consumer().load(Ordering::Acquire);
        self.size.wrapping_sub(self.head.wrapping_sub(self.tail))
    }

    /// Writes one entry, published by the next [`Producer::submit`].
    pub(crate) fn push(&mut self, value: T) -> bool {
        if self.free() == 0 {
            return false;
        }
        self.ring.write(self.head, value);
        self.head = self.head.wrapping_add(1);
        true
    }

    pub(crate) fn submit(&self) {
        self.ring.producer().store(self.head, Ordering::Release);
    }

    pub(crate) fn needs_wakeup(&self) -> bool {
        self.ring.flags().load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

/// A ring the kernel fills: RX and completion.
#[derive(Debug)]
pub(crate) struct Consumer<T> {
    ring: Ring<T>,
    head: u32,
    tail: u32,
}

impl<T: Copy> Consumer<T> {
    fn new(ring: Ring<T>) -> Consumer<T> {
        let tail = ring.consumer().load(Ordering::Relaxed);
        Consumer {
            ring,
            head: tail,
            tail,
        }
    }

    /// The next entry, if the kernel has published one.
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.head == self.tail {
            self.head = self.ring.producer().load(Ordering::Acquire);
            if self.head == self.tail {
                return None;
            }
        }
        let value = self.ring.read(self.tail);
        self.tail = self.tail.wrapping_add(1);
        Some(value)
    }

    /// Gives the entries popped so far back to the kernel.
    pub(crate) fn release(&self) {
        self.ring.consumer().store(self.tail, Ordering::Release);
    }
}

/// A received frame, or one to send: where it is in the UMEM and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Desc {
    pub addr: u64,
    pub len: u32,
}

/// The kernel's `struct xdp_desc`.
#[derive(Clone, Copy)]
#[repr(C)]
struct RawDesc {
    addr: u64,
    len: u32,
    options: u32,
}

/// The kernel's counts for one socket (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames dropped for want of room (in the RX ring or for want of fill).
    pub rx_dropped: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty: u64,
    pub rx_invalid: u64,
    pub tx_invalid: u64,
}

/// An AF_XDP socket bound to one queue of an interface.
#[derive(Debug)]
pub(crate) struct Xsk {
    pub fill: Producer<u64>,
    pub completion: Consumer<u64>,
    rx: Consumer<RawDesc>,
    tx: Producer<RawDesc>,
    umem: Mapping,
    zero_copy: bool,
    /// Last: closed after the rings and UMEM above are unmapped.
    fd: OwnedFd,
}

impl std::fmt::Debug for RawDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawDesc")
            .field("addr", &self.addr)
            .field("len", &self.len)
            .finish()
    }
}

fn setsockopt<T>(fd: RawFd, name: libc::c_int, value: &T) -> io::Result<()> {
    let len = libc::socklen_t::try_from(std::mem::size_of::<T>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `value` is a live `T` of `len` octets for the call.
    let rc = unsafe { libc::setsockopt(fd, libc::SOL_XDP, name, (value as *const T).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt<T: Copy>(fd: RawFd, name: libc::c_int, mut value: T) -> io::Result<T> {
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<T>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `value` is a live, writable `T` of `len` octets; the kernel
    // writes at most `len` and reports how many.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

fn bind(fd: RawFd, ifindex: u32, queue: u32, flags: u16) -> io::Result<()> {
    let addr = libc::sockaddr_xdp {
        sxdp_family: u16::try_from(libc::AF_XDP).unwrap_or(44),
        sxdp_flags: flags,
        sxdp_ifindex: ifindex,
        sxdp_queue_id: queue,
        sxdp_shared_umem_fd: 0,
    };
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_xdp>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `addr` is a valid sockaddr_xdp of `len` octets for the call.
    let rc = unsafe { libc::bind(fd, (&addr as *const libc::sockaddr_xdp).cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Xsk {
    /// Opens a socket on `queue` of interface `ifindex`, its UMEM handed to
    /// the kernel on the fill ring but for `keep` frames, returned for the
    /// caller to hold.
    pub(crate) fn open(
        ifindex: u32,
        queue: u32,
        mode: CopyMode,
        keep: u32,
    ) -> io::Result<(Xsk, Vec<u64>)> {
        // SAFETY: plain socket(2); the descriptor is owned at once below.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let raw = fd.as_raw_fd();
        let frames_len = usize::try_from(chunk(FRAMES))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let umem = Mapping::anonymous(frames_len)?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr.as_ptr() as u64,
            len: frames_len as u64,
            chunk_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(raw, libc::XDP_UMEM_REG, &reg)?;
        setsockopt(raw, libc::XDP_UMEM_FILL_RING, &FILL_RING)?;
        setsockopt(raw, libc::XDP_UMEM_COMPLETION_RING, &COMPLETION_RING)?;
        setsockopt(raw, libc::XDP_RX_RING, &RX_RING)?;
        setsockopt(raw, libc::XDP_TX_RING, &TX_RING)?;
        let zeroed = libc::xdp_ring_offset {
            producer: 0,
            consumer: 0,
            desc: 0,
            flags: 0,
        };
        let off = getsockopt(
            raw,
            libc::XDP_MMAP_OFFSETS,
            libc::xdp_mmap_offsets {
                rx: zeroed,
                tx: zeroed,
                fr: zeroed,
                cr: zeroed,
            },
        )?;
        let pgoff = |p: libc::off_t| u64::try_from(p).unwrap_or(0);
        let fill = Producer::new(
            Ring::map(raw, FILL_RING, &off.fr, libc::XDP_UMEM_PGOFF_FILL_RING)?,
            FILL_RING,
        );
        let completion = Consumer::new(Ring::map(
            raw,
            COMPLETION_RING,
            &off.cr,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )?);
        let rx = Consumer::new(Ring::map(
            raw,
            RX_RING,
            &off.rx,
            pgoff(libc::XDP_PGOFF_RX_RING),
        )?);
        let tx = Producer::new(
            Ring::map(raw, TX_RING, &off.tx, pgoff(libc::XDP_PGOFF_TX_RING))?,
            TX_RING,
        );
        let bind_as = |zero_copy: bool| {
            let mode = if zero_copy {
                libc::XDP_ZEROCOPY
            } else {
                libc::XDP_COPY
            };
            bind(raw, ifindex, queue, libc::XDP_USE_NEED_WAKEUP | mode).map(|()| zero_copy)
        };
        let zero_copy = match mode {
            CopyMode::Copy => bind_as(false)?,
            CopyMode::ZeroCopy => bind_as(true)?,
            // Zero-copy where the driver has it; a failed bind leaves the
            // socket unbound, so copy mode can be asked for next.
            CopyMode::Auto => bind_as(true).or_else(|_| bind_as(false))?,
        };
        let mut xsk = Xsk {
            fill,
            completion,
            rx,
            tx,
            umem,
            zero_copy,
            fd,
        };
        let keep = keep.min(FRAMES);
        let given = FRAMES.saturating_sub(keep);
        for i in 0..given {
            if !xsk.fill.push(chunk(i)) {
                break;
            }
        }
        xsk.fill.submit();
        let kept = (given..FRAMES).map(chunk).collect();
        Ok((xsk, kept))
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub(crate) fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The next received frame.
    pub(crate) fn receive(&mut self) -> Option<Desc> {
        self.rx.pop().map(|d| Desc {
            addr: d.addr,
            len: d.len,
        })
    }

    /// Gives the RX entries taken so far back to the kernel.
    pub(crate) fn release_received(&self) {
        self.rx.release();
    }

    /// Queues a frame to send; `false` when the TX ring is full.
    pub(crate) fn send(&mut self, desc: Desc) -> bool {
        self.tx.push(RawDesc {
            addr: desc.addr,
            len: desc.len,
            options: 0,
        })
    }

    /// Publishes the queued frames and, where the kernel asks for it, tells
    /// it to send them. In copy mode one kick sends at most 32 frames
    /// (the kernel's TX_BATCH_SIZE) and says EAGAIN when more are left: one
    /// kick per round of 64 answers left half of them to find the ring full
    /// and be lost, after all the work of answering. So it kicks again while
    /// the kernel says EAGAIN (bounded). A zero-copy driver takes the whole
    /// ring on one kick and sends from its own poll: one kick, no loop.
    pub(crate) fn flush_sends(&self) {
        self.tx.submit();
        let mut kicks = MAX_KICKS;
        while self.tx.needs_wakeup() && kicks > 0 {
            kicks = kicks.saturating_sub(1);
            // SAFETY: a zero-length sendto on our own socket: the AF_XDP
            // "kick"; no buffer is read.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            // Sent, or EBUSY and ENOBUFS (the device is busy: the frames
            // stay queued and go with the next round's kick).
            if rc >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock {
                break;
            }
        }
    }

    /// The octets of a frame in the worker's hands, or `None` for a
    /// descriptor outside the UMEM.
    pub(crate) fn frame(&self, desc: Desc) -> Option<&[u8]> {
        let (start, len) = self.span(desc.addr, usize::try_from(desc.len).ok()?)?;
        // SAFETY: within the UMEM (checked in `span`), and the frame is in
        // this worker's hands: the kernel does not touch it until it is given
        // back on the fill or TX ring, which takes `&mut self`.
        Some(unsafe { std::slice::from_raw_parts(self.umem.ptr.as_ptr().add(start), len) })
    }

    /// The whole chunk from `addr` to its end, writable, for a reply.
    pub(crate) fn chunk_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        let in_chunk = usize::try_from(addr & IN_CHUNK).ok()?;
        let room = usize::try_from(FRAME_SIZE).ok()?.checked_sub(in_chunk)?;
        let (start, len) = self.span(addr, room)?;
        // SAFETY: as for `frame`, and `&mut self` makes it the only borrow.
        Some(unsafe { std::slice::from_raw_parts_mut(self.umem.ptr.as_ptr().add(start), len) })
    }

    fn span(&self, addr: u64, len: usize) -> Option<(usize, usize)> {
        let start = usize::try_from(addr).ok()?;
        let end = start.checked_add(len)?;
        // A frame never crosses its chunk (aligned mode).
        let chunk_end = usize::try_from(chunk_of(addr).checked_add(u64::from(FRAME_SIZE))?).ok()?;
        (end <= self.umem.len && end <= chunk_end).then_some((start, len))
    }

    /// The kernel's counts for this socket.
    pub(crate) fn stats(&self) -> XskStats {
        let zero = libc::xdp_statistics {
            rx_dropped: 0,
            rx_invalid_descs: 0,
            tx_invalid_descs: 0,
            rx_ring_full: 0,
            rx_fill_ring_empty_descs: 0,
            tx_ring_empty_descs: 0,
        };
        match getsockopt(self.fd.as_raw_fd(), libc::XDP_STATISTICS, zero) {
            Ok(s) => XskStats {
                rx_dropped: s.rx_dropped,
                rx_ring_full: s.rx_ring_full,
                rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
                rx_invalid: s.rx_invalid_descs,
                tx_invalid: s.tx_invalid_descs,
            },
            Err(_) => XskStats::default(),
        }
    }
}
