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

// ---------------------------------------------------------------- BIND

/// A token of BIND's configuration syntax, with where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    kind: TokenKind,
    line: usize,
    column: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenKind {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Semicolon,
}

impl TokenKind {
    /// The text of a word or string.
    fn text(&self) -> Option<&str> {
        match self {
            TokenKind::Word(s) | TokenKind::Quoted(s) => Some(s),
            _ => None,
        }
    }
}

/// Splits BIND configuration text into tokens, dropping comments.
fn bind_tokens(text: &str) -> Result<Vec<Token>, KeyFileError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let (mut line, mut column) = (1usize, 1usize);
    // Advances one character, keeping line and column.
    let step = |c: char, line: &mut usize, column: &mut usize| {
        if c == '\n' {
            *line = line.saturating_add(1);
            *column = 1;
        } else {
            *column = column.saturating_add(1);
        }
    };
    while let Some(&c) = chars.peek() {
        let (at_line, at_column) = (line, column);
        if c.is_whitespace() {
            chars.next();
            step(c, &mut line, &mut column);
            continue;
        }
        let single = match c {
            '{' => Some(TokenKind::Open),
            '}' => Some(TokenKind::Close),
            ';' => Some(TokenKind::Semicolon),
            _ => None,
        };
        if let Some(kind) = single {
            chars.next();
            step(c, &mut line, &mut column);
            tokens.push(Token {
                kind,
                line: at_line,
                column: at_column,
            });
            continue;
        }
        if c == '#' || (c == '/' && text_ahead(&chars, "//")) {
            while let Some(&n) = chars.peek() {
                if n == '\n' {
                    break;
                }
                chars.next();
                step(n, &mut line, &mut column);
            }
            continue;
        }
        if c == '/' && text_ahead(&chars, "/*") {
            chars.next();
            chars.next();
            column = column.saturating_add(2);
            let mut closed = false;
            while let Some(n) = chars.next() {
                step(n, &mut line, &mut column);
                if n == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    step('/', &mut line, &mut column);
                    closed = true;
                    break;
                }
            }
            if !closed {
                return err(at_line, at_column, KeyFileErrorKind::UnterminatedComment);
            }
            continue;
        }
        if c == '"' {
            chars.next();
            step(c, &mut line, &mut column);
            let mut s = String::new();
            let mut closed = false;
            while let Some(n) = chars.next() {
                step(n, &mut line, &mut column);
                match n {
                    '"' => {
                        closed = true;
                        break;
                    }
                    // BIND: a backslash takes the next character literally.
                    '\\' => {
                        if let Some(e) = chars.next() {
                            step(e, &mut line, &mut column);
                            s.push(e);
                        }
                    }
                    _ => s.push(n),
                }
            }
            if !closed {
                return err(at_line, at_column, KeyFileErrorKind::UnterminatedString);
            }
            tokens.push(Token {
                kind: TokenKind::Quoted(s),
                line: at_line,
                column: at_column,
            });
            continue;
        }
        let mut word = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_whitespace() || matches!(n, '{' | '}' | ';' | '"' | '#') {
                break;
            }
            if n == '/' && (text_ahead(&chars, "//") || text_ahead(&chars, "/*")) {
                break;
            }
            chars.next();
            step(n, &mut line, &mut column);
            word.push(n);
        }
        tokens.push(Token {
            kind: TokenKind::Word(word),
            line: at_line,
            column: at_column,
        });
    }
    Ok(tokens)
}

/// Whether the characters ahead start with `s`.
fn text_ahead(chars: &core::iter::Peekable<core::str::Chars<'_>>, s: &str) -> bool {
    chars.clone().take(s.len()).eq(s.chars())
}

/// A cursor over BIND tokens that knows where the text ended.
struct BindParser {
    tokens: std::vec::IntoIter<Token>,
    end: (usize, usize),
}

impl BindParser {
    fn next(&mut self, expected: &'static str) -> Result<Token, KeyFileError> {
        match self.tokens.next() {
            Some(t) => Ok(t),
            None => err(self.end.0, self.end.1, KeyFileErrorKind::Expected(expected)),
        }
    }

    fn expect(&mut self, kind: &TokenKind, expected: &'static str) -> Result<(), KeyFileError> {
        let t = self.next(expected)?;
        if t.kind == *kind {
            Ok(())
        } else {
            err(t.line, t.column, KeyFileErrorKind::Expected(expected))
        }
    }

    /// A word or quoted string.
    fn text(&mut self, expected: &'static str) -> Result<(String, usize, usize), KeyFileError> {
        let t = self.next(expected)?;
        match t.kind.text() {
            Some(s) => Ok((s.to_owned(), t.line, t.column)),
            None => err(t.line, t.column, KeyFileErrorKind::Expected(expected)),
        }
    }
}

/// Reads the `key` statements of a BIND configuration fragment.
pub fn parse_bind_keys(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    let tokens = bind_tokens(text)?;
    let end_line = text.lines().count().max(1);
    let end_column = text
        .lines()
        .last()
        .map_or(1, |l| l.chars().count().saturating_add(1));
    let mut p = BindParser {
        tokens: tokens.into_iter(),
        end: (end_line, end_column),
    };
    let mut keys = Vec::new();
    while let Some(t) = p.tokens.next() {
        if t.kind != TokenKind::Word("key".to_owned()) {
            return err(t.line, t.column, KeyFileErrorKind::Expected("`key`"));
        }
        let (name_text, name_line, name_column) = p.text("a key name")?;
        let name = name_at(&name_text, name_line, name_column)?;
        p.expect(&TokenKind::Open, "`{`")?;
        let mut algorithm = None;
        let mut secret = None;
        loop {
            let clause = p.next("`algorithm`, `secret` or `}`")?;
            let field = match &clause.kind {
                TokenKind::Close => break,
                TokenKind::Word(w) => w.as_str(),
                _ => {
                    return err(
                        clause.line,
                        clause.column,
                        KeyFileErrorKind::Expected("`algorithm`, `secret` or `}`"),
                    )
                }
            };
            match field {
                "algorithm" => {
                    let (text, line, column) = p.text("an algorithm name")?;
                    if algorithm.is_some() {
                        return err(
                            clause.line,
                            clause.column,
                            KeyFileErrorKind::Duplicate("algorithm"),
                        );
                    }
                    algorithm = Some(algorithm_at(&text, line, column)?);
                }
                "secret" => {
                    let (text, line, column) = p.text("a base64 secret")?;
                    if secret.is_some() {
                        return err(
                            clause.line,
                            clause.column,
                            KeyFileErrorKind::Duplicate("secret"),
                        );
                    }
                    secret = Some(secret_at(&text, line, column)?);
                }
                other => {
                    return err(
                        clause.line,
                        clause.column,
                        KeyFileErrorKind::UnknownOption(other.to_owned()),
                    )
                }
            }
            p.expect(&TokenKind::Semicolon, "`;`")?;
        }
        p.expect(&TokenKind::Semicolon, "`;` after `}`")?;
        let Some(algorithm) = algorithm else {
            return err(
                t.line,
                t.column,
                KeyFileErrorKind::MissingAlgorithm(name.to_string()),
            );
        };
        let Some(secret) = secret else {
            return err(
                t.line,
                t.column,
                KeyFileErrorKind::MissingSecret(name.to_string()),
            );
        };
        push_unique(
            &mut keys,
            TsigKey::new(name, algorithm, secret),
            t.line,
            t.column,
        )?;
    }
    if keys.is_empty() {
        return err(p.end.0, p.end.1, KeyFileErrorKind::NoKeys);
    }
    Ok(keys)
}

// ---------------------------------------------------------------- Knot

/// One `- id: …` item of Knot's `key:` section, as it is read.
#[derive(Default)]
struct KnotItem {
    line: usize,
    column: usize,
    id: Option<(String, usize, usize)>,
    algorithm: Option<(String, usize, usize)>,
    secret: Option<(String, usize, usize)>,
}

impl KnotItem {
    fn into_key(self) -> Result<TsigKey, KeyFileError> {
        let Some((id, id_line, id_column)) = self.id else {
            return err(self.line, self.column, KeyFileErrorKind::MissingId);
        };
        let name = name_at(&id, id_line, id_column)?;
        let Some((alg, line, column)) = self.algorithm else {
            return err(
                self.line,
                self.column,
                KeyFileErrorKind::MissingAlgorithm(id),
            );
        };
        let algorithm = algorithm_at(&alg, line, column)?;
        let Some((secret, line, column)) = self.secret else {
            return err(self.line, self.column, KeyFileErrorKind::MissingSecret(id));
        };
        let secret = secret_at(&secret, line, column)?;
        Ok(TsigKey::new(name, algorithm, secret))
    }
}

/// The line without a trailing `#` comment (a `#` at its start or after a
/// space, outside quotes, as YAML reads it).
fn without_yaml_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && prev_space => return line.get(..i).unwrap_or(line),
            None => {}
        }
        prev_space = c.is_whitespace();
    }
    line
}

/// A YAML scalar: plain, or in single or double quotes.
fn yaml_scalar(value: &str, line: usize, column: usize) -> Result<String, KeyFileError> {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q) {
            return match inner.strip_suffix(q) {
                Some(s) => Ok(s.to_owned()),
                None => err(line, column, KeyFileErrorKind::UnterminatedString),
            };
        }
    }
    Ok(v.to_owned())
}

/// Reads the keys of Knot's YAML `key:` section. Other top-level sections
/// (so a whole knot.conf can be read) are skipped.
pub fn parse_knot_keys(text: &str) -> Result<Vec<TsigKey>, KeyFileError> {
    let mut keys = Vec::new();
    let mut in_keys = false;
    let mut item: Option<KnotItem> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i.saturating_add(1);
        let line = without_yaml_comment(raw).trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with('\t') {
            return err(
                line_no,
                1,
                KeyFileErrorKind::Expected("spaces, not tabs, to indent"),
            );
        }
        let indent = line.len().saturating_sub(line.trim_start().len());
        let content = line.trim_start();
        // The column where `s`, a suffix of `line`, starts.
        let col = |s: &str| {
            let offset = line.len().saturating_sub(s.len());
            line.get(..offset)
                .map_or(1, |p| p.chars().count().saturating_add(1))
        };
        if indent == 0 {
            if let Some(done) = item.take() {
                let (l, c) = (done.line, done.column);
                push_unique(&mut keys, done.into_key()?, l, c)?;
            }
            let Some((section, rest)) = content.split_once(':') else {
                return err(
                    line_no,
                    1,
                    KeyFileErrorKind::Expected("a section name and `:`"),
                );
            };
            in_keys = section == "key";
            if in_keys && !rest.trim().is_empty() {
                return err(
                    line_no,
                    col(rest),
                    KeyFileErrorKind::Expected("a list of keys below `key:`"),
                );
            }
            continue;
        }
        if !in_keys {
            continue;
        }
        let field_text = match content.strip_prefix('-') {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                if let Some(done) = item.take() {
                    let (l, c) = (done.line, done.column);
                    push_unique(&mut keys, done.into_key()?, l, c)?;
                }
                item = Some(KnotItem {
                    line: line_no,
                    column: indent.saturating_add(1),
                    ..KnotItem::default()
                });
                rest.trim_start()
            }
            _ => content,
        };
        if field_text.is_empty() {
            continue;
        }
        let Some(current) = item.as_mut() else {
            return err(
                line_no,
                col(field_text),
                KeyFileErrorKind::Expected("`- id:` to start a key"),
            );
        };
        let Some((field, value)) = field_text.split_once(':') else {
            return err(
                line_no,
                col(field_text),
                KeyFileErrorKind::Expected("`option: value`"),
            );
        };
        let value_col = col(value.trim_start());
        let slot = match field.trim() {
            "id" => &mut current.id,
            "algorithm" => &mut current.algorithm,
            "secret" => &mut current.secret,
            // Knot lets a key carry a free-text note.
            "comment" => continue,
            other => {
                return err(
                    line_no,
                    col(field_text),
                    KeyFileErrorKind::UnknownOption(other.to_owned()),
                )
            }
        };
        if slot.is_some() {
            let name = match field.trim() {
                "id" => "id",
                "algorithm" => "algorithm",
                _ => "secret",
            };
            return err(line_no, col(field_text), KeyFileErrorKind::Duplicate(name));
        }
        let scalar = yaml_scalar(value, line_no, value_col)?;
        if scalar.is_empty() {
            return err(
                line_no,
                value_col,
                KeyFileErrorKind::Expected("a value after `:`"),
            );
        }
        *slot = Some((scalar, line_no, value_col));
    }
    if let Some(done) = item.take() {
        let (l, c) = (done.line, done.column);
        push_unique(&mut keys, done.into_key()?, l, c)?;
    }
    if keys.is_empty() {
        return err(text.lines().count().max(1), 1, KeyFileErrorKind::NoKeys);
    }
    Ok(keys)
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

    fn error(r: Result<Vec<TsigKey>, KeyFileError>) -> (usize, usize, KeyFileErrorKind) {
        let e = r.unwrap_err();
        (e.line, e.column, e.kind)
    }

    #[test]
    fn bind_statements_with_every_kind_of_comment() {
        let text = "# made by tsig-keygen\n\
            key \"xfr.example\" {\n\
            \talgorithm hmac-sha256; // the usual\n\
            \tsecret \"AAECAw==\";\n\
            };\n\
            /* a second\n key */ key second. { secret \"BAUG\n\"; algorithm \"HMAC-SHA512\"; };\n";
        let keys = parse_bind_keys(text).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].name(), &name("xfr.example."));
        assert_eq!(keys[0].algorithm(), TsigAlgorithm::HmacSha256);
        assert_eq!(keys[0].secret(), &[0, 1, 2, 3]);
        assert_eq!(keys[1].name(), &name("second."));
        assert_eq!(keys[1].algorithm(), TsigAlgorithm::HmacSha512);
        assert_eq!(keys[1].secret(), &[4, 5, 6]);
        assert_eq!(detect_format(text), KeyFileFormat::Bind);
    }

    #[test]
    fn bind_errors_name_line_column_and_what_was_expected() {
        use KeyFileErrorKind as K;
        let cases: &[(&str, (usize, usize, KeyFileErrorKind))] = &[
            ("key k { algorithm hmac-sha256 secret \"AA==\"; };", (1, 31, K::Expected("`;`"))),
            ("key k {\n  algorithm hmac-sha256;\n  secret \"AA==\";\n}", (4, 2, K::Expected("`;` after `}`"))),
            ("key k {\n  algorithm hmac-md5;\n  secret \"AA==\";\n};", (2, 13, K::Md5)),
            ("key k { algorithm hmac-sha256-128; secret \"AA==\"; };", (1, 19, K::UnknownAlgorithm("hmac-sha256-128".into()))),
            ("key k { algorithm hmac-sha256; secret \"A!==\"; };", (1, 39, K::BadSecret)),
            ("key k { algorithm hmac-sha256; };", (1, 1, K::MissingSecret("k.".into()))),
            ("key k { secret \"AA==\"; };", (1, 1, K::MissingAlgorithm("k.".into()))),
            ("key k { algorithm hmac-sha1; algorithm hmac-sha1; };", (1, 30, K::Duplicate("algorithm"))),
            ("key k { keyid 5; };", (1, 9, K::UnknownOption("keyid".into()))),
            ("options { };", (1, 1, K::Expected("`key`"))),
            ("key k { secret \"AA==; };", (1, 16, K::UnterminatedString)),
            ("key k { /* open", (1, 9, K::UnterminatedComment)),
            ("key", (1, 4, K::Expected("a key name"))),
            ("# nothing\n", (1, 10, K::NoKeys)),
            ("key a..b { };", (1, 5, K::BadName(NameError::EmptyLabel))),
            (
                "key k { algorithm hmac-sha1; secret \"AA==\"; };\nkey K. { algorithm hmac-sha1; secret \"AQ==\"; };",
                (2, 1, K::DuplicateKey("K.".into())),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(&error(parse_bind_keys(text)), want, "{text}");
        }
    }

    #[test]
    fn knot_yaml_key_section() {
        let text = "# hmac-sha256:xfr.example:AAECAw==\n\
            server:\n    listen: 127.0.0.1@53\n\
            key:\n  - id: xfr.example\n    algorithm: hmac-sha256\n    secret: AAECAw==\n\
            \n  - id: \"two.\"   # quoted\n    secret: 'BAUG'\n    algorithm: hmac-sha1\n    comment: spare\n\
            zone:\n  - domain: example.\n";
        assert_eq!(detect_format(text), KeyFileFormat::Knot);
        let keys = parse_knot_keys(text).unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].name(), &name("xfr.example."));
        assert_eq!(keys[0].secret(), &[0, 1, 2, 3]);
        assert_eq!(keys[1].name(), &name("two."));
        assert_eq!(keys[1].algorithm(), TsigAlgorithm::HmacSha1);
        assert_eq!(keys[1].secret(), &[4, 5, 6]);
    }

    #[test]
    fn knot_errors_name_line_column_and_what_was_expected() {
        use KeyFileErrorKind as K;
        let cases: &[(&str, (usize, usize, KeyFileErrorKind))] = &[
            (
                "key:\n  - id: k\n    algorithm: hmac-sha256\n",
                (2, 3, K::MissingSecret("k".into())),
            ),
            (
                "key:\n  - id: k\n    algorithm: hmac-md5\n    secret: AA==\n",
                (3, 16, K::Md5),
            ),
            (
                "key:\n  - id: k\n    algorithm: hmac-sha256\n    secret: AA=\n",
                (4, 13, K::BadSecret),
            ),
            (
                "key:\n  - id: k\n    algo: hmac-sha256\n",
                (3, 5, K::UnknownOption("algo".into())),
            ),
            ("key:\n  - id: k\n    id: j\n", (3, 5, K::Duplicate("id"))),
            (
                "key:\n    algorithm: hmac-sha256\n",
                (2, 5, K::Expected("`- id:` to start a key")),
            ),
            (
                "key:\n  - algorithm: hmac-sha256\n    secret: AA==\n",
                (2, 3, K::MissingId),
            ),
            (
                "key:\n\t- id: k\n",
                (2, 1, K::Expected("spaces, not tabs, to indent")),
            ),
            ("key:\n  - id: \"k\n", (2, 9, K::UnterminatedString)),
            ("server:\n  listen: x\n", (2, 1, K::NoKeys)),
        ];
        for (text, want) in cases {
            assert_eq!(&error(parse_knot_keys(text)), want, "{text:?}");
        }
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
