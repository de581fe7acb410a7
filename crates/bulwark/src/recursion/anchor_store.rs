//! Where RFC 5011's trust anchor state lives between runs: the server's
//! store, under each managed zone's name (meta key `rfc5011`). Without a
//! store (`[server] storage` unset) the state lives as long as the process,
//! and a restart starts again from the configured anchors.

use std::sync::Arc;

use bulwark_resolver::Resolver;
use bulwark_store::Store;

const META_KEY: &str = "rfc5011";

pub(super) struct AnchorStore(Option<Arc<Store>>);

impl AnchorStore {
    pub(super) fn new(store: Option<Arc<Store>>) -> AnchorStore {
        AnchorStore(store)
    }

    /// Gives `engine` the state saved for each of its managed zones.
    pub(super) fn restore(&self, engine: &mut Resolver) {
        let Some(store) = &self.0 else {
            return;
        };
        for zone in engine.managed_anchor_zones() {
            match store.get_meta(&zone, META_KEY) {
                Ok(Some(bytes)) if engine.restore_trust_state(&bytes) => {
                    tracing::info!(zone = %zone, "trust anchor state (RFC 5011) resumed");
                }
                Ok(Some(_)) => {
                    tracing::warn!(zone = %zone, "saved trust anchor state unreadable: starting from the configured anchors");
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(zone = %zone, error = %e, "cannot read the saved trust anchor state");
                }
            }
        }
    }

    /// Saves what changed in `engine`'s managed anchors; whether anything
    /// did.
    pub(super) fn save(&self, engine: &mut Resolver) -> bool {
        let mut changed = false;
        while let Some((zone, bytes)) = engine.poll_trust_state() {
            changed = true;
            tracing::info!(zone = %zone, "trust anchor keys changed (RFC 5011)");
            if let Some(store) = &self.0 {
                if let Err(e) = store.put_meta(&zone, META_KEY, &bytes) {
                    tracing::warn!(zone = %zone, error = %e, "cannot save the trust anchor state");
                }
            }
        }
        changed
    }
}
