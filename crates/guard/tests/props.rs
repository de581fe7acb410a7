//! Property tests: no input makes the guard panic, and RRL never lets one key
//! exceed its budget.
#![allow(
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation
)]

use std::net::IpAddr;

use bulwark_guard::{Network, ResponseClass, Rrl, RrlConfig, RrlVerdict};
use proptest::prelude::*;

fn class() -> impl Strategy<Value = ResponseClass> {
    prop_oneof![
        Just(ResponseClass::Positive),
        Just(ResponseClass::Nxdomain),
        Just(ResponseClass::Nodata),
        Just(ResponseClass::Referral),
        Just(ResponseClass::Wildcard),
        Just(ResponseClass::Error),
    ]
}

fn addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(IpAddr::from),
        any::<[u8; 16]>().prop_map(IpAddr::from),
        // IPv4-mapped IPv6.
        any::<[u8; 4]>().prop_map(|a| IpAddr::from(std::net::Ipv4Addr::from(a).to_ipv6_mapped())),
    ]
}

proptest! {
    #[test]
    fn network_parse_never_panics(s in "\\PC{0,60}") {
        let _ = s.parse::<Network>();
    }

    #[test]
    fn network_parse_never_panics_on_address_like_input(
        s in "[0-9a-fA-F:.]{0,45}(/[0-9+-]{0,5})?",
    ) {
        if let Ok(n) = s.parse::<Network>() {
            // What parses prints back to itself and contains its own address.
            prop_assert_eq!(n.to_string().parse::<Network>(), Ok(n));
            prop_assert!(n.contains(n.addr));
        }
    }

    #[test]
    fn parsed_prefix_contains_exactly_its_addresses(a in any::<[u8; 4]>(), p in 0u8..=32, b in any::<[u8; 4]>()) {
        let net = Network::enclosing(IpAddr::from(a), p);
        let text = net.to_string();
        prop_assert_eq!(text.parse::<Network>(), Ok(net));
        let mask = if p == 0 { 0 } else { u32::MAX << (32 - u32::from(p)) };
        let inside = u32::from_be_bytes(a) & mask == u32::from_be_bytes(b) & mask;
        prop_assert_eq!(net.contains(IpAddr::from(b)), inside);
    }

    #[test]
    fn rrl_check_never_panics(
        rate in prop_oneof![Just(0u32), 1u32..100, Just(u32::MAX)],
        errors in proptest::option::of(prop_oneof![Just(0u32), 1u32..100, Just(u32::MAX)]),
        window in prop_oneof![Just(0u32), 1u32..60, Just(u32::MAX)],
        slip in prop_oneof![0u32..4, Just(u32::MAX)],
        v4 in any::<u8>(),
        v6 in any::<u8>(),
        table in prop_oneof![Just(0usize), 1usize..100, Just(usize::MAX)],
        seed in any::<u64>(),
        calls in proptest::collection::vec(
            (addr(), class(), proptest::collection::vec(any::<u8>(), 0..300), any::<u64>()),
            0..40,
        ),
    ) {
        let rrl = Rrl::new(RrlConfig {
            responses_per_second: rate,
            errors_per_second: errors,
            window,
            slip,
            ipv4_prefix: v4,
            ipv6_prefix: v6,
            exempt: Vec::new(),
            table_size: table.min(1 << 16),
            seed,
        });
        for (client, class, name, now) in calls {
            let _ = rrl.check(client, class, &name, now);
        }
        let s = rrl.stats();
        prop_assert!(s.passed + s.dropped + s.slipped <= 40);
    }

    #[test]
    fn one_key_never_exceeds_its_budget(
        rate in 1u32..50,
        window in 0u32..20,
        // Seconds that may repeat and go backwards, as clocks read by several threads do.
        times in proptest::collection::vec(0u64..30, 1..400),
    ) {
        let rrl = Rrl::new(RrlConfig { responses_per_second: rate, window, ..RrlConfig::default() });
        let client = IpAddr::from([192, 0, 2, 1]);
        let mut latest = 0;
        let mut passed = 0u64;
        for now in times {
            latest = latest.max(now);
            if rrl.check(client, ResponseClass::Positive, b"\x01a\x00", 1_000 + now) == RrlVerdict::Pass {
                passed += 1;
            }
        }
        // At most one burst plus what the seconds up to the latest one earned.
        prop_assert!(passed <= u64::from(rate) * (latest + 1));
    }
}
