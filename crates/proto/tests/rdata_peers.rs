//! Our printed records are read by BIND and NSD, and BIND's canonical dump of
//! them parses back with ours to the same values. When a peer's checker is
//! not installed its test is skipped with a note, except under `CI`, where it
//! fails (see `bulwark_testkit`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use bulwark_proto::presentation::split_fields;
use bulwark_proto::rdata::Rdata;
use bulwark_proto::{Class, Name, Record, Rtype};
use bulwark_testkit::require_tool;

mod rdata_cases;

fn origin() -> Name {
    "example.com.".parse().unwrap()
}

/// The zone: SOA, NS and glue, then case `i` at owner `r{i}.example.com.`.
fn zone_records(unsupported: &[Rtype]) -> Vec<Record> {
    let o = origin();
    let rec = |owner: Name, rtype: Rtype, text: &str| Record {
        owner,
        class: Class::IN,
        ttl: 300,
        rdata: Rdata::from_text(rtype, text, &o).unwrap(),
    };
    let mut out = vec![
        rec(
            o.clone(),
            Rtype::SOA,
            "ns1 hostmaster 1 7200 3600 1209600 300",
        ),
        rec(o.clone(), Rtype::NS, "ns1"),
        rec("ns1.example.com.".parse().unwrap(), Rtype::A, "192.0.2.53"),
    ];
    for (i, &(rtype, text, _)) in rdata_cases::CASES.iter().enumerate() {
        // Meta types (OPT) and NULL (RFC 1035 §3.3.10) cannot appear in zone
        // files; NS and SOA at other owners would make delegations or a second apex.
        if rtype.is_meta()
            || [Rtype::NULL, Rtype::SOA, Rtype::NS].contains(&rtype)
            || unsupported.contains(&rtype)
        {
            continue;
        }
        let owner = o.prepend_label(format!("r{i}").as_bytes()).unwrap();
        out.push(rec(owner, rtype, text));
    }
    out
}

fn write_zone(dir: &Path, unsupported: &[Rtype]) -> PathBuf {
    let text: String = zone_records(unsupported)
        .iter()
        .map(|r| format!("{r}\n"))
        .collect();
    let path = dir.join("example.com.zone");
    std::fs::write(&path, text).unwrap();
    path
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bulwark-rdata-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every record of a peer's dump of our zone parses with ours to one of our
/// records, and none is lost.
fn assert_dump_matches(peer: &str, dumped: &str, ours: &[Record]) {
    let mut seen = 0;
    // BIND annotates RRSIGs with `; resign=` comment lines.
    for line in dumped
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
    {
        let mut fields = split_fields(line.as_bytes()).unwrap();
        // ldns appends `;{id = ...}` comments to DNSSEC records.
        if let Some(c) = fields
            .iter()
            .position(|f| !f.quoted && f.raw.starts_with(b";"))
        {
            fields.truncate(c);
        }
        let owner = Name::from_presentation(fields[0].raw, None).unwrap();
        let rtype: Rtype = fields[3].as_str().unwrap().parse().unwrap();
        let theirs = Rdata::parse_presentation(rtype, &fields[4..], &origin())
            .unwrap_or_else(|e| panic!("{peer}'s {line:?} rejected: {e}"));
        let matching = ours
            .iter()
            .filter(|r| r.owner == owner && r.rtype() == rtype)
            .any(|r| r.rdata == theirs);
        assert!(matching, "{peer}'s {line:?} matches none of ours");
        seen += 1;
    }
    assert_eq!(seen, ours.len(), "{peer} dropped or merged records");
}

#[test]
fn bind_reads_our_records_and_its_dump_parses_back_to_the_same_values() {
    let Some(checkzone) = require_tool("named-checkzone") else {
        return;
    };
    let dir = temp_dir("bind");
    let zone = write_zone(&dir, &[]);
    let dump = dir.join("dump.zone");
    let out = Command::new(&checkzone)
        .args(["-i", "none", "-k", "ignore", "-n", "ignore", "-D", "-o"])
        .arg(&dump)
        .arg("example.com")
        .arg(&zone)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "named-checkzone rejected our zone:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dumped = std::fs::read_to_string(&dump).unwrap();
    assert_dump_matches("BIND", &dumped, &zone_records(&[]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ldns_reads_our_records_and_its_output_parses_back_to_the_same_values() {
    let Some(read_zone) = require_tool("ldns-read-zone") else {
        return;
    };
    let dir = temp_dir("ldns");
    // ldns 1.8 rejects an empty CSYNC type bitmap, which RFC 7477 allows.
    let unsupported = [Rtype::CSYNC];
    let zone = write_zone(&dir, &unsupported);
    let out = Command::new(&read_zone).arg(&zone).output().unwrap();
    assert!(
        out.status.success(),
        "ldns-read-zone rejected our zone:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dumped = String::from_utf8(out.stdout).unwrap();
    assert_dump_matches("ldns", &dumped, &zone_records(&unsupported));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nsd_reads_our_records() {
    let Some(nsd_checkzone) = require_tool("nsd-checkzone") else {
        return;
    };
    let dir = temp_dir("nsd");
    let zone = write_zone(&dir, &[]);
    let out = Command::new(&nsd_checkzone)
        .arg("example.com")
        .arg(&zone)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nsd-checkzone rejected our zone:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn knot_reads_our_records() {
    let Some(knotc) = require_tool("knotc") else {
        return;
    };
    let dir = temp_dir("knot");
    // Knot 3.2 has no PX.
    let zone = write_zone(&dir, &[Rtype::PX]);
    // `knotc zone-check` loads a zone from its configuration without a server.
    let conf = dir.join("knot.conf");
    let d = dir.display();
    std::fs::write(
        &conf,
        format!(
            "server:\n    rundir: {d}\ndatabase:\n    storage: {d}\ntemplate:\n  - id: default\n    storage: {d}\nzone:\n  - domain: example.com\n    file: {}\n",
            zone.display()
        ),
    )
    .unwrap();
    let out = Command::new(&knotc)
        .arg("-c")
        .arg(&conf)
        .args(["zone-check", "example.com"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "knotc zone-check rejected our zone:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// dnspython reads each record's text as we print it and encodes it; the bytes
/// must be ours. One interpreter for all cases.
#[test]
fn dnspython_encodes_our_text_to_our_wire() {
    const SCRIPT: &str = r#"
import sys
import dns.rdata, dns.name
for line in sys.stdin:
    rtype, text = line.rstrip("\n").split("\t", 1)
    try:
        rd = dns.rdata.from_text("IN", rtype, text, origin=dns.name.root, relativize=False)
        print(rd.to_wire().hex())
    except Exception as e:
        print("ERR " + repr(e))
"#;
    let Some(python) = bulwark_testkit::require_python_module("dns.rdata") else {
        return;
    };
    let records = zone_records(&[]);
    let input: String = records
        .iter()
        .map(|r| format!("{}\t{}\n", r.rtype(), r.rdata))
        .collect();
    let mut child = Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), records.len());
    for (r, line) in records.iter().zip(lines) {
        let ours: String = r
            .rdata
            .to_wire()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(line, ours, "{} {}", r.rtype(), r.rdata);
    }
}
