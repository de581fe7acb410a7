//! Ports for peer daemons that a test starts, and may restart, on a port it
//! chose.
//!
//! A port taken from the kernel with `bind(:0)` lies in the ephemeral range
//! (`net.ipv4.ip_local_port_range`). Once the probe closes, any outgoing
//! connection on the machine may be given that port as its local end, and
//! with hundreds of tests connecting in parallel that happens: a knotd
//! restarted on its port failed with "address already in use" because some
//! other test's connection held it. Below the ephemeral range the kernel
//! hands out no port by itself, so only another test's explicit pick can
//! take it, and the pick is random across some twenty thousand ports.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{TcpListener, UdpSocket};

/// The lowest port picked: above the ports well-known services and other
/// daemons on a developer's machine tend to use.
const LOWEST: u16 = 10_000;

/// A port free on 127.0.0.1 for both TCP and UDP, outside the ephemeral
/// range, so a daemon can be stopped and started on it again.
///
/// Falls back to a kernel-chosen port when the ephemeral range leaves no
/// room below it.
pub fn free_port() -> u16 {
    let (low, _) = ephemeral_range();
    if low > LOWEST + 1_000 {
        let span = u64::from(low - LOWEST);
        for _ in 0..1_000 {
            let offset = u16::try_from(random() % span).unwrap_or(0);
            let port = LOWEST + offset;
            if free_for_both(port) {
                return port;
            }
        }
    }
    for _ in 0..100 {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("bind tcp port 0");
        let port = tcp.local_addr().expect("local addr").port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both UDP and TCP");
}

fn free_for_both(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok() && UdpSocket::bind(("127.0.0.1", port)).is_ok()
}

/// The kernel's ephemeral port range; Linux's default when unreadable.
fn ephemeral_range() -> (u16, u16) {
    let text =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut bounds = text
        .split_whitespace()
        .filter_map(|s| s.parse::<u16>().ok());
    match (bounds.next(), bounds.next()) {
        (Some(low), Some(high)) if low <= high => (low, high),
        _ => (32_768, 60_999),
    }
}

/// A number that differs between calls and between processes: std's
/// per-instance random hash keys, with the time and PID mixed in.
fn random() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(now);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_below_the_ephemeral_range_and_bindable() {
        let (low, _) = ephemeral_range();
        let port = free_port();
        if low > LOWEST + 1_000 {
            assert!((LOWEST..low).contains(&port), "{port} not below {low}");
        }
        assert!(free_for_both(port), "{port} not free");
    }

    #[test]
    fn a_port_in_use_is_not_picked() {
        let held: Vec<TcpListener> = (0..50)
            .map(|_| TcpListener::bind(("127.0.0.1", free_port())).unwrap())
            .collect();
        let ports: Vec<u16> = held
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        let next = free_port();
        assert!(!ports.contains(&next), "{next} is held");
    }
}
