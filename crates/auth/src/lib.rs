//! Authoritative answering: a query's bytes and a `ZoneSet` in, a response's bytes out.
//!
//! `Answerer::answer_request` runs named steps, each in its own module: `query`
//! (read and validate), `cookie` (what the client's COOKIE proves), `edns` (size
//! limit, OPT with NSID, COOKIE and keepalive), `chaos` (server identity), the
//! zone's access check, `lookup` with `wildcard`, then `solve`'s answer / `cname`
//! / `dname` / `referral` / `negative` / `any`, `additional`, the RRL class
//! (`imputed`), and last the cookie policy. With the DO bit and a signed zone,
//! `dnssec` adds each RRset's signatures and `denial` the NSEC/NSEC3 proofs. `response` writes the message.
//! `Answerer::answer` is the same with no defences.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

mod access;
mod additional;
mod any;
mod chaos;
mod cname;
mod cookie;
mod denial;
mod divert;
mod dname;
mod dnssec;
mod edns;
mod imputed;
mod lookup;
mod negative;
mod query;
mod referral;
mod response;
mod response_cache;
mod solve;
mod wildcard;

use std::net::IpAddr;
use std::sync::Arc;

pub use bulwark_guard::{Access, ResponseClass, ServerCookies};
pub use divert::Divert;

use bulwark_proto::message::{
    bits, first_qtype, write_error_response, write_not_implemented, MessageView,
};
use bulwark_proto::{Class, Name, Opcode, Rcode, Rtype};
use bulwark_zone::ZoneSet;

use crate::imputed::Imputed;
use crate::query::{read_query, Rejected};
use crate::response::{ExtendedError, Response};
use crate::response_cache::ResponseCache;
use crate::solve::Scratch;

/// DNS flag day 2020: a UDP payload that avoids IP fragmentation on common paths.
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = 1232;

/// Answers to CH-class TXT queries (`id.server.`, `hostname.bind.`, `version.bind.`,
/// `version.server.`); each is answered only when configured, REFUSED otherwise.
/// `id.server.` answers `id_server` and `hostname.bind.` answers `hostname`, each
/// falling back to the other (Knot's single `identity` answers both);
/// `version.bind.` and `version.server.` answer `version`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChaosIdentity {
    pub id_server: Option<String>,
    pub hostname: Option<String>,
    pub version: Option<String>,
}

/// Server-wide answering policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerConfig {
    /// The largest UDP response we send, whatever the client advertises.
    pub max_udp_payload: u16,
    pub chaos: ChaosIdentity,
    /// RFC 5001: the name server identifier sent to clients that ask for it;
    /// `None` never sends one. Longer than [`MAX_NSID_LEN`] octets, it is not sent.
    pub nsid: Option<Vec<u8>>,
    /// When a valid server cookie (or TCP) is required (RFC 7873).
    pub cookies: CookiePolicy,
    /// RFC 7828: the idle timeout advertised over TCP, in units of 100 ms; `None`
    /// never advertises one.
    pub tcp_keepalive: Option<u16>,
}

/// The longest NSID sent: it must leave room for an answer in a 512-octet response.
pub const MAX_NSID_LEN: usize = 128;

/// What DNS cookies (RFC 7873) must prove before we answer, when cookies are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CookiePolicy {
    /// Over UDP, a response larger than this many octets goes only to a client
    /// that presented a valid server cookie. Others get BADCOOKIE with a fresh
    /// server cookie when they sent a client cookie (RFC 7873 §5.2.3), and an
    /// empty truncated response (retry over TCP) when they sent none.
    pub require_for_udp_above: Option<u16>,
}

impl Default for AnswerConfig {
    fn default() -> Self {
        AnswerConfig {
            max_udp_payload: DEFAULT_MAX_UDP_PAYLOAD,
            chaos: ChaosIdentity::default(),
            nsid: None,
            cookies: CookiePolicy::default(),
            tcp_keepalive: None,
        }
    }
}

/// The transport a query arrived on: it sets the response size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// Who asked, how, and when: what the defences need to know about a query.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub transport: Transport,
    pub client: IpAddr,
    /// Unix seconds, for cookie timestamps.
    pub now: u64,
    /// The server-cookie secrets; `None` when DNS cookies are off.
    pub cookies: Option<&'a ServerCookies>,
    /// Per-zone access control; `None` allows every client everywhere.
    pub zone_access: Option<&'a dyn ZoneAccess>,
    /// What a question in none of our zones gets when it asks for recursion.
    pub recursion: Recursion,
}

/// Whether the server recurses for this client (decided by the server's
/// configuration); it matters only for a question with RD set whose name
/// is in none of our zones (names in our zones are answered from them, as
/// Unbound answers an auth-zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recursion {
    /// No resolver: REFUSED with EDE 20, Not Authoritative.
    #[default]
    Off,
    /// A resolver, but not for this client: REFUSED with EDE 18,
    /// Prohibited (RFC 8914 §4.19), so no open resolver by accident.
    Refused,
    /// Handed back as [`AnswerOutcome::Recurse`].
    Offered,
}

/// A query to resolve, as read while answering it.
#[derive(Debug, Clone)]
pub struct RecursionRequest<'q> {
    pub query: MessageView<'q>,
    /// The response's size limit: the client's UDP payload size (capped by
    /// ours), or 65535 over TCP.
    pub limit: usize,
    /// The COOKIE option the response carries (client and server cookie),
    /// when cookies are on and the query had one.
    pub cookie: Option<([u8; 8], [u8; 16])>,
    /// The query presented a valid server cookie: its address is proven.
    pub cookie_valid: bool,
}

impl core::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Request")
            .field("transport", &self.transport)
            .field("client", &self.client)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Request<'_> {
    /// A request with no client identity and no defences: for tests and tools.
    pub fn plain(transport: Transport) -> Request<'static> {
        Request {
            transport,
            client: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            now: 0,
            cookies: None,
            zone_access: None,
            recursion: Recursion::Off,
        }
    }
}

/// Per-zone access control, decided by the server's configuration.
pub trait ZoneAccess {
    fn access(&self, apex: &Name, client: IpAddr) -> Access;
}

/// What became of a query.
#[derive(Debug, Clone)]
pub enum AnswerOutcome<'q> {
    /// `out` holds a response to send.
    Respond { rcode: Rcode, truncated: bool },
    /// Nothing to send: too short to carry a header, or itself a response (QR set).
    Drop,
    /// Nothing to send: the zone's access policy says to drop this client's
    /// queries silently (told apart from `Drop` so that it is counted as such).
    Denied,
    /// Nothing written: the query is the server's to handle (replication, or
    /// a TSIG-signed query), see [`Divert`]. The message as read here goes
    /// with it, so that it is not read again.
    Divert(Divert, MessageView<'q>),
    /// Nothing written: the question is in none of our zones, asks for
    /// recursion and the client may have it (see [`Recursion`]).
    Recurse(RecursionRequest<'q>),
}

impl AnswerOutcome<'_> {
    /// Where the query was diverted to, if it was.
    pub fn divert(&self) -> Option<Divert> {
        match self {
            AnswerOutcome::Divert(d, _) => Some(*d),
            _ => None,
        }
    }
}

/// Two outcomes are equal when they say the same; diverted ones when they
/// divert the same message the same way.
impl PartialEq for AnswerOutcome<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                AnswerOutcome::Respond { rcode, truncated },
                AnswerOutcome::Respond {
                    rcode: r,
                    truncated: t,
                },
            ) => rcode == r && truncated == t,
            (AnswerOutcome::Drop, AnswerOutcome::Drop)
            | (AnswerOutcome::Denied, AnswerOutcome::Denied) => true,
            (AnswerOutcome::Divert(d, m), AnswerOutcome::Divert(e, n)) => {
                d == e && m.as_bytes() == n.as_bytes()
            }
            (AnswerOutcome::Recurse(a), AnswerOutcome::Recurse(b)) => {
                a.query.as_bytes() == b.query.as_bytes()
                    && a.limit == b.limit
                    && a.cookie == b.cookie
            }
            _ => false,
        }
    }
}

/// What the last query asked, as read while answering it, so that statistics
/// and logs need not read it again. Both are `None` where the query could
/// not be read that far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    pub opcode: Option<Opcode>,
    /// The first question's type.
    pub qtype: Option<Rtype>,
}

impl Asked {
    /// What a query refused before answering (by a listener's ACL, say)
    /// asked, from its header and first question alone.
    pub fn peek(query: &[u8]) -> Asked {
        Asked {
            opcode: bits::opcode(query),
            qtype: first_qtype(query),
        }
    }
}

/// Answers queries. One per worker thread: it keeps scratch space between queries
/// so answering does not allocate.
#[derive(Debug)]
pub struct Answerer {
    config: Arc<AnswerConfig>,
    scratch: Scratch,
    /// The question's name, and its lowercased copy when it has capitals:
    /// filled in place for each query, since a fresh `Name` costs a 256-octet
    /// write and every move of one a 256-octet copy.
    qname: Name,
    qname_lower: Name,
    rdata: Vec<u8>,
    cookie_valid: bool,
    /// The last question was in none of our zones.
    not_ours: bool,
    asked: Asked,
    /// `None` unless asked for: worth it where one answerer sees many queries
    /// (a UDP worker), not per TCP connection.
    cache: Option<ResponseCache>,
}

impl Answerer {
    pub fn new(config: Arc<AnswerConfig>) -> Answerer {
        Answerer {
            config,
            scratch: Scratch::default(),
            qname: Name::root(),
            qname_lower: Name::root(),
            rdata: Vec::new(),
            cookie_valid: false,
            not_ours: false,
            asked: Asked::default(),
            cache: None,
        }
    }

    /// Remembers up to `slots` complete responses (rounded up to a power of
    /// two) and replays them for the same question; 0 turns the cache off.
    pub fn with_response_cache(mut self, slots: usize) -> Answerer {
        self.cache = (slots > 0).then(|| ResponseCache::new(slots));
        self
    }

    pub fn config(&self) -> &AnswerConfig {
        &self.config
    }

    /// Clears `out` and writes into it the response to `query`, with no defences.
    pub fn answer<'q>(
        &mut self,
        zones: &ZoneSet,
        transport: Transport,
        query: &'q [u8],
        out: &mut Vec<u8>,
    ) -> AnswerOutcome<'q> {
        self.answer_request(zones, &Request::plain(transport), query, out)
    }

    /// Starts reading what the response cache holds for each of `queries`,
    /// a batch about to be answered one after the other with `transport`
    /// and the cookie setting `cookies_on`: their reads from main memory
    /// then overlap instead of each answer waiting for its own, and each
    /// query's lookup reuses the key's hash worked out here. Changes nothing
    /// a caller can see, provided the queries' buffers are not refilled
    /// before [`Answerer::end_of_batch`]; without a cache it does nothing.
    ///
    /// The zone data of the answers the cache will not give is not read
    /// ahead this way: each lookup is a chain of reads, each waiting for
    /// the one before, and running the chains ahead of the answers moved
    /// the waits rather than overlapping them (measured on the mix).
    pub fn prefetch_batch<'q>(
        &mut self,
        queries: impl Iterator<Item = &'q [u8]>,
        transport: Transport,
        cookies_on: bool,
    ) {
        if let Some(cache) = self.cache.as_mut() {
            cache.prefetch(queries, transport, cookies_on);
        }
    }

    /// Ends the batch last passed to [`Answerer::prefetch_batch`]: its
    /// buffers may be refilled from now on.
    pub fn end_of_batch(&mut self) {
        if let Some(cache) = self.cache.as_mut() {
            cache.end_batch();
        }
    }

    /// The class and imputed name (lowercase wire form) of the last response, for
    /// response rate limiting: the query name for an answer or NODATA, the zone
    /// apex for NXDOMAIN, the delegation point for a referral, `*.<encloser>`
    /// for a wildcard expansion, and no name for an error.
    pub fn rrl_key(&self) -> (ResponseClass, &[u8]) {
        self.scratch.imputed.key()
    }

    /// Whether the last query presented a valid server cookie (RFC 7873 §5.2.5):
    /// its source address is proven, so the server need not rate-limit it.
    pub fn cookie_valid(&self) -> bool {
        self.cookie_valid
    }

    /// The opcode and question type of the last query.
    pub fn asked(&self) -> Asked {
        self.asked
    }

    /// Clears `out` and writes into it the response to `query` from `request`.
    pub fn answer_request<'q>(
        &mut self,
        zones: &ZoneSet,
        request: &Request<'_>,
        query: &'q [u8],
        out: &mut Vec<u8>,
    ) -> AnswerOutcome<'q> {
        out.clear();
        self.scratch.imputed.error();
        self.cookie_valid = false;
        self.not_ours = false;
        self.asked = Asked {
            opcode: bits::opcode(query),
            qtype: None,
        };
        // Zone access lists make an answer depend on the client: not replayable.
        let cache = self
            .cache
            .as_mut()
            .filter(|_| request.zone_access.is_none());
        if let Some(cache) = cache {
            let cookies_on = request.cookies.is_some();
            let hit = cache.lookup(
                query,
                request.transport,
                cookies_on,
                zones.generation(),
                out,
            );
            if let Some(hit) = hit {
                self.scratch.imputed.set(hit.rrl.0, hit.rrl.1);
                self.asked.qtype = Some(hit.qtype);
                return AnswerOutcome::Respond {
                    rcode: hit.rcode,
                    truncated: hit.truncated,
                };
            }
            let outcome = self.answer_uncached(zones, request, query, out);
            // A refusal of recursion depends on the client: not replayable.
            let replayable = !(self.not_ours && request.recursion != Recursion::Off);
            if let (Some(cache), AnswerOutcome::Respond { rcode, truncated }, true) =
                (self.cache.as_mut(), &outcome, replayable)
            {
                cache.insert(
                    out,
                    zones.generation(),
                    (*rcode, *truncated),
                    self.scratch.imputed.key(),
                );
            }
            return outcome;
        }
        self.answer_uncached(zones, request, query, out)
    }

    fn answer_uncached<'q>(
        &mut self,
        zones: &ZoneSet,
        request: &Request<'_>,
        query: &'q [u8],
        out: &mut Vec<u8>,
    ) -> AnswerOutcome<'q> {
        let view = match read_query(query) {
            Ok(v) => v,
            Err(Rejected::Drop) => return AnswerOutcome::Drop,
            Err(Rejected::Malformed) => {
                self.asked.qtype = first_qtype(query);
                // RFC 1035 §4.1.1: FORMERR, id copied, the question if it was
                // readable. A malformed COOKIE option lands here too (RFC 7873
                // §5.2.2), as does a keepalive option of the wrong length.
                if write_error_response(query, Rcode::FORMERR, out).is_none() {
                    return AnswerOutcome::Drop;
                }
                return AnswerOutcome::Respond {
                    rcode: Rcode::FORMERR,
                    truncated: false,
                };
            }
            Err(Rejected::NotImplemented) => {
                if write_not_implemented(query, out).is_none() {
                    return AnswerOutcome::Drop;
                }
                return AnswerOutcome::Respond {
                    rcode: Rcode::NOTIMP,
                    truncated: false,
                };
            }
        };
        self.asked.qtype = view.question().map(|q| q.qtype);
        if let Some(divert) = divert::divert_of(&view) {
            return AnswerOutcome::Divert(divert, view);
        }
        self.answer_query(zones, request, &view, out)
    }

    /// Clears `out` and writes into it the response to a standard query
    /// already read (a TSIG-signed one the server checked, say); the TSIG
    /// record is not looked at.
    pub fn answer_view<'q>(
        &mut self,
        zones: &ZoneSet,
        request: &Request<'_>,
        query: &MessageView<'q>,
        out: &mut Vec<u8>,
    ) -> AnswerOutcome<'q> {
        out.clear();
        self.scratch.imputed.error();
        self.cookie_valid = false;
        self.not_ours = false;
        self.asked = Asked {
            opcode: Some(query.header().opcode),
            qtype: query.question().map(|q| q.qtype),
        };
        self.answer_query(zones, request, query, out)
    }

    fn answer_query<'q>(
        &mut self,
        zones: &ZoneSet,
        request: &Request<'_>,
        query: &MessageView<'q>,
        out: &mut Vec<u8>,
    ) -> AnswerOutcome<'q> {
        let transport = request.transport;
        let config = &*self.config;
        let edns = query.edns();
        let limit = edns::size_limit(transport, edns.as_ref(), config.max_udp_payload);
        // RFC 7873 §5.2.1: without cookie secrets, the COOKIE option is ignored.
        let cookie = match (request.cookies, &edns) {
            (Some(cookies), Some(e)) if e.version == 0 => {
                cookie::read_cookie(cookies, e, request.client, request.now)
            }
            _ => None,
        };
        self.cookie_valid = cookie.is_some_and(|c| c.valid);
        // The view checked the name, so assigning it cannot fail.
        let question = query
            .sole_question_wire()
            .filter(|q| self.qname.assign_wire(q.qname).is_ok());
        // A question in none of our zones that may recurse leaves before a
        // response is begun: on a resolver that is most questions, and the
        // resolver writes its own. The rules below that come first (EDNS
        // version, keepalive, one question, its class) are asked here too.
        let recursing = question.as_ref().is_some_and(|q| {
            matches!(request.recursion, Recursion::Offered)
                && query.header().flags.rd
                && edns.as_ref().is_none_or(|e| e.version == 0)
                && !edns::keepalive_malformed(transport, edns.as_ref())
                && matches!(q.qclass, Class::IN | Class::ANY)
                && solve::zone_for(
                    zones,
                    solve::lowercased(&self.qname, &mut self.qname_lower).as_wire(),
                    q.qtype,
                )
                .is_none()
        });
        if recursing {
            self.not_ours = true;
            out.clear();
            return AnswerOutcome::Recurse(RecursionRequest {
                query: query.clone(),
                limit,
                cookie: cookie.map(|c| (c.option.client, c.option.server)),
                cookie_valid: self.cookie_valid,
            });
        }
        let opt = edns::response_opt(edns.as_ref(), config, transport, cookie.map(|c| c.option));
        let mut resp = Response::start(out, query.header(), limit, opt);
        let qname = &self.qname;
        if let Some(q) = &question {
            resp.question(qname, q.qtype, q.qclass);
        }
        // RFC 6891 §6.1.3: an EDNS version we do not speak is BADVERS, before
        // anything else is looked at.
        if edns.is_some_and(|e| e.version != 0) {
            resp.set_rcode(Rcode::BADVERS);
            return respond(resp);
        }
        if edns::keepalive_malformed(transport, edns.as_ref()) {
            resp.set_rcode(Rcode::FORMERR);
            return respond(resp);
        }
        // RFC 1035 §4.1.2: a query carries exactly one question.
        let Some(q) = question else {
            resp.set_rcode(Rcode::FORMERR);
            return respond(resp);
        };
        match q.qclass {
            // Like Knot, class ANY (RFC 1035 §3.2.5) is answered as IN.
            Class::IN | Class::ANY => {}
            Class::CH => {
                chaos::chaos(&mut resp, &config.chaos, qname, q.qtype, &mut self.rdata);
                if resp.rcode() == Rcode::NOERROR {
                    self.scratch
                        .imputed
                        .set(ResponseClass::Positive, qname.as_wire());
                }
                return finish(
                    resp,
                    config.cookies,
                    request,
                    cookie.as_ref(),
                    &mut self.scratch.imputed,
                );
            }
            _ => {
                resp.set_rcode(Rcode::REFUSED);
                return respond(resp);
            }
        }
        let qname_lower = solve::lowercased(qname, &mut self.qname_lower);
        let Some(zone) = solve::zone_for(zones, qname_lower.as_wire(), q.qtype) else {
            self.not_ours = true;
            let rd = query.header().flags.rd;
            // An offered recursion left above, before the response began.
            match request.recursion {
                Recursion::Refused if rd => {
                    resp.set_rcode(Rcode::REFUSED);
                    resp.set_extended_error(ExtendedError::Prohibited);
                }
                // Not ours: no referral to the root (RFC 1034 §4.3.2 leaves
                // it to policy).
                _ => {
                    resp.set_rcode(Rcode::REFUSED);
                    resp.set_extended_error(ExtendedError::NotAuthoritative);
                }
            }
            return respond(resp);
        };
        match access::zone_access(&mut resp, request.zone_access, zone.apex(), request.client) {
            Access::Allow => {}
            Access::Refuse => return respond(resp),
            Access::Drop => return AnswerOutcome::Denied,
        }
        // RFC 1034 §4.3.5: a secondary zone with no current copy (never
        // transferred, or expired) is not answered from; SERVFAIL tells the
        // resolver to try another server, as BIND and Knot answer.
        if zone.node_count() == 0 {
            resp.set_rcode(Rcode::SERVFAIL);
            return respond(resp);
        }
        resp.set_authoritative(true);
        // RFC 3225 §3: DO asks for the DNSSEC records of a signed zone.
        let dnssec_ok = edns.as_ref().is_some_and(|e| e.dnssec_ok);
        solve::answer_in_zone(
            &mut resp,
            zone,
            qname,
            qname_lower,
            q.qtype,
            dnssec_ok,
            &mut self.scratch,
        );
        finish(
            resp,
            config.cookies,
            request,
            cookie.as_ref(),
            &mut self.scratch.imputed,
        )
    }
}

/// The last step for a response that may carry data: the cookie policy.
fn finish<'q>(
    mut resp: Response<'_>,
    policy: CookiePolicy,
    request: &Request<'_>,
    cookie: Option<&cookie::CookieState>,
    imputed: &mut Imputed,
) -> AnswerOutcome<'q> {
    // The policy needs cookies on: without secrets no client could comply.
    if request.cookies.is_some()
        && cookie::require_cookie(&mut resp, policy, request.transport, cookie)
    {
        imputed.error();
    }
    respond(resp)
}

fn respond<'q>(resp: Response<'_>) -> AnswerOutcome<'q> {
    let (rcode, truncated) = resp.finish();
    AnswerOutcome::Respond { rcode, truncated }
}
