//! dnspython as an independent oracle for zone transfers: its inbound transfer
//! machinery (`dns.xfr.Inbound`, what `dns.query.inbound_xfr` runs) applies
//! our AXFR and IXFR messages to a zone, which must come out as ours; and the
//! AXFR messages dnspython writes read in our `TransferReader` to the same
//! zone. Without dnspython (Debian python3-dnspython) the tests are skipped
//! with a note, except under `CI`, where they fail (see `bulwark_testkit`).
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bulwark_proto::message::Question;
use bulwark_proto::{Class, Name, Record, Rtype};
use bulwark_xfr::transfer_in::{Progress, TransferLimits, TransferReader, TransferResult};
use bulwark_xfr::transfer_out::{plan_ixfr, IxfrPlan, TransferWriter};
use bulwark_zone::diff::soa_record;
use bulwark_zone::{diff_zones, parse_str, Zone, ZoneDiff};

/// Reads length-prefixed messages from a file and applies them with
/// dns.xfr.Inbound to an empty zone (AXFR) or to `base` (IXFR); prints "done
/// at N" and then every record as `owner ttl type rdata-hex`.
const APPLY: &str = r#"
import sys, struct
import dns.zone, dns.xfr, dns.message, dns.name, dns.rdatatype
mode, origin_text, path = sys.argv[1], sys.argv[2], sys.argv[3]
origin = dns.name.from_text(origin_text)
if mode == "axfr":
    zone = dns.zone.Zone(origin, relativize=False)
    inbound = dns.xfr.Inbound(zone, dns.rdatatype.AXFR)
else:
    base, serial = sys.argv[4], int(sys.argv[5])
    zone = dns.zone.from_text(open(base).read(), origin, relativize=False)
    inbound = dns.xfr.Inbound(zone, dns.rdatatype.IXFR, serial=serial)
data = open(path, "rb").read()
pos, n, done_at = 0, 0, None
with inbound:
    while pos < len(data):
        (length,) = struct.unpack(">H", data[pos:pos + 2])
        wire = data[pos + 2:pos + 2 + length]
        pos += 2 + length
        msg = dns.message.from_wire(wire, xfr=True, one_rr_per_rrset=True)
        n += 1
        if inbound.process_message(msg):
            if done_at is not None:
                raise Exception("done twice")
            done_at = n
print("done at", done_at, "of", n)
for name, node in zone.nodes.items():
    for rds in node:
        for rd in rds:
            print(name.to_text(), rds.ttl, int(rds.rdtype), rd.to_wire().hex())
"#;

/// Writes a zone's AXFR as length-prefixed messages, `per_message` RRsets each,
/// with dnspython's own message building and name compression.
const WRITE_AXFR: &str = r#"
import sys, struct
import dns.zone, dns.message, dns.name, dns.rdatatype, dns.flags, dns.rrset
origin = dns.name.from_text(sys.argv[1])
per_message = int(sys.argv[2])
zone = dns.zone.from_text(sys.stdin.read(), origin, relativize=False)
soa = zone.find_rrset(origin, dns.rdatatype.SOA)
rrsets = [soa]
for name, rds in zone.iterate_rdatasets():
    if rds.rdtype != dns.rdatatype.SOA:
        rr = dns.rrset.RRset(name, rds.rdclass, rds.rdtype, rds.covers)
        rr.update(rds)
        rrsets.append(rr)
rrsets.append(soa)
query = dns.message.make_query(origin, dns.rdatatype.AXFR)
query.id = 4321
out = sys.stdout.buffer
for i in range(0, len(rrsets), per_message):
    resp = dns.message.make_response(query)
    resp.flags |= dns.flags.AA
    resp.answer = rrsets[i:i + per_message]
    wire = resp.to_wire(max_size=65535)
    out.write(struct.pack(">H", len(wire)) + wire)
"#;

/// A python3 with dnspython's transfer machinery, or `None` (after a note)
/// when it is missing outside CI.
fn python() -> Option<PathBuf> {
    bulwark_testkit::require_python_module("dns.xfr")
}

const ZONE: &str = r#"
$ORIGIN example.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
@ NS ns2.other.net.
@ MX 10 mail
ns1 A 192.0.2.1
mail A 192.0.2.2
mail AAAA 2001:db8::2
www CNAME mail
txt 60 TXT "hello world" "second"
_sip._udp SRV 0 5 5060 sip
sip A 192.0.2.3
sub NS ns.sub
ns.sub A 192.0.2.4
deep.a.b.c A 192.0.2.5
"#;

fn apex() -> Name {
    "example.".parse().unwrap()
}

fn text(serial: u32, extra: usize) -> String {
    let mut t = ZONE.replace(" 1 3600 600", &format!(" {serial} 3600 600"));
    t.push_str(&format!("v{serial} TXT \"only in {serial}\"\n"));
    for i in 0..extra {
        t.push_str(&format!(
            "h{i} A 198.51.{}.{}\n",
            i / 250,
            (i + serial as usize) % 250
        ));
    }
    t
}

fn zone(text: &str) -> Zone {
    Zone::build(apex(), parse_str(text, &apex(), "test").unwrap())
        .unwrap()
        .0
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("bulwark-xfr-{}-{name}", std::process::id()))
}

fn lines(records: impl IntoIterator<Item = Record>) -> Vec<String> {
    let mut v: Vec<String> = records
        .into_iter()
        .map(|r| {
            let hex: String = r
                .rdata
                .to_wire()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("{} {} {} {hex}", r.owner, r.ttl, r.rtype().0)
        })
        .collect();
    v.sort();
    v
}

fn question(qtype: Rtype) -> Question {
    Question {
        qname: apex(),
        qtype,
        qclass: Class::IN,
    }
}

/// Our messages, length-prefixed in a file.
fn write_messages(mut w: TransferWriter<'_>, path: &PathBuf) -> usize {
    let mut out = Vec::new();
    let mut file = Vec::new();
    let mut n = 0;
    while let Some(info) = w.next_message(&mut out, 0) {
        info.unwrap();
        file.extend_from_slice(&u16::try_from(out.len()).unwrap().to_be_bytes());
        file.extend_from_slice(&out);
        n += 1;
    }
    std::fs::write(path, file).unwrap();
    n
}

/// Runs APPLY; returns (the "done at" line, sorted records).
fn dnspython_apply(python: &Path, args: &[&str]) -> (String, Vec<String>) {
    let out = Command::new(python)
        .args(["-c", APPLY])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dnspython refused our transfer:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut it = stdout.lines();
    let done = it.next().unwrap().to_string();
    let mut records: Vec<String> = it.map(str::to_string).collect();
    records.sort();
    (done, records)
}

#[test]
fn dnspython_applies_our_axfr_to_the_same_zone() {
    let Some(python) = python() else {
        return;
    };
    let z = zone(&text(1, 3000));
    for limit in [65_535, 1024] {
        let path = temp(&format!("axfr-{limit}"));
        let w = TransferWriter::axfr(&z, 1, &question(Rtype::AXFR))
            .unwrap()
            .with_message_limit(limit);
        let n = write_messages(w, &path);
        let (done, records) =
            dnspython_apply(&python, &["axfr", "example.", path.to_str().unwrap()]);
        std::fs::remove_file(&path).ok();
        assert_eq!(done, format!("done at {n} of {n}"));
        assert_eq!(records, lines(z.records()), "limit {limit}");
    }
}

fn journal(serials: &[u32]) -> (Vec<Zone>, Vec<ZoneDiff>) {
    let zones: Vec<Zone> = serials.iter().map(|&s| zone(&text(s, 300))).collect();
    let diffs = zones
        .windows(2)
        .map(|w| diff_zones(&w[0], &w[1]).unwrap())
        .collect();
    (zones, diffs)
}

#[test]
fn dnspython_applies_our_ixfr_to_the_old_version() {
    let Some(python) = python() else {
        return;
    };
    let (zones, journal) = journal(&[1, 2, 3, 4]);
    let base = temp("ixfr-base.zone");
    std::fs::write(&base, text(1, 300)).unwrap();
    for (client, want_plan) in [
        (1, IxfrPlan::Incremental(0..3)),
        (2, IxfrPlan::Incremental(1..3)),
    ] {
        std::fs::write(&base, text(client, 300)).unwrap();
        let plan = plan_ixfr(client, &zones[3], &journal);
        assert_eq!(plan, want_plan);
        let path = temp(&format!("ixfr-{client}"));
        let w =
            TransferWriter::for_ixfr_plan(&zones[3], &plan, &journal, 1, &question(Rtype::IXFR))
                .unwrap()
                .with_message_limit(700);
        let n = write_messages(w, &path);
        assert!(n > 1);
        let serial = client.to_string();
        let (done, records) = dnspython_apply(
            &python,
            &[
                "ixfr",
                "example.",
                path.to_str().unwrap(),
                base.to_str().unwrap(),
                &serial,
            ],
        );
        std::fs::remove_file(&path).ok();
        assert_eq!(done, format!("done at {n} of {n}"));
        assert_eq!(records, lines(zones[3].records()), "from serial {client}");
    }
    // Up to date: the SOA alone leaves the zone as it was.
    std::fs::write(&base, text(4, 300)).unwrap();
    let path = temp("ixfr-current");
    let w = TransferWriter::single_soa(&zones[3], 1, &question(Rtype::IXFR)).unwrap();
    write_messages(w, &path);
    let (done, records) = dnspython_apply(
        &python,
        &[
            "ixfr",
            "example.",
            path.to_str().unwrap(),
            base.to_str().unwrap(),
            "4",
        ],
    );
    std::fs::remove_file(&path).ok();
    std::fs::remove_file(&base).ok();
    assert_eq!(done, "done at 1 of 1");
    assert_eq!(records, lines(zones[3].records()));
}

#[test]
fn our_reader_takes_dnspythons_axfr() {
    let Some(python) = python() else {
        return;
    };
    let t = text(9, 2000);
    let z = zone(&t);
    for per_message in [1, 10, 100_000] {
        let mut child = Command::new(&python)
            .args(["-c", WRITE_AXFR, "example.", &per_message.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(t.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut reader =
            TransferReader::new(apex(), Rtype::AXFR, 4321, None, TransferLimits::default());
        let (mut pos, mut progress, mut n) = (0usize, Progress::More, 0usize);
        while pos < out.stdout.len() {
            assert_eq!(progress, Progress::More);
            let len = usize::from(u16::from_be_bytes([out.stdout[pos], out.stdout[pos + 1]]));
            progress = reader.feed(&out.stdout[pos + 2..pos + 2 + len]).unwrap();
            pos += 2 + len;
            n += 1;
        }
        assert_eq!(progress, Progress::Done);
        assert!(per_message > 1000 || n > 10);
        let TransferResult::Full { soa, records } = reader.finish().unwrap() else {
            panic!("not a full transfer");
        };
        assert_eq!(soa, soa_record(&z).unwrap());
        let got = lines(std::iter::once(soa).chain(records));
        assert_eq!(got, lines(z.records()), "{per_message} RRsets per message");
    }
}
