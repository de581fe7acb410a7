//! The glue between a transport and the answering code: each UDP worker and each
//! TCP connection owns one [`ServerHandler`].

use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::{ArcSwap, Cache};
use bulwark_auth::{AnswerConfig, AnswerOutcome, Answerer, Transport};
use bulwark_net::QueryHandler;
use bulwark_zone::ZoneSet;

#[derive(Debug)]
pub struct ServerHandler {
    answerer: Answerer,
    /// Sees a swapped-in ZoneSet on the next query; until then it costs one
    /// atomic load per query, no reference-count traffic.
    zones: Cache<Arc<ArcSwap<ZoneSet>>, Arc<ZoneSet>>,
    transport: Transport,
}

impl ServerHandler {
    pub fn new(
        config: Arc<AnswerConfig>,
        zones: Arc<ArcSwap<ZoneSet>>,
        transport: Transport,
    ) -> ServerHandler {
        ServerHandler {
            answerer: Answerer::new(config),
            zones: Cache::new(zones),
            transport,
        }
    }
}

impl QueryHandler for ServerHandler {
    fn handle(&mut self, query: &[u8], _peer: SocketAddr, out: &mut Vec<u8>) -> bool {
        let zones = self.zones.load();
        matches!(
            self.answerer.answer(zones, self.transport, query, out),
            AnswerOutcome::Respond { .. }
        )
    }
}
