//! `bulwark keys`: make a zone's keys and show them, with their DS records
//! for the parent; and the PKCS#11 token that `bulwark keys` and `bulwark
//! sign` name with their flags, over a configuration file's `[pkcs11]`.

use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};
use bulwark_dnssec::{Algorithm, DigestType, KeyRole};
use bulwark_proto::{Name, Rdata};

use crate::cli::keys::Pkcs11Args;
use crate::cli::keys::{KeysArgs, KeysCommand, RoleArg};
use crate::settings::Pkcs11Settings;
use crate::signing::{
    generate_key, generate_key_in_token, load_zone_keys, unix_now, write_key_state, write_zone_key,
};

fn key_state(t: &bulwark_dnssec::KeyTiming, now: u64) -> &'static str {
    match (t.is_published(now), t.is_active(now)) {
        (true, true) if t.inactive.is_some() || t.delete.is_some() => "active, retiring",
        (true, true) => "active",
        (true, false) if t.activate.is_some_and(|a| a > now) => "published",
        (true, false) => "retired",
        (false, true) => "signing, hidden",
        (false, false) if t.publish.is_some_and(|p| p > now) => "created",
        (false, false) => "removed",
    }
}

/// The key's next timing event, e.g. `activate 20261124120000`.
fn next_transition(t: &bulwark_dnssec::KeyTiming, now: u64) -> String {
    [
        ("publish", t.publish),
        ("activate", t.activate),
        ("inactive", t.inactive),
        ("delete", t.delete),
    ]
    .into_iter()
    .filter_map(|(what, at)| at.filter(|&at| at > now).map(|at| (at, what)))
    .min()
    .map_or_else(
        || {
            if t.rollover_requested.is_some() {
                "rollover requested".to_owned()
            } else {
                "-".to_owned()
            }
        },
        |(at, what)| format!("{what} {}", bulwark_dnssec::time::format_timestamp(at)),
    )
}

/// The token the flags name, over the `[pkcs11]` table of the configuration
/// file `--config` names.
pub fn token(flags: &Pkcs11Args) -> anyhow::Result<Option<Pkcs11Settings>> {
    let from_file = match &flags.config {
        Some(path) => crate::config::load_pkcs11(path).map_err(|e| anyhow!("{e}"))?,
        None => None,
    };
    token_settings(flags, from_file)
}

/// The token the flags name over `from_file` (the `[pkcs11]` table of the
/// file `--config` names, read by the caller), or `None` when neither names
/// one.
fn token_settings(
    flags: &Pkcs11Args,
    from_file: Option<Pkcs11Settings>,
) -> anyhow::Result<Option<Pkcs11Settings>> {
    let any_flag = flags.pkcs11_module.is_some()
        || flags.token.is_some()
        || flags.pin.is_some()
        || flags.pin_file.is_some();
    if !any_flag {
        return Ok(from_file);
    }
    let module = flags
        .pkcs11_module
        .clone()
        .or_else(|| from_file.as_ref().map(|s| s.module.clone()))
        .ok_or_else(|| anyhow!("--pkcs11-module is required to use a token"))?;
    let token_label = flags
        .token
        .clone()
        .or_else(|| from_file.as_ref().map(|s| s.token_label.clone()))
        .ok_or_else(|| anyhow!("--token is required to use a token"))?;
    let pin = match (&flags.pin, &flags.pin_file) {
        (Some(pin), _) => pin.clone(),
        (None, Some(path)) => crate::config::read_pin_file(path)
            .map_err(|e| anyhow!("{e}"))
            .with_context(|| format!("--pin-file {}", path.display()))?,
        (None, None) => match &from_file {
            Some(s) => s.pin().to_owned(),
            None => bail!("--pin or --pin-file is required to use a token"),
        },
    };
    Ok(Some(Pkcs11Settings::new(module, token_label, pin)))
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
            let algorithm = Algorithm::from_name(algorithm).ok_or_else(|| {
                anyhow!("unknown algorithm {algorithm} ({})", Algorithm::mnemonics())
            })?;
            let role = match role {
                RoleArg::Ksk => KeyRole::Ksk,
                RoleArg::Zsk => KeyRole::Zsk,
                RoleArg::Csk => KeyRole::Csk,
            };
            let key = match token(pkcs11)? {
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
            let keys = load_zone_keys(dir, &apex, token(pkcs11)?.as_ref())?;
            let now = unix_now();
            println!(
                "{:<6} {:<5} {:<16} {:>5} {:<4} {:<18} next",
                "tag", "flags", "algorithm", "bits", "role", "state"
            );
            for key in &keys {
                // Where the private key is, when not in the .private file.
                let kept = key
                    .signing_key()
                    .pkcs11_uri()
                    .map(|uri| format!(" (in token {})", uri.token.unwrap_or_default()))
                    .unwrap_or_default();
                println!(
                    "{:<6} {:<5} {:<16} {:>5} {:<4} {:<18} {}{kept}",
                    key.key_tag(),
                    key.dnskey().flags,
                    key.signing_key().algorithm().mnemonic(),
                    key.signing_key().bits(),
                    key.role.name(),
                    key_state(&key.timing, now),
                    next_transition(&key.timing, now),
                );
            }
        }
        KeysCommand::Rollover {
            zone,
            role,
            dir,
            pkcs11,
        } => {
            let apex = zone_name(zone)?;
            let mut keys = load_zone_keys(dir, &apex, token(pkcs11)?.as_ref())?;
            let now = unix_now();
            let wanted = |k: &bulwark_dnssec::ZoneKey| match role {
                RoleArg::Zsk => k.role == KeyRole::Zsk,
                RoleArg::Ksk | RoleArg::Csk => k.role.signs_key_set(),
            };
            let key = keys
                .iter_mut()
                .filter(|k| wanted(k) && k.timing.is_active(now) && k.timing.inactive.is_none())
                .max_by_key(|k| k.timing.activate.unwrap_or(0))
                .ok_or_else(|| {
                    anyhow!("{apex} has no active key of that role in {}", dir.display())
                })?;
            key.timing.rollover_requested = Some(now);
            write_key_state(dir, &apex, key)?;
            println!(
                "rollover of key {} requested; it starts at the server's next signing pass (bulwark ctl zone sign {apex})",
                key.key_tag()
            );
        }
        KeysCommand::DsSeen {
            zone,
            tag,
            dir,
            pkcs11,
        } => {
            let apex = zone_name(zone)?;
            let mut keys = load_zone_keys(dir, &apex, token(pkcs11)?.as_ref())?;
            let key = keys
                .iter_mut()
                .find(|k| k.key_tag() == *tag && k.role.signs_key_set())
                .ok_or_else(|| {
                    anyhow!("{apex} has no key-signing key {tag} in {}", dir.display())
                })?;
            key.timing.ds_published = Some(unix_now());
            write_key_state(dir, &apex, key)?;
            println!("DS of key {tag} recorded as published by the parent");
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
            let keys = load_zone_keys(dir, &apex, token(pkcs11)?.as_ref())?;
            for key in keys.iter().filter(|k| k.role.signs_key_set()) {
                println!("{apex} IN DS {}", Rdata::Ds(key.ds(&apex, digest)));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn flags_alone_need_module_token_and_pin() {
        let args = Pkcs11Args {
            pkcs11_module: Some("/m.so".into()),
            ..Pkcs11Args::default()
        };
        let err = token_settings(&args, None).unwrap_err().to_string();
        assert!(err.contains("--token"), "{err}");
        assert_eq!(token_settings(&Pkcs11Args::default(), None).unwrap(), None);
        let args = Pkcs11Args {
            pkcs11_module: Some("/m.so".into()),
            token: Some("t".into()),
            pin: Some("1".into()),
            ..Pkcs11Args::default()
        };
        assert_eq!(
            token_settings(&args, None).unwrap(),
            Some(Pkcs11Settings::new("/m.so".into(), "t".into(), "1".into()))
        );
    }
}
