//! A client's stalled TCP connections never lock that client out (RFC 7766
//! §6.2.2 caps connections per client; a plain count would let twenty
//! stalled connections from one NAT address refuse everyone behind it).
//!
//! The server's TCP timeouts are set far beyond the test's own client
//! timeout, so an answer the test gets cannot have waited for a stalled
//! connection to time out: it came at once, from eviction.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bulwark_testkit::wire;

use crate::support;

/// The server's default `tcp_max_connections_per_client`.
const PER_CLIENT: usize = 20;
/// A client's wait for an answer; far below the server's timeouts below.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

fn start(dir: &std::path::Path) -> support::Server {
    let conf = dir.join("bulwark.toml");
    let zone = support::data_dir().join("other.zone");
    std::fs::write(
        &conf,
        format!(
            "[server]\ntcp_idle_timeout = 600\ntcp_message_timeout = 600\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [[zone]]\norigin = \"other.test.\"\nfile = \"{}\"\n",
            dir.join("control.sock").display(),
            zone.display()
        ),
    )
    .unwrap();
    support::spawn_bulwark(&[], &["--config", conf.to_str().unwrap()])
}

/// A TCP connection to `server` from `source` (any 127/8 address is local).
fn connect_from(source: [u8; 4], server: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect(&server.into()).unwrap();
    let s: TcpStream = socket.into();
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

/// `www.other.test. A` with `id`, framed for TCP.
fn framed_query(id: u16) -> Vec<u8> {
    wire::framed(&wire::query(id, 0, "www.other.test.", 1))
}

/// Asks on a fresh connection from `source`; the answer's rcode and id must
/// come back before the client's timeout.
fn ask_from(source: [u8; 4], server: SocketAddr, id: u16) -> Result<(), String> {
    let mut s = connect_from(source, server);
    s.write_all(&framed_query(id))
        .map_err(|e| format!("write: {e}"))?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(|e| match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => format!("query {id}: no answer"),
        _ => format!("query {id}: connection closed: {e}"),
    })?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut msg)
        .map_err(|e| format!("query {id}: {e}"))?;
    if msg[..2] != id.to_be_bytes() || msg[3] & 0x0f != 0 {
        return Err(format!("query {id}: unexpected answer {msg:02x?}"));
    }
    Ok(())
}

/// Twenty connections that each sent one octet and stalled, then five
/// queries one after the other and eight clients at once from the same
/// address: every one is answered.
fn stalled_connections_do_not_lock_out(source: [u8; 4], server: SocketAddr) -> Vec<TcpStream> {
    let stalled: Vec<TcpStream> = (0..PER_CLIENT)
        .map(|_| {
            let mut s = connect_from(source, server);
            s.write_all(&[0]).unwrap();
            s
        })
        .collect();
    for id in 1..=5 {
        ask_from(source, server, id).unwrap();
    }
    let parallel: Vec<_> = (0..8u16)
        .map(|i| std::thread::spawn(move || ask_from(source, server, 100 + i)))
        .collect();
    for t in parallel {
        t.join().unwrap().unwrap();
    }
    stalled
}

#[test]
fn stalled_connections_at_the_per_client_cap_never_lock_their_client_out() {
    let dir = support::temp_dir("bulwark-tcp-cap-");
    let server = start(dir.path());
    let first = stalled_connections_do_not_lock_out([127, 0, 0, 1], server.addr);
    let second = stalled_connections_do_not_lock_out([127, 0, 0, 2], server.addr);

    // Every fresh connection found room by closing one of its own client's
    // stalled ones, or a place a finished fresh one had given back (how many
    // of each depends on when the server saw those closes). None was turned
    // away, and no timeout closed anything. An evicted connection is counted
    // as its task ends, just after the newer one was let in: wait for the
    // count, bounded.
    let sock = dir.path().join("control.sock");
    let mut evicted = 0;
    for _ in 0..1000 {
        evicted = closes_of(&sock, "evicted");
        if evicted >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!((2..=26).contains(&evicted), "{evicted} evicted");
    assert_eq!(closes_of(&sock, "rejected_for_client"), 0);
    assert_eq!(closes_of(&sock, "message_timeout"), 0);
    assert_eq!(closes_of(&sock, "idle"), 0);
    drop((first, second));
}

/// One close reason's count from `bulwark ctl status`.
fn closes_of(sock: &std::path::Path, reason: &str) -> u64 {
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--socket", sock.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("tcp closed"))
        .unwrap_or_else(|| panic!("no `tcp closed` line in:\n{text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[0] == reason)
        .and_then(|w| w[1].parse().ok())
        .unwrap_or_else(|| panic!("no {reason} in {line}"))
}
