//! The parser never panics, whatever the input, and what it accepts prints and
//! parses back to the same records.
#![allow(clippy::unwrap_used)]

use bulwark_proto::Name;
use bulwark_zone::{parse_str, print_zone};
use proptest::prelude::*;

/// Pieces of zone-file syntax, so that random input reaches past the lexer.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("$TTL ".to_owned()),
        Just("$ORIGIN ".to_owned()),
        Just("$GENERATE ".to_owned()),
        Just("$INCLUDE ".to_owned()),
        Just("1-3 ".to_owned()),
        Just("${0,3,n} ".to_owned()),
        Just("@ ".to_owned()),
        Just("www ".to_owned()),
        Just("sub.example.com. ".to_owned()),
        Just("1h ".to_owned()),
        Just("IN ".to_owned()),
        Just("CH ".to_owned()),
        Just("A 192.0.2.1 ".to_owned()),
        Just("SOA ns hm 1 2 3 4 5 ".to_owned()),
        Just("MX 10 mail ".to_owned()),
        Just("TXT ".to_owned()),
        Just("TYPE65280 \\# 2 ABCD ".to_owned()),
        Just("\"quoted ; ( text\" ".to_owned()),
        Just("( ".to_owned()),
        Just(") ".to_owned()),
        Just("; comment".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\n\t".to_owned()),
        Just("\\".to_owned()),
        Just("\\065".to_owned()),
        "[ -~]{0,6}",
    ]
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_str(&text, &Name::root(), "fuzz");
    }

    #[test]
    fn accepted_text_round_trips_through_the_printer(parts in proptest::collection::vec(fragment(), 0..40)) {
        let origin: Name = "example.com.".parse().unwrap();
        let text = format!("$TTL 60\n@ SOA ns hm 1 2 3 4 5\n{}", parts.concat());
        if let Ok(records) = parse_str(&text, &origin, "prop") {
            let printed = print_zone(&records);
            let again = parse_str(&printed, &origin, "printed").unwrap();
            prop_assert_eq!(print_zone(&again), printed);
        }
    }
}
