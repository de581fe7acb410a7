//! DNS messages as raw bytes, written octet by octet so that what a test
//! sends does not depend on the code under test: a query's header and
//! question, the two-octet TCP length prefix, and reading one framed message
//! back from any reader (a TCP or TLS stream).

use std::io::{self, Read};

/// The RD bit in the header's flags word (RFC 1035 §4.1.1).
pub const RD: u16 = 0x0100;

/// `name` (presentation form, trailing dot optional, no escapes) in
/// uncompressed wire form: each label after its length, then the root's
/// empty label. `"."` and `""` are the root alone.
///
/// Panics on a label longer than 255 octets (a test's mistake).
pub fn name(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len().saturating_add(2));
    for label in name.split('.').filter(|l| !l.is_empty()) {
        let len = u8::try_from(label.len()).expect("label length fits an octet");
        out.push(len);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// A query with message ID `id`, the header flags word `flags` (opcode,
/// RD, CD...: `0` for a plain QUERY, [`RD`] for recursion desired), one
/// question `qname`/`qtype` in class IN, and no other records (no EDNS).
pub fn query(id: u16, flags: u16, qname: &str, qtype: u16) -> Vec<u8> {
    const CLASS_IN: u16 = 1;
    let mut q = Vec::with_capacity(qname.len().saturating_add(18));
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&flags.to_be_bytes());
    // QDCOUNT 1; ANCOUNT, NSCOUNT, ARCOUNT 0.
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(&name(qname));
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    q
}

/// `message` with the two-octet length in front that DNS over TCP needs
/// (RFC 1035 §4.2.2).
///
/// Panics if `message` is longer than 65,535 octets.
pub fn framed(message: &[u8]) -> Vec<u8> {
    let len = u16::try_from(message.len()).expect("message fits a TCP frame");
    let mut out = Vec::with_capacity(message.len().saturating_add(2));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Reads one length-prefixed message (RFC 1035 §4.2.2) from `stream`,
/// without the prefix. A close or timeout before the whole message is an
/// error (the stream's read timeout applies to each read).
pub fn read_framed(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len)?;
    let mut message = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut message)?;
    Ok(message)
}

/// `data` in RFC 4648 §5 base64url without padding, as RFC 8484 §4.1 puts a
/// query in a DoH GET.
pub fn base64url(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_labels_then_the_root() {
        assert_eq!(name("www.example."), b"\x03www\x07example\x00");
        assert_eq!(name("www.example"), b"\x03www\x07example\x00");
        assert_eq!(name("."), [0]);
        assert_eq!(name(""), [0]);
    }

    #[test]
    fn a_query_is_header_then_question_in_class_in() {
        assert_eq!(
            query(0x1234, RD, "www.example.", 1),
            b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\
              \x03www\x07example\x00\x00\x01\x00\x01"
        );
        assert_eq!(
            query(7, 0, "other.test.", 252),
            b"\x00\x07\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\
              \x05other\x04test\x00\x00\xfc\x00\x01"
        );
    }

    #[test]
    fn base64url_matches_rfc_8484s_example_and_drops_padding() {
        // RFC 8484 §4.1.1: www.example.com A, ID 0.
        let q = b"\x00\x00\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x07example\x03com\x00\x00\x01\x00\x01";
        assert_eq!(base64url(q), "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB");
        assert_eq!(base64url(b"foob"), "Zm9vYg");
        assert_eq!(base64url(&[0xff, 0xef]), "_-8");
    }

    #[test]
    fn framing_prefixes_the_length_and_reading_removes_it() {
        assert_eq!(framed(&[9, 8, 7]), [0, 3, 9, 8, 7]);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        use std::io::Write;
        server.write_all(&framed(b"first")).unwrap();
        server.write_all(&framed(b"")).unwrap();
        server.write_all(&[0, 5, b'c']).unwrap();
        drop(server);
        assert_eq!(read_framed(&mut client).unwrap(), b"first");
        assert_eq!(read_framed(&mut client).unwrap(), b"");
        let cut = read_framed(&mut client).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof);
    }
}
