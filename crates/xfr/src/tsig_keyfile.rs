//! TSIG keys read from the files operators already have, so configuration
//! can point at them:
//! - BIND's `key "name" { algorithm hmac-sha256; secret "…"; };` statements,
//!   as `tsig-keygen` writes them (any number per file, with `#`, `//` and
//!   `/* */` comments);
//! - Knot's YAML `key:` section, as `keymgr -t` writes it;
//! - the one-line `[algorithm:]name:secret` that `dig -y` and `kdig -y` take
//!   (without an algorithm, hmac-sha256, as kdig assumes).
//!
//! Errors say where (line and column, from 1) and what was expected.

use core::fmt;

use bulwark_proto::encoding::base64_decode;
use bulwark_proto::{Name, NameError};

use crate::tsig::{TsigAlgorithm, TsigKey, UnsupportedAlgorithm};

mod bind;
mod knot;

pub use bind::parse_bind_keys;
pub use knot::parse_knot_keys;

/// Where a key file went wrong and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct KeyFileError {
    pub line: usize,
    pub column: usize,
    pub kind: KeyFileErrorKind,
}

/// What was wrong in a key file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileErrorKind {
    #[error("expected {0}")]
    Expected(&'static str),
    #[error("string is not closed by `\"`")]
    UnterminatedString,
    #[error("comment is not closed by `*/`")]
    UnterminatedComment,
    #[error("bad key name: {0}")]
    BadName(NameError),
    #[error("unknown TSIG algorithm `{0}` (hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512)")]
    UnknownAlgorithm(String),
    #[error(
        "hmac-md5 is not supported (RFC 8945 §6 deprecates it); make a new key with hmac-sha256"
    )]
    Md5,
    #[error("secret is not padded base64")]
    BadSecret,
    #[error("secret is empty")]
    EmptySecret,
    #[error("key {0} has no algorithm")]
    MissingAlgorithm(String),
    #[error("key {0} has no secret")]
    MissingSecret(String),
    #[error("key has no id")]
    MissingId,
    #[error("`{0}` given twice")]
    Duplicate(&'static str),
    #[error("key {0} is defined twice with the same algorithm")]
    DuplicateKey(String),
    #[error("unknown option `{0}`")]
    UnknownOption(String),
    #[error("no key found")]
    NoKeys,
}

/// The formats [`parse_key_file`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFileFormat {
    Bind,
    Knot,
    OneLine,
}

fn err<T>(line: usize, column: usize, kind: KeyFileErrorKind) -> Result<T, KeyFileError> {
    Err(KeyFileError { line, column, kind })
}

/// Reads every key in a file of any of the three formats.
pub fn parse_key_file(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    match detect_format(text) {
        KeyFileFormat::Bind => parse_bind_keys(text),
        KeyFileFormat::Knot => parse_knot_keys(text),
        KeyFileFormat::OneLine => parse_one_line_file(text),
    }
}

/// Decides the format from the first line that is not blank or a comment:
/// a YAML section (`key:`) is Knot, a `key` statement is BIND, anything
/// else is taken as the one-line form.
pub fn detect_format(text: &str) -> KeyFileFormat {
    let Some((_, line)) = meaningful_lines(text).next() else {
        return KeyFileFormat::Bind;
    };
    let word_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(line.len());
    let (word, rest) = line.split_at(word_end);
    if !line.starts_with(char::is_whitespace) && rest.starts_with(':') {
        // `key:` with nothing after it is a YAML section; `name:secret` is not.
        if rest.get(1..).is_some_and(|r| r.trim().is_empty()) {
            return KeyFileFormat::Knot;
        }
        return KeyFileFormat::OneLine;
    }
    if word == "key" {
        return KeyFileFormat::Bind;
    }
    KeyFileFormat::OneLine
}

/// Lines (numbered from 1) other than blank ones and whole-line `#`/`//`
/// comments, skipping `/* */` blocks that start a line.
fn meaningful_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut in_block = false;
    text.lines().enumerate().filter_map(move |(i, line)| {
        let t = line.trim();
        if in_block {
            in_block = !t.contains("*/");
            return None;
        }
        if t.starts_with("/*") {
            in_block = !t.contains("*/");
            return None;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with("//") {
            return None;
        }
        Some((i.saturating_add(1), line))
    })
}

fn algorithm_at(text: &str, line: usize, column: usize) -> Result<TsigAlgorithm, KeyFileError> {
    TsigAlgorithm::from_config_name(text).or_else(|e| match e {
        UnsupportedAlgorithm::Md5 => err(line, column, KeyFileErrorKind::Md5),
        _ => err(
            line,
            column,
            KeyFileErrorKind::UnknownAlgorithm(text.to_owned()),
        ),
    })
}

fn name_at(text: &str, line: usize, column: usize) -> Result<Name, KeyFileError> {
    text.parse::<Name>()
        .or_else(|e| err(line, column, KeyFileErrorKind::BadName(e)))
}

/// Base64 as key files write it; whitespace inside is allowed, as BIND allows it.
fn secret_at(text: &str, line: usize, column: usize) -> Result<Vec<u8>, KeyFileError> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.is_empty() {
        return err(line, column, KeyFileErrorKind::EmptySecret);
    }
    let secret = base64_decode(&compact)
        .map_or_else(|| err(line, column, KeyFileErrorKind::BadSecret), Ok)?;
    if secret.is_empty() {
        return err(line, column, KeyFileErrorKind::EmptySecret);
    }
    Ok(secret)
}

/// Adds a key unless one with its name and algorithm is already there.
fn push_unique(
    keys: &mut Vec<TsigKey>,
    key: TsigKey,
    line: usize,
    column: usize,
) -> Result<(), KeyFileError> {
    if keys
        .iter()
        .any(|k| k.name() == key.name() && k.algorithm() == key.algorithm())
    {
        return err(
            line,
            column,
            KeyFileErrorKind::DuplicateKey(key.name().to_string()),
        );
    }
    keys.push(key);
    Ok(())
}

// ---------------------------------------------------------------- one line

/// Reads `[algorithm:]name:secret` (as `dig -y` and `kdig -y` take it).
pub fn parse_key_spec(text: &str) -> Result<TsigKey, KeyFileError> {
    let start = text.len().saturating_sub(text.trim_start().len());
    key_spec_at(text.trim(), 1, start.saturating_add(1))
}

fn key_spec_at(spec: &str, line: usize, column: usize) -> Result<TsigKey, KeyFileError> {
    // Each part with its column.
    let mut offset = 0usize;
    let parts: Vec<(&str, usize)> = spec
        .split(':')
        .map(|part| {
            let before = spec.get(..offset).map_or(0, |s| s.chars().count());
            offset = offset.saturating_add(part.len()).saturating_add(1);
            (part, column.saturating_add(before))
        })
        .collect();
    let ((name, name_col), (secret, secret_col), algorithm) = match parts.as_slice() {
        [name, secret] => (*name, *secret, TsigAlgorithm::HmacSha256),
        [(alg, alg_col), name, secret] => (*name, *secret, algorithm_at(alg, line, *alg_col)?),
        _ => {
            return err(
                line,
                column,
                KeyFileErrorKind::Expected("[algorithm:]name:secret"),
            )
        }
    };
    if name.is_empty() {
        return err(line, name_col, KeyFileErrorKind::Expected("a key name"));
    }
    let name = name_at(name, line, name_col)?;
    let secret = secret_at(secret, line, secret_col)?;
    Ok(TsigKey::new(name, algorithm, secret))
}

fn parse_one_line_file(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    let mut lines = meaningful_lines(text);
    let Some((line_no, line)) = lines.next() else {
        return err(1, 1, KeyFileErrorKind::NoKeys);
    };
    let indent = line.len().saturating_sub(line.trim_start().len());
    let key = key_spec_at(line.trim(), line_no, indent.saturating_add(1))?;
    if let Some((extra, _)) = lines.next() {
        return err(extra, 1, KeyFileErrorKind::Expected("one key on one line"));
    }
    Ok(vec![key])
}

impl fmt::Display for KeyFileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyFileFormat::Bind => "BIND key statements",
            KeyFileFormat::Knot => "Knot YAML key section",
            KeyFileFormat::OneLine => "[algorithm:]name:secret",
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn one_line_form_as_dig_takes_it() {
        let k = parse_key_spec("hmac-sha512:xfr.example:AAECAw==").unwrap();
        assert_eq!(k.algorithm(), TsigAlgorithm::HmacSha512);
        assert_eq!(k.name(), &name("xfr.example."));
        assert_eq!(k.secret(), &[0, 1, 2, 3]);
        // kdig's default algorithm.
        let k = parse_key_spec("  xfr.example.:AAECAw==\n").unwrap();
        assert_eq!(k.algorithm(), TsigAlgorithm::HmacSha256);
        let e = parse_key_spec("hmac-md5:k:AA==").unwrap_err();
        assert_eq!((e.line, e.column, e.kind), (1, 1, KeyFileErrorKind::Md5));
        let e = parse_key_spec("hmac-sha1:k:AA=").unwrap_err();
        assert_eq!((e.column, e.kind), (13, KeyFileErrorKind::BadSecret));
        let e = parse_key_spec("k").unwrap_err();
        assert_eq!(
            e.kind,
            KeyFileErrorKind::Expected("[algorithm:]name:secret")
        );
        let e = parse_key_spec("hmac-sha1::AA==").unwrap_err();
        assert_eq!(
            (e.column, e.kind),
            (11, KeyFileErrorKind::Expected("a key name"))
        );
        let e = parse_key_spec("k:").unwrap_err();
        assert_eq!((e.column, e.kind), (3, KeyFileErrorKind::EmptySecret));

        let file = "# for kdig -k\nhmac-sha384:k:AA==\n";
        assert_eq!(detect_format(file), KeyFileFormat::OneLine);
        assert_eq!(
            parse_key_file(file).unwrap()[0].algorithm(),
            TsigAlgorithm::HmacSha384
        );
        let e = parse_key_file("hmac-sha1:k:AA==\nhmac-sha1:j:AA==\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
    }

    #[test]
    fn error_message_says_where() {
        let e = parse_key_file("key k {\n  algorithm hmac-sha256\n};").unwrap_err();
        assert_eq!(e.to_string(), "line 3, column 1: expected `;`");
    }
}
