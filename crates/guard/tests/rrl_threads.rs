//! RRL shared by worker threads: concurrent updates of one bucket are never
//! lost, so the budget holds however the flood is spread over threads.
#![allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]

use std::net::IpAddr;
use std::sync::Barrier;
use std::thread;

use bulwark_guard::{ResponseClass, Rrl, RrlConfig, RrlStats, RrlVerdict};

const THREADS: usize = 4;
const NAME: &[u8] = b"\x03www\x07example\x00";
const T: u64 = 1_700_000_000;

fn config(rate: u32, window: u32) -> RrlConfig {
    RrlConfig {
        responses_per_second: rate,
        window,
        slip: 2,
        ..RrlConfig::default()
    }
}

#[test]
fn one_key_flooded_from_many_threads_passes_exactly_rate() {
    let rrl = Rrl::new(config(50, 15));
    let per_thread = 5_000u64;
    let passed: u64 = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let rrl = &rrl;
                s.spawn(move || {
                    let mut passed = 0u64;
                    for i in 0..per_thread {
                        // Sources spread over the /24, as spoofed floods are.
                        let client = IpAddr::from([192, 0, 2, (i as u8) ^ (t as u8)]);
                        if rrl.check(client, ResponseClass::Positive, NAME, T) == RrlVerdict::Pass {
                            passed += 1;
                        }
                    }
                    passed
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let total = per_thread * THREADS as u64;
    assert_eq!(passed, 50);
    let limited = total - 50;
    // Every limited response bumped the one bucket's slip count: exactly half slip.
    assert_eq!(
        rrl.stats(),
        RrlStats {
            passed: 50,
            dropped: limited / 2,
            slipped: limited / 2,
        }
    );
}

fn flood_many_networks(rrl: &Rrl, thread: u8, now: u64) {
    for net in 0..16u8 {
        for host in 0..250u8 {
            let client = IpAddr::from([10, thread, net, host]);
            rrl.check(client, ResponseClass::Positive, NAME, now);
        }
    }
}

#[test]
fn many_networks_across_threads_count_as_a_sequential_run_would() {
    let threaded = Rrl::new(config(10, 15));
    thread::scope(|s| {
        for t in 0..THREADS {
            let rrl = &threaded;
            s.spawn(move || flood_many_networks(rrl, t as u8, T));
        }
    });
    let sequential = Rrl::new(config(10, 15));
    for t in 0..THREADS {
        flood_many_networks(&sequential, t as u8, T);
    }
    // Within one second a bucket passes `rate` and slips every other limited
    // response whatever the interleaving, so totals match exactly, including
    // any keys that share a bucket.
    assert_eq!(threaded.stats(), sequential.stats());
    let s = threaded.stats();
    assert_eq!(
        s.passed + s.dropped + s.slipped,
        (THREADS * 16 * 250) as u64
    );
    // With this seed and table no two of the 64 networks collide.
    assert_eq!(s.passed, (THREADS * 16 * 10) as u64);
}

#[test]
fn refills_under_contention_grant_one_budget_per_second() {
    let rrl = Rrl::new(config(25, 0));
    let seconds = 5u64;
    let barrier = Barrier::new(THREADS);
    let passed: u64 = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (rrl, barrier) = (&rrl, &barrier);
                s.spawn(move || {
                    let mut passed = 0u64;
                    for sec in 0..seconds {
                        // All threads work within the same second, then move on together.
                        barrier.wait();
                        for h in 0..1_000u32 {
                            let client = IpAddr::from([203, 0, 113, (h % 200) as u8]);
                            let v = rrl.check(client, ResponseClass::Nxdomain, b"", T + sec);
                            if v == RrlVerdict::Pass {
                                passed += 1;
                            }
                        }
                    }
                    passed
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(passed, 25 * seconds);
    assert_eq!(rrl.stats().passed, 25 * seconds);
}

#[test]
fn rrl_is_shareable_between_threads() {
    fn assert_sync<T: Sync + Send>() {}
    assert_sync::<Rrl>();
}
