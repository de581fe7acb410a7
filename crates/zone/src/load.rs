//! Reading a zone from its master file: parse, check, build.

use std::path::Path;

use bulwark_proto::{Name, Record};

use crate::build::ZoneBuilder;
use crate::check::Problem;
use crate::fork::{Fork, InTurn};
use crate::parse::split::parse_file_in_parts;
use crate::zone::Zone;

/// Everything that stopped a zone from loading. `Display` lists every problem,
/// one per line: `FILE:LINE:COL: message` for syntax errors, `FILE: owner TYPE:
/// message` for the load-time checks (warnings marked `warning:`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("\n"))]
pub struct LoadError {
    pub problems: Vec<String>,
}

/// A zone that loaded, with what the checks warned about.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub zone: Zone,
    pub warnings: Vec<Problem>,
    /// Warnings found beyond the number the caller asked to keep (see
    /// [`load_zone_file_keeping`]).
    pub unkept_warnings: usize,
}

impl Loaded {
    /// The warnings as `FILE: owner TYPE: warning: message` lines.
    pub fn warning_lines(&self, file: &str) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| format!("{file}: {w}"))
            .collect()
    }
}

/// Parses `path` as the master file of the zone `origin`, runs the load-time checks
/// and builds the zone ready for answering. Warnings are dropped; see
/// [`load_zone_file_with_warnings`] to report them.
pub fn load_zone_file(origin: &Name, path: &Path) -> Result<Zone, LoadError> {
    load_zone_file_with_warnings(origin, path).map(|l| l.zone)
}

/// Like [`load_zone_file`], also returning the warnings of a zone that loaded.
/// Reads the file in one pass on this thread.
pub fn load_zone_file_with_warnings(origin: &Name, path: &Path) -> Result<Loaded, LoadError> {
    load_zone_file_in_parts(origin, path, &InTurn, 1)
}

/// Like [`load_zone_file_with_warnings`], reading a large file in up to
/// `parts` parts run through `fork` (see [`crate::parse::split`]); the zone and
/// every message are the same as reading it in one go.
///
/// Records go from the parser straight into the [`ZoneBuilder`]'s compact form,
/// so the typed records (several hundred octets each) are never all held at
/// once. When the parser reports problems what was built is dropped.
pub fn load_zone_file_in_parts(
    origin: &Name,
    path: &Path,
    fork: &impl Fork,
    parts: usize,
) -> Result<Loaded, LoadError> {
    load_zone_file_keeping(origin, path, fork, parts, usize::MAX)
}

/// Like [`load_zone_file_in_parts`], keeping only the first `warnings`
/// warnings in zone order and counting the rest
/// ([`Loaded::unkept_warnings`]; in a [`LoadError`], a last line): for a
/// caller that shows only a few, a zone with a warning at most of its names
/// then costs no message for each.
pub fn load_zone_file_keeping(
    origin: &Name,
    path: &Path,
    fork: &impl Fork,
    parts: usize,
    warnings: usize,
) -> Result<Loaded, LoadError> {
    let file = path.display().to_string();
    let mut builder = ZoneBuilder::new(origin);
    parse_file_in_parts(path, origin, &mut builder, fork, parts).map_err(|diagnostics| {
        LoadError {
            problems: diagnostics.iter().map(ToString::to_string).collect(),
        }
    })?;
    build(builder, &file, fork, warnings)
}

/// Checks and builds a zone from records already parsed out of `file` (the name
/// is only used in messages).
pub fn load_records(origin: &Name, records: Vec<Record>, file: &str) -> Result<Loaded, LoadError> {
    let mut builder = ZoneBuilder::new(origin);
    for r in &records {
        builder.add(r);
    }
    build(builder, file, &InTurn, usize::MAX)
}

/// Finishes the zone and runs the load-time checks; `file` prefixes each problem.
fn build(
    builder: ZoneBuilder,
    file: &str,
    fork: &impl Fork,
    warnings: usize,
) -> Result<Loaded, LoadError> {
    match Zone::build_keeping_warnings(builder, fork, warnings) {
        Ok(built) => Ok(Loaded {
            zone: built.zone,
            warnings: built.problems,
            unkept_warnings: built.unkept_warnings,
        }),
        Err(built) => {
            let mut problems: Vec<String> = built
                .problems
                .iter()
                .map(|p| format!("{file}: {p}"))
                .collect();
            if built.unkept_warnings > 0 {
                problems.push(format!(
                    "{file}: and {} more warnings",
                    built.unkept_warnings
                ));
            }
            Err(LoadError { problems })
        }
    }
}
