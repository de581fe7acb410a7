//! DNS cookies (RFC 7873 §5.2, server cookie of RFC 9018): what the client's
//! COOKIE option proves, the cookie we send back, and the policy that holds a
//! large UDP answer back until the client has proved its address.

use std::net::IpAddr;

use bulwark_guard::{CookieCheck, ServerCookies};
use bulwark_proto::message::Edns;
use bulwark_proto::Rcode;

use crate::response::{CookieOption, Response};
use crate::{CookiePolicy, Transport};

/// The cookie exchange of one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CookieState {
    /// What the response's COOKIE option carries.
    pub(crate) option: CookieOption,
    /// The client sent back a server cookie we minted, still within its window.
    pub(crate) valid: bool,
}

/// RFC 9018 §4.3: the timestamp is Unix time modulo 2^32 (serial arithmetic).
fn cookie_time(now: u64) -> u32 {
    u32::try_from(now & u64::from(u32::MAX)).unwrap_or(0)
}

/// Reads the query's COOKIE option (its lengths were checked when the message
/// was parsed: a malformed one is FORMERR, RFC 7873 §5.2.2) and decides the
/// server cookie to return. `None` when the query has no COOKIE option.
pub(crate) fn read_cookie(
    cookies: &ServerCookies,
    edns: &Edns<'_>,
    client: IpAddr,
    now: u64,
) -> Option<CookieState> {
    let (client_cookie, server_cookie) = edns.cookie()?;
    let now = cookie_time(now);
    let fresh = || cookies.mint(&client_cookie, client, now);
    // RFC 7873 §5.2.4: a server cookie we cannot validate is treated as if only
    // the client cookie had been sent: answer with a new one.
    let (server, valid) = match server_cookie {
        Some(sc) => match cookies.check(&client_cookie, sc, client, now) {
            // RFC 9018 §4.3: a cookie still young enough is sent back as it came.
            CookieCheck::Valid { refresh: false } => {
                (<[u8; 16]>::try_from(sc).unwrap_or_else(|_| fresh()), true)
            }
            CookieCheck::Valid { refresh: true } => (fresh(), true),
            CookieCheck::Invalid => (fresh(), false),
        },
        // RFC 7873 §5.2.3: only a client cookie: answer with a new server cookie.
        None => (fresh(), false),
    };
    Some(CookieState {
        option: CookieOption {
            client: client_cookie,
            server,
        },
        valid,
    })
}

/// The policy step, run once the answer is written: over UDP, an answer larger
/// than the threshold goes only to a client with a valid server cookie. A
/// client that sent a client cookie gets BADCOOKIE and the fresh server cookie
/// to retry with (RFC 7873 §5.2.3); one that sent none gets an empty truncated
/// response, so it retries over TCP, which proves its address just as well.
/// Returns whether the response was replaced by BADCOOKIE.
pub(crate) fn require_cookie(
    resp: &mut Response<'_>,
    policy: CookiePolicy,
    transport: Transport,
    cookie: Option<&CookieState>,
) -> bool {
    let Some(threshold) = policy.require_for_udp_above else {
        return false;
    };
    if transport != Transport::Udp
        || cookie.is_some_and(|c| c.valid)
        || resp.finished_len() <= usize::from(threshold)
    {
        return false;
    }
    resp.clear_records();
    if cookie.is_some() {
        resp.clear_truncated();
        resp.set_authoritative(false);
        resp.set_rcode(Rcode::BADCOOKIE);
        true
    } else {
        resp.set_truncated();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_time_wraps_modulo_two_to_the_32() {
        assert_eq!(cookie_time(5), 5);
        assert_eq!(cookie_time((1u64 << 32) + 7), 7);
    }
}
