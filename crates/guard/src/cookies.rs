//! DNS cookies (RFC 7873) with the interoperable server cookie of RFC 9018:
//! version 1, reserved, 32-bit timestamp, SipHash-2-4 over client cookie,
//! version, reserved, timestamp and client address.

use core::hash::Hasher;
use std::net::IpAddr;

use siphasher::sip::SipHasher24;

/// A 128-bit SipHash key shared by the servers of one anycast set (RFC 9018 §4).
#[derive(Clone, PartialEq, Eq)]
pub struct CookieSecret(pub [u8; 16]);

impl core::fmt::Debug for CookieSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CookieSecret(..)")
    }
}

/// A secret that is not 32 hexadecimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cookie secret must be 32 hexadecimal digits (16 octets), optionally prefixed 0x")]
pub struct SecretError;

/// Octets in a secret: SipHash keys are 128 bits.
const SECRET_LEN: usize = 16;

impl core::str::FromStr for CookieSecret {
    type Err = SecretError;
    /// Parses 32 hexadecimal digits, optionally prefixed `0x` (Knot's
    /// `mod-cookies` and BIND's `cookie-secret` notations).
    fn from_str(s: &str) -> Result<CookieSecret, SecretError> {
        let hex = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .unwrap_or(s);
        let digits = hex.as_bytes();
        if digits.len() != SECRET_LEN.saturating_mul(2) {
            return Err(SecretError);
        }
        let mut out = [0u8; SECRET_LEN];
        for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let (hi, lo) = match pair {
                [hi, lo] => (hex_value(*hi)?, hex_value(*lo)?),
                _ => return Err(SecretError),
            };
            *byte = (hi << 4) | lo;
        }
        Ok(CookieSecret(out))
    }
}

fn hex_value(digit: u8) -> Result<u8, SecretError> {
    char::from(digit)
        .to_digit(16)
        .and_then(|v| u8::try_from(v).ok())
        .ok_or(SecretError)
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

/// Octets of an RFC 9018 server cookie: version, reserved (3), timestamp (4), hash (8).
pub const SERVER_COOKIE_LEN: usize = 16;
/// Octets of a client cookie (RFC 7873 §4.1).
pub const CLIENT_COOKIE_LEN: usize = 8;
/// RFC 9018 §4.2: the only version defined.
const VERSION: u8 = 1;
/// RFC 9018 §4.3: a cookie more than an hour old is invalid...
const MAX_AGE_SECS: i64 = 3600;
/// ...as is one more than five minutes in the future (clock skew in an anycast set).
const MAX_FUTURE_SECS: i64 = 300;
/// RFC 9018 §4.3: a cookie older than half an hour should be replaced.
const REFRESH_AGE_SECS: i64 = 1800;

/// Minting and checking server cookies. The current secret mints; the previous
/// one still validates during a rotation (RFC 9018 §4.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCookies {
    pub current: CookieSecret,
    pub previous: Option<CookieSecret>,
}

impl ServerCookies {
    /// Cookies minted and checked with one secret.
    pub fn new(current: CookieSecret) -> ServerCookies {
        ServerCookies {
            current,
            previous: None,
        }
    }

    /// The next generation after a rotation: `next` mints, the current secret
    /// keeps validating cookies already handed out (RFC 9018 §4.4).
    pub fn rotated(&self, next: CookieSecret) -> ServerCookies {
        ServerCookies {
            current: next,
            previous: Some(self.current.clone()),
        }
    }

    /// The 16-octet server cookie for this client at `now` (Unix seconds, mod 2^32).
    pub fn mint(&self, client_cookie: &[u8; 8], client: IpAddr, now: u32) -> [u8; 16] {
        let hash = cookie_hash(&self.current, client_cookie, client, now);
        let ts = now.to_be_bytes();
        let [t0, t1, t2, t3] = ts;
        let [h0, h1, h2, h3, h4, h5, h6, h7] = hash;
        [
            VERSION, 0, 0, 0, t0, t1, t2, t3, h0, h1, h2, h3, h4, h5, h6, h7,
        ]
    }

    /// Checks a server cookie the client sent back.
    ///
    /// The timestamp is compared with `now` in serial-number arithmetic
    /// (RFC 1982), so the check keeps working across the 2106 wrap of 32-bit
    /// seconds and never panics whatever `now` is.
    pub fn check(
        &self,
        client_cookie: &[u8; 8],
        server_cookie: &[u8],
        client: IpAddr,
        now: u32,
    ) -> CookieCheck {
        let Ok(cookie) = <&[u8; SERVER_COOKIE_LEN]>::try_from(server_cookie) else {
            return CookieCheck::Invalid;
        };
        let [version, r0, r1, r2, t0, t1, t2, t3, h0, h1, h2, h3, h4, h5, h6, h7] = *cookie;
        // RFC 9018 §4.2: the reserved octets are zero when minted and hashed as
        // sent, so a non-zero value simply fails the hash below.
        if version != VERSION {
            return CookieCheck::Invalid;
        }
        let timestamp = u32::from_be_bytes([t0, t1, t2, t3]);
        let age = serial_age(now, timestamp);
        if age > MAX_AGE_SECS || age < MAX_FUTURE_SECS.saturating_neg() {
            return CookieCheck::Invalid;
        }
        let sent = [h0, h1, h2, h3, h4, h5, h6, h7];
        let reserved = [r0, r1, r2];
        let matches = |secret: &CookieSecret| {
            let expected = hash_fields(secret, client_cookie, reserved, timestamp, client);
            constant_time_eq(&expected, &sent)
        };
        let valid = matches(&self.current) || self.previous.as_ref().is_some_and(matches);
        if valid {
            CookieCheck::Valid {
                refresh: age > REFRESH_AGE_SECS,
            }
        } else {
            CookieCheck::Invalid
        }
    }
}

/// How many seconds `timestamp` lies before `now`, negative when it lies
/// after: RFC 1982 serial arithmetic on 32 bits, i.e. the signed distance.
fn serial_age(now: u32, timestamp: u32) -> i64 {
    // The wrapping difference read as two's complement is the serial distance.
    i64::from(i32::from_ne_bytes(
        now.wrapping_sub(timestamp).to_ne_bytes(),
    ))
}

fn cookie_hash(
    secret: &CookieSecret,
    client_cookie: &[u8; 8],
    client: IpAddr,
    now: u32,
) -> [u8; 8] {
    hash_fields(secret, client_cookie, [0; 3], now, client)
}

/// RFC 9018 §4.4: SipHash-2-4 keyed with the secret over
/// Client Cookie | Version | Reserved | Timestamp | Client-IP.
fn hash_fields(
    secret: &CookieSecret,
    client_cookie: &[u8; 8],
    reserved: [u8; 3],
    timestamp: u32,
    client: IpAddr,
) -> [u8; 8] {
    let mut h = SipHasher24::new_with_key(&secret.0);
    h.write(client_cookie);
    h.write(&[VERSION]);
    h.write(&reserved);
    h.write(&timestamp.to_be_bytes());
    // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d; hash the 4-octet
    // form so the cookie matches what an IPv4-only server computes.
    match client.to_canonical() {
        IpAddr::V4(a) => h.write(&a.octets()),
        IpAddr::V6(a) => h.write(&a.octets()),
    }
    // The reference implementation emits the 64-bit SipHash result little-endian.
    h.finish().to_le_bytes()
}

/// Compares without an early exit so the time taken does not tell how many
/// leading hash octets a forged cookie got right.
fn constant_time_eq(a: &[u8; 8], b: &[u8; 8]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    use super::*;

    fn hex<const N: usize>(s: &str) -> [u8; N] {
        let mut out = [0u8; N];
        assert_eq!(s.len(), N * 2, "{s}");
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[i * 2..i * 2 + 2], 16).unwrap();
        }
        out
    }

    fn secret(s: &str) -> CookieSecret {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const SECRET_1: &str = "e5e973e5a6b2a43f48e7dc849e37bfcf";
    const SECRET_2: &str = "445536bcd2513298075a5d379663c962";

    /// RFC 9018 Appendix A: (secret, client cookie, client, time, server cookie).
    const VECTORS: [(&str, &str, &str, u32, &str); 4] = [
        // A.1: learning a new server cookie.
        (
            SECRET_1,
            "2464c4abcf10c957",
            "198.51.100.100",
            1_559_731_985,
            "010000005cf79f111f8130c3eee29480",
        ),
        // A.2: the same client, 40 minutes later, gets a renewed cookie.
        (
            SECRET_1,
            "2464c4abcf10c957",
            "198.51.100.100",
            1_559_734_385,
            "010000005cf7a871d4a564a1442aca77",
        ),
        // A.3: another client.
        (
            SECRET_1,
            "fc93fc62807ddb86",
            "203.0.113.203",
            1_559_734_700,
            "010000005cf7a9acf73a7810aca2381e",
        ),
        // A.4: IPv6 client after the secret rolled over.
        (
            SECRET_2,
            "22681ab97d52c298",
            "2001:db8:220:1:59de:d0f4:8769:82b8",
            1_559_741_961,
            "010000005cf7c609a6bb79d16625507a",
        ),
    ];

    #[test]
    fn mint_matches_rfc9018_test_vectors() {
        for (s, cc, client, now, want) in VECTORS {
            let cookies = ServerCookies::new(secret(s));
            let got = cookies.mint(&hex(cc), ip(client), now);
            assert_eq!(got, hex::<16>(want), "{client} at {now}");
        }
    }

    #[test]
    fn rfc9018_vectors_validate_when_received() {
        for (s, cc, client, now, sc) in VECTORS {
            let cookies = ServerCookies::new(secret(s));
            let v = cookies.check(&hex(cc), &hex::<16>(sc), ip(client), now + 10);
            assert_eq!(v, CookieCheck::Valid { refresh: false }, "{client}");
        }
    }

    #[test]
    fn rfc9018_a2_old_cookie_is_valid_but_due_for_refresh() {
        // A.2: the client returns the A.1 cookie 40 minutes later.
        let cookies = ServerCookies::new(secret(SECRET_1));
        let v = cookies.check(
            &hex("2464c4abcf10c957"),
            &hex::<16>("010000005cf79f111f8130c3eee29480"),
            ip("198.51.100.100"),
            1_559_734_385,
        );
        assert_eq!(v, CookieCheck::Valid { refresh: true });
    }

    #[test]
    fn rfc9018_a4_cookie_under_previous_secret_still_validates() {
        // A.4: the client holds an A.3-era cookie minted with the old secret.
        let old = ServerCookies::new(secret(SECRET_1));
        let now = ServerCookies::new(secret(SECRET_2));
        let rotated = old.rotated(secret(SECRET_2));
        assert_eq!(rotated.current, secret(SECRET_2));
        let cc = hex("fc93fc62807ddb86");
        let sc = hex::<16>("010000005cf7a9acf73a7810aca2381e");
        let client = ip("203.0.113.203");
        assert_eq!(
            now.check(&cc, &sc, client, 1_559_734_800),
            CookieCheck::Invalid
        );
        assert_eq!(
            rotated.check(&cc, &sc, client, 1_559_734_800),
            CookieCheck::Valid { refresh: false }
        );
        // The new secret mints.
        assert_eq!(
            rotated.mint(&cc, client, 1_559_734_800),
            now.mint(&cc, client, 1_559_734_800)
        );
    }

    #[test]
    fn mint_matches_a_cookie_knotd_minted() {
        // Recorded from knotd 3.2.6 (mod-cookies, secret SECRET_1) answering
        // kdig from 127.0.0.1 with client cookie 0102030405060708.
        let cookies = ServerCookies::new(secret(SECRET_1));
        let got = cookies.mint(&hex("0102030405060708"), ip("127.0.0.1"), 0x6b02_7655);
        assert_eq!(got, hex::<16>("010000006b027655ce68953edd0894c3"));
    }

    fn sample() -> (ServerCookies, [u8; 8], IpAddr) {
        (
            ServerCookies::new(secret(SECRET_1)),
            hex("2464c4abcf10c957"),
            ip("192.0.2.1"),
        )
    }

    #[test]
    fn age_boundaries_follow_rfc9018() {
        let (c, cc, client) = sample();
        let t = 1_000_000;
        let sc = c.mint(&cc, client, t);
        let at = |now| c.check(&cc, &sc, client, now);
        assert_eq!(at(t), CookieCheck::Valid { refresh: false });
        assert_eq!(at(t + 1800), CookieCheck::Valid { refresh: false });
        assert_eq!(at(t + 1801), CookieCheck::Valid { refresh: true });
        assert_eq!(at(t + 3600), CookieCheck::Valid { refresh: true });
        assert_eq!(at(t + 3601), CookieCheck::Invalid);
        // Minted by a peer whose clock runs ahead.
        assert_eq!(at(t - 300), CookieCheck::Valid { refresh: false });
        assert_eq!(at(t - 301), CookieCheck::Invalid);
    }

    #[test]
    fn timestamps_compare_in_serial_arithmetic_across_the_wrap() {
        let (c, cc, client) = sample();
        let t = u32::MAX - 100;
        let sc = c.mint(&cc, client, t);
        assert_eq!(
            c.check(&cc, &sc, client, 500),
            CookieCheck::Valid { refresh: false }
        );
        assert_eq!(
            c.check(&cc, &sc, client, 1900),
            CookieCheck::Valid { refresh: true }
        );
        assert_eq!(c.check(&cc, &sc, client, 3600), CookieCheck::Invalid);
        let sc = c.mint(&cc, client, 100);
        assert_eq!(
            c.check(&cc, &sc, client, u32::MAX - 100),
            CookieCheck::Valid { refresh: false }
        );
        assert_eq!(
            c.check(&cc, &sc, client, u32::MAX - 300),
            CookieCheck::Invalid
        );
    }

    #[test]
    fn wrong_length_version_or_reserved_is_invalid() {
        let (c, cc, client) = sample();
        let sc = c.mint(&cc, client, 5000);
        assert_eq!(c.check(&cc, &sc[..15], client, 5000), CookieCheck::Invalid);
        let mut long = sc.to_vec();
        long.push(0);
        assert_eq!(c.check(&cc, &long, client, 5000), CookieCheck::Invalid);
        assert_eq!(c.check(&cc, &[], client, 5000), CookieCheck::Invalid);
        let mut bad = sc;
        bad[0] = 2;
        assert_eq!(c.check(&cc, &bad, client, 5000), CookieCheck::Invalid);
        let mut bad = sc;
        bad[2] = 1;
        assert_eq!(c.check(&cc, &bad, client, 5000), CookieCheck::Invalid);
    }

    #[test]
    fn cookie_is_bound_to_client_address_client_cookie_and_secret() {
        let (c, cc, client) = sample();
        let sc = c.mint(&cc, client, 5000);
        assert_eq!(
            c.check(&cc, &sc, ip("192.0.2.2"), 5000),
            CookieCheck::Invalid
        );
        assert_eq!(c.check(&[0; 8], &sc, client, 5000), CookieCheck::Invalid);
        let other = ServerCookies::new(secret(SECRET_2));
        assert_eq!(other.check(&cc, &sc, client, 5000), CookieCheck::Invalid);
        for i in 8..16 {
            let mut bad = sc;
            bad[i] ^= 0x40;
            assert_eq!(c.check(&cc, &bad, client, 5000), CookieCheck::Invalid);
        }
        // The timestamp is covered by the hash too.
        let mut bad = sc;
        bad[7] ^= 1;
        assert_eq!(c.check(&cc, &bad, client, 5000), CookieCheck::Invalid);
    }

    #[test]
    fn ipv4_mapped_client_gets_the_ipv4_cookie() {
        let (c, cc, _) = sample();
        let v4 = c.mint(&cc, ip("198.51.100.100"), 7);
        let mapped = c.mint(&cc, ip("::ffff:198.51.100.100"), 7);
        assert_eq!(v4, mapped);
        assert_eq!(
            c.check(&cc, &v4, ip("::ffff:198.51.100.100"), 7),
            CookieCheck::Valid { refresh: false }
        );
    }

    #[test]
    fn secret_parses_from_hex() {
        assert_eq!(secret(&format!("0x{SECRET_1}")), secret(SECRET_1));
        assert_eq!(secret(&SECRET_1.to_uppercase()), secret(SECRET_1));
        assert_eq!(secret(SECRET_1).0[0], 0xe5);
        for bad in [
            "",
            "0x",
            "e5e9",
            &format!("{SECRET_1}00"),
            "g5e973e5a6b2a43f48e7dc849e37bfcf",
        ] {
            assert_eq!(bad.parse::<CookieSecret>(), Err(SecretError), "{bad}");
        }
        assert_eq!(format!("{:?}", secret(SECRET_1)), "CookieSecret(..)");
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn check_never_panics(
                key in any::<[u8; 16]>(),
                prev in proptest::option::of(any::<[u8; 16]>()),
                cc in any::<[u8; 8]>(),
                sc in proptest::collection::vec(any::<u8>(), 0..40),
                v6 in any::<[u8; 16]>(),
                is_v6 in any::<bool>(),
                now in any::<u32>(),
            ) {
                let c = ServerCookies { current: CookieSecret(key), previous: prev.map(CookieSecret) };
                let client = if is_v6 {
                    IpAddr::from(v6)
                } else {
                    IpAddr::from([v6[0], v6[1], v6[2], v6[3]])
                };
                let _ = c.check(&cc, &sc, client, now);
            }

            #[test]
            fn minted_cookie_validates_within_window_and_never_panics(
                key in any::<[u8; 16]>(),
                cc in any::<[u8; 8]>(),
                addr in any::<[u8; 16]>(),
                minted in any::<u32>(),
                later in -400i64..4000,
            ) {
                let c = ServerCookies::new(CookieSecret(key));
                let client = IpAddr::from(addr);
                let sc = c.mint(&cc, client, minted);
                // `now` may run backwards relative to the mint (another server's clock).
                let now = (i64::from(minted) + later).rem_euclid(1 << 32) as u32;
                let v = c.check(&cc, &sc, client, now);
                let ok = (-300..=3600).contains(&later);
                prop_assert_eq!(matches!(v, CookieCheck::Valid { .. }), ok);
                if let CookieCheck::Valid { refresh } = v {
                    prop_assert_eq!(refresh, later > 1800);
                }
            }
        }
    }
}
