//! The kernel's floor for a UDP DNS server: receive datagrams in recvmmsg
//! batches, set the QR bit (RFC 1035 §4.1.1) and send each one straight back
//! with sendmmsg. No DNS parsing, no lookup: the CPU it spends per query is
//! what the socket layer alone costs on this machine.
//!
//! Usage: null-responder 127.0.0.1:PORT

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

const BATCH: usize = 64;
const BUF: usize = 4096;

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:5399".into());
    let sock = UdpSocket::bind(&addr).expect("bind");
    let fd = sock.as_raw_fd();
    let mut bufs = vec![[0u8; BUF]; BATCH];
    // SAFETY: zeroed sockaddr_storage / iovec / mmsghdr are valid initial values.
    let mut addrs: Vec<libc::sockaddr_storage> = vec![unsafe { std::mem::zeroed() }; BATCH];
    let mut iovs: Vec<libc::iovec> = vec![unsafe { std::mem::zeroed() }; BATCH];
    let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
    loop {
        for i in 0..BATCH {
            iovs[i].iov_base = bufs[i].as_mut_ptr().cast();
            iovs[i].iov_len = BUF;
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            msgs[i].msg_len = 0;
        }
        // Block for the first datagram, then take whatever else is queued.
        // SAFETY: msgs points at BATCH initialised headers whose buffers live
        // for the whole call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            continue;
        }
        let n = n as usize;
        for i in 0..n {
            let len = msgs[i].msg_len as usize;
            if len > 2 {
                bufs[i][2] |= 0x80;
            }
            iovs[i].iov_len = len;
        }
        let mut sent = 0;
        while sent < n {
            // SAFETY: as above; the first n headers were filled by recvmmsg.
            let r =
                unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr().add(sent), (n - sent) as u32, 0) };
            if r <= 0 {
                break;
            }
            sent += r as usize;
        }
    }
}
