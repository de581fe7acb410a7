//! Wildcards (RFC 4592): consulted only for a name that does not exist, and only
//! at its closest encloser's `*` child.

use bulwark_proto::name::MAX_NAME_LEN;
use bulwark_zone::zone::{Node, Zone};

/// `*` as a wire-form label.
const STAR: [u8; 2] = [1, b'*'];

/// The wildcard node `*.<closest_encloser>`, if the zone has one;
/// `closest_encloser` is a lowercased wire-form name.
///
/// RFC 4592 §2.2.2: an empty non-terminal is an existing name, so when it is the
/// closest encloser only its own `*` child applies, never one higher up: the walk
/// in `lookup` stops at the deepest existing node, ENTs included.
pub(crate) fn source<'z>(zone: &'z Zone, closest_encloser: &[u8]) -> Option<&'z Node> {
    // Built on the stack: this runs for every name that does not exist.
    let mut star = [0u8; MAX_NAME_LEN];
    let len = STAR.len().checked_add(closest_encloser.len())?;
    let (head, rest) = star.get_mut(..len)?.split_at_mut(STAR.len());
    head.copy_from_slice(&STAR);
    rest.copy_from_slice(closest_encloser);
    zone.node_by_lowercase_wire(star.get(..len)?)
}
