//! TSIG interoperability with dnspython, an independent implementation:
//! requests and multi-message responses signed on one side verify on the
//! other, for every algorithm, and the error answers (BADKEY, BADSIG,
//! BADTIME) read as dnspython expects them.
//!
//! dnspython checks times against its own clock, so the messages bulwark
//! signs for it carry the current time; bulwark's checks take the time from
//! the message they check, so no test depends on the clock beyond that.
//! Without a Python that has dnspython (Debian python3-dnspython) the tests
//! print a note and pass, unless `CI` is set, where they fail
//! (`bulwark_testkit`'s rule).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use bulwark_proto::encoding::base64_encode;
use bulwark_proto::message::{MessageBuilder, Section};
use bulwark_proto::{Class, MessageView, Name, Rtype};
use bulwark_xfr::tsig::{
    sign_request, verify_request, write_tsig_error_response, KeyRing, ResponseSigner,
    ResponseVerifier, TsigAlgorithm, TsigFailure, TsigKey, TsigRcode, TsigRdata,
};

const KEY_NAME: &str = "xfr.example.";

/// A python3 with dnspython, or `None` (after a note) when it is missing
/// outside CI; under CI a failure (see `bulwark_testkit`).
fn python() -> Option<PathBuf> {
    bulwark_testkit::require_python_module("dns.tsig")
}

/// Runs `script` with `args`; returns stdout lines, or stderr on failure.
fn run(py: &Path, script: &str, args: &[String]) -> Result<Vec<String>, String> {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    if out.status.success() {
        Ok(stdout.lines().map(str::to_owned).collect())
    } else {
        Err(format!(
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        ))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn secret(alg: TsigAlgorithm) -> Vec<u8> {
    // A different secret per algorithm, as long as the hash.
    (0..alg.mac_len())
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(alg.mac_len() as u8))
        .collect()
}

fn key(alg: TsigAlgorithm) -> TsigKey {
    TsigKey::new(KEY_NAME.parse().unwrap(), alg, secret(alg))
}

/// Arguments that name a key to the scripts: name, base64 secret, algorithm.
fn key_args(alg: TsigAlgorithm) -> Vec<String> {
    vec![
        KEY_NAME.to_owned(),
        base64_encode(&secret(alg)),
        format!("{}.", alg.config_name()),
    ]
}

fn time_signed(msg: &[u8]) -> u64 {
    let view = MessageView::parse(msg).unwrap();
    TsigRdata::parse(view.tsig().unwrap().rdata)
        .unwrap()
        .time_signed
}

const PRELUDE: &str = "
import sys, dns.message, dns.tsig, dns.name, dns.rrset, dns.flags, dns.rcode
key = dns.tsig.Key(sys.argv[1], sys.argv[2], sys.argv[3])
";

/// Prints a signed SOA query for argv[4], then its MAC.
const SIGN_QUERY: &str = "
q = dns.message.make_query(sys.argv[4], 'SOA')
q.use_tsig(key)
print(q.to_wire().hex())
print(q.mac.hex())
";

/// Reads argv[4] as a signed message (dnspython checks MAC and time).
const READ_SIGNED: &str = "
m = dns.message.from_wire(bytes.fromhex(sys.argv[4]), keyring=key)
print('ok', m.id)
";

/// Reads argv[5:] as the messages of one response to a request whose MAC is argv[4].
const READ_MULTI: &str = "
ctx = None
mac = bytes.fromhex(sys.argv[4])
for h in sys.argv[5:]:
    m = dns.message.from_wire(bytes.fromhex(h), keyring=key, request_mac=mac,
                              tsig_ctx=ctx, multi=True)
    ctx = m.tsig_ctx
print('ok', len(sys.argv) - 5)
";

/// Prints a signed AXFR query, then five response messages; the third is
/// left unsigned and fed into the running digest as RFC 8945 §5.3.1 says.
const SIGN_MULTI: &str = "
q = dns.message.make_query('example.', 'AXFR')
q.use_tsig(key)
print(q.to_wire().hex())
ctx = None
for i in range(5):
    r = dns.message.make_response(q)
    r.answer.append(dns.rrset.from_text('h%d.example.' % i, 3600, 'IN', 'A', '192.0.2.%d' % i))
    if i == 2:
        r.tsig = None
        w = r.to_wire()
        ctx.update(w)
    else:
        w = r.to_wire(multi=True, tsig_ctx=ctx)
        ctx = r.tsig_ctx
    print(w.hex())
";

/// Reads argv[5] (an error answer to a request whose MAC is argv[4]) and
/// prints the exception dnspython raises; for a signed answer also checks
/// its MAC with dnspython's own digest and prints Other Data.
const READ_ERROR: &str = "
import dns.rdata, dns.rdataclass, dns.rdatatype, struct
mac = bytes.fromhex(sys.argv[4])
wire = bytes.fromhex(sys.argv[5])
try:
    dns.message.from_wire(wire, keyring=key, request_mac=mac)
    print('accepted')
except dns.tsig.PeerError as e:
    print(type(e).__name__)
tsig_start = int(sys.argv[6])
rdata_start = int(sys.argv[7])
rd = dns.rdata.from_wire(dns.rdataclass.ANY, dns.rdatatype.TSIG, wire, rdata_start,
                         len(wire) - rdata_start)
if len(rd.mac) > 0:
    (ar,) = struct.unpack('!H', wire[10:12])
    unsigned = wire[0:10] + struct.pack('!H', ar - 1) + wire[12:tsig_start]
    ctx = dns.tsig._digest(unsigned, key, rd, None, mac, None, False)
    ctx.verify(rd.mac)
    print('mac-ok', rd.other.hex())
else:
    print('unsigned', rd.error)
";

fn script(body: &str) -> String {
    format!("{PRELUDE}{body}")
}

#[test]
fn dnspython_signed_queries_verify_and_any_change_is_badsig() {
    let Some(py) = python() else { return };
    for alg in TsigAlgorithm::ALL {
        let mut args = key_args(alg);
        args.push("example.".into());
        let lines = run(&py, &script(SIGN_QUERY), &args).unwrap();
        let msg = unhex(&lines[0]);
        let mac = unhex(&lines[1]);
        let t = time_signed(&msg);
        let keys: KeyRing = [key(alg)].into_iter().collect();
        let v = verify_request(&msg, &keys, t)
            .unwrap_or_else(|e| panic!("{alg}: {e}"))
            .unwrap();
        assert_eq!(v.request_mac(), mac.as_slice(), "{alg}");
        // The question's type changed (not its name: dnspython compresses
        // the key name against it).
        let mut bad = msg.clone();
        bad[22] ^= 0x01;
        assert_eq!(
            verify_request(&bad, &keys, t).unwrap_err(),
            TsigFailure::BadSig,
            "{alg}"
        );
    }
}

fn soa_query(id: u16) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    b.header_mut().id = id;
    b.push_question(&"example.".parse().unwrap(), Rtype::SOA, Class::IN)
        .unwrap();
    b.finish(None).unwrap();
    buf
}

#[test]
fn our_signed_queries_are_accepted_by_dnspython() {
    let Some(py) = python() else { return };
    for alg in TsigAlgorithm::ALL {
        let mut msg = soa_query(0x2a2a);
        sign_request(&mut msg, &key(alg), now(), 300).unwrap();
        let mut args = key_args(alg);
        args.push(hex(&msg));
        let lines = run(&py, &script(READ_SIGNED), &args)
            .unwrap_or_else(|e| panic!("{alg}: dnspython refused: {e}"));
        assert_eq!(lines, ["ok 10794"], "{alg}");
        // The oracle can fail: a changed octet is refused.
        let mut bad = msg.clone();
        bad[13] ^= 0x01;
        let mut args = key_args(alg);
        args.push(hex(&bad));
        let err = run(&py, &script(READ_SIGNED), &args).unwrap_err();
        assert!(err.contains("BadSignature"), "{alg}: {err}");
    }
}

/// A response message with one A record.
fn response_part(id: u16, i: u8) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = MessageBuilder::new(&mut buf, 65535);
    b.header_mut().id = id;
    b.header_mut().flags.qr = true;
    b.header_mut().flags.aa = true;
    b.push_question(&"example.".parse().unwrap(), Rtype::AXFR, Class::IN)
        .unwrap();
    let owner: Name = format!("h{i}.example.").parse().unwrap();
    b.push_record(
        Section::Answer,
        &owner,
        Rtype::A,
        Class::IN,
        3600,
        &[192, 0, 2, i],
    )
    .unwrap();
    b.finish(None).unwrap();
    buf
}

#[test]
fn multi_message_response_we_sign_is_verified_by_dnspython() {
    let Some(py) = python() else { return };
    for alg in TsigAlgorithm::ALL {
        let k = key(alg);
        let keys: KeyRing = [k.clone()].into_iter().collect();
        let t = now();
        let mut request = soa_query(0x0707);
        let mac = sign_request(&mut request, &k, t, 300).unwrap();
        let verified = verify_request(&request, &keys, t).unwrap().unwrap();
        let mut signer = ResponseSigner::new(&verified);
        let mut args = key_args(alg);
        args.push(hex(&mac));
        for i in 0..4 {
            let mut m = response_part(0x0707, i);
            signer.sign(&mut m, t).unwrap();
            args.push(hex(&m));
        }
        let lines = run(&py, &script(READ_MULTI), &args)
            .unwrap_or_else(|e| panic!("{alg}: dnspython refused: {e}"));
        assert_eq!(lines, ["ok 4"], "{alg}");
        // Swapping two later messages must be caught by the oracle too.
        args.swap(5, 6);
        assert!(run(&py, &script(READ_MULTI), &args).is_err(), "{alg}");
    }
}

#[test]
fn multi_message_response_dnspython_signs_is_verified_by_us() {
    let Some(py) = python() else { return };
    for alg in TsigAlgorithm::ALL {
        let lines = run(&py, &script(SIGN_MULTI), &key_args(alg)).unwrap();
        let messages: Vec<Vec<u8>> = lines.iter().map(|l| unhex(l)).collect();
        let (request, response) = messages.split_first().unwrap();
        let t = time_signed(request);
        let keys: KeyRing = [key(alg)].into_iter().collect();
        let verified = verify_request(request, &keys, t).unwrap().unwrap();
        let mut v = ResponseVerifier::new(&key(alg), verified.request_mac());
        for (i, m) in response.iter().enumerate() {
            v.verify(m, t)
                .unwrap_or_else(|e| panic!("{alg}: message {i}: {e}"));
        }
        v.finish().unwrap();
        assert!(MessageView::parse(&response[2]).unwrap().tsig().is_none());

        // Without the unsigned message the next MAC does not verify.
        let mut v = ResponseVerifier::new(&key(alg), verified.request_mac());
        v.verify(&response[0], t).unwrap();
        v.verify(&response[1], t).unwrap();
        assert_eq!(v.verify(&response[3], t), Err(TsigFailure::BadSig), "{alg}");
    }
}

/// Where the TSIG record and its rdata start in a message.
fn tsig_offsets(msg: &[u8]) -> (usize, usize) {
    let view = MessageView::parse(msg).unwrap();
    let rr = view.tsig().unwrap();
    (rr.offset, rr.rdata_offset)
}

fn read_error(py: &Path, alg: TsigAlgorithm, mac: &[u8], answer: &[u8]) -> Vec<String> {
    let (tsig_at, rdata_at) = tsig_offsets(answer);
    let mut args = key_args(alg);
    args.extend([
        hex(mac),
        hex(answer),
        tsig_at.to_string(),
        rdata_at.to_string(),
    ]);
    run(py, &script(READ_ERROR), &args).unwrap()
}

#[test]
fn badtime_outside_the_fudge_is_answered_signed_with_server_time() {
    let Some(py) = python() else { return };
    for alg in TsigAlgorithm::ALL {
        let mut args = key_args(alg);
        args.push("example.".into());
        let lines = run(&py, &script(SIGN_QUERY), &args).unwrap();
        let (msg, mac) = (unhex(&lines[0]), unhex(&lines[1]));
        let t = time_signed(&msg);
        let keys: KeyRing = [key(alg)].into_iter().collect();
        // dnspython's fudge is 300: one second more is too late.
        assert!(verify_request(&msg, &keys, t + 300).is_ok());
        let server_now = t + 301;
        let failure = verify_request(&msg, &keys, server_now).unwrap_err();
        assert_eq!(failure.tsig_error(), Some(TsigRcode::BADTIME));
        let mut answer = Vec::new();
        write_tsig_error_response(&msg, &failure, &keys, server_now, &mut answer).unwrap();
        let seen = read_error(&py, alg, &mac, &answer);
        assert_eq!(seen[0], "PeerBadTime", "{alg}");
        // dnspython's own digest accepts our MAC, and Other Data is our clock.
        let want_other = hex(&server_now.to_be_bytes()[2..]);
        assert_eq!(seen[1], format!("mac-ok {want_other}"), "{alg}");
    }
}

#[test]
fn badkey_for_unknown_key_and_md5_and_badsig_read_as_dnspython_expects() {
    let Some(py) = python() else { return };
    let alg = TsigAlgorithm::HmacSha256;
    let keys: KeyRing = [key(alg)].into_iter().collect();
    type Damage = fn(&mut Vec<u8>);
    let cases: [(&str, &str, &str, Damage, &str); 3] = [
        // A key we do not have.
        (
            "stranger.example.",
            "hmac-sha256.",
            "PeerBadKey",
            |_| {},
            "17",
        ),
        // Our key's name, but hmac-md5, which bulwark does not implement.
        (
            KEY_NAME,
            "hmac-md5.sig-alg.reg.int.",
            "PeerBadKey",
            |_| {},
            "17",
        ),
        // Our key, the question's type changed after signing.
        (
            KEY_NAME,
            "hmac-sha256.",
            "PeerBadSignature",
            |m| m[22] ^= 1,
            "16",
        ),
    ];
    for (name, alg_name, want, damage, code) in cases {
        let args = vec![
            name.to_owned(),
            base64_encode(&secret(alg)),
            alg_name.to_owned(),
            "example.".to_owned(),
        ];
        let lines = run(&py, &script(SIGN_QUERY), &args).unwrap();
        let (mut msg, mac) = (unhex(&lines[0]), unhex(&lines[1]));
        damage(&mut msg);
        let t = time_signed(&msg);
        let failure = verify_request(&msg, &keys, t).unwrap_err();
        let mut answer = Vec::new();
        write_tsig_error_response(&msg, &failure, &keys, t, &mut answer).unwrap();
        let (tsig_at, rdata_at) = tsig_offsets(&answer);
        let mut args = args[..3].to_vec();
        args.extend([
            hex(&mac),
            hex(&answer),
            tsig_at.to_string(),
            rdata_at.to_string(),
        ]);
        let seen = run(&py, &script(READ_ERROR), &args).unwrap();
        assert_eq!(
            seen,
            [want.to_owned(), format!("unsigned {code}")],
            "{name} {alg_name}"
        );
    }
}
