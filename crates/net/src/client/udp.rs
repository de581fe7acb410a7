//! One query over UDP from a fresh socket on an unpredictable port
//! (RFC 5452 §9.2, §10), and the wait for its response.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use bulwark_proto::message::Header;
use tokio::net::UdpSocket;

use super::error::{ClientError, Operation};
use super::matching::Expected;
use super::random::random_port;

/// Random ports tried before leaving the choice to the kernel: one in use
/// (by another socket of ours, or another program) is simply drawn again.
const PORT_ATTEMPTS: usize = 8;

/// The local address to send from: `via` when configured, else the
/// unspecified address of the server's family.
pub(crate) fn local_ip(server: SocketAddr, via: Option<IpAddr>) -> Result<IpAddr, ClientError> {
    match via {
        Some(ip) if ip.is_ipv4() != server.is_ipv4() => {
            Err(ClientError::AddressFamily { server, via: ip })
        }
        Some(ip) => Ok(ip),
        None if server.is_ipv4() => Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        None => Ok(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
    }
}

/// A UDP socket on `ip` and a port drawn at random; after
/// [`PORT_ATTEMPTS`] ports in use, on one the kernel picks.
async fn bind_random(ip: IpAddr) -> Result<UdpSocket, ClientError> {
    for _ in 0..PORT_ATTEMPTS {
        let addr = SocketAddr::new(ip, random_port()?);
        match UdpSocket::bind(addr).await {
            Ok(socket) => return Ok(socket),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            Err(cause) => return Err(ClientError::Bind { addr, cause }),
        }
    }
    let addr = SocketAddr::new(ip, 0);
    UdpSocket::bind(addr)
        .await
        .map_err(|cause| ClientError::Bind { addr, cause })
}

/// Sends `query` to `server` and returns the first datagram that is its
/// response, with that response's header. Datagrams from elsewhere, or with
/// another ID, QR clear or another question, are dropped and the wait goes
/// on: a forged or late datagram must not end it (RFC 5452 §9.1).
pub(crate) async fn exchange(
    server: SocketAddr,
    via: Option<IpAddr>,
    query: &[u8],
    expected: &Expected,
    timeout: Duration,
) -> Result<(Vec<u8>, Header), ClientError> {
    let socket = bind_random(local_ip(server, via)?).await?;
    // Connected, the kernel drops datagrams from any other address and port
    // before they reach us; the source is still checked below.
    socket.connect(server).await?;
    let start = tokio::time::Instant::now();
    let deadline = start.checked_add(timeout).unwrap_or(start);
    let timed_out = || ClientError::Timeout {
        operation: Operation::Receive,
        after: timeout,
    };
    tokio::time::timeout_at(deadline, socket.send(query))
        .await
        .map_err(|_| ClientError::Timeout {
            operation: Operation::Send,
            after: timeout,
        })??;
    // Room for the largest response a query can ask for over UDP: its EDNS
    // payload size (bulwark asks for 1232; at most 4096 is honoured, RFC
    // 6891 §6.2.5 advice), not a 64 KiB buffer zeroed for every query,
    // which cost a resolver's miss path more than its own work.
    let mut buf = vec![0u8; receive_buffer(query)];
    loop {
        let (n, from) = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf))
            .await
            .map_err(|_| timed_out())??;
        if from.ip() != server.ip() || from.port() != server.port() {
            continue;
        }
        let Some(msg) = buf.get(..n) else { continue };
        if let Some(header) = expected.response_header(msg) {
            return Ok((msg.to_vec(), header));
        }
        tracing::trace!(%server, octets = n, "a datagram that is not the response was dropped");
    }
}

/// What a response to `query` may need over UDP: 512 octets without EDNS
/// (RFC 1035 §4.2.1), else the payload size the query's OPT offers, within
/// 512 and [`MAX_UDP_RESPONSE`]. A larger datagram is cut short by the
/// kernel and read as a malformed response.
fn receive_buffer(query: &[u8]) -> usize {
    bulwark_proto::MessageView::parse(query)
        .ok()
        .and_then(|view| view.edns().map(|e| usize::from(e.udp_payload_size)))
        .map_or(512, |size| size.clamp(512, MAX_UDP_RESPONSE))
}

/// The largest UDP response read: RFC 6891 §6.2.5 advises no payload size
/// above 4096 octets.
const MAX_UDP_RESPONSE: usize = 4096;
