//! The parser's own tests, with a small stand-in for record data so that they
//! test directives, defaults and diagnostics rather than each type's syntax.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::arithmetic_side_effects
)]

use std::net::Ipv4Addr;

use bulwark_proto::rdata::Soa;

use super::*;

fn err(field: usize, expected: &str) -> RdataTextError {
    RdataTextError {
        field,
        expected: expected.to_owned(),
    }
}

fn u32_field(fields: &[Field<'_>], i: usize) -> Result<u32, RdataTextError> {
    fields
        .get(i)
        .and_then(|f| f.as_str())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| err(i, "a 32-bit integer"))
}

fn name_at(fields: &[Field<'_>], i: usize, origin: &Name) -> Result<Name, RdataTextError> {
    let f = fields.get(i).ok_or_else(|| err(i, "a domain name"))?;
    if f.raw == b"@" {
        return Ok(origin.clone());
    }
    Name::from_presentation(f.raw, Some(origin)).map_err(|_| err(i, "a domain name"))
}

/// A, NS, MX, SOA, TXT (strings kept raw) and `\#` for everything else.
fn fake(rtype: Rtype, fields: &[Field<'_>], origin: &Name) -> Result<Rdata, RdataTextError> {
    let extra = |n: usize| match fields.get(n) {
        Some(_) => Err(err(n, "nothing more")),
        None => Ok(()),
    };
    if fields.first().map(|f| f.raw) == Some(b"\\#") {
        let len: usize = fields
            .get(1)
            .and_then(|f| f.as_str())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| err(1, "a length"))?;
        let hex: String = fields.iter().skip(2).filter_map(|f| f.as_str()).collect();
        let data: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        if data.len() != len {
            return Err(err(2, "as many bytes as the length says"));
        }
        return Ok(Rdata::Unknown { rtype, data });
    }
    match rtype {
        Rtype::A => {
            let a: Ipv4Addr = fields
                .first()
                .and_then(|f| f.as_str())
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| err(0, "an IPv4 address"))?;
            extra(1)?;
            Ok(Rdata::A(a))
        }
        Rtype::NS => {
            let n = name_at(fields, 0, origin)?;
            extra(1)?;
            Ok(Rdata::Ns(n))
        }
        Rtype::MX => {
            let p = u32_field(fields, 0)?;
            let n = name_at(fields, 1, origin)?;
            Ok(Rdata::Mx {
                preference: p as u16,
                exchange: n,
            })
        }
        Rtype::SOA => Ok(Rdata::Soa(Box::new(Soa {
            mname: name_at(fields, 0, origin)?,
            rname: name_at(fields, 1, origin)?,
            serial: u32_field(fields, 2)?,
            refresh: u32_field(fields, 3)?,
            retry: u32_field(fields, 4)?,
            expire: u32_field(fields, 5)?,
            minimum: u32_field(fields, 6)?,
        }))),
        Rtype::TXT => Ok(Rdata::Txt(fields.iter().map(|f| f.raw.to_vec()).collect())),
        _ => Err(err(0, "\\# (only generic data in this test)")),
    }
}

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn origin() -> Name {
    n("example.com.")
}

fn parse(text: &str) -> Vec<Record> {
    match parse_with(fake, text, &origin(), "t.zone") {
        Ok(r) => r,
        Err(d) => panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn errors(text: &str) -> Vec<String> {
    parse_with(fake, text, &origin(), "t.zone")
        .unwrap_err()
        .iter()
        .map(|d| d.to_string())
        .collect()
}

/// Records as "owner ttl class type data" with data via the record's Debug form.
fn summary(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} {:?}",
                r.owner,
                r.ttl,
                r.class,
                r.rtype(),
                r.rdata
            )
        })
        .collect()
}

fn a(s: &str) -> Rdata {
    Rdata::A(s.parse().unwrap())
}

const SOA: &str = "@ SOA ns hostmaster 1 7200 3600 1209600 300\n";

#[test]
fn owner_ttl_class_and_type_in_any_order() {
    let r = parse(&format!(
        "$TTL 1h\n{SOA}www 60 IN A 192.0.2.1\nwww IN 70 A 192.0.2.2\nWWW.example.com. A 192.0.2.3\n"
    ));
    let got: Vec<(String, u32, Class)> = r
        .iter()
        .skip(1)
        .map(|r| (r.owner.to_string(), r.ttl, r.class))
        .collect();
    assert_eq!(
        got,
        vec![
            ("www.example.com.".to_owned(), 60, Class::IN),
            ("www.example.com.".to_owned(), 70, Class::IN),
            ("WWW.example.com.".to_owned(), 3600, Class::IN),
        ]
    );
    assert_eq!(r[3].rdata, a("192.0.2.3"));
}

#[test]
fn blank_start_repeats_the_previous_owner_and_at_is_the_origin() {
    let r = parse(&format!(
        "$TTL 300\n{SOA}\tNS ns\nmail A 192.0.2.9\n  A 192.0.2.10\n"
    ));
    let owners: Vec<String> = r.iter().map(|r| r.owner.to_string()).collect();
    assert_eq!(
        owners,
        vec![
            "example.com.",
            "example.com.",
            "mail.example.com.",
            "mail.example.com."
        ]
    );
    assert_eq!(r[1].rdata, Rdata::Ns(n("ns.example.com.")));
}

#[test]
fn ttl_defaults_follow_rfc2308_and_rfc1035() {
    // $TTL wins over the last explicit TTL.
    let r = parse(&format!("$TTL 100\n{SOA}a 5 A 192.0.2.1\nb A 192.0.2.2\n"));
    assert_eq!(
        r.iter().map(|r| r.ttl).collect::<Vec<_>>(),
        vec![100, 5, 100]
    );
    // Without $TTL, the last explicit TTL carries on.
    let r = parse("@ 50 SOA ns hm 1 2 3 4 300\na A 192.0.2.1\nb 7 A 192.0.2.2\nc A 192.0.2.3\n");
    assert_eq!(
        r.iter().map(|r| r.ttl).collect::<Vec<_>>(),
        vec![50, 50, 7, 7]
    );
    // Without either, the SOA minimum, even for records before the SOA.
    let r = parse(&format!("a A 192.0.2.1\n{SOA}b A 192.0.2.2\n"));
    assert_eq!(
        r.iter().map(|r| r.ttl).collect::<Vec<_>>(),
        vec![300, 300, 300]
    );
    // BIND units in $TTL and in records.
    let r = parse(&format!("$TTL 1h30m\n{SOA}a 1w A 192.0.2.1\n"));
    assert_eq!(
        r.iter().map(|r| r.ttl).collect::<Vec<_>>(),
        vec![5400, 604_800]
    );
}

#[test]
fn no_ttl_and_no_soa_is_an_error_at_the_record() {
    assert_eq!(
        errors("\n  \nwww A 192.0.2.1\n"),
        vec!["t.zone:3:1: no TTL: the record gives none, and there is no $TTL, earlier TTL or SOA to take one from (RFC 2308 §4)"]
    );
}

#[test]
fn origin_directive_changes_relative_names_and_is_relative_itself() {
    let r = parse(&format!(
        "$TTL 1\n{SOA}$ORIGIN sub\nwww A 192.0.2.1\n$ORIGIN other.test.\n@ A 192.0.2.2\nx NS y\n"
    ));
    let got: Vec<String> = r.iter().skip(1).map(|r| r.owner.to_string()).collect();
    assert_eq!(
        got,
        vec!["www.sub.example.com.", "other.test.", "x.other.test."]
    );
    assert_eq!(r[3].rdata, Rdata::Ns(n("y.other.test.")));
}

#[test]
fn multi_line_soa_with_comments_and_crlf() {
    let r = parse(
        "$TTL 60\r\n@ IN SOA ns.example.com. hm.example.com. ( ; start\r\n   2024010101 ; serial\r\n   7200 3600\r\n   1209600 300 )\r\n@ NS ns",
    );
    assert_eq!(r.len(), 2);
    match &r[0].rdata {
        Rdata::Soa(s) => {
            assert_eq!(s.serial, 2_024_010_101);
            assert_eq!(s.minimum, 300);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn generic_type_and_data_round_trip_unknown_types() {
    let r = parse(&format!(
        "$TTL 1\n{SOA}x TYPE65280 \\# 3 ( 0A 0b0C )\ny CLASS1 TYPE1 \\# 4 C0000201\n"
    ));
    assert_eq!(
        r[1].rdata,
        Rdata::Unknown {
            rtype: Rtype(65280),
            data: vec![10, 11, 12]
        }
    );
    assert_eq!(r[2].class, Class::IN);
    assert_eq!(r[2].rtype(), Rtype::A);
}

#[test]
fn generate_expands_owner_ttl_and_data() {
    let r = parse(&format!(
        "$TTL 300\n{SOA}$GENERATE 1-3/2 host$ 60 A 192.0.2.$\n$GENERATE 0-1 ${{10,3,x}} TXT \"v=$ \\$ ${{1}}\"\n"
    ));
    assert_eq!(
        summary(&r[1..]),
        vec![
            "host1.example.com. 60 IN A A(192.0.2.1)",
            "host3.example.com. 60 IN A A(192.0.2.3)",
            "00a.example.com. 300 IN TXT Txt([[118, 61, 48], [36], [49]])",
            "00b.example.com. 300 IN TXT Txt([[118, 61, 49], [36], [50]])",
        ]
    );
}

#[test]
fn generate_errors_are_reported_once_at_the_template() {
    assert_eq!(
        errors(&format!(
            "$TTL 1\n{SOA}$GENERATE 1-100 h$ A 192.0.2.${{0,3,q}}\n"
        )),
        vec!["t.zone:3:22: bad $GENERATE modifier \"${0,3,q}\": expected ${offset[,width[,base]]}"]
    );
    assert_eq!(
        errors(&format!("$TTL 1\n{SOA}$GENERATE 250-260 h$ A 192.0.2.$\n")),
        vec!["t.zone:3:24: bad A data, field 1: expected an IPv4 address"]
    );
    assert_eq!(
        errors(&format!("$TTL 1\n{SOA}$GENERATE 9-1 h$ A 192.0.2.$\n")),
        vec!["t.zone:3:11: $GENERATE range starts at 9, after its end 1"]
    );
}

#[test]
fn errors_name_line_column_and_what_was_expected() {
    let text = "$TTL 300\n\
                @ SOA ns hm 1 2 3 4 5\n\
                www FOO 1.2.3.4\n\
                www 60 IN\n\
                www A 1.2.3\n\
                \x20CH A 192.0.2.1\n\
                x 1h30 A 192.0.2.1\n\
                $BOGUS 1\n\
                y A 192.0.2.1 extra\n\
                z \"q\" A 192.0.2.1\n\
                $TTL\n\
                w IN 60 IN A 192.0.2.1\n\
                v AXFR \\# 0\n";
    assert_eq!(
        errors(text),
        vec![
            "t.zone:3:5: unknown type FOO",
            "t.zone:4:10: expected a type, found the end of the line",
            "t.zone:5:7: bad A data, field 1: expected an IPv4 address",
            "t.zone:6:2: class CH differs from the zone's class IN",
            "t.zone:7:3: bad TTL \"1h30\": expected seconds or units such as 1h30m (s, m, h, d, w)",
            "t.zone:8:1: unknown directive $BOGUS",
            "t.zone:9:15: bad A data, field 2: expected nothing more",
            "t.zone:10:3: expected a TTL, a class or a type, found a quoted string",
            "t.zone:11:5: $TTL needs 1 argument(s), found 0",
            "t.zone:12:9: expected a type, found \"IN\"",
            "t.zone:13:3: type AXFR cannot appear in zone data",
        ]
    );
}

#[test]
fn lexical_errors_are_reported_and_parsing_goes_on() {
    let text = "$TTL 300\n@ SOA ns hm 1 2 3 4 5\na TXT \"open\nb ) A 192.0.2.1\nc A 192.0.2.1\nd A ( 192.0.2.1\n";
    assert_eq!(
        errors(text),
        vec![
            "t.zone:3:7: quoted string not closed before the end of the line",
            "t.zone:4:3: ')' without a matching '('",
            "t.zone:6:5: '(' never closed",
        ]
    );
}

#[test]
fn owner_is_required_for_the_first_record() {
    assert_eq!(
        errors(" A 192.0.2.1\n"),
        vec!["t.zone:1:2: no owner name: a line starting with a blank repeats the previous owner, and there is none"]
    );
}

#[test]
fn bad_owner_names_are_reported_at_the_owner() {
    let long = "a".repeat(64);
    assert_eq!(
        errors(&format!("$TTL 1\n{long} A 192.0.2.1\n")),
        vec!["t.zone:2:1: owner: bad name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": label longer than 63 octets"]
    );
}

#[test]
fn at_most_fifty_problems_are_reported() {
    let text = "x FOO\n".repeat(80);
    assert_eq!(errors(&text).len(), MAX_DIAGNOSTICS);
}

#[test]
fn include_is_refused_for_text_without_a_file() {
    assert_eq!(
        errors("$INCLUDE other.zone\n"),
        vec!["t.zone:1:10: $INCLUDE is not available here: text parsed without a file has no directory to find it in"]
    );
}

#[test]
fn include_restores_origin_and_detects_loops() {
    let dir = std::env::temp_dir().join(format!("bulwark-zone-include-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("main.zone"),
        format!("$TTL 1\n{SOA}$INCLUDE sub/part.inc inner\nafter A 192.0.2.3\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/part.inc"),
        "x A 192.0.2.1\n$INCLUDE deeper.inc\n",
    )
    .unwrap();
    std::fs::write(dir.join("sub/deeper.inc"), "y A 192.0.2.2\n").unwrap();
    let parsed = collect(|sink| file_with(fake, &dir.join("main.zone"), &origin(), sink));
    let r = parsed.unwrap();
    let owners: Vec<String> = r.iter().map(|r| r.owner.to_string()).collect();
    assert_eq!(
        owners,
        vec![
            "example.com.",
            "x.inner.example.com.",
            "y.inner.example.com.",
            "after.example.com."
        ]
    );

    std::fs::write(
        dir.join("loop.zone"),
        format!("$TTL 1\n{SOA}$INCLUDE sub/a.inc\n"),
    )
    .unwrap();
    std::fs::write(dir.join("sub/a.inc"), "$INCLUDE b.inc\n").unwrap();
    std::fs::write(dir.join("sub/b.inc"), "z A 192.0.2.1\n$INCLUDE a.inc\n").unwrap();
    let parsed = collect(|sink| file_with(fake, &dir.join("loop.zone"), &origin(), sink));
    let d = parsed.unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].line, d[0].column), (2, 10));
    assert!(d[0].file.ends_with("sub/b.inc"), "{}", d[0]);
    assert!(d[0].message.starts_with("$INCLUDE loop:"), "{}", d[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unreadable_file_is_a_diagnostic_without_a_line() {
    let d = parse_file(Path::new("/nonexistent/bulwark/zone"), &origin()).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].line, d[0].column), (0, 0));
    assert!(d[0]
        .to_string()
        .starts_with("/nonexistent/bulwark/zone: cannot read"));
}

#[test]
fn include_depth_is_limited() {
    let dir = std::env::temp_dir().join(format!("bulwark-zone-depth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("top.zone"),
        format!("$TTL 1\n{SOA}$INCLUDE f0.inc\n"),
    )
    .unwrap();
    for i in 0..30 {
        let next = i + 1;
        std::fs::write(
            dir.join(format!("f{i}.inc")),
            format!("$INCLUDE f{next}.inc\n"),
        )
        .unwrap();
    }
    std::fs::write(dir.join("f30.inc"), "x A 192.0.2.1\n").unwrap();
    let parsed = collect(|sink| file_with(fake, &dir.join("top.zone"), &origin(), sink));
    let d = parsed.unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].message, "$INCLUDE nested more than 16 deep");
    // top.zone is level 0; the include in f15.inc would open the 17th level.
    assert!(d[0].file.ends_with("f15.inc"), "{}", d[0]);
}
