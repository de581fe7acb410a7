//! `bulwark sign`'s arguments.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The zone's origin, e.g. `example.com.`.
    pub origin: String,
    /// The unsigned master file.
    pub file: PathBuf,
    /// Directory holding the zone's K<zone>+<alg>+<tag>.key/.private files.
    #[arg(long, short = 'K', value_name = "DIR", default_value = ".")]
    pub keys: PathBuf,
    /// Where to write the signed zone (default: FILE.signed).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Deny existence with NSEC3 (RFC 5155) instead of NSEC.
    #[arg(long)]
    pub nsec3: bool,
    /// NSEC3 extra iterations (RFC 9276: 0).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "nsec3")]
    pub iterations: u16,
    /// NSEC3 salt in hex, `-` for none (RFC 9276: none).
    #[arg(long, value_name = "HEX", default_value = "-", requires = "nsec3")]
    pub salt: String,
    /// NSEC3 opt-out: unsigned delegations are left out of the chain.
    #[arg(long, requires = "nsec3")]
    pub opt_out: bool,
    /// How long signatures are valid.
    #[arg(long, value_name = "DURATION", default_value = "14d")]
    pub validity: String,
    /// How far back signatures' inception is set, for slow clocks.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub inception_offset: String,
    /// TTL of DNSKEY, CDS and CDNSKEY (default: the SOA's TTL).
    #[arg(long, value_name = "SECONDS")]
    pub dnskey_ttl: Option<u32>,
    /// Publish CDS and CDNSKEY for the key-signing keys (RFC 7344).
    #[arg(long)]
    pub cds: bool,
    /// Signing threads (default: one per CPU).
    #[arg(long, short = 't', value_name = "N")]
    pub threads: Option<usize>,
    /// Sign as if it were this Unix time (keys' timing and validity follow).
    #[arg(long, value_name = "UNIX_SECONDS", hide = true)]
    pub now: Option<u64>,
    /// The token holding keys whose .private file names one.
    #[command(flatten)]
    pub pkcs11: super::keys::Pkcs11Args,
}
