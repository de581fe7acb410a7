//! Per-zone access control: once the zone is known, the server's policy for it
//! decides whether this client is answered, refused or ignored.

use std::net::IpAddr;

use bulwark_guard::Access;
use bulwark_proto::{Name, Rcode};

use crate::response::{ExtendedError, Response};
use crate::ZoneAccess;

/// Asks `policy` about `client` in the zone at `apex`. A refusal is written into
/// `resp` as REFUSED with AA clear and, when the query had EDNS, EDE 18
/// "Prohibited" (RFC 8914 §4.19). Returns the verdict; `Allow` leaves `resp` alone.
pub(crate) fn zone_access(
    resp: &mut Response<'_>,
    policy: Option<&dyn ZoneAccess>,
    apex: &Name,
    client: IpAddr,
) -> Access {
    let Some(policy) = policy else {
        return Access::Allow;
    };
    let verdict = policy.access(apex, client);
    if verdict == Access::Refuse {
        resp.set_authoritative(false);
        resp.set_rcode(Rcode::REFUSED);
        resp.set_extended_error(ExtendedError::Prohibited);
    }
    verdict
}
