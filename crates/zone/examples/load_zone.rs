//! Loads one master file and prints the zone's node count and the load time:
//! `load_zone ORIGIN FILE`. Used to measure the load path's peak memory
//! (run it under `/usr/bin/time -v`).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use bulwark_proto::Name;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(origin), Some(file)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: load_zone ORIGIN FILE");
        return ExitCode::from(2);
    };
    let origin: Name = match origin.parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bad origin {origin}: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    match bulwark_zone::load_zone_file(&origin, Path::new(file)) {
        Ok(zone) => {
            println!(
                "{} nodes, loaded in {:.3} s",
                zone.node_count(),
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
