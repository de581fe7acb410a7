//! Zones, records and diffs for the store's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bulwark_proto::{Name, Record};
use bulwark_store::Store;
use bulwark_zone::ZoneDiff;

pub fn name(text: &str) -> Name {
    text.parse().unwrap()
}

/// Records from zone-file text, relative names under `origin`.
pub fn records(origin: &Name, text: &str) -> Vec<Record> {
    bulwark_zone::parse_str(text, origin, "test")
        .unwrap_or_else(|e| panic!("test zone text does not parse: {e:?}"))
}

pub fn soa(zone: &Name, serial: u32) -> Record {
    records(
        zone,
        &format!("@ 3600 IN SOA ns1 hostmaster {serial} 7200 3600 1209600 300\n"),
    )
    .remove(0)
}

/// One record that belongs to version `serial` of a test zone and no other.
pub fn record_of(zone: &Name, serial: u32) -> Record {
    records(
        zone,
        &format!(
            "v{serial} 300 IN TXT \"version {serial}\"\nv{serial} 300 IN A 192.0.2.{}\n",
            serial % 250
        ),
    )
    .remove(0)
}

/// The diff from `serial` to `serial + 1` of a test zone: it removes the
/// record of `serial` and adds the record of `serial + 1`.
pub fn step(zone: &Name, serial: u32) -> ZoneDiff {
    let next = serial.wrapping_add(1);
    ZoneDiff {
        old_soa: soa(zone, serial),
        new_soa: soa(zone, next),
        removed: vec![record_of(zone, serial)],
        added: vec![record_of(zone, next)],
    }
}

/// The diffs `from → from+1 → … → to`.
pub fn chain(zone: &Name, from: u32, to: u32) -> Vec<ZoneDiff> {
    (from..to).map(|s| step(zone, s)).collect()
}

/// A snapshot of a test zone at `serial`: its SOA, NS and its version record.
pub fn zone_at(zone: &Name, serial: u32) -> Vec<Record> {
    let mut out = vec![soa(zone, serial)];
    out.extend(records(
        zone,
        "@ 3600 IN NS ns1\nns1 3600 IN A 192.0.2.53\n",
    ));
    out.push(record_of(zone, serial));
    out
}

/// Records of many types, with owner names holding octets that need escaping.
pub fn many_types(zone: &Name) -> Vec<Record> {
    records(
        zone,
        r#"
@           3600 IN NS     ns1
@           3600 IN MX     10 mail
@           3600 IN TXT    "v=spf1 -all" "second string" ""
@           3600 IN CAA    0 issue "ca.example.net"
@           3600 IN DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
@           3600 IN NSEC3PARAM 1 0 0 -
ns1         3600 IN A      192.0.2.53
ns1         3600 IN AAAA   2001:db8::53
mail        3600 IN A      192.0.2.25
www         300  IN CNAME  @
_sip._udp   300  IN SRV    0 5 5060 sip
sip         300  IN NAPTR  100 10 "S" "SIP+D2U" "" _sip._udp
sub         3600 IN DS     60485 5 1 2BB183AF5F22588179A53B0A98631FAD1A292118
_443._tcp   300  IN TLSA   3 1 1 0C72AC70B745AC19998811B131D662C9AC69DBDBE7CB23E5B514B56664C5D3D6
svc         300  IN HTTPS  1 . alpn=h2,h3 port=8443
svc         300  IN SVCB   0 www
loc         300  IN LOC    52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m
host        300  IN SSHFP  4 2 123456789abcdef67890123456789abcdef67890123456789abcdef123456789
www         300  IN RRSIG  CNAME 13 3 300 20300101000000 20200101000000 12345 @ c2lnbmF0dXJl
www         300  IN NSEC   zzz A RRSIG NSEC TYPE65280
opaque      300  IN TYPE65280 \# 3 abcdef
empty       300  IN TYPE65281 \# 0
odd\000\255\.octets 300 IN A 192.0.2.1
UPPER.Case  300  IN A      192.0.2.2
\@\$\;\(\)\\ 300 IN TXT    "quoted \"text\" \255\000"
"#,
    )
}

/// A new store in a new temporary directory.
pub fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("bulwark.redb")).unwrap();
    (dir, store)
}
