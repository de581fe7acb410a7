#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! DNS server cookies (RFC 7873, RFC 9018) minted by bulwark validate at
//! knotd and the other way round, when both share one secret: the point of
//! RFC 9018 is that the servers of an anycast set, whatever their software,
//! accept each other's cookies.
//!
//! The queries are built and read with hickory-proto, and the COOKIE option
//! (RFC 7873 §4, option code 10) is written as raw octets so that the test
//! relies on neither server's encoder.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
use hickory_proto::rr::{Name, RecordType};

use crate::support;

/// RFC 9018 Appendix A's example secret, configured at both servers.
const SECRET_HEX: &str = "e5e973e5a6b2a43f48e7dc849e37bfcf";

/// BADCOOKIE (RFC 7873 §8), an extended RCODE.
const BADCOOKIE: u16 = 23;

/// Any fixed client cookie will do (RFC 7873 §4: 8 octets).
const CLIENT_COOKIE: [u8; 8] = [0x24, 0x64, 0xc4, 0xab, 0xcf, 0x10, 0xc9, 0x57];

const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
const QUERY_ATTEMPTS: u32 = 3;

const ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 1 3600 900 604800 300
    IN NS  ns1
ns1 IN A   192.0.2.1
www IN A   192.0.2.80
";

/// A TXT answer of about 800 octets: far above the 100-octet threshold that
/// makes bulwark's cookie check observable.
fn big_txt() -> String {
    let chunk = "y".repeat(250);
    format!("big IN TXT \"{chunk}\" \"{chunk}\" \"{chunk}\"\n")
}

fn write_zone(dir: &Path) -> std::path::PathBuf {
    let zone = dir.join("example.test.zone");
    std::fs::write(&zone, format!("{ZONE}{}", big_txt())).unwrap();
    zone
}

fn start_bulwark(zone: &Path, dir: &Path, cookies: &str) -> support::Server {
    let conf = dir.join("bulwark.toml");
    std::fs::write(
        &conf,
        format!("[cookies]\nsecret = \"{SECRET_HEX}\"\n{cookies}"),
    )
    .unwrap();
    support::spawn_bulwark(
        &[("example.test.", zone)],
        &["--config", conf.to_str().unwrap()],
    )
}

/// knotd with mod-cookies as a global module, the same secret, and
/// `badcookie-slip: 1` so that every invalid server cookie gets BADCOOKIE
/// rather than only one in a few (knot.conf(5), mod-cookies).
/// `None` only when knotd is absent outside CI.
fn start_knotd(zone: &Path) -> Option<support::Server> {
    let knotd = support::require_tool("knotd")?;
    for _ in 0..3 {
        let mut server = knotd_at(&knotd, zone, support::free_port());
        match server.try_ready("example.test.", RecordType::SOA, |a| {
            a.rcode == 0 && a.aa && !a.answer.is_empty()
        }) {
            Ok(()) => return Some(server),
            // The port was taken between free_port and knotd's bind.
            Err(support::NotReady::Exited(log)) if log.to_ascii_lowercase().contains("in use") => {}
            Err(support::NotReady::Exited(why) | support::NotReady::Timeout(why)) => {
                panic!("{why}")
            }
        }
    }
    panic!("knotd could not bind a free port in 3 attempts");
}

fn knotd_at(knotd: &Path, zone: &Path, port: u16) -> support::Server {
    let dir = support::temp_dir("knotd-cookie-");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let d = dir.path().display();
    let mut conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    identity: \"\"\n    \
         version: \"\"\n    nsid: \"\"\n    udp-workers: 1\n    tcp-workers: 1\n    \
         background-workers: 1\n\ndatabase:\n    storage: {d}\n\n\
         log:\n  - target: stderr\n    any: info\n\n\
         mod-cookies:\n  - id: shared\n    secret: 0x{SECRET_HEX}\n    badcookie-slip: 1\n\n\
         template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    \
         zonefile-load: whole\n    journal-content: none\n    \
         global-module: mod-cookies/shared\n\nzone:\n"
    );
    writeln!(
        conf,
        "  - domain: example.test.\n    file: {}",
        zone.display()
    )
    .unwrap();
    let conf_path = dir.path().join("knot.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let args = vec!["-c".to_string(), conf_path.display().to_string()];
    let process = support::ChildGuard::spawn("knotd", knotd, &args, dir.path().join("knotd.log"));
    support::Server { process, addr, dir }
}

/// What a cookie query got back.
struct CookieAnswer {
    answer: support::Answer,
    /// The COOKIE option's octets (client cookie, then server cookie), if any.
    cookie: Option<Vec<u8>>,
}

impl CookieAnswer {
    /// The server cookie of the response, checked to echo our client cookie.
    fn server_cookie(&self, who: &str) -> Vec<u8> {
        let cookie = self
            .cookie
            .as_ref()
            .unwrap_or_else(|| panic!("{who} sent no COOKIE option: {}", self.answer));
        assert_eq!(
            cookie[..8],
            CLIENT_COOKIE,
            "{who} did not echo the client cookie (RFC 7873 §5.2.2)"
        );
        // RFC 9018 §4: a 16-octet server cookie, version 1.
        assert_eq!(cookie.len(), 24, "{who}'s cookie is not 8 + 16 octets");
        assert_eq!(cookie[8], 1, "{who}'s server cookie is not version 1");
        cookie[8..].to_vec()
    }
}

/// One UDP query for `qname`/`qtype` with EDNS and a COOKIE option of
/// `CLIENT_COOKIE` followed by `server_cookie` (possibly empty), sent from
/// 127.0.0.1: the client address is part of the hash (RFC 9018 §4.3).
fn cookie_query(
    server: &support::Server,
    qname: &str,
    qtype: RecordType,
    server_cookie: &[u8],
) -> CookieAnswer {
    let mut option = CLIENT_COOKIE.to_vec();
    option.extend_from_slice(server_cookie);
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    edns.options_mut()
        .insert(EdnsOption::Unknown(u16::from(EdnsCode::Cookie), option));
    let mut last = None;
    for attempt in 0..QUERY_ATTEMPTS {
        let id = 0x6b00 + u16::try_from(attempt).unwrap();
        let mut msg = Message::new();
        msg.set_id(id)
            .set_message_type(MessageType::Query)
            .set_op_code(OpCode::Query)
            .add_query(Query::query(Name::from_ascii(qname).unwrap(), qtype));
        msg.set_edns(edns.clone());
        let wire = msg.to_vec().unwrap();
        match support::exchange_udp(server.addr, &wire, id, QUERY_TIMEOUT) {
            Ok(raw) => {
                let answer = support::Answer::parse(&raw).expect("a DNS header");
                let parsed = Message::from_vec(&raw)
                    .unwrap_or_else(|e| panic!("hickory cannot parse the response: {e}"));
                let cookie = parsed.extensions().as_ref().and_then(|e| {
                    match e.options().get(EdnsCode::Cookie) {
                        Some(EdnsOption::Unknown(_, bytes)) => Some(bytes.clone()),
                        _ => None,
                    }
                });
                return CookieAnswer { answer, cookie };
            }
            Err(e) if support::is_timeout(&e) => last = Some(e),
            Err(e) => panic!("query to {} failed: {e}", server.process.name()),
        }
    }
    panic!(
        "{} did not answer {qname} in {QUERY_ATTEMPTS} attempts: {last:?}",
        server.process.name()
    );
}

/// The same server cookie with one octet of its hash flipped (RFC 9018 §4:
/// the hash is the last 8 of its 16 octets).
fn corrupted(server_cookie: &[u8]) -> Vec<u8> {
    let mut bad = server_cookie.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0x5a;
    bad
}

#[test]
fn knotd_accepts_a_server_cookie_minted_by_bulwark_and_rejects_a_corrupted_one() {
    let dir = support::temp_dir("bulwark-cookie-interop-");
    let zone = write_zone(dir.path());
    let Some(knotd) = start_knotd(&zone) else {
        return;
    };
    let bulwark = start_bulwark(&zone, dir.path(), "");

    // A client cookie alone: bulwark mints a server cookie.
    let first = cookie_query(&bulwark, "www.example.test.", RecordType::A, &[]);
    assert_eq!(first.answer.rcode, 0, "{}", first.answer);
    let minted = first.server_cookie("bulwark");

    // knotd validates it with the shared secret: a normal answer, not
    // BADCOOKIE, and a server cookie of its own (reused or fresh).
    let at_knot = cookie_query(&knotd, "www.example.test.", RecordType::A, &minted);
    assert_eq!(
        at_knot.answer.rcode, 0,
        "knotd rejected bulwark's cookie: {}",
        at_knot.answer
    );
    assert_eq!(
        at_knot.answer.rdata_of("A"),
        ["192.0.2.80"],
        "{}",
        at_knot.answer
    );
    at_knot.server_cookie("knotd");

    // Control: with one hash octet flipped, knotd answers BADCOOKIE, so the
    // acceptance above is knotd's check passing, not the check being absent.
    let bad = cookie_query(
        &knotd,
        "www.example.test.",
        RecordType::A,
        &corrupted(&minted),
    );
    assert_eq!(
        bad.answer.rcode, BADCOOKIE,
        "knotd accepted a corrupted cookie: {}",
        bad.answer
    );
}

#[test]
fn bulwark_accepts_a_server_cookie_minted_by_knotd_and_rejects_a_corrupted_one() {
    let dir = support::temp_dir("bulwark-cookie-interop-");
    let zone = write_zone(dir.path());
    let Some(knotd) = start_knotd(&zone) else {
        return;
    };
    // With a cookie required above 100 octets, the big TXT answer goes only
    // to a client whose server cookie bulwark finds valid; any other client
    // cookie gets BADCOOKIE (RFC 7873 §5.2.3). That makes acceptance visible.
    let bulwark = start_bulwark(&zone, dir.path(), "require_for_udp_above = 100\n");

    // A client cookie alone: knotd mints a server cookie. With
    // `badcookie-slip: 1` knotd treats a missing server cookie like an
    // invalid one and answers BADCOOKIE (which RFC 7873 §5.2.3 allows);
    // either way the response carries the cookie to retry with.
    let first = cookie_query(&knotd, "www.example.test.", RecordType::A, &[]);
    assert!(
        [0, BADCOOKIE].contains(&first.answer.rcode),
        "{}",
        first.answer
    );
    let minted = first.server_cookie("knotd");

    // Sanity check of the policy: without a server cookie, BADCOOKIE.
    let none = cookie_query(&bulwark, "big.example.test.", RecordType::TXT, &[]);
    assert_eq!(none.answer.rcode, BADCOOKIE, "{}", none.answer);

    // bulwark validates knotd's cookie: the full large answer.
    let at_bulwark = cookie_query(&bulwark, "big.example.test.", RecordType::TXT, &minted);
    assert_eq!(
        at_bulwark.answer.rcode, 0,
        "bulwark rejected knotd's cookie: {}",
        at_bulwark.answer
    );
    assert!(!at_bulwark.answer.tc, "{}", at_bulwark.answer);
    assert_eq!(
        at_bulwark.answer.rdata_of("TXT").len(),
        1,
        "{}",
        at_bulwark.answer
    );
    at_bulwark.server_cookie("bulwark");

    // Control: one hash octet flipped gets BADCOOKIE from bulwark.
    let bad = cookie_query(
        &bulwark,
        "big.example.test.",
        RecordType::TXT,
        &corrupted(&minted),
    );
    assert_eq!(
        bad.answer.rcode, BADCOOKIE,
        "bulwark accepted a corrupted cookie: {}",
        bad.answer
    );
    // bulwark answers BADCOOKIE with a fresh cookie to retry with.
    bad.server_cookie("bulwark");
}
