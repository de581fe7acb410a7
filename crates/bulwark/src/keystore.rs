//! `[pkcs11]`: the HSM that keeps signing keys for policies with
//! `keystore = "pkcs11"`, and the command-line flags that name it for
//! `bulwark keys` and `bulwark sign`.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};

use crate::cli::keys::Pkcs11Args;
use bulwark_dnssec::Pkcs11Token;
use serde::Deserialize;
use toml::Spanned;

use crate::defences::Locate;

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pkcs11Section {
    /// The token's PKCS#11 library, e.g. `/usr/lib/softhsm/libsofthsm2.so`.
    pub module: Option<Spanned<String>>,
    /// The label the token was initialised with.
    pub token_label: Option<Spanned<String>>,
    /// The user PIN, in the file; `pin_file` keeps it out of it.
    pub pin: Option<Spanned<String>>,
    /// A file holding the PIN (a final newline is ignored).
    pub pin_file: Option<Spanned<String>>,
}

/// The token to open: validated, the PIN read.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkcs11Settings {
    pub module: PathBuf,
    pub token_label: String,
    pin: String,
}

impl fmt::Debug for Pkcs11Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the PIN: settings end up in logs.
        f.debug_struct("Pkcs11Settings")
            .field("module", &self.module)
            .field("token_label", &self.token_label)
            .finish_non_exhaustive()
    }
}

/// Where a key generated for a zone is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keystore {
    /// In the key directory's `.private` files.
    #[default]
    File,
    /// In the `[pkcs11]` token; the key directory names it.
    Pkcs11,
}

impl Keystore {
    pub fn from_name(text: &str) -> Option<Keystore> {
        match text {
            "file" => Some(Keystore::File),
            "pkcs11" => Some(Keystore::Pkcs11),
            _ => None,
        }
    }
}

fn read_pin_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let pin = text.trim_end_matches(['\n', '\r']);
    if pin.is_empty() {
        return Err("the file is empty".to_owned());
    }
    Ok(pin.to_owned())
}

impl Pkcs11Settings {
    #[cfg(test)]
    pub fn new(module: PathBuf, token_label: String, pin: String) -> Pkcs11Settings {
        Pkcs11Settings {
            module,
            token_label,
            pin,
        }
    }

    /// The `[pkcs11]` table; `None` when it is absent or wrong (each problem
    /// is pushed, saying where). Paths are relative to `base_dir`.
    pub fn resolve(
        section: Option<&Pkcs11Section>,
        base_dir: &Path,
        table_at: &str,
        loc: &dyn Locate,
        problems: &mut Vec<String>,
    ) -> Option<Pkcs11Settings> {
        let s = section?;
        let before = problems.len();
        let module = match &s.module {
            Some(m) if m.get_ref().is_empty() => {
                problems.push(loc.at(m.span(), "module: the path is empty".to_owned()));
                None
            }
            Some(m) => Some(base_dir.join(m.get_ref())),
            None => {
                problems.push(format!(
                    "{table_at}: [pkcs11]: `module` is required (the token's PKCS#11 library)"
                ));
                None
            }
        };
        let token_label = match &s.token_label {
            Some(l) if l.get_ref().is_empty() => {
                problems.push(loc.at(l.span(), "token_label: the label is empty".to_owned()));
                None
            }
            Some(l) => Some(l.get_ref().clone()),
            None => {
                problems.push(format!("{table_at}: [pkcs11]: `token_label` is required"));
                None
            }
        };
        let pin = match (&s.pin, &s.pin_file) {
            (Some(_), Some(file)) => {
                problems.push(loc.at(
                    file.span(),
                    "pin_file: give `pin` or `pin_file`, not both".to_owned(),
                ));
                None
            }
            (Some(pin), None) => Some(pin.get_ref().clone()),
            (None, Some(file)) => match read_pin_file(&base_dir.join(file.get_ref())) {
                Ok(pin) => Some(pin),
                Err(e) => {
                    problems
                        .push(loc.at(file.span(), format!("pin_file: `{}`: {e}", file.get_ref())));
                    None
                }
            },
            (None, None) => {
                problems.push(format!(
                    "{table_at}: [pkcs11]: `pin` or `pin_file` is required"
                ));
                None
            }
        };
        if problems.len() != before {
            return None;
        }
        Some(Pkcs11Settings {
            module: module?,
            token_label: token_label?,
            pin: pin?,
        })
    }

    /// Opens (once per process) and logs in to the token labelled `label`,
    /// or this one's.
    pub fn open(&self, label: Option<&str>) -> anyhow::Result<Pkcs11Token> {
        let label = label.unwrap_or(&self.token_label);
        Pkcs11Token::open(&self.module, label, &self.pin).map_err(|e| anyhow!("{e}"))
    }
}

/// The token the flags name over `from_file` (the `[pkcs11]` table of the
/// file `--config` names, read by the caller), or `None` when neither names
/// one.
pub fn token_settings(
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
        (None, Some(path)) => read_pin_file(path)
            .map_err(|e| anyhow!("{e}"))
            .with_context(|| format!("--pin-file {}", path.display()))?,
        (None, None) => match &from_file {
            Some(s) => s.pin.clone(),
            None => bail!("--pin or --pin-file is required to use a token"),
        },
    };
    Ok(Some(Pkcs11Settings {
        module,
        token_label,
        pin,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_pin_never_shows_in_debug_output() {
        let s = Pkcs11Settings::new("/m.so".into(), "t".into(), "s3cret-pin".into());
        assert!(!format!("{s:?}").contains("s3cret"));
    }

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
