#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The replication part of the configuration: TSIG keys in the files
//! `tsig-keygen` and `keymgr -t` write, and every mistake named where it is.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{bulwark_bin, require_tool, start_bulwark, temp_dir};

const ZONE: &str = "$ORIGIN example.test.
$TTL 300
@   IN SOA ns1 hostmaster 1 3600 900 604800 300
    IN NS  ns1
ns1 IN A   192.0.2.1
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn check_config(conf: &Path) -> Output {
    Command::new(bulwark_bin())
        .arg("check-config")
        .arg(conf)
        .output()
        .unwrap()
}

/// The base64 secret of the key named `name` in a tsig-keygen file.
fn secret_in(text: &str) -> String {
    let at = text.find("secret \"").expect("a secret") + "secret \"".len();
    text[at..].split('"').next().unwrap().to_string()
}

#[test]
fn keys_from_tsig_keygen_and_keymgr_files_sign_and_check_queries() {
    let (Some(keygen), Some(keymgr), Some(kdig)) = (
        require_tool("tsig-keygen"),
        require_tool("keymgr"),
        require_tool("kdig"),
    ) else {
        return;
    };
    let dir = temp_dir("bulwark-keys-");
    let bind = Command::new(&keygen)
        .args(["-a", "hmac-sha512", "bind.key"])
        .output()
        .unwrap();
    assert!(bind.status.success());
    let bind_text = String::from_utf8(bind.stdout).unwrap();
    write(dir.path(), "bind.key.conf", &bind_text);
    let knot = Command::new(&keymgr)
        .args(["-t", "knot.key", "hmac-sha256"])
        .output()
        .unwrap();
    assert!(knot.status.success());
    let knot_text = String::from_utf8(knot.stdout).unwrap();
    write(dir.path(), "knot.key.yaml", &knot_text);
    let knot_secret = knot_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("secret: "))
        .expect("keymgr prints the secret")
        .to_string();
    write(dir.path(), "example.test.zone", ZONE);
    let conf = write(
        dir.path(),
        "bulwark.toml",
        "[server]\nlisten = [\"127.0.0.1:0\"]\nthreads = 1\n\n\
         [tsig_key.\"bind.key\"]\nfile = \"bind.key.conf\"\n\n\
         [tsig_key.\"knot.key\"]\nfile = \"knot.key.yaml\"\n\n\
         [acl.keyed]\nallow = [\"127.0.0.0/8\"]\nkeys = [\"knot.key\"]\n\n\
         [[zone]]\norigin = \"example.test.\"\nfile = \"example.test.zone\"\n\
         allow_transfer = [\"keyed\"]\n",
    );
    let out = check_config(&conf);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Port 0; the ready file says which port, once the zone is loaded.
    let args = ["serve", "--config", conf.to_str().unwrap()].map(String::from);
    let (server, bound) = start_bulwark(&args, &[], dir.path(), "bulwark");
    let at = "@127.0.0.1".to_string();
    let port_arg = format!("-p{}", bound.dns[0].port());
    let signed_soa = |key: &str| {
        let out = Command::new(&kdig)
            .args([
                at.as_str(),
                port_arg.as_str(),
                "-y",
                key,
                "example.test.",
                "SOA",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let bind_key = format!("hmac-sha512:bind.key:{}", secret_in(&bind_text));
    let answer = signed_soa(&bind_key);
    // kdig checks the answer's TSIG and prints it: signed with the key.
    assert!(
        answer.contains("NOERROR") && answer.contains("bind.key."),
        "{answer}\n{}",
        server.log()
    );
    // The Knot-format key signs transfers the ACL lets through.
    let axfr = Command::new(&kdig)
        .args([
            at.as_str(),
            port_arg.as_str(),
            "-y",
            &format!("hmac-sha256:knot.key:{knot_secret}"),
            "example.test.",
            "AXFR",
        ])
        .output()
        .unwrap();
    let axfr = String::from_utf8_lossy(&axfr.stdout);
    assert!(axfr.contains("ns1.example.test."), "{axfr}");
    // A query signed with a secret bulwark does not hold is BADSIG.
    let forged = signed_soa("hmac-sha512:bind.key:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    assert!(forged.contains("BADSIG"), "{forged}");
    drop(server);
}

#[test]
fn replication_mistakes_are_named_where_they_are() {
    let dir = temp_dir("bulwark-repl-conf-");
    write(dir.path(), "example.test.zone", ZONE);
    write(
        dir.path(),
        "broken.key",
        "key \"broken.key\" {\n\talgorithm hmac-sha256;\n\tsecret \"!!!\";\n};\n",
    );
    let text = "[tsig_key.\"good.key\"]
algorithm = \"hmac-sha256\"
secret = \"a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U=\"
[tsig_key.\"md5.key\"]
algorithm = \"hmac-md5\"
secret = \"a2V5\"
[tsig_key.\"broken.key\"]
file = \"broken.key\"
[acl.loopback]
allow = [\"127.0.0.0/8\"]
[remote.pri]
address = \"127.0.0.1\"
key = \"nokey\"
[[zone]]
origin = \"a.test.\"
primaries = [\"nosuchremote\"]
[[zone]]
origin = \"b.test.\"
file = \"example.test.zone\"
allow_transfer = [\"nosuchacl\"]
catalog = \"catalog.test.\"
[[zone]]
origin = \"c.test.\"
primaries = [\"pri\"]
allow_update = [\"loopback\"]
[[zone]]
origin = \"d.test.\"
";
    let conf = write(dir.path(), "bulwark.toml", text);
    let out = check_config(&conf);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = conf.display().to_string();
    // `FILE:LINE:COL: ` of the value on the line holding `marker`.
    let at = |marker: &str, value: &str| {
        let (n, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(marker))
            .unwrap();
        format!("{file}:{}:{}: ", n + 1, line.find(value).unwrap() + 1)
    };
    for (place, what) in [
        (at("hmac-md5", "\"hmac"), "hmac-md5"),
        (at("127.0.0.1\"", "\"127"), "not an address with a port"),
        (at("nokey", "\"nokey"), "no [tsig_key.nokey]"),
        (at("nosuchremote", "\"nosuch"), "no [remote.nosuchremote]"),
        (at("nosuchacl", "\"nosuch"), "no [acl.nosuchacl]"),
        (at("catalog.test", "\"catalog"), "no zone catalog.test."),
        (at("c.test.", "\"c.test"), "takes no dynamic updates"),
        (at("d.test.", "\"d.test"), "give `file`"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&place) && l.contains(what)),
            "{place} {what:?} in:\n{stderr}"
        );
    }
    // The key file's own error names the key file's line and column.
    let key_file = dir.path().join("broken.key").display().to_string();
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with(&format!("{key_file}:3:"))),
        "{stderr}"
    );
}
