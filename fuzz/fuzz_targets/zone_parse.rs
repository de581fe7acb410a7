//! The master-file parser on arbitrary text (origin `example.`), and the printer
//! against it: records that parse print to text that parses back to the same
//! records, both straight from the parser and after `Zone::build` (which
//! lowercases owners, orders and deduplicates RRsets).
#![no_main]

use bulwark_proto::{Name, Record};
use bulwark_zone::{parse_str, print_zone, Zone};
use libfuzzer_sys::fuzz_target;

/// A record as comparable bytes: exact owner case, type, class, TTL and the
/// rdata's wire form (names in it keep their case too).
type Key = (Vec<u8>, u16, u16, u32, Vec<u8>);

fn key(r: &Record) -> Key {
    (
        r.owner.as_wire().to_vec(),
        r.rtype().0,
        r.class.0,
        r.ttl,
        r.rdata.to_wire(),
    )
}

fn sorted_keys(records: &[Record]) -> Vec<Key> {
    let mut keys: Vec<_> = records.iter().map(key).collect();
    keys.sort();
    keys
}

/// Prints `records`, parses the text back and checks nothing changed.
fn assert_reprints(records: &[Record], origin: &Name, what: &str) {
    let text = print_zone(records);
    let reread = match parse_str(&text, origin, "printed") {
        Ok(r) => r,
        Err(e) => panic!("printed {what} does not parse: {e:?}\n{text}"),
    };
    assert_eq!(
        sorted_keys(records),
        sorted_keys(&reread),
        "printed {what} reads back differently:\n{text}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin: Name = "example.".parse().expect("origin");
    let Ok(records) = parse_str(text, &origin, "fuzz") else {
        return;
    };
    assert_reprints(&records, &origin, "records");
    let Ok((zone, _warnings)) = Zone::build(origin.clone(), records) else {
        return;
    };
    let built: Vec<Record> = zone.records().collect();
    assert_reprints(&built, &origin, "zone");
});
