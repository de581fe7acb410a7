//! Interop with real primaries on the loopback: our SOA, AXFR and IXFR
//! queries go to Knot DNS (and AXFR to BIND), and our reader must take their
//! answers as they cut and compress them, to the zone (or the changes) we
//! parse ourselves from the same files. Prints how each packs its messages
//! beside ours. Without knotd or named a test is skipped with a note, except
//! under `CI`, where it fails (see `bulwark_testkit`).
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use bulwark_proto::message::{MessageView, Question};
use bulwark_proto::{Class, Name, Record, Rtype};
use bulwark_testkit::{require_tool, wire};
use bulwark_xfr::transfer_in::{
    build_soa_query, build_transfer_query, read_soa_response, Progress, TransferLimits,
    TransferReader, TransferResult,
};
use bulwark_xfr::transfer_out::TransferWriter;
use bulwark_zone::diff::soa_record;
use bulwark_zone::{apply_diff, parse_str, Zone};

/// How long a server gets to serve a serial, asked every `POLL`.
const READY_WITHIN: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);
/// A transfer of a few thousand records takes far less over the loopback.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(20);

fn apex() -> Name {
    "example.".parse().unwrap()
}

fn zone_text(serial: u32) -> String {
    let mut t = format!(
        "$ORIGIN example.\n$TTL 300\n@ SOA ns1 hostmaster {serial} 3600 600 86400 300\n\
         @ NS ns1\n@ NS ns2.other.net.\n@ MX 10 mail\nns1 A 192.0.2.1\nmail A 192.0.2.2\n\
         www CNAME mail\nsub NS ns.sub\nns.sub A 192.0.2.4\nv{serial} TXT \"only in {serial}\"\n"
    );
    for i in 0..4000u32 {
        // Every version changes a few of them.
        let last = if i % 1000 == 0 {
            (i + serial) % 250
        } else {
            i % 250
        };
        t.push_str(&format!("host{i} A 10.0.{}.{last}\n", i / 250));
    }
    t
}

fn zone(text: &str) -> Zone {
    Zone::build(apex(), parse_str(text, &apex(), "test").unwrap())
        .unwrap()
        .0
}

fn lines(records: impl IntoIterator<Item = Record>) -> Vec<String> {
    let mut v: Vec<String> = records.into_iter().map(|r| r.to_string()).collect();
    v.sort();
    v
}

/// A child process killed (by its own handle) when the test ends.
struct Daemon {
    child: Child,
    log: PathBuf,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

impl Daemon {
    fn start(program: &Path, args: &[&str], dir: PathBuf, addr: SocketAddr) -> Daemon {
        let log = dir.join("daemon.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Daemon {
            child,
            log,
            dir,
            addr,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Asks for the SOA over UDP until the server answers with `serial`.
    fn wait_for_serial(&mut self, serial: u32) {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(POLL)).unwrap();
        let mut query = Vec::new();
        let mut buf = vec![0u8; 4096];
        let started = Instant::now();
        let mut id = 0u16;
        while started.elapsed() < READY_WITHIN {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("server exited ({status}):\n{}", self.log());
            }
            id = id.wrapping_add(1);
            build_soa_query(id, &apex(), &mut query).unwrap();
            sock.send_to(&query, self.addr).unwrap();
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                match read_soa_response(&buf[..n], id, &apex()) {
                    Ok(answer) if answer.serial == serial => return,
                    // Loaded, but not that version yet: ask again shortly.
                    _ => std::thread::sleep(POLL),
                }
            }
        }
        panic!("server never served serial {serial}:\n{}", self.log());
    }

    /// Sends a transfer query over TCP and feeds every message to a reader.
    /// Returns the result and the size of each message received.
    fn transfer(&self, qtype: Rtype, ours: Option<&Record>) -> (TransferResult, Vec<usize>) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(TRANSFER_TIMEOUT)).unwrap();
        let mut query = Vec::new();
        build_transfer_query(0x2345, &apex(), qtype, ours, &mut query).unwrap();
        stream.write_all(&wire::framed(&query)).unwrap();
        let serial = ours.and_then(bulwark_zone::diff::soa_serial_of);
        let mut reader =
            TransferReader::new(apex(), qtype, 0x2345, serial, TransferLimits::default());
        let mut sizes = Vec::new();
        loop {
            let mut len = [0u8; 2];
            if stream.read_exact(&mut len).is_err() {
                break;
            }
            let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
            stream.read_exact(&mut msg).unwrap();
            sizes.push(msg.len());
            if reader.feed(&msg).unwrap() == Progress::Done {
                break;
            }
        }
        (reader.finish().unwrap(), sizes)
    }
}

fn free_port() -> u16 {
    bulwark_testkit::free_port()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-xfr-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How our writer packs the same zone, for comparison.
fn our_sizes(z: &Zone) -> Vec<usize> {
    let q = Question {
        qname: apex(),
        qtype: Rtype::AXFR,
        qclass: Class::IN,
    };
    let mut w = TransferWriter::axfr(z, 1, &q).unwrap();
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    while let Some(info) = w.next_message(&mut out, 0) {
        sizes.push(info.unwrap().len);
        MessageView::parse(&out).unwrap();
    }
    sizes
}

fn full_lines(result: TransferResult) -> Vec<String> {
    let TransferResult::Full { soa, records } = result else {
        panic!("not a full zone: {result:?}");
    };
    lines(std::iter::once(soa).chain(records))
}

#[test]
fn knot_serves_axfr_and_ixfr_that_we_read() {
    let (Some(knotd), Some(knotc)) = (require_tool("knotd"), require_tool("knotc")) else {
        return;
    };
    let dir = temp_dir("knot");
    let zone_file = dir.join("example.zone");
    std::fs::write(&zone_file, zone_text(1)).unwrap();
    let port = free_port();
    let d = dir.display();
    // Knot 3.x (knot.conf(5)): keep the changes between zone file versions in
    // the journal, so it can answer IXFR.
    let conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    \
         tcp-workers: 1\n    background-workers: 1\n\
         database:\n    storage: {d}\n\
         control:\n    listen: {d}/knot.sock\n\
         log:\n  - target: stderr\n    any: info\n\
         acl:\n  - id: local\n    address: 127.0.0.0/8\n    action: transfer\n\
         template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    \
         zonefile-load: difference\n    journal-content: changes\n    acl: local\n\
         zone:\n  - domain: example.\n    file: {}\n",
        zone_file.display()
    );
    let conf_path = dir.join("knot.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let conf_arg = conf_path.to_str().unwrap().to_string();
    let mut knot = Daemon::start(
        &knotd,
        &["-c", &conf_arg],
        dir.clone(),
        ([127, 0, 0, 1], port).into(),
    );
    knot.wait_for_serial(1);

    let v1 = zone(&zone_text(1));
    let (result, sizes) = knot.transfer(Rtype::AXFR, None);
    assert_eq!(full_lines(result), lines(v1.records()));
    let ours = our_sizes(&v1);
    eprintln!(
        "AXFR of {} records: knotd sent {} messages ({} octets, largest {}), we send {} ({} octets, largest {})",
        v1.records().count() + 1,
        sizes.len(),
        sizes.iter().sum::<usize>(),
        sizes.iter().max().unwrap(),
        ours.len(),
        ours.iter().sum::<usize>(),
        ours.iter().max().unwrap(),
    );

    // A new version of the zone file; knot keeps the difference. Its mtime is
    // set ahead so the reload cannot take it for the file already loaded.
    std::fs::write(&zone_file, zone_text(2)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&zone_file)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    let status = Command::new(&knotc)
        .args(["-c", &conf_arg, "zone-reload", "example."])
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    knot.wait_for_serial(2);
    let v2 = zone(&zone_text(2));
    let ours_soa = soa_record(&v1).unwrap();
    let (result, _) = knot.transfer(Rtype::IXFR, Some(&ours_soa));
    let TransferResult::Incremental { diffs } = result else {
        panic!(
            "knot did not answer incrementally: {result:?}\n{}",
            knot.log()
        );
    };
    let mut records: Vec<Record> = v1.records().collect();
    for d in &diffs {
        records = apply_diff(records, d).unwrap();
    }
    assert_eq!(lines(records), lines(v2.records()));

    // Up to date: the SOA alone.
    let current = soa_record(&v2).unwrap();
    let (result, sizes) = knot.transfer(Rtype::IXFR, Some(&current));
    assert_eq!(result, TransferResult::UpToDate { serial: 2 });
    assert_eq!(sizes.len(), 1);
}

#[test]
fn bind_serves_an_axfr_that_we_read() {
    let Some(named) = require_tool("named") else {
        return;
    };
    let dir = temp_dir("named");
    let zone_file = dir.join("example.zone");
    std::fs::write(&zone_file, zone_text(5)).unwrap();
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "options {{\n  directory \"{d}\";\n  pid-file \"{d}/named.pid\";\n  \
         session-keyfile \"{d}/session.key\";\n  listen-on port {port} {{ 127.0.0.1; }};\n  \
         listen-on-v6 {{ none; }};\n  recursion no;\n  allow-transfer {{ 127.0.0.1; }};\n}};\n\
         zone \"example.\" {{ type primary; file \"{}\"; }};\n",
        zone_file.display()
    );
    let conf_path = dir.join("named.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let conf_arg = conf_path.to_str().unwrap().to_string();
    let mut named = Daemon::start(
        &named,
        &["-g", "-c", &conf_arg, "-n", "1"],
        dir.clone(),
        ([127, 0, 0, 1], port).into(),
    );
    named.wait_for_serial(5);
    let v5 = zone(&zone_text(5));
    let (result, sizes) = named.transfer(Rtype::AXFR, None);
    assert_eq!(full_lines(result), lines(v5.records()));
    eprintln!(
        "AXFR from named: {} messages ({} octets, largest {})",
        sizes.len(),
        sizes.iter().sum::<usize>(),
        sizes.iter().max().unwrap()
    );
}
