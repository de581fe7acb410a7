//! The edge of DNSSEC signing: keys in BIND-format files in a key directory,
//! the clock, and the threads that share out a zone's signing jobs.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context as _};
use bulwark_dnssec::keyfile::key_file_stem;
use bulwark_dnssec::{
    apply_state_text, key_file_text, private_file_text, read_key_files, state_file_text,
    KeyFileKey, KeyRole, Pkcs11Token, Signature, SignatureCache, SignatureValidity, SignedRecords,
    SignerSettings, ZoneKey, ZonePlan,
};
use bulwark_proto::{Name, Record};

use crate::settings::Pkcs11Settings;

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Reads every key of `apex` in `dir`: each `K<apex>+<alg>+<tag>.private`
/// with its `.key`. Files of other zones are skipped; an unreadable key of
/// this zone is an error naming the file. A `.private` file naming a key in
/// a PKCS#11 token opens that token with `pkcs11`'s library and PIN.
pub fn load_zone_keys(
    dir: &Path,
    apex: &Name,
    pkcs11: Option<&Pkcs11Settings>,
) -> anyhow::Result<Vec<ZoneKey>> {
    let prefix = format!("k{}+", apex.to_lowercase());
    let mut keys = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => {
            return Err(e).with_context(|| format!("reading key directory {}", dir.display()))
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "private")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.to_ascii_lowercase().starts_with(&prefix))
        })
        .collect();
    paths.sort();
    for private_path in paths {
        let key_path = private_path.with_extension("key");
        let private = fs::read_to_string(&private_path)
            .with_context(|| format!("reading {}", private_path.display()))?;
        let public = fs::read_to_string(&key_path)
            .with_context(|| format!("reading {}", key_path.display()))?;
        let mut key = match read_key_files(apex, &public, &private, None)
            .map_err(|e| anyhow!("{}: {e}", private_path.display()))?
        {
            KeyFileKey::InFile(key) => key,
            KeyFileKey::InToken(reference) => {
                let settings = pkcs11.ok_or_else(|| {
                    anyhow!(
                        "{}: the key is in the PKCS#11 token {}: name the token's library and PIN ([pkcs11] in the configuration, or --pkcs11-module, --token and --pin)",
                        private_path.display(),
                        reference.uri
                    )
                })?;
                let id = reference.uri.id.clone().ok_or_else(|| {
                    anyhow!(
                        "{}: the URI {} has no id",
                        private_path.display(),
                        reference.uri
                    )
                })?;
                let token = settings
                    .open(reference.uri.token.as_deref())
                    .with_context(|| format!("{}", private_path.display()))?;
                let signing_key = token
                    .find(reference.algorithm, &id)
                    .map_err(|e| anyhow!("{}: {e}", private_path.display()))?;
                reference
                    .with_signing_key(signing_key)
                    .map_err(|e| anyhow!("{}: {e}", private_path.display()))?
            }
        };
        let state_path = private_path.with_extension("timing");
        match fs::read_to_string(&state_path) {
            Ok(state) => apply_state_text(&mut key, &state)
                .map_err(|e| anyhow!("{}: {e}", state_path.display()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", state_path.display())),
        }
        keys.push(key);
    }
    Ok(keys)
}

/// Writes a key's two files into `dir` (created if missing); the private file
/// is readable by its owner only. Each file is written beside and renamed in,
/// so a crash never leaves half a key. Returns the files' stem.
pub fn write_zone_key(dir: &Path, apex: &Name, key: &ZoneKey) -> anyhow::Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating key directory {}", dir.display()))?;
    let stem = dir.join(key_file_stem(apex, key));
    let private = private_file_text(key).map_err(|e| anyhow!("{e}"))?;
    // Readers find keys by their .private file, so it is written last: a
    // reader never sees a key whose other files are not there yet.
    write_atomically(
        &stem.with_extension_str("key"),
        key_file_text(apex, key).as_bytes(),
        0o644,
    )?;
    write_key_state(dir, apex, key)?;
    write_atomically(
        &stem.with_extension_str("private"),
        private.as_bytes(),
        0o600,
    )?;
    Ok(stem)
}

/// Rewrites a key's `.timing` file (role and timing) after a rollover step.
pub fn write_key_state(dir: &Path, apex: &Name, key: &ZoneKey) -> anyhow::Result<()> {
    let stem = dir.join(key_file_stem(apex, key));
    write_atomically(
        &stem.with_extension_str("timing"),
        state_file_text(key).as_bytes(),
        0o644,
    )
}

trait WithExtensionStr {
    fn with_extension_str(&self, ext: &str) -> PathBuf;
}

impl WithExtensionStr for PathBuf {
    /// `Kexample.+013+12345` has dots of its own, so `with_extension` would
    /// cut the stem; append instead.
    fn with_extension_str(&self, ext: &str) -> PathBuf {
        let mut s = self.clone().into_os_string();
        s.push(".");
        s.push(ext);
        PathBuf::from(s)
    }
}

pub fn write_atomically(path: &Path, data: &[u8], mode: u32) -> anyhow::Result<()> {
    write_atomically_with(path, mode, |file| file.write_all(data))
}

/// [`write_atomically`] with the content written by `write` through a
/// buffer, so a large file is never held in memory whole.
pub fn write_atomically_with(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    let mut buffered = io::BufWriter::with_capacity(1 << 20, &mut file);
    write(&mut buffered)
        .and_then(|()| buffered.flush())
        .with_context(|| format!("writing {}", tmp.display()))?;
    drop(buffered);
    file.sync_all()
        .with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))?;
    // The rename itself is durable only once the directory is synced.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", parent.display()))?;
    }
    Ok(())
}

/// Generates a key and keeps its timing: created, published and active now.
pub fn generate_key(
    algorithm: bulwark_dnssec::Algorithm,
    bits: Option<u32>,
    role: KeyRole,
    now: u64,
) -> anyhow::Result<ZoneKey> {
    let timing = bulwark_dnssec::KeyTiming::starting_at(now);
    generate_key_with(algorithm, bits, role, timing)
}

pub fn generate_key_with(
    algorithm: bulwark_dnssec::Algorithm,
    bits: Option<u32>,
    role: KeyRole,
    timing: bulwark_dnssec::KeyTiming,
) -> anyhow::Result<ZoneKey> {
    let key = bulwark_dnssec::SigningKey::generate(algorithm, bits).map_err(|e| anyhow!("{e}"))?;
    Ok(ZoneKey::new(role, key, timing))
}

/// How one signing pass signs.
#[derive(Debug, Clone, Copy)]
pub struct SigningRun<'a> {
    pub validity: SignatureValidity,
    /// Expirations are spread over this many seconds before `validity`'s.
    pub jitter: u64,
    pub threads: usize,
    /// The last pass's signatures, kept where still good for the refresh
    /// interval (seconds); with it, the pass also returns its own cache.
    pub reuse: Option<(&'a SignatureCache, u32)>,
}

/// What a signing pass made.
#[derive(Debug)]
pub struct SignedZone {
    /// The zone's records with its DNSKEY RRset and NSEC or NSEC3 chain.
    pub records: Vec<Record>,
    /// The signatures over them, compact (see [`Signature`]).
    pub signatures: Vec<Signature>,
    /// The signer's name (the zone's apex, lower case).
    pub signer: Name,
    /// How many signatures were kept from the last pass.
    pub kept: usize,
    /// For the next pass (when `reuse` was given).
    pub cache: Option<SignatureCache>,
}

/// Generates a key pair on `token` (the private half never leaves it),
/// created, published and active now. Its object label says which zone
/// and role it is for; its ID is random.
pub fn generate_key_in_token(
    token: &Pkcs11Token,
    apex: &Name,
    algorithm: bulwark_dnssec::Algorithm,
    bits: Option<u32>,
    role: KeyRole,
    now: u64,
) -> anyhow::Result<ZoneKey> {
    let timing = bulwark_dnssec::KeyTiming::starting_at(now);
    generate_key_in_token_with(token, apex, algorithm, bits, role, timing)
}

/// [`generate_key_in_token`] with the timing a rollover step chose.
pub fn generate_key_in_token_with(
    token: &Pkcs11Token,
    apex: &Name,
    algorithm: bulwark_dnssec::Algorithm,
    bits: Option<u32>,
    role: KeyRole,
    timing: bulwark_dnssec::KeyTiming,
) -> anyhow::Result<ZoneKey> {
    // 20 octets: the size of the IDs BIND and Knot give their token keys.
    const ID_LEN: u32 = 20;
    let id = token.random_id(ID_LEN).map_err(|e| anyhow!("{e}"))?;
    let label = format!(
        "{} {} {}",
        apex.to_lowercase(),
        role.name(),
        bulwark_dnssec::time::format_timestamp(timing.created.unwrap_or(0))
    );
    let key = token
        .generate(algorithm, bits, &id, &label)
        .map_err(|e| anyhow!("{e}"))?;
    Ok(ZoneKey::new(role, key, timing))
}

/// Signs a zone: the plan on this thread, the signatures on `threads`
/// threads, each taking the next chunk of jobs. `progress` is told how many
/// jobs are done so far.
pub fn sign_zone(
    apex: &Name,
    records: Vec<Record>,
    keys: &[ZoneKey],
    settings: &SignerSettings,
    run: SigningRun<'_>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> anyhow::Result<SignedZone> {
    let plan = ZonePlan::new(apex, records, keys, settings).map_err(|e| anyhow!("{e}"))?;
    let jobs = plan.jobs();
    // Chunks small enough to balance, large enough that taking one is rare.
    const CHUNK: usize = 256;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let SigningRun {
        validity,
        jitter,
        threads,
        reuse,
    } = run;
    let kept = AtomicUsize::new(0);
    let threads = threads.clamp(1, jobs.len().div_ceil(CHUNK).max(1));
    // Each worker's share, reserved once: growing a vector of a million
    // signatures would copy it several times over.
    let share = plan
        .signature_count(keys, settings.now)
        .div_ceil(threads)
        .saturating_add(CHUNK);
    let results: Vec<anyhow::Result<Vec<Signature>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<Vec<Signature>> {
                    let mut out = Vec::with_capacity(share);
                    loop {
                        let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                        let Some(chunk) =
                            jobs.get(start..start.saturating_add(CHUNK).min(jobs.len()))
                        else {
                            break;
                        };
                        if chunk.is_empty() {
                            break;
                        }
                        let reused = plan
                            .sign_into(
                                chunk,
                                keys,
                                settings.now,
                                jittered(validity, jitter, start),
                                reuse,
                                &mut out,
                            )
                            .map_err(|e| anyhow!("{e}"))?;
                        kept.fetch_add(reused, Ordering::Relaxed);
                        let finished = done
                            .fetch_add(chunk.len(), Ordering::Relaxed)
                            .saturating_add(chunk.len());
                        if let Some(progress) = progress {
                            progress(finished, jobs.len());
                        }
                    }
                    Ok(out)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(anyhow!("a signing thread panicked")))
            })
            .collect()
    });
    let mut signatures = Vec::new();
    for result in results {
        let mut part = result?;
        if signatures.is_empty() {
            // The common case of one thread: no copy at all.
            signatures = part;
        } else {
            signatures.append(&mut part);
        }
    }
    let cache = reuse.map(|_| SignatureCache::from_pass(plan.jobs(), &signatures));
    Ok(SignedZone {
        signer: plan.apex().clone(),
        records: plan.into_records(),
        signatures,
        kept: kept.into_inner(),
        cache,
    })
}

impl SignedZone {
    /// The records and signatures as one list, for the printer.
    pub fn as_signed_records(&self) -> SignedRecords<'_> {
        SignedRecords {
            records: &self.records,
            signatures: &self.signatures,
            signer: &self.signer,
        }
    }

    /// Every record of the signed zone, signatures included.
    pub fn into_records(self) -> Vec<Record> {
        let all = self.as_signed_records();
        let signatures: Vec<Record> = (0..self.signatures.len())
            .filter_map(|i| all.signature_record(i))
            .collect();
        let mut records = self.records;
        records.extend(signatures);
        records
    }
}

/// Expirations spread over `jitter` seconds, a different amount per chunk of
/// jobs, so the zone's signatures do not all come due in the same pass.
fn jittered(validity: SignatureValidity, jitter: u64, chunk_start: usize) -> SignatureValidity {
    // A multiplicative hash of the chunk's position: deterministic, spread.
    let spread = (chunk_start as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .checked_rem(jitter.saturating_add(1))
        .unwrap_or(0);
    SignatureValidity {
        expiration: validity
            .expiration
            .wrapping_sub(u32::try_from(spread).unwrap_or(0)),
        ..validity
    }
}

/// Signature validity from a policy: inception `inception_offset` back (for
/// resolvers whose clocks run slow), expiration `validity` ahead.
pub fn validity_window(now: u64, validity: u64, inception_offset: u64) -> SignatureValidity {
    SignatureValidity {
        inception: bulwark_dnssec::time::rrsig_time(now.saturating_sub(inception_offset)),
        expiration: bulwark_dnssec::time::rrsig_time(now.saturating_add(validity)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn keys_written_are_loaded_and_other_zones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let apex: Name = "example.".parse().unwrap();
        let other: Name = "other.".parse().unwrap();
        let key = generate_key(bulwark_dnssec::Algorithm::Ed25519, None, KeyRole::Csk, 1).unwrap();
        write_zone_key(dir.path(), &apex, &key).unwrap();
        let foreign =
            generate_key(bulwark_dnssec::Algorithm::Ed25519, None, KeyRole::Ksk, 1).unwrap();
        write_zone_key(dir.path(), &other, &foreign).unwrap();
        let loaded = load_zone_keys(dir.path(), &apex, None).unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].key_tag(), key.key_tag());
        assert!(load_zone_keys(&dir.path().join("missing"), &apex, None)
            .unwrap()
            .is_empty());
    }
}
