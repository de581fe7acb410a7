//! Key files as the real tools write them: BIND's `tsig-keygen` and Knot's
//! `keymgr -t`, for every algorithm. Beyond reading the files, `dig -k` (BIND's
//! format) and `kdig -y` (the one-line form) sign a query with the key to a
//! socket on 127.0.0.1 that this test holds: bulwark verifies the query with
//! the key as it read the file, and answers signed, which the tool must accept.
//! Both tools also read bulwark's BADTIME (signed) and BADSIG (unsigned)
//! answers as those errors.
//!
//! Without the tools (Debian bind9-utils / bind9-dnsutils, knot and
//! knot-dnsutils) the tests print a note and pass, unless `CI` is set, where
//! they fail (`bulwark_testkit`'s rule).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

use bulwark_proto::encoding::base64_encode;
use bulwark_proto::message::{MessageBuilder, Section};
use bulwark_proto::{Class, MessageView, Rtype};
use bulwark_xfr::tsig::{
    verify_request, write_tsig_error_response, KeyRing, ResponseSigner, TsigAlgorithm, TsigKey,
    TsigRdata,
};
use bulwark_xfr::tsig_keyfile::{detect_format, parse_key_file, parse_key_spec, KeyFileFormat};

/// The tool's path, or `None` (after a note) when it is missing outside CI;
/// under CI a failure naming its Debian package (see `bulwark_testkit`).
fn tool(name: &str) -> Option<String> {
    bulwark_testkit::require_tool(name).map(|p| p.display().to_string())
}

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The text between the first `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap() + start.len();
    let len = text[from..].find(end).unwrap();
    &text[from..from + len]
}

#[test]
fn tsig_keygen_output_is_read_for_every_algorithm() {
    let Some(keygen) = tool("tsig-keygen") else {
        return;
    };
    let mut file = String::new();
    for alg in TsigAlgorithm::ALL {
        let name = format!("{}.keygen.example", alg.config_name());
        let text = output(&keygen, &["-a", alg.config_name(), &name]);
        assert_eq!(detect_format(&text), KeyFileFormat::Bind, "{text}");
        let keys = parse_key_file(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(keys.len(), 1);
        let k = &keys[0];
        assert_eq!(k.name(), &format!("{name}.").parse().unwrap());
        assert_eq!(k.algorithm(), alg);
        assert_eq!(base64_encode(k.secret()), between(&text, "secret \"", "\""));
        // tsig-keygen makes secrets as long as the hash.
        assert_eq!(k.secret().len(), alg.mac_len(), "{alg}");
        file.push_str(&text);
    }
    // All five in one file.
    let keys = parse_key_file(&file).unwrap();
    assert_eq!(keys.len(), 5);
}

#[test]
fn keymgr_output_is_read_for_every_algorithm() {
    let Some(keymgr) = tool("keymgr") else {
        return;
    };
    for alg in TsigAlgorithm::ALL {
        let name = format!("{}.keymgr.example", alg.config_name());
        let text = output(&keymgr, &["-t", &name, alg.config_name()]);
        assert_eq!(detect_format(&text), KeyFileFormat::Knot, "{text}");
        let keys = parse_key_file(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(keys.len(), 1);
        let k = &keys[0];
        assert_eq!(k.name(), &format!("{name}.").parse().unwrap());
        assert_eq!(k.algorithm(), alg);
        assert_eq!(base64_encode(k.secret()), between(&text, "secret: ", "\n"));
        // The comment line keymgr writes first is the one-line form of the same key.
        let spec = between(&text, "# ", "\n");
        let same = parse_key_spec(spec).unwrap();
        assert_eq!(same.name(), k.name());
        assert_eq!(same.algorithm(), alg);
        assert_eq!(same.secret(), k.secret());
    }
}

/// Receives one query on `socket`, checks its TSIG with `key`, answers it
/// signed with an SOA record, and returns the query's TSIG time.
fn answer_signed(socket: &UdpSocket, key: &TsigKey) -> u64 {
    let mut buf = [0u8; 4096];
    let (n, peer) = socket.recv_from(&mut buf).expect("no query arrived");
    let query = &buf[..n];
    let view = MessageView::parse(query).unwrap();
    let t = TsigRdata::parse(view.tsig().expect("query not signed").rdata)
        .unwrap()
        .time_signed;
    let keys: KeyRing = [key.clone()].into_iter().collect();
    let verified = verify_request(query, &keys, t)
        .unwrap_or_else(|e| panic!("{key:?}: {e}"))
        .unwrap();
    let mut out = Vec::new();
    let mut b = MessageBuilder::response_to(&mut out, 4096, &view).unwrap();
    b.header_mut().flags.aa = true;
    let soa = bulwark_proto::Rdata::from_text(
        Rtype::SOA,
        "ns.example. admin.example. 2024010101 3600 600 86400 300",
        &bulwark_proto::Name::root(),
    )
    .unwrap();
    let mut rdata = Vec::new();
    soa.write_wire(&mut rdata);
    b.push_record(
        Section::Answer,
        &"example.".parse().unwrap(),
        Rtype::SOA,
        Class::IN,
        300,
        &rdata,
    )
    .unwrap();
    b.finish(None).unwrap();
    ResponseSigner::new(&verified).sign(&mut out, t).unwrap();
    socket.send_to(&out, peer).unwrap();
    t
}

/// Runs a client against a socket of ours; returns its output.
fn exchange(program: &str, args: &[&str], key: &TsigKey) -> String {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    let mut all: Vec<&str> = vec!["@127.0.0.1", "-p", &port];
    all.extend_from_slice(args);
    let child = Command::new(program)
        .args(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    answer_signed(&socket, key);
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn dig_signs_with_a_tsig_keygen_key_and_accepts_our_signed_answer() {
    let (Some(keygen), Some(dig)) = (tool("tsig-keygen"), tool("dig")) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("bulwark-tsig-dig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for alg in TsigAlgorithm::ALL {
        let text = output(&keygen, &["-a", alg.config_name(), "dig.example"]);
        let path = dir.join(format!("{alg}.key"));
        std::fs::write(&path, &text).unwrap();
        let key = parse_key_file(&text).unwrap().remove(0);
        let shown = exchange(
            &dig,
            &[
                "-k",
                path.to_str().unwrap(),
                "example.",
                "SOA",
                "+tries=1",
                "+timeout=5",
            ],
            &key,
        );
        assert!(shown.contains("2024010101"), "{alg}: {shown}");
        // dig's words when the answer's TSIG fails: "Couldn't verify
        // signature", "Some TSIG could not be validated".
        assert!(shown.contains("TSIG PSEUDOSECTION"), "{alg}: {shown}");
        assert!(!shown.contains("verify"), "{alg}: {shown}");
        assert!(!shown.contains("could not be validated"), "{alg}: {shown}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn kdig_signs_with_a_keymgr_key_and_accepts_our_signed_answer() {
    let (Some(keymgr), Some(kdig)) = (tool("keymgr"), tool("kdig")) else {
        return;
    };
    for alg in TsigAlgorithm::ALL {
        let text = output(&keymgr, &["-t", "kdig.example", alg.config_name()]);
        let key = parse_key_file(&text).unwrap().remove(0);
        let spec = between(&text, "# ", "\n").to_owned();
        let shown = exchange(
            &kdig,
            &["-y", &spec, "example.", "SOA", "+retry=0", "+timeout=5"],
            &key,
        );
        assert!(shown.contains("2024010101"), "{alg}: {shown}");
        assert!(shown.contains("NOERROR"), "{alg}: {shown}");
        // kdig's words when the answer's TSIG fails: "reply verification
        // ... (failed to verify TSIG)".
        assert!(shown.contains("TSIG PSEUDOSECTION"), "{alg}: {shown}");
        assert!(!shown.contains("verif"), "{alg}: {shown}");
    }
}

/// How an error answer is made: the server's clock skew, whether the query
/// is damaged before it is checked, and whether the answer's MAC is broken.
struct ErrorCase {
    skew: u64,
    forged_query: bool,
    tamper: bool,
}

/// Serves one TSIG error answer to `program` and returns what it printed.
fn serve_error(program: &str, args: &[&str], key: &TsigKey, case: &ErrorCase) -> String {
    let keys: KeyRing = [key.clone()].into_iter().collect();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    let mut all: Vec<&str> = vec!["@127.0.0.1", "-p", &port];
    all.extend_from_slice(args);
    let child = Command::new(program)
        .args(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 4096];
    let (n, peer) = socket.recv_from(&mut buf).expect("no query arrived");
    let mut query = buf[..n].to_vec();
    let t = {
        let view = MessageView::parse(&query).unwrap();
        TsigRdata::parse(view.tsig().unwrap().rdata)
            .unwrap()
            .time_signed
    };
    if case.forged_query {
        // The last octet of the query's MAC (before original ID, error and
        // other length); the question stays as the client will check it.
        let at = query.len() - 7;
        query[at] ^= 0x01;
    }
    let now = t + case.skew;
    let failure = verify_request(&query, &keys, now).unwrap_err();
    let mut answer = Vec::new();
    write_tsig_error_response(&query, &failure, &keys, now, &mut answer).unwrap();
    if case.tamper {
        // The last octet of the MAC sits 6 + 6 octets before the end
        // (original ID, error, other length, 6 octets of server time).
        let at = answer.len() - 13;
        answer[at] ^= 0x01;
    }
    socket.send_to(&answer, peer).unwrap();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn dig_and_kdig_read_our_badtime_and_badsig_answers() {
    let (Some(dig), Some(kdig)) = (tool("dig"), tool("kdig")) else {
        return;
    };
    let key = TsigKey::new(
        "errors.example.".parse().unwrap(),
        TsigAlgorithm::HmacSha256,
        (100..132).collect(),
    );
    let spec = format!("hmac-sha256:errors.example:{}", base64_encode(key.secret()));
    let path = std::env::temp_dir().join(format!("bulwark-tsig-err-{}.key", std::process::id()));
    std::fs::write(
        &path,
        format!(
            "key \"errors.example\" {{ algorithm hmac-sha256; secret \"{}\"; }};\n",
            base64_encode(key.secret())
        ),
    )
    .unwrap();
    let dig_args = [
        "-k",
        path.to_str().unwrap(),
        "example.",
        "SOA",
        "+tries=1",
        "+timeout=5",
    ];
    let kdig_args = [
        "-y",
        spec.as_str(),
        "example.",
        "SOA",
        "+retry=0",
        "+timeout=5",
    ];
    let badtime = ErrorCase {
        skew: 1000,
        forged_query: false,
        tamper: false,
    };
    let badtime_tampered = ErrorCase {
        skew: 1000,
        forged_query: false,
        tamper: true,
    };
    let badsig = ErrorCase {
        skew: 0,
        forged_query: true,
        tamper: false,
    };

    // BIND verifies a BADTIME answer's MAC, then reports the clock error;
    // with the MAC broken it reports a failed verification instead.
    let shown = serve_error(&dig, &dig_args, &key, &badtime);
    assert!(shown.contains("clocks are unsynchronized"), "{shown}");
    assert!(shown.contains("BADTIME 6"), "{shown}");
    let shown = serve_error(&dig, &dig_args, &key, &badtime_tampered);
    assert!(shown.contains("tsig verify failure"), "{shown}");
    let shown = serve_error(&dig, &dig_args, &key, &badsig);
    assert!(shown.contains("tsig indicates error"), "{shown}");
    assert!(shown.contains("status: NOTAUTH"), "{shown}");
    assert!(shown.contains("BADSIG"), "{shown}");

    // Knot shows the TSIG error as the status and checks the time window
    // once the MAC verified; a broken MAC fails verification.
    let shown = serve_error(&kdig, &kdig_args, &key, &badtime);
    assert!(shown.contains("status: BADTIME"), "{shown}");
    assert!(shown.contains("TSIG out of time window"), "{shown}");
    let shown = serve_error(&kdig, &kdig_args, &key, &badtime_tampered);
    assert!(shown.contains("failed to verify TSIG"), "{shown}");
    let shown = serve_error(&kdig, &kdig_args, &key, &badsig);
    assert!(shown.contains("status: BADSIG"), "{shown}");
    std::fs::remove_file(&path).ok();
}
