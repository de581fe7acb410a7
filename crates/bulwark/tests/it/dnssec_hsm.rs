#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! DNSSEC keys in a PKCS#11 token (SoftHSM): generated in the token and never
//! leaving it, they sign zones offline that ldns-verify-zone and BIND's
//! dnssec-verify accept, and online ones that dnspython validates; a wrong
//! PIN is an error that says so. Each test has its own SoftHSM token store.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{bulwark_bin, data_dir, require_tool, temp_dir, QuerySpec, Transport};

const SOFTHSM_MODULE: &str = "/usr/lib/softhsm/libsofthsm2.so";
const TOKEN: &str = "bulwark";
const PIN: &str = "1234";
const SO_PIN: &str = "12345678";
const ZONE: &str = "diff.test";

/// A SoftHSM token store of one initialised token, in a temp dir.
struct Hsm {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Hsm {
    /// `None` when softhsm2 is absent outside CI.
    fn new() -> Option<Hsm> {
        let util = require_tool("softhsm2-util")?;
        support::require_file(SOFTHSM_MODULE, "softhsm2")?;
        let dir = temp_dir("softhsm-");
        let tokens = dir.path().join("tokens");
        fs::create_dir(&tokens).unwrap();
        let conf = dir.path().join("softhsm2.conf");
        fs::write(
            &conf,
            format!(
                "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                tokens.display()
            ),
        )
        .unwrap();
        let out = Command::new(util)
            .args([
                "--init-token",
                "--free",
                "--label",
                TOKEN,
                "--pin",
                PIN,
                "--so-pin",
                SO_PIN,
            ])
            .env("SOFTHSM2_CONF", &conf)
            .output()
            .unwrap();
        assert!(out.status.success(), "softhsm2-util: {out:?}");
        Some(Hsm { dir, conf })
    }

    fn env(&self) -> [(&'static str, &Path); 1] {
        [("SOFTHSM2_CONF", self.conf.as_path())]
    }

    /// `bulwark ARGS` with this token store, its output.
    fn bulwark(&self, args: &[&str]) -> Output {
        Command::new(bulwark_bin())
            .args(args)
            .env("SOFTHSM2_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn bulwark_ok(&self, args: &[&str]) -> String {
        let out = self.bulwark(args);
        assert!(
            out.status.success(),
            "bulwark {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `pkcs11-tool ARGS` logged in to the token; (success, stdout+stderr).
    fn pkcs11_tool(&self, args: &[&str]) -> (bool, String) {
        let tool = require_tool("pkcs11-tool").unwrap();
        let out = Command::new(tool)
            .args(["--module", SOFTHSM_MODULE, "--login", "--pin", PIN])
            .args(args)
            .env("SOFTHSM2_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// The token flags for `bulwark keys` and `bulwark sign`.
    fn flags(pin: &str) -> Vec<String> {
        [
            "--pkcs11-module",
            SOFTHSM_MODULE,
            "--token",
            TOKEN,
            "--pin",
            pin,
        ]
        .map(String::from)
        .to_vec()
    }
}

fn generate(hsm: &Hsm, keys: &Path, algorithm: &str, role: &str) {
    let mut args = vec![
        "keys".to_owned(),
        "generate".to_owned(),
        ZONE.to_owned(),
        "-a".to_owned(),
        algorithm.to_owned(),
        "--role".to_owned(),
        role.to_owned(),
        "-K".to_owned(),
        keys.display().to_string(),
    ];
    args.extend(Hsm::flags(PIN));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    hsm.bulwark_ok(&args);
}

fn private_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "private"))
        .collect();
    files.sort();
    files
}

/// The hex IDs of the private key objects in `.private` files' URIs.
fn token_ids(dir: &Path) -> Vec<String> {
    private_files(dir)
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).unwrap();
            let label = text
                .lines()
                .find_map(|l| l.strip_prefix("Label: "))
                .unwrap_or_else(|| panic!("{} names no token key:\n{text}", p.display()));
            let id = label
                .split(';')
                .find_map(|a| a.strip_prefix("id="))
                .unwrap_or_else(|| panic!("no id in {label}"));
            id.replace('%', "").to_ascii_lowercase()
        })
        .collect()
}

fn verify_offline(signed: &Path, what: &str) {
    if let Some(verifiers) = support::ZoneVerifiers::find() {
        verifiers.assert_valid(signed, ZONE, false, what);
    }
}

#[test]
fn keys_made_in_the_token_sign_zones_that_ldns_and_bind_verify() {
    let Some(hsm) = Hsm::new() else { return };
    let zone = data_dir().join("diff.zone");
    for (algorithm, denial) in [
        ("ECDSAP256SHA256", &[][..]),
        ("RSASHA256", &["--nsec3"][..]),
        ("ED25519", &[][..]),
    ] {
        let keys = hsm.dir.path().join(algorithm);
        generate(&hsm, &keys, algorithm, "ksk");
        generate(&hsm, &keys, algorithm, "zsk");

        // The key directory names the token's keys; it holds no key material.
        let files = private_files(&keys);
        assert_eq!(files.len(), 2, "{files:?}");
        for file in &files {
            let text = fs::read_to_string(file).unwrap();
            assert!(
                text.contains(&format!("Label: pkcs11:token={TOKEN};id=")),
                "{text}"
            );
            for material in ["PrivateKey:", "PrivateExponent:", "Prime1:", "Modulus:"] {
                assert!(!text.contains(material), "{material} in {text}");
            }
        }
        if algorithm == "RSASHA256" {
            let listing = hsm.bulwark_ok(&[
                "keys",
                "list",
                ZONE,
                "-K",
                keys.to_str().unwrap(),
                "--pkcs11-module",
                SOFTHSM_MODULE,
                "--token",
                TOKEN,
                "--pin",
                PIN,
            ]);
            assert_eq!(listing.matches(" 2048 ").count(), 2, "{listing}");
            assert_eq!(
                listing
                    .lines()
                    .filter(
                        |l| l.contains(" active ") && l.ends_with(&format!("(in token {TOKEN})"))
                    )
                    .count(),
                2,
                "{listing}"
            );
        }

        let signed = hsm.dir.path().join(format!("{algorithm}.signed"));
        let mut args = vec![
            "sign".to_owned(),
            ZONE.to_owned(),
            zone.display().to_string(),
            "-K".to_owned(),
            keys.display().to_string(),
            "-o".to_owned(),
            signed.display().to_string(),
        ];
        args.extend(denial.iter().map(|s| s.to_string()));
        args.extend(Hsm::flags(PIN));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        hsm.bulwark_ok(&args);
        verify_offline(&signed, algorithm);
    }

    // Signing finds the token through a configuration file's [pkcs11] too.
    let config = hsm.dir.path().join("bulwark.toml");
    fs::write(hsm.dir.path().join("pin"), format!("{PIN}\n")).unwrap();
    fs::write(
        &config,
        format!(
            "[pkcs11]\nmodule = \"{SOFTHSM_MODULE}\"\ntoken_label = \"{TOKEN}\"\npin_file = \"pin\"\n"
        ),
    )
    .unwrap();
    let signed = hsm.dir.path().join("config.signed");
    hsm.bulwark_ok(&[
        "sign",
        ZONE,
        zone.to_str().unwrap(),
        "-K",
        hsm.dir.path().join("ECDSAP256SHA256").to_str().unwrap(),
        "-o",
        signed.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    verify_offline(&signed, "with --config");
}

#[test]
fn private_keys_in_the_token_are_sensitive_and_never_extractable() {
    let Some(hsm) = Hsm::new() else { return };
    let Some(_) = require_tool("pkcs11-tool") else {
        return;
    };
    let keys = hsm.dir.path().join("keys");
    generate(&hsm, &keys, "ECDSAP256SHA256", "csk");
    generate(&hsm, &keys, "RSASHA256", "csk");
    let ids = token_ids(&keys);
    assert_eq!(ids.len(), 2);
    for id in &ids {
        let (ok, listing) = hsm.pkcs11_tool(&["--list-objects", "--type", "privkey", "--id", id]);
        assert!(ok, "{listing}");
        let access = listing
            .lines()
            .find_map(|l| l.trim().strip_prefix("Access:"))
            .unwrap_or_else(|| panic!("no Access line for {id}:\n{listing}"));
        for flag in [
            "sensitive",
            "always sensitive",
            "never extractable",
            "local",
        ] {
            assert!(access.contains(flag), "{id}: {flag} missing in {access}");
        }

        // Asking for the private key's value gets nothing out of the token.
        let out = hsm.dir.path().join(format!("{id}.der"));
        let (_, said) = hsm.pkcs11_tool(&[
            "--read-object",
            "--type",
            "privkey",
            "--id",
            id,
            "--output-file",
            out.to_str().unwrap(),
        ]);
        assert!(
            fs::metadata(&out).map_or(true, |m| m.len() == 0),
            "a private key was read out: {said}"
        );
    }
}

const ONLINE_ZONE: &str = "$ORIGIN signed.test.\n$TTL 300\n\
@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n  IN NS ns1\n  IN MX 10 mail\n\
ns1 IN A 192.0.2.1\nwww IN A 192.0.2.80\n    IN AAAA 2001:db8::80\nmail IN A 192.0.2.25\n";

fn online_config(hsm: &Hsm, pin: &str) -> PathBuf {
    let dir = hsm.dir.path();
    fs::write(dir.join("zone.db"), ONLINE_ZONE).unwrap();
    fs::write(dir.join("pin"), pin).unwrap();
    let config = dir.join("bulwark.toml");
    fs::write(
        &config,
        format!(
            "[server]\nthreads = 1\n\n[pkcs11]\nmodule = \"{SOFTHSM_MODULE}\"\ntoken_label = \"{TOKEN}\"\npin_file = \"pin\"\n\n\
             [dnssec_policy.hsm]\nkeystore = \"pkcs11\"\nalgorithm = \"ECDSAP256SHA256\"\nnsec3 = true\n\n\
             [[zone]]\norigin = \"signed.test.\"\nfile = \"zone.db\"\ndnssec_policy = \"hsm\"\n"
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_policy_with_keystore_pkcs11_serves_a_zone_signed_in_the_token() {
    let Some(hsm) = Hsm::new() else { return };
    let config = online_config(&hsm, PIN);
    let arg = config.display().to_string();
    let server = support::spawn_bulwark_with_env(&[], &["--config", arg.as_str()], &hsm.env());

    // A KSK and a ZSK were made in the token; the key directory names them.
    let keys = hsm.dir.path().join("keys");
    let ids = token_ids(&keys);
    assert_eq!(ids.len(), 2, "{}", server.process.log());
    if require_tool("pkcs11-tool").is_some() {
        let (ok, listing) = hsm.pkcs11_tool(&["--list-objects", "--type", "privkey"]);
        assert!(ok, "{listing}");
        for id in &ids {
            assert!(listing.contains(id.as_str()), "{id} not in\n{listing}");
        }
    }
    let answer = support::query_retry(
        server.addr,
        &QuerySpec::new("signed.test.", RecordType::DNSKEY),
        Transport::Udp,
        std::time::Duration::from_secs(5),
        3,
    )
    .unwrap();
    assert_eq!(answer.rdata_of("DNSKEY").len(), 2, "{answer}");

    let Some(python) = support::require_python_module("dns.dnssec") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/dnssec_check.py");
    let out = Command::new(python)
        .arg(script)
        .arg(server.addr.ip().to_string())
        .arg(server.addr.port().to_string())
        .arg("signed.test.")
        .args([
            "signed.test./SOA",
            "signed.test./NS",
            "signed.test./MX",
            "signed.test./NSEC3PARAM",
            "www.signed.test./A",
            "www.signed.test./AAAA",
        ])
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "dnspython rejected the served signatures:\n{report}\nserver log:\n{}",
        server.process.log()
    );
    // The DNSKEY RRset and the six RRsets asked for.
    assert_eq!(
        report.lines().filter(|l| l.starts_with("ok ")).count(),
        7,
        "{report}"
    );
    drop(server);

    // A restart signs with the same keys, found in the token again.
    let server = support::spawn_bulwark_with_env(&[], &["--config", arg.as_str()], &hsm.env());
    assert_eq!(token_ids(&keys), ids);
    assert!(
        !server.process.log().contains("DNSSEC key generated"),
        "{}",
        server.process.log()
    );
}

#[test]
fn a_wrong_pin_is_an_error_that_says_so() {
    let Some(hsm) = Hsm::new() else { return };
    let keys = hsm.dir.path().join("keys");
    let mut args: Vec<String> = ["keys", "generate", ZONE, "-K", keys.to_str().unwrap()]
        .map(String::from)
        .to_vec();
    args.extend(Hsm::flags("0000"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = hsm.bulwark(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("PKCS#11 token `{TOKEN}`: wrong PIN")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!keys.exists() || private_files(&keys).is_empty());

    // Keys made with the right PIN; signing with a wrong one fails cleanly,
    // naming the key file it could not open.
    generate(&hsm, &keys, "ECDSAP256SHA256", "csk");
    let signed = hsm.dir.path().join("signed");
    let mut args: Vec<String> = vec![
        "sign".into(),
        ZONE.into(),
        data_dir().join("diff.zone").display().to_string(),
        "-K".into(),
        keys.display().to_string(),
        "-o".into(),
        signed.display().to_string(),
    ];
    args.extend(Hsm::flags("0000"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = hsm.bulwark(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(".private: PKCS#11 token"), "{stderr}");
    assert!(stderr.contains("wrong PIN"), "{stderr}");
    assert!(!signed.exists());

    // Without any token named, the error says how to name one.
    let out = hsm.bulwark(&args[..7]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--pkcs11-module"), "{stderr}");

    // A server given a wrong PIN says so, keeps running, and does not serve
    // the zone it cannot sign.
    let config = online_config(&hsm, "0000");
    let arg = config.display().to_string();
    let mut server = support::spawn_bulwark_with_env(&[], &["--config", arg.as_str()], &hsm.env());
    let answer = support::query_retry(
        server.addr,
        &QuerySpec::new("signed.test.", RecordType::SOA),
        Transport::Udp,
        std::time::Duration::from_secs(5),
        3,
    )
    .unwrap();
    assert_eq!(answer.rcode_name(), "REFUSED", "{answer}");
    assert!(server.process.exited().is_none());
    let log = server.process.log();
    assert!(
        log.contains(&format!("PKCS#11 token `{TOKEN}`: wrong PIN")),
        "{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
}
