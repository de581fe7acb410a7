//! The raw syscalls: eventfd, poll, recvmmsg and sendmmsg. Every `unsafe` block in
//! the crate lives here, each small and justified.
#![allow(unsafe_code)]

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes no pointers; a negative return is an error.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by eventfd, is valid and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes the eventfd readable. Failure is impossible short of counter overflow,
/// which would also leave it readable, so the result is ignored.
pub(crate) fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64, as eventfd requires.
    let _ = unsafe { libc::write(fd, (&one as *const u64).cast(), mem::size_of::<u64>()) };
}

/// poll(2) with no timeout; retried on EINTR by the caller.
pub(crate) fn poll(fds: &mut [libc::pollfd]) -> io::Result<usize> {
    let n = libc::nfds_t::try_from(fds.len())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `fds` is a live, exclusively borrowed slice of exactly `n` pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), n, -1) };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// poll(2) waiting at most `timeout_ms` milliseconds; an interrupted wait
/// counts as a timeout (the caller loops anyway).
pub(crate) fn poll_for(fds: &mut [libc::pollfd], timeout_ms: i32) -> usize {
    let Ok(n) = libc::nfds_t::try_from(fds.len()) else {
        return 0;
    };
    // SAFETY: `fds` is a live, exclusively borrowed slice of exactly `n` pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), n, timeout_ms) };
    usize::try_from(r).unwrap_or(0)
}

/// Reads a non-blocking eventfd's count back to zero.
pub(crate) fn eventfd_clear(fd: RawFd) {
    let mut count: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64, as eventfd requires; EAGAIN
    // when the count is already zero.
    let _ = unsafe { libc::read(fd, (&mut count as *mut u64).cast(), mem::size_of::<u64>()) };
}

fn zeroed_mmsghdr() -> libc::mmsghdr {
    // SAFETY: mmsghdr is plain data (integers and nullable pointers): all-zero is valid.
    unsafe { mem::zeroed() }
}

fn zeroed_storage() -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain integer data: all-zero is valid.
    unsafe { mem::zeroed() }
}

/// `len` as the socklen_t the kernel wants; sockaddr_storage is 128 bytes.
fn storage_len() -> libc::socklen_t {
    libc::socklen_t::try_from(mem::size_of::<libc::sockaddr_storage>()).unwrap_or(128)
}

/// Buffers for receiving a batch of datagrams with one recvmmsg call, allocated
/// once per worker and reused for every batch.
pub(crate) struct RecvBatch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    addrs: Vec<libc::sockaddr_storage>,
    buf: Vec<u8>,
    slot: usize,
    /// Ancillary data per slot (u64 words keep cmsghdr alignment), used only
    /// when the socket reports each datagram's destination address.
    ctrl: Vec<u64>,
    pktinfo: bool,
    /// How many leading headers may differ from their initial state: the
    /// kernel writes the length, address length, flags and control length of
    /// each datagram it receives, and nothing else. All of them at first.
    dirty: usize,
}

/// Words of ancillary data per datagram: room for one in6_pktinfo message.
const CTRL_WORDS: usize = 8;

impl RecvBatch {
    /// `pktinfo`: the socket has IP_PKTINFO / IPV6_RECVPKTINFO on (see
    /// [`enable_pktinfo`]) and replies must name their source address.
    pub(crate) fn new(batch: usize, slot: usize, pktinfo: bool) -> RecvBatch {
        let batch = batch.max(1);
        let slot = slot.max(512);
        RecvBatch {
            ctrl: if pktinfo {
                vec![0; batch.saturating_mul(CTRL_WORDS)]
            } else {
                Vec::new()
            },
            pktinfo,
            hdrs: (0..batch).map(|_| zeroed_mmsghdr()).collect(),
            iovs: (0..batch)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            addrs: (0..batch).map(|_| zeroed_storage()).collect(),
            buf: vec![0; batch.saturating_mul(slot)],
            slot,
            dirty: batch,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Receives up to a batch without blocking; `Ok(0)` when nothing is waiting.
    pub(crate) fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        match self.recv_with(fd, libc::MSG_DONTWAIT) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            r => r,
        }
    }

    /// Sleeps until at least one datagram is waiting, then takes up to a batch
    /// without waiting for more (MSG_WAITFORONE): one syscall per wake-up
    /// where poll and a non-blocking receive take two. A socket shut down for
    /// reading (how the workers are stopped) returns at once with empty
    /// entries, not datagrams: the caller checks its shutdown flag first.
    pub(crate) fn recv_waiting(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_with(fd, libc::MSG_WAITFORONE)
    }

    fn recv_with(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<usize> {
        // Only the headers the last call filled are set again: at light load a
        // wake-up brings one or two datagrams, and setting all 64 headers each
        // time cost more instructions than answering the query. The pointers
        // of the others, set by an earlier call, still hold: the buffers they
        // point into were allocated once in `new` and are never resized or
        // replaced, so they never move, and only the kernel writes through them.
        let dirty = self.dirty;
        for (((hdr, iov), addr), chunk) in self
            .hdrs
            .iter_mut()
            .zip(self.iovs.iter_mut())
            .zip(self.addrs.iter_mut())
            .zip(self.buf.chunks_exact_mut(self.slot))
            .take(dirty)
        {
            iov.iov_base = chunk.as_mut_ptr().cast();
            iov.iov_len = chunk.len();
            hdr.msg_hdr.msg_name = (addr as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = storage_len();
            hdr.msg_hdr.msg_iov = iov;
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
        }
        if self.pktinfo {
            for (hdr, ctrl) in self
                .hdrs
                .iter_mut()
                .zip(self.ctrl.chunks_exact_mut(CTRL_WORDS))
                .take(dirty)
            {
                hdr.msg_hdr.msg_control = ctrl.as_mut_ptr().cast();
                hdr.msg_hdr.msg_controllen = mem::size_of_val(ctrl);
            }
        }
        let vlen = libc::c_uint::try_from(self.hdrs.len()).unwrap_or(1);
        // Whatever the call does, nothing past `vlen` headers is written.
        self.dirty = self.hdrs.len();
        loop {
            // SAFETY: every header points at a live iovec, address, buffer slot
            // and (with pktinfo) control slot owned by `self`, set above or by
            // an earlier call into storage that has not moved since (see
            // above); `self` is exclusively borrowed for the call.
            let r = unsafe {
                libc::recvmmsg(
                    fd,
                    self.hdrs.as_mut_ptr(),
                    vlen,
                    flags,
                    std::ptr::null_mut(),
                )
            };
            if r >= 0 {
                let n = usize::try_from(r).unwrap_or(self.hdrs.len());
                self.dirty = n.min(self.hdrs.len());
                return Ok(n);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// The payload of message `i` of the last batch; `None` if it was cut short
    /// (bigger than a slot) or `i` is out of range.
    pub(crate) fn payload(&self, i: usize) -> Option<&[u8]> {
        let hdr = self.hdrs.get(i)?;
        if hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            return None;
        }
        let len = usize::try_from(hdr.msg_len).ok()?;
        let start = i.checked_mul(self.slot)?;
        self.buf.get(start..start.checked_add(len)?)
    }

    /// The control data received with message `i`, as bytes.
    fn control(&self, i: usize) -> Option<[u8; CTRL_WORDS * 8]> {
        let hdr = self.hdrs.get(i)?;
        let start = i.checked_mul(CTRL_WORDS)?;
        let words = self.ctrl.get(start..start.checked_add(CTRL_WORDS)?)?;
        let mut bytes = [0u8; CTRL_WORDS * 8];
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        let len = hdr.msg_hdr.msg_controllen.min(bytes.len());
        // Bytes past what the kernel wrote are stale: clear them.
        for b in bytes.iter_mut().skip(len) {
            *b = 0;
        }
        Some(bytes)
    }

    /// The ancillary data a reply to message `i` must carry to leave from
    /// the query's destination address; `None` when the socket is bound to a
    /// specific address and needs none.
    pub(crate) fn reply_control(&self, i: usize) -> Option<ReplyControl> {
        if !self.pktinfo {
            return None;
        }
        let mut bytes = [0u8; CTRL_WORDS * 8];
        let len = self.control(i).map_or(0, |c| reply_pktinfo(&c, &mut bytes));
        if len == 0 {
            return None;
        }
        let mut words = [0u64; CTRL_WORDS];
        for (w, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
        }
        Some(ReplyControl { words, len })
    }

    pub(crate) fn peer(&self, i: usize) -> Option<SocketAddr> {
        let hdr = self.hdrs.get(i)?;
        sockaddr_to_std(self.addrs.get(i)?, hdr.msg_hdr.msg_namelen)
    }
}

fn sockaddr_to_std(storage: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = usize::try_from(len).ok()?;
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, and
            // sockaddr_storage is large and aligned enough for any sockaddr.
            let sin =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Asks the kernel to report each datagram's destination address, so a socket
/// bound to 0.0.0.0 or :: can reply from the address the query was sent to
/// (RFC 1123 §6.1.3.5 hints that replies come from the queried address; resolvers
/// drop replies from any other).
pub(crate) fn enable_pktinfo(fd: RawFd, ipv6: bool) -> io::Result<()> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO)
    } else {
        (libc::IPPROTO_IP, libc::IP_PKTINFO)
    };
    set_int_option(fd, level, name, 1)
}

/// Sets how a responder's UDP socket may fragment (`udp::Fragmentation`).
/// Either way the path MTU the kernel learnt from ICMP is ignored for
/// sending, so a forged "fragmentation needed" or "packet too big" cannot
/// make the server split its answers, the opening of the fragment-injection
/// attacks on the DNS.
/// - `Never` (`PMTUDISC_PROBE`, and `IPV6_DONTFRAG`): DF set on IPv4, no
///   fragmenting at the source on IPv6 (RFC 9715 §3.1). A reply larger than
///   the interface's MTU fails with EMSGSIZE and goes again truncated. With
///   DF set the kernel also skips choosing an IP ID for every datagram.
/// - `AtInterfaceMtu` (`PMTUDISC_OMIT`): no DF; only a reply larger than the
///   interface's MTU is fragmented, for servers configured to send them.
pub(crate) fn set_fragmentation(fd: RawFd, ipv6: bool, never: bool) -> io::Result<()> {
    if ipv6 {
        let mode = if never {
            libc::IPV6_PMTUDISC_PROBE
        } else {
            libc::IPV6_PMTUDISC_OMIT
        };
        set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, mode)?;
        set_int_option(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_DONTFRAG,
            i32::from(never),
        )
    } else {
        let mode = if never {
            libc::IP_PMTUDISC_PROBE
        } else {
            libc::IP_PMTUDISC_OMIT
        };
        set_int_option(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, mode)
    }
}

/// The socket's IP_MTU_DISCOVER (IPv4) or IPV6_MTU_DISCOVER (IPv6) mode.
#[cfg(test)]
pub(crate) fn mtu_discover_mode(fd: RawFd, ipv6: bool) -> io::Result<libc::c_int> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
    };
    let mut value: libc::c_int = -1;
    let mut len = libc::socklen_t::try_from(mem::size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: passes a pointer to a live c_int and its size, as getsockopt expects.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// TCP Fast Open (RFC 7413) on a listening socket: up to `queue`
/// connections whose SYN carried data (and a valid TFO cookie) may wait
/// for accept, their query read before the handshake ends. The kernel
/// takes it only where `net.ipv4.tcp_fastopen` has its server bit (2).
pub(crate) fn enable_fast_open_listener(fd: RawFd, queue: libc::c_int) -> io::Result<()> {
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_FASTOPEN, queue)
}

/// TCP Fast Open as a client, set before `connect`: when the kernel holds
/// a TFO cookie of the server (it keeps them per destination), `connect`
/// returns at once and the first write goes out in the SYN; otherwise the
/// SYN asks for a cookie and the connection proceeds as usual.
pub(crate) fn enable_fast_open_connect(fd: RawFd) -> io::Result<()> {
    set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_FASTOPEN_CONNECT, 1)
}

fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(mem::size_of::<libc::c_int>()).unwrap_or(4);
    // SAFETY: passes a pointer to a live c_int and its size, as setsockopt expects.
    let r =
        unsafe { libc::setsockopt(fd, level, name, (&value as *const libc::c_int).cast(), len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn cmsg_align(n: usize) -> usize {
    let a = mem::size_of::<usize>();
    n.saturating_add(a.saturating_sub(1)) & !(a.saturating_sub(1))
}

/// From the ancillary data received with a query, the ancillary data to send
/// with its reply so it leaves from the query's destination address. Parsed by
/// hand (cmsghdr: length, level, type, then data at the aligned header size).
fn reply_pktinfo(received: &[u8; CTRL_WORDS * 8], out: &mut [u8; CTRL_WORDS * 8]) -> usize {
    let header = cmsg_align(mem::size_of::<libc::cmsghdr>());
    let mut pos = 0usize;
    while let Some(h) = received.get(pos..pos.saturating_add(header)) {
        let word = mem::size_of::<usize>();
        let (Some(len_b), Some(level_b), Some(type_b)) = (
            h.get(..word),
            h.get(word..word.saturating_add(4)),
            h.get(word.saturating_add(4)..word.saturating_add(8)),
        ) else {
            return 0;
        };
        let len = usize::from_ne_bytes(len_b.try_into().unwrap_or([0; mem::size_of::<usize>()]));
        let level = i32::from_ne_bytes(level_b.try_into().unwrap_or([0; 4]));
        let ctype = i32::from_ne_bytes(type_b.try_into().unwrap_or([0; 4]));
        if len < header {
            return 0;
        }
        let data = received.get(pos.saturating_add(header)..pos.saturating_add(len));
        let reply: Option<(i32, i32, [u8; 20], usize)> = match (level, ctype, data) {
            (libc::IPPROTO_IP, libc::IP_PKTINFO, Some(d)) if d.len() >= 12 => {
                // in_pktinfo { ifindex, spec_dst, addr }: send from `addr` (the
                // query's destination) as spec_dst; ifindex 0 lets routing choose.
                let mut v = [0u8; 20];
                if let (Some(dst), Some(src)) = (v.get_mut(4..8), d.get(8..12)) {
                    dst.copy_from_slice(src);
                }
                Some((libc::IPPROTO_IP, libc::IP_PKTINFO, v, 12))
            }
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, Some(d)) if d.len() >= 20 => {
                // in6_pktinfo { addr, ifindex }: sent back as received, the
                // interface kept for link-local addresses.
                let mut v = [0u8; 20];
                if let Some(src) = d.get(..20) {
                    v.copy_from_slice(src);
                }
                Some((libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, v, 20))
            }
            _ => None,
        };
        if let Some((level, ctype, data, dlen)) = reply {
            let word = mem::size_of::<usize>();
            let total = header.saturating_add(dlen);
            if let Some(h) = out.get_mut(..word) {
                h.copy_from_slice(&total.to_ne_bytes());
            }
            if let Some(h) = out.get_mut(word..word.saturating_add(4)) {
                h.copy_from_slice(&level.to_ne_bytes());
            }
            if let Some(h) = out.get_mut(word.saturating_add(4)..word.saturating_add(8)) {
                h.copy_from_slice(&ctype.to_ne_bytes());
            }
            if let (Some(o), Some(d)) = (out.get_mut(header..total), data.get(..dlen)) {
                o.copy_from_slice(d);
            }
            return cmsg_align(total);
        }
        pos = pos.saturating_add(cmsg_align(len));
    }
    0
}

/// Ancillary data for one reply (its source address), kept for a reply sent
/// later than the batch it was received in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyControl {
    words: [u64; CTRL_WORDS],
    len: usize,
}

/// Sends one datagram `msg` to `peer` on `fd`, from the address `control`
/// names when given: a reply made after its batch was answered.
pub(crate) fn send_one(
    fd: RawFd,
    peer: SocketAddr,
    control: Option<&ReplyControl>,
    msg: &[u8],
) -> io::Result<()> {
    let addr = socket2::SockAddr::from(peer);
    let mut ctrl = control.map_or([0u64; CTRL_WORDS], |c| c.words);
    let mut iov = libc::iovec {
        iov_base: msg.as_ptr() as *mut libc::c_void,
        iov_len: msg.len(),
    };
    // SAFETY: msghdr is plain data (integers and nullable pointers): all-zero is valid.
    let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
    hdr.msg_name = addr.as_ptr() as *mut libc::c_void;
    hdr.msg_namelen = addr.len();
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if let Some(c) = control {
        hdr.msg_control = ctrl.as_mut_ptr().cast();
        hdr.msg_controllen = c.len;
    }
    loop {
        // SAFETY: every pointer in `hdr` borrows a local (`addr`, `iov` over
        // `msg`, `ctrl`) that lives across the call; the kernel only reads them.
        let r = unsafe { libc::sendmsg(fd, &hdr, 0) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Headers for sending a batch of responses with one sendmmsg call.
pub(crate) struct SendBatch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    /// Outgoing ancillary data per reply (source address), when pktinfo is on.
    ctrl: Vec<u64>,
    /// For each header of the last send, the index of its response.
    slots: Vec<usize>,
    /// The responses of the last send the kernel refused as too big.
    too_big: Vec<usize>,
}

// SAFETY: the raw pointers in a batch's headers point only into heap
// buffers the batch itself owns (or, for a send, into buffers borrowed for
// the one call that sets them), never shared with another thread. Moving
// the batch moves the owner of those buffers, which do not move: a worker
// run as a task may be resumed on another of the runtime's threads.
unsafe impl Send for RecvBatch {}
// SAFETY: as for RecvBatch.
unsafe impl Send for SendBatch {}

/// Registers `socket` with the current runtime's reactor, to learn when it
/// is readable.
pub(crate) fn register_readable(
    socket: std::sync::Arc<socket2::Socket>,
) -> io::Result<tokio::io::unix::AsyncFd<std::sync::Arc<socket2::Socket>>> {
    // SAFETY: the AsyncFd holds a reference to the socket, so its fd stays
    // open (and is not reused) for as long as it is registered.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(socket, tokio::io::Interest::READABLE)
            .map_err(|e| e.into_parts().1)
    }
}

/// What became of a batch of responses.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Sent {
    pub(crate) sent: usize,
    pub(crate) failed: usize,
    /// Refused with EMSGSIZE, larger than the link allows unfragmented:
    /// their indices are in `SendBatch::too_big`, to go again truncated.
    pub(crate) too_big: usize,
}

impl SendBatch {
    pub(crate) fn new(batch: usize) -> SendBatch {
        let batch = batch.max(1);
        SendBatch {
            ctrl: vec![0; batch.saturating_mul(CTRL_WORDS)],
            hdrs: (0..batch).map(|_| zeroed_mmsghdr()).collect(),
            iovs: (0..batch)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            slots: Vec::with_capacity(batch),
            too_big: Vec::with_capacity(batch),
        }
    }

    /// The indices of the responses the last send refused with EMSGSIZE.
    pub(crate) fn too_big(&self) -> &[usize] {
        &self.too_big
    }

    /// Sends `outs[i]` to the sender of message `i` of `recv`, for each `i` in `which`.
    pub(crate) fn send(
        &mut self,
        fd: RawFd,
        recv: &RecvBatch,
        outs: &[Vec<u8>],
        which: &[usize],
    ) -> Sent {
        let mut count = 0usize;
        self.slots.clear();
        self.too_big.clear();
        for (((hdr, iov), ctrl), &i) in self
            .hdrs
            .iter_mut()
            .zip(self.iovs.iter_mut())
            .zip(self.ctrl.chunks_exact_mut(CTRL_WORDS))
            .zip(which)
        {
            let (Some(out), Some(addr), Some(rhdr)) =
                (outs.get(i), recv.addrs.get(i), recv.hdrs.get(i))
            else {
                continue;
            };
            // sendmsg only reads through these pointers; the casts to *mut are
            // what the C struct layout demands.
            iov.iov_base = out.as_ptr() as *mut libc::c_void;
            iov.iov_len = out.len();
            hdr.msg_hdr.msg_name =
                (addr as *const libc::sockaddr_storage as *mut libc::sockaddr_storage).cast();
            hdr.msg_hdr.msg_namelen = rhdr.msg_hdr.msg_namelen;
            hdr.msg_hdr.msg_iov = iov;
            hdr.msg_hdr.msg_iovlen = 1;
            hdr.msg_hdr.msg_control = std::ptr::null_mut();
            hdr.msg_hdr.msg_controllen = 0;
            if recv.pktinfo {
                let mut out_bytes = [0u8; CTRL_WORDS * 8];
                let len = recv
                    .control(i)
                    .map_or(0, |c| reply_pktinfo(&c, &mut out_bytes));
                if len > 0 {
                    for (w, chunk) in ctrl.iter_mut().zip(out_bytes.chunks_exact(8)) {
                        *w = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
                    }
                    hdr.msg_hdr.msg_control = ctrl.as_mut_ptr().cast();
                    hdr.msg_hdr.msg_controllen = len;
                }
            }
            hdr.msg_hdr.msg_flags = 0;
            hdr.msg_len = 0;
            self.slots.push(i);
            count = count.saturating_add(1);
        }
        let mut result = Sent::default();
        let mut start = 0usize;
        while start < count {
            let Some(rest) = self.hdrs.get_mut(start..count) else {
                break;
            };
            let vlen = libc::c_uint::try_from(rest.len()).unwrap_or(1);
            // SAFETY: headers [start, count) were filled above from borrows of
            // `recv` and `outs` that outlive this call; the kernel only reads them.
            let r = unsafe { libc::sendmmsg(fd, rest.as_mut_ptr(), vlen, 0) };
            if r > 0 {
                let n = usize::try_from(r).unwrap_or(1);
                result.sent = result.sent.saturating_add(n);
                start = start.saturating_add(n);
                continue;
            }
            let e = io::Error::last_os_error();
            if r < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // The first message of the rest failed (unreachable peer, full
            // buffer...): skip it so one bad peer cannot stall the batch.
            if e.raw_os_error() == Some(libc::EMSGSIZE) {
                if let Some(&i) = self.slots.get(start) {
                    self.too_big.push(i);
                }
                result.too_big = result.too_big.saturating_add(1);
            } else {
                result.failed = result.failed.saturating_add(1);
            }
            start = start.saturating_add(1);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    fn cmsg(level: i32, ctype: i32, data: &[u8]) -> [u8; CTRL_WORDS * 8] {
        let mut b = [0u8; CTRL_WORDS * 8];
        let header = cmsg_align(mem::size_of::<libc::cmsghdr>());
        let w = mem::size_of::<usize>();
        b[..w].copy_from_slice(&(header + data.len()).to_ne_bytes());
        b[w..w + 4].copy_from_slice(&level.to_ne_bytes());
        b[w + 4..w + 8].copy_from_slice(&ctype.to_ne_bytes());
        b[header..header + data.len()].copy_from_slice(data);
        b
    }

    #[test]
    fn ipv4_reply_is_sent_from_the_query_destination() {
        // in_pktinfo: ifindex 3, spec_dst 10.0.0.9, addr (destination) 192.0.2.1
        let got = cmsg(
            libc::IPPROTO_IP,
            libc::IP_PKTINFO,
            &[3, 0, 0, 0, 10, 0, 0, 9, 192, 0, 2, 1],
        );
        let mut out = [0u8; CTRL_WORDS * 8];
        let len = reply_pktinfo(&got, &mut out);
        let header = cmsg_align(mem::size_of::<libc::cmsghdr>());
        assert_eq!(len, cmsg_align(header + 12));
        assert_eq!(
            &out[header..header + 12],
            &[0, 0, 0, 0, 192, 0, 2, 1, 0, 0, 0, 0]
        );
    }

    #[test]
    fn ipv6_reply_keeps_address_and_interface() {
        let mut d = [0u8; 20];
        d[0] = 0x20;
        d[15] = 1;
        d[16] = 2;
        let got = cmsg(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &d);
        let mut out = [0u8; CTRL_WORDS * 8];
        let header = cmsg_align(mem::size_of::<libc::cmsghdr>());
        assert_eq!(reply_pktinfo(&got, &mut out), cmsg_align(header + 20));
        assert_eq!(&out[header..header + 20], &d);
    }

    #[test]
    fn garbage_control_data_gives_no_reply_control() {
        let mut out = [0u8; CTRL_WORDS * 8];
        assert_eq!(reply_pktinfo(&[0xff; CTRL_WORDS * 8], &mut out), 0);
        assert_eq!(reply_pktinfo(&[0; CTRL_WORDS * 8], &mut out), 0);
    }

    #[test]
    fn empty_storage_is_no_address() {
        assert_eq!(sockaddr_to_std(&zeroed_storage(), storage_len()), None);
    }

    #[test]
    fn each_batch_sets_again_the_headers_the_last_one_filled() {
        use std::net::UdpSocket;
        use std::os::fd::AsRawFd;
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        // A lost datagram fails the test instead of hanging it.
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        enable_pktinfo(server.as_raw_fd(), false).unwrap();
        let to = server.local_addr().unwrap();
        let clients: Vec<UdpSocket> = (0..4)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut batch = RecvBatch::new(4, 512, true);
        let pristine = |b: &RecvBatch, i: usize| {
            let h = &b.hdrs[i].msg_hdr;
            h.msg_namelen == storage_len()
                && h.msg_controllen == CTRL_WORDS * 8
                && h.msg_flags == 0
                && b.hdrs[i].msg_len == 0
        };
        // Batches of 3, 1 and 4 datagrams of different sizes from different
        // clients: each is read whole, with its sender and its destination.
        for (round, count) in [3usize, 1, 4].into_iter().enumerate() {
            for (i, c) in clients.iter().take(count).enumerate() {
                c.send_to(&vec![u8::try_from(round * 10 + i).unwrap(); 20 + i * 7], to)
                    .unwrap();
            }
            let mut got = 0;
            while got < count {
                // Headers the kernel has not filled since they were last set
                // are as `new` left them.
                let n = batch.recv_waiting(server.as_raw_fd()).unwrap();
                assert_eq!(batch.dirty, n);
                for i in 0..n {
                    let payload = batch.payload(i).unwrap();
                    let sender = clients
                        .iter()
                        .position(|c| Some(c.local_addr().unwrap()) == batch.peer(i))
                        .unwrap();
                    assert_eq!(
                        payload,
                        &vec![u8::try_from(round * 10 + sender).unwrap(); 20 + sender * 7][..]
                    );
                    assert!(batch.reply_control(i).is_some());
                }
                for i in n..4 {
                    assert!(pristine(&batch, i), "header {i} after {n} datagrams");
                }
                got += n;
            }
        }
    }

    #[test]
    fn recv_batch_slots_never_shrink_below_a_minimal_query() {
        let b = RecvBatch::new(0, 0, false);
        assert_eq!(b.capacity(), 1);
        assert_eq!(b.slot, 512);
    }
}

/// What the AF_XDP path needs to know of an interface, asked of the kernel in
/// the calling thread's network namespace (sysfs shows the namespace that
/// mounted it, which need not be ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InterfaceFacts {
    pub index: u32,
    pub mtu: usize,
    /// Receive queues in use (ethtool's channels), at least 1.
    pub rx_queues: u32,
}

/// `struct ethtool_channels` (linux/ethtool.h), which libc lacks.
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

const ETHTOOL_GCHANNELS: u32 = 0x3c;

fn ifreq_for(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: ifreq is plain data (a name array and a union of integers,
    // sockaddrs and a nullable pointer): all-zero is valid.
    let mut req: libc::ifreq = unsafe { mem::zeroed() };
    for (slot, b) in req.ifr_name.iter_mut().zip(bytes) {
        *slot = libc::c_char::from_ne_bytes([*b]);
    }
    Ok(req)
}

pub(crate) fn interface_facts(name: &str) -> io::Result<InterfaceFacts> {
    // SAFETY: a plain socket(2), owned at once below; ioctls need one.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);

    let mut req = ifreq_for(name)?;
    // SAFETY: SIOCGIFINDEX reads the name from and writes the index into
    // the live ifreq.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFINDEX, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFINDEX filled the union's ifindex member.
    let index = unsafe { req.ifr_ifru.ifru_ifindex };

    let mut req = ifreq_for(name)?;
    // SAFETY: as above, for the MTU.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFMTU, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFMTU filled the union's mtu member.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };

    let mut channels = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..EthtoolChannels::default()
    };
    let mut req = ifreq_for(name)?;
    req.ifr_ifru.ifru_data = (&mut channels as *mut EthtoolChannels).cast();
    // SAFETY: SIOCETHTOOL with ETHTOOL_GCHANNELS writes one ethtool_channels
    // through ifru_data, which points at a live one.
    let rx_queues = if unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) } < 0 {
        // A driver without channels has one queue.
        1
    } else {
        channels
            .rx_count
            .saturating_add(channels.combined_count)
            .max(1)
    };
    Ok(InterfaceFacts {
        index: u32::try_from(index).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?,
        mtu: usize::try_from(mtu).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?,
        rx_queues,
    })
}
