//! Asking the parent's servers whether they serve a key's DS, the signal a
//! KSK rollover waits for before the old key may go (RFC 7583 §3.3.2, as
//! Knot's DS check does). A plain UDP query to configured addresses: no
//! resolution, no trust in the answer beyond "the parent says so" — the old
//! key stays until the DS TTL has also passed.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use bulwark_dnssec::{DigestType, ZoneKey};
use bulwark_proto::message::Header;
use bulwark_proto::{Class, MessageBuilder, MessageView, Name, Rdata, Rtype};

const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// A DS RRset of a few keys fits easily; EDNS is not needed.
const MAX_RESPONSE: usize = 4096;

/// Whether any of `parents` answers the DS query for `apex` with a DS that
/// matches `key` (by tag, algorithm and SHA-256 or SHA-384 digest).
pub fn parent_serves_ds(parents: &[SocketAddr], apex: &Name, key: &ZoneKey) -> bool {
    let wanted: Vec<Vec<u8>> = [DigestType::Sha256, DigestType::Sha384]
        .into_iter()
        .map(|d| Rdata::Ds(key.ds(apex, d)).to_wire())
        .collect();
    parents.iter().any(|parent| match ask_ds(*parent, apex) {
        Ok(found) => found.iter().any(|ds| wanted.contains(ds)),
        Err(e) => {
            tracing::warn!(zone = %apex, parent = %parent, error = %e, "DS check: no answer from the parent");
            false
        }
    })
}

fn ask_ds(parent: SocketAddr, apex: &Name) -> std::io::Result<Vec<Vec<u8>>> {
    // A fresh random ID per query (std's hasher keys are random), so an
    // off-path forger must guess it.
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let id = u16::try_from(random & 0xffff).unwrap_or(0);
    let mut query = Vec::with_capacity(512);
    let mut builder = MessageBuilder::new(&mut query, 512);
    *builder.header_mut() = Header {
        id,
        ..Header::default()
    };
    builder
        .push_question(apex, Rtype::DS, Class::IN)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let len = builder
        .finish(None)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    query.truncate(len);

    let bind: SocketAddr = if parent.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.set_read_timeout(Some(QUERY_TIMEOUT))?;
    socket.connect(parent)?;
    socket.send(&query)?;
    let mut buf = vec![0u8; MAX_RESPONSE];
    loop {
        let n = socket.recv(&mut buf)?;
        let Some(response) = buf.get(..n) else {
            continue;
        };
        let Ok(view) = MessageView::parse(response) else {
            continue;
        };
        if view.header().id != id || !view.header().flags.qr {
            continue;
        }
        return Ok(view
            .answers()
            .filter(|r| r.rtype == Rtype::DS && r.owner == *apex)
            .map(|r| r.rdata.to_vec())
            .collect());
    }
}
