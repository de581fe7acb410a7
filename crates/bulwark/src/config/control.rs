//! `[control]` as written: where the control socket is, and its file's
//! permissions (`mode`), validated.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::source::Locate;

/// Owner only: whoever can write to the socket can stop the server.
pub const DEFAULT_MODE: u32 = 0o600;

/// `[control]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSection {
    pub socket: Option<String>,
    /// Permissions of the socket file, octal (`"0600"`).
    pub mode: Option<Spanned<String>>,
}

/// The control socket: the flag's path, else `[control] socket` (relative to
/// the configuration file's directory), else none.
pub fn control_socket(
    flag: Option<&PathBuf>,
    s: &ControlSection,
    base_dir: &Path,
) -> Option<PathBuf> {
    flag.cloned()
        .or_else(|| s.socket.as_ref().map(|p| base_dir.join(p)))
}

/// `[control] mode`, an octal string like `"0660"`: the socket file's
/// permissions. The owner must keep read and write (the server's own user runs
/// `ctl`); others may not write, since whoever can write can stop the server.
pub fn resolve_mode(
    mode: Option<&Spanned<String>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> u32 {
    let Some(mode) = mode else {
        return DEFAULT_MODE;
    };
    match parse_mode(mode.get_ref()) {
        Ok(m) => m,
        Err(why) => {
            problems.push(loc.at(
                mode.span(),
                format!("[control] mode: `{}`: {why}", mode.get_ref()),
            ));
            DEFAULT_MODE
        }
    }
}

fn parse_mode(text: &str) -> Result<u32, &'static str> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0o").unwrap_or(digits);
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Err("expected permissions in octal, like \"0600\" or \"0660\"");
    }
    let mode = u32::from_str_radix(digits, 8).map_err(|_| "not an octal number")?;
    if mode > 0o777 {
        return Err("only permission bits (at most 0777) apply to a socket");
    }
    if mode & 0o600 != 0o600 {
        return Err("the owner needs read and write (at least 0600)");
    }
    if mode & 0o002 != 0 {
        return Err("other users may not write: whoever can write can stop the server");
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn mode_is_octal_permission_bits_keeping_owner_rw() {
        assert_eq!(parse_mode("0600"), Ok(0o600));
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert_eq!(parse_mode("664"), Ok(0o664));
        assert_eq!(parse_mode("0o640"), Ok(0o640));
        for bad in [
            "",
            "rw-rw----",
            "0680",
            "10600",
            "4660",
            "0400",
            "0666",
            "0x1b0",
        ] {
            assert!(parse_mode(bad).is_err(), "{bad} accepted");
        }
    }

    struct At;
    impl Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f.toml:{}: {message}", span.start)
        }
    }

    #[test]
    fn bad_mode_is_reported_where_it_is_written() {
        let mode = toml::Spanned::new(7..13, "0777".to_string());
        let mut problems = Vec::new();
        assert_eq!(resolve_mode(Some(&mode), &At, &mut problems), DEFAULT_MODE);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("f.toml:7: [control] mode: `0777`: other users may not write"),
            "{problems:?}"
        );
        assert_eq!(resolve_mode(None, &At, &mut problems), DEFAULT_MODE);
    }
}
