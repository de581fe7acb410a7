//! The command line: `bulwark serve | check-config | check-zone | ctl | dnstap | sign | keys | version`.
//!
//! [`Cli`] is the documented interface: the man pages and shell completions
//! are generated from it. [`Invocation::parse`] adds the one hidden command,
//! `generate-docs`, which packages run to write them.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

pub mod dnstap;
pub mod keys;
pub mod sign;

/// An authoritative DNS server.
#[derive(Debug, Parser)]
#[command(name = "bulwark", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The hidden command that writes man pages and completions.
pub const GENERATE_DOCS: &str = "generate-docs";

/// What `main` runs: a documented command, or the hidden `generate-docs`.
#[derive(Debug)]
pub enum Invocation {
    // Boxed: `Command` is large, and this is built once.
    Command(Box<Command>),
    GenerateDocs(GenerateDocsArgs),
}

impl Invocation {
    /// Parses the process's arguments (exiting with clap's message on error).
    /// `generate-docs` is added here rather than to [`Command`], so that the
    /// pages and completions generated from [`Cli`] do not list it.
    pub fn parse() -> Invocation {
        let generate_docs = GenerateDocsArgs::augment_args(
            clap::Command::new(GENERATE_DOCS)
                .about("Write man pages and shell completions (for packaging)")
                .hide(true),
        );
        let matches = Cli::command().subcommand(generate_docs).get_matches();
        let parsed = match matches.subcommand() {
            Some((GENERATE_DOCS, sub)) => {
                GenerateDocsArgs::from_arg_matches(sub).map(Invocation::GenerateDocs)
            }
            _ => Cli::from_arg_matches(&matches)
                .map(|cli| Invocation::Command(Box::new(cli.command))),
        };
        parsed.unwrap_or_else(|e| e.exit())
    }
}

/// `bulwark generate-docs --out DIR`.
#[derive(Debug, Clone, Args)]
pub struct GenerateDocsArgs {
    /// Directory to write `man/` (section 8 pages) and `completions/` (bash,
    /// zsh, fish) into; created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve zones. With no --config and no --zone, serves a built-in demo zone
    /// on 127.0.0.1:5300 (or the next free port).
    Serve(ServeArgs),
    /// Check a configuration file (and the zone files it names), then exit.
    CheckConfig {
        /// The TOML configuration file.
        file: PathBuf,
    },
    /// Check one zone file, print every problem found, then exit.
    CheckZone {
        /// The zone's origin, e.g. `example.com.`.
        origin: String,
        /// The master file.
        file: PathBuf,
    },
    /// Talk to a running server over its control socket.
    Ctl(CtlArgs),
    /// Read, or capture, dnstap Frame Streams.
    Dnstap(dnstap::DnstapArgs),
    /// Sign a zone file with its keys (offline, like dnssec-signzone).
    Sign(sign::SignArgs),
    /// Create and list DNSSEC keys, print DS records.
    Keys(keys::KeysArgs),
    /// Print the version.
    Version,
}

#[derive(Debug, Default, Clone, Args)]
pub struct ServeArgs {
    /// The TOML configuration file.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (UDP and TCP); repeat for more. Replaces the file's `listen`.
    #[arg(long, short = 'l', value_name = "ADDR:PORT")]
    pub listen: Vec<SocketAddr>,
    /// A zone to serve, added to the file's zones; repeat for more.
    #[arg(long, short = 'z', value_name = "ORIGIN=PATH")]
    pub zone: Vec<String>,
    /// UDP worker threads (default: one per CPU).
    #[arg(long, short = 't', value_name = "N")]
    pub threads: Option<usize>,
    /// Log format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Log level or filter (error, warn, info, debug, trace, or `target=level,...`).
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Control socket path. Overrides `[control] socket`.
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// Log AUTH_QUERY and AUTH_RESPONSE with dnstap to `file:PATH`,
    /// `unix:PATH` or `tcp:ADDR:PORT`. Overrides `[dnstap] destination`.
    #[arg(long, value_name = "DEST")]
    pub dnstap: Option<String>,
    /// The database of journals, secondary zones and timers. Overrides
    /// `[server] storage`.
    #[arg(long, value_name = "FILE")]
    pub storage: Option<PathBuf>,
    /// Once serving, write the PID, the bound addresses (`dns ADDR:PORT` per
    /// listen address, UDP and TCP on the same port; `prometheus ADDR:PORT`)
    /// and a last line `ready` to FILE, so that port 0 can be used.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// Test only: the server's clock starts at UNIX_SECONDS and runs on from
    /// there; `ctl test-clock advance SECONDS` moves it forward. For
    /// scenario tests that make TTLs expire without waiting.
    #[arg(long, value_name = "UNIX_SECONDS", hide = true)]
    pub test_clock: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The server's control socket [default: the configuration file's
    /// `[control] socket`, else /run/bulwark/control.sock].
    #[arg(long, short = 's', value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Take the control socket path from this configuration file.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum CtlCommand {
    /// Re-read the zone list and reload every zone; a zone that fails keeps its old copy.
    Reload,
    /// Stop the server.
    Stop,
    /// Print version, uptime, listeners, workers, zones, control and Prometheus
    /// addresses, and the main counters.
    Status,
    /// One zone, or the list of them.
    #[command(subcommand)]
    Zone(ZoneCommand),
    /// Print every statistic, one `name{labels} value` per line.
    Stats {
        /// Print one JSON object instead.
        #[arg(long)]
        json: bool,
    },
    /// The resolver's cache.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// The managed trust anchors' keys and their RFC 5011 states.
    Anchors,
    /// Negative trust anchors (RFC 7646): zones the resolver does not
    /// validate for a while, because their operators broke them.
    #[command(subcommand)]
    Nta(NtaCommand),
    /// Test only: move the clock of a server started with `--test-clock`.
    #[command(subcommand, hide = true)]
    TestClock(TestClockCommand),
}

#[derive(Debug, Clone, Subcommand)]
pub enum CacheCommand {
    /// Entries, octets, hits, misses, insertions and evictions.
    Stats,
    /// Forget cached data: everything, or one name (`--name`), or a name and
    /// everything below it (`--zone`).
    Flush {
        /// Forget this name's records of every type.
        #[arg(long, value_name = "NAME", conflicts_with = "zone")]
        name: Option<String>,
        /// Forget this name and every name below it.
        #[arg(long, value_name = "ZONE")]
        zone: Option<String>,
    },
    /// Forget what the resolver knows of the servers it asks (round trips,
    /// time-outs and back-off, lameness, EDNS support, cookies): of all, or
    /// of one address. The cached data stays.
    FlushInfra {
        /// The server's address, e.g. `192.0.2.53`.
        address: Option<std::net::IpAddr>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum NtaCommand {
    /// Stop validating a zone (and everything below it) for a while; what
    /// the cache holds of it is forgotten.
    Add {
        /// The zone, e.g. `broken.example.`.
        zone: String,
        /// How long, in seconds (an hour unless given, a week at most).
        seconds: Option<u64>,
    },
    /// Validate a zone again.
    Remove {
        /// The zone.
        zone: String,
    },
    /// The negative trust anchors and the seconds each has left.
    List,
}

#[derive(Debug, Clone, Subcommand)]
pub enum TestClockCommand {
    /// Move the clock forward.
    Advance {
        /// Seconds to move it by.
        seconds: u64,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum ZoneCommand {
    /// One line per configured zone: origin, serial, file.
    List,
    /// Origin, serial, file, when it was loaded, names, DNSSEC and transfers.
    Status {
        /// The zone's origin, e.g. `example.com.`.
        zone: String,
    },
    /// Reload one zone from its file; if the file fails, the old copy stays.
    Reload {
        /// The zone's origin, e.g. `example.com.`.
        zone: String,
    },
    /// A signing pass now for a zone with a dnssec_policy (key files are read again).
    Sign {
        /// The zone's origin, e.g. `example.com.`.
        zone: String,
    },
    /// Print the zone as served, signatures included, as a master file.
    Read {
        /// The zone's origin, e.g. `example.com.`.
        zone: String,
    },
}

impl CtlCommand {
    /// The command line sent over the control socket.
    pub fn wire_line(&self) -> String {
        match self {
            CtlCommand::Reload => "reload".to_string(),
            CtlCommand::Stop => "stop".to_string(),
            CtlCommand::Status => "status".to_string(),
            CtlCommand::Zone(ZoneCommand::List) => "zone list".to_string(),
            CtlCommand::Zone(ZoneCommand::Status { zone }) => format!("zone status {zone}"),
            CtlCommand::Zone(ZoneCommand::Reload { zone }) => format!("zone reload {zone}"),
            CtlCommand::Zone(ZoneCommand::Sign { zone }) => format!("zone sign {zone}"),
            CtlCommand::Zone(ZoneCommand::Read { zone }) => format!("zone read {zone}"),
            CtlCommand::Stats { json: false } => "stats".to_string(),
            CtlCommand::Stats { json: true } => "stats --json".to_string(),
            CtlCommand::Cache(CacheCommand::Stats) => "cache stats".to_string(),
            CtlCommand::Cache(CacheCommand::Flush { name, zone }) => match (name, zone) {
                (Some(n), _) => format!("cache flush name {n}"),
                (None, Some(z)) => format!("cache flush zone {z}"),
                (None, None) => "cache flush".to_string(),
            },
            CtlCommand::Cache(CacheCommand::FlushInfra { address }) => match address {
                Some(ip) => format!("cache flush-infra {ip}"),
                None => "cache flush-infra".to_string(),
            },
            CtlCommand::Anchors => "anchors".to_string(),
            CtlCommand::Nta(NtaCommand::Add { zone, seconds }) => match seconds {
                Some(s) => format!("nta add {zone} {s}"),
                None => format!("nta add {zone}"),
            },
            CtlCommand::Nta(NtaCommand::Remove { zone }) => format!("nta remove {zone}"),
            CtlCommand::Nta(NtaCommand::List) => "nta list".to_string(),
            CtlCommand::TestClock(TestClockCommand::Advance { seconds }) => {
                format!("test-clock advance {seconds}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn generate_docs_is_hidden_from_the_documented_cli() {
        let cli = Cli::command();
        assert!(cli.find_subcommand(GENERATE_DOCS).is_none());
    }
}
