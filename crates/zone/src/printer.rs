//! Writes records as a master file that BIND, Knot and NSD read back.
//!
//! Every name is absolute and there are no directives, so the file does not
//! depend on `$ORIGIN` or `$TTL` handling; each record is one line
//! `owner TTL CLASS TYPE data`. The SOA comes first (RFC 1035 §5.2: a zone file
//! starts with it), then the rest in canonical order (RFC 4034 §6), which keeps
//! each owner's records together and makes the output stable for diffing.

use core::fmt;

use bulwark_proto::{Record, Rtype};

/// Writes one record as a line, newline included.
pub fn write_record<W: fmt::Write>(out: &mut W, record: &Record) -> fmt::Result {
    writeln!(
        out,
        "{} {} {} {} {}",
        record.owner,
        record.ttl,
        record.class,
        record.rtype(),
        record.rdata
    )
}

/// (not SOA, canonical owner key, type, wire RDATA, position): the sort key of
/// one record.
type PrintKey = (bool, Vec<u8>, Rtype, Vec<u8>, usize);

/// Writes the records as a complete master file: SOA first, then canonical
/// order: owner (RFC 4034 §6.1), then type, then data (§6.3 orders an RRset
/// by its wire form). Each record's sort key is built once, with the owner as
/// a memcmp-able canonical key, so a large zone sorts quickly.
pub fn write_zone<W: fmt::Write>(out: &mut W, records: &[Record]) -> fmt::Result {
    let mut sorted: Vec<PrintKey> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut wire = Vec::new();
            r.rdata.write_wire(&mut wire);
            (
                r.rtype() != Rtype::SOA,
                r.owner.canonical_sort_key(),
                r.rtype(),
                wire,
                i,
            )
        })
        .collect();
    sorted.sort_unstable();
    for (.., i) in sorted {
        if let Some(record) = records.get(i) {
            write_record(out, record)?;
        }
    }
    Ok(())
}

/// The records as master-file text; see [`write_zone`].
pub fn print_zone(records: &[Record]) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_zone(&mut out, records);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use bulwark_proto::rdata::Rdata;
    use bulwark_proto::{Class, Name};

    fn rec(owner: &str, ttl: u32, rtype: u16, data: &[u8]) -> Record {
        Record {
            owner: owner.parse::<Name>().unwrap(),
            class: Class::IN,
            ttl,
            rdata: Rdata::Unknown {
                rtype: Rtype(rtype),
                data: data.to_vec(),
            },
        }
    }

    #[test]
    fn soa_first_then_canonical_order_one_line_each() {
        let records = vec![
            rec("b.example.", 60, 1, &[192, 0, 2, 2]),
            rec("A.example.", 60, 1, &[192, 0, 2, 9]),
            rec("a.example.", 60, 1, &[192, 0, 2, 1]),
            rec("example.", 300, 2, &[0]),
            rec(
                "example.",
                300,
                6,
                &[
                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                ],
            ),
            rec("*.example.", 5, 65280, &[]),
        ];
        assert_eq!(
            print_zone(&records),
            "example. 300 IN SOA \\# 22 00000000000000000000000000000000000000000000\n\
             example. 300 IN NS \\# 1 00\n\
             *.example. 5 IN TYPE65280 \\# 0\n\
             a.example. 60 IN A \\# 4 C0000201\n\
             A.example. 60 IN A \\# 4 C0000209\n\
             b.example. 60 IN A \\# 4 C0000202\n"
        );
    }

    #[test]
    fn names_with_special_characters_are_escaped() {
        let r = rec("a\\.b\\@c\\032.example.", 1, 1, &[1, 2, 3, 4]);
        assert_eq!(
            print_zone(&[r]),
            "a\\.b\\@c\\032.example. 1 IN A \\# 4 01020304\n"
        );
    }
}
