//! Authoritative answering: a query's bytes and a `ZoneSet` in, a response's bytes out.
//!
//! STUB: the contract the server builds against; the answer steps are being written.
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

use std::sync::Arc;

use bulwark_proto::Rcode;
use bulwark_zone::ZoneSet;

/// DNS flag day 2020: a UDP payload that avoids IP fragmentation on common paths.
pub const DEFAULT_MAX_UDP_PAYLOAD: u16 = 1232;

/// Answers to CH-class TXT queries (`id.server.`, `hostname.bind.`, `version.bind.`);
/// each is answered only when configured, REFUSED otherwise.
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
}

impl Default for AnswerConfig {
    fn default() -> Self {
        AnswerConfig {
            max_udp_payload: DEFAULT_MAX_UDP_PAYLOAD,
            chaos: ChaosIdentity::default(),
        }
    }
}

/// The transport a query arrived on: it sets the response size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// What became of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerOutcome {
    /// `out` holds a response to send.
    Respond { rcode: Rcode, truncated: bool },
    /// Nothing to send: too short to carry a header, or itself a response (QR set).
    Drop,
}

/// Answers queries. One per worker thread: it keeps scratch space between queries
/// so answering does not allocate.
#[derive(Debug)]
pub struct Answerer {
    config: Arc<AnswerConfig>,
}

impl Answerer {
    pub fn new(config: Arc<AnswerConfig>) -> Answerer {
        Answerer { config }
    }

    pub fn config(&self) -> &AnswerConfig {
        &self.config
    }

    /// Clears `out` and writes into it the response to `query`.
    pub fn answer(
        &mut self,
        zones: &ZoneSet,
        transport: Transport,
        query: &[u8],
        out: &mut Vec<u8>,
    ) -> AnswerOutcome {
        let _ = (zones, transport);
        out.clear();
        if query.len() < 12 || query.get(2).is_some_and(|b| b & 0x80 != 0) {
            return AnswerOutcome::Drop;
        }
        // Placeholder until the answer steps land: REFUSED with the question echoed.
        out.extend_from_slice(query);
        if let Some(b) = out.get_mut(2) {
            *b = (*b & 0x79) | 0x80;
        }
        if let Some(b) = out.get_mut(3) {
            *b = Rcode::REFUSED.header_bits();
        }
        AnswerOutcome::Respond {
            rcode: Rcode::REFUSED,
            truncated: false,
        }
    }
}
