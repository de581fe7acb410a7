//! `bulwark dnstap`'s arguments.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct DnstapArgs {
    #[command(subcommand)]
    pub command: DnstapCommand,
}

#[derive(Debug, Subcommand)]
pub enum DnstapCommand {
    /// Print the messages of a Frame Streams file.
    Read {
        /// The dnstap file (`-` reads standard input).
        file: PathBuf,
        /// `text`: one line per message (like dnstap-ldns); `yaml`: a
        /// document per message (like dnstap-ldns -y); `json`: one object per line.
        #[arg(long, value_enum, default_value_t = ReadFormat::Text)]
        format: ReadFormat,
    },
    /// Receive dnstap from a sender (knotd, unbound, bulwark) and write it to a file.
    #[command(group(clap::ArgGroup::new("listen").required(true).args(["unix", "tcp"])))]
    Capture {
        /// Listen on this Unix socket path (a stale socket file is replaced).
        #[arg(long, value_name = "PATH")]
        unix: Option<PathBuf>,
        /// Listen on this TCP address, e.g. 127.0.0.1:6000.
        #[arg(long, value_name = "ADDR:PORT")]
        tcp: Option<SocketAddr>,
        /// The Frame Streams file to write (replaced if it exists).
        #[arg(short = 'w', long = "write", value_name = "FILE")]
        write: PathBuf,
        /// Stop after this many messages.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReadFormat {
    Text,
    Yaml,
    Json,
}
