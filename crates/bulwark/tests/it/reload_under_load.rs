//! Reloading zones with SIGHUP while queries keep coming.
//!
//! Every record of the test zone carries a generation number: the SOA
//! serial, TXT records at several names, and the very name a CNAME points
//! to. A zone swapped in whole (DESIGN: a new ZoneSet replaces the old one
//! atomically) shows one generation per answer; a half-applied reload would
//! mix them, and a broken file that was partly loaded would show a
//! generation that only exists in broken files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{QuerySpec, Transport};

const ORIGIN: &str = "gen.test.";
const RELOADS: u32 = 20;
/// Generations written into broken files start here; seeing one is a failure.
const BROKEN_BASE: u64 = 1000;
/// Per-attempt timeout and attempts per query before it counts as lost.
const QUERY_TIMEOUT: Duration = Duration::from_millis(1000);
const QUERY_ATTEMPTS: u32 = 4;
/// The client keeps going at least this long in queries, reloads or not.
const MIN_QUERIES: u64 = 400;
/// Queries the client makes between two reloads, at least.
const QUERIES_BETWEEN_RELOADS: u64 = 10;
/// How long a good reload may take to become visible.
const RELOAD_DEADLINE: Duration = Duration::from_secs(20);

/// The zone of one generation.
fn zone_text(generation: u64) -> String {
    format!(
        "$ORIGIN {ORIGIN}\n$TTL 60\n\
         @ SOA ns.gen.test. admin.gen.test. {generation} 3600 900 604800 60\n\
         @ NS ns\n\
         ns A 192.0.2.1\n\
         @ TXT \"gen={generation} part=1\"\n\
         @ TXT \"gen={generation} part=2\"\n\
         @ TXT \"gen={generation} part=3\"\n\
         a TXT \"gen={generation}\"\n\
         b TXT \"gen={generation}\"\n\
         c TXT \"gen={generation}\"\n\
         chain CNAME g{generation}.target\n\
         g{generation}.target TXT \"gen={generation}\"\n"
    )
}

/// A zone file that must be rejected: good records of a generation nobody
/// may ever see, then a syntax error, then more records.
fn broken_zone_text(generation: u64) -> String {
    let mut text = zone_text(generation);
    text.push_str("broken A 192.0.2.999\n");
    text.push_str(&format!("after TXT \"gen={generation}\"\n"));
    text
}

/// Replaces the zone file atomically (write, then rename), as an operator's
/// tooling would; the server must never see a half-written file.
fn install_zone(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

/// The queries the client cycles through.
fn probes() -> Vec<QuerySpec> {
    let at = |name: &str, t| QuerySpec::new(&format!("{name}{ORIGIN}"), t);
    vec![
        at("", RecordType::SOA),
        at("", RecordType::TXT),
        at("a.", RecordType::TXT),
        at("b.", RecordType::TXT),
        at("chain.", RecordType::TXT),
        at("c.", RecordType::TXT),
        at("nonexistent.", RecordType::A),
    ]
}

/// The single generation an answer shows, or why it is inconsistent.
fn generation_of(spec: &QuerySpec, answer: &support::Answer) -> Result<u64, String> {
    let mut seen = Vec::new();
    for record in answer.answer.iter().chain(&answer.authority) {
        // "owner ttl class type rdata"
        let mut parts = record.splitn(5, ' ');
        let owner = parts.next().unwrap_or("");
        let rtype = parts.nth(2).unwrap_or("");
        let rdata = parts.next().unwrap_or("");
        match rtype {
            "SOA" => seen.push(rdata.split(' ').nth(2).and_then(|s| s.parse().ok())),
            "TXT" => seen.push(
                rdata
                    .trim_matches('"')
                    .strip_prefix("gen=")
                    .and_then(|s| s.split(' ').next())
                    .and_then(|s| s.parse().ok()),
            ),
            "CNAME" => seen.push(
                rdata
                    .strip_prefix('g')
                    .and_then(|s| s.split('.').next())
                    .and_then(|s| s.parse().ok()),
            ),
            _ => {}
        }
        if owner.starts_with('g') && owner.ends_with(".target.gen.test.") {
            seen.push(owner[1..].split('.').next().and_then(|s| s.parse().ok()));
        }
    }
    let expected_records = match spec.qname.as_str() {
        "gen.test." if spec.qtype == u16::from(RecordType::TXT) => 3,
        "chain.gen.test." => 2,
        _ => 1,
    };
    let records = answer.answer.len() + answer.authority.len();
    if answer.rcode_name()
        != if spec.qname.starts_with("nonexistent") {
            "NXDOMAIN"
        } else {
            "NOERROR"
        }
        || records < expected_records
        || seen.len() < expected_records
    {
        return Err(format!("incomplete answer to {spec}: {answer}"));
    }
    let first =
        seen[0].ok_or_else(|| format!("unreadable generation in answer to {spec}: {answer}"))?;
    if seen.iter().any(|g| *g != Some(first)) {
        return Err(format!("generations mixed in answer to {spec}: {answer}"));
    }
    Ok(first)
}

#[derive(Default)]
struct ClientReport {
    queries: u64,
    lost: Vec<String>,
    inconsistent: Vec<String>,
}

/// Queries `addr` in a loop until `stop`, checking every answer.
fn run_client(addr: SocketAddr, stop: Arc<AtomicBool>, count: Arc<AtomicU64>) -> ClientReport {
    let mut report = ClientReport::default();
    let probes = probes();
    let mut newest = 0u64;
    for spec in probes.iter().cycle() {
        if stop.load(Ordering::Relaxed) && report.queries >= MIN_QUERIES {
            break;
        }
        report.queries += 1;
        count.store(report.queries, Ordering::Relaxed);
        match support::query_retry(addr, spec, Transport::Udp, QUERY_TIMEOUT, QUERY_ATTEMPTS) {
            Err(e) => report.lost.push(format!("{spec}: {e}")),
            Ok(answer) => match generation_of(spec, &answer) {
                Err(why) => report.inconsistent.push(why),
                Ok(g) if g >= BROKEN_BASE => report
                    .inconsistent
                    .push(format!("generation {g} of a broken file served: {answer}")),
                // The client waits for each answer before asking again, so
                // once a generation is served an older one must not return.
                Ok(g) if g < newest => report.inconsistent.push(format!(
                    "generation went back from {newest} to {g}: {answer}"
                )),
                Ok(g) => newest = g,
            },
        }
    }
    report
}

/// Polls until the server's SOA serial is `generation`.
fn wait_for_generation(server: &mut support::Server, generation: u64) {
    let spec = QuerySpec::new(ORIGIN, RecordType::SOA);
    let deadline = Instant::now() + RELOAD_DEADLINE;
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Some(status) = server.process.exited() {
            panic!(
                "server exited ({status}) during reloads; log:\n{}",
                server.process.log()
            );
        }
        match support::query(server.addr, &spec, Transport::Udp, QUERY_TIMEOUT) {
            Ok(a) if generation_of(&spec, &a) == Ok(generation) => return,
            Ok(a) => last = a.to_string(),
            Err(e) => last = e.to_string(),
        }
    }
    panic!(
        "generation {generation} not served within {RELOAD_DEADLINE:?}; last answer: {last}\nlog:\n{}",
        server.process.log()
    );
}

/// The whole scenario against any server that reloads on SIGHUP.
fn reload_under_load(mut server: support::Server, zone_path: &Path) {
    wait_for_generation(&mut server, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let client = {
        let (addr, stop, count) = (server.addr, Arc::clone(&stop), Arc::clone(&count));
        thread::spawn(move || run_client(addr, stop, count))
    };

    let mut generation = 1;
    for reload in 0..RELOADS {
        // Let the client get some queries in between reloads, so every
        // reload happens under load rather than before the client starts.
        let mark = count.load(Ordering::Relaxed);
        let deadline = Instant::now() + RELOAD_DEADLINE;
        while count.load(Ordering::Relaxed) < mark + QUERIES_BETWEEN_RELOADS {
            assert!(
                Instant::now() < deadline && !client.is_finished(),
                "the client stopped querying"
            );
            thread::yield_now();
        }
        if reload % 2 == 1 {
            install_zone(
                zone_path,
                &broken_zone_text(BROKEN_BASE + u64::from(reload)),
            );
            server.process.signal("HUP");
            // Nothing to wait for: the next good reload must win, and the
            // client fails the test if the broken generation ever shows.
        } else {
            generation += 1;
            install_zone(zone_path, &zone_text(generation));
            server.process.signal("HUP");
            wait_for_generation(&mut server, generation);
        }
    }
    // A broken file is the last one installed if RELOADS is even; the good
    // generation before it must still be served.
    stop.store(true, Ordering::Relaxed);
    let report = client.join().expect("client thread");
    wait_for_generation(&mut server, generation);
    assert!(
        server.process.exited().is_none(),
        "server died; log:\n{}",
        server.process.log()
    );

    eprintln!(
        "{} queries over {RELOADS} reloads, {} lost, {} inconsistent",
        report.queries,
        report.lost.len(),
        report.inconsistent.len()
    );
    assert!(
        report.queries >= MIN_QUERIES,
        "only {} queries made",
        report.queries
    );
    assert!(
        report.lost.is_empty(),
        "{} of {} queries lost, first: {:?}",
        report.lost.len(),
        report.queries,
        report.lost.iter().take(5).collect::<Vec<_>>()
    );
    assert!(
        report.inconsistent.is_empty(),
        "{} of {} answers inconsistent; first ones:\n{}",
        report.inconsistent.len(),
        report.queries,
        report
            .inconsistent
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn zone_texts_carry_one_generation_everywhere() {
    let text = zone_text(7);
    assert!(text.contains(" 7 3600 900"));
    assert_eq!(text.matches("gen=7").count(), 7);
    assert!(text.contains("chain CNAME g7.target"));
    assert!(broken_zone_text(1001).contains("192.0.2.999"));
}

fn answer_with(records: &[&str], authority: &[&str], rcode: u16) -> support::Answer {
    let wire = {
        // A minimal response header; the sections are filled in below.
        let mut h = vec![0u8; 12];
        h[2] = 0x84;
        h[3] = u8::try_from(rcode).unwrap();
        h
    };
    let mut a = support::Answer::parse(&wire).unwrap();
    a.parse_error = None;
    a.answer = records.iter().map(|s| s.to_string()).collect();
    a.authority = authority.iter().map(|s| s.to_string()).collect();
    a
}

#[test]
fn the_consistency_check_catches_mixed_and_incomplete_answers() {
    let txt = QuerySpec::new(ORIGIN, RecordType::TXT);
    let whole = answer_with(
        &[
            "gen.test. 60 IN TXT \"gen=3 part=1\"",
            "gen.test. 60 IN TXT \"gen=3 part=2\"",
            "gen.test. 60 IN TXT \"gen=3 part=3\"",
        ],
        &[],
        0,
    );
    assert_eq!(generation_of(&txt, &whole), Ok(3));
    let mixed = answer_with(
        &[
            "gen.test. 60 IN TXT \"gen=3 part=1\"",
            "gen.test. 60 IN TXT \"gen=4 part=2\"",
            "gen.test. 60 IN TXT \"gen=3 part=3\"",
        ],
        &[],
        0,
    );
    assert!(generation_of(&txt, &mixed).is_err());
    let partial = answer_with(&["gen.test. 60 IN TXT \"gen=3 part=1\""], &[], 0);
    assert!(generation_of(&txt, &partial).is_err());

    let chain = QuerySpec::new("chain.gen.test.", RecordType::TXT);
    let crossed = answer_with(
        &[
            "chain.gen.test. 60 IN CNAME g4.target.gen.test.",
            "g4.target.gen.test. 60 IN TXT \"gen=5\"",
        ],
        &[],
        0,
    );
    assert!(generation_of(&chain, &crossed).is_err());
    let dangling = answer_with(&["chain.gen.test. 60 IN CNAME g4.target.gen.test."], &[], 3);
    assert!(generation_of(&chain, &dangling).is_err());

    let nx = QuerySpec::new("nonexistent.gen.test.", RecordType::A);
    let soa = "gen.test. 60 IN SOA ns.gen.test. admin.gen.test. 9 3600 900 604800 60";
    assert_eq!(generation_of(&nx, &answer_with(&[], &[soa], 3)), Ok(9));
    assert!(generation_of(&nx, &answer_with(&[], &[soa], 0)).is_err());
}

#[test]
fn sighup_reloads_swap_whole_zones_and_reject_broken_files_without_losing_queries() {
    let dir = support::temp_dir("reload-");
    let zone_path = dir.path().join("gen.zone");
    install_zone(&zone_path, &zone_text(1));
    let server = support::spawn_bulwark(&[(ORIGIN, zone_path.as_path())], &[]);
    reload_under_load(server, &zone_path);
}

/// The scenario against knotd, to check the harness reports no false
/// failure. knotd reloads changed zone files on SIGHUP (knotd(8)).
#[test]
fn the_reload_harness_passes_against_knotd() {
    let dir = support::temp_dir("reload-knot-");
    let zone_path = dir.path().join("gen.zone");
    install_zone(&zone_path, &zone_text(1));
    let Some(server) = support::spawn_knotd(&[(ORIGIN, zone_path.as_path())]) else {
        return;
    };
    reload_under_load(server, &zone_path);
}
