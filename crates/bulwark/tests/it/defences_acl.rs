#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Listener and zone ACLs against the real binary, with clients on two loopback
//! networks (127.0.1.1 and 127.0.2.1), and where configuration errors point.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{Answer, QuerySpec};

const OUTSIDER: [u8; 4] = [127, 0, 1, 1];
const INSIDER: [u8; 4] = [127, 0, 2, 1];
/// Long enough for a loopback answer; a dropped query waits this long once.
const TIMEOUT: Duration = Duration::from_millis(1500);

fn zone(origin: &str) -> String {
    format!(
        "$ORIGIN {origin}\n$TTL 300\n@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  IN NS ns1\nns1 IN A 192.0.2.1\nwww IN A 192.0.2.80\n"
    )
}

/// Serves `open.test.` and `closed.test.` with `config` laid before the zones.
fn start(dir: &Path, config: &str, closed_acl: Option<&str>) -> support::Server {
    for origin in ["open.test.", "closed.test."] {
        std::fs::write(dir.join(format!("{origin}zone")), zone(origin)).unwrap();
    }
    let acl = closed_acl.map_or(String::new(), |a| format!("acl = \"{a}\"\n"));
    let text = format!(
        "{config}\n[[zone]]\norigin = \"open.test.\"\nfile = \"open.test.zone\"\n\n[[zone]]\norigin = \"closed.test.\"\nfile = \"closed.test.zone\"\n{acl}"
    );
    let conf = dir.join("bulwark.toml");
    std::fs::write(&conf, text).unwrap();
    support::spawn_bulwark(&[], &["--config", conf.to_str().unwrap()])
}

/// A UDP query from `source`, sent up to three times like a stub resolver
/// would (a loaded CI machine can hold a worker off the CPU past one timeout);
/// `None` when nothing came back. Only for queries that expect an answer.
fn ask(source: [u8; 4], server: SocketAddr, qname: &str) -> Option<Answer> {
    (0..3).find_map(|_| ask_once(source, server, qname))
}

/// One UDP query from `source`; `None` when nothing came back within TIMEOUT.
fn ask_once(source: [u8; 4], server: SocketAddr, qname: &str) -> Option<Answer> {
    let sock = UdpSocket::bind(SocketAddr::from((source, 0))).unwrap();
    sock.connect(server).unwrap();
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let id = 0x5150;
    sock.send(&QuerySpec::new(qname, RecordType::A).to_wire(id))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id => {
                return Answer::parse(&buf[..n])
            }
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

fn answered(a: &Option<Answer>) -> bool {
    a.as_ref()
        .is_some_and(|a| a.rcode_name() == "NOERROR" && a.counts[1] == 1)
}

fn refused(a: &Option<Answer>) -> bool {
    a.as_ref()
        .is_some_and(|a| a.rcode_name() == "REFUSED" && a.counts[1] == 0)
}

#[test]
fn listener_acl_refuses_a_denied_network_and_serves_the_others() {
    let dir = support::temp_dir("bulwark-acl-refuse-");
    let config = "[server]\nacl = \"edge\"\n[acl.edge]\ndeny = [\"127.0.1.0/24\"]\n";
    let server = start(dir.path(), config, None);
    let out = ask(OUTSIDER, server.addr, "www.open.test.");
    assert!(refused(&out), "{out:?}");
    // The refusal echoes the question, so the client can match it.
    assert_eq!(out.unwrap().counts[0], 1);
    let inside = ask(INSIDER, server.addr, "www.open.test.");
    assert!(answered(&inside), "{inside:?}");
}

#[test]
fn listener_acl_with_drop_sends_nothing_to_a_network_outside_its_allow_list() {
    let dir = support::temp_dir("bulwark-acl-drop-");
    let config = "[server]\nacl = \"edge\"\n[acl.edge]\nallow = [\"127.0.0.1\", \"127.0.2.0/24\"]\naction = \"drop\"\n";
    let server = start(dir.path(), config, None);
    assert!(ask_once(OUTSIDER, server.addr, "www.open.test.").is_none());
    let inside = ask(INSIDER, server.addr, "www.open.test.");
    assert!(answered(&inside), "{inside:?}");
}

#[test]
fn zone_acl_refuses_only_its_zone() {
    let dir = support::temp_dir("bulwark-acl-zone-");
    let config = "[acl.insiders]\nallow = [\"127.0.2.0/24\"]\n";
    let server = start(dir.path(), config, Some("insiders"));
    let closed = ask(OUTSIDER, server.addr, "www.closed.test.");
    assert!(refused(&closed), "{closed:?}");
    let open = ask(OUTSIDER, server.addr, "www.open.test.");
    assert!(answered(&open), "{open:?}");
    let inside = ask(INSIDER, server.addr, "www.closed.test.");
    assert!(answered(&inside), "{inside:?}");
}

#[test]
fn zone_acl_with_drop_sends_nothing_and_counts_it_as_an_acl_drop() {
    let dir = support::temp_dir("bulwark-acl-zone-drop-");
    let sock = dir.path().join("control.sock");
    let config = format!(
        "[control]\nsocket = \"{}\"\n[acl.insiders]\nallow = [\"127.0.2.0/24\"]\naction = \"drop\"\n",
        sock.display()
    );
    let server = start(dir.path(), &config, Some("insiders"));
    assert!(ask_once(OUTSIDER, server.addr, "www.closed.test.").is_none());
    let inside = ask(INSIDER, server.addr, "www.closed.test.");
    assert!(answered(&inside), "{inside:?}");
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--socket", sock.to_str().unwrap(), "stats"])
        .output()
        .unwrap();
    let stats = String::from_utf8_lossy(&out.stdout);
    assert!(
        stats
            .lines()
            .any(|l| l == "bulwark_dropped_total{reason=\"acl\"} 1"),
        "{stats}"
    );
}

#[test]
fn bad_network_and_unknown_acl_name_are_reported_at_file_line_column() {
    let dir = support::temp_dir("bulwark-acl-errors-");
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        "[server]\nlisten = [\"127.0.0.1:1\"]\nacl = \"missing\"\n\n[acl.a]\ndeny = [\"10.0.0.0/8\", \"10.1.2.3/40\"]\n\n[rrl]\nexempt = [\"not-a-net\"]\n",
    )
    .unwrap();
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["serve", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = |line_col: &str| format!("{}:{line_col}: ", conf.display());
    assert!(
        stderr.contains(&format!("{}acl: no [acl.missing]", at("3:7"))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}deny: `10.1.2.3/40`", at("6:23"))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}exempt: `not-a-net`", at("9:11"))),
        "{stderr}"
    );
}

#[test]
fn listener_table_applies_its_own_acl_on_its_address_only() {
    let dir = support::temp_dir("bulwark-acl-listener-");
    std::fs::write(dir.path().join("open.test.zone"), zone("open.test.")).unwrap();
    // Port 0 on both: each gets a port of its own, read from the ready file.
    let conf = dir.path().join("bulwark.toml");
    std::fs::write(
        &conf,
        "[server]\nlisten = [\"127.0.0.1:0\"]\n\n[acl.insiders]\nallow = [\"127.0.2.0/24\"]\n\n\
         [[listener]]\naddress = \"127.0.0.2:0\"\nacl = \"insiders\"\n\n\
         [[zone]]\norigin = \"open.test.\"\nfile = \"open.test.zone\"\n",
    )
    .unwrap();
    let args = ["serve", "--config", conf.to_str().unwrap()].map(String::from);
    let (process, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
    let [plain, guarded] = bound.dns[..] else {
        panic!("two listen addresses: {bound:?}");
    };
    assert_eq!(plain.ip(), std::net::Ipv4Addr::new(127, 0, 0, 1));
    assert_eq!(guarded.ip(), std::net::Ipv4Addr::new(127, 0, 0, 2));
    let mut server = support::Server {
        process,
        addr: plain,
        dir,
    };
    server.wait_ready("open.test.", RecordType::SOA, |_| true);
    let on_plain = ask(OUTSIDER, plain, "www.open.test.");
    assert!(answered(&on_plain), "{on_plain:?}");
    let on_guarded = ask(OUTSIDER, guarded, "www.open.test.");
    assert!(refused(&on_guarded), "{on_guarded:?}");
    let insider = ask(INSIDER, guarded, "www.open.test.");
    assert!(answered(&insider), "{insider:?}");
}

#[test]
fn zone_acl_changes_take_effect_on_reload() {
    let dir = support::temp_dir("bulwark-acl-reload-");
    let sock = dir.path().join("control.sock");
    let control = format!("[control]\nsocket = \"{}\"\n", sock.display());
    let config = format!("{control}[acl.insiders]\nallow = [\"127.0.2.0/24\"]\n");
    let server = start(dir.path(), &config, Some("insiders"));
    let before = ask(OUTSIDER, server.addr, "www.closed.test.");
    assert!(refused(&before), "{before:?}");

    // The same file without the zone's ACL.
    let conf = dir.path().join("bulwark.toml");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, text.replace("acl = \"insiders\"\n", "")).unwrap();
    let out = std::process::Command::new(support::bulwark_bin())
        .args(["ctl", "--socket", sock.to_str().unwrap(), "reload"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let after = ask(OUTSIDER, server.addr, "www.closed.test.");
    assert!(answered(&after), "{after:?}");
}
