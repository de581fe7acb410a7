//! A problem found in a zone file, located by file, line and column.

use core::fmt;

/// One problem in a master file. Lines and columns are 1-based; the column counts
/// characters (a tab is one) and points at the first character of the offending
/// token, or just past the last token when something is missing. A problem that
/// belongs to no line (a file that cannot be read) has line and column 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl Diagnostic {
    pub fn new(file: &str, line: u32, column: u32, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.to_owned(),
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    /// `FILE:LINE:COL: message`, or `FILE: message` for a problem with no line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_column() {
        let d = Diagnostic::new("db.example", 3, 14, "unknown type FOO");
        assert_eq!(d.to_string(), "db.example:3:14: unknown type FOO");
        let d = Diagnostic::new("db.example", 0, 0, "cannot read: not found");
        assert_eq!(d.to_string(), "db.example: cannot read: not found");
    }
}
