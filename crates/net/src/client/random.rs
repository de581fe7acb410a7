//! Query IDs and source ports drawn from the operating system's CSPRNG
//! (RFC 5452 §9.2, §10): an off-path forger must guess both, 32 bits or so,
//! instead of the 16 of an ID alone. There is no weaker fallback: a failing
//! generator is an error the caller sees.

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
    let r = getrandom::u32().map_err(ClientError::Random)?;
    Ok(port_from(r))
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
    fn drawn_ports_cover_the_unprivileged_range_exactly() {
        assert_eq!(port_from(0), 1024);
        assert_eq!(port_from(u32::MAX), 65535);
        assert_eq!(port_from(u32::MAX / 2), 1024 + 32256 - 1);
    }
}
