//! `bulwark`: the authoritative DNS server binary.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

/// mimalloc: see `bulwark_net::Allocator` for why.
#[global_allocator]
static ALLOCATOR: bulwark_net::Allocator = bulwark_net::Allocator;

mod cli;
mod clock;
mod commands;
mod config;
mod control;
mod cookie_secrets;
mod demo;
mod diagnostics;
mod encrypted;
mod handler;
mod logging;
mod metrics_http;
mod parent_ds;
mod privileges;
mod query_log;
mod ready_file;
mod recursion;
mod replication;
mod server;
mod service;
mod settings;
mod signing;
mod stats;
mod tap;
mod tools;
mod upstream_tls;
mod via;
mod zone_signer;
mod zones;

use std::process::ExitCode;

use crate::cli::{Command, Invocation};

fn main() -> ExitCode {
    let command = match Invocation::parse() {
        Invocation::Command(command) => *command,
        Invocation::GenerateDocs(args) => return tools::generate_docs::run(&args),
    };
    match command {
        Command::Serve(args) => match server::serve(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bulwark: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::CheckConfig { file } => tools::check::check_config(&file),
        Command::CheckZone { origin, file } => tools::check::check_zone(&origin, &file),
        Command::Ctl(args) => tools::ctl::run(&args),
        Command::Dnstap(args) => tools::dnstap::run(&args),
        Command::Sign(args) => tools::sign::run(&args),
        Command::Keys(args) => tools::keys::run(&args),
        Command::Version => {
            println!("bulwark {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
    }
}
