//! The built-in demo zone, so `bulwark serve` with no arguments shows something.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use crate::settings::{parse_origin, ZoneSpec};

pub const DEMO_ORIGIN: &str = "demo.example.";
pub const DEMO_ZONE: &str = include_str!("demo.zone");
/// The first port tried, high enough to need no privileges.
pub const DEMO_PORT: u16 = 5300;
/// Ports tried after DEMO_PORT when it is taken.
pub const DEMO_PORT_TRIES: u16 = 100;
pub const DEMO_ADDR: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The demo zone written to a private temporary file, removed when dropped. The
/// zone loader reads files, so the embedded text goes through the same path as
/// any other zone.
#[derive(Debug)]
pub struct DemoZone {
    path: PathBuf,
}

impl DemoZone {
    pub fn write() -> std::io::Result<DemoZone> {
        let path = std::env::temp_dir().join(format!("bulwark-demo-{}.zone", std::process::id()));
        // create_new (O_EXCL): never write through a file or symlink someone else
        // planted at this name in a shared temporary directory.
        let create = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
        };
        let mut f = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Left by an earlier process with the same PID.
                std::fs::remove_file(&path)?;
                create()?
            }
            r => r?,
        };
        f.write_all(DEMO_ZONE.as_bytes())?;
        f.sync_all()?;
        Ok(DemoZone { path })
    }

    pub fn spec(&self) -> Option<ZoneSpec> {
        Some(ZoneSpec::from_file(
            parse_origin(DEMO_ORIGIN).ok()?,
            self.path.clone(),
        ))
    }
}

impl Drop for DemoZone {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The demo's encrypted listeners, as bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct Encrypted {
    pub dot: Option<SocketAddr>,
    pub doh: Option<SocketAddr>,
    pub doq: Option<SocketAddr>,
    pub doh3: Option<SocketAddr>,
}

/// The lines printed once the demo server is up, ready to paste.
pub fn banner(addr: SocketAddr, encrypted: Encrypted) -> String {
    let ip = addr.ip();
    let port = addr.port();
    let mut text = format!(
        "bulwark is serving the demo zone {DEMO_ORIGIN} on {addr} (UDP and TCP). Try:\n  \
         dig @{ip} -p {port} www.demo.example A\n  \
         kdig @{ip} -p {port} +tcp mail.demo.example AAAA\n"
    );
    if let Some(d) = encrypted.dot {
        let (ip, port) = (d.ip(), d.port());
        // The certificate is made at start for `localhost` and signed by
        // itself: kdig's +tls and dig's +tls encrypt without checking it.
        text.push_str(&format!(
            "and DNS over TLS on {d} (a self-signed certificate for localhost):\n  \
             kdig @{ip} -p {port} +tls www.demo.example A\n  \
             dig @{ip} -p {port} +tls www.demo.example A\n"
        ));
    }
    if let Some(d) = encrypted.doh {
        let (ip, port) = (d.ip(), d.port());
        text.push_str(&format!(
            "and DNS over HTTPS on https://localhost:{port}/dns-query (the same certificate):\n  \
             kdig @{ip} -p {port} +https www.demo.example A\n  \
             curl -k -H 'accept: application/dns-message' \\\n    \
             'https://localhost:{port}/dns-query?dns=AAABAAABAAAAAAAAA3d3dwRkZW1vB2V4YW1wbGUAAAEAAQ' | xxd\n"
        ));
    }
    if let Some(d) = encrypted.doq {
        text.push_str(&format!(
            "and DNS over QUIC on {d} (UDP, the same certificate; kdig 3.3 or later):\n  \
             kdig @{ip} -p {port} +quic www.demo.example A\n",
            ip = d.ip(),
            port = d.port()
        ));
    }
    if let Some(d) = encrypted.doh3 {
        text.push_str(&format!(
            "and DNS over HTTPS on HTTP/3 on {d} (UDP, advertised by Alt-Svc on HTTP/2)\n"
        ));
    }
    text.push_str("Stop with Ctrl-C.\n");
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn banner_names_address_and_port_for_dig_and_kdig() {
        let b = banner("127.0.0.1:5301".parse().unwrap(), Encrypted::default());
        assert!(b.contains("dig @127.0.0.1 -p 5301 www.demo.example A"));
        assert!(b.contains("kdig @127.0.0.1 -p 5301"));
        assert!(!b.contains("+tls"));
        let b = banner(
            "127.0.0.1:5301".parse().unwrap(),
            Encrypted {
                dot: Some("127.0.0.1:8853".parse().unwrap()),
                doh: Some("127.0.0.1:8443".parse().unwrap()),
                doq: Some("127.0.0.1:8853".parse().unwrap()),
                doh3: Some("127.0.0.1:8443".parse().unwrap()),
            },
        );
        assert!(b.contains("kdig @127.0.0.1 -p 8853 +tls www.demo.example A"));
        assert!(b.contains("dig @127.0.0.1 -p 8853 +tls www.demo.example A"));
        assert!(b.contains("kdig @127.0.0.1 -p 8443 +https www.demo.example A"));
        assert!(b.contains("kdig @127.0.0.1 -p 8853 +quic www.demo.example A"));
        assert!(b.contains("HTTP/3 on 127.0.0.1:8443"));
    }

    #[test]
    fn demo_zone_file_is_written_and_removed() {
        let d = DemoZone::write().unwrap();
        let path = d.path.clone();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), DEMO_ZONE);
        assert_eq!(d.spec().unwrap().origin.to_string(), DEMO_ORIGIN);
        drop(d);
        assert!(!path.exists());
    }
}
