//! `bulwark generate-docs --out DIR` (hidden): the man pages and shell
//! completions, generated from the CLI definition in `cli.rs` so they can never
//! drift from it. `scripts/package-deb.sh` runs it and installs the result.
//!
//! Writes `DIR/man/bulwark.8` and one page per subcommand, nested ones too
//! (`bulwark-serve.8`, `bulwark-ctl-zone-reload.8`, ...), and
//! `DIR/completions/` with `bulwark.bash`, `_bulwark` (zsh) and `bulwark.fish`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::Man;

use crate::cli::{Cli, GenerateDocsArgs};

/// Section 8, system administration commands and daemons: the binary is
/// installed in /usr/sbin, as the systemd unit expects.
const MAN_SECTION: &str = "8";
/// The manual named in each page's header (`.TH`).
const MANUAL: &str = "bulwark manual";
/// The shells whose completions Debian has a place for.
const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Where clap_mangen starts the last section of a page.
const VERSION_SECTION: &str = ".SH VERSION";

/// Sections added to `bulwark(8)` after the generated ones, in roff: what
/// clap does not know (files and related pages).
const ROOT_PAGE_EXTRA: &str = r#".SH FILES
.TP
/etc/bulwark/bulwark.toml
The configuration file; every key, with its default, is described in
/usr/share/doc/bulwark/configuration.md.gz.
.TP
/var/lib/bulwark
Zone files, the database of journals and secondary copies, DNSSEC key state.
.TP
/run/bulwark/control.sock
The control socket used by \fBbulwark ctl\fR.
.TP
/usr/share/doc/bulwark
The documentation: installation, configuration, operations.
.SH SEE ALSO
\fBbulwark\-serve\fR(8), \fBbulwark\-check\-config\fR(8), \fBbulwark\-ctl\fR(8),
\fBsystemctl\fR(1), \fBjournalctl\fR(1)
"#;

pub fn run(args: &GenerateDocsArgs) -> ExitCode {
    match generate(&args.out) {
        Ok(written) => {
            for path in written {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bulwark generate-docs: {}: {e}", args.out.display());
            ExitCode::FAILURE
        }
    }
}

/// Writes the pages and completions under `out`; returns the files written.
pub fn generate(out: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();

    let man_dir = out.join("man");
    fs::create_dir_all(&man_dir)?;
    // `help` is a clap convenience, not a command worth a page; building sets
    // each subcommand's display name (`bulwark-ctl-zone`) used for its page.
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_subcommand_pages(sub, &man_dir, &mut written)?;
    }
    written.push(write_root_page(&cli, &man_dir)?);

    let completions_dir = out.join("completions");
    fs::create_dir_all(&completions_dir)?;
    for shell in SHELLS {
        let mut cli = Cli::command();
        written.push(clap_complete::generate_to(
            shell,
            &mut cli,
            "bulwark",
            &completions_dir,
        )?);
    }
    Ok(written)
}

fn man_page(cmd: &clap::Command) -> Man {
    Man::new(cmd.clone()).section(MAN_SECTION).manual(MANUAL)
}

/// `cmd`'s page, then its subcommands' pages, depth first.
fn write_subcommand_pages(
    cmd: &clap::Command,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> io::Result<()> {
    written.push(man_page(cmd).generate_to(dir)?);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_subcommand_pages(sub, dir, written)?;
    }
    Ok(())
}

/// `bulwark.8`: the generated page, with FILES and SEE ALSO before VERSION.
fn write_root_page(cli: &clap::Command, dir: &Path) -> io::Result<PathBuf> {
    let man = man_page(cli);
    let path = dir.join(man.get_filename());
    let mut rendered = Vec::new();
    man.render(&mut rendered)?;
    let rendered =
        String::from_utf8(rendered).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let page = match rendered.split_once(VERSION_SECTION) {
        Some((head, tail)) => format!("{head}{ROOT_PAGE_EXTRA}{VERSION_SECTION}{tail}"),
        None => format!("{rendered}{ROOT_PAGE_EXTRA}"),
    };
    fs::write(&path, page)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn writes_a_page_per_subcommand_and_three_completions() {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path()).unwrap();
        let man = dir.path().join("man");
        for page in [
            "bulwark.8",
            "bulwark-serve.8",
            "bulwark-check-config.8",
            "bulwark-ctl.8",
            "bulwark-ctl-zone-reload.8",
            "bulwark-keys.8",
        ] {
            let text = fs::read_to_string(man.join(page)).unwrap();
            assert!(text.contains("\n.TH "), "{page}: {text}");
        }
        assert!(!man.join("bulwark-help.8").exists());
        let root = fs::read_to_string(man.join("bulwark.8")).unwrap();
        let files = root.find(".SH FILES").unwrap();
        assert!(files < root.find(VERSION_SECTION).unwrap(), "{root}");
        assert!(root.contains("bulwark\\-serve(8)"), "{root}");
        let completions = dir.path().join("completions");
        for file in ["bulwark.bash", "_bulwark", "bulwark.fish"] {
            let text = fs::read_to_string(completions.join(file)).unwrap();
            assert!(text.contains("check-config"), "{file}");
            assert!(!text.contains(crate::cli::GENERATE_DOCS), "{file}");
        }
    }
}
