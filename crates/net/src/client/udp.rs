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
    // Room for any datagram, though the query offered less: servers that
    // send more than the payload size asked for exist, and a datagram cut
    // short by the kernel would read as malformed (Unbound reads them
    // whole too). The buffer is not zeroed: the kernel writes into its
    // spare capacity, so 64 KiB cost no more than the datagram.
    let mut buf: Vec<u8> = Vec::with_capacity(MAX_DATAGRAM);
    loop {
        buf.clear();
        let (n, from) = tokio::time::timeout_at(deadline, socket.recv_buf_from(&mut buf))
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

/// The largest UDP payload there is (over IPv6; IPv4's is 28 octets less).
const MAX_DATAGRAM: usize = 65_527;
