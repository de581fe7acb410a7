//! `MessageView::parse` on arbitrary bytes. Parsing must never panic; when a
//! message is accepted, every accessor must be usable and agree with the header
//! (the view promised the structure was checked from end to end).
#![no_main]

use bulwark_proto::message::{MessageView, Section};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Name, Rdata};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = MessageView::parse(data) else {
        return;
    };
    let header = *view.header();
    assert_eq!(view.as_bytes(), data);

    // Every counted question is readable, and the first is the one kept.
    let questions: Vec<_> = view.questions().collect();
    assert_eq!(questions.len(), usize::from(header.qdcount));
    assert_eq!(view.question().as_ref(), questions.first());
    assert_eq!(view.sole_question().is_some(), header.qdcount == 1);
    // The sole question lent in place is the one copied out.
    let sole = view.sole_question();
    let lent = view.sole_question_wire();
    assert_eq!(sole.is_some(), lent.is_some());
    if let (Some(q), Some(w)) = (&sole, lent) {
        assert_eq!(q.qname.as_wire(), w.qname);
        assert_eq!((q.qtype, q.qclass), (w.qtype, w.qclass));
    }
    assert_eq!(view.sole_qtype(), sole.as_ref().map(|q| q.qtype));
    for q in &questions {
        let _ = (
            q.qname.to_string(),
            q.qtype.to_string(),
            q.qclass.to_string(),
        );
    }

    // Every counted record is readable; its rdata lies inside the message.
    let counts = [header.ancount, header.nscount, header.arcount];
    let mut opt_seen = 0usize;
    for (section, count) in [Section::Answer, Section::Authority, Section::Additional]
        .into_iter()
        .zip(counts)
    {
        let mut n = 0usize;
        for rr in view.records(section) {
            n += 1;
            let end = rr.rdata_offset + rr.rdata.len();
            assert_eq!(data.get(rr.rdata_offset..end), Some(rr.rdata));
            assert!(rr.offset < rr.rdata_offset);
            let _ = rr.owner.to_string();
            if rr.rtype == bulwark_proto::Rtype::OPT {
                opt_seen += 1;
            }
            // Typed rdata (following compression pointers) must not panic, and
            // what it reads must print and write without panicking.
            let mut r = Reader::at(data, rr.rdata_offset);
            if let Ok(rdata) = Rdata::read(rr.rtype, &mut r, rr.rdata.len()) {
                let _ = rdata.to_string();
                let _ = rdata.to_wire();
                let mut canonical = Vec::new();
                rdata.write_canonical(&mut canonical);
                let _ = rdata.target_name();
                // Presentation round trip: what we print, we read back as the
                // same data (a zone file or `dig`-style output depends on it).
                let printed = rdata.to_string();
                let reread = Rdata::from_text(rr.rtype, &printed, &Name::root());
                assert_eq!(
                    reread.as_ref().map(Rdata::to_wire).ok(),
                    Some(rdata.to_wire()),
                    "{} {printed:?} read back as {reread:?}",
                    rr.rtype,
                );
            }
        }
        assert_eq!(n, usize::from(count));
    }
    assert_eq!(view.answers().count(), usize::from(header.ancount));
    assert_eq!(view.authority().count(), usize::from(header.nscount));
    assert_eq!(view.additional().count(), usize::from(header.arcount));

    // EDNS: present exactly when there was one OPT record; its options iterate
    // to the end of the OPT data.
    assert_eq!(view.edns().is_some(), opt_seen == 1);
    if let Some(edns) = view.edns() {
        let _ = edns.effective_payload();
        let _ = edns.cookie();
        let _ = edns.requests_nsid();
        let mut wire_len = 0usize;
        for option in edns.options() {
            wire_len += option.wire_len();
            let mut out = Vec::new();
            option.write(&mut out);
            assert_eq!(out.len(), option.wire_len());
        }
        assert_eq!(wire_len, edns.option_bytes().len());
    }
    let _ = view.rcode().to_string();

    // TSIG: when present it is the last record of the message.
    if let Some(at) = view.tsig_offset() {
        let tsig = view.tsig().expect("a TSIG offset names a readable record");
        assert_eq!(tsig.offset, at);
        assert_eq!(tsig.rdata_offset + tsig.rdata.len(), data.len());
    }
});
