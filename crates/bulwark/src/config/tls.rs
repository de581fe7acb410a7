//! What the TLS settings of servers bulwark asks (forwarders, primaries)
//! share: SHA-256 public-key pins, written in base64.

use toml::Spanned;

use super::source::Locate;

/// `tls_pin_sha256`: each the base64 of a 32-octet SHA-256 digest of a
/// SubjectPublicKeyInfo (RFC 7469 §2.4, RFC 7858 §4.2).
pub fn pins(
    written: Option<&Vec<Spanned<String>>>,
    loc: &dyn Locate,
    problems: &mut Vec<String>,
) -> Vec<[u8; 32]> {
    let mut pins = Vec::new();
    for p in written.into_iter().flatten() {
        match bulwark_proto::rdata::base64_decode(p.get_ref().trim())
            .and_then(|d| <[u8; 32]>::try_from(d).ok())
        {
            Some(pin) => pins.push(pin),
            None => problems.push(loc.at(
                p.span(),
                format!(
                    "tls_pin_sha256: `{}` is not the base64 of a 32-octet SHA-256 digest",
                    p.get_ref()
                ),
            )),
        }
    }
    pins
}
