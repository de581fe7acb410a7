//! What the resolver knows of each server it asks: how fast it answers
//! (smoothed RTT), whether it has stopped answering (time-outs, with back-off),
//! for which zones it is lame, and whether it speaks EDNS. Server selection
//! reads it: the fastest of the servers that may be asked, with some
//! spreading so that a slow server that got faster is noticed.

use std::collections::HashMap;
use std::net::IpAddr;

use bulwark_proto::Name;

use crate::Millis;

/// A server never heard from counts as this fast (Unbound's
/// UNKNOWN_SERVER_NICENESS), so it is tried before known slow ones and
/// after known fast ones.
pub const UNKNOWN_RTT_MS: u32 = 376;
/// Servers within this many milliseconds of the fastest are chosen among at
/// random (Unbound's selection band).
const BAND_MS: u32 = 400;
/// The longest back-off after repeated time-outs.
const MAX_HOLD_MS: u64 = 120_000;
/// RTTs are capped here: a server this slow is as good as down.
const MAX_RTT_MS: u32 = 120_000;
/// How long a server stays lame for a zone (Unbound's infra-lame-ttl).
pub const LAME_TTL_MS: u64 = 900_000;
/// Entries unused this long are forgotten.
const FORGET_AFTER_MS: u64 = 900_000;
/// Servers kept at most; past it the least recently used go.
const MAX_SERVERS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdnsSupport {
    Unknown,
    Works,
    /// It answered FORMERR or NOTIMP to EDNS: asked without it.
    Broken,
}

#[derive(Debug, Clone)]
struct Server {
    srtt: u32,
    /// Time-outs in a row.
    timeouts: u32,
    /// Not asked before this, after time-outs (unless nothing else is left).
    held_until: Millis,
    edns: EdnsSupport,
    /// The server cookie it last sent us (RFC 7873 §5.3), sent back with
    /// every query to it.
    server_cookie: Option<Vec<u8>>,
    last_used: Millis,
}

impl Server {
    fn new(now: Millis) -> Server {
        Server {
            srtt: UNKNOWN_RTT_MS,
            timeouts: 0,
            held_until: 0,
            edns: EdnsSupport::Unknown,
            server_cookie: None,
            last_used: now,
        }
    }
}

#[derive(Debug, Default)]
pub struct Infra {
    servers: HashMap<IpAddr, Server>,
    lame: HashMap<(IpAddr, Name), Millis>,
}

impl Infra {
    pub fn new() -> Infra {
        Infra::default()
    }

    /// Picks the server to ask among `candidates` for `zone`: not in `tried`,
    /// not lame for the zone, not held down after time-outs; among those, one
    /// at random from the band of the fastest. When every untried one is
    /// held down, the one released soonest (a probe). `None` when none is
    /// left.
    pub fn choose(
        &mut self,
        candidates: &[IpAddr],
        zone: &Name,
        tried: &[IpAddr],
        now: Millis,
        random: u32,
    ) -> Option<IpAddr> {
        let zone = zone.to_lowercase();
        let usable: Vec<(IpAddr, u32, Millis)> = candidates
            .iter()
            .filter(|ip| !tried.contains(ip))
            .filter(|ip| {
                self.lame
                    .get(&(**ip, zone.clone()))
                    .is_none_or(|until| *until <= now)
            })
            .map(|ip| {
                let s = self.servers.get(ip);
                (
                    *ip,
                    s.map_or(UNKNOWN_RTT_MS, |s| s.srtt),
                    s.map_or(0, |s| s.held_until),
                )
            })
            .collect();
        let ready: Vec<&(IpAddr, u32, Millis)> =
            usable.iter().filter(|(_, _, held)| *held <= now).collect();
        if ready.is_empty() {
            return usable.iter().min_by_key(|(_, _, held)| *held).map(|u| u.0);
        }
        let best = ready.iter().map(|(_, rtt, _)| *rtt).min()?;
        let band: Vec<IpAddr> = ready
            .iter()
            .filter(|(_, rtt, _)| *rtt <= best.saturating_add(BAND_MS))
            .map(|(ip, _, _)| *ip)
            .collect();
        let len = u32::try_from(band.len()).ok()?.max(1);
        let pick = usize::try_from(random.checked_rem(len)?).ok()?;
        band.get(pick).copied()
    }

    fn server(&mut self, ip: IpAddr, now: Millis) -> &mut Server {
        if self.servers.len() >= MAX_SERVERS && !self.servers.contains_key(&ip) {
            self.forget_old(now);
        }
        let s = self.servers.entry(ip).or_insert_with(|| Server::new(now));
        s.last_used = now;
        s
    }

    /// An answer came after `rtt_ms`: RFC 6298's smoothing (7/8 old, 1/8 new).
    pub fn answered(&mut self, ip: IpAddr, rtt_ms: u32, now: Millis) {
        let s = self.server(ip, now);
        let rtt = rtt_ms.min(MAX_RTT_MS);
        s.srtt = if s.timeouts > 0 || s.srtt == UNKNOWN_RTT_MS {
            rtt
        } else {
            let blended = u64::from(s.srtt)
                .saturating_mul(7)
                .saturating_add(u64::from(rtt))
                / 8;
            u32::try_from(blended).unwrap_or(MAX_RTT_MS)
        };
        s.timeouts = 0;
        s.held_until = 0;
    }

    /// No answer in time: its RTT doubles, and after the second time-out in a
    /// row it is held back, for longer each time.
    pub fn timed_out(&mut self, ip: IpAddr, now: Millis) {
        let s = self.server(ip, now);
        s.timeouts = s.timeouts.saturating_add(1);
        s.srtt = s.srtt.saturating_mul(2).clamp(UNKNOWN_RTT_MS, MAX_RTT_MS);
        if s.timeouts >= 2 {
            let shift = s.timeouts.saturating_sub(2).min(16);
            let hold = 1000u64
                .checked_shl(shift)
                .unwrap_or(MAX_HOLD_MS)
                .min(MAX_HOLD_MS);
            s.held_until = now.saturating_add(hold);
        }
    }

    /// The server answered for `zone` without authority, or refused.
    pub fn lame_for(&mut self, ip: IpAddr, zone: &Name, now: Millis) {
        self.lame
            .insert((ip, zone.to_lowercase()), now.saturating_add(LAME_TTL_MS));
        if self.lame.len() > MAX_SERVERS {
            self.lame.retain(|_, until| *until > now);
            if self.lame.len() > MAX_SERVERS / 2 {
                // All still fresh: start again rather than walk the map at
                // every insert from now on.
                self.lame.clear();
            }
        }
    }

    pub fn edns(&self, ip: IpAddr) -> EdnsSupport {
        self.servers
            .get(&ip)
            .map_or(EdnsSupport::Unknown, |s| s.edns)
    }

    pub fn set_edns(&mut self, ip: IpAddr, support: EdnsSupport, now: Millis) {
        self.server(ip, now).edns = support;
    }

    pub fn server_cookie(&self, ip: IpAddr) -> Option<&[u8]> {
        self.servers.get(&ip)?.server_cookie.as_deref()
    }

    /// Keeps the server cookie `ip` sent (8 to 32 octets, RFC 7873 §4).
    pub fn set_server_cookie(&mut self, ip: IpAddr, cookie: &[u8], now: Millis) {
        if (8..=32).contains(&cookie.len()) {
            self.server(ip, now).server_cookie = Some(cookie.to_vec());
        }
    }

    /// The smoothed RTT, or the unknown-server figure.
    pub fn srtt(&self, ip: IpAddr) -> u32 {
        self.servers.get(&ip).map_or(UNKNOWN_RTT_MS, |s| s.srtt)
    }

    /// Forgets everything known of `ip`: it is next chosen as a server
    /// never heard from.
    pub fn forget(&mut self, ip: IpAddr) {
        self.servers.remove(&ip);
        self.lame.retain(|(lame_ip, _), _| *lame_ip != ip);
    }

    /// Forgets everything known of every server.
    pub fn forget_all(&mut self) {
        self.servers.clear();
        self.lame.clear();
    }

    fn forget_old(&mut self, now: Millis) {
        self.servers
            .retain(|_, s| now.saturating_sub(s.last_used) < FORGET_AFTER_MS);
        if self.servers.len() >= MAX_SERVERS {
            // Still full: drop the least recently used half.
            let mut used: Vec<Millis> = self.servers.values().map(|s| s.last_used).collect();
            used.sort_unstable();
            let cut = used.get(used.len() / 2).copied().unwrap_or(now);
            self.servers.retain(|_, s| s.last_used > cut);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_fastest_band_is_chosen_and_slow_servers_are_left_alone() {
        let mut infra = Infra::new();
        let (a, b, c) = (ip("192.0.2.1"), ip("192.0.2.2"), ip("192.0.2.3"));
        infra.answered(a, 10, 0);
        infra.answered(b, 30, 0);
        infra.answered(c, 2000, 0);
        let zone: Name = "test.".parse().unwrap();
        for r in 0..50 {
            let chosen = infra.choose(&[a, b, c], &zone, &[], 1, r).unwrap();
            assert_ne!(chosen, c, "far slower than the band");
        }
        assert_eq!(infra.choose(&[a, b, c], &zone, &[a, b], 1, 0), Some(c));
        assert_eq!(infra.choose(&[a], &zone, &[a], 1, 0), None);
    }

    #[test]
    fn time_outs_hold_a_server_back_and_an_answer_restores_it() {
        let mut infra = Infra::new();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        let zone: Name = "test.".parse().unwrap();
        infra.timed_out(a, 0);
        infra.timed_out(a, 0);
        for r in 0..10 {
            assert_eq!(infra.choose(&[a, b], &zone, &[], 10, r), Some(b));
        }
        // Nothing else left: the held server is probed.
        assert_eq!(infra.choose(&[a, b], &zone, &[b], 10, 0), Some(a));
        infra.answered(a, 5, 20);
        assert_eq!(infra.srtt(a), 5);
    }

    #[test]
    fn a_forgotten_server_is_a_stranger_again_and_only_it() {
        let mut infra = Infra::new();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        let zone: Name = "test.".parse().unwrap();
        for _ in 0..4 {
            infra.timed_out(a, 0);
            infra.timed_out(b, 0);
        }
        infra.lame_for(a, &zone, 0);
        infra.lame_for(b, &zone, 0);
        infra.set_edns(a, EdnsSupport::Broken, 0);
        infra.forget(a);
        assert_eq!(infra.srtt(a), UNKNOWN_RTT_MS);
        assert_eq!(infra.edns(a), EdnsSupport::Unknown);
        assert_eq!(infra.choose(&[a, b], &zone, &[], 1, 0), Some(a));
        assert_ne!(infra.srtt(b), UNKNOWN_RTT_MS, "b is remembered");
        assert_eq!(
            infra.choose(&[b], &zone, &[], 1, 0),
            None,
            "b is still lame"
        );
        infra.forget_all();
        assert_eq!(infra.choose(&[b], &zone, &[], 1, 0), Some(b));
    }

    #[test]
    fn a_lame_server_is_skipped_for_that_zone_only() {
        let mut infra = Infra::new();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        let lame_zone: Name = "lame.test.".parse().unwrap();
        let other: Name = "other.test.".parse().unwrap();
        infra.lame_for(a, &lame_zone, 0);
        for r in 0..10 {
            assert_eq!(infra.choose(&[a, b], &lame_zone, &[], 1, r), Some(b));
        }
        assert!((0..10).any(|r| infra.choose(&[a, b], &other, &[], 1, r) == Some(a)));
        assert_eq!(
            infra.choose(&[a], &lame_zone, &[], LAME_TTL_MS + 1, 0),
            Some(a),
            "lameness expires"
        );
    }
}
