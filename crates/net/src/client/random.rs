//! Query IDs and source ports drawn from the operating system's CSPRNG
//! (RFC 5452 §9.2, §10): an off-path forger must guess both, 32 bits or so,
//! instead of the 16 of an ID alone. There is no weaker fallback: a failing
//! generator is an error the caller sees.
//!
//! Ports are drawn for every upstream query, so they come from a per-thread
//! buffer of the generator's output, refilled a few hundred octets at a
//! time: one `getrandom` system call per 64 ports instead of one per query.
//! Buffered output is as unpredictable as fresh output; it only has to stay
//! in memory no one else reads, as the process's keys do.

use std::cell::RefCell;

use super::error::ClientError;

/// The lowest port drawn: below it ports need privileges and belong to
/// well-known services (RFC 6335 §6).
const FIRST_UNPRIVILEGED_PORT: u16 = 1024;
/// How many ports may be drawn: 1024..=65535.
const PORT_CHOICES: u64 = 65536 - FIRST_UNPRIVILEGED_PORT as u64;

/// A fresh, unpredictable query ID (RFC 5452 §9.2).
pub fn random_id() -> Result<u16, ClientError> {
    let mut octets = [0u8; 2];
    getrandom::fill(&mut octets).map_err(ClientError::Random)?;
    Ok(u16::from_be_bytes(octets))
}

/// Fills `buf` from the operating system's CSPRNG: for a caller that draws
/// many numbers (a resolver's IDs and server choices) and buffers them.
pub fn fill_random(buf: &mut [u8]) -> Result<(), ClientError> {
    getrandom::fill(buf).map_err(ClientError::Random)
}

/// An unpredictable source port in the unprivileged range 1024..=65535
/// (RFC 5452 §10: draw from as many ports as possible; RFC 6056 §3.2).
pub fn random_port() -> Result<u16, ClientError> {
    BUFFERED.with(|b| b.borrow_mut().next_u32()).map(port_from)
}

/// Octets of the generator's output a block holds.
const BLOCK_OCTETS: usize = 256;

thread_local! {
    static BUFFERED: RefCell<RandomBlock> = const { RefCell::new(RandomBlock::EMPTY) };
}

/// The generator's output drawn a block at a time, 32 bits per draw: one
/// system call per 64 draws. Every octet is handed out once.
pub struct RandomBlock {
    octets: [u8; BLOCK_OCTETS],
    /// Where the next draw starts; `BLOCK_OCTETS` when all are spent.
    next: usize,
}

/// The octets are secret: only how many are left is shown.
impl std::fmt::Debug for RandomBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RandomBlock")
            .field("left", &BLOCK_OCTETS.saturating_sub(self.next))
            .finish()
    }
}

impl RandomBlock {
    /// A block with nothing left: the first draw fills it.
    pub const EMPTY: Self = Self {
        octets: [0; BLOCK_OCTETS],
        next: BLOCK_OCTETS,
    };

    /// The next 32 bits, refilling the block when it is spent. On an error
    /// the block is left spent.
    pub fn next_u32(&mut self) -> Result<u32, ClientError> {
        if self.next.saturating_add(4) > BLOCK_OCTETS {
            fill_random(&mut self.octets)?;
            self.next = 0;
        }
        let end = self.next.saturating_add(4);
        let mut word = [0u8; 4];
        if let Some(four) = self.octets.get(self.next..end) {
            word.copy_from_slice(four);
        }
        self.next = end;
        Ok(u32::from_be_bytes(word))
    }

    /// Hands the block's octets out again: for a caller that would rather
    /// go on with old output than stop when the generator fails.
    pub fn rewind(&mut self) {
        self.next = 0;
    }
}

/// Maps a uniform 32-bit draw onto the port range by multiplying and keeping
/// the high half, which spreads it evenly (a bias of at most one part in
/// 65 000, where `r % n` would favour the first 1024 ports twofold).
fn port_from(r: u32) -> u16 {
    let offset = u64::from(r)
        .saturating_mul(PORT_CHOICES)
        .checked_shr(32)
        .and_then(|o| u16::try_from(o).ok())
        .unwrap_or(0);
    FIRST_UNPRIVILEGED_PORT.saturating_add(offset)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )]
    use super::*;

    #[test]
    fn buffered_draws_are_not_repeated_across_a_refill() {
        // 1,000 draws span several refills; 32-bit words from a CSPRNG
        // collide among 1,000 with probability about 1 in 8.6 million.
        let mut b = RandomBlock::EMPTY;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(b.next_u32().unwrap()));
        }
        assert_eq!(b.next % 4, 0);
    }

    #[test]
    fn a_spent_buffer_is_refilled_not_reread() {
        let mut b = RandomBlock::EMPTY;
        b.next_u32().unwrap();
        let first = b.octets;
        for _ in 1..BLOCK_OCTETS / 4 {
            b.next_u32().unwrap();
        }
        assert_eq!(b.next, BLOCK_OCTETS);
        b.next_u32().unwrap();
        assert_eq!(b.next, 4);
        assert_ne!(b.octets, first);
    }

    #[test]
    fn drawn_ports_cover_the_unprivileged_range_exactly() {
        assert_eq!(port_from(0), 1024);
        assert_eq!(port_from(u32::MAX), 65535);
        assert_eq!(port_from(u32::MAX / 2), 1024 + 32256 - 1);
    }
}
