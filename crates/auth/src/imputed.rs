//! The response's class and imputed name for response rate limiting, as Knot
//! and BIND define them: answers are counted per query name, NXDOMAIN per zone
//! (so random names share one budget), referrals per delegation point,
//! wildcard expansions per wildcard, errors together.

use bulwark_guard::ResponseClass;

/// RFC 1035 §3.1: a name is at most 255 octets in wire form.
const MAX_NAME_LEN: usize = 255;

/// The last response's class and imputed name, kept in a reused buffer.
#[derive(Debug)]
pub(crate) struct Imputed {
    class: ResponseClass,
    name: Vec<u8>,
}

impl Default for Imputed {
    fn default() -> Self {
        Imputed {
            class: ResponseClass::Error,
            // Room for any name, so setting one never allocates.
            name: Vec::with_capacity(MAX_NAME_LEN),
        }
    }
}

impl Imputed {
    /// An error response: no name.
    pub(crate) fn error(&mut self) {
        self.class = ResponseClass::Error;
        self.name.clear();
    }

    /// `wire` is a name in wire form, in any case; it is stored lowercased. Label
    /// lengths (at most 63) are below `A` (65), so lowercasing every octet
    /// leaves them alone.
    pub(crate) fn set(&mut self, class: ResponseClass, wire: &[u8]) {
        self.class = class;
        self.name.clear();
        self.name.extend(wire.iter().map(u8::to_ascii_lowercase));
    }

    /// A wildcard expansion: the imputed name is `*.<closest encloser>`
    /// (RFC 4592 §2.1.1), with the encloser's wire form given.
    pub(crate) fn set_wildcard(&mut self, closest_encloser: &[u8]) {
        self.set(ResponseClass::Wildcard, &[1, b'*']);
        self.name
            .extend(closest_encloser.iter().map(u8::to_ascii_lowercase));
    }

    pub(crate) fn key(&self) -> (ResponseClass, &[u8]) {
        (self.class, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imputed_names_are_lowercase_wire() {
        let mut i = Imputed::default();
        i.set(ResponseClass::Positive, b"\x03WwW\x07EXAMPLE\x00");
        assert_eq!(
            i.key(),
            (ResponseClass::Positive, &b"\x03www\x07example\x00"[..])
        );
        i.set_wildcard(b"\x04Wild\x07example\x00");
        assert_eq!(
            i.key(),
            (
                ResponseClass::Wildcard,
                &b"\x01*\x04wild\x07example\x00"[..]
            )
        );
        i.error();
        assert_eq!(i.key(), (ResponseClass::Error, &b""[..]));
    }
}
