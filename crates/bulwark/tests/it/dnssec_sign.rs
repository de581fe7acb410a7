//! Offline signing checked by verifiers no one here wrote: every zone
//! `bulwark sign` writes must pass ldns-verify-zone and BIND's dnssec-verify,
//! key files must move between bulwark, BIND and ldns both ways, and DS
//! records must match BIND's dnssec-dsfromkey.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support;
use crate::support::{bulwark_bin, data_dir, require_tool, temp_dir, ZoneVerifiers};

const ZONE: &str = "diff.test";

fn bulwark(args: &[&str]) -> String {
    let out = Command::new(bulwark_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run bulwark");
    assert!(
        out.status.success(),
        "bulwark {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a zone file in bulwark's printed form has a record of `rtype`.
fn has_type(text: &str, rtype: &str) -> bool {
    text.lines()
        .any(|l| l.split_whitespace().nth(3) == Some(rtype))
}

fn zone_file() -> PathBuf {
    data_dir().join("diff.zone")
}

fn generate(dir: &Path, algorithm: &str, role: &str) {
    let dir = dir.to_str().unwrap();
    bulwark(&[
        "keys", "generate", ZONE, "-a", algorithm, "--role", role, "-K", dir,
    ]);
}

fn sign(keys: &Path, out: &Path, extra: &[&str]) {
    let zone = zone_file();
    let mut args = vec![
        "sign",
        ZONE,
        zone.to_str().unwrap(),
        "-K",
        keys.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    bulwark(&args);
}

const DENIALS: [&[&str]; 3] = [
    &[],
    &["--nsec3"],
    &[
        "--nsec3",
        "--opt-out",
        "--salt",
        "aabbccdd",
        "--iterations",
        "2",
    ],
];

#[test]
fn every_algorithm_with_nsec_and_nsec3_passes_ldns_and_bind() {
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let dir = temp_dir("sign-algs");
    for algorithm in [
        "RSASHA256",
        "RSASHA512",
        "ECDSAP256SHA256",
        "ECDSAP384SHA384",
        "ED25519",
    ] {
        let keys = dir.path().join(algorithm);
        generate(&keys, algorithm, "ksk");
        generate(&keys, algorithm, "zsk");
        for denial in DENIALS {
            let out = dir
                .path()
                .join(format!("{algorithm}-{}.signed", denial.len()));
            sign(&keys, &out, denial);
            let text = fs::read_to_string(&out).unwrap();
            let chain = if denial.is_empty() { "NSEC" } else { "NSEC3" };
            assert!(
                has_type(&text, chain),
                "{algorithm} {denial:?}: no {chain} chain"
            );
            verifiers.assert_valid(&out, ZONE, false, &format!("{algorithm} {denial:?}"));
        }
    }
}

#[test]
fn a_single_combined_key_signs_everything() {
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let dir = temp_dir("sign-csk");
    let keys = dir.path().join("keys");
    generate(&keys, "ED25519", "csk");
    let out = dir.path().join("csk.signed");
    sign(&keys, &out, &["--nsec3", "--cds"]);
    verifiers.assert_valid(&out, ZONE, true, "CSK");
    let text = fs::read_to_string(&out).unwrap();
    assert!(has_type(&text, "CDS") && has_type(&text, "CDNSKEY"));
}

#[test]
fn a_changed_record_or_a_broken_chain_fails_both_verifiers() {
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let dir = temp_dir("sign-tamper");
    let keys = dir.path().join("keys");
    generate(&keys, "ECDSAP256SHA256", "csk");
    let out = dir.path().join("zone.signed");
    sign(&keys, &out, &[]);
    let text = fs::read_to_string(&out).unwrap();

    let changed = dir.path().join("changed.signed");
    assert!(text.contains("192.0.2.80"));
    fs::write(&changed, text.replace("192.0.2.80", "192.0.2.81")).unwrap();
    for (ok, output) in verifiers.check(&changed, ZONE, true) {
        assert!(!ok, "a changed A record was accepted:\n{output}");
    }

    // Dropping one NSEC record (with its signature) leaves a gap in the chain.
    let gap = dir.path().join("gap.signed");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            !(fields.first() == Some(&"www.diff.test.")
                && (fields.get(3) == Some(&"NSEC") || fields.get(4) == Some(&"NSEC")))
        })
        .collect();
    assert!(kept.len() < text.lines().count());
    fs::write(&gap, kept.join("\n")).unwrap();
    for (ok, output) in verifiers.check(&gap, ZONE, true) {
        assert!(!ok, "a broken NSEC chain was accepted:\n{output}");
    }
}

#[test]
fn keys_made_by_bind_and_ldns_sign_with_bulwark() {
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let Some(bind_keygen) = require_tool("dnssec-keygen") else {
        return;
    };
    let Some(ldns_keygen) = require_tool("ldns-keygen") else {
        return;
    };
    let dir = temp_dir("sign-foreign");
    let keys = dir.path().join("keys");
    fs::create_dir_all(&keys).unwrap();
    let keys_arg = keys.to_str().unwrap().to_owned();
    let bind_ksk = support::run_tool(
        &bind_keygen,
        &["-K", &keys_arg, "-a", "ECDSAP256SHA256", "-f", "KSK", ZONE].map(String::from),
    );
    let bind_zsk = support::run_tool(
        &bind_keygen,
        &["-K", &keys_arg, "-a", "RSASHA256", "-b", "2048", ZONE].map(String::from),
    );
    // ldns-keygen writes into the current directory.
    let ldns = Command::new(&ldns_keygen)
        .args(["-a", "ED25519", ZONE])
        .current_dir(&keys)
        .output()
        .unwrap();
    assert!(
        ldns.status.success(),
        "{}",
        String::from_utf8_lossy(&ldns.stderr)
    );
    let ldns_key = String::from_utf8_lossy(&ldns.stdout).trim().to_owned();
    // ldns-keygen also writes a .ds file, which bulwark ignores.

    let listed = bulwark(&["keys", "list", ZONE, "-K", &keys_arg]);
    for stem in [bind_ksk.trim(), bind_zsk.trim(), ldns_key.as_str()] {
        // The key tag in each tool's file name is the tag bulwark computes.
        let tag: u16 = stem.rsplit('+').next().unwrap().parse().unwrap();
        assert!(
            listed.lines().any(|l| l.starts_with(&format!("{tag} "))),
            "key {stem} (tag {tag}) not listed:\n{listed}"
        );
    }
    let out = dir.path().join("foreign.signed");
    sign(&keys, &out, &["--nsec3"]);
    // Three algorithms, each with one key that signs everything of its own
    // algorithm (RFC 6840 §5.11), so dnssec-verify is told to ignore the KSK flag.
    verifiers.assert_valid(&out, ZONE, true, "keys from dnssec-keygen and ldns-keygen");
}

#[test]
fn bind_signs_with_keys_bulwark_made_and_ds_records_agree() {
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let Some(signzone) = require_tool("dnssec-signzone") else {
        return;
    };
    let Some(dsfromkey) = require_tool("dnssec-dsfromkey") else {
        return;
    };
    let dir = temp_dir("sign-export");
    let keys = dir.path().join("keys");
    generate(&keys, "ECDSAP256SHA256", "ksk");
    generate(&keys, "ECDSAP256SHA256", "zsk");
    let keys_arg = keys.to_str().unwrap().to_owned();

    let unsigned = dir.path().join("zone");
    fs::copy(zone_file(), &unsigned).unwrap();
    let out = dir.path().join("bind.signed");
    support::run_tool(
        &signzone,
        &[
            "-S",
            // dsset-ZONE goes here, not into the working directory.
            "-d",
            dir.path().to_str().unwrap(),
            "-K",
            &keys_arg,
            "-o",
            ZONE,
            "-f",
            out.to_str().unwrap(),
            unsigned.to_str().unwrap(),
        ]
        .map(String::from),
    );
    verifiers.assert_valid(&out, ZONE, false, "dnssec-signzone with bulwark's keys");
    // bulwark's .timing files sit beside the keys without confusing BIND.
    assert!(fs::read_dir(&keys).unwrap().any(|e| e
        .unwrap()
        .path()
        .extension()
        .is_some_and(|x| x == "timing")));

    let ours = bulwark(&["keys", "ds", ZONE, "-K", &keys_arg]);
    let ksk_file = fs::read_dir(&keys)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "key")
                && fs::read_to_string(p).unwrap().contains("DNSKEY 257 ")
        })
        .unwrap();
    let bind = support::run_tool(
        &dsfromkey,
        &["-2".into(), ksk_file.to_str().unwrap().into()],
    );
    let normalize = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase()
    };
    assert_eq!(normalize(&ours), normalize(&bind));
}
