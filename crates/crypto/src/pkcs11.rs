//! Keys that live in a PKCS#11 token (an HSM, or SoftHSM in tests): made on
//! the token, used there, never read out. What leaves the token is the public
//! half and the signatures.
//!
//! A PKCS#11 library may be initialised once per process (PKCS#11 v2.40
//! §5.4: a second `C_Initialize` fails), and a login holds for every session
//! of the application on that token (§5.6), so opened libraries and logged-in
//! tokens are kept for the life of the process and shared by every caller.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use aws_lc_rs::digest;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as Pkcs11Error, RvError};
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::AuthPin;

use crate::der;
use crate::keys::rsa_dnskey_public_key;
use crate::{Algorithm, CryptoError};

/// RFC 5480 §2.1.1.1 and RFC 8410 §3: the curves' OIDs, DER-encoded, as
/// CKA_EC_PARAMS holds them.
const P256_OID: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P384_OID: [u8; 7] = [0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
const ED25519_OID: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];
/// PKCS#11 v3.0 §2.3.10 also lets CKA_EC_PARAMS name the curve as the
/// PrintableString `edwards25519`; keys other tools made may carry it.
const ED25519_NAME: [u8; 14] = [
    0x13, 0x0c, b'e', b'd', b'w', b'a', b'r', b'd', b's', b'2', b'5', b'5', b'1', b'9',
];
/// 65537, the public exponent every DNSSEC RSA key uses (RFC 3110 §4).
const RSA_PUBLIC_EXPONENT: [u8; 3] = [0x01, 0x00, 0x01];

fn curve_oid(algorithm: Algorithm) -> Option<&'static [u8]> {
    match algorithm {
        Algorithm::EcdsaP256Sha256 => Some(&P256_OID),
        Algorithm::EcdsaP384Sha384 => Some(&P384_OID),
        Algorithm::Ed25519 => Some(&ED25519_OID),
        _ => None,
    }
}

fn failed(operation: &'static str, e: impl fmt::Display) -> CryptoError {
    CryptoError::Pkcs11 {
        operation,
        reason: e.to_string(),
    }
}

/// The process's opened PKCS#11 libraries, by path.
fn libraries() -> &'static Mutex<HashMap<PathBuf, Pkcs11>> {
    static LIBRARIES: OnceLock<Mutex<HashMap<PathBuf, Pkcs11>>> = OnceLock::new();
    LIBRARIES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Logged-in tokens by library and token label.
type OpenTokens = Mutex<HashMap<(PathBuf, String), Arc<TokenInner>>>;

/// The process's logged-in tokens.
fn tokens() -> &'static OpenTokens {
    static TOKENS: OnceLock<OpenTokens> = OnceLock::new();
    TOKENS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn library(module: &Path) -> Result<Pkcs11, CryptoError> {
    let mut libraries = libraries().lock().map_err(|_| CryptoError::Poisoned)?;
    if let Some(found) = libraries.get(module) {
        return Ok(found.clone());
    }
    let module_error = |e: Pkcs11Error| CryptoError::Pkcs11Module {
        module: module.display().to_string(),
        reason: e.to_string(),
    };
    let pkcs11 = Pkcs11::new(module).map_err(module_error)?;
    // Signing runs on several threads: let the library lock for itself.
    match pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(Pkcs11Error::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => return Err(module_error(e)),
    }
    libraries.insert(module.to_path_buf(), pkcs11.clone());
    Ok(pkcs11)
}

/// Sessions opened per token, so signing threads need not queue for one: a
/// PKCS#11 session runs one operation at a time (§5.6), and the login of the
/// first holds for all.
const MAX_SESSIONS: usize = 8;

/// One token, logged in, with its sessions.
struct TokenInner {
    label: String,
    /// SHA-256 of the PIN the token was opened with; a later open must give
    /// the same PIN, since a second `C_Login` cannot check it.
    pin_digest: Vec<u8>,
    /// Never empty; the first also does everything that is not signing.
    sessions: Vec<Mutex<Session>>,
    /// Where the next signer starts looking for a free session.
    next: AtomicUsize,
}

impl fmt::Debug for TokenInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl TokenInner {
    fn session(&self) -> Result<MutexGuard<'_, Session>, CryptoError> {
        self.sessions
            .first()
            .ok_or(CryptoError::Poisoned)?
            .lock()
            .map_err(|_| CryptoError::Poisoned)
    }

    /// A free session if there is one, else a turn at one of them.
    fn signing_session(&self) -> Result<MutexGuard<'_, Session>, CryptoError> {
        let count = self.sessions.len();
        let start = self
            .next
            .fetch_add(1, Ordering::Relaxed)
            .checked_rem(count)
            .unwrap_or(0);
        for session in self.sessions.iter().cycle().skip(start).take(count) {
            if let Ok(free) = session.try_lock() {
                return Ok(free);
            }
        }
        self.sessions
            .get(start)
            .ok_or(CryptoError::Poisoned)?
            .lock()
            .map_err(|_| CryptoError::Poisoned)
    }
}

/// A token, opened and logged in as its user.
#[derive(Clone, Debug)]
pub struct Pkcs11Token {
    inner: Arc<TokenInner>,
}

/// The private key object of a key pair in a token, and how to name it.
pub(crate) struct TokenKey {
    token: Arc<TokenInner>,
    private: ObjectHandle,
    uri: Pkcs11Uri,
}

impl TokenKey {
    pub(crate) fn uri(&self) -> &Pkcs11Uri {
        &self.uri
    }

    /// Signs on the token: PKCS#1 v1.5 with the hash done by the token for
    /// RSA, the raw ECDSA mechanism over a digest made here (its output is
    /// r||s, the RFC 6605 §4 form), pure EdDSA for Ed25519.
    pub(crate) fn sign(&self, algorithm: Algorithm, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let prehashed;
        let (mechanism, input) = match algorithm {
            Algorithm::RsaSha256 => (Mechanism::Sha256RsaPkcs, data),
            Algorithm::RsaSha512 => (Mechanism::Sha512RsaPkcs, data),
            Algorithm::EcdsaP256Sha256 => {
                prehashed = digest::digest(&digest::SHA256, data);
                (Mechanism::Ecdsa, prehashed.as_ref())
            }
            Algorithm::EcdsaP384Sha384 => {
                prehashed = digest::digest(&digest::SHA384, data);
                (Mechanism::Ecdsa, prehashed.as_ref())
            }
            Algorithm::Ed25519 => (
                Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
                data,
            ),
            Algorithm::MlDsa44 | Algorithm::Falcon512 => {
                return Err(CryptoError::NoPkcs11Mechanism(algorithm.number()))
            }
        };
        let signed = self
            .token
            .signing_session()?
            .sign(&mechanism, self.private, input);
        signed.map_err(|e| {
            if session_lost(&e) {
                forget(&self.token);
            }
            failed("signing", e)
        })
    }
}

/// Errors after which the token's sessions are of no more use: the HSM
/// restarted or went away, or the login ended.
fn session_lost(e: &Pkcs11Error) -> bool {
    matches!(
        e,
        Pkcs11Error::Pkcs11(
            RvError::SessionHandleInvalid
                | RvError::SessionClosed
                | RvError::DeviceRemoved
                | RvError::TokenNotPresent
                | RvError::UserNotLoggedIn
                | RvError::KeyHandleInvalid
                | RvError::ObjectHandleInvalid,
            _
        )
    )
}

/// Drops a token from the open ones, so the next `Pkcs11Token::open` opens
/// it afresh and logs in again. Keys already found keep the old sessions
/// until they are dropped; callers find their keys again.
fn forget(token: &Arc<TokenInner>) {
    if let Ok(mut open) = tokens().lock() {
        open.retain(|_, kept| !Arc::ptr_eq(kept, token));
    }
}

fn pin_digest(pin: &str) -> Vec<u8> {
    digest::digest(&digest::SHA256, pin.as_bytes())
        .as_ref()
        .to_vec()
}

impl Pkcs11Token {
    /// Opens the token labelled `token_label` in the PKCS#11 library
    /// `module` and logs in with `pin`. Opening the same token again in this
    /// process gives the same logged-in sessions; a PIN other than the one
    /// that logged in is refused as wrong, since the token cannot check it
    /// while logged in (a PIN changed on the token needs a restart).
    pub fn open(module: &Path, token_label: &str, pin: &str) -> Result<Pkcs11Token, CryptoError> {
        let key = (module.to_path_buf(), token_label.to_owned());
        let mut open = tokens().lock().map_err(|_| CryptoError::Poisoned)?;
        if let Some(inner) = open.get(&key) {
            if inner.pin_digest != pin_digest(pin) {
                return Err(CryptoError::WrongPin(token_label.to_owned()));
            }
            return Ok(Pkcs11Token {
                inner: Arc::clone(inner),
            });
        }
        let pkcs11 = library(module)?;
        let slots = pkcs11
            .get_slots_with_initialized_token()
            .map_err(|e| failed("listing slots", e))?;
        let mut labels = Vec::new();
        let mut found = None;
        for slot in slots {
            let info = pkcs11
                .get_token_info(slot)
                .map_err(|e| failed("reading token information", e))?;
            // Token labels are blank-padded to 32 characters.
            let label = info.label().trim_end().to_owned();
            if label == token_label {
                found = Some(slot);
                break;
            }
            labels.push(label);
        }
        let slot = found.ok_or_else(|| CryptoError::TokenNotFound {
            label: token_label.to_owned(),
            present: labels.join(", "),
        })?;
        let session = pkcs11
            .open_rw_session(slot)
            .map_err(|e| failed("opening a session", e))?;
        match session.login(UserType::User, Some(&AuthPin::from(pin.to_owned()))) {
            Ok(()) | Err(Pkcs11Error::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
            Err(Pkcs11Error::Pkcs11(RvError::PinIncorrect | RvError::PinLenRange, _)) => {
                return Err(CryptoError::WrongPin(token_label.to_owned()))
            }
            Err(Pkcs11Error::Pkcs11(RvError::PinLocked, _)) => {
                return Err(CryptoError::PinLocked(token_label.to_owned()))
            }
            Err(e) => return Err(failed("logging in", e)),
        }
        let wanted = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_SESSIONS);
        let mut sessions = vec![Mutex::new(session)];
        while sessions.len() < wanted {
            match pkcs11.open_rw_session(slot) {
                Ok(more) => sessions.push(Mutex::new(more)),
                // A token with a session limit: fewer sessions, more waiting.
                Err(_) => break,
            }
        }
        let inner = Arc::new(TokenInner {
            label: token_label.to_owned(),
            pin_digest: pin_digest(pin),
            sessions,
            next: AtomicUsize::new(0),
        });
        open.insert(key, Arc::clone(&inner));
        Ok(Pkcs11Token { inner })
    }

    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// Random bytes from the token, for an object ID.
    pub fn random_id(&self, len: u32) -> Result<Vec<u8>, CryptoError> {
        self.inner
            .session()?
            .generate_random_vec(len)
            .map_err(|e| failed("drawing random bytes", e))
    }

    /// Makes a key pair on the token: the private half sensitive and never
    /// extractable, both halves kept on the token under `id` and `label`.
    /// `bits` matters for RSA only (2048, 3072, 4096, 8192).
    pub fn generate(
        &self,
        algorithm: Algorithm,
        bits: Option<u32>,
        id: &[u8],
        label: &str,
    ) -> Result<crate::SigningKey, CryptoError> {
        let mut public = vec![
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Verify(true),
            Attribute::Id(id.to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
        ];
        let private = vec![
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Sign(true),
            Attribute::Id(id.to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
        ];
        let mechanism = match algorithm {
            Algorithm::RsaSha256 | Algorithm::RsaSha512 => {
                let bits = bits.unwrap_or(algorithm.default_bits());
                if ![2048, 3072, 4096, 8192].contains(&bits) {
                    return Err(CryptoError::UnsupportedKeySize(bits));
                }
                public.push(Attribute::ModulusBits(u64::from(bits).into()));
                public.push(Attribute::PublicExponent(RSA_PUBLIC_EXPONENT.to_vec()));
                Mechanism::RsaPkcsKeyPairGen
            }
            Algorithm::EcdsaP256Sha256 | Algorithm::EcdsaP384Sha384 | Algorithm::Ed25519 => {
                let oid = curve_oid(algorithm).ok_or(CryptoError::KeyGeneration)?;
                public.push(Attribute::EcParams(oid.to_vec()));
                if algorithm == Algorithm::Ed25519 {
                    Mechanism::EccEdwardsKeyPairGen
                } else {
                    Mechanism::EccKeyPairGen
                }
            }
            // PKCS#11 3.2's ML-DSA mechanisms are in no token Debian ships
            // (SoftHSM 2.6 predates them), nor in the cryptoki crate.
            Algorithm::MlDsa44 | Algorithm::Falcon512 => {
                return Err(CryptoError::NoPkcs11Mechanism(algorithm.number()))
            }
        };
        let (public_handle, private_handle) = self
            .inner
            .session()?
            .generate_key_pair(&mechanism, &public, &private)
            .map_err(|e| failed("generating a key pair", e))?;
        self.signing_key(algorithm, id, public_handle, private_handle)
    }

    /// The key pair stored under `id`, to sign with `algorithm` (RSA keys do
    /// not say which hash they are for).
    pub fn find(&self, algorithm: Algorithm, id: &[u8]) -> Result<crate::SigningKey, CryptoError> {
        if algorithm.is_post_quantum() {
            return Err(CryptoError::NoPkcs11Mechanism(algorithm.number()));
        }
        let find = |class: ObjectClass| -> Result<ObjectHandle, CryptoError> {
            let session = self.inner.session()?;
            let found = session
                .find_objects(&[Attribute::Class(class), Attribute::Id(id.to_vec())])
                .map_err(|e| failed("finding a key", e))?;
            found
                .first()
                .copied()
                .ok_or_else(|| CryptoError::KeyNotInToken {
                    token: self.inner.label.clone(),
                    id: hex(id),
                })
        };
        let private = find(ObjectClass::PRIVATE_KEY)?;
        // Some tokens keep no public key object; an RSA private key object
        // carries the modulus and public exponent itself (PKCS#11 v2.40
        // §2.1.3), so it stands in.
        let public = match find(ObjectClass::PUBLIC_KEY) {
            Err(CryptoError::KeyNotInToken { .. }) if algorithm.is_rsa() => private,
            other => other?,
        };
        self.signing_key(algorithm, id, public, private)
    }

    fn signing_key(
        &self,
        algorithm: Algorithm,
        id: &[u8],
        public: ObjectHandle,
        private: ObjectHandle,
    ) -> Result<crate::SigningKey, CryptoError> {
        let (public_key, bits, label) = self.public_key(algorithm, public)?;
        let key = TokenKey {
            token: Arc::clone(&self.inner),
            private,
            uri: Pkcs11Uri {
                token: Some(self.inner.label.clone()),
                id: Some(id.to_vec()),
                object: label,
                module_path: None,
            },
        };
        Ok(crate::SigningKey::from_token(
            algorithm, key, public_key, bits,
        ))
    }

    /// The DNSKEY public key field, the key size and the object's label,
    /// read from the public key object. Checks the key is of `algorithm`'s
    /// kind and curve.
    fn public_key(
        &self,
        algorithm: Algorithm,
        public: ObjectHandle,
    ) -> Result<(Vec<u8>, u32, Option<String>), CryptoError> {
        let mismatch = || CryptoError::TokenKeyMismatch {
            token: self.inner.label.clone(),
            algorithm: algorithm.number(),
        };
        let wanted: &[AttributeType] = if algorithm.is_rsa() {
            &[
                AttributeType::KeyType,
                AttributeType::Label,
                AttributeType::Modulus,
                AttributeType::PublicExponent,
            ]
        } else {
            &[
                AttributeType::KeyType,
                AttributeType::Label,
                AttributeType::EcParams,
                AttributeType::EcPoint,
            ]
        };
        let attributes = self
            .inner
            .session()?
            .get_attributes(public, wanted)
            .map_err(|e| failed("reading the public key", e))?;
        let mut key_type = None;
        let mut label = None;
        let (mut modulus, mut exponent, mut params, mut point) = (None, None, None, None);
        for attribute in attributes {
            match attribute {
                Attribute::KeyType(t) => key_type = Some(t),
                Attribute::Label(l) => label = String::from_utf8(l).ok().filter(|l| !l.is_empty()),
                Attribute::Modulus(m) => modulus = Some(m),
                Attribute::PublicExponent(e) => exponent = Some(e),
                Attribute::EcParams(p) => params = Some(p),
                Attribute::EcPoint(p) => point = Some(p),
                _ => {}
            }
        }
        let missing = || CryptoError::MalformedPublicKey;
        if algorithm.is_rsa() {
            if key_type != Some(KeyType::RSA) {
                return Err(mismatch());
            }
            let n = modulus.ok_or_else(missing)?;
            let e = exponent.ok_or_else(missing)?;
            let n = der::unsigned(&n);
            let e = der::unsigned(&e);
            let bits = u32::try_from(n.len().saturating_mul(8)).unwrap_or(u32::MAX);
            return Ok((rsa_dnskey_public_key(n, e), bits, label));
        }
        let expected_type = if algorithm == Algorithm::Ed25519 {
            KeyType::EC_EDWARDS
        } else {
            KeyType::EC
        };
        let curve_matches = params.as_deref() == curve_oid(algorithm)
            || (algorithm == Algorithm::Ed25519 && params.as_deref() == Some(&ED25519_NAME[..]));
        if key_type != Some(expected_type) || !curve_matches {
            return Err(mismatch());
        }
        let point = point.ok_or_else(missing)?;
        // PKCS#11 v2.40 §2.3.3: CKA_EC_POINT is the DER OCTET STRING of the
        // point; some tokens leave the wrapping off.
        let raw = der::octet_string(&point).unwrap_or(&point);
        let field = if algorithm == Algorithm::Ed25519 {
            // RFC 8080 §3: the 32-octet public key as it is.
            raw.to_vec()
        } else {
            // RFC 6605 §4: X and Y without the uncompressed-form prefix.
            match raw.split_first() {
                Some((0x04, xy)) => xy.to_vec(),
                _ => return Err(CryptoError::MalformedPublicKey),
            }
        };
        let expected_len = match algorithm {
            Algorithm::EcdsaP256Sha256 => 64,
            Algorithm::EcdsaP384Sha384 => 96,
            _ => 32,
        };
        if field.len() != expected_len {
            return Err(CryptoError::MalformedPublicKey);
        }
        Ok((field, algorithm.default_bits(), label))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An RFC 7512 PKCS#11 URI naming a key: `pkcs11:token=T;id=%01%02;object=L`,
/// with an optional `?module-path=...` query. The attributes bulwark does not
/// use are accepted and ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pkcs11Uri {
    pub token: Option<String>,
    pub id: Option<Vec<u8>>,
    pub object: Option<String>,
    pub module_path: Option<PathBuf>,
}

/// RFC 3986 §2.3 unreserved characters, plus the ones RFC 7512 §2.3 lets a
/// path attribute value keep (`:[]@!$'()*+,=&`).
fn keeps(b: u8, in_query: bool) -> bool {
    b.is_ascii_alphanumeric()
        || (b"-._~:[]@!$'()*+,=&".contains(&b) && !(in_query && b == b'&'))
        || (in_query && b == b'/')
}

fn percent_encode(bytes: &[u8], all: bool, in_query: bool) -> String {
    bytes
        .iter()
        .map(|&b| {
            if !all && keeps(b, in_query) && b != b'=' && b != b';' {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let high = char::from(bytes.next()?).to_digit(16)?;
            let low = char::from(bytes.next()?).to_digit(16)?;
            out.push(u8::try_from(high.checked_mul(16)?.checked_add(low)?).ok()?);
        } else {
            out.push(b);
        }
    }
    Some(out)
}

impl Pkcs11Uri {
    pub fn parse(text: &str) -> Result<Pkcs11Uri, CryptoError> {
        let bad = |why: &str| CryptoError::BadPkcs11Uri(format!("`{text}`: {why}"));
        let rest = text
            .trim()
            .strip_prefix("pkcs11:")
            .ok_or_else(|| bad("does not start with pkcs11:"))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut uri = Pkcs11Uri::default();
        let decode_text = |value: &str| {
            percent_decode(value)
                .and_then(|v| String::from_utf8(v).ok())
                .ok_or_else(|| bad("bad percent-encoding"))
        };
        for attribute in path.split(';').filter(|a| !a.is_empty()) {
            let (name, value) = attribute
                .split_once('=')
                .ok_or_else(|| bad("an attribute has no `=`"))?;
            match name {
                "token" => uri.token = Some(decode_text(value)?),
                "object" => uri.object = Some(decode_text(value)?),
                "id" => {
                    uri.id = Some(percent_decode(value).ok_or_else(|| bad("bad percent-encoding"))?)
                }
                _ => {}
            }
        }
        for attribute in query.split('&').filter(|a| !a.is_empty()) {
            if let Some(value) = attribute.strip_prefix("module-path=") {
                uri.module_path = Some(PathBuf::from(decode_text(value)?));
            }
        }
        Ok(uri)
    }
}

impl fmt::Display for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("pkcs11:")?;
        let mut parts = Vec::new();
        if let Some(token) = &self.token {
            parts.push(format!(
                "token={}",
                percent_encode(token.as_bytes(), false, false)
            ));
        }
        if let Some(id) = &self.id {
            // RFC 7512 §2.3: the ID is an octet string, every octet encoded.
            parts.push(format!("id={}", percent_encode(id, true, false)));
        }
        if let Some(object) = &self.object {
            parts.push(format!(
                "object={}",
                percent_encode(object.as_bytes(), false, false)
            ));
        }
        f.write_str(&parts.join(";"))?;
        if let Some(module) = &self.module_path {
            write!(
                f,
                "?module-path={}",
                percent_encode(module.to_string_lossy().as_bytes(), false, true)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn uris_round_trip_and_encode_ids_fully() {
        let uri = Pkcs11Uri {
            token: Some("bulwark keys".to_owned()),
            id: Some(vec![0x01, 0x41, 0xff]),
            object: Some("example.+013+12345".to_owned()),
            module_path: Some(PathBuf::from("/usr/lib/softhsm/libsofthsm2.so")),
        };
        let text = uri.to_string();
        assert_eq!(
            text,
            "pkcs11:token=bulwark%20keys;id=%01%41%FF;object=example.+013+12345?module-path=/usr/lib/softhsm/libsofthsm2.so"
        );
        assert_eq!(Pkcs11Uri::parse(&text).unwrap(), uri);
    }

    #[test]
    fn unknown_attributes_are_ignored_and_garbage_refused() {
        let uri = Pkcs11Uri::parse("pkcs11:manufacturer=SoftHSM;id=%aa;type=private").unwrap();
        assert_eq!(uri.id, Some(vec![0xaa]));
        assert_eq!(uri.token, None);
        assert!(matches!(
            Pkcs11Uri::parse("file:/x"),
            Err(CryptoError::BadPkcs11Uri(_))
        ));
        assert!(matches!(
            Pkcs11Uri::parse("pkcs11:id=%g1"),
            Err(CryptoError::BadPkcs11Uri(_))
        ));
        assert!(matches!(
            Pkcs11Uri::parse("pkcs11:token"),
            Err(CryptoError::BadPkcs11Uri(_))
        ));
    }

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let err = Pkcs11Token::open(Path::new("/nonexistent/libnothing.so"), "t", "1").unwrap_err();
        assert!(matches!(err, CryptoError::Pkcs11Module { .. }), "{err:?}");
    }
}
