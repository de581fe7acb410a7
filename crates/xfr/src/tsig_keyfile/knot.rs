//! Knot's YAML `key:` section, as `keymgr -t` writes it:
//! `key:` then `- id: name`, `algorithm: hmac-sha256`, `secret: …` per key.

use crate::tsig::TsigKey;

use super::{algorithm_at, err, name_at, push_unique, secret_at, KeyFileError, KeyFileErrorKind};

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::tsig::TsigAlgorithm;
    use crate::tsig_keyfile::{detect_format, KeyFileErrorKind, KeyFileFormat};
    use bulwark_proto::Name;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    fn error(r: Result<Vec<TsigKey>, KeyFileError>) -> (usize, usize, KeyFileErrorKind) {
        let e = r.unwrap_err();
        (e.line, e.column, e.kind)
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
}
