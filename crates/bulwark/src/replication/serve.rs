//! The queries answering hands to the server (`bulwark_auth::Divert`):
//! TSIG-signed queries, NOTIFY received, zone transfers out and dynamic
//! updates. What to answer is `bulwark_xfr::serve`'s to decide; here the
//! server brings what it knows (keys, zone settings, the zones served, the
//! time), reports refusals, and does the work that touches the world:
//! answering a signed query, streaming a transfer from a blocking thread,
//! storing an update before it is acknowledged (`bulwark_net::Deferred`).

use std::net::IpAddr;
use std::sync::Arc;

use bulwark_auth::{AnswerOutcome, Answerer, Divert, Recursion, Request, Transport};
use bulwark_net::{Deferred, Responder};
use bulwark_proto::message::MessageView;
use bulwark_proto::{Name, Rcode, Rtype};
use bulwark_xfr::serve::{
    self, Facts, Note, Outcome, RefusalKind, RequestKind, Response, SignedQuery, StreamError,
    TransferPlan, UpdatePlan, ZonePolicy,
};
use bulwark_xfr::tsig::KeyRing;
use bulwark_xfr::update::UpdateOptions;
use bulwark_zone::{Zone, ZoneSet};

use super::counters::{bump, COUNTERS};
use super::secondary::Secondaries;
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

impl From<Option<Response>> for Diverted {
    fn from(r: Option<Response>) -> Diverted {
        match r {
            Some(Response {
                verified,
                rcode,
                truncated,
            }) => Diverted::Respond {
                verified,
                rcode,
                truncated,
            },
            None => Diverted::Drop,
        }
    }
}

/// What the server knows that diverted queries are judged by.
struct ServerFacts<'a> {
    keyring: &'a KeyRing,
    zones: &'a Zones,
    served: &'a ZoneSet,
}

impl Facts for ServerFacts<'_> {
    fn keyring(&self) -> &KeyRing {
        self.keyring
    }

    fn zone_policy(&self, apex: &Name) -> Option<ZonePolicy> {
        let spec = self.zones.spec(apex)?;
        let r = spec.replication;
        Some(ZonePolicy {
            origin: spec.origin,
            primaries: r.primaries,
            allow_transfer: r.allow_transfer,
            allow_notify: r.allow_notify,
            allow_update: r.allow_update,
            update: UpdateOptions {
                signed_by_server: spec.signing.is_some(),
                ..UpdateOptions::default()
            },
            serial_policy: r.serial_policy,
        })
    }

    fn served_zone(&self, apex: &Name) -> Option<Arc<Zone>> {
        self.served.get(apex).cloned()
    }

    fn has_storage(&self) -> bool {
        self.zones.journal().is_some()
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
    let keyring = shared.keyring.load();
    let facts = ServerFacts {
        keyring: &keyring,
        zones: &shared.zones,
        served: zones,
    };
    let asked = serve::Request {
        view,
        kind: match divert {
            Divert::Notify => RequestKind::Notify,
            Divert::Update => RequestKind::Update,
            Divert::Transfer => RequestKind::Transfer,
            Divert::Signed => RequestKind::Signed,
        },
        client: request.client,
        transport: match request.transport {
            Transport::Udp => serve::Transport::Udp,
            Transport::Tcp => serve::Transport::Tcp,
        },
        max_udp_payload: answerer.config().max_udp_payload,
    };
    let handled = serve::handle(&asked, &facts, unix_now(), out);
    if let Some(note) = handled.note {
        noted(shared, request.client, note);
    }
    match handled.outcome {
        Outcome::Respond(r) => Some(r).into(),
        Outcome::Drop => Diverted::Drop,
        Outcome::AnswerThenSign(q) => signed_query(shared, answerer, zones, request, view, &q, out),
        Outcome::Transfer(plan) => {
            let zones = Arc::clone(&shared.zones);
            let runtime = shared.runtime.clone();
            let client = request.client;
            Diverted::Later(Box::new(move |responder: Responder| {
                runtime.spawn_blocking(move || stream_transfer(&zones, &plan, client, &responder));
            }))
        }
        Outcome::Update(plan) => {
            let zones = Arc::clone(&shared.zones);
            let runtime = shared.runtime.clone();
            let client = request.client;
            Diverted::Later(Box::new(move |responder: Responder| {
                runtime.spawn_blocking(move || apply_update(&zones, &plan, client, &responder));
            }))
        }
    }
}

/// Reports a refusal (log and counters), or acts on an accepted NOTIFY.
fn noted(shared: &ReplicationShared, client: IpAddr, note: Note) {
    match note {
        Note::Refused(reason) => {
            let Some(kind) = reason.kind() else {
                return;
            };
            let (event, counter) = match kind {
                RefusalKind::BadTsig => (Event::BadTsig, None),
                RefusalKind::Malformed => (Event::Malformed, None),
                RefusalKind::TransferRefused => {
                    (Event::TransferRefused, Some(&COUNTERS.transfers_refused))
                }
                RefusalKind::NotifyRefused => {
                    (Event::NotifyRefused, Some(&COUNTERS.notify_refused))
                }
                RefusalKind::UpdateRefused => {
                    (Event::UpdateRefused, Some(&COUNTERS.updates_refused))
                }
            };
            shared.reporter.report(event, client, &reason);
            if let Some(counter) = counter {
                bump(counter);
            }
        }
        Note::NotifyAccepted { origin, serial } => {
            tracing::info!(zone = %origin, %client, serial, "NOTIFY received");
            bump(&COUNTERS.notify_received);
            shared.secondaries.poke(&origin);
        }
    }
}

/// A signed standard query: answered as usual from the message already read,
/// then signed.
fn signed_query(
    shared: &ReplicationShared,
    answerer: &mut Answerer,
    zones: &ZoneSet,
    request: &Request<'_>,
    view: &MessageView<'_>,
    query: &SignedQuery,
    out: &mut Vec<u8>,
) -> Diverted {
    // A signed query is answered from our zones only: the resolver does not
    // sign its answers.
    let request = Request {
        recursion: Recursion::Off,
        ..*request
    };
    match answerer.answer_view(zones, &request, view, out) {
        AnswerOutcome::Respond { rcode, truncated } => {
            query.finish(rcode, truncated, out, unix_now()).into()
        }
        AnswerOutcome::Drop | AnswerOutcome::Denied => Diverted::Drop,
        // Answering a message already read diverts nothing, and recursion
        // is off.
        AnswerOutcome::Divert(..) | AnswerOutcome::Recurse(_) => {
            let handled = query.refuse(view.as_bytes(), out, unix_now());
            if let Some(note) = handled.note {
                noted(shared, request.client, note);
            }
            match handled.outcome {
                Outcome::Respond(r) => Some(r).into(),
                _ => Diverted::Drop,
            }
        }
    }
}

/// Writes a transfer's messages to `responder`, each signed in turn.
fn stream_transfer(zones: &Zones, plan: &TransferPlan, client: IpAddr, responder: &Responder) {
    let started = std::time::Instant::now();
    let apex = plan.apex();
    let journal = match plan.client_serial() {
        Some(serial) => zones.journal_since(apex, serial).unwrap_or_default(),
        None => Vec::new(),
    };
    let mut writer = match plan.messages(&journal) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(zone = %apex, error = %e, "cannot start the transfer");
            return;
        }
    };
    let mut messages = 0usize;
    let mut records = 0usize;
    loop {
        let mut msg = Vec::new();
        match writer.next_message(&mut msg, unix_now()) {
            None => break,
            Some(Err(StreamError::Sign(e))) => {
                tracing::error!(zone = %apex, error = %e, "cannot sign a transfer message");
                return;
            }
            Some(Err(e)) => {
                // Messages may have gone out already: the connection is the
                // only way left to say it failed.
                tracing::error!(zone = %apex, error = %e, "transfer failed");
                return;
            }
            Some(Ok(info)) => {
                records = records.saturating_add(usize::from(info.records));
            }
        }
        if responder.send_blocking(msg).is_err() {
            tracing::info!(zone = %apex, %client, "transfer abandoned: the client went away");
            return;
        }
        messages = messages.saturating_add(1);
    }
    bump(
        if plan.qtype() == Rtype::AXFR || plan.client_serial().is_none() {
            &COUNTERS.axfr_out
        } else {
            &COUNTERS.ixfr_out
        },
    );
    tracing::info!(
        zone = %apex,
        %client,
        kind = %plan.qtype(),
        client_serial = plan.client_serial(),
        serial = plan.zone().serial(),
        messages,
        records,
        seconds = started.elapsed().as_secs_f64(),
        "transfer sent"
    );
}

/// Applies an update to its zone, durably, then sends the response.
fn apply_update(zones: &Zones, plan: &UpdatePlan, client: IpAddr, responder: &Responder) {
    let origin = plan.origin();
    let result = zones.edit(origin, |zone| {
        let applied = plan.apply(zone, unix_now())?;
        for i in &applied.ignored {
            tracing::info!(zone = %origin, owner = %i.owner, rtype = %i.rtype, "update record ignored: {}", i.reason);
        }
        Ok(applied.diff)
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
    if let Some(out) = plan.respond(rcode, unix_now()) {
        let _ = responder.send_blocking(out);
    }
}
