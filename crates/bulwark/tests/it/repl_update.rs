#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! RFC 2136 dynamic updates from BIND's `nsupdate`, a client no one here
//! wrote, signed with TSIG HMAC-SHA256 (RFC 8945) as seed 002's deployment
//! signs everything: each kind of change shows in answers and moves the
//! serial by one; failed prerequisites, unsigned or wrongly signed updates
//! and updates for zones not served get their rcodes and change nothing;
//! a zone bulwark signs serves the new data signed as soon as nsupdate has
//! its answer; and the zone file is written back and parses.

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hickory_proto::rr::RecordType;

use crate::support;
use crate::support::{
    query, require_tool, temp_dir, Answer, ChildGuard, EdnsSpec, QuerySpec, Transport,
    ZoneVerifiers,
};

const PLAIN: &str = "upd.test.";
const SIGNED: &str = "signed.test.";
const KEY_NAME: &str = "upd.key";
const KEY_SECRET: &str = "dHBRJQxIb4qDoljeh9QLaF7UF4RzI0CErbZJ4D10zi4=";
/// Base64 of 32 octets bulwark does not hold for `upd.key`.
const WRONG_SECRET: &str = "eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHg=";
const DEADLINE: Duration = Duration::from_secs(30);
const QUERY_TIMEOUT: Duration = Duration::from_secs(2);

fn zone_text(origin: &str) -> String {
    format!(
        "$TTL 300\n@ IN SOA ns1.{origin} hostmaster.{origin} 1 3600 900 604800 300\n  NS ns1\n\
         ns1 A 192.0.2.1\nwww A 192.0.2.80\nold A 192.0.2.10\n\
         multi A 192.0.2.50\n  TXT \"one\"\n  TXT \"two\"\n"
    )
}

/// A bulwark serving two primary zones open to updates signed with
/// `upd.key`, one of them signed by bulwark; files are written back at once.
struct Primary {
    dir: tempfile::TempDir,
    addr: SocketAddr,
    process: ChildGuard,
    nsupdate: PathBuf,
}

/// How nsupdate signs its request.
#[derive(Clone, Copy, Debug)]
enum Signing {
    /// `-y hmac-sha256:upd.key:SECRET`.
    Key,
    /// `-k FILE`, the key as tsig-keygen writes it, and over TCP (`-v`).
    KeyFileOverTcp,
    /// No TSIG at all.
    Unsigned,
    /// `-y` with a key name bulwark does not know.
    UnknownKey,
    /// `-y` with the right name and algorithm but another secret.
    WrongSecret,
    /// `-y` with the right name and secret but HMAC-SHA512.
    WrongAlgorithm,
}

/// What nsupdate said and whether it exited 0.
struct Outcome {
    ok: bool,
    output: String,
}

impl Primary {
    fn start() -> Option<Primary> {
        let nsupdate = require_tool("nsupdate")?;
        let dir = temp_dir("repl-update-");
        fs::write(dir.path().join("upd.zone"), zone_text(PLAIN)).unwrap();
        fs::write(dir.path().join("signed.zone"), zone_text(SIGNED)).unwrap();
        // serial_policy is left at its default, "increment".
        let config = format!(
            "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\nstorage = \"bulwark.db\"\n\
             key_directory = \"keys\"\n\n\
             [tsig_key.\"{KEY_NAME}\"]\nalgorithm = \"hmac-sha256\"\nsecret = \"{KEY_SECRET}\"\n\n\
             [acl.updaters]\nallow = [\"127.0.0.0/8\"]\nkeys = [\"{KEY_NAME}\"]\n\n\
             [dnssec_policy.fast]\nalgorithm = \"ECDSAP256SHA256\"\n\n\
             [[zone]]\norigin = \"{PLAIN}\"\nfile = \"upd.zone\"\nallow_update = [\"updaters\"]\n\
             zonefile_sync = 0\n\n\
             [[zone]]\norigin = \"{SIGNED}\"\nfile = \"signed.zone\"\nallow_update = [\"updaters\"]\n\
             allow_transfer = [\"updaters\"]\ndnssec_policy = \"fast\"\nzonefile_sync = 0\n"
        );
        let config_path = dir.path().join("bulwark.toml");
        fs::write(&config_path, config).unwrap();
        let args = vec![
            "serve".to_string(),
            "--config".to_string(),
            config_path.display().to_string(),
        ];
        // Port 0: the port bulwark got is in its ready file.
        let (process, bound) = support::start_bulwark(&args, &[], dir.path(), "bulwark");
        let primary = Primary {
            dir,
            addr: bound.dns[0],
            process,
            nsupdate,
        };
        for zone in [PLAIN, SIGNED] {
            primary.wait_for(&format!("{zone} is served"), || {
                let a = primary.ask(zone, RecordType::SOA)?;
                (a.rcode == 0 && a.aa).then_some(()).ok_or(a.to_string())
            });
        }
        Some(primary)
    }

    /// Polls `check` until it is Ok, failing with the server's log after
    /// `DEADLINE`; the pause between polls only paces them.
    fn wait_for<T>(&self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let last = match check() {
                Ok(v) => return v,
                Err(last) => last,
            };
            assert!(
                Instant::now() < deadline,
                "{what}: not within {DEADLINE:?}; last: {last}\nbulwark's log:\n{}",
                self.process.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A DNSSEC OK query over TCP.
    fn ask(&self, qname: &str, qtype: RecordType) -> Result<Answer, String> {
        let mut spec = QuerySpec::new(qname, qtype);
        spec.edns = Some(EdnsSpec {
            payload: 1232,
            dnssec_ok: true,
            version: 0,
        });
        query(self.addr, &spec, Transport::Tcp, QUERY_TIMEOUT)
            .map_err(|e| format!("{qname} {qtype}: {e}"))
    }

    fn serial(&self, zone: &str) -> u32 {
        let a = self.ask(zone, RecordType::SOA).unwrap();
        a.rdata_of("SOA")
            .first()
            .and_then(|soa| soa.split_whitespace().nth(2)?.parse().ok())
            .unwrap_or_else(|| panic!("no SOA serial for {zone}: {a}"))
    }

    /// Runs nsupdate with `lines` (prerequisites and updates) for `zone`,
    /// sent as one UPDATE message.
    fn nsupdate(&self, signing: Signing, zone: &str, lines: &[&str]) -> Outcome {
        let mut args: Vec<String> = vec!["-t".into(), "10".into()];
        let key = |alg: &str, name: &str, secret: &str| format!("{alg}:{name}:{secret}");
        match signing {
            Signing::Key => {
                args.extend(["-y".into(), key("hmac-sha256", KEY_NAME, KEY_SECRET)]);
            }
            Signing::KeyFileOverTcp => {
                let file = self.dir.path().join("upd.key.conf");
                fs::write(
                    &file,
                    format!(
                        "key \"{KEY_NAME}\" {{\n\talgorithm hmac-sha256;\n\tsecret \"{KEY_SECRET}\";\n}};\n"
                    ),
                )
                .unwrap();
                args.extend(["-v".into(), "-k".into(), file.display().to_string()]);
            }
            Signing::Unsigned => {}
            Signing::UnknownKey => {
                args.extend(["-y".into(), key("hmac-sha256", "stranger.key", KEY_SECRET)]);
            }
            Signing::WrongSecret => {
                args.extend(["-y".into(), key("hmac-sha256", KEY_NAME, WRONG_SECRET)]);
            }
            Signing::WrongAlgorithm => {
                args.extend(["-y".into(), key("hmac-sha512", KEY_NAME, KEY_SECRET)]);
            }
        }
        let mut script = format!(
            "server {} {}\nzone {zone}\n",
            self.addr.ip(),
            self.addr.port()
        );
        for line in lines {
            script.push_str(line);
            script.push('\n');
        }
        script.push_str("send\n");
        let script_path = self.dir.path().join("nsupdate.txt");
        fs::write(&script_path, &script).unwrap();
        args.push(script_path.display().to_string());
        let out = Command::new(&self.nsupdate)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run nsupdate");
        Outcome {
            ok: out.status.success(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// Runs an update that must succeed.
    fn update(&self, signing: Signing, zone: &str, lines: &[&str]) {
        let o = self.nsupdate(signing, zone, lines);
        assert!(
            o.ok,
            "nsupdate {signing:?} {lines:?} failed:\n{}\nbulwark's log:\n{}",
            o.output,
            self.process.log()
        );
    }

    /// Runs an update that must fail, with nsupdate's `update failed: WHY`.
    fn update_fails(&self, signing: Signing, zone: &str, lines: &[&str], why: &str) {
        let o = self.nsupdate(signing, zone, lines);
        let expected = format!("update failed: {why}");
        assert!(
            !o.ok && o.output.lines().any(|l| l.trim() == expected),
            "nsupdate {signing:?} {lines:?}: expected `{expected}`, got:\n{}\nbulwark's log:\n{}",
            o.output,
            self.process.log()
        );
    }

    /// The rdata of `qname`/`qtype` (empty for NODATA), with the rcode.
    fn rdata(&self, qname: &str, qtype: RecordType) -> Result<(String, Vec<String>), String> {
        let a = self.ask(qname, qtype)?;
        let mut rdata = a.rdata_of(&support::type_name(qtype));
        rdata.sort();
        Ok((a.rcode_name(), rdata))
    }
}

fn signs(answer: &Answer, covered: RecordType) -> bool {
    support::rrsig_covers(answer, covered)
}

/// One change and what must be served after it.
struct Step {
    what: &'static str,
    signing: Signing,
    lines: &'static [&'static str],
    qname: &'static str,
    qtype: RecordType,
    rcode: &'static str,
    rdata: &'static [&'static str],
}

#[test]
fn adds_deletes_and_replacements_are_served_and_each_moves_the_serial_by_one() {
    let Some(p) = Primary::start() else { return };
    let steps = [
        Step {
            what: "add a record at a new name",
            signing: Signing::Key,
            lines: &["update add new.upd.test. 300 A 192.0.2.99"],
            qname: "new.upd.test.",
            qtype: RecordType::A,
            rcode: "NOERROR",
            rdata: &["192.0.2.99"],
        },
        Step {
            what: "add a record to an RRset",
            signing: Signing::Key,
            lines: &["update add multi.upd.test. 300 TXT \"three\""],
            qname: "multi.upd.test.",
            qtype: RecordType::TXT,
            rcode: "NOERROR",
            rdata: &["\"one\"", "\"three\"", "\"two\""],
        },
        Step {
            // RFC 2136 §2.5.4: delete an RR from an RRset.
            what: "delete one record",
            signing: Signing::Key,
            lines: &["update delete multi.upd.test. TXT \"one\""],
            qname: "multi.upd.test.",
            qtype: RecordType::TXT,
            rcode: "NOERROR",
            rdata: &["\"three\"", "\"two\""],
        },
        Step {
            // RFC 2136 §2.5.2: delete an RRset; the name keeps its A.
            what: "delete an RRset",
            signing: Signing::Key,
            lines: &["update delete multi.upd.test. TXT"],
            qname: "multi.upd.test.",
            qtype: RecordType::TXT,
            rcode: "NOERROR",
            rdata: &[],
        },
        Step {
            // RFC 2136 §2.5.3: delete all RRsets from a name.
            what: "delete a name",
            signing: Signing::Key,
            lines: &["update delete old.upd.test."],
            qname: "old.upd.test.",
            qtype: RecordType::A,
            rcode: "NXDOMAIN",
            rdata: &[],
        },
        Step {
            // Replace = delete the RRset and add in one message (§3.4.2
            // applies them in order, atomically).
            what: "replace an RRset (key file, over TCP)",
            signing: Signing::KeyFileOverTcp,
            lines: &[
                "update delete www.upd.test. A",
                "update add www.upd.test. 300 A 192.0.2.81",
                "update add www.upd.test. 300 A 192.0.2.82",
            ],
            qname: "www.upd.test.",
            qtype: RecordType::A,
            rcode: "NOERROR",
            rdata: &["192.0.2.81", "192.0.2.82"],
        },
    ];
    for step in &steps {
        let before = p.serial(PLAIN);
        p.update(step.signing, PLAIN, step.lines);
        let want = (
            step.rcode.to_string(),
            step.rdata.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        );
        p.wait_for(step.what, || {
            let got = p.rdata(step.qname, step.qtype)?;
            (got == want)
                .then_some(())
                .ok_or(format!("{got:?}, want {want:?}"))
        });
        // RFC 2136 §3.6 and serial_policy "increment": one more per update.
        assert_eq!(p.serial(PLAIN), before.wrapping_add(1), "{}", step.what);
    }
    // Deleting an RRset left the name's other data alone.
    assert_eq!(
        p.rdata("multi.upd.test.", RecordType::A).unwrap().1,
        ["192.0.2.50"]
    );
}

#[test]
fn failed_prerequisites_answer_their_rcode_and_change_nothing() {
    let Some(p) = Primary::start() else { return };
    let before = p.serial(PLAIN);
    // RFC 2136 §3.2: each prerequisite that does not hold, and its rcode.
    let cases = [
        ("prereq nxdomain www.upd.test.", "YXDOMAIN"),
        ("prereq yxdomain missing.upd.test.", "NXDOMAIN"),
        ("prereq yxrrset www.upd.test. MX", "NXRRSET"),
        ("prereq nxrrset www.upd.test. A", "YXRRSET"),
        // §3.2.3: value-dependent, the RRset must match exactly.
        ("prereq yxrrset www.upd.test. A 192.0.2.1", "NXRRSET"),
    ];
    for (prereq, rcode) in cases {
        p.update_fails(
            Signing::Key,
            PLAIN,
            &[prereq, "update add canary.upd.test. 300 A 192.0.2.7"],
            rcode,
        );
        assert_eq!(p.serial(PLAIN), before, "after `{prereq}`");
        let (rcode, _) = p.rdata("canary.upd.test.", RecordType::A).unwrap();
        assert_eq!(rcode, "NXDOMAIN", "after `{prereq}` the update was applied");
    }
    // The same checks pass when they hold, so the above is no accident.
    p.update(
        Signing::Key,
        PLAIN,
        &[
            "prereq nxdomain canary.upd.test.",
            "prereq yxdomain www.upd.test.",
            "prereq yxrrset www.upd.test. A 192.0.2.80",
            "prereq nxrrset www.upd.test. MX",
            "update add canary.upd.test. 300 A 192.0.2.7",
        ],
    );
    assert_eq!(
        p.rdata("canary.upd.test.", RecordType::A).unwrap().1,
        ["192.0.2.7"]
    );
    assert_eq!(p.serial(PLAIN), before.wrapping_add(1));
}

#[test]
fn updates_not_signed_by_an_allowed_key_or_for_other_zones_are_rejected_and_change_nothing() {
    let Some(p) = Primary::start() else { return };
    let before = p.serial(PLAIN);
    let add = ["update add intruder.upd.test. 300 A 203.0.113.1"];
    // RFC 2136 §3.3: the ACL wants the key; unsigned is REFUSED.
    p.update_fails(Signing::Unsigned, PLAIN, &add, "REFUSED");
    // RFC 8945 §5.2.1: a key the server does not have (by name and
    // algorithm) is BADKEY; §5.2.2: a MAC that does not verify is BADSIG;
    // both NOTAUTH, which nsupdate prints with the TSIG error.
    p.update_fails(Signing::UnknownKey, PLAIN, &add, "NOTAUTH(BADKEY)");
    p.update_fails(Signing::WrongAlgorithm, PLAIN, &add, "NOTAUTH(BADKEY)");
    p.update_fails(Signing::WrongSecret, PLAIN, &add, "NOTAUTH(BADSIG)");
    // RFC 2136 §3.1.2: a zone this server is not authoritative for.
    p.update_fails(
        Signing::Key,
        "elsewhere.test.",
        &["update add www.elsewhere.test. 300 A 203.0.113.1"],
        "NOTAUTH",
    );
    assert_eq!(p.serial(PLAIN), before);
    let (rcode, _) = p.rdata("intruder.upd.test.", RecordType::A).unwrap();
    assert_eq!(rcode, "NXDOMAIN");
    // The key that is allowed still works: the server was not broken by them.
    p.update(Signing::Key, PLAIN, &add);
    assert_eq!(
        p.rdata("intruder.upd.test.", RecordType::A).unwrap().1,
        ["203.0.113.1"]
    );
}

#[test]
fn an_update_to_a_signed_zone_is_served_signed_as_soon_as_it_is_acknowledged() {
    let Some(p) = Primary::start() else { return };
    let Some(verifiers) = ZoneVerifiers::find() else {
        return;
    };
    let dig = require_tool("dig");
    let Some(dig) = dig else { return };
    p.update(
        Signing::Key,
        SIGNED,
        &[
            "update add fresh.signed.test. 300 A 192.0.2.77",
            "update delete old.signed.test.",
        ],
    );
    // No polling: the answer to the UPDATE comes after the change is
    // committed (and signed), so the very next query sees it signed.
    let a = p.ask("fresh.signed.test.", RecordType::A).unwrap();
    assert!(
        a.rcode == 0 && a.rdata_of("A") == ["192.0.2.77"] && signs(&a, RecordType::A),
        "fresh A right after the update: {a}\n{}",
        p.process.log()
    );
    let soa = p.ask(SIGNED, RecordType::SOA).unwrap();
    assert!(signs(&soa, RecordType::SOA), "{soa}");
    let gone = p.ask("old.signed.test.", RecordType::A).unwrap();
    assert_eq!(gone.rcode_name(), "NXDOMAIN", "{gone}");
    assert!(
        gone.authority.iter().any(|r| r.contains(" NSEC ")),
        "the name's removal is proven: {gone}"
    );

    // The whole zone after the update verifies: new name in the NSEC
    // chain, removed one out of it, the SOA re-signed.
    let out = Command::new(&dig)
        .args([
            "-p",
            &p.addr.port().to_string(),
            &format!("@{}", p.addr.ip()),
            "-y",
            &format!("hmac-sha256:{KEY_NAME}:{KEY_SECRET}"),
            SIGNED,
            "AXFR",
            "+onesoa",
            "+noall",
            "+answer",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let zone = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        zone.contains("fresh.signed.test.") && zone.contains("\tRRSIG\t"),
        "AXFR of {SIGNED}:\n{zone}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = p.dir.path().join("signed-axfr.zone");
    fs::write(&path, &zone).unwrap();
    verifiers.assert_valid(&path, SIGNED, false, "the signed zone after an update");

    // The file written back holds the unsigned data: bulwark signs as it
    // loads (docs: the file stays unsigned).
    let file = p.dir.path().join("signed.zone");
    let text = p.wait_for("signed.zone is written back", || {
        let text = fs::read_to_string(&file).map_err(|e| e.to_string())?;
        text.contains("fresh.signed.test.")
            .then_some(text.clone())
            .ok_or(text)
    });
    assert!(!text.contains("RRSIG"), "{text}");
    assert!(!text.contains("old.signed.test."), "{text}");
}

#[test]
fn the_zone_file_is_written_back_after_updates_and_parses() {
    let Some(p) = Primary::start() else { return };
    let Some(checkzone) = require_tool("named-checkzone") else {
        return;
    };
    p.update(
        Signing::Key,
        PLAIN,
        &[
            "update add new.upd.test. 300 A 192.0.2.99",
            "update add new.upd.test. 300 TXT \"written back\"",
        ],
    );
    p.update(Signing::Key, PLAIN, &["update delete old.upd.test."]);
    let served = p.serial(PLAIN);
    let file = p.dir.path().join("upd.zone");
    // zonefile_sync = 0: written as soon as the change is committed, by a
    // background task, so the test waits for it.
    p.wait_for("upd.zone holds the updates", || {
        let text = fs::read_to_string(&file).map_err(|e| e.to_string())?;
        (text.contains("new.upd.test.") && !text.contains("old.upd.test."))
            .then_some(())
            .ok_or(text)
    });
    // BIND's parser accepts the file, and it holds the serial served.
    let out = check_zone(&checkzone, PLAIN, &file);
    assert!(
        out.contains(&format!("loaded serial {served}")),
        "named-checkzone {}:\n{out}\n{}",
        file.display(),
        fs::read_to_string(&file).unwrap_or_default()
    );
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"written back\""), "{text}");
}

/// named-checkzone's output; fails the test if it rejects the file.
fn check_zone(checkzone: &Path, origin: &str, file: &Path) -> String {
    let out = Command::new(checkzone)
        .args([origin, file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "named-checkzone rejects {}:\n{text}",
        file.display()
    );
    text
}
