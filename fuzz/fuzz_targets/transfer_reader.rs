//! Pulling a zone from a primary that is not trusted: the messages of an AXFR
//! or IXFR answer (RFC 5936, RFC 1995) fed to a `TransferReader`, and each
//! message read as a SOA answer (RFC 1996 §3.11) and as a NOTIFY (RFC 1996).
//!
//! Input layout:
//! - octet 0: bit 0 chooses IXFR over AXFR, bits 1-2 the apex (`diff.test.`,
//!   `other.test.`, the root, `diff.test.`), bit 3 whether the IXFR query
//!   carried our serial, bit 7 whether to feed one more message after `Done`;
//! - octet 1: the limits, 4 << (bits 0-2) records and 256 << (bits 3-5) octets;
//! - octets 2-5: the serial we hold;
//! - then the messages, each after a two-octet length (the last may run
//!   short). The query ID is the first message's.
//!
//! What must hold: no panic; after an error or after `Done` every further
//! message is refused; `finish` is `Ok` exactly when the answer completed (or,
//! for IXFR, stopped after a single newer SOA); the reader never accepts more
//! records or octets than its limits; a full zone is at or below the apex and
//! holds no SOA but its own; incremental diffs chain from our serial to the
//! opening SOA's; "up to date" means what it says.
#![no_main]

use std::sync::OnceLock;

use bulwark_proto::message::MessageView;
use bulwark_proto::{Class, Name, Opcode, Rcode, Record, Rtype};
use bulwark_xfr::notify::{check_notify_response, read_notify, write_notify_response};
use bulwark_xfr::serial::serial_gt;
use bulwark_xfr::transfer_in::{
    build_transfer_query, read_soa_response, Progress, TransferLimits, TransferReader,
    TransferResult,
};
use bulwark_zone::diff::soa_serial_of;
use libfuzzer_sys::fuzz_target;

fn apexes() -> &'static [Name; 4] {
    static APEXES: OnceLock<[Name; 4]> = OnceLock::new();
    APEXES.get_or_init(|| {
        ["diff.test.", "other.test.", ".", "diff.test."].map(|s| s.parse().expect("apex"))
    })
}

/// The length-prefixed messages of the input.
fn messages(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_be_bytes(*len)).min(tail.len());
        let (msg, next) = tail.split_at(len);
        out.push(msg);
        rest = next;
    }
    out
}

fn in_zone(r: &Record, apex: &Name) {
    assert!(r.owner.ends_with(apex), "record outside {apex}: {r}");
    assert_eq!(r.class, Class::IN, "record not in class IN: {r}");
}

/// Each message as an answer to our SOA query and as a NOTIFY.
fn check_single(msg: &[u8], id: u16, apex: &Name) {
    if let Ok(answer) = read_soa_response(msg, id, apex) {
        assert_eq!(answer.soa.owner, *apex, "SOA answer for another name");
        assert_eq!(
            soa_serial_of(&answer.soa),
            Some(answer.serial),
            "SOA serial"
        );
        // The SOA we would send in the IXFR query that follows.
        let mut out = Vec::new();
        let len = build_transfer_query(id, apex, Rtype::IXFR, Some(&answer.soa), &mut out)
            .unwrap_or_else(|e| panic!("IXFR query with the primary's SOA: {e}"));
        assert_eq!(len, out.len());
        if let Err(e) = MessageView::parse(&out) {
            panic!("IXFR query does not parse: {e}");
        }
    }
    let _ = check_notify_response(msg, id, apex);
    let Ok(view) = MessageView::parse(msg) else {
        return;
    };
    if let Ok(notify) = read_notify(&view) {
        assert_eq!(Some(&notify.apex), view.question().map(|q| q.qname).as_ref());
        let mut out = Vec::new();
        match write_notify_response(msg, &mut out) {
            Ok(len) => {
                assert_eq!(len, out.len());
                let answer = match MessageView::parse(&out) {
                    Ok(v) => v,
                    Err(e) => panic!("NOTIFY answer does not parse: {e}"),
                };
                assert_eq!(msg.get(..2), out.get(..2), "NOTIFY answer ID");
                assert!(answer.header().flags.qr);
                assert_eq!(answer.header().opcode, Opcode::NOTIFY);
                assert_eq!(answer.rcode(), Rcode::NOERROR);
            }
            Err(e) => panic!("no answer to an accepted NOTIFY: {e}"),
        }
    }
}

fn check_result(
    result: &TransferResult,
    qtype: Rtype,
    apex: &Name,
    client_serial: Option<u32>,
    limits: &TransferLimits,
) {
    match result {
        TransferResult::Full { soa, records } => {
            assert_eq!(soa.owner, *apex, "full zone's SOA owner");
            assert_eq!(soa.rtype(), Rtype::SOA, "full zone's SOA");
            in_zone(soa, apex);
            for r in records {
                in_zone(r, apex);
                assert_ne!(r.rtype(), Rtype::SOA, "a second SOA in the zone: {r}");
            }
            // The opening and closing SOAs count too.
            assert!(records.len().saturating_add(2) <= limits.max_records);
        }
        TransferResult::Incremental { diffs } => {
            assert_eq!(qtype, Rtype::IXFR, "diffs from an AXFR");
            assert!(!diffs.is_empty(), "incremental answer without a diff");
            if let (Some(first), Some(ours)) = (diffs.first(), client_serial) {
                assert_eq!(
                    first.old_serial(),
                    ours,
                    "first diff does not start at ours"
                );
            }
            for pair in diffs.windows(2) {
                if let [a, b] = pair {
                    assert_eq!(a.new_serial(), b.old_serial(), "diff chain broken");
                }
            }
            let mut held = 2usize;
            for d in diffs {
                for r in [&d.old_soa, &d.new_soa] {
                    assert_eq!(r.owner, *apex);
                    assert_eq!(r.rtype(), Rtype::SOA);
                }
                for r in d.removed.iter().chain(&d.added) {
                    in_zone(r, apex);
                    assert_ne!(r.rtype(), Rtype::SOA);
                }
                held = held.saturating_add(d.record_count());
            }
            assert!(held <= limits.max_records, "{held} records held");
        }
        TransferResult::UpToDate { serial } => {
            assert_eq!(qtype, Rtype::IXFR, "up to date after an AXFR");
            let ours = client_serial.expect("up to date without a serial of ours");
            assert!(!serial_gt(*serial, ours), "{serial} is newer than {ours}");
        }
        TransferResult::RetryOverTcp { serial } => {
            assert_eq!(qtype, Rtype::IXFR, "retry after an AXFR");
            if let Some(ours) = client_serial {
                assert!(
                    serial_gt(*serial, ours),
                    "{serial} is not newer than {ours}"
                );
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(([mode, limit_bits, s0, s1, s2, s3], rest)) = data.split_first_chunk::<6>() else {
        return;
    };
    let qtype = if mode & 1 == 0 {
        Rtype::AXFR
    } else {
        Rtype::IXFR
    };
    let apex = &apexes()[usize::from((mode >> 1) & 3)];
    let client_serial = (mode & 8 != 0).then(|| u32::from_be_bytes([*s0, *s1, *s2, *s3]));
    let probe_after_done = mode & 0x80 != 0;
    let limits = TransferLimits {
        max_records: 4 << (limit_bits & 7),
        max_octets: 256 << ((limit_bits >> 3) & 7),
    };
    let messages = messages(rest);
    let id = messages
        .first()
        .and_then(|m| m.first_chunk::<2>())
        .map_or(0, |id| u16::from_be_bytes(*id));

    for msg in &messages {
        check_single(msg, id, apex);
    }

    let mut reader = TransferReader::new(apex.clone(), qtype, id, client_serial, limits);
    let mut accepted = 0usize;
    let mut octets = 0usize;
    let mut done = false;
    let mut failed = false;
    let mut probed = false;
    for msg in &messages {
        match reader.feed(msg) {
            Ok(progress) => {
                accepted += 1;
                octets += msg.len();
                assert_eq!(reader.messages(), accepted, "messages counted");
                assert!(octets <= limits.max_octets, "{octets} octets accepted");
                assert!(
                    reader.records() <= limits.max_records,
                    "{} records accepted",
                    reader.records()
                );
                if progress == Progress::Done {
                    done = true;
                    break;
                }
            }
            Err(_) => {
                failed = true;
                // After an error the transfer is over.
                assert!(
                    reader.feed(msg).is_err(),
                    "a message accepted after an error"
                );
                break;
            }
        }
    }
    if done && probe_after_done {
        let again = messages.last().copied().unwrap_or_default();
        assert!(reader.feed(again).is_err(), "a message accepted after Done");
        probed = true;
    }
    let result = reader.finish();
    match &result {
        Ok(r) => {
            assert!(!failed && !probed, "finish succeeds after an error: {r:?}");
            if !done {
                assert!(
                    matches!(r, TransferResult::RetryOverTcp { .. }),
                    "finish succeeds before Done: {r:?}"
                );
            }
            check_result(r, qtype, apex, client_serial, &limits);
        }
        Err(e) => {
            assert!(!done || probed, "finish fails after Done: {e}");
        }
    }
});
