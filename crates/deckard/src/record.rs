//! One record or question line of an entry's `SECTION`, in zone-file syntax:
//! `owner [TTL] [CLASS] TYPE data` (TTL and class in either order) and
//! `owner [CLASS] TYPE`. The owner and the record data are read by
//! bulwark-proto (`Name::from_presentation`, `Rdata::from_text`): the
//! scenarios exercise bulwark's own presentation parser. A relative name is
//! completed with the origin (`.` unless `$ORIGIN` says otherwise), as
//! Deckard does.

use bulwark_proto::message::Question;
use bulwark_proto::{Class, Name, Rdata, Record, Rtype};

/// A record line. `default_ttl` applies when the line has none (Deckard: 3600).
pub fn parse_record(line: &str, origin: &Name, default_ttl: u32) -> Result<Record, String> {
    parse_record_with(line, origin, default_ttl, false).map(|(r, _)| r)
}

/// [`parse_record`], and where bulwark-proto refuses data that Deckard
/// (dnspython) and the resolvers accept, the record read another way, with a
/// note saying what bulwark-proto lacks (see [`lenient_rdata`]).
pub fn parse_record_lenient(
    line: &str,
    origin: &Name,
    default_ttl: u32,
) -> Result<(Record, Option<String>), String> {
    parse_record_with(line, origin, default_ttl, true)
}

fn parse_record_with(
    line: &str,
    origin: &Name,
    default_ttl: u32,
    lenient: bool,
) -> Result<(Record, Option<String>), String> {
    let head = Head::read(line, origin, true)?;
    let rtype = head.rtype;
    // Zone-file grouping (RFC 1035 §5.1): the lexer's business, which
    // `Rdata::from_text` leaves to its caller.
    let data = without_parentheses(head.rest.trim());
    let data = data.trim();
    if data.is_empty() {
        return Err(format!("no record data after the type {rtype}"));
    }
    let (rdata, note) = match Rdata::from_text(rtype, data, origin) {
        Ok(r) => (r, None),
        Err(e) => {
            let strict = format!("{rtype} data {data:?}: {e}");
            match lenient
                .then(|| lenient_rdata(rtype, data, origin))
                .flatten()
            {
                Some((r, why)) => (r, Some(format!("{strict}; {why}"))),
                None => return Err(strict),
            }
        }
    };
    let record = Record {
        owner: head.owner,
        class: head.class.unwrap_or(Class::IN),
        ttl: head.ttl.unwrap_or(default_ttl),
        rdata,
    };
    Ok((record, note))
}

/// A question line: `owner [CLASS] TYPE`.
pub fn parse_question(line: &str, origin: &Name) -> Result<Question, String> {
    let head = Head::read(line, origin, false)?;
    if !head.rest.trim().is_empty() {
        return Err(format!(
            "unexpected {:?} after the question's type",
            head.rest.trim()
        ));
    }
    Ok(Question {
        qname: head.owner,
        qtype: head.rtype,
        qclass: head.class.unwrap_or(Class::IN),
    })
}

/// What the scenarios write that `Rdata::from_text` refuses, read the way
/// dnspython reads it, with what was done:
///
/// - base64 with surplus padding (`UNUSABLE==`, a deliberately unusable
///   key or signature): read with the padding corrected;
/// - a DS whose digest length does not fit its digest type (a deliberately
///   bad trust anchor): bulwark-proto refuses it in text and on the wire;
///   kept as opaque data of type DS.
pub fn lenient_rdata(rtype: Rtype, data: &str, origin: &Name) -> Option<(Rdata, String)> {
    if data.ends_with('=') {
        let fields: Vec<&str> = data.split_whitespace().collect();
        if let Some((last, head)) = fields.split_last() {
            let mut b64 = last.trim_end_matches('=').to_string();
            while b64.len() % 4 != 0 {
                b64.push('=');
            }
            let fixed = format!("{} {b64}", head.join(" "));
            if let Ok(r) = Rdata::from_text(rtype, &fixed, origin) {
                return Some((r, "read with the base64 padding corrected".to_string()));
            }
        }
    }
    if rtype == Rtype::DS || rtype == Rtype::CDS {
        let fields: Vec<&str> = data.split_whitespace().collect();
        let key_tag: u16 = fields.first()?.parse().ok()?;
        let algorithm =
            Rdata::from_text(Rtype::DS, &format!("0 {} 0 00", fields.get(1)?), origin).ok()?;
        let Rdata::Ds(a) = algorithm else { return None };
        let digest_type: u8 = fields.get(2)?.parse().ok()?;
        let digest = decode_hex(&fields.get(3..)?.concat())?;
        let mut wire = key_tag.to_be_bytes().to_vec();
        wire.push(a.algorithm);
        wire.push(digest_type);
        wire.extend_from_slice(&digest);
        return Some((
            Rdata::Unknown { rtype, data: wire },
            "kept as opaque data (digest length does not fit the digest type)".to_string(),
        ));
    }
    None
}

/// `text` without the parentheses that are not inside double quotes.
fn without_parentheses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    let mut escaped = false;
    for c in text.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                out.push(c);
                continue;
            }
            '"' if !escaped => quoted = !quoted,
            '(' | ')' if !quoted && !escaped => {
                out.push(' ');
                escaped = false;
                continue;
            }
            _ => {}
        }
        escaped = false;
        out.push(c);
    }
    out
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect()
}

/// The fields before the record data.
struct Head<'a> {
    owner: Name,
    ttl: Option<u32>,
    class: Option<Class>,
    rtype: Rtype,
    /// The rest of the line after the type, spacing and quotes intact.
    rest: &'a str,
}

impl<'a> Head<'a> {
    fn read(line: &'a str, origin: &Name, with_ttl: bool) -> Result<Head<'a>, String> {
        let mut rest = line.trim_start();
        let owner_text = next_token(&mut rest).ok_or("an empty line")?;
        let owner = Name::from_presentation(owner_text.as_bytes(), Some(origin))
            .map_err(|e| format!("owner {owner_text:?}: {e}"))?;
        let mut ttl = None;
        let mut class = None;
        loop {
            let token =
                next_token(&mut rest).ok_or_else(|| format!("no type after {owner_text:?}"))?;
            if with_ttl && ttl.is_none() && token.bytes().all(|b| b.is_ascii_digit()) {
                ttl = Some(
                    token
                        .parse()
                        .map_err(|_| format!("TTL {token:?} does not fit 32 bits"))?,
                );
                continue;
            }
            // A class only when a type still follows (`x. ANY` asks for
            // the type ANY).
            if class.is_none() && peek_token(rest).is_some() {
                if let Ok(c) = Class::from_text(token.as_bytes()) {
                    class = Some(c);
                    continue;
                }
            }
            let rtype = Rtype::from_text(token.as_bytes())
                .map_err(|_| format!("unknown record type {token:?}"))?;
            return Ok(Head {
                owner,
                ttl,
                class,
                rtype,
                rest,
            });
        }
    }
}

/// Takes the next whitespace-separated token off the front of `rest`.
fn next_token<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start();
    if s.is_empty() {
        *rest = s;
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let (token, tail) = s.split_at(end);
    *rest = tail;
    Some(token)
}

fn peek_token(rest: &str) -> Option<&str> {
    let mut r = rest;
    next_token(&mut r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Name {
        Name::root()
    }

    #[test]
    fn owner_ttl_class_type_data_in_zone_file_order() {
        let r = parse_record("fail.net\t10\tA\t1.1.1.2", &root(), 3600).unwrap();
        assert_eq!(r.owner, "fail.net.".parse().unwrap());
        assert_eq!(r.ttl, 10);
        assert_eq!(r.class, Class::IN);
        assert_eq!(r.rdata, Rdata::A("1.1.1.2".parse().unwrap()));
        let r = parse_record("example.com. IN 300 MX 10 mx", &root(), 3600).unwrap();
        assert_eq!(r.ttl, 300);
        assert_eq!(r.to_string(), "example.com.\t300\tIN\tMX\t10 mx.");
        let r = parse_record(". SOA bla bla 1 2 3 4 5", &root(), 3600).unwrap();
        assert_eq!(r.ttl, 3600);
        assert_eq!(r.rtype(), Rtype::SOA);
    }

    #[test]
    fn txt_keeps_its_quoted_spaces() {
        let r = parse_record("t. TXT \"a  b\" c", &root(), 0).unwrap();
        assert_eq!(r.rdata, Rdata::Txt(vec![b"a  b".to_vec(), b"c".to_vec()]));
    }

    #[test]
    fn questions_take_an_optional_class() {
        let q = parse_question("www.example.com. IN A", &root()).unwrap();
        assert_eq!((q.qtype, q.qclass), (Rtype::A, Class::IN));
        let q = parse_question("net\tNS", &root()).unwrap();
        assert_eq!(q.qname, "net.".parse().unwrap());
        assert_eq!(q.qtype, Rtype::NS);
        let q = parse_question("x. ANY", &root()).unwrap();
        assert_eq!((q.qtype, q.qclass), (Rtype::ANY, Class::IN));
        let q = parse_question("x. CH TXT", &root()).unwrap();
        assert_eq!((q.qtype, q.qclass), (Rtype::TXT, Class::CH));
        assert!(parse_question("x. IN A 1.2.3.4", &root()).is_err());
    }

    #[test]
    fn what_bulwark_proto_refuses_is_read_leniently_with_a_note() {
        // Parentheses group as in a zone file.
        assert_eq!(
            parse_record("x. DNSKEY 257 3 8 AwEAAcUl ( FV1vhmqx )", &root(), 0).unwrap(),
            parse_record("x. DNSKEY 257 3 8 AwEAAcUlFV1vhmqx", &root(), 0).unwrap()
        );
        let txt = parse_record("t. TXT \"(a)\" ( b )", &root(), 0).unwrap();
        assert_eq!(txt.rdata, Rdata::Txt(vec![b"(a)".to_vec(), b"b".to_vec()]));
        assert!(parse_record(
            "x. RRSIG A 253 1 0 20170815084229 20170716084229 1 x. UNUSABLE==",
            &root(),
            0
        )
        .is_err());
        let (r, note) = parse_record_lenient(
            "test. RRSIG SOA 253 1 86400 20170815084229 20170716084229 12062 test. UNUSABLE==",
            &root(),
            0,
        )
        .unwrap();
        assert_eq!(r.rtype(), Rtype::RRSIG);
        assert!(note.unwrap().contains("padding"));
        let (r, note) = parse_record_lenient(". DS 49060 RSASHA256 1 E7B1EB56D7D5791B3D45630FEAA9C823DB84B385ACEEAC5F44DD08885C36700F", &root(), 0).unwrap();
        let mut wire = vec![0xbf, 0xa4, 8, 1];
        wire.extend_from_slice(&[0xe7, 0xb1, 0xeb, 0x56]);
        assert_eq!(r.rdata.to_wire()[..8], wire[..]);
        assert_eq!(r.rdata.to_wire().len(), 4 + 32);
        assert!(note.unwrap().contains("opaque"));
        // Nothing to forgive: no note.
        assert_eq!(
            parse_record_lenient("x. A 192.0.2.1", &root(), 0)
                .unwrap()
                .1,
            None
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(parse_record("x. A", &root(), 0)
            .unwrap_err()
            .contains("no record data"));
        assert!(parse_record("x. BOGUS 1", &root(), 0)
            .unwrap_err()
            .contains("unknown record type"));
        assert!(parse_record("x. A 300.1.1.1", &root(), 0)
            .unwrap_err()
            .contains("A data"));
    }
}
