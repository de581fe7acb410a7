//! DNS cookies (RFC 7873) with the interoperable server cookie of RFC 9018:
//! version 1, reserved, 32-bit timestamp, SipHash-2-4 over client cookie,
//! version, reserved, timestamp and client address.

use std::net::IpAddr;

/// A 128-bit SipHash key shared by the servers of one anycast set (RFC 9018 §4).
#[derive(Clone, PartialEq, Eq)]
pub struct CookieSecret(pub [u8; 16]);

impl core::fmt::Debug for CookieSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CookieSecret(..)")
    }
}

/// The verdict on a server cookie a client sent back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieCheck {
    /// Minted by us (current or previous secret) within the validity window.
    Valid {
        /// Older than the refresh age (RFC 9018 §4.3: half an hour): send a new one.
        refresh: bool,
    },
    /// Wrong length, wrong version, outside the window, or bad hash.
    Invalid,
}

/// Minting and checking server cookies. The current secret mints; the previous
/// one still validates during a rotation (RFC 9018 §4.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCookies {
    pub current: CookieSecret,
    pub previous: Option<CookieSecret>,
}

impl ServerCookies {
    /// The 16-octet server cookie for this client at `now` (Unix seconds, mod 2^32).
    pub fn mint(&self, client_cookie: &[u8; 8], client: IpAddr, now: u32) -> [u8; 16] {
        let _ = (client_cookie, client, now);
        [0; 16]
    }

    /// Checks a server cookie the client sent back.
    pub fn check(
        &self,
        client_cookie: &[u8; 8],
        server_cookie: &[u8],
        client: IpAddr,
        now: u32,
    ) -> CookieCheck {
        let _ = (client_cookie, server_cookie, client, now);
        CookieCheck::Invalid
    }
}
