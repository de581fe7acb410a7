//! `[pkcs11]` as written, and its validation: the HSM that keeps signing
//! keys for policies with `keystore = "pkcs11"`, its PIN read.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::source::Locate;
use crate::settings::Pkcs11Settings;

/// `[pkcs11]` as written.
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

/// The PIN in `path` (a final newline is ignored); also for `--pin-file`.
pub fn read_pin_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let pin = text.trim_end_matches(['\n', '\r']);
    if pin.is_empty() {
        return Err("the file is empty".to_owned());
    }
    Ok(pin.to_owned())
}

/// The `[pkcs11]` table; `None` when it is absent or wrong (each problem
/// is pushed, saying where). Paths are relative to `base_dir`.
pub fn build_pkcs11(
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
                problems.push(loc.at(file.span(), format!("pin_file: `{}`: {e}", file.get_ref())));
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
    Some(Pkcs11Settings::new(module?, token_label?, pin?))
}
