//! The server-cookie secret: fixed from the configuration (shared by an anycast
//! set, RFC 9018 §4), or random at start and rotated in the background, the old
//! secret still validating for one more period (RFC 9018 §4.4).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bulwark_guard::{CookieSecret, ServerCookies};
use bulwark_net::Shutdown;

use crate::settings::CookieSettings;

/// `N` bytes from the kernel's CSPRNG.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The cookie state the handlers read, and how many rotations happened.
#[derive(Debug)]
pub struct CookieSecrets {
    pub current: Arc<ArcSwap<ServerCookies>>,
    pub rotations: AtomicU64,
    /// Whether the secret is random (and rotated) rather than configured.
    pub rotating: bool,
}

impl CookieSecrets {
    pub fn new(settings: &CookieSettings) -> std::io::Result<CookieSecrets> {
        let (secret, rotating) = match settings.secret {
            Some(s) => (s, false),
            None => (random_bytes()?, true),
        };
        Ok(CookieSecrets {
            current: Arc::new(ArcSwap::from_pointee(ServerCookies::new(CookieSecret(
                secret,
            )))),
            rotations: AtomicU64::new(0),
            rotating,
        })
    }

    /// Replaces the minting secret with a fresh random one.
    pub fn rotate(&self) -> std::io::Result<()> {
        let next = CookieSecret(random_bytes()?);
        let rotated = self.current.load().rotated(next);
        self.current.store(Arc::new(rotated));
        self.rotations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Rotates a random secret every `every` until shutdown.
pub async fn rotate_forever(secrets: Arc<CookieSecrets>, every: Duration, shutdown: Shutdown) {
    if !secrets.rotating {
        return;
    }
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = tokio::time::sleep(every) => {
                match secrets.rotate() {
                    Ok(()) => tracing::info!("server cookie secret rotated"),
                    Err(e) => tracing::warn!(error = %e, "cannot rotate the server cookie secret; keeping it"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rotation_keeps_the_old_secret_validating() {
        let secrets = CookieSecrets::new(&CookieSettings::default()).unwrap();
        let before = secrets.current.load().current.clone();
        secrets.rotate().unwrap();
        let after = secrets.current.load();
        assert_ne!(after.current, before);
        assert_eq!(after.previous.as_ref(), Some(&before));
        assert_eq!(secrets.rotations.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn configured_secret_is_used_and_not_rotated() {
        let settings = CookieSettings {
            secret: Some([7; 16]),
            ..CookieSettings::default()
        };
        let secrets = CookieSecrets::new(&settings).unwrap();
        assert_eq!(secrets.current.load().current, CookieSecret([7; 16]));
        assert!(!secrets.rotating);
    }
}
