#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Key rollovers on an accelerated clock, watched by a validating resolver.
//!
//! bulwark serves a parent zone and a child zone, signing both; the child's
//! policy rolls its ZSK every few seconds (pre-publication) and its KSK
//! (double signature) with the parent in the loop: the test plays the
//! registrar, copying the child's CDS into the parent's DS records, and
//! bulwark finds the new DS by asking the parent itself. Unbound holds only
//! the parent's DS as trust anchor and must validate names in the child at
//! every moment. bulwark is killed and restarted in the middle of each
//! rollover and must carry on with the keys and timing it had.

use std::collections::BTreeSet;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{
    bulwark_bin, free_port, require_tool, temp_dir, ChildGuard, EdnsSpec, QuerySpec, Server,
    Transport,
};

const PARENT: &str = "parent.test.";
const CHILD: &str = "child.parent.test.";
const TIMEOUT: Duration = Duration::from_secs(3);
const DEADLINE: Duration = Duration::from_secs(150);

fn parent_zone(serial: u32, ds: &[String]) -> String {
    let mut text = format!(
        "$TTL 2\n@ IN SOA ns1 hostmaster {serial} 3600 900 604800 2\n  NS ns1\nns1 A 127.0.0.1\n\
         child NS ns1.child\nns1.child A 127.0.0.1\n"
    );
    for d in ds {
        text.push_str(&format!("child 2 IN DS {d}\n"));
    }
    text
}

const CHILD_ZONE: &str = "$TTL 2\n@ IN SOA ns1 hostmaster 1 3600 900 604800 2\n  NS ns1\n\
ns1 A 127.0.0.1\nwww A 192.0.2.80\n*.wild TXT \"wildcard\"\n";

struct Setup {
    dir: tempfile::TempDir,
    config: PathBuf,
    socket: PathBuf,
    addr: SocketAddr,
}

fn setup() -> Setup {
    let dir = temp_dir("rollover-");
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    fs::write(dir.path().join("parent.zone"), parent_zone(1, &[])).unwrap();
    fs::write(dir.path().join("child.zone"), CHILD_ZONE).unwrap();
    let socket = dir.path().join("ctl.sock");
    let config = dir.path().join("bulwark.toml");
    fs::write(
        &config,
        format!(
            "[server]\nlisten = [\"{addr}\"]\nthreads = 1\n\n[control]\nsocket = \"{}\"\n\n\
             [dnssec_policy.steady]\nzsk_lifetime = \"0\"\nresign_interval = \"1s\"\n\n\
             [dnssec_policy.fast]\n\
             dnskey_ttl = 2\nzsk_lifetime = \"12s\"\nksk_lifetime = \"20s\"\n\
             propagation_delay = \"1s\"\nparent_ds_ttl = \"2s\"\nparent_propagation_delay = \"1s\"\n\
             resign_interval = \"1s\"\nsignature_validity = \"1h\"\nsignature_refresh = \"10m\"\n\
             signature_jitter = \"0\"\nsignature_inception_offset = \"5m\"\n\n\
             [[zone]]\norigin = \"{PARENT}\"\nfile = \"parent.zone\"\ndnssec_policy = \"steady\"\n\n\
             [[zone]]\norigin = \"{CHILD}\"\nfile = \"child.zone\"\ndnssec_policy = \"fast\"\nparent = [\"{addr}\"]\n",
            socket.display()
        ),
    )
    .unwrap();
    Setup {
        dir,
        config,
        socket,
        addr,
    }
}

fn start_bulwark(s: &Setup, run: u32) -> Server {
    let args = vec![
        "serve".to_string(),
        "--config".to_string(),
        s.config.display().to_string(),
    ];
    let log = s.dir.path().join(format!("bulwark-{run}.log"));
    let mut server = Server {
        process: ChildGuard::spawn("bulwark", &bulwark_bin(), &args, log),
        addr: s.addr,
        dir: temp_dir("rollover-run-"),
    };
    for zone in [PARENT, CHILD] {
        server.wait_ready(zone, RecordType::SOA, |a| {
            a.rcode == 0 && !a.answer.is_empty()
        });
    }
    // The registrar reloads the parent through the control socket; after a
    // kill the old socket file is still there, so wait until one answers.
    let deadline = Instant::now() + support::STARTUP_DEADLINE;
    while std::os::unix::net::UnixStream::connect(&s.socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "no control socket:\n{}",
            server.process.log()
        );
        pace();
    }
    server
}

fn run(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The child's CDS set as the registrar reads it (DS presentation lines).
fn child_cds(dig: &Path, addr: SocketAddr) -> BTreeSet<String> {
    run(
        dig,
        &[
            &format!("@{}", addr.ip()),
            "-p",
            &addr.port().to_string(),
            "+short",
            "+norec",
            CHILD,
            "CDS",
        ],
    )
    .lines()
    .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    .filter(|l| !l.is_empty())
    .collect()
}

/// (role, state) of each child key, from `bulwark keys list`.
fn child_keys(s: &Setup) -> Vec<(String, String)> {
    let keys = s.dir.path().join("keys");
    run(
        &bulwark_bin(),
        &["keys", "list", CHILD, "-K", keys.to_str().unwrap()],
    )
    .lines()
    .skip(1)
    .map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f[4].to_string(), f[5].trim_end_matches(',').to_string())
    })
    .collect()
}

fn start_unbound(unbound: &Path, dir: &Path, anchor: &str, upstream: SocketAddr) -> Server {
    let port = free_port();
    let conf = format!(
        "server:\n  interface: 127.0.0.1@{port}\n  do-daemonize: no\n  chroot: \"\"\n  username: \"\"\n  \
         directory: \"{d}\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  do-ip6: no\n  num-threads: 1\n  \
         so-reuseport: no\n  access-control: 127.0.0.0/8 allow\n  do-not-query-localhost: no\n  \
         module-config: \"validator iterator\"\n  val-log-level: 2\n  qname-minimisation: no\n  \
         local-zone: \"test.\" nodefault\n  cache-max-ttl: 2\n  cache-max-negative-ttl: 2\n  \
         val-bogus-ttl: 1\n  prefetch: no\n  trust-anchor: \"{anchor}\"\n\
         stub-zone:\n  name: \"{PARENT}\"\n  stub-addr: {ip}@{up}\n\
         stub-zone:\n  name: \"{CHILD}\"\n  stub-addr: {ip}@{up}\n\
         remote-control:\n  control-enable: no\n",
        d = dir.display(),
        ip = upstream.ip(),
        up = upstream.port()
    );
    let path = dir.join("unbound.conf");
    fs::write(&path, conf).unwrap();
    let args = vec![
        "-d".to_string(),
        "-c".to_string(),
        path.display().to_string(),
    ];
    let process = ChildGuard::spawn("unbound", unbound, &args, dir.join("unbound.log"));
    let mut server = Server {
        process,
        addr: ([127, 0, 0, 1], port).into(),
        dir: temp_dir("rollover-unbound-"),
    };
    server.wait_ready(PARENT, RecordType::SOA, |_| true);
    server
}

fn validated(resolver: &Server, qname: &str) -> (String, bool) {
    let mut spec = QuerySpec::new(qname, RecordType::A);
    spec.rd = true;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let a = support::query_retry(resolver.addr, &spec, Transport::Udp, TIMEOUT, 3)
        .unwrap_or_else(|e| panic!("{qname}: {e}\n{}", resolver.process.log()));
    (a.rcode_name(), a.ad)
}

/// Waits a little, for pacing the loop below (not for synchronisation: every
/// condition it waits for is polled).
fn pace() {
    let _ = std::net::UdpSocket::bind("127.0.0.1:0").and_then(|s| {
        s.set_read_timeout(Some(Duration::from_millis(100)))?;
        s.recv(&mut [0u8; 1])
    });
}

#[test]
fn zsk_and_ksk_roll_over_while_unbound_validates_and_restarts_resume() {
    let Some(unbound) = require_tool("unbound") else {
        return;
    };
    let Some(dig) = require_tool("dig") else {
        return;
    };
    let s = setup();
    let mut server = start_bulwark(&s, 0);
    let keys_dir = s.dir.path().join("keys");

    // The registrar: the parent's DS set follows the child's CDS set.
    let mut parent_ds: BTreeSet<String> = BTreeSet::new();
    let mut serial = 1;
    let mut registrar = |server: &Server, parent_ds: &mut BTreeSet<String>| {
        let cds = child_cds(&dig, server.addr);
        if !cds.is_empty() && cds != *parent_ds {
            serial += 1;
            let lines: Vec<String> = cds.iter().cloned().collect();
            fs::write(
                s.dir.path().join("parent.zone"),
                parent_zone(serial, &lines),
            )
            .unwrap();
            run(
                &bulwark_bin(),
                &[
                    "ctl",
                    "--socket",
                    s.socket.to_str().unwrap(),
                    "zone",
                    "reload",
                    PARENT,
                ],
            );
            *parent_ds = cds;
        }
    };
    // The child's first KSK is announced by CDS once its DNSKEY has had time
    // to reach caches.
    let start = Instant::now();
    while parent_ds.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no CDS from the child:\n{}",
            server.process.log()
        );
        registrar(&server, &mut parent_ds);
        pace();
    }
    let anchor = run(
        &bulwark_bin(),
        &["keys", "ds", PARENT, "-K", keys_dir.to_str().unwrap()],
    );
    let unbound_dir = temp_dir("rollover-unbound-conf-");
    let resolver = start_unbound(&unbound, unbound_dir.path(), anchor.trim(), s.addr);

    let mut restarted_mid_zsk = false;
    let mut restarted_mid_ksk = false;
    let mut runs = 0;
    let mut checks = 0;
    loop {
        assert!(
            start.elapsed() < DEADLINE,
            "rollovers did not finish: {:?}\n{}",
            child_keys(&s),
            server.process.log()
        );
        registrar(&server, &mut parent_ds);
        for (qname, rcode) in [
            ("www.child.parent.test.", "NOERROR"),
            ("nope.child.parent.test.", "NXDOMAIN"),
        ] {
            let (got, ad) = validated(&resolver, qname);
            assert!(
                got == rcode && ad,
                "{qname}: {got} ad={ad} at {:?} with keys {:?}\nunbound:\n{}\nbulwark:\n{}",
                start.elapsed(),
                child_keys(&s),
                resolver.process.log(),
                server.process.log()
            );
            checks += 1;
        }

        let keys = child_keys(&s);
        let count = |role: &str, state: &str| {
            keys.iter()
                .filter(|(r, st)| r == role && st == state)
                .count()
        };
        let live_ksks = keys
            .iter()
            .filter(|(r, st)| r == "KSK" && st != "removed")
            .count();
        // Kill bulwark in the middle of each rollover, then carry on with a
        // new process and the same key directory.
        let mid_zsk = count("ZSK", "published") > 0;
        let mid_ksk = live_ksks >= 2;
        if (mid_zsk && !restarted_mid_zsk) || (mid_ksk && !restarted_mid_ksk) {
            restarted_mid_zsk |= mid_zsk;
            restarted_mid_ksk |= mid_ksk;
            let before = fs::read_dir(&keys_dir).unwrap().count();
            server.process.signal("KILL");
            server
                .process
                .wait_exit(TIMEOUT)
                .expect("bulwark did not die");
            runs += 1;
            server = start_bulwark(&s, runs);
            // The new process made no keys of its own: it resumed.
            assert_eq!(fs::read_dir(&keys_dir).unwrap().count(), before, "{keys:?}");
        }

        let zsks_retired = keys
            .iter()
            .filter(|(r, st)| r == "ZSK" && (st == "retired" || st == "removed"))
            .count();
        let ksks_removed = count("KSK", "removed");
        if zsks_retired >= 2 && ksks_removed >= 1 && restarted_mid_zsk && restarted_mid_ksk {
            break;
        }
        pace();
    }
    eprintln!(
        "{checks} validations over {:?}, {runs} restarts, child keys {:?}",
        start.elapsed(),
        child_keys(&s)
    );
    assert!(checks > 100, "only {checks} validations ran");
    // Exactly one KSK is left, and the parent's DS names it.
    let keys = child_keys(&s);
    assert_eq!(
        keys.iter()
            .filter(|(r, st)| r == "KSK" && st != "removed")
            .count(),
        1,
        "{keys:?}"
    );
    let cds = child_cds(&dig, server.addr);
    assert_eq!(cds, parent_ds);
}
