//! Signing passes over zones bulwark signs: due by the policy's re-sign
//! interval or a key event, or asked for with `ctl zone sign`.

use std::sync::Arc;

use bulwark_proto::Name;
use bulwark_zone::Zone;

use super::version::Cause;
use super::{ZoneEvent, Zones};
use crate::settings::ZoneSpec;
use crate::signing::unix_now;

impl Zones {
    /// When the earliest signed zone wants its next signing pass.
    pub fn next_resign(&self) -> Option<u64> {
        let table = self.lock();
        table
            .entries
            .values()
            .filter_map(|e| e.signed.as_ref().map(|c| c.state.next_resign))
            .min()
    }

    /// Re-signs every signed zone whose pass is due at `now` from its
    /// unsigned content; a zone that fails keeps the copy it has.
    pub fn resign_due(&self, now: u64) -> usize {
        let mut table = self.lock();
        let due: Vec<(ZoneSpec, Arc<Zone>)> = table
            .all_specs()
            .into_iter()
            .filter_map(|spec| {
                let e = table.entries.get(&spec.origin)?;
                let signed = e.signed.as_ref()?;
                let unsigned = e.unsigned.clone()?;
                (signed.state.next_resign <= now).then_some((spec, unsigned))
            })
            .collect();
        let mut resigned: usize = 0;
        let mut changed = Vec::new();
        for (spec, unsigned) in due {
            match self.commit(&mut table, &spec, unsigned, Cause::Resign, now) {
                Ok(serial) => {
                    resigned = resigned.saturating_add(1);
                    if let Some(s) = serial {
                        changed.push((spec.origin.clone(), s));
                    }
                }
                Err(e) => {
                    tracing::error!(zone = %spec.origin, "re-signing: {e}");
                    // Try again in a minute rather than spin.
                    if let Some(s) = table
                        .entries
                        .get_mut(&spec.origin)
                        .and_then(|e| e.signed.as_mut())
                    {
                        s.state.next_resign = now.saturating_add(60);
                    }
                }
            }
        }
        if resigned > 0 {
            self.publish(&table);
        }
        drop(table);
        for (origin, serial) in changed {
            self.emit(ZoneEvent::Changed { origin, serial });
        }
        resigned
    }

    /// A signing pass for one zone now. `Ok(None)` when bulwark does not
    /// sign it; the problems when the pass failed (the old copy stays).
    pub fn resign_now(&self, origin: &Name) -> Result<Option<()>, Vec<String>> {
        let mut table = self.lock();
        let Some(spec) = table.spec(origin).cloned() else {
            return Ok(None);
        };
        if spec.signing.is_none() {
            return Ok(None);
        }
        let Some(unsigned) = table.entries.get(origin).and_then(|e| e.unsigned.clone()) else {
            return Ok(None);
        };
        let serial = self
            .commit(&mut table, &spec, unsigned, Cause::Resign, unix_now())
            .map_err(|e| vec![e.to_string()])?;
        self.publish_and_announce(table, serial.map(|s| (origin.clone(), s)));
        Ok(Some(()))
    }
}
