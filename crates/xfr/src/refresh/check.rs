//! Checking what a primary sends back: the TSIG of each message (RFC 8945
//! §5.3.1, §5.4) and the transfer itself (RFC 5936, RFC 1995), turned into
//! what the server applies to its copy.

use bulwark_proto::{Record, Rtype};
use bulwark_zone::ZoneDiff;

use super::RefreshError;
use crate::transfer_in::{Progress, TransferReader, TransferResult};
use crate::tsig::ResponseVerifier;

/// What a transfer brought, to apply to the zone.
// One per transfer: boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// RFC 1995 §4: the copy held is current; nothing to apply.
    UpToDate,
    /// The whole zone, its SOA among `records`.
    Full { soa: Record, records: Vec<Record> },
    /// The changes from the copy held to `soa`'s version, oldest first.
    Incremental { soa: Record, diffs: Vec<ZoneDiff> },
}

impl Fetched {
    /// The SOA of the version fetched (none when up to date).
    pub fn soa(&self) -> Option<&Record> {
        match self {
            Fetched::UpToDate => None,
            Fetched::Full { soa, .. } | Fetched::Incremental { soa, .. } => Some(soa),
        }
    }
}

/// Checks the messages of one transfer as they arrive: feed each, then
/// [`TransferCheck::finish`].
#[derive(Debug)]
pub struct TransferCheck {
    pub(super) verifier: Option<ResponseVerifier>,
    pub(super) reader: TransferReader,
    pub(super) qtype: Rtype,
    /// The SOA of the copy the IXFR query started from.
    pub(super) held: Option<Record>,
}

impl TransferCheck {
    /// AXFR or IXFR.
    pub fn qtype(&self) -> Rtype {
        self.qtype
    }

    /// Messages accepted so far.
    pub fn messages(&self) -> usize {
        self.reader.messages()
    }

    /// Records accepted so far.
    pub fn records(&self) -> usize {
        self.reader.records()
    }

    /// Checks one message received at `now`: its TSIG when the query was
    /// signed (a response to a signed request must be signed, RFC 8945
    /// §5.3), then its records. After an error the transfer is over.
    pub fn feed(&mut self, msg: &[u8], now: u64) -> Result<Progress, RefreshError> {
        if let Some(v) = self.verifier.as_mut() {
            v.verify(msg, now).map_err(RefreshError::Tsig)?;
        }
        self.reader.feed(msg).map_err(RefreshError::Answer)
    }

    /// What the transfer brought, once the stream ended.
    pub fn finish(self) -> Result<Fetched, RefreshError> {
        if let Some(v) = self.verifier.as_ref() {
            // RFC 8945 §5.3.1: the last message must be signed.
            v.finish().map_err(RefreshError::Tsig)?;
        }
        match self.reader.finish().map_err(RefreshError::Answer)? {
            TransferResult::UpToDate { .. } => match self.held {
                Some(_) => Ok(Fetched::UpToDate),
                None => Err(RefreshError::Unusable(
                    "an up-to-date answer to AXFR".to_string(),
                )),
            },
            TransferResult::Full { soa, mut records } => {
                records.push(soa.clone());
                Ok(Fetched::Full { soa, records })
            }
            // Only a UDP answer says this; over TCP it means the primary sent
            // a newer SOA and nothing else: a failed transfer.
            TransferResult::RetryOverTcp { serial } => Err(RefreshError::Unusable(format!(
                "the primary answered with SOA {serial} alone"
            ))),
            TransferResult::Incremental { diffs } => {
                let soa = diffs
                    .last()
                    .map(|d| d.new_soa.clone())
                    .ok_or_else(|| RefreshError::Unusable("an empty IXFR".to_string()))?;
                Ok(Fetched::Incremental { soa, diffs })
            }
        }
    }
}
