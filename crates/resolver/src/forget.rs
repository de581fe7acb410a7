//! What a flush of the cache makes the engine forget of its own: the
//! verdicts on flushed zones' keys and who gave them, the aggressive
//! cache's spans that could still deny a flushed name, and (flushing
//! everything) the signatures already checked. Taken before every step,
//! so no answer after a flush is made from what it flushed. What is
//! known of the servers (round trips, lameness) stays through a flush of
//! data, as Unbound keeps its infrastructure cache through `flush_zone`;
//! it has a flush of its own ([`ServersFlushed`]).

use bulwark_proto::Name;

use crate::cache::{Flushed, ServersFlushed};
use crate::engine::Resolver;

impl Resolver {
    pub(crate) fn apply_flushes(&mut self) {
        let (data, servers) = self.cache.take_flushes();
        for which in servers {
            match which {
                ServersFlushed::All => self.infra.forget_all(),
                ServersFlushed::One(ip) => self.infra.forget(ip),
            }
        }
        for flushed in data {
            match &flushed {
                Flushed::All => {
                    self.keys.clear();
                    self.origins.clear();
                    self.sig_memo.clear();
                }
                Flushed::Zone(zone) => {
                    self.keys.retain(|name, _| !name.ends_with(zone));
                    self.origins.retain(|(name, _), _| !name.ends_with(zone));
                }
                Flushed::Name(name) => {
                    self.keys.remove(name);
                    self.origins.retain(|(n, _), _| n != name);
                }
            }
            self.aggressive.forget(&flushed);
        }
    }
}

/// Whether one of `a` and `b` is at or below the other: the zones whose
/// spans or wildcards may speak for names at or below a flushed one.
pub(crate) fn related(a: &Name, b: &Name) -> bool {
    a.ends_with(b) || b.ends_with(a)
}
