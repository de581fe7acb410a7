//! `bulwark check-config` and `bulwark check-zone`: load, report every problem on
//! stderr, exit 1 if there was one.

use std::path::Path;
use std::process::ExitCode;

use crate::zones::read_zone_file;

use crate::cli::ServeArgs;
use crate::config;
use crate::settings::parse_origin;
use crate::zones::soa_serial;

pub fn check_zone(origin: &str, file: &Path) -> ExitCode {
    let origin = match parse_origin(origin) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("origin `{origin}`: {e}");
            return ExitCode::FAILURE;
        }
    };
    match read_zone_file(&origin, file, usize::MAX) {
        Ok(loaded) => {
            // Warnings do not stop a zone from loading: shown, exit status 0.
            for w in loaded.warning_lines(&file.display().to_string()) {
                eprintln!("{w}");
            }
            let zone = loaded.zone;
            let serial = soa_serial(&zone).map_or_else(|| "-".to_string(), |s| s.to_string());
            println!(
                "{}: zone {origin} OK, serial {serial}, {} names",
                file.display(),
                zone.node_count()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            for p in &e.problems {
                eprintln!("{p}");
            }
            eprintln!(
                "{}: zone {origin}: {} problem(s)",
                file.display(),
                e.problems.len()
            );
            ExitCode::FAILURE
        }
    }
}

pub fn check_config(file: &Path) -> ExitCode {
    let args = ServeArgs {
        config: Some(file.to_path_buf()),
        ..ServeArgs::default()
    };
    let settings = match config::load(&args) {
        Ok(s) => s,
        Err(e) => {
            for p in &e.problems {
                eprintln!("{p}");
            }
            return ExitCode::FAILURE;
        }
    };
    let mut failed = 0usize;
    for z in &settings.zones {
        // Secondaries and generated catalogs have no file to check.
        let Some(path) = &z.path else { continue };
        if z.replication.is_secondary() && !path.exists() {
            continue;
        }
        if let Err(e) = read_zone_file(&z.origin, path, usize::MAX) {
            failed = failed.saturating_add(1);
            for p in &e.problems {
                eprintln!("{p}");
            }
        }
    }
    if failed > 0 {
        eprintln!("{}: {failed} zone(s) failed to load", file.display());
        return ExitCode::FAILURE;
    }
    println!(
        "{}: OK, {} listen address(es), {} zone(s)",
        file.display(),
        settings.listen.len(),
        settings.zones.len()
    );
    ExitCode::SUCCESS
}
