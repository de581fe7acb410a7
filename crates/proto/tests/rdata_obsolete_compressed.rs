//! The obsolete RFC 1035 mailbox types (MB, MG, MR, MD, MF, MINFO) are kept as
//! opaque data, but their names may be compressed in a message like any RFC 1035
//! type's, and our builder compresses them: reading must expand them.
//! Found by the `message_roundtrip` fuzz target.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bulwark_proto::message::{MessageBuilder, MessageView, Section};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, Name, Rdata, Rtype};

fn read_back(rtype: Rtype, wire: &[u8]) -> Rdata {
    let owner: Name = "mail.example.".parse().unwrap();
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 512);
    b.push_record(Section::Answer, &owner, rtype, Class::IN, 60, wire)
        .unwrap();
    b.finish(None).unwrap();
    let view = MessageView::parse(&buf).unwrap();
    let rr = view.answers().next().unwrap();
    let mut r = Reader::at(&buf, rr.rdata_offset);
    Rdata::read(rr.rtype, &mut r, rr.rdata.len()).unwrap()
}

#[test]
fn compressed_mailbox_names_read_back_uncompressed() {
    let mb = b"\x04mail\x07example\x00";
    for rtype in [Rtype::MB, Rtype::MG, Rtype::MR, Rtype::MD, Rtype::MF] {
        assert_eq!(read_back(rtype, mb).to_wire(), mb, "{rtype}");
    }
    let minfo = b"\x02rm\x07example\x00\x02em\x07example\x00";
    assert_eq!(read_back(Rtype::MINFO, minfo).to_wire(), minfo);
}
