//! Where a value is written in the configuration file, for messages: every
//! problem is reported as `FILE:LINE:COL: message`.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

/// Reports a problem at a span: `FILE:LINE:COL: message`.
pub trait Locate {
    fn at(&self, span: Range<usize>, message: String) -> String;
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count().saturating_add(1);
    let line_start = before.rfind('\n').map_or(0, |i| i.saturating_add(1));
    let col = before
        .get(line_start..)
        .map_or(0, |s| s.chars().count())
        .saturating_add(1);
    (line, col)
}

/// Where things are in one file, for messages.
pub struct Source<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn at(&self, span: Range<usize>, message: impl std::fmt::Display) -> String {
        let (line, col) = line_col(self.text, span.start);
        format!("{}:{line}:{col}: {message}", self.file.display())
    }

    /// A setting's value if given and `valid`, else `default`; a given value
    /// that is not valid adds `problem` at its place.
    pub fn setting<T: Copy>(
        &self,
        value: Option<&Spanned<T>>,
        default: T,
        valid: impl Fn(T) -> bool,
        problem: impl std::fmt::Display,
        problems: &mut Vec<String>,
    ) -> T {
        match value {
            Some(v) if !valid(*v.get_ref()) => {
                problems.push(self.at(v.span(), problem));
                default
            }
            Some(v) => *v.get_ref(),
            None => default,
        }
    }
}

impl Locate for Source<'_> {
    fn at(&self, span: Range<usize>, message: String) -> String {
        Source::at(self, span, message)
    }
}

/// The names a reference could have named, for a message: `defined: a, b`,
/// or `none is defined`.
pub fn defined<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let mut v: Vec<&str> = names.map(String::as_str).collect();
    v.sort_unstable();
    if v.is_empty() {
        "none is defined".to_string()
    } else {
        format!("defined: {}", v.join(", "))
    }
}
