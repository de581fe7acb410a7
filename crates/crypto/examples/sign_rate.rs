//! Raw signing rate of the crypto library on one thread, per DNSSEC
//! algorithm: the ceiling a signer can reach (bench/signing.sh compares
//! zone signers against it).
//!
//! Usage: sign_rate [SECONDS_PER_ALGORITHM]   (default 2)
#![allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]

use std::time::{Duration, Instant};

use bulwark_crypto::{Algorithm, SigningKey};

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    // About the size of an RRSIG header plus a small RRset.
    let data = [0x5au8; 120];
    for algorithm in Algorithm::ALL {
        let key = SigningKey::generate(algorithm, None).unwrap();
        let budget = Duration::from_secs_f64(seconds);
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < budget {
            for _ in 0..16 {
                std::hint::black_box(key.sign(&data).unwrap());
            }
            n += 16;
        }
        let rate = n as f64 / start.elapsed().as_secs_f64();
        println!(
            "{}\t{}\t{rate:.0}",
            algorithm.number(),
            algorithm.mnemonic()
        );
    }
}
