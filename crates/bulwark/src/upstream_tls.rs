//! Servers asked over TLS: forwarders (`[[resolver.forward]] tls = true`,
//! DNS over TLS) and primaries (`[remote.NAME]` with `tls_name` or
//! `tls_pin_sha256`, XoT). Each one's TLS settings are made once from the
//! configuration and looked up by address for every exchange with it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context as _;
use bulwark_net::client::{Authentication, UpstreamTls};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::settings::{TlsUpstream, SYSTEM_CA_FILE};

/// The TLS settings of every server in `upstreams`, by address. An
/// unreadable CA file is an error naming it.
pub fn prepare(upstreams: &[TlsUpstream]) -> anyhow::Result<HashMap<SocketAddr, UpstreamTls>> {
    let mut roots_by_file: HashMap<&Path, Vec<CertificateDer<'static>>> = HashMap::new();
    let mut out = HashMap::new();
    for u in upstreams {
        let auth = if u.pins.is_empty() {
            let file = u.ca_file.as_deref().unwrap_or(Path::new(SYSTEM_CA_FILE));
            let roots = match roots_by_file.get(file) {
                Some(r) => r.clone(),
                None => {
                    let r = read_roots(file)?;
                    roots_by_file.insert(file, r.clone());
                    r
                }
            };
            Authentication::Name {
                name: u.name.clone().unwrap_or_default(),
                roots,
            }
        } else {
            Authentication::Pins {
                name: u.name.clone(),
                pins: u.pins.clone(),
                digest: bulwark_crypto::sha256,
            }
        };
        let tls = UpstreamTls::new(u.address.ip(), auth)
            .with_context(|| format!("TLS to {}", u.address))?;
        out.insert(u.address, tls);
    }
    Ok(out)
}

fn read_roots(file: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let roots = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("{}: cannot read trusted root certificates", file.display()))?;
    anyhow::ensure!(
        !roots.is_empty(),
        "{}: holds no certificate (expected PEM `BEGIN CERTIFICATE` blocks)",
        file.display()
    );
    Ok(roots)
}
