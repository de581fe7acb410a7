//! Unit tests of the RRL rules, one per behaviour.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]
use super::*;

const WWW: &[u8] = b"\x03www\x07example\x00";
const MAIL: &[u8] = b"\x04mail\x07example\x00";
const APEX: &[u8] = b"\x07example\x00";
const T: u64 = 1_700_000_000;

fn config(rate: u32, window: u32, slip: u32) -> RrlConfig {
    RrlConfig {
        responses_per_second: rate,
        window,
        slip,
        ..RrlConfig::default()
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    pass: u64,
    drop: u64,
    slip: u64,
}

fn tally(rrl: &Rrl, client: IpAddr, class: ResponseClass, name: &[u8], now: u64, n: u64) -> Tally {
    let mut t = Tally::default();
    for _ in 0..n {
        match rrl.check(client, class, name, now) {
            RrlVerdict::Pass => t.pass += 1,
            RrlVerdict::Drop => t.drop += 1,
            RrlVerdict::Slip => t.slip += 1,
        }
    }
    t
}

fn passes(rrl: &Rrl, client: &str, class: ResponseClass, name: &[u8], now: u64, n: u64) -> u64 {
    tally(rrl, ip(client), class, name, now, n).pass
}

#[test]
fn zero_rate_disables_limiting_and_counting() {
    let rrl = Rrl::new(config(0, 15, 2));
    assert!(!rrl.is_enabled());
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 1000),
        1000
    );
    assert_eq!(rrl.stats(), RrlStats::default());
}

#[test]
fn flood_from_one_network_passes_rate_per_second() {
    let rrl = Rrl::new(config(20, 15, 2));
    let mut passed = 0;
    for i in 0..10_000u32 {
        // Spoofed sources spread over the whole /24 share one budget.
        let client = IpAddr::from([192, 0, 2, (i % 256) as u8]);
        if rrl.check(client, ResponseClass::Positive, WWW, T) == RrlVerdict::Pass {
            passed += 1;
        }
    }
    assert_eq!(passed, 20);
    let s = rrl.stats();
    assert_eq!(s.passed, 20);
    assert_eq!(s.dropped + s.slipped, 9_980);
}

#[test]
fn other_networks_keep_their_budget_during_a_flood() {
    let rrl = Rrl::new(config(20, 15, 2));
    tally(
        &rrl,
        ip("192.0.2.1"),
        ResponseClass::Positive,
        WWW,
        T,
        10_000,
    );
    assert_eq!(
        passes(&rrl, "192.0.3.1", ResponseClass::Positive, WWW, T, 20),
        20
    );
    assert_eq!(
        passes(&rrl, "198.51.100.7", ResponseClass::Positive, WWW, T, 20),
        20
    );
    assert_eq!(
        passes(&rrl, "2001:db8::1", ResponseClass::Positive, WWW, T, 20),
        20
    );
}

#[test]
fn classes_have_separate_budgets() {
    let rrl = Rrl::new(config(10, 15, 0));
    let client = "192.0.2.1";
    assert_eq!(
        passes(&rrl, client, ResponseClass::Positive, WWW, T, 100),
        10
    );
    for class in [
        ResponseClass::Nxdomain,
        ResponseClass::Nodata,
        ResponseClass::Referral,
        ResponseClass::Wildcard,
        ResponseClass::Error,
    ] {
        assert_eq!(passes(&rrl, client, class, WWW, T, 100), 10, "{class:?}");
    }
}

#[test]
fn names_have_separate_budgets() {
    let rrl = Rrl::new(config(10, 15, 0));
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 100),
        10
    );
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, MAIL, T, 100),
        10
    );
}

#[test]
fn nxdomain_for_random_names_shares_the_apex_budget() {
    // The caller imputes the apex to every NXDOMAIN (see `ResponseClass`).
    let rrl = Rrl::new(config(10, 15, 0));
    let mut passed = 0;
    for i in 0..1000u32 {
        let _random_qname = format!("r{i}.example.");
        if rrl.check(ip("192.0.2.1"), ResponseClass::Nxdomain, APEX, T) == RrlVerdict::Pass {
            passed += 1;
        }
    }
    assert_eq!(passed, 10);
}

#[test]
fn imputed_name_case_is_folded() {
    let rrl = Rrl::new(config(10, 15, 0));
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 6),
        6
    );
    let upper = b"\x03WwW\x07EXAMPLE\x00";
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, upper, T, 10),
        4
    );
}

#[test]
fn budget_refills_after_a_second() {
    let rrl = Rrl::new(config(10, 15, 0));
    let c = "192.0.2.1";
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T, 10), 10);
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T + 1, 10), 10);
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T + 1, 1), 0);
    // Idle time never banks more than one second of burst.
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, T + 100, 100),
        10
    );
}

#[test]
fn limited_responses_cost_tokens_too() {
    let rrl = Rrl::new(config(10, 15, 0));
    let c = "192.0.2.1";
    // 10 pass and 5 are dropped: the balance is 5 below zero.
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T, 15), 10);
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T + 1, 100), 5);
}

#[test]
fn debt_keeps_a_flooder_limited_for_the_window() {
    let rrl = Rrl::new(config(10, 5, 0));
    let c = "192.0.2.1";
    tally(&rrl, ip(c), ResponseClass::Positive, WWW, T, 10_000);
    // The debt bottoms out at window × rate = 50 and is paid back at rate a second.
    for s in 1..=5 {
        assert_eq!(
            passes(&rrl, c, ResponseClass::Positive, WWW, T + s, 1),
            0,
            "{s}"
        );
    }
    // Each probe above cost a token; 10 a second were earned back, so after
    // the window the balance is 5 × (10 − 1) − 50 + 10 = 5.
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T + 6, 100), 5);
}

#[test]
fn a_flooder_that_stops_is_answered_again_after_the_window() {
    let rrl = Rrl::new(config(10, 5, 0));
    let c = "192.0.2.1";
    tally(&rrl, ip(c), ResponseClass::Positive, WWW, T, 10_000);
    // Silent for `window` seconds: the balance is back to zero, still limited.
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T + 5, 1), 0);
    let rrl = Rrl::new(config(10, 5, 0));
    tally(&rrl, ip(c), ResponseClass::Positive, WWW, T, 10_000);
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, T + 6, 100),
        10
    );
}

#[test]
fn zero_window_allows_no_debt() {
    let rrl = Rrl::new(config(10, 0, 0));
    let c = "192.0.2.1";
    tally(&rrl, ip(c), ResponseClass::Positive, WWW, T, 10_000);
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, T + 1, 100),
        10
    );
}

#[test]
fn every_second_limited_response_slips_by_default() {
    let rrl = Rrl::new(config(5, 15, 2));
    let c = ip("192.0.2.1");
    assert_eq!(tally(&rrl, c, ResponseClass::Positive, WWW, T, 5).pass, 5);
    let seq: Vec<_> = (0..4)
        .map(|_| rrl.check(c, ResponseClass::Positive, WWW, T))
        .collect();
    assert_eq!(
        seq,
        [
            RrlVerdict::Drop,
            RrlVerdict::Slip,
            RrlVerdict::Drop,
            RrlVerdict::Slip
        ]
    );
    let t = tally(&rrl, c, ResponseClass::Positive, WWW, T, 1000);
    assert_eq!((t.pass, t.drop, t.slip), (0, 500, 500));
    let s = rrl.stats();
    assert_eq!((s.passed, s.dropped, s.slipped), (5, 502, 502));
}

#[test]
fn slip_ratios_are_exact() {
    for (slip, want_slips) in [(0, 0), (1, 900), (3, 300), (10, 90), (1000, 3)] {
        let rrl = Rrl::new(config(5, 15, slip));
        let t = tally(&rrl, ip("192.0.2.1"), ResponseClass::Positive, WWW, T, 905);
        assert_eq!(t.pass, 5, "slip {slip}");
        assert_eq!(t.slip, want_slips, "slip {slip}");
        assert_eq!(t.drop, 900 - want_slips, "slip {slip}");
    }
}

#[test]
fn slip_three_drops_twice_then_slips() {
    let rrl = Rrl::new(config(1, 15, 3));
    let c = ip("192.0.2.1");
    let seq: Vec<_> = (0..7)
        .map(|_| rrl.check(c, ResponseClass::Positive, WWW, T))
        .collect();
    use RrlVerdict::{Drop, Pass, Slip};
    assert_eq!(seq, [Pass, Drop, Drop, Slip, Drop, Drop, Slip]);
}

#[test]
fn exempt_networks_always_pass() {
    let rrl = Rrl::new(RrlConfig {
        exempt: vec![
            "192.0.2.0/24".parse().unwrap(),
            "2001:db8::/32".parse().unwrap(),
        ],
        ..config(5, 15, 2)
    });
    for c in ["192.0.2.9", "::ffff:192.0.2.9", "2001:db8::53"] {
        assert_eq!(
            passes(&rrl, c, ResponseClass::Positive, WWW, T, 1000),
            1000,
            "{c}"
        );
    }
    assert_eq!(
        passes(&rrl, "192.0.3.9", ResponseClass::Positive, WWW, T, 1000),
        5
    );
    assert_eq!(rrl.stats().passed, 3005);
}

#[test]
fn ipv6_clients_are_grouped_by_56() {
    let rrl = Rrl::new(config(10, 15, 0));
    let mut passed = 0;
    for i in 0..=255u16 {
        // Every /64 inside 2001:db8:0:100::/56.
        let client = IpAddr::from([0x2001, 0xdb8, 0, 0x100 | i, 0, 0, 0, i]);
        passed += tally(&rrl, client, ResponseClass::Positive, WWW, T, 4).pass;
    }
    assert_eq!(passed, 10);
    assert_eq!(
        passes(
            &rrl,
            "2001:db8:0:200::1",
            ResponseClass::Positive,
            WWW,
            T,
            20
        ),
        10
    );
}

#[test]
fn prefixes_are_configurable() {
    let rrl = Rrl::new(RrlConfig {
        ipv4_prefix: 32,
        ipv6_prefix: 64,
        ..config(10, 15, 0)
    });
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 20),
        10
    );
    assert_eq!(
        passes(&rrl, "192.0.2.2", ResponseClass::Positive, WWW, T, 20),
        10
    );
    assert_eq!(
        passes(&rrl, "2001:db8:0:1::1", ResponseClass::Positive, WWW, T, 20),
        10
    );
    assert_eq!(
        passes(&rrl, "2001:db8:0:1::2", ResponseClass::Positive, WWW, T, 20),
        0
    );
    assert_eq!(
        passes(&rrl, "2001:db8:0:2::1", ResponseClass::Positive, WWW, T, 20),
        10
    );
}

#[test]
fn ipv4_mapped_client_shares_its_ipv4_budget() {
    let rrl = Rrl::new(config(10, 15, 0));
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 6),
        6
    );
    assert_eq!(
        passes(
            &rrl,
            "::ffff:192.0.2.200",
            ResponseClass::Positive,
            WWW,
            T,
            10
        ),
        4
    );
}

#[test]
fn errors_and_nxdomain_use_errors_per_second() {
    let rrl = Rrl::new(RrlConfig {
        errors_per_second: Some(3),
        ..config(10, 15, 0)
    });
    let c = "192.0.2.1";
    assert_eq!(passes(&rrl, c, ResponseClass::Error, b"", T, 100), 3);
    assert_eq!(passes(&rrl, c, ResponseClass::Nxdomain, APEX, T, 100), 3);
    assert_eq!(passes(&rrl, c, ResponseClass::Nodata, WWW, T, 100), 10);
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T, 100), 10);
}

#[test]
fn zero_errors_per_second_leaves_errors_unlimited() {
    let rrl = Rrl::new(RrlConfig {
        errors_per_second: Some(0),
        ..config(10, 15, 0)
    });
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Error, b"", T, 100),
        100
    );
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 100),
        10
    );
}

#[test]
fn a_clock_running_backwards_earns_nothing() {
    let rrl = Rrl::new(config(10, 0, 0));
    let c = "192.0.2.1";
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T, 10), 10);
    // Another worker read the clock a second earlier.
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, T - 1, 10), 0);
    // The bucket did not move back: one second after T refills it once.
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, T + 1, 100),
        10
    );
}

#[test]
fn stored_time_wraps_without_losing_the_budget() {
    let rrl = Rrl::new(config(10, 0, 0));
    let c = "192.0.2.1";
    let edge = (1u64 << 32) - 1;
    assert_eq!(passes(&rrl, c, ResponseClass::Positive, WWW, edge, 100), 10);
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, edge + 1, 100),
        10
    );
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, (1 << 25) + 5, 100),
        10
    );
}

#[test]
fn works_from_time_zero() {
    let rrl = Rrl::new(config(10, 15, 0));
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, 0, 100),
        10
    );
}

#[test]
fn colliding_keys_share_a_bucket() {
    // One bucket: every key collides, and they share its budget.
    let rrl = Rrl::new(RrlConfig {
        table_size: 1,
        ..config(10, 15, 0)
    });
    assert_eq!(rrl.table.len(), 1);
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 6),
        6
    );
    assert_eq!(
        passes(&rrl, "198.51.100.1", ResponseClass::Nodata, MAIL, T, 10),
        4
    );
}

#[test]
fn table_size_rounds_up_to_a_power_of_two() {
    let size = |n| {
        Rrl::new(RrlConfig {
            table_size: n,
            ..config(1, 15, 2)
        })
        .table
        .len()
    };
    assert_eq!(size(0), 1);
    assert_eq!(size(1000), 1024);
    assert_eq!(size(65_536), 65_536);
    assert_eq!(size(usize::MAX), MAX_TABLE_SIZE);
}

#[test]
fn huge_rate_and_window_saturate_instead_of_overflowing() {
    let rrl = Rrl::new(config(u32::MAX, u32::MAX, 1));
    assert_eq!(
        passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, T, 1000),
        1000
    );
    assert_eq!(
        passes(
            &rrl,
            "192.0.2.1",
            ResponseClass::Positive,
            WWW,
            u64::MAX,
            1000
        ),
        1000
    );
}

#[test]
fn bucket_packing_round_trips() {
    for b in [
        Bucket {
            deficit: 0,
            time: 0,
            slips: 0,
        },
        Bucket {
            deficit: MAX_DEFICIT,
            time: u32::MAX,
            slips: u8::MAX,
        },
        Bucket {
            deficit: 0x12_3456,
            time: 0xabcd_ef01,
            slips: 7,
        },
    ] {
        assert_eq!(Bucket::unpack(b.pack()), b);
    }
    assert_eq!(
        Bucket::unpack(0),
        Bucket {
            deficit: 0,
            time: 0,
            slips: 0
        }
    );
}

#[test]
fn fresh_buckets_work_at_any_time() {
    for now in [0, 1 << 31, (1 << 32) - 1, 1 << 40, u64::MAX] {
        let rrl = Rrl::new(config(10, 15, 0));
        assert_eq!(
            passes(&rrl, "192.0.2.1", ResponseClass::Positive, WWW, now, 100),
            10,
            "{now}"
        );
        assert_eq!(
            passes(
                &rrl,
                "192.0.2.1",
                ResponseClass::Positive,
                WWW,
                now.wrapping_add(1),
                100
            ),
            0,
            "{now}: still paying its debt"
        );
    }
}

#[test]
fn a_network_in_debt_recovers_after_months_of_silence() {
    let rrl = Rrl::new(config(10, 15, 0));
    let c = "192.0.2.1";
    tally(&rrl, ip(c), ResponseClass::Positive, WWW, T, 10_000);
    let later = T + 150 * 86_400;
    assert_eq!(
        passes(&rrl, c, ResponseClass::Positive, WWW, later, 100),
        10
    );
}

#[test]
fn pack_clamps_the_deficit_to_its_width() {
    let b = Bucket {
        deficit: u32::MAX,
        time: 5,
        slips: 1,
    };
    assert_eq!(
        Bucket::unpack(b.pack()),
        Bucket {
            deficit: MAX_DEFICIT,
            ..b
        }
    );
}

#[test]
fn debug_output_leaves_out_the_table() {
    let rrl = Rrl::new(config(10, 15, 2));
    let text = format!("{rrl:?}");
    assert!(text.contains("buckets: 65536"), "{text}");
    assert!(text.len() < 1000, "{text}");
}

#[test]
fn a_tallied_check_counts_what_check_counts_once_added() {
    let tallied = Rrl::new(RrlConfig {
        exempt: vec!["192.0.2.0/24".parse().unwrap()],
        ..config(5, 15, 2)
    });
    let counted_exempt = Rrl::new(RrlConfig {
        exempt: vec!["192.0.2.0/24".parse().unwrap()],
        ..config(5, 15, 2)
    });
    let mut local = RrlStats::default();
    for client in ["198.51.100.1", "192.0.2.7"] {
        for _ in 0..20 {
            let c = ip(client);
            let want = counted_exempt.check(c, ResponseClass::Positive, WWW, T);
            let got = tallied.check_tallied(c, ResponseClass::Positive, WWW, T, &mut local);
            assert_eq!(got, want, "{client}");
        }
    }
    // Nothing reaches the shared counters until the tally is added.
    assert_eq!(tallied.stats(), RrlStats::default());
    assert_eq!(local, counted_exempt.stats());
    tallied.add_tally(&mut local);
    assert_eq!(local, RrlStats::default());
    assert_eq!(tallied.stats(), counted_exempt.stats());
    assert_eq!(
        (
            tallied.stats().passed,
            tallied.stats().dropped,
            tallied.stats().slipped
        ),
        (25, 8, 7)
    );
    // A disabled limiter tallies nothing.
    let off = Rrl::new(config(0, 15, 2));
    off.check_tallied(
        ip("198.51.100.1"),
        ResponseClass::Positive,
        WWW,
        T,
        &mut local,
    );
    assert_eq!(local, RrlStats::default());
}
