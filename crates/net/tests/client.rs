#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! The outbound client against test servers on loopback sockets: matching
//! the response and nothing else, TCP after TC, timeouts, random IDs and
//! ports, kept TCP connections, and transfer streams.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bulwark_net::client::{random_id, Operation};
use bulwark_net::{Client, ClientConfig, ClientError, Transport};
use bulwark_proto::MessageView;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::mpsc;

/// Long enough never to be reached when the server answers: a lost message
/// fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);
/// For the waits that are meant to run out.
const SHORT: Duration = Duration::from_millis(200);

const WWW: &[u8] = b"\x03www\x07example\x00";
const REAL: [u8; 4] = [192, 0, 2, 1];
const FORGED: [u8; 4] = [203, 0, 113, 66];

fn client() -> Client {
    Client::new(ClientConfig {
        idle_timeout: PATIENCE,
        max_idle_per_server: 4,
    })
}

/// A query for `www.example.` A IN.
fn query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(WWW);
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

/// The response to `query`: one A record holding `ip`, or, truncated, none.
fn response(query: &[u8], ip: [u8; 4], truncated: bool) -> Vec<u8> {
    let mut r = query.to_vec();
    r[2] |= 0x80;
    if truncated {
        r[2] |= 0x02;
        return r;
    }
    r[7] = 1;
    r.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4]);
    r.extend_from_slice(&ip);
    r
}

/// The address in the answer of `msg`.
fn answer(msg: &[u8]) -> Option<[u8; 4]> {
    let view = MessageView::parse(msg).expect("a well-formed response");
    let rr = view.answers().next()?;
    rr.rdata.try_into().ok()
}

async fn read_framed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).await.ok()?;
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut msg).await.ok()?;
    Some(msg)
}

async fn write_framed(stream: &mut TcpStream, msg: &[u8]) {
    let mut framed = u16::try_from(msg.len()).unwrap().to_be_bytes().to_vec();
    framed.extend_from_slice(msg);
    stream.write_all(&framed).await.unwrap();
}

#[tokio::test]
async fn forged_datagrams_arriving_first_are_ignored_and_the_answer_taken() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let forger = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        let (n, client) = server.recv_from(&mut buf).await.unwrap();
        let q = &buf[..n];
        let mut wrong_id = response(q, FORGED, false);
        wrong_id[1] ^= 0x01;
        let mut wrong_question = response(q, FORGED, false);
        wrong_question[13] = b'x';
        let mut qr_clear = response(q, FORGED, false);
        qr_clear[2] &= !0x80;
        let mut wrong_type = response(q, FORGED, false);
        wrong_type[12 + WWW.len() + 1] = 28;
        // Sent in order from one socket, so all arrive before the answer.
        for forged in [&wrong_id, &wrong_question, &qr_clear, &wrong_type] {
            server.send_to(forged, client).await.unwrap();
        }
        // Right in every way but the source port.
        forger
            .send_to(&response(q, FORGED, false), client)
            .await
            .unwrap();
        // The answer echoes the name in another case, as servers may.
        let mut real = response(q, REAL, false);
        real[13..16].copy_from_slice(b"WwW");
        server.send_to(&real, client).await.unwrap();
    });
    let q = query(random_id().unwrap());
    let r = client().exchange(addr, None, &q, PATIENCE).await.unwrap();
    assert_eq!(r.transport, Transport::Udp);
    assert_eq!(answer(&r.message), Some(REAL));
    assert_eq!(&r.message[..2], &q[..2]);
    serving.await.unwrap();
}

#[tokio::test]
async fn forged_datagrams_alone_leave_the_wait_to_its_timeout() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        let (n, client) = server.recv_from(&mut buf).await.unwrap();
        let mut wrong_id = response(&buf[..n], FORGED, false);
        wrong_id[0] ^= 0x80;
        server.send_to(&wrong_id, client).await.unwrap();
        server
    });
    let err = client()
        .exchange(addr, None, &query(random_id().unwrap()), SHORT)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    drop(serving.await.unwrap());
}

#[tokio::test]
async fn a_truncated_answer_is_asked_again_over_tcp() {
    // TCP and UDP on the same port, as a server listens.
    let (listener, udp) = loop {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        if let Ok(udp) = UdpSocket::bind(listener.local_addr().unwrap()).await {
            break (listener, udp);
        }
    };
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        let (n, client) = udp.recv_from(&mut buf).await.unwrap();
        let over_udp = buf[..n].to_vec();
        udp.send_to(&response(&over_udp, REAL, true), client)
            .await
            .unwrap();
        let (mut conn, _) = listener.accept().await.unwrap();
        let over_tcp = read_framed(&mut conn).await.unwrap();
        write_framed(&mut conn, &response(&over_tcp, REAL, false)).await;
        (over_udp, over_tcp)
    });
    let q = query(random_id().unwrap());
    let r = client().exchange(addr, None, &q, PATIENCE).await.unwrap();
    assert_eq!(r.transport, Transport::Tcp);
    assert_eq!(answer(&r.message), Some(REAL));
    let (over_udp, over_tcp) = serving.await.unwrap();
    assert_eq!(over_udp, q);
    assert_eq!(over_tcp, q, "the same query, ID included, goes over TCP");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let err = client()
        .exchange(
            silent.local_addr().unwrap(),
            None,
            &query(random_id().unwrap()),
            SHORT,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                operation: Operation::Receive,
                after: SHORT
            }
        ),
        "{err}"
    );

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holding = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let _query = read_framed(&mut conn).await;
        // Holds the connection open without answering until the client
        // gives up and closes it.
        let _ = read_framed(&mut conn).await;
    });
    let err = client()
        .exchange_tcp(addr, None, &query(random_id().unwrap()), SHORT)
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    holding.await.unwrap();
}

/// How many neighbours differ by exactly one: what a counter produces.
fn steps_of_one(values: &[u16]) -> usize {
    values
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count()
}

#[test]
fn ids_are_neither_constant_nor_sequential() {
    let ids: Vec<u16> = (0..64).map(|_| random_id().unwrap()).collect();
    let distinct: HashSet<u16> = ids.iter().copied().collect();
    // 64 draws from 65 536 values repeat one about once in 30 runs: 48
    // distinct is far from luck, and impossible for a constant.
    assert!(distinct.len() >= 48, "{ids:?}");
    // A counter makes 63 steps of one (of any fixed stride, 63 equal steps);
    // random draws make one in a thousand runs.
    assert!(steps_of_one(&ids) <= 3, "{ids:?}");
    let strides: HashSet<u16> = ids.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    assert!(strides.len() >= 32, "{ids:?}");
}

#[tokio::test]
async fn source_ports_are_spread_over_the_unprivileged_range() {
    const EXCHANGES: usize = 32;
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut buf = [0u8; 512];
        for _ in 0..EXCHANGES {
            let (n, client) = server.recv_from(&mut buf).await.unwrap();
            seen.push((client.port(), u16::from_be_bytes([buf[0], buf[1]])));
            server
                .send_to(&response(&buf[..n], REAL, false), client)
                .await
                .unwrap();
        }
        seen
    });
    let client = client();
    for _ in 0..EXCHANGES {
        let r = client
            .exchange(addr, None, &query(random_id().unwrap()), PATIENCE)
            .await
            .unwrap();
        assert_eq!(answer(&r.message), Some(REAL));
    }
    let seen = serving.await.unwrap();
    let ports: Vec<u16> = seen.iter().map(|(p, _)| *p).collect();
    let ids: Vec<u16> = seen.iter().map(|(_, id)| *id).collect();
    assert!(ports.iter().all(|p| *p >= 1024), "{ports:?}");
    let distinct: HashSet<u16> = ports.iter().copied().collect();
    assert!(distinct.len() >= 24, "a fixed port, or few: {ports:?}");
    assert!(steps_of_one(&ports) <= 3, "sequential ports: {ports:?}");
    let distinct_ids: HashSet<u16> = ids.iter().copied().collect();
    assert!(distinct_ids.len() >= 24, "{ids:?}");
}

#[tokio::test]
async fn queries_leave_from_the_local_address_asked() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let via: IpAddr = "127.0.0.2".parse().unwrap();
    let serving = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        let (n, client) = server.recv_from(&mut buf).await.unwrap();
        server
            .send_to(&response(&buf[..n], REAL, false), client)
            .await
            .unwrap();
        client
    });
    let r = client()
        .exchange(addr, Some(via), &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap();
    assert_eq!(answer(&r.message), Some(REAL));
    assert_eq!(serving.await.unwrap().ip(), via);

    let v6: IpAddr = "::1".parse().unwrap();
    let err = client()
        .exchange(addr, Some(v6), &query(1), SHORT)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::AddressFamily { .. }), "{err}");
}

/// What the test TCP server does on one connection after answering
/// `answer` queries.
#[derive(Clone, Copy)]
enum Then {
    /// Closes the connection.
    Close,
    /// Reads one more query and closes without answering it.
    CloseOnNextQuery,
    /// Answers every query until the client closes.
    Serve,
}

/// A TCP server that counts its connections and handles the `n`th as
/// `plans[n]` says (the last plan for any later one). Each connection it
/// closes is reported on the channel, with the queries it read.
async fn tcp_server(
    plans: Vec<(usize, Then)>,
) -> (SocketAddr, Arc<AtomicUsize>, mpsc::UnboundedReceiver<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let (closed_tx, closed_rx) = mpsc::unbounded_channel();
    let counted = Arc::clone(&accepts);
    tokio::spawn(async move {
        loop {
            let (mut conn, _) = listener.accept().await.unwrap();
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let (answer, then) = plans[n.min(plans.len() - 1)];
            let closed = closed_tx.clone();
            tokio::spawn(async move {
                let mut read = 0;
                for _ in 0..answer {
                    // The client closed it: reported like a close of ours.
                    let Some(q) = read_framed(&mut conn).await else {
                        let _ = closed.send(read);
                        return;
                    };
                    read += 1;
                    write_framed(&mut conn, &response(&q, REAL, false)).await;
                }
                match then {
                    Then::Close => {}
                    Then::CloseOnNextQuery => {
                        if read_framed(&mut conn).await.is_some() {
                            read += 1;
                        }
                    }
                    Then::Serve => {
                        while let Some(q) = read_framed(&mut conn).await {
                            read += 1;
                            write_framed(&mut conn, &response(&q, REAL, false)).await;
                        }
                    }
                }
                drop(conn);
                let _ = closed.send(read);
            });
        }
    });
    (addr, accepts, closed_rx)
}

#[tokio::test]
async fn a_second_tcp_exchange_reuses_the_connection_and_a_closed_one_is_replaced() {
    let (addr, accepts, mut closed) =
        tcp_server(vec![(2, Then::Close), (usize::MAX, Then::Serve)]).await;
    let client = client();
    for i in 0..2 {
        let r = client
            .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
            .await
            .unwrap();
        assert_eq!(answer(&r), Some(REAL));
        assert_eq!(accepts.load(Ordering::SeqCst), 1, "exchange {i}");
        assert_eq!(client.idle_connections(), 1);
    }
    // The server has closed the kept connection since.
    assert_eq!(closed.recv().await, Some(2));
    let r = client
        .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap();
    assert_eq!(answer(&r), Some(REAL));
    assert_eq!(accepts.load(Ordering::SeqCst), 2);
    assert_eq!(client.idle_connections(), 1);
}

#[tokio::test]
async fn a_kept_connection_closed_under_the_query_is_replaced_once() {
    // The first connection answers one query, then takes the next and
    // closes without a word: the client asks again on a new connection.
    let (addr, accepts, mut closed) =
        tcp_server(vec![(1, Then::CloseOnNextQuery), (usize::MAX, Then::Serve)]).await;
    let client = client();
    let first = client
        .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap();
    assert_eq!(answer(&first), Some(REAL));
    let second = client
        .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap();
    assert_eq!(answer(&second), Some(REAL));
    assert_eq!(accepts.load(Ordering::SeqCst), 2);
    assert_eq!(
        closed.recv().await,
        Some(2),
        "the first connection read the second query"
    );

    // A new connection closed under the query is not retried: an error.
    let (addr, accepts, _closed) = tcp_server(vec![(0, Then::CloseOnNextQuery)]).await;
    let err = client
        .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err}");
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_its_idle_timeout() {
    let (addr, accepts, mut closed) = tcp_server(vec![(usize::MAX, Then::Serve)]).await;
    let client = Client::new(ClientConfig {
        idle_timeout: SHORT,
        max_idle_per_server: 4,
    });
    let r = client
        .exchange_tcp(addr, None, &query(random_id().unwrap()), PATIENCE)
        .await
        .unwrap();
    assert_eq!(answer(&r), Some(REAL));
    // The server sees the client close the kept connection once idle; the
    // test waits for that, not for a time.
    let read = tokio::time::timeout(PATIENCE, closed.recv())
        .await
        .expect("the idle connection is closed");
    assert_eq!(read, Some(1));
    assert_eq!(client.idle_connections(), 0);
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_transfer_stream_yields_its_messages_in_order() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let q = read_framed(&mut conn).await.unwrap();
        for i in 1..=3u8 {
            write_framed(&mut conn, &response(&q, [192, 0, 2, i], false)).await;
        }
        q
    });
    let q = query(random_id().unwrap());
    let mut stream = client().transfer(addr, None, &q, PATIENCE).await.unwrap();
    assert_eq!(stream.server(), addr);
    let mut msg = Vec::new();
    for i in 1..=3u8 {
        stream.next_message(&mut msg, PATIENCE).await.unwrap();
        assert_eq!(answer(&msg), Some([192, 0, 2, i]));
        assert_eq!(&msg[..2], &q[..2]);
    }
    assert_eq!(serving.await.unwrap(), q);
    let err = stream.next_message(&mut msg, PATIENCE).await.unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err}");
}

/// Some servers answer with more than the payload size the query offered;
/// the datagram is read whole, not cut at that size and dropped as
/// malformed (Deckard's world_cz_vutbr_www has such a server).
#[tokio::test]
async fn an_answer_larger_than_the_size_offered_is_read_whole() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        let (n, client) = server.recv_from(&mut buf).await.unwrap();
        let q = &buf[..n];
        // 200 addresses: 3,200 octets of answer to a query without EDNS,
        // which offers 512.
        let mut r = q.to_vec();
        r[2] |= 0x80;
        r[6..8].copy_from_slice(&200u16.to_be_bytes());
        for i in 0..200u8 {
            r.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4]);
            r.extend_from_slice(&[198, 51, 100, i]);
        }
        server.send_to(&r, client).await.unwrap();
        r.len()
    });
    let q = query(random_id().unwrap());
    let r = client()
        .exchange_udp(addr, None, &q, PATIENCE)
        .await
        .unwrap();
    let sent = serving.await.unwrap();
    assert!(sent > 3000);
    assert_eq!(r.len(), sent);
    assert_eq!(MessageView::parse(&r).unwrap().answers().count(), 200);
}
