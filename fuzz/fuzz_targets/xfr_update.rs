//! Dynamic UPDATE (RFC 2136): message bytes in, a verdict, a response and a
//! zone diff out, against the differential test zone unsigned and signed
//! (NSEC3 with salt and iterations, so the edit meets RRSIGs and the chain's
//! hashed owners), with `signed_by_server` off and on.
//!
//! The input is applied as one message, and then, cut after a two-octet
//! length prefix (as over TCP), as two messages in a row on one edit. What
//! must hold, whatever the input:
//! - no panic;
//! - a message that is turned down leaves the edit exactly as it was
//!   (RFC 2136 §3.4: all or nothing);
//! - the response to every message parses, with the query's ID, QR, opcode
//!   UPDATE and the verdict's rcode;
//! - the diff `finish` gives starts at the zone's SOA, moves the serial
//!   forward (RFC 1982), never lists the SOA as a change, stays in the zone,
//!   applies to the zone's records with `apply_diff`, and what that gives
//!   builds (or reports problems) without a panic; when it builds, it is the
//!   diff `diff_zones` finds between the two versions.
#![no_main]

use std::sync::OnceLock;

use bulwark_proto::message::MessageView;
use bulwark_proto::{Name, Opcode, Rcode, Record, Rtype};
use bulwark_xfr::serial::{serial_gt, SerialPolicy};
use bulwark_xfr::update::{read_update, write_update_response, ClientSoa, UpdateOptions, ZoneEdit};
use bulwark_zone::diff::soa_record;
use bulwark_zone::{apply_diff, diff_zones, parse_str, Zone, ZoneDiff};
use libfuzzer_sys::fuzz_target;

const UNSIGNED_ZONE: &str = include_str!("../../crates/bulwark/tests/data/diff.zone");
const SIGNED_ZONE: &str =
    include_str!("../../crates/auth/tests/data/signed/diff-nsec3-salted.zone");
/// 2023-11-14: the time `finish` picks serials at.
const NOW: u64 = 1_700_000_000;
/// Largest UPDATE response `write_update_response` writes.
const RESPONSE_LIMIT: usize = 512;

/// A zone the updates apply to, and its records (for `apply_diff`).
struct Base {
    zone: Zone,
    records: Vec<Record>,
}

fn load(text: &str) -> Base {
    let apex: Name = "diff.test.".parse().expect("apex");
    let records = parse_str(text, &apex, "diff.test.").expect("test zone parses");
    let (zone, _warnings) = Zone::build(apex, records).expect("test zone builds");
    let records = zone.records().collect();
    Base { zone, records }
}

fn bases() -> &'static [Base; 2] {
    static BASES: OnceLock<[Base; 2]> = OnceLock::new();
    BASES.get_or_init(|| [load(UNSIGNED_ZONE), load(SIGNED_ZONE)])
}

/// A record's identity and TTL, to compare lists of records in any order.
fn record_key(r: &Record) -> (Vec<u8>, u16, Vec<u8>, u32) {
    let mut rdata = Vec::new();
    r.rdata.write_canonical(&mut rdata);
    (
        r.owner.to_lowercase().as_wire().to_vec(),
        r.rtype().0,
        rdata,
        r.ttl,
    )
}

fn sorted_keys(records: &[Record]) -> Vec<(Vec<u8>, u16, Vec<u8>, u32)> {
    let mut keys: Vec<_> = records.iter().map(record_key).collect();
    keys.sort();
    keys
}

/// Applies one message to `edit`, checks the edit is untouched when it is
/// turned down, and returns the rcode its response carries.
fn apply_message(edit: &mut ZoneEdit<'_>, msg: &[u8], options: &UpdateOptions) -> Rcode {
    let Ok(view) = MessageView::parse(msg) else {
        return Rcode::FORMERR;
    };
    let request = match read_update(&view) {
        Ok(r) => r,
        Err(e) => return e.rcode(),
    };
    let before = edit.clone();
    match edit.apply(&request, options) {
        Ok(applied) => {
            assert!(
                applied.changed <= request.updates.len(),
                "{} changes from {} update records",
                applied.changed,
                request.updates.len()
            );
            for ignored in &applied.ignored {
                assert!(
                    ignored.index < request.updates.len(),
                    "ignored record {} of {}",
                    ignored.index,
                    request.updates.len()
                );
            }
            Rcode::NOERROR
        }
        Err(e) => {
            // RFC 2136 §3.4: a refused message changes nothing.
            assert_eq!(
                before.finish(SerialPolicy::Increment, NOW),
                edit.clone().finish(SerialPolicy::Increment, NOW),
                "the refused message ({e}) changed the edit"
            );
            e.rcode()
        }
    }
}

/// The response to `msg` carrying `rcode` parses and says what it should.
fn check_response(msg: &[u8], rcode: Rcode) {
    let mut out = Vec::new();
    let Some(len) = write_update_response(msg, rcode, &mut out) else {
        assert!(msg.len() < 12, "no response to a message with a header");
        return;
    };
    assert_eq!(
        len,
        out.len(),
        "reported length differs from the written one"
    );
    assert!(
        out.len() <= RESPONSE_LIMIT,
        "response of {} octets",
        out.len()
    );
    let view = match MessageView::parse(&out) {
        Ok(v) => v,
        Err(e) => panic!("UPDATE response does not parse: {e}\n{out:02x?}"),
    };
    assert_eq!(msg.get(..2), out.get(..2), "response ID differs");
    let h = view.header();
    assert!(h.flags.qr, "response without QR");
    assert_eq!(h.opcode, Opcode::UPDATE, "response opcode");
    assert_eq!(view.rcode(), rcode, "response rcode");
    assert!(h.qdcount <= 1, "response echoes {} zones", h.qdcount);
    assert_eq!((h.ancount, h.nscount), (0, 0), "response carries records");
}

fn check_diff(base: &Base, diff: &ZoneDiff) {
    let zone = &base.zone;
    let apex = zone.apex();
    assert_eq!(Some(&diff.old_soa), soa_record(zone).as_ref(), "old SOA");
    assert_eq!(diff.new_soa.owner, *apex, "new SOA owner");
    assert_eq!(diff.new_soa.rtype(), Rtype::SOA, "new SOA type");
    assert!(
        serial_gt(diff.new_serial(), diff.old_serial()),
        "serial {} does not follow {}",
        diff.new_serial(),
        diff.old_serial()
    );
    for r in diff.removed.iter().chain(&diff.added) {
        assert_ne!(r.rtype(), Rtype::SOA, "SOA listed as a change: {r}");
        assert!(r.owner.ends_with(apex), "change outside the zone: {r}");
        assert_eq!(r.class, zone.class(), "change in another class: {r}");
    }
    let records = match apply_diff(base.records.clone(), diff) {
        Ok(r) => r,
        Err(e) => panic!("the update's diff does not apply to its zone: {e}\n{diff:#?}"),
    };
    let expected = sorted_keys(&records);
    let Ok((new_zone, _warnings)) = Zone::build(apex.clone(), records) else {
        // An update may leave a zone the load-time checks refuse; reporting
        // it is enough.
        return;
    };
    let built = sorted_keys(&new_zone.records().collect::<Vec<_>>());
    if built != expected {
        // The zone keeps every record it is given, but it keeps all RRSIGs at
        // a name as one RRset and gives each the TTL of the RRset it covers
        // (RFC 4034 §3): an RRSIG whose RRset is gone, or that a client added
        // with another TTL, reads back with another TTL. Nothing else may
        // change, and the diffs are then not comparable.
        assert_eq!(
            built.len(),
            expected.len(),
            "the zone lost or gained records"
        );
        for (b, e) in built.iter().zip(&expected) {
            assert_eq!(
                (&b.0, b.1, &b.2),
                (&e.0, e.1, &e.2),
                "the zone lost or gained records"
            );
            assert!(
                b.3 == e.3 || b.1 == Rtype::RRSIG.0,
                "the zone changed a TTL: {b:?} {e:?}"
            );
        }
        return;
    }
    let found = match diff_zones(zone, &new_zone) {
        Ok(d) => d,
        Err(e) => panic!("diff_zones fails on the updated zone: {e}"),
    };
    assert_eq!(
        found.new_soa, diff.new_soa,
        "new SOA differs from diff_zones'"
    );
    assert_eq!(
        sorted_keys(&found.removed),
        sorted_keys(&diff.removed),
        "removed records differ from diff_zones'\nupdate: {diff:#?}\ndiff_zones: {found:#?}"
    );
    assert_eq!(
        sorted_keys(&found.added),
        sorted_keys(&diff.added),
        "added records differ from diff_zones'\nupdate: {diff:#?}\ndiff_zones: {found:#?}"
    );
}

/// Applies `messages` in a row to each zone, with each set of options.
fn run(messages: &[&[u8]]) {
    for base in bases() {
        for signed_by_server in [false, true] {
            let options = UpdateOptions {
                signed_by_server,
                client_soa: if signed_by_server {
                    ClientSoa::Ignored
                } else {
                    ClientSoa::WhenNewer
                },
            };
            let mut edit = ZoneEdit::new(&base.zone);
            for msg in messages {
                let rcode = apply_message(&mut edit, msg, &options);
                check_response(msg, rcode);
            }
            if let Some(diff) = edit.finish(SerialPolicy::Increment, NOW) {
                check_diff(base, &diff);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    run(&[data]);
    // Two messages: a two-octet length, the first, then the rest.
    if let Some((len, rest)) = data.split_first_chunk::<2>() {
        let len = usize::from(u16::from_be_bytes(*len));
        if let Some((first, second)) = rest.split_at_checked(len) {
            run(&[first, second]);
        }
    }
});
