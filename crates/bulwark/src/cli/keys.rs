//! `bulwark keys`'s arguments, and the flags naming a PKCS#11 token that
//! `bulwark sign` shares.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// The flags naming a token, for `bulwark keys` and `bulwark sign`.
#[derive(Debug, Default, Clone, Args)]
pub struct Pkcs11Args {
    /// The HSM's PKCS#11 library (e.g. /usr/lib/softhsm/libsofthsm2.so).
    #[arg(long, value_name = "PATH")]
    pub pkcs11_module: Option<PathBuf>,
    /// The token's label.
    #[arg(long, value_name = "LABEL")]
    pub token: Option<String>,
    /// The token's user PIN.
    #[arg(long, value_name = "PIN", conflicts_with = "pin_file")]
    pub pin: Option<String>,
    /// A file holding the user PIN.
    #[arg(long, value_name = "FILE")]
    pub pin_file: Option<PathBuf>,
    /// Take the token from this configuration file's [pkcs11] table (the flags above win).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

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
        /// RSASHA256, RSASHA512, ECDSAP256SHA256, ECDSAP384SHA384, ED25519, MLDSA44,
        /// FALCON512 (or 8, 10, 13, 14, 15, 18, 254; the last two are post-quantum
        /// and FALCON512 experimental, see docs/dnssec.md).
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
    /// Ask for a key to be rolled over now: the running server starts the
    /// rollover at its next signing pass (`bulwark ctl zone sign ZONE`).
    Rollover {
        zone: String,
        /// Which key to roll: the active ZSK, or the KSK (or CSK).
        #[arg(long, value_enum)]
        role: RoleArg,
        #[arg(long, short = 'K', value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        pkcs11: Pkcs11Args,
    },
    /// Record that the parent now serves the DS of key TAG, when the server
    /// has no `parent` servers to ask itself: a KSK rollover goes on from here.
    DsSeen {
        zone: String,
        tag: u16,
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
