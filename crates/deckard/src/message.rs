//! A DNS message held whole, as the runner compares and builds them: the
//! header, the question, the three record sections with typed record data,
//! and the OPT record's fields. Read from the wire with bulwark-proto's
//! `MessageView` and `Rdata::read`, written with its `MessageBuilder`.

use std::fmt;

use bulwark_proto::message::{append_additional, Flags, MessageBuilder, Question, Section};
use bulwark_proto::wire::Reader;
use bulwark_proto::{Class, MessageView, Name, Opcode, Rcode, Rdata, Record, Rtype};

/// The largest message (a TCP one).
const MAX_MESSAGE: usize = 65535;
/// RFC 3225: the DNSSEC OK bit among the OPT record's flags.
const DO_BIT: u16 = 0x8000;

/// The OPT record of a message (RFC 6891 §6.1.2), apart from the extended
/// rcode bits, which [`Message::rcode`] holds whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edns {
    pub version: u8,
    /// The requestor's UDP payload size (the OPT CLASS field).
    pub payload: u16,
    pub dnssec_ok: bool,
    /// The other 15 flag bits.
    pub z: u16,
    /// Options as (code, data), in order.
    pub options: Vec<(u16, Vec<u8>)>,
}

impl Edns {
    /// Deckard's default for every entry: version 0, 4096 octets.
    pub fn deckard_default() -> Edns {
        Edns {
            version: 0,
            payload: 4096,
            dnssec_ok: false,
            z: 0,
            options: Vec::new(),
        }
    }

    /// The flags half of the OPT TTL.
    pub fn flags(&self) -> u16 {
        (self.z & !DO_BIT) | if self.dnssec_ok { DO_BIT } else { 0 }
    }
}

/// A whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: u16,
    pub opcode: Opcode,
    /// The full response code: header bits and the OPT's extended bits.
    pub rcode: Rcode,
    pub flags: Flags,
    pub question: Vec<Question>,
    pub answer: Vec<Record>,
    pub authority: Vec<Record>,
    /// Without the OPT record, which is [`Message::edns`].
    pub additional: Vec<Record>,
    pub edns: Option<Edns>,
}

impl Default for Message {
    fn default() -> Message {
        Message {
            id: 0,
            opcode: Opcode::QUERY,
            rcode: Rcode::NOERROR,
            flags: Flags::default(),
            question: Vec::new(),
            answer: Vec::new(),
            authority: Vec::new(),
            additional: Vec::new(),
            edns: None,
        }
    }
}

impl Message {
    /// Reads a message: `MessageView` checks its structure, each record's
    /// data is read as its type says (`Rdata::read`, following compression
    /// pointers; opaque if that fails), and OPT becomes [`Message::edns`].
    pub fn from_wire(bytes: &[u8]) -> Result<Message, String> {
        let view = MessageView::parse(bytes).map_err(|e| e.to_string())?;
        let header = *view.header();
        let mut message = Message {
            id: header.id,
            opcode: header.opcode,
            rcode: view.rcode(),
            flags: header.flags,
            question: view.questions().collect(),
            ..Message::default()
        };
        for (section, records) in [
            (Section::Answer, &mut message.answer),
            (Section::Authority, &mut message.authority),
            (Section::Additional, &mut message.additional),
        ] {
            for rv in view.records(section) {
                if rv.rtype == Rtype::OPT {
                    continue;
                }
                // Data bulwark-proto refuses (a DS digest whose length does
                // not fit its type, say) is kept opaque, as a scenario's own
                // records are (`record::lenient_rdata`), so it still compares.
                let mut reader = Reader::at(bytes, rv.rdata_offset);
                let rdata =
                    Rdata::read(rv.rtype, &mut reader, rv.rdata.len()).unwrap_or_else(|_| {
                        Rdata::Unknown {
                            rtype: rv.rtype,
                            data: rv.rdata.to_vec(),
                        }
                    });
                records.push(Record {
                    owner: rv.owner,
                    class: rv.class,
                    ttl: rv.ttl,
                    rdata,
                });
            }
        }
        message.edns = view.edns().map(|e| Edns {
            version: e.version,
            payload: e.udp_payload_size,
            dnssec_ok: e.dnssec_ok,
            z: e.z,
            options: split_options(e.option_bytes()),
        });
        Ok(message)
    }

    /// Writes the message: names compressed where RFC 3597 §4 allows, OPT
    /// last, carrying the upper bits of an extended rcode. Without EDNS an
    /// extended rcode keeps only its low four bits, as on the wire it must.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut b = MessageBuilder::new(&mut buf, MAX_MESSAGE);
        {
            let h = b.header_mut();
            h.id = self.id;
            h.flags = self.flags;
            h.opcode = self.opcode;
        }
        b.set_rcode(self.rcode);
        for q in &self.question {
            // 65535 octets hold whatever a scenario writes.
            let _ = b.push_question(&q.qname, q.qtype, q.qclass);
        }
        for (section, records) in [
            (Section::Answer, &self.answer),
            (Section::Authority, &self.authority),
            (Section::Additional, &self.additional),
        ] {
            for r in records {
                let _ = b.push_record(
                    section,
                    &r.owner,
                    r.rtype(),
                    r.class,
                    r.ttl,
                    &r.rdata.to_wire(),
                );
            }
        }
        // An extended rcode without OPT is reported but the header is written.
        let _ = b.finish(None);
        if let Some(e) = &self.edns {
            let ttl = (u32::from(self.rcode.extended_bits()) << 24)
                | (u32::from(e.version) << 16)
                | u32::from(e.flags());
            let mut rdata = Vec::new();
            for (code, data) in &e.options {
                rdata.extend_from_slice(&code.to_be_bytes());
                rdata.extend_from_slice(
                    &u16::try_from(data.len()).unwrap_or(u16::MAX).to_be_bytes(),
                );
                rdata.extend_from_slice(data);
            }
            let _ = append_additional(
                &mut buf,
                MAX_MESSAGE,
                &Name::root(),
                Rtype::OPT,
                Class(e.payload),
                ttl,
                &rdata,
            );
        }
        buf
    }

    /// Every record of the three sections.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.answer
            .iter()
            .chain(&self.authority)
            .chain(&self.additional)
    }

    /// A SERVFAIL answer to `query` as dnspython's `make_response` builds it
    /// (what Deckard sends when the scenario has no answer): same id and
    /// opcode, QR, RD copied, the question echoed, EDNS if the query had it.
    pub fn servfail_for(query: &Message) -> Message {
        Message {
            id: query.id,
            opcode: query.opcode,
            rcode: Rcode::SERVFAIL,
            flags: Flags {
                qr: true,
                rd: query.flags.rd,
                ..Flags::default()
            },
            question: query.question.clone(),
            edns: query.edns.as_ref().map(|_| Edns {
                version: 0,
                payload: bulwark_proto::message::DEFAULT_UDP_PAYLOAD,
                dnssec_ok: false,
                z: 0,
                options: Vec::new(),
            }),
            ..Message::default()
        }
    }
}

/// OPT RDATA as (code, data) pairs; a malformed tail is dropped
/// (`MessageView` has already refused such a message).
fn split_options(mut bytes: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((head, rest)) = bytes.split_first_chunk::<4>() {
        let [c0, c1, l0, l1] = *head;
        let len = usize::from(u16::from_be_bytes([l0, l1]));
        let Some(data) = rest.get(..len) else { break };
        out.push((u16::from_be_bytes([c0, c1]), data.to_vec()));
        bytes = rest.get(len..).unwrap_or(&[]);
    }
    out
}

/// The header flags as dnspython writes them (`QR AA TC RD RA AD CD`), the
/// form Deckard compares for `MATCH flags`.
pub fn flags_text(f: &Flags) -> String {
    let names = [
        (f.qr, "QR"),
        (f.aa, "AA"),
        (f.tc, "TC"),
        (f.rd, "RD"),
        (f.ra, "RA"),
        (f.ad, "AD"),
        (f.cd, "CD"),
    ];
    let on: Vec<&str> = names
        .iter()
        .filter(|(set, _)| *set)
        .map(|(_, n)| *n)
        .collect();
    on.join(" ")
}

/// A record in one line: `owner TTL CLASS TYPE data`.
pub fn record_text(r: &Record) -> String {
    r.to_string().replace('\t', " ")
}

/// A question in one line: `name CLASS TYPE`.
pub fn question_text(q: &Question) -> String {
    format!("{} {} {}", q.qname, q.qclass, q.qtype)
}

impl fmt::Display for Message {
    /// dig-like: a header line, then each section, one record a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "id {} opcode {} rcode {} flags [{}]",
            self.id,
            self.opcode,
            self.rcode,
            flags_text(&self.flags)
        )?;
        match &self.edns {
            Some(e) => write!(
                f,
                " edns {} payload {}{}",
                e.version,
                e.payload,
                if e.dnssec_ok { " DO" } else { "" }
            )?,
            None => write!(f, " no edns")?,
        }
        // RFC 8914's Extended DNS Error says why a resolver failed.
        for (code, data) in self.edns.iter().flat_map(|e| &e.options) {
            if let (15, Some((info, text))) = (*code, data.split_first_chunk::<2>()) {
                write!(
                    f,
                    " ede {} {:?}",
                    u16::from_be_bytes(*info),
                    String::from_utf8_lossy(text)
                )?;
            }
        }
        writeln!(f)?;
        writeln!(f, ";QUESTION")?;
        for q in &self.question {
            writeln!(f, "{}", question_text(q))?;
        }
        for (name, records) in [
            (";ANSWER", &self.answer),
            (";AUTHORITY", &self.authority),
            (";ADDITIONAL", &self.additional),
        ] {
            writeln!(f, "{name}")?;
            for r in records {
                writeln!(f, "{}", record_text(r))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(owner: &str, rtype: Rtype, data: &str) -> Record {
        Record {
            owner: owner.parse().unwrap(),
            class: Class::IN,
            ttl: 3600,
            rdata: Rdata::from_text(rtype, data, &Name::root()).unwrap(),
        }
    }

    #[test]
    fn a_message_survives_the_wire_with_an_extended_rcode_in_opt() {
        let m = Message {
            id: 0x1234,
            rcode: Rcode::BADVERS,
            flags: Flags {
                qr: true,
                aa: true,
                ..Flags::default()
            },
            question: vec![Question {
                qname: "www.Example.com.".parse().unwrap(),
                qtype: Rtype::A,
                qclass: Class::IN,
            }],
            answer: vec![record("www.example.com.", Rtype::A, "192.0.2.1")],
            authority: vec![record("example.com.", Rtype::NS, "ns.example.com.")],
            additional: vec![record("ns.example.com.", Rtype::AAAA, "2001:db8::1")],
            edns: Some(Edns {
                dnssec_ok: true,
                options: vec![(3, b"ns1".to_vec())],
                ..Edns::deckard_default()
            }),
            ..Message::default()
        };
        let wire = m.to_wire();
        // Header: id, QR|AA, rcode low bits 0 (16 = 0x10: only the high part).
        assert_eq!(&wire[..4], &[0x12, 0x34, 0x84, 0x00]);
        let back = Message::from_wire(&wire).unwrap();
        assert_eq!(back, m);
        assert!(back.question[0].qname.eq_exact(&m.question[0].qname));
    }

    #[test]
    fn servfail_echoes_id_question_rd_and_edns() {
        let q = Message {
            id: 7,
            flags: Flags {
                rd: true,
                cd: true,
                ..Flags::default()
            },
            question: vec![Question {
                qname: "x.".parse().unwrap(),
                qtype: Rtype::NS,
                qclass: Class::IN,
            }],
            edns: Some(Edns::deckard_default()),
            ..Message::default()
        };
        let s = Message::servfail_for(&q);
        assert_eq!(s.id, 7);
        assert_eq!(flags_text(&s.flags), "QR RD");
        assert_eq!(s.rcode, Rcode::SERVFAIL);
        assert_eq!(s.question, q.question);
        assert!(s.edns.is_some());
    }
}
