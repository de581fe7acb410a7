//! The engine's randomness (query IDs, server choice) from the operating
//! system's CSPRNG, drawn a block at a time: one system call per 64 numbers.

use bulwark_net::client::fill_random;
use bulwark_resolver::Randomness;

const BLOCK: usize = 256;

pub struct OsRandom {
    block: [u8; BLOCK],
    used: usize,
}

impl OsRandom {
    /// Fails when the generator cannot be read at all: the resolver does not
    /// run on predictable numbers (RFC 5452 §9.2).
    pub fn new() -> anyhow::Result<OsRandom> {
        let mut block = [0u8; BLOCK];
        fill_random(&mut block)
            .map_err(|e| anyhow::anyhow!("cannot read the random number generator: {e}"))?;
        Ok(OsRandom { block, used: 0 })
    }
}

impl Randomness for OsRandom {
    fn next_u32(&mut self) -> u32 {
        let end = self.used.saturating_add(4);
        if end > BLOCK {
            // A generator that worked at start and fails now would be a
            // broken kernel; keep the old block rather than stop resolving.
            if fill_random(&mut self.block).is_err() {
                tracing::error!("the random number generator failed; reusing its last block");
            }
            self.used = 0;
        }
        let end = self.used.saturating_add(4);
        let mut four = [0u8; 4];
        if let Some(s) = self.block.get(self.used..end) {
            four.copy_from_slice(s);
        }
        self.used = end;
        u32::from_be_bytes(four)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn draws_differ_across_blocks() {
        let mut r = OsRandom::new().unwrap();
        let draws: Vec<u32> = (0..200).map(|_| r.next_u32()).collect();
        let distinct: std::collections::HashSet<_> = draws.iter().collect();
        // 200 draws of 32 bits: a repeat is a one-in-ten-million event.
        assert!(distinct.len() >= 199, "{distinct:?}");
    }
}
