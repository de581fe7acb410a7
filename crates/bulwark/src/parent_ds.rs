//! Asking the parent's servers whether they serve a key's DS, the signal a
//! KSK rollover waits for before the old key may go (RFC 7583 §3.3.2, as
//! Knot's DS check does). A plain query to configured addresses, sent by
//! `bulwark_net`'s client (random ID and port, TCP when the answer is
//! truncated): no resolution, no trust in the answer beyond "the parent says
//! so" — the old key stays until the DS TTL has also passed.
//!
//! The check runs inside the signing pass, which is synchronous and holds
//! the zone table's lock (it is reached from `spawn_blocking` tasks and,
//! at start, from the main thread): making it async would turn the whole
//! signing path async for one query. So the async client is driven from
//! this blocking context through the runtime's handle instead; see
//! [`block_on`].

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bulwark_dnssec::{DigestType, ZoneKey};
use bulwark_net::client::{random_id, Client, ClientConfig};
use bulwark_proto::message::Header;
use bulwark_proto::{Class, MessageBuilder, MessageView, Name, Rdata, Rtype};
use tokio::runtime::{Handle, RuntimeFlavor};

const QUERY_TIMEOUT: Duration = Duration::from_secs(2);
/// A DS query with its question fits easily.
const QUERY_LIMIT: usize = 512;

/// Why one parent gave no usable answer.
#[derive(Debug, thiserror::Error)]
enum DsCheckError {
    #[error("{0}")]
    Net(#[from] bulwark_net::ClientError),
    #[error("cannot build the query: {0}")]
    Query(#[from] bulwark_proto::message::BuildError),
    #[error("the response is malformed: {0}")]
    Malformed(#[from] bulwark_proto::message::ParseError),
    #[error("the check could not run")]
    NotRun,
}

/// Whether any of `parents` answers the DS query for `apex` with a DS that
/// matches `key` (by tag, algorithm and SHA-256 or SHA-384 digest).
pub fn parent_serves_ds(parents: &[SocketAddr], apex: &Name, key: &ZoneKey) -> bool {
    let wanted: Vec<Vec<u8>> = [DigestType::Sha256, DigestType::Sha384]
        .into_iter()
        .map(|d| Rdata::Ds(key.ds(apex, d)).to_wire())
        .collect();
    let check = async {
        // Its own client, keeping no connection: kept connections belong to
        // the runtime that opened them, and a check is seconds apart.
        let client = Client::new(ClientConfig {
            idle_timeout: Duration::ZERO,
            max_idle_per_server: 0,
        });
        for parent in parents {
            match ask_ds(&client, *parent, apex).await {
                Ok(found) if found.iter().any(|ds| wanted.contains(ds)) => return Ok(true),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(zone = %apex, parent = %parent, error = %e, "DS check: no answer from the parent");
                }
            }
        }
        Ok(false)
    };
    match block_on(check).unwrap_or(Err(DsCheckError::NotRun)) {
        Ok(served) => served,
        Err(e) => {
            tracing::warn!(zone = %apex, error = %e, "DS check failed");
            false
        }
    }
}

/// Runs `fut` to completion from synchronous code. On the server's
/// multi-threaded runtime (a `spawn_blocking` thread, the main thread at
/// start, or even a worker) it runs through the runtime's handle:
/// `block_in_place` lends the thread to blocking work where it is a worker
/// and does nothing elsewhere. Without such a runtime (a one-off command, a
/// test on a single-threaded runtime, which cannot be blocked), it gets a
/// small runtime of its own on a thread of its own. `None` when that
/// runtime cannot start.
fn block_on<T: Send>(fut: impl Future<Output = T> + Send) -> Option<T> {
    if let Ok(handle) = Handle::try_current() {
        if handle.runtime_flavor() == RuntimeFlavor::MultiThread {
            return Some(tokio::task::block_in_place(|| handle.block_on(fut)));
        }
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                Some(runtime.block_on(fut))
            })
            .join()
            .ok()
            .flatten()
    })
}

/// The DS records for `apex` that `parent` answers with.
async fn ask_ds(
    client: &Client,
    parent: SocketAddr,
    apex: &Name,
) -> Result<Vec<Vec<u8>>, DsCheckError> {
    let mut query = Vec::with_capacity(QUERY_LIMIT);
    let mut builder = MessageBuilder::new(&mut query, QUERY_LIMIT);
    *builder.header_mut() = Header {
        id: random_id()?,
        ..Header::default()
    };
    builder.push_question(apex, Rtype::DS, Class::IN)?;
    let len = builder.finish(None)?;
    query.truncate(len);
    let response = client
        .exchange(parent, None, &query, QUERY_TIMEOUT)
        .await?
        .message;
    let view = MessageView::parse(&response)?;
    Ok(view
        .answers()
        .filter(|r| r.rtype == Rtype::DS && r.owner == *apex)
        .map(|r| r.rdata.to_vec())
        .collect())
}
