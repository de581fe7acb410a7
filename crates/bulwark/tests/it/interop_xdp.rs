//! bulwark serving a zone through AF_XDP (`[[xdp]]`) on a veth link
//! between two network namespaces the test makes: kdig and dnspython in the
//! far namespace are answered over UDP on IPv4 and IPv6 by the XDP workers,
//! TCP still goes through the kernel's socket, the server's ACL refuses a
//! denied source on the XDP path as on the socket path, response rate
//! limiting holds a flood of one answer back there too, and `ctl status`,
//! the metrics and dnstap see the queries.
//!
//! Needs root (namespaces, BPF), iproute2, kdig and dnspython: outside CI a
//! machine without them skips, under CI=true it fails.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bulwark_testkit::netns::{self, LinkEnd, Namespace};

use crate::support;

const ORIGIN: &str = "diff.test.";
const SERVER_V4: &str = "10.53.0.1";
const SERVER_V6: &str = "fd53::1";
/// A far-side address the server's ACL denies.
const DENIED_V4: &str = "10.53.0.3";
/// A far-side address that floods one question, for rate limiting.
const FLOODER_V4: &str = "10.53.0.4";

struct Tools {
    kdig: PathBuf,
    python: PathBuf,
}

#[test]
fn kdig_and_dnspython_are_answered_through_af_xdp_with_the_servers_acl_and_counts() {
    let (Some(kdig), Some(python)) = (
        support::require_tool("kdig"),
        support::require_python_module("dns"),
    ) else {
        return;
    };
    let tools = Tools { kdig, python };
    let dir = support::temp_dir("xdp-");
    netns::isolated_or_skip(|| -> Result<(), String> {
        let far = Namespace::new().map_err(|e| e.to_string())?;
        netns::veth(
            LinkEnd {
                name: "xa",
                addresses: &["10.53.0.1/24", "fd53::1/64"],
            },
            &far,
            LinkEnd {
                name: "xb",
                addresses: &["10.53.0.2/24", "10.53.0.3/24", "10.53.0.4/24", "fd53::2/64"],
            },
        )
        .map_err(|e| e.to_string())?;
        serve_and_ask(&tools, &far, dir.path());
        Ok(())
    });
}

fn serve_and_ask(tools: &Tools, far: &Namespace, dir: &Path) {
    let control = dir.join("control.sock");
    let tap = dir.join("tap.fstrm");
    let config = dir.join("bulwark.toml");
    let zone = support::data_dir().join("diff.zone");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = [\"{SERVER_V4}:53\", \"[{SERVER_V6}]:53\"]\nthreads = 1\nacl = \"edge\"\n\n\
             [acl.edge]\ndeny = [\"{DENIED_V4}\"]\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [prometheus]\nlisten = \"127.0.0.1:0\"\n\n\
             [dnstap]\ndestination = \"file:{}\"\nmessages = [\"auth_query\", \"auth_response\"]\n\n\
             [[xdp]]\ninterface = \"xa\"\n\n\
             [[zone]]\norigin = \"{ORIGIN}\"\nfile = \"{}\"\n",
            control.display(),
            tap.display(),
            zone.display()
        ),
    )
    .unwrap();
    let args = ["serve", "--config", &config.display().to_string()].map(String::from);
    let (mut process, bound) = support::start_bulwark(&args, &[], dir, "bulwark");

    let kdig = |args: &[&str]| -> String {
        let out = in_namespace(far, Command::new(&tools.kdig).args(args));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Over UDP, IPv4 and IPv6: the XDP path.
    let v4 = kdig(&[&format!("@{SERVER_V4}"), "+norec", ORIGIN, "A"]);
    assert!(
        v4.contains("status: NOERROR") && v4.contains("192.0.2.1"),
        "{v4}"
    );
    assert!(v4.contains("Flags: qr aa"), "{v4}");
    let v6 = kdig(&[&format!("@{SERVER_V6}"), "+norec", ORIGIN, "AAAA"]);
    assert!(
        v6.contains("status: NOERROR") && v6.contains("2001:db8::1"),
        "{v6}"
    );
    // Over TCP: the kernel's socket, as before.
    let tcp = kdig(&[&format!("@{SERVER_V4}"), "+tcp", "+norec", ORIGIN, "MX"]);
    assert!(
        tcp.contains("status: NOERROR") && tcp.contains("mail.diff.test."),
        "{tcp}"
    );
    // The ACL applies on the XDP path too.
    let denied = kdig(&[
        &format!("@{SERVER_V4}"),
        "-b",
        DENIED_V4,
        "+norec",
        ORIGIN,
        "A",
    ]);
    assert!(denied.contains("status: REFUSED"), "{denied}");
    // An independent client: dnspython over UDP.
    let script = format!(
        "import dns.message, dns.query\n\
         q = dns.message.make_query('{ORIGIN}', 'TXT')\n\
         r = dns.query.udp(q, '{SERVER_V4}', timeout=5)\n\
         print(r.rcode(), r.answer[0].to_text())\n"
    );
    let out = in_namespace(far, Command::new(&tools.python).args(["-c", &script]));
    let py = String::from_utf8_lossy(&out.stdout);
    assert!(
        py.starts_with("0 ") && py.contains("v=spf1 -all"),
        "{py}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // 4 UDP queries came through XDP (v4 A, v6 AAAA, denied, dnspython);
    // 3 answered, 1 refused (a response too).
    // A worker adds up a round's counts after sending its replies: the
    // last answer can arrive before it is counted, so wait for the count.
    let counted = "xdp xa received 4 responded 4 dropped 0 truncated 0 send_errors 0";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut status = ctl_status(&control);
    while !status.contains(counted) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
        status = ctl_status(&control);
    }
    assert!(status.contains("xdp xa queues 0 native"), "{status}");
    assert!(status.contains(counted), "{status}");
    let prometheus: SocketAddr = bound.prometheus.unwrap();
    let metrics = support::scrape_metrics(prometheus);
    assert!(
        metrics.contains("bulwark_xdp_responded_total{interface=\"xa\"} 4"),
        "{metrics}"
    );

    // Response rate limiting (on by default, 20 identical answers a second
    // per /24, every second one slipped as TC) applies on the XDP path: 200
    // queries for one name at once get far fewer full answers.
    let flood = format!(
        "import socket, dns.message\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         s.bind(('{FLOODER_V4}', 0)); s.settimeout(2)\n\
         for i in range(200):\n    q = dns.message.make_query('{ORIGIN}', 'A'); q.id = i\n    s.sendto(q.to_wire(), ('{SERVER_V4}', 53))\n\
         full = tc = 0\n\
         try:\n    while True:\n        r = dns.message.from_wire(s.recv(4096), ignore_trailing=True)\n        if r.flags & 0x0200: tc += 1\n        else: full += 1\n\
         except socket.timeout: pass\n\
         print(full, tc)\n"
    );
    let out = in_namespace(far, Command::new(&tools.python).args(["-c", &flood]));
    let counts: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [full, tc] = counts[..] else {
        panic!("flood client: {}", String::from_utf8_lossy(&out.stderr));
    };
    assert!(
        full <= 40 && tc > 0,
        "rate limiting let {full} full answers and {tc} TC through"
    );
    let after = ctl_status(&control);
    assert!(after.contains("xdp xa received 204 "), "{after}");

    process.signal("TERM");
    process
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("bulwark stops on SIGTERM");
    let yaml = support::dnstap_yaml(&tap);
    // Every UDP query, XDP's included, and the TCP one; each with its
    // response, which carries the client's address too (3 from 10.53.0.2,
    // 1 from fd53::2).
    assert_eq!(
        yaml.matches("query_address: \"10.53.0.2\"").count(),
        6,
        "{yaml}"
    );
    assert_eq!(
        yaml.matches("query_address: \"fd53::2\"").count(),
        2,
        "{yaml}"
    );
}

/// `bulwark ctl status` on `control`'s socket.
fn ctl_status(control: &Path) -> String {
    let out = Command::new(support::bulwark_bin())
        .args(["ctl", "--socket"])
        .arg(control)
        .arg("status")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `command` from a thread in `ns`, so the program lives there.
fn in_namespace(ns: &Namespace, command: &mut Command) -> Output {
    std::thread::scope(|s| {
        s.spawn(|| {
            ns.enter().unwrap();
            command
                .stdin(Stdio::null())
                .output()
                .expect("run the client")
        })
        .join()
        .unwrap()
    })
}
