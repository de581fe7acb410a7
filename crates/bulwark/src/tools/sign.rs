//! `bulwark sign`: offline signing, like `dnssec-signzone` and `ldns-signzone`:
//! a zone file and its keys in, a signed zone file out, on every core.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, Context as _};
use bulwark_dnssec::SignedRecords;
use bulwark_dnssec::{Denial, Nsec3Settings, SignerSettings};
use bulwark_proto::Name;
use bulwark_zone::printer::{print_order, write_lines};

use crate::cli::sign::SignArgs;
use crate::settings::parse_duration;
use crate::signing::{
    load_zone_keys, sign_zone, unix_now, validity_window, write_atomically_with, SigningRun,
};

fn parse_salt(text: &str) -> anyhow::Result<Vec<u8>> {
    if text == "-" || text.is_empty() {
        return Ok(Vec::new());
    }
    if text.len() % 2 != 0 || text.len() > 510 {
        bail!("--salt {text}: expected an even number of hex digits, at most 255 octets");
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i.saturating_add(2))
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| anyhow!("--salt {text}: not hex"))
        })
        .collect()
}

pub fn run(args: &SignArgs) -> ExitCode {
    match sign(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bulwark sign: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn sign(args: &SignArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let apex: Name = args
        .origin
        .parse()
        .map_err(|e| anyhow!("origin {}: {e}", args.origin))?;
    let apex = if apex.is_root() || args.origin.ends_with('.') {
        apex
    } else {
        format!("{}.", args.origin)
            .parse()
            .map_err(|e| anyhow!("origin {}: {e}", args.origin))?
    };
    let validity = parse_duration(&args.validity).map_err(|e| anyhow!("--validity {e}"))?;
    let offset =
        parse_duration(&args.inception_offset).map_err(|e| anyhow!("--inception-offset {e}"))?;
    let denial = if args.nsec3 {
        Denial::Nsec3(Nsec3Settings {
            iterations: args.iterations,
            salt: parse_salt(&args.salt)?,
            opt_out: args.opt_out,
        })
    } else {
        Denial::Nsec
    };
    let records = bulwark_zone::parse_file(&args.file, &apex).map_err(|diagnostics| {
        let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        anyhow!(
            "{} problem(s) in the zone file:\n{}",
            lines.len(),
            lines.join("\n")
        )
    })?;
    let keys = load_zone_keys(
        &args.keys,
        &apex,
        crate::tools::keys::token(&args.pkcs11)?.as_ref(),
    )?;
    if keys.is_empty() {
        bail!(
            "no keys for {apex} in {} (create them with `bulwark keys generate {apex}`)",
            args.keys.display()
        );
    }
    let now = args.now.unwrap_or_else(unix_now);
    let settings = SignerSettings {
        denial,
        dnskey_ttl: args.dnskey_ttl,
        publish_cds: args.cds,
        cds_key_tags: None,
        now,
    };
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let show_progress = std::io::stderr().is_terminal();
    let last_shown = Mutex::new(Instant::now());
    let progress = |done: usize, total: usize| {
        // A bar only where someone watches, redrawn at most ten times a second.
        if let Ok(mut last) = last_shown.lock() {
            if last.elapsed().as_millis() >= 100 || done == total {
                *last = Instant::now();
                let width = 40usize;
                let filled = done
                    .saturating_mul(width)
                    .checked_div(total)
                    .unwrap_or(width)
                    .min(width);
                eprint!(
                    "\r[{}{}] {done}/{total} RRsets",
                    "#".repeat(filled),
                    " ".repeat(width.saturating_sub(filled))
                );
                if done == total {
                    eprintln!();
                }
            }
        }
    };
    let read_done = Instant::now();
    let signed = sign_zone(
        &apex,
        records,
        &keys,
        &settings,
        SigningRun {
            validity: validity_window(now, validity, offset),
            jitter: 0,
            threads,
            reuse: None,
        },
        show_progress.then_some(&progress as &(dyn Fn(usize, usize) + Sync)),
    )?;
    let sign_done = Instant::now();
    let output = args.output.clone().unwrap_or_else(|| {
        let mut name = args.file.clone().into_os_string();
        name.push(".signed");
        PathBuf::from(name)
    });
    write_atomically_with(&output, 0o644, |file| {
        write_zone_text(file, &signed.as_signed_records(), threads)
    })
    .with_context(|| format!("writing {}", output.display()))?;
    let elapsed = started.elapsed().as_secs_f64();
    let phases = format!(
        "read {:.2} s, sign {:.2} s, order and write {:.2} s",
        read_done.duration_since(started).as_secs_f64(),
        sign_done.duration_since(read_done).as_secs_f64(),
        sign_done.elapsed().as_secs_f64()
    );
    let mut stderr = std::io::stderr();
    let _ = writeln!(
        stderr,
        "{} signed: {} records, {} signatures by {} key(s) on {threads} thread(s) in {elapsed:.2} s ({phases}), written to {}",
        apex,
        signed.records.len().saturating_add(signed.signatures.len()),
        signed.signatures.len(),
        keys.len(),
        output.display()
    );
    Ok(())
}

/// Writes the zone as master-file text: ordered once, then formatted on
/// `threads` threads a slice of lines each, the slices written in order.
/// Formatting three million lines is seconds of work that would otherwise
/// stay on one core after the signatures were spread over all of them.
fn write_zone_text(
    file: &mut dyn io::Write,
    records: &SignedRecords<'_>,
    threads: usize,
) -> io::Result<()> {
    const LINES_PER_SLICE: usize = 1 << 16;
    let order = print_order(records);
    let format = |positions: &[usize]| -> String {
        let mut text = String::with_capacity(positions.len().saturating_mul(128));
        // Formatting into a String cannot fail.
        let _ = write_lines(&mut text, records, positions);
        text
    };
    for round in order.chunks(LINES_PER_SLICE.saturating_mul(threads.max(1))) {
        let mut slices = round.chunks(LINES_PER_SLICE);
        let first = slices.next().unwrap_or_default();
        let texts = std::thread::scope(|scope| -> io::Result<Vec<String>> {
            let others: Vec<_> = slices
                .map(|slice| scope.spawn(move || format(slice)))
                .collect();
            let mut texts = vec![format(first)];
            for other in others {
                texts.push(
                    other
                        .join()
                        .map_err(|_| io::Error::other("a formatting thread panicked"))?,
                );
            }
            Ok(texts)
        })?;
        for text in texts {
            file.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn salts() {
        assert_eq!(parse_salt("-").unwrap(), Vec::<u8>::new());
        assert_eq!(
            parse_salt("aabbccdd").unwrap(),
            vec![0xaa, 0xbb, 0xcc, 0xdd]
        );
        assert!(parse_salt("abc").is_err());
        assert!(parse_salt("zz").is_err());
    }
}
