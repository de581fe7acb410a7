//! `bulwark keys`: make a zone's keys and show them, with their DS records
//! for the parent.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use bulwark_dnssec::{Algorithm, DigestType, KeyRole};
use bulwark_proto::{Name, Rdata};
use clap::{Args, Subcommand, ValueEnum};

use crate::keystore::Pkcs11Args;
use crate::signing::{
    generate_key, generate_key_in_token, load_zone_keys, unix_now, write_zone_key,
};

#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    Ksk,
    Zsk,
    Csk,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key in BIND's K<zone>+<alg>+<tag>.key/.private files; with a
    /// token (--pkcs11-module, --token, --pin, or --config), make it in the
    /// token and write a .private file naming it.
    Generate {
        /// The zone, e.g. `example.com.`.
        zone: String,
        /// RSASHA256, RSASHA512, ECDSAP256SHA256, ECDSAP384SHA384, ED25519 (or 8, 10, 13, 14, 15).
        #[arg(long, short = 'a', default_value = "ECDSAP256SHA256")]
        algorithm: String,
        /// What the key signs.
        #[arg(long, value_enum, default_value_t = RoleArg::Csk)]
        role: RoleArg,
        /// RSA modulus size (2048, 3072, 4096).
        #[arg(long, short = 'b')]
        bits: Option<u32>,
        /// Where to write the files.
        #[arg(long, short = 'K', value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        pkcs11: Pkcs11Args,
    },
    /// List the zone's keys in a key directory.
    List {
        zone: String,
        #[arg(long, short = 'K', value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        pkcs11: Pkcs11Args,
    },
    /// Print the DS records of the zone's key-signing keys, for the parent.
    Ds {
        zone: String,
        #[arg(long, short = 'K', value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// 2 (SHA-256) or 4 (SHA-384).
        #[arg(long, default_value_t = 2)]
        digest: u8,
        #[command(flatten)]
        pkcs11: Pkcs11Args,
    },
}

pub fn zone_name(text: &str) -> anyhow::Result<Name> {
    let absolute = if text.ends_with('.') {
        text.to_owned()
    } else {
        format!("{text}.")
    };
    absolute.parse().map_err(|e| anyhow!("zone {text}: {e}"))
}

pub fn run(args: &KeysArgs) -> ExitCode {
    match keys(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bulwark keys: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn keys(args: &KeysArgs) -> anyhow::Result<()> {
    match &args.command {
        KeysCommand::Generate {
            zone,
            algorithm,
            role,
            bits,
            dir,
            pkcs11,
        } => {
            let apex = zone_name(zone)?;
            let algorithm = Algorithm::from_name(algorithm)
                .ok_or_else(|| anyhow!("unknown algorithm {algorithm} (RSASHA256, RSASHA512, ECDSAP256SHA256, ECDSAP384SHA384, ED25519)"))?;
            let role = match role {
                RoleArg::Ksk => KeyRole::Ksk,
                RoleArg::Zsk => KeyRole::Zsk,
                RoleArg::Csk => KeyRole::Csk,
            };
            let key = match pkcs11.settings()? {
                Some(settings) => {
                    let token = settings.open(None)?;
                    generate_key_in_token(&token, &apex, algorithm, *bits, role, unix_now())?
                }
                None => generate_key(algorithm, *bits, role, unix_now())?,
            };
            let stem = write_zone_key(dir, &apex, &key)?;
            println!("{}", stem.display());
        }
        KeysCommand::List { zone, dir, pkcs11 } => {
            let apex = zone_name(zone)?;
            let keys = load_zone_keys(dir, &apex, pkcs11.settings()?.as_ref())?;
            println!(
                "{:<7} {:<6} {:<16} {:>5}  {:<4} created",
                "tag", "flags", "algorithm", "bits", "role"
            );
            let now = unix_now();
            for key in &keys {
                let state = if key.timing.is_active(now) {
                    "active"
                } else if key.timing.is_published(now) {
                    "published"
                } else {
                    "inactive"
                };
                // Where the private key is, when not in the .private file.
                let kept = key
                    .signing_key()
                    .pkcs11_uri()
                    .map(|uri| format!(" (in token {})", uri.token.unwrap_or_default()))
                    .unwrap_or_default();
                println!(
                    "{:<7} {:<6} {:<16} {:>5}  {:<4} {} {state}{kept}",
                    key.key_tag(),
                    key.dnskey().flags,
                    key.signing_key().algorithm().mnemonic(),
                    key.signing_key().bits(),
                    key.role.name(),
                    key.timing
                        .created
                        .map_or_else(|| "-".to_owned(), bulwark_dnssec::time::format_timestamp),
                );
            }
        }
        KeysCommand::Ds {
            zone,
            dir,
            digest,
            pkcs11,
        } => {
            let apex = zone_name(zone)?;
            let digest = DigestType::from_number(*digest).map_err(|e| anyhow!("{e}"))?;
            if digest == DigestType::Sha1 {
                bail!("SHA-1 DS records must not be published (RFC 8624 §3.3)");
            }
            let keys = load_zone_keys(dir, &apex, pkcs11.settings()?.as_ref())?;
            for key in keys.iter().filter(|k| k.role.signs_key_set()) {
                println!("{apex} IN DS {}", Rdata::Ds(key.ds(&apex, digest)));
            }
        }
    }
    Ok(())
}
