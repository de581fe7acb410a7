//! The queries answering hands to the server (`bulwark_auth::Divert`):
//! TSIG-signed queries, NOTIFY received (RFC 1996), zone transfers out
//! (AXFR, RFC 5936; IXFR, RFC 1995) and dynamic updates (RFC 2136). Each
//! checks the TSIG first (RFC 8945 §5.2), then the zone's ACL, and signs its
//! response when the request was signed. Transfers over TCP and updates are
//! answered later (`bulwark_net::Deferred`): a transfer is many messages
//! made on a blocking thread, and an update is acknowledged once durable.

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_auth::{AnswerOutcome, Answerer, Divert, Request, Transport};
use bulwark_net::{Deferred, Responder};
use bulwark_proto::message::{
    bits, truncate_to_question, udp_response_limit, write_error_response, MessageView,
};
use bulwark_proto::{Name, Rcode, Rtype};
use bulwark_xfr::notify::{read_notify, write_notify_response};
use bulwark_xfr::transfer_out::{
    ixfr_client_serial, plan_ixfr, write_ixfr_udp_answer, TransferWriter,
};
use bulwark_xfr::tsig::{
    verify_request_view, write_tsig_error_response, KeyRing, ResponseSigner, VerifiedRequest,
};
use bulwark_xfr::update::{read_update, write_update_response, UpdateOptions, ZoneEdit};
use bulwark_zone::ZoneSet;

use super::counters::{bump, COUNTERS};
use super::secondary::Secondaries;
use super::settings::any_allows;
use crate::diagnostics::{Event, Reporter};
use crate::signing::unix_now;
use crate::zones::{ChangeError, Zones};

/// What every handler shares for diverted queries.
#[derive(Debug, Clone)]
pub struct ReplicationShared {
    pub zones: Arc<Zones>,
    /// Swapped on reload.
    pub keyring: Arc<arc_swap::ArcSwap<KeyRing>>,
    pub secondaries: Arc<Secondaries>,
    pub runtime: tokio::runtime::Handle,
    pub reporter: Arc<Reporter>,
}

/// What became of a diverted query.
pub enum Diverted {
    /// `out` holds the response, with `rcode` and TC as written; `verified`
    /// when the request's TSIG was verified (its sender holds the key, so the
    /// answer needs no rate limit).
    Respond {
        verified: bool,
        rcode: Rcode,
        truncated: bool,
    },
    /// Nothing to send.
    Drop,
    /// The response comes later, from this job.
    Later(Deferred),
}

/// The TSIG state of a request: unsigned, or verified (the signer of the
/// response).
struct Signature {
    verified: Option<VerifiedRequest>,
}

impl Signature {
    fn key_name(&self) -> Option<Name> {
        self.verified
            .as_ref()
            .map(|v| v.key().name().to_lowercase())
    }

    /// Signs `out` when the request was signed (RFC 8945 §5.3: the response
    /// to a signed request is signed, errors included).
    fn sign(&self, out: &mut Vec<u8>) -> bool {
        match &self.verified {
            None => true,
            Some(v) => ResponseSigner::new(v).sign(out, unix_now()).is_ok(),
        }
    }

    /// `out`, signed when the request was, is the response; nothing is sent
    /// when it cannot be signed. Its rcode is in the header: the replication
    /// answers use no extended rcode.
    fn respond(&self, out: &mut Vec<u8>) -> Diverted {
        let said = written(out);
        if self.sign(out) {
            said(self.verified.is_some())
        } else {
            Diverted::Drop
        }
    }
}

/// Checks the TSIG of `view`. On a failure the error response is already
/// in `out` (`Err`).
fn check_tsig(
    shared: &ReplicationShared,
    keyring: &KeyRing,
    client: IpAddr,
    query: &[u8],
    view: &MessageView<'_>,
    out: &mut Vec<u8>,
) -> Result<Signature, Diverted> {
    let now = unix_now();
    match verify_request_view(view, keyring, now) {
        Ok(verified) => Ok(Signature { verified }),
        Err(failure) => {
            shared.reporter.report(Event::BadTsig, client, &failure);
            out.clear();
            match write_tsig_error_response(query, &failure, keyring, now, out) {
                Some(()) => Err(written(out)(false)),
                None => Err(Diverted::Drop),
            }
        }
    }
}

/// An error response (signed when the request was): the question echoed.
fn refuse(query: &[u8], rcode: Rcode, sig: &Signature, out: &mut Vec<u8>) -> Diverted {
    out.clear();
    if write_error_response(query, rcode, out).is_none() {
        return Diverted::Drop;
    }
    bits::set_authoritative(out, false);
    sig.respond(out)
}

/// The response written in `out`, as its header says, once its sender's
/// standing is known.
fn written(out: &[u8]) -> impl Fn(bool) -> Diverted {
    let rcode = Rcode::new(u16::from(bits::rcode_low(out).unwrap_or(0)));
    let truncated = bits::is_truncated(out).unwrap_or(false);
    move |verified| Diverted::Respond {
        verified,
        rcode,
        truncated,
    }
}

/// Handles one diverted query, `view` as answering read it: it is not read
/// again.
pub fn handle(
    shared: &ReplicationShared,
    answerer: &mut Answerer,
    zones: &ZoneSet,
    request: &Request<'_>,
    divert: Divert,
    view: &MessageView<'_>,
    out: &mut Vec<u8>,
) -> Diverted {
    let query = view.as_bytes();
    let keyring = shared.keyring.load();
    let sig = match check_tsig(shared, &keyring, request.client, query, view, out) {
        Ok(s) => s,
        Err(d) => return d,
    };
    match divert {
        Divert::Signed => signed_query(answerer, zones, request, view, sig, out),
        Divert::Notify => notify(shared, view, request.client, query, sig, out),
        Divert::Transfer => {
            let max_udp = answerer.config().max_udp_payload;
            transfer(shared, zones, view, request, max_udp, query, sig, out)
        }
        Divert::Update => update(shared, view, request.client, query, sig, out),
    }
}

/// A signed standard query: answered as usual from the message already read
/// (answering looks at its question and OPT, not at the TSIG), then signed.
fn signed_query(
    answerer: &mut Answerer,
    zones: &ZoneSet,
    request: &Request<'_>,
    view: &MessageView<'_>,
    sig: Signature,
    out: &mut Vec<u8>,
) -> Diverted {
    let (rcode, mut truncated) = match answerer.answer_view(zones, request, view, out) {
        AnswerOutcome::Respond { rcode, truncated } => (rcode, truncated),
        AnswerOutcome::Drop | AnswerOutcome::Denied => return Diverted::Drop,
        // Answering a message already read diverts nothing.
        AnswerOutcome::Divert(..) => return refuse(view.as_bytes(), Rcode::FORMERR, &sig, out),
    };
    if let Some(v) = &sig.verified {
        // RFC 8945 §5.3: the TSIG must fit too; over UDP a response that
        // would pass the client's size once signed goes out truncated.
        let room = ResponseSigner::new(v).record_len();
        if request.transport == Transport::Udp {
            let limit = udp_response_limit(view.edns().as_ref(), answerer.config().max_udp_payload);
            if out.len().saturating_add(room) > limit {
                truncated = truncate_to_question(out) || truncated;
            }
        }
    }
    if sig.sign(out) {
        Diverted::Respond {
            verified: sig.verified.is_some(),
            rcode,
            truncated,
        }
    } else {
        Diverted::Drop
    }
}

/// The served zone whose apex is `name`, exactly (NOTIFY, transfers and
/// updates name the apex).
fn zone_at<'z>(zones: &'z ZoneSet, name: &Name) -> Option<&'z Arc<bulwark_zone::Zone>> {
    zones.get(&name.to_lowercase())
}

/// RFC 1996 §3.7–3.11: a NOTIFY for a secondary zone from one of its
/// primaries (or a client its `allow_notify` lets in) is acknowledged and
/// starts a refresh; any other is NOTAUTH, as Knot answers.
fn notify(
    shared: &ReplicationShared,
    view: &MessageView<'_>,
    client: IpAddr,
    query: &[u8],
    sig: Signature,
    out: &mut Vec<u8>,
) -> Diverted {
    // Who may notify is decided before what they sent is judged, as Knot
    // does: a stranger learns nothing from a FORMERR.
    let Some(apex) = view.question().map(|q| q.qname.to_lowercase()) else {
        return refuse(query, Rcode::FORMERR, &sig, out);
    };
    let key = sig.key_name();
    let Some(spec) = shared.zones.spec(&apex) else {
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    };
    let repl = &spec.replication;
    let from_primary = repl.primaries.iter().any(|p| {
        p.addresses.iter().any(|a| a.ip().to_canonical() == client)
            && p.key
                .as_ref()
                .is_none_or(|k| key.as_ref() == Some(&k.name().to_lowercase()))
    });
    if !repl.is_secondary()
        || !(from_primary || any_allows(&repl.allow_notify, client, key.as_ref()))
    {
        shared.reporter.report(
            Event::NotifyRefused,
            client,
            format_args!("zone {apex}: not a primary of a secondary zone here"),
        );
        bump(&COUNTERS.notify_refused);
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    }
    let req = match read_notify(view) {
        Ok(r) => r,
        Err(e) => {
            shared
                .reporter
                .report(Event::Malformed, client, format_args!("NOTIFY: {e}"));
            return refuse(query, e.rcode(), &sig, out);
        }
    };
    out.clear();
    if write_notify_response(query, out).is_err() {
        return Diverted::Drop;
    }
    tracing::info!(zone = %req.apex, %client, serial = req.serial, "NOTIFY received");
    bump(&COUNTERS.notify_received);
    shared.secondaries.poke(&spec.origin);
    sig.respond(out)
}

/// AXFR and IXFR out. Over UDP, AXFR is NOTIMP (RFC 5936 §4.2, as Knot
/// answers) and IXFR gets the current SOA (RFC 1995 §2: "ask over TCP");
/// over TCP the transfer streams from a blocking thread.
#[allow(clippy::too_many_arguments)]
fn transfer(
    shared: &ReplicationShared,
    zones: &ZoneSet,
    view: &MessageView<'_>,
    request: &Request<'_>,
    max_udp_payload: u16,
    query: &[u8],
    sig: Signature,
    out: &mut Vec<u8>,
) -> Diverted {
    let Some(q) = view.sole_question() else {
        return refuse(query, Rcode::FORMERR, &sig, out);
    };
    if q.qtype == Rtype::AXFR && request.transport == Transport::Udp {
        return refuse(query, Rcode::NOTIMP, &sig, out);
    }
    let key = sig.key_name();
    let (Some(zone), Some(spec)) = (
        zone_at(zones, &q.qname),
        shared.zones.spec(&q.qname.to_lowercase()),
    ) else {
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    };
    if !any_allows(
        &spec.replication.allow_transfer,
        request.client,
        key.as_ref(),
    ) {
        shared.reporter.report(
            Event::TransferRefused,
            request.client,
            format_args!("{} of {}: not in allow_transfer", q.qtype, q.qname),
        );
        bump(&COUNTERS.transfers_refused);
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    }
    let client_serial = if q.qtype == Rtype::IXFR {
        match ixfr_client_serial(view) {
            Some(s) => Some(s),
            // RFC 1995 §3: an IXFR query carries the client's SOA.
            None => return refuse(query, Rcode::FORMERR, &sig, out),
        }
    } else {
        None
    };
    let id = view.header().id;
    if request.transport == Transport::Udp {
        out.clear();
        let limit = udp_response_limit(view.edns().as_ref(), max_udp_payload).saturating_sub(
            sig.verified
                .as_ref()
                .map_or(0, |v| ResponseSigner::new(v).record_len()),
        );
        if write_ixfr_udp_answer(zone, id, &q, out, limit, None).is_err() {
            return refuse(query, Rcode::SERVFAIL, &sig, out);
        }
        return sig.respond(out);
    }
    let zone = Arc::clone(zone);
    let zones_handle = Arc::clone(&shared.zones);
    let runtime = shared.runtime.clone();
    let client = request.client;
    let verified = sig.verified;
    Diverted::Later(Box::new(move |responder: Responder| {
        runtime.spawn_blocking(move || {
            stream_transfer(
                &zones_handle,
                &zone,
                &q,
                id,
                client_serial,
                verified,
                client,
                &responder,
            );
        });
    }))
}

/// Writes a transfer's messages to `responder`, each signed in turn.
#[allow(clippy::too_many_arguments)]
fn stream_transfer(
    zones: &Zones,
    zone: &bulwark_zone::Zone,
    q: &bulwark_proto::message::Question,
    id: u16,
    client_serial: Option<u32>,
    verified: Option<VerifiedRequest>,
    client: IpAddr,
    responder: &Responder,
) {
    let started = std::time::Instant::now();
    let journal;
    let writer = match client_serial {
        None => TransferWriter::axfr(zone, id, q),
        Some(serial) => {
            journal = zones.journal_since(zone.apex(), serial).unwrap_or_default();
            let plan = plan_ixfr(serial, zone, &journal);
            TransferWriter::for_ixfr_plan(zone, &plan, &journal, id, q)
        }
    };
    let mut writer = match writer {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(zone = %zone.apex(), error = %e, "cannot start the transfer");
            return;
        }
    };
    let mut signer = verified.as_ref().map(ResponseSigner::new);
    let reserve = signer.as_ref().map_or(0, ResponseSigner::record_len);
    let mut messages = 0usize;
    let mut records = 0usize;
    loop {
        let mut msg = Vec::new();
        match writer.next_message(&mut msg, reserve) {
            None => break,
            Some(Err(e)) => {
                // Messages may have gone out already: the connection is the
                // only way left to say it failed (RFC 5936 §2.2 lets the
                // client treat an incomplete transfer as failed).
                tracing::error!(zone = %zone.apex(), error = %e, "transfer failed");
                return;
            }
            Some(Ok(info)) => {
                records = records.saturating_add(usize::from(info.records));
            }
        }
        if let Some(s) = signer.as_mut() {
            if let Err(e) = s.sign(&mut msg, unix_now()) {
                tracing::error!(zone = %zone.apex(), error = %e, "cannot sign a transfer message");
                return;
            }
        }
        if responder.send_blocking(msg).is_err() {
            tracing::info!(zone = %zone.apex(), %client, "transfer abandoned: the client went away");
            return;
        }
        messages = messages.saturating_add(1);
    }
    bump(if q.qtype == Rtype::AXFR || client_serial.is_none() {
        &COUNTERS.axfr_out
    } else {
        &COUNTERS.ixfr_out
    });
    tracing::info!(
        zone = %zone.apex(),
        %client,
        kind = %q.qtype,
        client_serial,
        serial = zone.serial(),
        messages,
        records,
        seconds = started.elapsed().as_secs_f64(),
        "transfer sent"
    );
}

/// RFC 2136 dynamic update: for a primary zone this server serves, from a
/// client its `allow_update` ACL (and key) lets in. The response is sent
/// once the change is durable.
fn update(
    shared: &ReplicationShared,
    view: &MessageView<'_>,
    client: IpAddr,
    query: &[u8],
    sig: Signature,
    out: &mut Vec<u8>,
) -> Diverted {
    let req = match read_update(view) {
        Ok(r) => r,
        Err(e) => return refuse(query, e.rcode(), &sig, out),
    };
    let key = sig.key_name();
    // RFC 2136 §3.1.2: not a zone we are authoritative for.
    let Some(spec) = shared.zones.spec(&req.zone.to_lowercase()) else {
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    };
    if spec.replication.is_secondary() {
        // RFC 2136 §3.1.2 lets a secondary forward; bulwark does not, and
        // says so rather than pretend.
        return refuse(query, Rcode::NOTAUTH, &sig, out);
    }
    // RFC 2136 §3.3: a requestor without permission is REFUSED.
    if !any_allows(&spec.replication.allow_update, client, key.as_ref()) {
        shared.reporter.report(
            Event::UpdateRefused,
            client,
            format_args!("zone {}: not in allow_update (key {key:?})", req.zone),
        );
        bump(&COUNTERS.updates_refused);
        return refuse(query, Rcode::REFUSED, &sig, out);
    }
    if shared.zones.journal().is_none() {
        shared.reporter.report(
            Event::UpdateRefused,
            client,
            format_args!(
                "zone {}: no storage is configured, so it could not be made durable",
                req.zone
            ),
        );
        bump(&COUNTERS.updates_refused);
        return refuse(query, Rcode::REFUSED, &sig, out);
    }
    let zones = Arc::clone(&shared.zones);
    let runtime = shared.runtime.clone();
    let query = query.to_vec();
    let origin = spec.origin.clone();
    let options = UpdateOptions {
        signed_by_server: spec.signing.is_some(),
        ..UpdateOptions::default()
    };
    let policy = spec.replication.serial_policy;
    Diverted::Later(Box::new(move |responder: Responder| {
        runtime.spawn_blocking(move || {
            let result = zones.edit(&origin, |zone| {
                let mut edit = ZoneEdit::new(zone);
                let applied = edit.apply(&req, &options).map_err(|e| e.rcode())?;
                for i in &applied.ignored {
                    tracing::info!(zone = %origin, owner = %i.owner, rtype = %i.rtype, "update record ignored: {}", i.reason);
                }
                Ok(edit.finish(policy, unix_now()))
            });
            let rcode = match result {
                Ok(Ok(Some(serial))) => {
                    tracing::info!(zone = %origin, %client, serial, "UPDATE applied");
                    Rcode::NOERROR
                }
                Ok(Ok(None)) => Rcode::NOERROR,
                Ok(Err(rcode)) => rcode,
                Err(ChangeError::Storage(e)) => {
                    tracing::error!(zone = %origin, error = %e, "UPDATE not stored; refused");
                    Rcode::SERVFAIL
                }
                Err(e) => {
                    tracing::warn!(zone = %origin, error = %e, "UPDATE failed");
                    Rcode::SERVFAIL
                }
            };
            if rcode == Rcode::NOERROR {
                bump(&COUNTERS.updates_applied);
            } else {
                bump(&COUNTERS.updates_failed);
            }
            let mut out = Vec::new();
            if write_update_response(&query, rcode, &mut out).is_none() {
                return;
            }
            if sig.sign(&mut out) {
                let _ = responder.send_blocking(out);
            }
        });
    }))
}
