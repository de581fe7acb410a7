//! BIND's key files, which Knot (keymgr import-bind) and ldns also read:
//! `K<zone>+<alg>+<tag>.key` holds the DNSKEY record, `.private` the key
//! material (`Private-key-format: v1.3`) and the timing metadata. Text in,
//! text out: reading and writing the files is the caller's.
//!
//! A key kept in a PKCS#11 token has no material in its `.private` file: a
//! `Label:` line names it with an RFC 7512 URI instead, as BIND does for its
//! engine keys. Opening the token is the caller's too.

use bulwark_crypto::{Algorithm, CryptoError, Pkcs11Uri, SigningKey};
use bulwark_proto::encoding::{base64_decode, base64_encode};
use bulwark_proto::rdata::Dnskey;
use bulwark_proto::{Name, Rdata, Rtype};
use thiserror::Error;

use crate::key::{KeyRole, KeyTiming, ZoneKey, SEP_FLAG};
use crate::time::{format_timestamp, parse_timestamp};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyFileError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("the .key file holds no DNSKEY record")]
    NoDnskey,
    #[error("the .key file's DNSKEY is for {found}, not {expected}")]
    WrongOwner { found: String, expected: String },
    #[error("algorithm {0} is not supported")]
    UnsupportedAlgorithm(u8),
    #[error("the .private file says algorithm {private}, the .key file {public}")]
    AlgorithmMismatch { private: u8, public: u8 },
    #[error("the private key does not match the public key in the .key file")]
    KeyMismatch,
    #[error("{0}")]
    Key(#[from] CryptoError),
    #[error("the key is kept in the PKCS#11 token {uri}: open the token to use it")]
    InToken { uri: String },
}

/// Where a key file pair says the private key is.
#[derive(Debug)]
pub enum KeyFileKey {
    /// The material was in the `.private` file.
    InFile(ZoneKey),
    /// The `.private` file names a key in a PKCS#11 token.
    InToken(TokenKeyRef),
}

/// A key whose private half is in a PKCS#11 token: what the files say,
/// waiting for the signing key the caller gets from the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenKeyRef {
    pub uri: Pkcs11Uri,
    pub algorithm: Algorithm,
    pub role: KeyRole,
    pub dnskey: Dnskey,
    pub timing: KeyTiming,
}

impl TokenKeyRef {
    /// The zone key, once the token has given its key: the token's public key
    /// must be the one in the `.key` file.
    pub fn with_signing_key(self, key: SigningKey) -> Result<ZoneKey, KeyFileError> {
        if key.algorithm() != self.algorithm
            || key.dnskey_public_key() != self.dnskey.public_key.as_slice()
        {
            return Err(KeyFileError::KeyMismatch);
        }
        Ok(ZoneKey::with_flags(
            self.role,
            self.dnskey.flags,
            key,
            self.timing,
        ))
    }
}

/// `K<zone>+<alg>+<tag>` (the zone with its final dot), the stem of both files.
pub fn key_file_stem(apex: &Name, key: &ZoneKey) -> String {
    format!(
        "K{}+{:03}+{:05}",
        apex.to_lowercase(),
        key.algorithm_number(),
        key.key_tag()
    )
}

const TIMING_FIELDS: [&str; 5] = ["Created", "Publish", "Activate", "Inactive", "Delete"];

fn timing_values(t: &KeyTiming) -> [Option<u64>; 5] {
    [t.created, t.publish, t.activate, t.inactive, t.delete]
}

/// The `.key` file: comments BIND writes, then the DNSKEY record.
pub fn key_file_text(apex: &Name, key: &ZoneKey) -> String {
    let kind = if key.dnskey().flags & SEP_FLAG != 0 {
        "key-signing"
    } else {
        "zone-signing"
    };
    let mut out = format!(
        "; This is a {kind} key, keyid {}, for {}\n",
        key.key_tag(),
        apex.to_lowercase()
    );
    for (field, value) in TIMING_FIELDS.iter().zip(timing_values(&key.timing)) {
        if let Some(value) = value {
            out.push_str(&format!("; {field}: {}\n", format_timestamp(value)));
        }
    }
    out.push_str(&format!(
        "{} IN DNSKEY {}\n",
        apex.to_lowercase(),
        Rdata::Dnskey(key.dnskey().clone())
    ));
    out
}

/// The `.private` file in BIND's v1.3 format.
pub fn private_file_text(key: &ZoneKey) -> Result<String, KeyFileError> {
    let algorithm = key.signing_key().algorithm();
    let mut out = format!(
        "Private-key-format: v1.3\nAlgorithm: {} ({})\n",
        algorithm.number(),
        algorithm.mnemonic()
    );
    match key.signing_key().pkcs11_uri() {
        Some(uri) => out.push_str(&format!("Label: {uri}\n")),
        None => {
            for (name, value) in key.signing_key().private_fields()? {
                out.push_str(&format!("{name}: {}\n", base64_encode(&value)));
            }
        }
    }
    for (field, value) in TIMING_FIELDS.iter().zip(timing_values(&key.timing)) {
        if let Some(value) = value {
            out.push_str(&format!("{field}: {}\n", format_timestamp(value)));
        }
    }
    Ok(out)
}

fn syntax(line: usize, message: impl Into<String>) -> KeyFileError {
    KeyFileError::Syntax {
        line,
        message: message.into(),
    }
}

/// Reads a key from the texts of its two files. The role follows the SEP flag
/// (257 → KSK, 256 → ZSK); a policy that uses a CSK says so with `role`.
/// A key in a token is an error here; `read_key_files` returns it.
pub fn parse_key_files(
    apex: &Name,
    key_text: &str,
    private_text: &str,
    role: Option<KeyRole>,
) -> Result<ZoneKey, KeyFileError> {
    match read_key_files(apex, key_text, private_text, role)? {
        KeyFileKey::InFile(key) => Ok(key),
        KeyFileKey::InToken(reference) => Err(KeyFileError::InToken {
            uri: reference.uri.to_string(),
        }),
    }
}

/// Reads a key's two files: the key itself when the `.private` file holds
/// its material, or where it is when the file names a PKCS#11 token.
pub fn read_key_files(
    apex: &Name,
    key_text: &str,
    private_text: &str,
    role: Option<KeyRole>,
) -> Result<KeyFileKey, KeyFileError> {
    // BIND writes the record without a TTL; the DNSKEY TTL is the policy's.
    let text = format!("$TTL 3600\n{key_text}");
    let records = bulwark_zone::parse_str(&text, apex, "key file").map_err(|diagnostics| {
        let first = diagnostics.into_iter().next();
        syntax(
            first
                .as_ref()
                .map_or(0, |d| usize::try_from(d.line).unwrap_or(0)),
            first.map_or_else(|| "unreadable".to_owned(), |d| d.message),
        )
    })?;
    let record = records
        .into_iter()
        .find(|r| r.rtype() == Rtype::DNSKEY)
        .ok_or(KeyFileError::NoDnskey)?;
    if record.owner != *apex {
        return Err(KeyFileError::WrongOwner {
            found: record.owner.to_string(),
            expected: apex.to_string(),
        });
    }
    let Rdata::Dnskey(dnskey) = record.rdata else {
        return Err(KeyFileError::NoDnskey);
    };

    let mut algorithm_number = None;
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    let mut timing = KeyTiming::default();
    let mut token_uri = None;
    for (index, line) in private_text.lines().enumerate() {
        let line_no = index.saturating_add(1);
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let (field, value) = line
            .split_once(':')
            .ok_or_else(|| syntax(line_no, "expected `Field: value`"))?;
        let value = value.trim();
        match field {
            "Private-key-format" => {
                if !value.starts_with("v1.") {
                    return Err(syntax(line_no, format!("unknown format {value}")));
                }
            }
            "Algorithm" => {
                let number = value.split_whitespace().next().unwrap_or_default();
                algorithm_number = Some(
                    number
                        .parse::<u8>()
                        .map_err(|_| syntax(line_no, format!("bad algorithm {value}")))?,
                );
            }
            "Label" => {
                token_uri = Some(
                    Pkcs11Uri::parse(value).map_err(|e| syntax(line_no, format!("Label: {e}")))?,
                );
            }
            // BIND's OpenSSL engine name; the URI says all bulwark needs.
            "Engine" => {}
            _ if TIMING_FIELDS.contains(&field) => {
                let at = parse_timestamp(value)
                    .ok_or_else(|| syntax(line_no, format!("bad time {value}")))?;
                match field {
                    "Created" => timing.created = Some(at),
                    "Publish" => timing.publish = Some(at),
                    "Activate" => timing.activate = Some(at),
                    "Inactive" => timing.inactive = Some(at),
                    _ => timing.delete = Some(at),
                }
            }
            _ => {
                // Key material is base64; other metadata (SyncPublish, ...)
                // is kept out of the way by ignoring what is not base64.
                if let Some(bytes) = base64_decode(value) {
                    fields.push((field.to_owned(), bytes));
                }
            }
        }
    }
    let number = algorithm_number.ok_or_else(|| syntax(0, "no Algorithm line"))?;
    if number != dnskey.algorithm {
        return Err(KeyFileError::AlgorithmMismatch {
            private: number,
            public: dnskey.algorithm,
        });
    }
    let algorithm =
        Algorithm::from_number(number).ok_or(KeyFileError::UnsupportedAlgorithm(number))?;
    let role = role.unwrap_or(if dnskey.flags & SEP_FLAG != 0 {
        KeyRole::Ksk
    } else {
        KeyRole::Zsk
    });
    if let Some(uri) = token_uri {
        return Ok(KeyFileKey::InToken(TokenKeyRef {
            uri,
            algorithm,
            role,
            dnskey,
            timing,
        }));
    }
    let signing_key = SigningKey::from_private_fields(algorithm, |name| {
        fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_slice())
    })?;
    if signing_key.dnskey_public_key() != dnskey.public_key.as_slice() {
        return Err(KeyFileError::KeyMismatch);
    }
    Ok(KeyFileKey::InFile(ZoneKey::with_flags(
        role,
        dnskey.flags,
        signing_key,
        timing,
    )))
}

const STATE_FIELDS: [&str; 7] = [
    "Created",
    "Publish",
    "Activate",
    "Inactive",
    "Delete",
    "DSPublish",
    "Rollover",
];

fn state_values(t: &KeyTiming) -> [Option<u64>; 7] {
    [
        t.created,
        t.publish,
        t.activate,
        t.inactive,
        t.delete,
        t.ds_published,
        t.rollover_requested,
    ]
}

/// The `.timing` file (BIND 9.16+ keeps its own `.state` files, so the name
/// differs): the key's role and every timing, rewritten as a
/// rollover moves on (the `.key` and `.private` files are written once).
pub fn state_file_text(key: &ZoneKey) -> String {
    let mut out = format!(
        "; bulwark key state: role and timing (Unix times as YYYYMMDDHHmmSS UTC)\nRole: {}\n",
        key.role.name()
    );
    for (field, value) in STATE_FIELDS.iter().zip(state_values(&key.timing)) {
        if let Some(value) = value {
            out.push_str(&format!("{field}: {}\n", format_timestamp(value)));
        }
    }
    out
}

/// Lays a `.timing` file over a key read from its `.key` and `.private`:
/// the role and the timing there win.
pub fn apply_state_text(key: &mut ZoneKey, text: &str) -> Result<(), KeyFileError> {
    let mut timing = KeyTiming::default();
    for (index, line) in text.lines().enumerate() {
        let line_no = index.saturating_add(1);
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let (field, value) = line
            .split_once(':')
            .ok_or_else(|| syntax(line_no, "expected `Field: value`"))?;
        let value = value.trim();
        if field == "Role" {
            key.role = match value {
                "KSK" => KeyRole::Ksk,
                "ZSK" => KeyRole::Zsk,
                "CSK" => KeyRole::Csk,
                other => return Err(syntax(line_no, format!("unknown role {other}"))),
            };
            continue;
        }
        let at =
            parse_timestamp(value).ok_or_else(|| syntax(line_no, format!("bad time {value}")))?;
        let slot = match field {
            "Created" => &mut timing.created,
            "Publish" => &mut timing.publish,
            "Activate" => &mut timing.activate,
            "Inactive" => &mut timing.inactive,
            "Delete" => &mut timing.delete,
            "DSPublish" => &mut timing.ds_published,
            "Rollover" => &mut timing.rollover_requested,
            other => return Err(syntax(line_no, format!("unknown field {other}"))),
        };
        *slot = Some(at);
    }
    key.timing = timing;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn files_written_are_read_back_for_every_algorithm() {
        let apex: Name = "Example.COM.".parse().unwrap();
        for algorithm in Algorithm::ALL {
            let timing = KeyTiming {
                created: Some(1_795_517_337),
                activate: Some(1_795_517_400),
                ..KeyTiming::default()
            };
            let key = ZoneKey::new(
                KeyRole::Ksk,
                SigningKey::generate(algorithm, None).unwrap(),
                timing,
            );
            let stem = key_file_stem(&apex, &key);
            assert!(stem.starts_with(&format!("Kexample.com.+{:03}+", algorithm.number())));
            let public = key_file_text(&apex, &key);
            let private = private_file_text(&key).unwrap();
            let again = parse_key_files(&apex, &public, &private, None).unwrap();
            assert_eq!(again.key_tag(), key.key_tag());
            assert_eq!(again.dnskey(), key.dnskey());
            assert_eq!(again.timing, timing);
            assert_eq!(again.role, KeyRole::Ksk);
        }
    }

    #[test]
    fn state_files_carry_role_and_rollover_timing() {
        let apex: Name = "example.".parse().unwrap();
        let mut key = ZoneKey::new(
            KeyRole::Ksk,
            SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
            KeyTiming::default(),
        );
        let timing = KeyTiming {
            created: Some(1_000_000_000),
            publish: Some(1_000_000_001),
            activate: Some(1_000_000_002),
            inactive: Some(1_000_000_003),
            delete: Some(1_000_000_004),
            ds_published: Some(1_000_000_005),
            rollover_requested: Some(1_000_000_006),
        };
        key.timing = timing;
        key.role = KeyRole::Csk;
        let text = state_file_text(&key);
        let mut again = parse_key_files(
            &apex,
            &key_file_text(&apex, &key),
            &private_file_text(&key).unwrap(),
            None,
        )
        .unwrap();
        assert_eq!(again.role, KeyRole::Ksk);
        apply_state_text(&mut again, &text).unwrap();
        assert_eq!(again.role, KeyRole::Csk);
        assert_eq!(again.timing, timing);
        assert!(matches!(
            apply_state_text(&mut again, "Role: BOSS"),
            Err(KeyFileError::Syntax { line: 1, .. })
        ));
        assert!(matches!(
            apply_state_text(&mut again, "Role: KSK\nSoon: 20260101000000"),
            Err(KeyFileError::Syntax { line: 2, .. })
        ));
    }

    #[test]
    fn a_label_line_names_a_key_in_a_token() {
        let apex: Name = "example.".parse().unwrap();
        let key = ZoneKey::new(
            KeyRole::Ksk,
            SigningKey::generate(Algorithm::EcdsaP256Sha256, None).unwrap(),
            KeyTiming::default(),
        );
        let public = key_file_text(&apex, &key);
        let private = "Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\n\
            Label: pkcs11:token=bulwark;id=%01%02;object=example.\nCreated: 20261124110000\n";
        let KeyFileKey::InToken(reference) = read_key_files(&apex, &public, private, None).unwrap()
        else {
            panic!("not a token key");
        };
        assert_eq!(reference.uri.token.as_deref(), Some("bulwark"));
        assert_eq!(reference.uri.id.as_deref(), Some(&[1u8, 2][..]));
        assert_eq!(reference.role, KeyRole::Ksk);
        assert!(reference.timing.created.is_some());
        assert!(matches!(
            parse_key_files(&apex, &public, private, None),
            Err(KeyFileError::InToken { .. })
        ));
        // The token's key must be the one the .key file publishes.
        let other = SigningKey::generate(Algorithm::EcdsaP256Sha256, None).unwrap();
        assert_eq!(
            reference.with_signing_key(other).unwrap_err(),
            KeyFileError::KeyMismatch
        );
        let bad = private.replace("pkcs11:", "file:");
        assert!(matches!(
            read_key_files(&apex, &public, &bad, None),
            Err(KeyFileError::Syntax { line: 3, .. })
        ));
    }

    #[test]
    fn mismatches_are_reported() {
        let apex: Name = "example.".parse().unwrap();
        let a = ZoneKey::new(
            KeyRole::Zsk,
            SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
            KeyTiming::default(),
        );
        let b = ZoneKey::new(
            KeyRole::Zsk,
            SigningKey::generate(Algorithm::Ed25519, None).unwrap(),
            KeyTiming::default(),
        );
        let err = parse_key_files(
            &apex,
            &key_file_text(&apex, &a),
            &private_file_text(&b).unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(err, KeyFileError::KeyMismatch);
        let other: Name = "other.".parse().unwrap();
        let err = parse_key_files(&other, &key_file_text(&apex, &a), "", None).unwrap_err();
        assert!(matches!(err, KeyFileError::WrongOwner { .. }));
        let err = parse_key_files(&apex, &key_file_text(&apex, &a), "garbage", None).unwrap_err();
        assert!(matches!(err, KeyFileError::Syntax { line: 1, .. }));
    }
}
