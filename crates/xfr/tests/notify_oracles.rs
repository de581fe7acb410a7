//! NOTIFY (RFC 1996) against independent implementations: hickory-proto and
//! dnspython read the NOTIFY and the answer we write as NOTIFY messages, and
//! the NOTIFYs and answers they write are accepted by ours. Without
//! dnspython its tests are skipped with a note, except under `CI`, where they
//! fail.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::process::Command;

use bulwark_proto::message::MessageView;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};
use bulwark_xfr::notify::{
    build_notify, check_notify_response, read_notify, write_notify_response, NotifyRequest,
};
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::SOA;
use hickory_proto::rr::{DNSClass, Name as HName, RData, Record as HRecord, RecordType};

fn apex() -> Name {
    "example.com.".parse().unwrap()
}

fn soa(serial: u32) -> Record {
    Record {
        owner: apex(),
        class: Class::IN,
        ttl: 3600,
        rdata: Rdata::from_text(
            Rtype::SOA,
            &format!("ns1 hostmaster {serial} 3600 600 86400 300"),
            &apex(),
        )
        .unwrap(),
    }
}

#[test]
fn hickory_reads_our_notify_and_answer() {
    let mut notify = Vec::new();
    build_notify(0x5151, &apex(), Some(&soa(2024)), &mut notify).unwrap();
    let m = Message::from_vec(&notify).unwrap();
    assert_eq!(m.op_code(), OpCode::Notify);
    assert_eq!(m.message_type(), MessageType::Query);
    assert!(m.authoritative());
    assert_eq!(m.queries().len(), 1);
    assert_eq!(m.queries()[0].query_type(), RecordType::SOA);
    assert_eq!(m.queries()[0].query_class(), DNSClass::IN);
    assert_eq!(
        m.queries()[0].name(),
        &HName::from_ascii("example.com.").unwrap()
    );
    match m.answers()[0].data() {
        Some(RData::SOA(s)) => assert_eq!(s.serial(), 2024),
        other => panic!("{other:?}"),
    }

    let mut answer = Vec::new();
    write_notify_response(&notify, &mut answer).unwrap();
    let m = Message::from_vec(&answer).unwrap();
    assert_eq!(m.id(), 0x5151);
    assert_eq!(m.op_code(), OpCode::Notify);
    assert_eq!(m.message_type(), MessageType::Response);
    assert_eq!(m.response_code(), ResponseCode::NoError);
    assert!(m.authoritative());
    assert_eq!(m.queries()[0].query_type(), RecordType::SOA);
}

fn hickory_notify(id: u16, serial: Option<u32>) -> Vec<u8> {
    let name = HName::from_ascii("example.com.").unwrap();
    let mut m = Message::new();
    m.set_id(id)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Notify)
        .set_authoritative(true);
    let mut q = Query::query(name.clone(), RecordType::SOA);
    q.set_query_class(DNSClass::IN);
    m.add_query(q);
    if let Some(serial) = serial {
        let rdata = SOA::new(
            HName::from_ascii("ns1.example.com.").unwrap(),
            HName::from_ascii("hostmaster.example.com.").unwrap(),
            serial,
            3600,
            600,
            86400,
            300,
        );
        m.add_answer(HRecord::from_rdata(name, 3600, RData::SOA(rdata)));
    }
    m.to_vec().unwrap()
}

#[test]
fn we_read_hickorys_notify_and_answer() {
    for serial in [None, Some(7), Some(u32::MAX)] {
        let wire = hickory_notify(99, serial);
        let view = MessageView::parse(&wire).unwrap();
        assert_eq!(
            read_notify(&view),
            Ok(NotifyRequest {
                apex: apex(),
                serial
            })
        );
    }
    // hickory's answer to a NOTIFY.
    let query = Message::from_vec(&hickory_notify(99, None)).unwrap();
    let mut answer = Message::new();
    answer
        .set_id(99)
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Notify)
        .set_authoritative(true)
        .add_queries(query.queries().iter().cloned());
    let wire = answer.to_vec().unwrap();
    assert_eq!(check_notify_response(&wire, 99, &apex()), Ok(()));
}

/// Runs `script` with dnspython; `None` (after a note) when dnspython is
/// missing outside CI, a failure under CI (see `bulwark_testkit`).
fn dnspython(script: &str, stdin_hex: &str) -> Option<String> {
    let python = bulwark_testkit::require_python_module("dns.message")?;
    let out = Command::new(python)
        .args(["-c", script, stdin_hex])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn dnspython_reads_our_notify_and_answers_it() {
    // dnspython reads our NOTIFY, prints what it saw, and writes its answer
    // (dns.message.make_response keeps the opcode and question).
    const SCRIPT: &str = r#"
import sys
import dns.message, dns.opcode, dns.flags, dns.rdatatype
m = dns.message.from_wire(bytes.fromhex(sys.argv[1]))
print(dns.opcode.to_text(m.opcode()), m.id, bool(m.flags & dns.flags.AA), m.question[0].name,
      dns.rdatatype.to_text(m.question[0].rdtype), m.answer[0][0].serial)
r = dns.message.make_response(m)
r.flags |= dns.flags.AA
print(r.to_wire().hex())
"#;
    let mut notify = Vec::new();
    build_notify(0x0a0b, &apex(), Some(&soa(31)), &mut notify).unwrap();
    let Some(out) = dnspython(SCRIPT, &hex(&notify)) else {
        return;
    };
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "NOTIFY 2571 True example.com. SOA 31"
    );
    let answer = unhex(lines.next().unwrap());
    assert_eq!(check_notify_response(&answer, 0x0a0b, &apex()), Ok(()));
}

#[test]
fn dnspython_writes_a_notify_we_read_and_reads_our_answer() {
    const SCRIPT: &str = r#"
import sys
import dns.message, dns.opcode, dns.flags, dns.rdatatype, dns.rrset, dns.rcode
if sys.argv[1] == "make":
    m = dns.message.make_query("Example.COM.", "SOA")
    m.id = 777
    m.flags = dns.flags.AA
    m.set_opcode(dns.opcode.NOTIFY)
    m.answer.append(dns.rrset.from_text("example.com.", 60, "IN", "SOA",
                                        "ns1.example.com. h.example.com. 4242 1 2 3 4"))
    print(m.to_wire().hex())
else:
    r = dns.message.from_wire(bytes.fromhex(sys.argv[1]))
    print(dns.opcode.to_text(r.opcode()), r.id, dns.rcode.to_text(r.rcode()),
          bool(r.flags & dns.flags.QR), bool(r.flags & dns.flags.AA), r.question[0].name)
"#;
    let Some(out) = dnspython(SCRIPT, "make") else {
        return;
    };
    let notify = unhex(out.trim());
    let view = MessageView::parse(&notify).unwrap();
    let request = read_notify(&view).unwrap();
    assert_eq!(request.serial, Some(4242));
    assert_eq!(request.apex, apex());
    // The question keeps the case it was sent with.
    assert_eq!(request.apex.to_string(), "Example.COM.");
    let mut answer = Vec::new();
    write_notify_response(&notify, &mut answer).unwrap();
    let out = dnspython(SCRIPT, &hex(&answer)).unwrap();
    assert_eq!(out.trim(), "NOTIFY 777 NOERROR True True Example.COM.");
}
