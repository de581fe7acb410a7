//! Wildcards (RFC 4592): consulted only for a name that does not exist, and only
//! at its closest encloser's `*` child.

use bulwark_proto::Name;
use bulwark_zone::zone::{Node, Zone};

/// The wildcard node `*.<closest_encloser>`, if the zone has one.
///
/// RFC 4592 §2.2.2: an empty non-terminal is an existing name, so when it is the
/// closest encloser only its own `*` child applies, never one higher up: the walk
/// in `lookup` stops at the deepest existing node, ENTs included.
pub(crate) fn source<'z>(zone: &'z Zone, closest_encloser: &Name) -> Option<&'z Node> {
    let star = closest_encloser.wildcard_child().ok()?;
    zone.node(&star)
}
