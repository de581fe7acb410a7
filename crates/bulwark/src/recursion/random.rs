//! The engine's randomness (query IDs, server choice) from the operating
//! system's CSPRNG, drawn a block at a time ([`RandomBlock`]).

use bulwark_net::client::RandomBlock;
use bulwark_resolver::Randomness;

pub struct OsRandom {
    block: RandomBlock,
}

impl OsRandom {
    /// Fails when the generator cannot be read at all: the resolver does not
    /// run on predictable numbers (RFC 5452 §9.2).
    pub fn new() -> anyhow::Result<OsRandom> {
        let mut block = RandomBlock::EMPTY;
        block
            .next_u32()
            .map_err(|e| anyhow::anyhow!("cannot read the random number generator: {e}"))?;
        Ok(OsRandom { block })
    }
}

impl Randomness for OsRandom {
    fn next_u32(&mut self) -> u32 {
        match self.block.next_u32() {
            Ok(r) => r,
            Err(_) => {
                // A generator that worked at start and fails now would be a
                // broken kernel; keep the old block rather than stop resolving.
                tracing::error!("the random number generator failed; reusing its last block");
                self.block.rewind();
                self.block.next_u32().unwrap_or(0)
            }
        }
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
