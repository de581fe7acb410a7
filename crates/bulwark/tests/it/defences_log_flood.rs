//! No input can flood the log: per-packet diagnostics are limited to a few
//! lines a second per kind, each naming the client, while the metrics count
//! every event; and the error answers to unauthenticated requests (a bad
//! TSIG's NOTAUTH) are rate-limited over UDP like any other answer.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bulwark_testkit::wire;

use crate::support;

/// Queries of each kind in the flood test.
const FLOOD: u32 = 100_000;
/// UDP queries in flight at once: enough to keep the server busy, few
/// enough that loopback never drops one.
const UDP_WINDOW: u32 = 32;
/// Refused AXFR queries pipelined on one TCP connection.
const AXFR_PER_CONNECTION: u32 = 1000;
/// The server's limit per kind and second (`DEFAULT_LINES_PER_SECOND`).
const LINES_PER_SECOND: u64 = 5;
/// How long a client waits for one answer before the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
const ORIGIN: &str = "other.test.";

fn start(dir: &Path, extra: &str) -> support::Server {
    let conf = dir.join("bulwark.toml");
    let zone = support::data_dir().join("other.zone");
    std::fs::write(
        &conf,
        format!(
            "[server]\nthreads = 2\n\n[control]\nsocket = \"{}\"\n\n{extra}\n\
             [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"{}\"\n",
            dir.join("control.sock").display(),
            zone.display()
        ),
    )
    .unwrap();
    support::spawn_bulwark(&[], &["--config", conf.to_str().unwrap()])
}

/// `www.other.test. SOA` with `id`, and a TSIG record under a key the server
/// does not know (RFC 8945 §5.2.2: BADKEY, answered NOTAUTH).
fn bad_tsig_query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    q.extend_from_slice(b"\x03www\x05other\x04test\x00\x00\x06\x00\x01");
    // TSIG: owner `nokey.`, type 250, class ANY, TTL 0.
    q.extend_from_slice(b"\x05nokey\x00\x00\xfa\x00\xff\x00\x00\x00\x00");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut rdata = b"\x0bhmac-sha256\x00".to_vec();
    rdata.extend_from_slice(&now.to_be_bytes()[2..]); // 48-bit time signed
    rdata.extend_from_slice(&300u16.to_be_bytes()); // fudge
    rdata.extend_from_slice(&32u16.to_be_bytes()); // MAC size
    rdata.extend_from_slice(&[0xab; 32]);
    rdata.extend_from_slice(&id.to_be_bytes()); // original id
    rdata.extend_from_slice(&[0, 0, 0, 0]); // error, other len
    q.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
    q.extend_from_slice(&rdata);
    q
}

/// `other.test. AXFR` with `id`, framed for TCP.
fn framed_axfr(id: u16) -> Vec<u8> {
    const AXFR: u16 = 252;
    wire::framed(&wire::query(id, 0, "other.test.", AXFR))
}

fn rcode(response: &[u8]) -> u8 {
    response[3] & 0x0f
}

const NOTAUTH: u8 = 9;

/// Sends `count` bad-TSIG queries over UDP with at most [`UDP_WINDOW`] in
/// flight, and returns how many answers came back NOTAUTH.
fn flood_bad_tsig(server: SocketAddr, count: u32) -> u32 {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let (mut sent, mut answered) = (0u32, 0u32);
    let mut buf = [0u8; 512];
    while answered < count {
        while sent < count && sent - answered < UDP_WINDOW {
            sock.send_to(&bad_tsig_query(sent as u16), server).unwrap();
            sent += 1;
        }
        let n = sock
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("answer {answered} of {count}: {e}"));
        assert_eq!(rcode(&buf[..n]), NOTAUTH, "{:02x?}", &buf[..n]);
        answered += 1;
    }
    answered
}

/// Asks for `count` AXFRs the zone refuses, pipelined on connections of
/// [`AXFR_PER_CONNECTION`]; every answer must be NOTAUTH.
fn flood_refused_axfr(server: SocketAddr, count: u32) {
    let mut left = count;
    while left > 0 {
        let n = left.min(AXFR_PER_CONNECTION);
        let mut s = TcpStream::connect(server).unwrap();
        s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        let wire: Vec<u8> = (0..n).flat_map(|i| framed_axfr(i as u16)).collect();
        let mut writer = s.try_clone().unwrap();
        let send = std::thread::spawn(move || writer.write_all(&wire).unwrap());
        for _ in 0..n {
            let msg = wire::read_framed(&mut s).unwrap();
            assert_eq!(rcode(&msg), NOTAUTH);
        }
        send.join().unwrap();
        left -= n;
    }
}

/// A sample of `ctl stats`: `name{labels} value`.
fn stat(sock: &Path, sample: &str) -> u64 {
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--socket", sock.to_str().unwrap(), "stats"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {sample} in:\n{text}"))
}

/// Log lines of one kind: those for single events, and the summaries.
fn lines_of(log: &str, kind: &str) -> (Vec<String>, Vec<String>) {
    let tag = format!("kind=\"{kind}\"");
    let tag_plain = format!("kind={kind}");
    let of_kind: Vec<String> = log
        .lines()
        .filter(|l| l.contains(&tag) || l.contains(&tag_plain))
        .map(str::to_string)
        .collect();
    of_kind
        .into_iter()
        .partition(|l| !l.contains("left out of the log"))
}

#[test]
fn a_flood_of_bad_tsig_and_refused_transfers_writes_a_bounded_log_and_is_counted() {
    let dir = support::temp_dir("bulwark-log-flood-");
    let server = start(dir.path(), "");
    let sock = dir.path().join("control.sock");
    let started = Instant::now();
    assert_eq!(flood_bad_tsig(server.addr, FLOOD), FLOOD);
    flood_refused_axfr(server.addr, FLOOD);
    let seconds = started.elapsed().as_secs();

    // Every event counted.
    let tsig = stat(&sock, "bulwark_events_total{kind=\"bad_tsig\"}");
    let axfr = stat(&sock, "bulwark_events_total{kind=\"transfer_refused\"}");
    assert_eq!((tsig, axfr), (u64::from(FLOOD), u64::from(FLOOD)));

    // A few lines a second per kind, each naming the client. Two workers
    // racing on the turn of a second may each let one more through.
    let log = server.process.log();
    let bound = (LINES_PER_SECOND + 2) * (seconds + 2);
    for kind in ["bad_tsig", "transfer_refused"] {
        let (single, _summaries) = lines_of(&log, kind);
        assert!(
            !single.is_empty() && single.len() as u64 <= bound,
            "{} `{kind}` lines in {seconds}s (bound {bound})",
            single.len()
        );
        assert!(
            single.iter().all(|l| l.contains("127.0.0.1")),
            "every line names the client: {single:?}"
        );
        let unlogged = stat(
            &sock,
            &format!("bulwark_events_unlogged_total{{kind=\"{kind}\"}}"),
        );
        assert_eq!(
            single.len() as u64 + unlogged,
            u64::from(FLOOD),
            "a line for each event the metrics say was logged"
        );
    }
}

#[test]
fn bad_tsig_answers_are_rate_limited_over_udp() {
    let dir = support::temp_dir("bulwark-tsig-rrl-");
    // Two answers a second per network, none slipped, loopback not exempt.
    let server = start(
        dir.path(),
        "[rrl]\nresponses_per_second = 2\nslip = 0\nexempt = []\n",
    );
    let control = dir.path().join("control.sock");
    let verdicts = |v: &str| {
        stat(
            &control,
            &format!("bulwark_rrl_responses_total{{verdict=\"{v}\"}}"),
        )
    };
    let judged = || verdicts("pass") + verdicts("drop") + verdicts("slip");
    // The start-up probe was judged too.
    let (before, passed_before) = (judged(), verdicts("pass"));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    for id in 0..200u16 {
        sock.send_to(&bad_tsig_query(id), server.addr).unwrap();
    }
    // A worker adds its batch's verdicts before it sends the batch's answers,
    // so once all 200 are judged every answer that will come is here.
    let mut now_judged = before;
    for _ in 0..1000 {
        now_judged = judged();
        if now_judged >= before + 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        now_judged - before,
        200,
        "every NOTAUTH answer was judged by RRL"
    );
    sock.set_nonblocking(true).unwrap();
    let mut answered = 0;
    let mut buf = [0u8; 512];
    while let Ok(n) = sock.recv(&mut buf) {
        assert_eq!(rcode(&buf[..n]), NOTAUTH);
        answered += 1;
    }
    assert_eq!(answered, verdicts("pass") - passed_before);
    assert!(
        answered < 50 && verdicts("drop") >= 150,
        "{answered} NOTAUTH answers of 200 got through the rate limit"
    );
}
