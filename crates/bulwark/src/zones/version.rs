//! Making a zone's next version: from its unsigned content, sign it when
//! bulwark signs it, choose its serial, and work out what the journal must
//! keep. Every change of a zone (a file load, an update, a transfer, a
//! signing pass) goes through [`next_version`], so the served serial only
//! ever moves forward and the journal always continues from what was served.

use std::sync::Arc;

use bulwark_dnssec::SignatureCache;
use bulwark_proto::{Name, Rdata, Record, Rtype};
use bulwark_xfr::serial::serial_gt;
use bulwark_zone::diff::soa_serial_of;
use bulwark_zone::{diff_zones, Zone, ZoneBuilder, ZoneDiff};

use crate::settings::{ZoneSigning, ZoneSpec};
use crate::zone_signer::{sign_for_serving, SignedState};

/// What a zone bulwark signs keeps beside its served copy.
#[derive(Debug, Clone)]
pub(crate) struct SignedInfo {
    pub state: SignedState,
    /// The last pass's signatures, for the next pass to keep what it can.
    pub cache: Arc<SignatureCache>,
}

/// Why a zone has a new version: it decides what the journal records.
#[derive(Debug, Clone)]
pub(crate) enum Cause {
    /// Read from its file (the first load, or a reload).
    File,
    /// Rebuilt from the file and the journal at start, or from the store.
    Restore,
    /// A dynamic update; the diff is of the unsigned content.
    Update(Box<ZoneDiff>),
    /// A whole copy from a primary.
    TransferFull,
    /// Changes from a primary (the journal works them out again by
    /// comparing versions, which also covers signed zones).
    TransferIncremental,
    /// A signing pass over unchanged content.
    Resign,
    /// A generated catalog's members changed.
    Catalog,
}

/// A version ready to serve, and what to journal for it.
#[derive(Debug)]
pub(crate) struct Version {
    pub unsigned: Arc<Zone>,
    pub served: Arc<Zone>,
    pub signed: Option<SignedInfo>,
    /// The served zone's change from the previous served version, when there
    /// was one and its serial moved.
    pub served_diff: Option<ZoneDiff>,
    pub serial: u32,
}

/// The zone's SOA serial.
pub(crate) fn serial_of(zone: &Zone) -> Option<u32> {
    crate::zones::soa_serial(zone)
}

/// `records` with the SOA's serial set to `serial`.
pub(crate) fn set_serial(records: &mut [Record], serial: u32) {
    for r in records.iter_mut() {
        if let Rdata::Soa(soa) = &mut r.rdata {
            soa.serial = serial;
        }
    }
}

/// A zone from records that came from another server or a client (a
/// transfer, an update): record-level problems drop the record and are
/// logged, the structural checks only warn, as a secondary must serve what
/// its primary serves.
pub(crate) fn build_lenient(origin: &Name, records: Vec<Record>) -> Result<Zone, Vec<String>> {
    let mut builder = ZoneBuilder::new(origin);
    for r in &records {
        builder.add(r);
    }
    let (zone, problems) = builder.finish();
    for p in &problems {
        tracing::warn!(zone = %origin, "{p}");
    }
    if zone.soa().is_none() {
        return Err(vec![format!("zone {origin}: no SOA record at the apex")]);
    }
    Ok(zone)
}

/// The serial of the next served version of a zone bulwark signs: the
/// unsigned serial when the operator moved it past what was served, else the
/// next by the zone's policy (re-signing changes the served zone too, and a
/// secondary only transfers a newer serial).
fn signed_serial(spec: &ZoneSpec, unsigned: u32, last_served: Option<u32>, now: u64) -> u32 {
    match last_served {
        None => unsigned,
        Some(last) if serial_gt(unsigned, last) => unsigned,
        Some(last) => spec.replication.serial_policy.next(last, now),
    }
}

/// Whether `diff` changes nothing but the SOA's own signatures: a signing
/// pass that found nothing to refresh.
fn only_soa_signatures(diff: &ZoneDiff) -> bool {
    let soa_sig = |r: &Record| match &r.rdata {
        Rdata::Rrsig(sig) => sig.type_covered == Rtype::SOA,
        _ => false,
    };
    diff.removed.iter().all(soa_sig) && diff.added.iter().all(soa_sig)
}

/// Signs `unsigned` under `signing` with the served serial `serial`.
fn sign(
    spec: &ZoneSpec,
    signing: &ZoneSigning,
    unsigned: &Zone,
    serial: u32,
    now: u64,
    previous: Option<&SignatureCache>,
    threads: usize,
) -> Result<(Zone, SignedInfo), Vec<String>> {
    let mut records: Vec<Record> = unsigned.records().collect();
    set_serial(&mut records, serial);
    let (signed, state, cache) =
        sign_for_serving(&spec.origin, signing, records, now, threads, previous)
            .map_err(|e| vec![format!("{}: signing: {e:#}", spec.file_label())])?;
    let zone = build_lenient(&spec.origin, signed)?;
    Ok((
        zone,
        SignedInfo {
            state,
            cache: Arc::new(cache),
        },
    ))
}

/// The previous version of a zone, as far as the next one needs it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Previous<'a> {
    pub served: Option<&'a Arc<Zone>>,
    pub signed: Option<&'a SignedInfo>,
    /// The last serial served, also across restarts (from the store).
    pub served_serial: Option<u32>,
}

/// What a change makes of a zone.
#[derive(Debug)]
pub(crate) enum NextVersion {
    New(Box<Version>),
    /// A signing pass that refreshed nothing: the served copy stays, and
    /// the next pass is due then.
    Unchanged {
        next_resign: u64,
    },
}

/// The next version of a zone from its new unsigned content.
pub(crate) fn next_version(
    spec: &ZoneSpec,
    unsigned: Arc<Zone>,
    previous: Previous<'_>,
    cause: &Cause,
    now: u64,
    threads: usize,
) -> Result<NextVersion, Vec<String>> {
    let unsigned_serial = serial_of(&unsigned)
        .ok_or_else(|| vec![format!("zone {}: no SOA record at the apex", spec.origin)])?;
    let (served, signed, serial) = match &spec.signing {
        None => (Arc::clone(&unsigned), None, unsigned_serial),
        Some(signing) => {
            let last = previous
                .served
                .and_then(|z| serial_of(z))
                .or(previous.served_serial);
            let serial = signed_serial(spec, unsigned_serial, last, now);
            let (zone, info) = sign(
                spec,
                signing,
                &unsigned,
                serial,
                now,
                previous.signed.map(|s| &*s.cache),
                threads,
            )?;
            (Arc::new(zone), Some(info), serial)
        }
    };
    let served_diff = match previous.served {
        Some(old) => match diff_zones(old, &served) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(zone = %spec.origin, error = %e, "cannot compare with the previous version");
                None
            }
        },
        None => None,
    };
    if let (Cause::Resign, Some(d), Some(old)) = (cause, &served_diff, previous.served) {
        if only_soa_signatures(d) {
            // Nothing was refreshed: keep serving the old copy (and its
            // serial) rather than bump the serial for nothing. The pass's
            // timing is kept by the caller.
            tracing::debug!(zone = %spec.origin, serial = serial_of(old), "signing pass changed nothing");
            let next_resign = signed.as_ref().map_or(now, |s| s.state.next_resign);
            return Ok(NextVersion::Unchanged { next_resign });
        }
    }
    let served_diff = served_diff.filter(|d| d.old_serial() != d.new_serial());
    Ok(NextVersion::New(Box::new(Version {
        unsigned,
        served,
        signed,
        served_diff,
        serial,
    })))
}

/// The serial a reloaded file should get: its own when newer than what is
/// served, else (content changed, serial not) the next by policy, as Knot's
/// `zonefile-load: difference-no-serial` does, so secondaries see the change.
pub(crate) fn reload_serial(
    spec: &ZoneSpec,
    file_serial: u32,
    old_unsigned_serial: u32,
    now: u64,
) -> u32 {
    if serial_gt(file_serial, old_unsigned_serial) {
        file_serial
    } else {
        let next = spec
            .replication
            .serial_policy
            .next(old_unsigned_serial, now);
        tracing::warn!(
            zone = %spec.origin,
            file_serial,
            served = old_unsigned_serial,
            next,
            "the zone file changed but its serial did not increase; serving it with serial {next}"
        );
        next
    }
}

/// The serial of a SOA record, for callers holding records.
pub(crate) fn records_serial(records: &[Record]) -> Option<u32> {
    records
        .iter()
        .find(|r| r.rtype() == Rtype::SOA)
        .and_then(soa_serial_of)
}
