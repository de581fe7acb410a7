#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! RFC 5011 trust anchor upkeep, across a restart. `managed.test.` is
//! signed offline by two key-signing keys, KSK1 (the configured anchor, a
//! BIND `initial-key`) and KSK2 (new). The resolver, on a test clock,
//! validates with KSK1 and sees KSK2 arrive: AddPend. Thirty-one days later
//! (the add hold-down is 30) KSK2 is Valid, and the state is in the store.
//! The zone then drops KSK1; a restarted resolver, given only KSK1 in its
//! configuration, still validates, because it resumed KSK2 from the store;
//! one with a fresh store, started at the same moment, cannot (DNSKEY
//! Missing), which shows the store is what made the difference.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hickory_proto::rr::RecordType;

use crate::support::{self, temp_dir, ChildGuard, EdnsSpec, QuerySpec, Transport};

const ZONE: &str = "managed.test.";
const TIMEOUT: Duration = Duration::from_secs(5);
/// A day, and past the add hold-down (30 days, RFC 5011 §2.4.1).
const DAY: u64 = 86_400;
const PAST_HOLD_DOWN: u64 = 31 * DAY;

fn bulwark(args: &[&str]) -> String {
    let out = Command::new(support::bulwark_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bulwark {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Generates one key into `dir`, returning its .key file.
fn generate(dir: &Path, role: &str) -> PathBuf {
    let before: Vec<PathBuf> = key_files(dir);
    bulwark(&[
        "keys",
        "generate",
        ZONE,
        "-a",
        "ED25519",
        "--role",
        role,
        "-K",
        dir.to_str().unwrap(),
    ]);
    key_files(dir)
        .into_iter()
        .find(|p| !before.contains(p) && p.extension().is_some_and(|e| e == "key"))
        .expect("a new key file")
}

fn key_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// Copies a key's .key and .private files into `to`.
fn copy_key(key_file: &Path, to: &Path) {
    for ext in ["key", "private"] {
        let from = key_file.with_extension(ext);
        fs::copy(&from, to.join(from.file_name().unwrap())).unwrap();
    }
}

/// The zone signed with the keys in `keys`, written to `out`.
fn sign(dir: &Path, keys: &Path, out: &Path) {
    let unsigned = dir.join("managed.zone");
    fs::write(
        &unsigned,
        "$TTL 300\n@ IN SOA ns hostmaster 1 3600 900 604800 300\n  NS ns\nns A 192.0.2.1\nwww A 192.0.2.80\n",
    )
    .unwrap();
    bulwark(&[
        "sign",
        ZONE,
        unsigned.to_str().unwrap(),
        "-K",
        keys.to_str().unwrap(),
        "--validity",
        "90d",
        "-o",
        out.to_str().unwrap(),
    ]);
}

/// BIND's `trust-anchors` statement making `key_file`'s key a managed
/// (`initial-key`) anchor.
fn initial_key_anchor(key_file: &Path) -> String {
    let text = fs::read_to_string(key_file).unwrap();
    let record = text.lines().find(|l| l.contains("DNSKEY 257 ")).unwrap();
    let f: Vec<&str> = record.split_whitespace().collect();
    let at = f.iter().position(|w| *w == "DNSKEY").unwrap();
    format!(
        "trust-anchors {{ {ZONE} initial-key {} {} {} \"{}\"; }};\n",
        f[at + 1],
        f[at + 2],
        f[at + 3],
        f[at + 4..].join("")
    )
}

/// A key file's key tag, from its name (`K<zone>+<alg>+<tag>.key`).
fn tag_of(key_file: &Path) -> String {
    let name = key_file.file_stem().unwrap().to_str().unwrap().to_owned();
    name.rsplit('+')
        .next()
        .unwrap()
        .trim_start_matches('0')
        .to_owned()
}

struct Resolver {
    process: ChildGuard,
    addr: SocketAddr,
    socket: PathBuf,
}

/// A validating resolver with a store at `store`, its clock starting at
/// `start` (Unix seconds), KSK1 its managed anchor, the zone at `auth`.
fn resolver(
    dir: &Path,
    store: &Path,
    anchor_file: &Path,
    auth: SocketAddr,
    start: u64,
) -> Resolver {
    let socket = dir.join("control.sock");
    let config = dir.join("resolver.toml");
    fs::write(
        &config,
        format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nstorage = \"{}\"\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [resolver]\nroot_hints = [\"127.0.0.1:9\"]\nquery_localhost = true\n\
             trust_anchor_files = [\"{}\"]\nkey_tag_signaling = false\n\n\
             [[resolver.stub]]\nzone = \"{ZONE}\"\naddresses = [\"{auth}\"]\n",
            store.display(),
            socket.display(),
            anchor_file.display()
        ),
    )
    .unwrap();
    let argv: Vec<String> = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--test-clock",
        &start.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (process, bound) = support::start_bulwark(&argv, &[], dir, "resolver");
    Resolver {
        process,
        addr: bound.dns[0],
        socket,
    }
}

fn ctl(socket: &Path, words: &[&str]) -> String {
    let out = Command::new(support::bulwark_bin())
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// (rcode, AD) for `www.managed.test. A`, DO set.
fn ask(addr: SocketAddr) -> (String, bool) {
    let mut spec = QuerySpec::new(&format!("www.{ZONE}"), RecordType::A);
    spec.rd = true;
    spec.edns = Some(EdnsSpec {
        payload: 1232,
        dnssec_ok: true,
        version: 0,
    });
    let a = support::query_retry(addr, &spec, Transport::Udp, TIMEOUT, 3).unwrap();
    (a.rcode_name(), a.ad)
}

/// The line `ctl anchors` shows for `tag`.
fn state_of(r: &Resolver, tag: &str) -> String {
    ctl(&r.socket, &["anchors"])
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(tag))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_new_key_is_trusted_after_its_hold_down_and_a_restart_resumes_it() {
    let dir = temp_dir("rfc5011-");
    let both = dir.path().join("keys-both");
    let second = dir.path().join("keys-second");
    fs::create_dir_all(&both).unwrap();
    fs::create_dir_all(&second).unwrap();
    let ksk1 = generate(&both, "ksk");
    let ksk2 = generate(&second, "ksk");
    let zsk = generate(&second, "zsk");
    copy_key(&ksk2, &both);
    copy_key(&zsk, &both);
    let (tag1, tag2) = (tag_of(&ksk1), tag_of(&ksk2));

    // Phase 1: the zone carries both KSKs.
    let signed_both = dir.path().join("both.signed");
    sign(dir.path(), &both, &signed_both);
    let auth = support::spawn_bulwark(&[(ZONE, signed_both.as_path())], &[]);
    let anchor_file = dir.path().join("anchor.conf");
    fs::write(&anchor_file, initial_key_anchor(&ksk1)).unwrap();

    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let store = dir.path().join("resolver.redb");
    let run1 = temp_dir("rfc5011-run1-");
    let r = resolver(run1.path(), &store, &anchor_file, auth.addr, start);
    assert_eq!(
        ask(r.addr),
        ("NOERROR".to_string(), true),
        "{}",
        r.process.log()
    );
    assert!(
        state_of(&r, &tag1).contains("Valid"),
        "{}",
        ctl(&r.socket, &["anchors"])
    );
    assert!(
        state_of(&r, &tag2).contains("AddPend"),
        "KSK2 waits out its hold-down: {}",
        ctl(&r.socket, &["anchors"])
    );

    // Past the hold-down: a refresh (the next question wakes the resolver
    // on its moved clock) makes KSK2 Valid.
    ctl(
        &r.socket,
        &["test-clock", "advance", &PAST_HOLD_DOWN.to_string()],
    );
    let mut valid = false;
    for _ in 0..50 {
        let _ = ask(r.addr);
        if state_of(&r, &tag2).contains("Valid") {
            valid = true;
            break;
        }
    }
    assert!(
        valid,
        "KSK2 should be Valid after 31 days: {}\n{}",
        ctl(&r.socket, &["anchors"]),
        r.process.log()
    );
    drop(r);

    // Phase 2: the zone drops KSK1; the configuration still names only it.
    let signed_second = dir.path().join("second.signed");
    sign(dir.path(), &second, &signed_second);
    let auth2 = support::spawn_bulwark(&[(ZONE, signed_second.as_path())], &[]);
    let later = start + PAST_HOLD_DOWN + DAY;
    let run2 = temp_dir("rfc5011-run2-");
    let r = resolver(run2.path(), &store, &anchor_file, auth2.addr, later);
    assert_eq!(
        ask(r.addr),
        ("NOERROR".to_string(), true),
        "the restarted resolver resumes KSK2 from the store\n{}",
        r.process.log()
    );
    assert!(r.process.log().contains("resumed"), "{}", r.process.log());

    // The control: the same moment, a fresh store.
    let run3 = temp_dir("rfc5011-run3-");
    let fresh = dir.path().join("fresh.redb");
    let r3 = resolver(run3.path(), &fresh, &anchor_file, auth2.addr, later);
    assert_eq!(
        ask(r3.addr).0,
        "SERVFAIL",
        "without the saved state KSK2 is not trusted"
    );
}
