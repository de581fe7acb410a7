//! The socket side of systemd's readiness protocol (sd_notify(3)): one
//! datagram to the Unix socket `NOTIFY_SOCKET` names. What to say, and when,
//! is the edge's business.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Sends `message` as one datagram to the notification socket `socket` (a
/// path, or `@name` for the abstract namespace).
pub fn sd_notify(socket: &OsStr, message: &[u8]) -> io::Result<()> {
    let address = notify_address(socket)?;
    let datagram = UnixDatagram::unbound()?;
    let sent = datagram.send_to_addr(message, &address)?;
    if sent != message.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "notification datagram cut short",
        ));
    }
    Ok(())
}

/// sd_notify(3): a leading `@` names a socket in the abstract namespace; any
/// other value must be an absolute path.
fn notify_address(socket: &OsStr) -> io::Result<SocketAddr> {
    let bytes = socket.as_bytes();
    match bytes.split_first() {
        Some((b'@', name)) => SocketAddr::from_abstract_name(name),
        Some((b'/', _)) => SocketAddr::from_pathname(socket),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "NOTIFY_SOCKET is neither an absolute path nor an @abstract name",
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use std::time::Duration;

    fn received(listener: &UnixDatagram) -> String {
        listener
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 512];
        let n = listener.recv(&mut buf).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn a_message_reaches_a_socket_given_by_path() {
        let dir = std::env::temp_dir().join(format!("bulwark-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).unwrap();
        sd_notify(path.as_os_str(), b"READY=1\nMAINPID=7\n").unwrap();
        assert_eq!(received(&listener), "READY=1\nMAINPID=7\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn abstract_socket_names_start_with_an_at_sign() {
        let name = format!("bulwark-notify-test-{}", std::process::id());
        let address = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixDatagram::bind_addr(&address).unwrap();
        sd_notify(OsStr::new(&format!("@{name}")), b"STOPPING=1\n").unwrap();
        assert!(received(&listener).starts_with("STOPPING=1\n"));
    }

    #[test]
    fn relative_socket_path_is_refused() {
        let e = sd_notify(OsStr::new("notify.sock"), b"READY=1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
