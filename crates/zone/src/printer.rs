//! Writes records as a master file that BIND, Knot and NSD read back.
//!
//! Every name is absolute and there are no directives, so the file does not
//! depend on `$ORIGIN` or `$TTL` handling; each record is one line
//! `owner TTL CLASS TYPE data`. The SOA comes first (RFC 1035 §5.2: a zone file
//! starts with it), then the rest in canonical order (RFC 4034 §6), which keeps
//! each owner's records together and makes the output stable for diffing.

use core::fmt;

use bulwark_proto::{Name, Record, Rtype};

/// Writes one record as a line, newline included.
pub fn write_record<W: fmt::Write + ?Sized>(out: &mut W, record: &Record) -> fmt::Result {
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

/// Records the printer reads by position: a slice of them, or a list that
/// makes each one when asked (a signer's compact signatures).
pub trait PrintableRecords {
    fn count(&self) -> usize;
    fn owner(&self, i: usize) -> Option<&Name>;
    fn rtype(&self, i: usize) -> Rtype;
    /// Appends record `i`'s RDATA in wire form, which orders an RRset.
    fn write_rdata_wire(&self, i: usize, out: &mut Vec<u8>);
    /// Writes record `i` as one line (see [`write_record`]).
    fn write_line(&self, i: usize, out: &mut dyn fmt::Write) -> fmt::Result;
}

impl PrintableRecords for [Record] {
    fn count(&self) -> usize {
        self.len()
    }

    fn owner(&self, i: usize) -> Option<&Name> {
        self.get(i).map(|r| &r.owner)
    }

    fn rtype(&self, i: usize) -> Rtype {
        self.get(i).map_or(Rtype(0), Record::rtype)
    }

    fn write_rdata_wire(&self, i: usize, out: &mut Vec<u8>) {
        if let Some(r) = self.get(i) {
            r.rdata.write_wire(out);
        }
    }

    fn write_line(&self, i: usize, out: &mut dyn fmt::Write) -> fmt::Result {
        match self.get(i) {
            Some(r) => write_record(out, r),
            None => Ok(()),
        }
    }
}

/// (not SOA, canonical owner key, type, position): where one record goes
/// before its RRset is ordered by data.
type PrintKey = (bool, Vec<u8>, Rtype, usize);

/// Writes the records as a complete master file: SOA first, then canonical
/// order: owner (RFC 4034 §6.1), then type, then data (§6.3 orders an RRset
/// by its wire form). Each record's sort key is built once, with the owner as
/// a memcmp-able canonical key, so a large zone sorts quickly.
pub fn write_zone<W: fmt::Write>(out: &mut W, records: &[Record]) -> fmt::Result {
    write_lines(out, records, &print_order(records))
}

/// The positions of `records` in the order [`write_zone`] prints them; a
/// caller may format slices of it on several threads with [`write_lines`].
pub fn print_order<R: PrintableRecords + ?Sized>(records: &R) -> Vec<usize> {
    let mut sorted: Vec<PrintKey> = (0..records.count())
        .filter_map(|i| {
            let rtype = records.rtype(i);
            let owner = records.owner(i)?;
            Some((rtype != Rtype::SOA, owner.canonical_sort_key(), rtype, i))
        })
        .collect();
    sorted.sort_unstable();
    // Most RRsets hold one record: their data is encoded for ordering only
    // where an RRset has several. Within one, the stable sort keeps equal
    // data in input order.
    for rrset in sorted.chunk_by_mut(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2) {
        if rrset.len() > 1 {
            rrset.sort_by_cached_key(|&(.., i)| {
                let mut wire = Vec::new();
                records.write_rdata_wire(i, &mut wire);
                wire
            });
        }
    }
    sorted.into_iter().map(|(.., i)| i).collect()
}

/// Writes the records at `positions`, one line each, in that order.
pub fn write_lines<W: fmt::Write, R: PrintableRecords + ?Sized>(
    out: &mut W,
    records: &R,
    positions: &[usize],
) -> fmt::Result {
    for &i in positions {
        records.write_line(i, out)?;
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
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
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
    fn each_rrset_is_ordered_by_data_equal_data_in_input_order() {
        let first = [
            rec("b.example.", 60, 1, &[192, 0, 2, 9]),
            rec("example.", 300, 6, &[0; 22]),
            rec("b.example.", 60, 1, &[192, 0, 2, 1]),
        ];
        let second = [
            rec("a.example.", 60, 1, &[192, 0, 2, 5]),
            rec("b.example.", 60, 1, &[192, 0, 2, 3]),
            rec("b.example.", 60, 1, &[192, 0, 2, 1]),
        ];
        let whole: Vec<Record> = first.iter().chain(&second).cloned().collect();
        let printed = print_zone(&whole);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(
            lines[1..],
            [
                "a.example. 60 IN A \\# 4 C0000205",
                "b.example. 60 IN A \\# 4 C0000201",
                "b.example. 60 IN A \\# 4 C0000201",
                "b.example. 60 IN A \\# 4 C0000203",
                "b.example. 60 IN A \\# 4 C0000209",
            ]
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
