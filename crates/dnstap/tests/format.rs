//! The text, YAML and JSON renderings, checked against dnstap-ldns where it
//! is installed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;

use bulwark_dnstap::schema::Dnstap;
use bulwark_dnstap::{
    format, KindSet, MessageContext, MessageKind, Protocol, SinkConfig, Timestamp,
};
use support::TestWriter;

fn query_wire() -> Vec<u8> {
    let mut wire = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    wire.extend_from_slice(b"\x03www\x07example\x03com\x00");
    wire.extend_from_slice(&[0, 28, 0, 1]);
    wire
}

fn response_wire() -> Vec<u8> {
    let mut wire = vec![0x12, 0x34, 0x85, 0x03, 0, 1, 0, 0, 0, 1, 0, 0];
    wire.extend_from_slice(b"\x03www\x07example\x03com\x00");
    wire.extend_from_slice(&[0, 28, 0, 1]);
    // example.com. 300 IN SOA ns1.example.com. admin.example.com. 1 2 3 4 5
    wire.extend_from_slice(&[0xc0, 0x10, 0, 6, 0, 1, 0, 0, 1, 0x2c]);
    let mut rdata = Vec::new();
    rdata.extend_from_slice(b"\x03ns1\xc0\x10\x05admin\xc0\x10");
    for n in 1u32..=5 {
        rdata.extend_from_slice(&n.to_be_bytes());
    }
    wire.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    wire.extend_from_slice(&rdata);
    wire
}

/// Every kind, over a mix of families, transports and timestamps.
fn write_every_kind() -> TestWriter {
    let mut writer = TestWriter::new(&SinkConfig {
        identity: Some(b"ns1".to_vec()),
        version: None,
        kinds: KindSet::all(),
        queue_capacity: 64,
    });
    let mut tap = writer.tap();
    let v4 = MessageContext {
        protocol: Protocol::Udp,
        client: SocketAddr::from((Ipv4Addr::new(192, 0, 2, 7), 40000)),
        server: SocketAddr::from((Ipv4Addr::new(198, 51, 100, 1), 53)),
        query_time: Some(Timestamp {
            secs: 1_795_000_000,
            nanos: 1_000,
        }),
        response_time: Some(Timestamp {
            secs: 1_795_000_001,
            nanos: 999_999_999,
        }),
        query_zone: None,
    };
    let v6 = MessageContext {
        protocol: Protocol::Tcp,
        client: SocketAddr::from((Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7), 40000)),
        server: SocketAddr::from((Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), 53)),
        ..v4
    };
    for (i, kind) in MessageKind::ALL.into_iter().enumerate() {
        let ctx = if i % 3 == 0 { &v6 } else { &v4 };
        let wire = if kind.query() {
            query_wire()
        } else {
            response_wire()
        };
        tap.log(kind, ctx, &wire);
        tap.flush();
    }
    writer.stop();
    writer
}

#[test]
fn text_lines_match_dnstap_ldns() {
    let writer = write_every_kind();
    let ours: Vec<String> = writer.messages().iter().map(format::text).collect();
    assert_eq!(ours.len(), 14);
    assert_eq!(
        ours[0],
        "2026-11-18 11:06:40.000001 AQ 2001:db8::7 TCP 33b \"www.example.com.\" IN AAAA"
    );
    assert_eq!(
        ours[1],
        "2026-11-18 11:06:41.999999 AR 192.0.2.7 UDP 79b \"www.example.com.\" IN AAAA"
    );
    // Without dnstap-ldns (outside CI) the fixed lines above are the check.
    let Some(dnstap_ldns) = bulwark_testkit::require_tool("dnstap-ldns") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.fstrm");
    writer.write_file(&path);
    let out = Command::new(&dnstap_ldns)
        .arg("-r")
        .arg(&path)
        .output()
        .unwrap();
    let theirs = String::from_utf8(out.stdout).unwrap();
    let theirs: Vec<&str> = theirs.lines().collect();
    // This dnstap-ldns predates UPDATE_QUERY/UPDATE_RESPONSE and prints
    // "[unhandled Dnstap.Message.Type]" for them: compare the first twelve.
    assert_eq!(theirs.len(), 14);
    assert_eq!(ours[..12], theirs[..12]);
}

#[test]
fn yaml_and_json_show_the_fields() {
    let messages: Vec<Dnstap> = write_every_kind().messages();
    let yaml = format::yaml(&messages[1]);
    eprintln!("{yaml}");
    assert!(
        yaml.starts_with("type: MESSAGE\nidentity: \"ns1\"\nmessage:\n  type: AUTH_RESPONSE\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("  query_time: !!timestamp 2026-11-18 11:06:40.000001\n"),
        "{yaml}"
    );
    assert!(yaml.contains("  query_address: \"192.0.2.7\"\n"), "{yaml}");
    assert!(yaml.contains("rcode: NXDOMAIN"), "{yaml}");
    assert!(
        yaml.contains("example.com.\t300\tIN\tSOA\tns1.example.com. admin.example.com. 1 2 3 4 5"),
        "{yaml}"
    );
    assert!(yaml.ends_with("---\n"));

    let json = format::json(&messages[1]);
    eprintln!("{json}");
    assert!(!json.contains('\n'));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["type"], "AUTH_RESPONSE");
    assert_eq!(value["qname"], "www.example.com.");
    assert_eq!(value["qtype"], "AAAA");
    assert_eq!(value["rcode"], "NXDOMAIN");
    assert_eq!(value["query_address"], "192.0.2.7");
    assert_eq!(value["response_port"], 53);
    assert_eq!(value["response_time"], "2026-11-18T11:06:41.999999Z");
    assert!(value["response_message"]
        .as_str()
        .unwrap()
        .starts_with("EjSFAw"));
}
