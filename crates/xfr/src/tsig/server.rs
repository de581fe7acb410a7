//! The server's side: checking a signed request (RFC 8945 §5.2), answering
//! a failed check (§5.3.2), and signing every message of the response
//! (§4.3.2, §5.3.1).

use bulwark_proto::message::{
    write_error_response, MessageBuilder, OptRecord, DEFAULT_UDP_PAYLOAD, HEADER_LEN,
};
use bulwark_proto::{MessageView, Rcode};

use super::key::{KeyRing, TsigAlgorithm, TsigKey};
use super::rdata::{
    append_record, check_mac_size, read_arcount, read_tsig, received_mac_verifies, sign_and_append,
    time48, within_fudge, Covers, ReceivedTsig, TsigFields,
};
use super::{MalformedTsig, TsigError, TsigFailure, TsigRcode};

/// Largest TSIG error answer before its TSIG record: a header, one question
/// and an OPT fit well within it.
const ERROR_RESPONSE_LIMIT: usize = 512;

/// A request whose TSIG verified: what signing the response needs.
#[derive(Debug, Clone)]
pub struct VerifiedRequest {
    key: TsigKey,
    mac: Vec<u8>,
    time_signed: u64,
    fudge: u16,
    original_id: u16,
}

impl VerifiedRequest {
    /// The key the request was signed with.
    pub fn key(&self) -> &TsigKey {
        &self.key
    }

    /// The request's MAC as sent (truncated if it was: RFC 8945 §5.2.2.1 has
    /// the response cover the truncated MAC).
    pub fn request_mac(&self) -> &[u8] {
        &self.mac
    }

    pub fn time_signed(&self) -> u64 {
        self.time_signed
    }

    pub fn fudge(&self) -> u16 {
        self.fudge
    }

    pub fn original_id(&self) -> u16 {
        self.original_id
    }
}

/// Checks a request's TSIG: `Ok(None)` when it has none. The checks run in
/// the order of RFC 8945 §5.2: the key (BADKEY, §5.2.1), the MAC's size
/// (FORMERR, §5.2.2.1) and value (BADSIG, §5.2.2), the time (BADTIME, §5.2.3,
/// only once the MAC verified) and the key's truncation policy (BADTRUNC,
/// §5.2.4). A message that does not parse, or a TSIG that cannot be read, is
/// [`TsigFailure::Malformed`] (FORMERR).
pub fn verify_request(
    msg: &[u8],
    keys: &KeyRing,
    now: u64,
) -> Result<Option<VerifiedRequest>, TsigFailure> {
    let view = MessageView::parse(msg).map_err(MalformedTsig::Message)?;
    verify_request_view(&view, keys, now)
}

/// As [`verify_request`], for a message the caller has parsed already.
pub fn verify_request_view(
    view: &MessageView<'_>,
    keys: &KeyRing,
    now: u64,
) -> Result<Option<VerifiedRequest>, TsigFailure> {
    let Some((key, tsig)) = check_key_and_mac(view, keys)? else {
        return Ok(None);
    };
    let r = &tsig.rdata;
    if !within_fudge(now, r.time_signed, r.fudge) {
        return Err(TsigFailure::BadTime {
            time_signed: r.time_signed,
            fudge: r.fudge,
            now,
        });
    }
    if r.mac.len() < key.min_mac_len() {
        return Err(TsigFailure::BadTrunc {
            len: r.mac.len(),
            min: key.min_mac_len(),
        });
    }
    Ok(Some(VerifiedRequest {
        key: key.clone(),
        mac: r.mac.to_vec(),
        time_signed: r.time_signed,
        fudge: r.fudge,
        original_id: r.original_id,
    }))
}

/// RFC 8945 §5.2.1 and §5.2.2: finds the key and checks the MAC.
fn check_key_and_mac<'k, 'a>(
    view: &MessageView<'a>,
    keys: &'k KeyRing,
) -> Result<Option<(&'k TsigKey, ReceivedTsig<'a>)>, TsigFailure> {
    let Some(tsig) = read_tsig(view)? else {
        return Ok(None);
    };
    let bad_key = || TsigFailure::BadKey {
        key: Box::new(tsig.owner.clone()),
        algorithm: Box::new(tsig.rdata.algorithm.clone()),
    };
    // §5.2.1: an algorithm we do not implement (hmac-md5 among them) is BADKEY too.
    let algorithm = TsigAlgorithm::from_name(&tsig.rdata.algorithm).map_err(|_| bad_key())?;
    let key = keys.get(&tsig.owner, algorithm).ok_or_else(bad_key)?;
    check_mac_size(algorithm, tsig.rdata.mac.len())?;
    let ctx = Covers::Request.start(key);
    if !received_mac_verifies(ctx, true, key, view.as_bytes(), &tsig) {
        return Err(TsigFailure::BadSig);
    }
    Ok(Some((key, tsig)))
}

/// Signs the messages of a response to a verified request: the first covers
/// the request MAC and all TSIG variables (RFC 8945 §4.3.2), each later one
/// the prior MAC and the timers only (§5.3.1). Every message is signed.
#[derive(Debug, Clone)]
pub struct ResponseSigner {
    key: TsigKey,
    /// The request MAC, then the MAC of the last message signed (a reused
    /// buffer: signing allocates nothing).
    prior_mac: Vec<u8>,
    fudge: u16,
    first: bool,
}

impl ResponseSigner {
    /// Uses the request's key, and its fudge, so the client's own tolerance
    /// applies to the answer's time.
    pub fn new(request: &VerifiedRequest) -> ResponseSigner {
        let mut prior_mac = Vec::with_capacity(TsigAlgorithm::HmacSha512.mac_len());
        prior_mac.extend_from_slice(&request.mac);
        ResponseSigner {
            key: request.key.clone(),
            prior_mac,
            fudge: request.fudge,
            first: true,
        }
    }

    /// Signs the next message: appends its TSIG record and adds one to ARCOUNT.
    /// The message must leave [`ResponseSigner::record_len`] octets of room.
    pub fn sign(&mut self, msg: &mut Vec<u8>, now: u64) -> Result<(), TsigError> {
        let covers = if self.first {
            Covers::Response {
                request_mac: &self.prior_mac,
            }
        } else {
            Covers::Continuation {
                prior_mac: &self.prior_mac,
            }
        };
        let tag = sign_and_append(
            msg,
            &self.key,
            covers,
            now,
            self.fudge,
            TsigRcode::NOERROR,
            &[],
        )?;
        self.prior_mac.clear();
        self.prior_mac.extend_from_slice(tag.as_ref());
        self.first = false;
        Ok(())
    }

    /// Octets the TSIG record adds to each message.
    pub fn record_len(&self) -> usize {
        self.key.record_len()
    }

    pub fn key(&self) -> &TsigKey {
        &self.key
    }
}

/// Writes the answer to a request that failed [`verify_request`] into `out`
/// (RFC 8945 §5.2, §5.3.2). The ID and question are the query's and the
/// header rcode is NOTAUTH with the TSIG error in the TSIG record:
/// - BADKEY and BADSIG answers are unsigned: empty MAC, the query's key
///   and algorithm names and timers echoed.
/// - BADTIME answers are signed with the key, cover the request MAC, carry the
///   request's Time Signed and the server's time in Other Data (§5.2.3).
/// - BADTRUNC answers are signed likewise, at the server's time (§5.3.2).
///
/// A malformed TSIG gets a plain FORMERR. `None` when there is nothing to
/// answer: a client-side failure, or a query shorter than a header.
pub fn write_tsig_error_response(
    query: &[u8],
    failure: &TsigFailure,
    keys: &KeyRing,
    now: u64,
    out: &mut Vec<u8>,
) -> Option<()> {
    let formerr = |out: &mut Vec<u8>| write_error_response(query, Rcode::FORMERR, out).map(|_| ());
    let mut error = match failure {
        TsigFailure::Malformed(_) => return formerr(out),
        other => other.tsig_error()?,
    };
    let Ok(view) = MessageView::parse(query) else {
        return formerr(out);
    };
    let Ok(Some(tsig)) = read_tsig(&view) else {
        return formerr(out);
    };
    // §5.3.2: only an answer to a request whose MAC verified may be signed;
    // check again rather than trust the caller's pairing of query and failure.
    let mut signing_key = None;
    if matches!(
        failure,
        TsigFailure::BadTime { .. } | TsigFailure::BadTrunc { .. }
    ) {
        match check_key_and_mac(&view, keys) {
            Ok(Some((key, _))) => signing_key = Some(key),
            Ok(None) | Err(TsigFailure::Malformed(_)) => return formerr(out),
            Err(other) => error = other.tsig_error()?,
        }
    }
    let mut b = MessageBuilder::response_to(out, ERROR_RESPONSE_LIMIT, &view).ok()?;
    b.set_rcode(Rcode::NOTAUTH);
    let opt = view.edns().map(|_| OptRecord {
        udp_payload_size: DEFAULT_UDP_PAYLOAD,
        ..OptRecord::default()
    });
    b.finish(opt.as_ref()).ok()?;
    let r = &tsig.rdata;
    match signing_key {
        Some(key) if error == TsigRcode::BADTIME => {
            // §5.2.3: the client's time in Time Signed, the server's in Other Data.
            let server_time = time48(now).ok()?;
            let covers = Covers::Response { request_mac: r.mac };
            sign_and_append(
                out,
                key,
                covers,
                r.time_signed,
                r.fudge,
                error,
                &server_time,
            )
            .ok()?;
        }
        Some(key) => {
            let covers = Covers::Response { request_mac: r.mac };
            sign_and_append(out, key, covers, now, r.fudge, error, &[]).ok()?;
        }
        None => {
            let fields = TsigFields {
                owner: tsig.owner.as_wire(),
                algorithm: r.algorithm.as_wire(),
                time_signed: r.time_signed,
                fudge: r.fudge,
                original_id: view.header().id,
                error,
                other: &[],
            };
            append_record(out, &fields, &[]).ok()?;
        }
    }
    Some(())
}

/// The message as it was before its TSIG was added (RFC 8945 §4.3.3): the
/// record cut off, ARCOUNT one less and the ID put back to the Original ID.
/// `None` when the message does not parse or has no readable TSIG.
///
/// The answer to a stripped request must still carry the ID the request
/// arrived with (they differ only when a forwarder changed it).
pub fn strip_tsig(msg: &[u8]) -> Option<Vec<u8>> {
    let view = MessageView::parse(msg).ok()?;
    let tsig = read_tsig(&view).ok()??;
    let arcount = read_arcount(msg)?.checked_sub(1)?;
    let mut out = msg.get(..tsig.offset)?.to_vec();
    out.get_mut(..2)?
        .copy_from_slice(&tsig.rdata.original_id.to_be_bytes());
    out.get_mut(HEADER_LEN.checked_sub(2)?..HEADER_LEN)?
        .copy_from_slice(&arcount.to_be_bytes());
    Some(out)
}
