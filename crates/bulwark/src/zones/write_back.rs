//! Writing changed zones back to their files, `zonefile_sync` after the
//! first change a file lacks.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use bulwark_proto::{Name, Record};
use bulwark_zone::Zone;

use super::version::serial_of;
use super::{soa_serial, ZoneTable, Zones};

impl Zones {
    /// Zones whose unsigned content has changes their file lacks, for
    /// longer than their `zonefile_sync` delay at `now`.
    pub fn files_due(&self, now: Instant) -> Vec<Name> {
        let table = self.lock();
        file_deadlines(&table)
            .into_iter()
            .filter(|(_, due)| *due <= now)
            .map(|(origin, _)| origin)
            .collect()
    }

    /// When the next file write is due, if any is pending.
    pub fn next_file_due(&self) -> Option<Instant> {
        let table = self.lock();
        file_deadlines(&table).into_iter().map(|(_, due)| due).min()
    }

    /// Writes the unsigned content of `origin` to its file (atomically:
    /// beside it, then renamed over it), and lets the journal forget what
    /// the file now holds.
    pub fn write_file(&self, origin: &Name) -> Result<Option<PathBuf>, String> {
        let (path, zone) = {
            let table = self.lock();
            let Some(spec) = table.spec(origin) else {
                return Ok(None);
            };
            let Some(path) = spec.path.clone() else {
                return Ok(None);
            };
            let Some(zone) = table.entries.get(origin).and_then(|e| e.unsigned.clone()) else {
                return Ok(None);
            };
            (path, zone)
        };
        // Printed outside the lock: answering and other zones' changes go on.
        write_zone_file(&path, &zone)?;
        let serial = soa_serial(&zone);
        let mut table = self.lock();
        if let Some(e) = table.entries.get_mut(origin) {
            // Another change may have come in meanwhile: stay dirty then.
            let same = e.unsigned.as_ref().is_some_and(|u| Arc::ptr_eq(u, &zone));
            e.file_serial = serial;
            e.modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            if same {
                e.dirty_since = None;
            }
        }
        drop(table);
        if let (Some(j), Some(spec), Some(serial)) = (&self.journal, self.spec(origin), serial) {
            j.file_written(&spec, serial);
        }
        tracing::info!(zone = %origin, file = %path.display(), serial, "zone file written");
        Ok(Some(path))
    }
}

/// Writes `zone` as a master file at `path`: to a temporary file beside it,
/// flushed to disk, then renamed over it, so a crash leaves either the old
/// file or the new one, never half of one.
fn write_zone_file(path: &Path, zone: &Zone) -> Result<(), String> {
    let records: Vec<Record> = zone.records().collect();
    let text = bulwark_zone::print_zone(&records);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "zone".to_string());
    let tmp = dir.join(format!(".{name}.bulwark-tmp"));
    let header = format!(
        "; {} written by bulwark at {} (serial {})\n",
        zone.apex(),
        humantime_now(),
        serial_of(zone).map_or_else(|| "-".to_string(), |s| s.to_string())
    );
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(header.as_bytes())?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable once the directory is.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Now as Unix seconds, for the file's header comment.
fn humantime_now() -> String {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or_else(
            |_| "-".to_string(),
            |d| format!("unix time {}", d.as_secs()),
        )
}

/// Each zone with changes its file lacks, and when its file is due: the
/// first unwritten change plus the zone's `zonefile_sync` delay.
fn file_deadlines(table: &ZoneTable) -> Vec<(Name, Instant)> {
    table
        .all_specs()
        .into_iter()
        .filter_map(|spec| {
            let delay = spec.replication.zonefile_sync?;
            let since = table.entries.get(&spec.origin)?.dirty_since?;
            Some((spec.origin, since.checked_add(delay)?))
        })
        .collect()
}
