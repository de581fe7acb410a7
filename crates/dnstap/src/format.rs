//! Human and machine readable renderings of dnstap messages, for `bulwark
//! dnstap read`: a one-line text form and a YAML document modelled on
//! dnstap-ldns's (`-q` default and `-y`), and one JSON object per line.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bulwark_proto::message::{Header, Section, HEADER_LEN};
use bulwark_proto::wire::Reader as WireReader;
use bulwark_proto::{Class, MessageView, Name, Rdata, Rtype};

use crate::schema::{self, Dnstap};
use crate::{MessageKind, Timestamp};

/// One line like dnstap-ldns's quiet text output:
/// `2026-11-22 10:08:21.071957 AQ 127.0.0.1 UDP 33b "www.example.com." IN A`
/// (UTC time of the query for query kinds, of the response otherwise; the
/// peer's address; the transport; the DNS message's size and question).
pub fn text(dnstap: &Dnstap) -> String {
    let mut line = String::new();
    let Some(message) = dnstap.message.as_ref() else {
        line.push_str("[no message]");
        return line;
    };
    let kind = MessageKind::from_code(message.r#type);
    let is_query = kind.map_or(message.query_message.is_some(), MessageKind::query);
    let time = if is_query {
        query_time(message)
    } else {
        response_time(message)
    };
    if let Some(time) = time {
        line.push_str(&format_time(time, ' '));
        line.push(' ');
    }
    line.push_str(kind.map_or("??", MessageKind::mnemonic));
    line.push(' ');
    // The remote end of the exchange: the initiator when this server
    // answered (AUTH, CLIENT, UPDATE), the responder when it asked.
    let address = if kind.is_none_or(MessageKind::server_side) {
        message.query_address.as_deref()
    } else {
        message.response_address.as_deref()
    };
    match address.and_then(ip_from_bytes) {
        Some(ip) => {
            let _ = write!(line, "{ip}");
        }
        None => line.push_str("[no address]"),
    }
    line.push(' ');
    line.push_str(protocol_name(message.socket_protocol));
    line.push(' ');
    let wire = if is_query {
        message.query_message.as_deref()
    } else {
        message.response_message.as_deref()
    };
    match wire {
        Some(wire) => {
            let _ = write!(line, "{}b", wire.len());
            match first_question(wire) {
                Some((qname, qtype, qclass)) => {
                    let _ = write!(line, " \"{qname}\" {qclass} {qtype}");
                }
                None => line.push_str(" [unparseable message]"),
            }
        }
        None => line.push_str("0b"),
    }
    line
}

/// A YAML document (ending with `---`) like `dnstap-ldns -y`: every field
/// that is set, times as YAML timestamps, the DNS message as dig-like text.
pub fn yaml(dnstap: &Dnstap) -> String {
    let mut doc = String::new();
    let _ = writeln!(
        doc,
        "type: {}",
        if dnstap.r#type == 1 {
            "MESSAGE"
        } else {
            "UNKNOWN"
        }
    );
    if let Some(identity) = dnstap.identity.as_deref() {
        let _ = writeln!(doc, "identity: \"{}\"", escape_bytes(identity));
    }
    if let Some(version) = dnstap.version.as_deref() {
        let _ = writeln!(doc, "version: \"{}\"", escape_bytes(version));
    }
    if let Some(extra) = dnstap.extra.as_deref() {
        let _ = writeln!(doc, "extra: \"{}\"", escape_bytes(extra));
    }
    if let Some(message) = dnstap.message.as_ref() {
        doc.push_str("message:\n");
        let kind = MessageKind::from_code(message.r#type);
        let _ = writeln!(doc, "  type: {}", kind.map_or("UNKNOWN", MessageKind::name));
        if let Some(time) = query_time(message) {
            let _ = writeln!(doc, "  query_time: !!timestamp {}", format_time(time, ' '));
        }
        if let Some(time) = response_time(message) {
            let _ = writeln!(
                doc,
                "  response_time: !!timestamp {}",
                format_time(time, ' ')
            );
        }
        if let Some(family) = message.socket_family {
            let name = match family {
                1 => "INET",
                2 => "INET6",
                _ => "UNKNOWN",
            };
            let _ = writeln!(doc, "  socket_family: {name}");
        }
        if message.socket_protocol.is_some() {
            let _ = writeln!(
                doc,
                "  socket_protocol: {}",
                protocol_name(message.socket_protocol)
            );
        }
        for (field, address) in [
            ("query_address", &message.query_address),
            ("response_address", &message.response_address),
        ] {
            if let Some(bytes) = address.as_deref() {
                match ip_from_bytes(bytes) {
                    Some(ip) => {
                        let _ = writeln!(doc, "  {field}: \"{ip}\"");
                    }
                    None => {
                        let _ = writeln!(doc, "  {field}: !!binary {}", base64(bytes));
                    }
                }
            }
        }
        if let Some(port) = message.query_port {
            let _ = writeln!(doc, "  query_port: {port}");
        }
        if let Some(port) = message.response_port {
            let _ = writeln!(doc, "  response_port: {port}");
        }
        if let Some(zone) = message.query_zone.as_deref() {
            match Name::from_wire(zone) {
                Ok(name) => {
                    let _ = writeln!(doc, "  query_zone: \"{name}\"");
                }
                Err(_) => {
                    let _ = writeln!(doc, "  query_zone: !!binary {}", base64(zone));
                }
            }
        }
        for (field, wire) in [
            ("query_message", &message.query_message),
            ("response_message", &message.response_message),
        ] {
            if let Some(wire) = wire.as_deref() {
                let _ = writeln!(doc, "  {field}: |");
                for line in dig_text(wire).lines() {
                    if line.is_empty() {
                        doc.push('\n');
                    } else {
                        let _ = writeln!(doc, "    {line}");
                    }
                }
            }
        }
    }
    doc.push_str("---\n");
    doc
}

/// One JSON object on one line: the fields that are set, addresses and names
/// as text, times as RFC 3339 UTC, DNS messages in base64 with their decoded
/// id, question and response code.
pub fn json(dnstap: &Dnstap) -> String {
    let mut object = serde_json::Map::new();
    let bytes_text =
        |bytes: &[u8]| serde_json::Value::from(String::from_utf8_lossy(bytes).into_owned());
    if let Some(identity) = dnstap.identity.as_deref() {
        object.insert("identity".into(), bytes_text(identity));
    }
    if let Some(version) = dnstap.version.as_deref() {
        object.insert("version".into(), bytes_text(version));
    }
    if let Some(extra) = dnstap.extra.as_deref() {
        object.insert("extra".into(), base64(extra).into());
    }
    if let Some(message) = dnstap.message.as_ref() {
        let kind = MessageKind::from_code(message.r#type);
        object.insert(
            "type".into(),
            kind.map_or("UNKNOWN", MessageKind::name).into(),
        );
        if let Some(time) = query_time(message) {
            object.insert(
                "query_time".into(),
                format!("{}Z", format_time(time, 'T')).into(),
            );
        }
        if let Some(time) = response_time(message) {
            object.insert(
                "response_time".into(),
                format!("{}Z", format_time(time, 'T')).into(),
            );
        }
        if let Some(family) = message.socket_family {
            let name = if family == 1 {
                "INET"
            } else if family == 2 {
                "INET6"
            } else {
                "UNKNOWN"
            };
            object.insert("socket_family".into(), name.into());
        }
        if message.socket_protocol.is_some() {
            object.insert(
                "socket_protocol".into(),
                protocol_name(message.socket_protocol).into(),
            );
        }
        for (field, address) in [
            ("query_address", &message.query_address),
            ("response_address", &message.response_address),
        ] {
            if let Some(bytes) = address.as_deref() {
                let value = ip_from_bytes(bytes).map_or_else(|| base64(bytes), |ip| ip.to_string());
                object.insert(field.into(), value.into());
            }
        }
        if let Some(port) = message.query_port {
            object.insert("query_port".into(), port.into());
        }
        if let Some(port) = message.response_port {
            object.insert("response_port".into(), port.into());
        }
        if let Some(zone) = message.query_zone.as_deref() {
            let value =
                Name::from_wire(zone).map_or_else(|_| base64(zone), |name| name.to_string());
            object.insert("query_zone".into(), value.into());
        }
        for (field, wire) in [
            ("query_message", &message.query_message),
            ("response_message", &message.response_message),
        ] {
            if let Some(wire) = wire.as_deref() {
                object.insert(field.into(), base64(wire).into());
            }
        }
        let is_query = kind.map_or(message.query_message.is_some(), MessageKind::query);
        let wire = if is_query {
            message.query_message.as_deref()
        } else {
            message.response_message.as_deref()
        };
        if let Some(wire) = wire {
            if let Some(header) = Header::parse(wire) {
                object.insert("id".into(), header.id.into());
            }
            if let Some((qname, qtype, qclass)) = first_question(wire) {
                object.insert("qname".into(), qname.to_string().into());
                object.insert("qclass".into(), qclass.to_string().into());
                object.insert("qtype".into(), qtype.to_string().into());
            }
            if !is_query {
                let rcode = match MessageView::parse(wire) {
                    Ok(view) => Some(view.rcode().to_string()),
                    Err(_) => Header::parse(wire).map(|header| {
                        bulwark_proto::Rcode::new(u16::from(header.rcode_low)).to_string()
                    }),
                };
                if let Some(rcode) = rcode {
                    object.insert("rcode".into(), rcode.into());
                }
            }
        }
    }
    serde_json::Value::Object(object).to_string()
}

fn query_time(message: &schema::Message) -> Option<Timestamp> {
    message.query_time_sec.map(|secs| Timestamp {
        secs,
        nanos: message.query_time_nsec.unwrap_or(0),
    })
}

fn response_time(message: &schema::Message) -> Option<Timestamp> {
    message.response_time_sec.map(|secs| Timestamp {
        secs,
        nanos: message.response_time_nsec.unwrap_or(0),
    })
}

fn protocol_name(protocol: Option<i32>) -> &'static str {
    match protocol {
        Some(1) => "UDP",
        Some(2) => "TCP",
        Some(3) => "DOT",
        Some(4) => "DOH",
        Some(5) => "DNSCryptUDP",
        Some(6) => "DNSCryptTCP",
        Some(7) => "DOQ",
        Some(_) => "UNKNOWN",
        None => "[no protocol]",
    }
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return Some(IpAddr::V4(Ipv4Addr::from(v4)));
    }
    <[u8; 16]>::try_from(bytes)
        .ok()
        .map(|v6| IpAddr::V6(Ipv6Addr::from(v6)))
}

/// The first question, read leniently (only the header and the question
/// need to be well formed), so that truncated messages still show it.
fn first_question(wire: &[u8]) -> Option<(Name, Rtype, Class)> {
    let header = Header::parse(wire)?;
    if header.qdcount == 0 {
        return None;
    }
    let mut reader = WireReader::at(wire, HEADER_LEN);
    let qname = Name::read(&mut reader).ok()?;
    let qtype = Rtype(reader.read_u16().ok()?);
    let qclass = Class(reader.read_u16().ok()?);
    Some((qname, qtype, qclass))
}

/// `YYYY-MM-DD hh:mm:ss.uuuuuu` in UTC, with `separator` between date and time.
fn format_time(time: Timestamp, separator: char) -> String {
    let days = time.secs.wrapping_div(86_400);
    let of_day = time.secs.wrapping_rem(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}{separator}{:02}:{:02}:{:02}.{:06}",
        of_day.wrapping_div(3600),
        of_day.wrapping_rem(3600).wrapping_div(60),
        of_day.wrapping_rem(60),
        time.nanos.wrapping_div(1000),
    )
}

/// The proleptic Gregorian date of a count of days since 1970-01-01 (the
/// well-known era-based conversion: 400-year eras of 146097 days, years
/// counted from March so that the leap day comes last). Wrapping arithmetic
/// is exact for every date before the year 500 billion.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days.wrapping_add(719_468);
    let era = z.wrapping_div(146_097);
    let day_of_era = z.wrapping_rem(146_097);
    let year_of_era = day_of_era
        .wrapping_sub(day_of_era.wrapping_div(1460))
        .wrapping_add(day_of_era.wrapping_div(36_524))
        .wrapping_sub(day_of_era.wrapping_div(146_096))
        .wrapping_div(365);
    let day_of_year = day_of_era.wrapping_sub(
        year_of_era
            .wrapping_mul(365)
            .wrapping_add(year_of_era.wrapping_div(4))
            .wrapping_sub(year_of_era.wrapping_div(100)),
    );
    let month_from_march = day_of_year
        .wrapping_mul(5)
        .wrapping_add(2)
        .wrapping_div(153);
    let day = day_of_year
        .wrapping_sub(
            month_from_march
                .wrapping_mul(153)
                .wrapping_add(2)
                .wrapping_div(5),
        )
        .wrapping_add(1);
    let month = if month_from_march < 10 {
        month_from_march.wrapping_add(3)
    } else {
        month_from_march.wrapping_sub(9)
    };
    let year = year_of_era
        .wrapping_add(era.wrapping_mul(400))
        .wrapping_add(u64::from(month <= 2));
    (year, month, day)
}

/// Printable ASCII as is, `"` and `\` escaped, other bytes as `\xNN`.
fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..=0x7e => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let symbol = |index: u32| -> char {
        ALPHABET
            .get(usize::try_from(index & 0x3f).unwrap_or(0))
            .map_or('=', |&c| char::from(c))
    };
    let mut out = String::with_capacity(bytes.len().div_ceil(3).saturating_mul(4));
    for chunk in bytes.chunks(3) {
        let b0 = u32::from(chunk.first().copied().unwrap_or(0));
        let b1 = u32::from(chunk.get(1).copied().unwrap_or(0));
        let b2 = u32::from(chunk.get(2).copied().unwrap_or(0));
        let group = (b0 << 16) | (b1 << 8) | b2;
        out.push(symbol(group >> 18));
        out.push(symbol(group >> 12));
        out.push(if chunk.len() > 1 {
            symbol(group >> 6)
        } else {
            '='
        });
        out.push(if chunk.len() > 2 { symbol(group) } else { '=' });
    }
    out
}

/// A dig-like rendering of a DNS message: header, flags, counts and the
/// four sections, one record per line in presentation format.
fn dig_text(wire: &[u8]) -> String {
    let mut out = String::new();
    let view = match MessageView::parse(wire) {
        Ok(view) => view,
        Err(e) => {
            let _ = writeln!(out, ";; unparseable message ({e}): {}", base64(wire));
            return out;
        }
    };
    let header = view.header();
    let _ = writeln!(
        out,
        ";; ->>HEADER<<- opcode: {}, rcode: {}, id: {}",
        header.opcode,
        view.rcode(),
        header.id
    );
    let flags = header.flags;
    let mut names = String::new();
    for (set, name) in [
        (flags.qr, "qr"),
        (flags.aa, "aa"),
        (flags.tc, "tc"),
        (flags.rd, "rd"),
        (flags.ra, "ra"),
        (flags.ad, "ad"),
        (flags.cd, "cd"),
    ] {
        if set {
            names.push_str(name);
            names.push(' ');
        }
    }
    let _ = writeln!(
        out,
        ";; flags: {names}; QUERY: {}, ANSWER: {}, AUTHORITY: {}, ADDITIONAL: {}",
        header.qdcount, header.ancount, header.nscount, header.arcount
    );
    if let Some(edns) = view.edns() {
        let _ = writeln!(
            out,
            ";; EDNS: version {}; flags: {}; udp: {}",
            edns.version,
            if edns.dnssec_ok { "do " } else { "" },
            edns.udp_payload_size
        );
    }
    out.push_str("\n;; QUESTION SECTION:\n");
    for question in view.questions() {
        let _ = writeln!(
            out,
            ";{}\t{}\t{}",
            question.qname, question.qclass, question.qtype
        );
    }
    for (title, section) in [
        ("ANSWER", Section::Answer),
        ("AUTHORITY", Section::Authority),
        ("ADDITIONAL", Section::Additional),
    ] {
        let _ = writeln!(out, "\n;; {title} SECTION:");
        for record in view.records(section) {
            if record.rtype == Rtype::OPT {
                // Shown in the EDNS line above.
                continue;
            }
            let _ = write!(
                out,
                "{}\t{}\t{}\t{}\t",
                record.owner, record.ttl, record.class, record.rtype
            );
            let mut reader = WireReader::at(view.as_bytes(), record.rdata_offset);
            match Rdata::read(record.rtype, &mut reader, record.rdata.len()) {
                Ok(rdata) => {
                    let _ = writeln!(out, "{rdata}");
                }
                Err(_) => {
                    // RFC 3597 §5 generic form.
                    let _ = write!(out, "\\# {}", record.rdata.len());
                    if !record.rdata.is_empty() {
                        out.push(' ');
                        for byte in record.rdata {
                            let _ = write!(out, "{byte:02x}");
                        }
                    }
                    out.push('\n');
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert_across_leap_years_and_centuries() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(
            format_time(
                Timestamp {
                    secs: 1_795_000_000,
                    nanos: 123_456_789
                },
                ' '
            ),
            "2026-11-18 11:06:40.123456"
        );
    }

    #[test]
    fn base64_pads_like_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
