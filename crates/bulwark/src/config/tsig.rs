//! `[tsig_key.NAME]` as written, and its validation: a key given inline, or
//! read from a key file (`tsig-keygen`'s and `keymgr -t`'s formats).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bulwark_xfr::tsig::{TsigAlgorithm, TsigKey};
use serde::Deserialize;
use toml::Spanned;

use super::source::{defined, Locate};
use crate::settings::parse_origin;

/// `[tsig_key.NAME]`: a key given inline, or read from a file in the formats
/// `tsig-keygen` (BIND) and `keymgr -t` (Knot) print.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TsigKeySection {
    /// The key's DNS name, when it differs from the table's name.
    pub name: Option<Spanned<String>>,
    pub algorithm: Option<Spanned<String>>,
    /// Base64, as `tsig-keygen` prints it.
    pub secret: Option<Spanned<String>>,
    /// A key file; its key named like this table (or `name`) is used.
    pub file: Option<Spanned<String>>,
}

/// One `[tsig_key.NAME]`; `None` (with the problem pushed) when it is wrong.
pub fn build_key(
    table: &str,
    s: &TsigKeySection,
    base_dir: &Path,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<TsigKey> {
    let key_name = match &s.name {
        Some(n) => match parse_origin(n.get_ref()) {
            Ok(name) => name,
            Err(e) => {
                problems.push(loc.at(n.span(), format!("name: `{}`: {e}", n.get_ref())));
                return None;
            }
        },
        None => match parse_origin(table) {
            Ok(name) => name,
            Err(e) => {
                problems.push(format!(
                    "[tsig_key.{table}]: `{table}` is not a key name ({e}); give `name`"
                ));
                return None;
            }
        },
    };
    if let Some(file) = &s.file {
        if s.secret.is_some() || s.algorithm.is_some() {
            problems.push(loc.at(
                file.span(),
                "file: give either `file` or `algorithm` and `secret`, not both".to_string(),
            ));
            return None;
        }
        let path = base_dir.join(file.get_ref());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(loc.at(
                    file.span(),
                    format!("file: cannot read {}: {e}", path.display()),
                ));
                return None;
            }
        };
        let keys = match bulwark_xfr::tsig_keyfile::parse_key_file(&text) {
            Ok(k) => k,
            Err(e) => {
                problems.push(format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    e.line,
                    e.column,
                    e.kind
                ));
                return None;
            }
        };
        let found = keys.iter().find(|k| k.name() == &key_name).cloned();
        if found.is_none() {
            let names: Vec<String> = keys.iter().map(|k| k.name().to_string()).collect();
            problems.push(loc.at(
                file.span(),
                format!(
                    "file: {} holds no key named {key_name} (it holds: {})",
                    path.display(),
                    names.join(", ")
                ),
            ));
        }
        return found;
    }
    let (Some(algorithm), Some(secret)) = (&s.algorithm, &s.secret) else {
        problems.push(format!(
            "[tsig_key.{table}]: give `algorithm` and `secret`, or `file`"
        ));
        return None;
    };
    let Ok(alg) = TsigAlgorithm::from_config_name(algorithm.get_ref()) else {
        problems.push(loc.at(
            algorithm.span(),
            format!(
                "algorithm: `{}` is not one of hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512",
                algorithm.get_ref()
            ),
        ));
        return None;
    };
    let Some(bytes) = bulwark_proto::encoding::base64_decode(secret.get_ref().trim()) else {
        problems.push(loc.at(
            secret.span(),
            "secret: not base64 (as tsig-keygen prints it)".to_string(),
        ));
        return None;
    };
    if bytes.is_empty() {
        problems.push(loc.at(secret.span(), "secret: empty".to_string()));
        return None;
    }
    Some(TsigKey::new(key_name, alg, bytes))
}

/// The key `reference` names.
pub fn find_key(
    reference: &Spanned<String>,
    keys: &HashMap<String, Arc<TsigKey>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Option<Arc<TsigKey>> {
    let found = keys.get(reference.get_ref()).cloned();
    if found.is_none() {
        problems.push(loc.at(
            reference.span(),
            format!(
                "key: no [tsig_key.{}] ({})",
                reference.get_ref(),
                defined(keys.keys())
            ),
        ));
    }
    found
}
