//! The XDP program (filter.bpf.c) on an interface, through aya: loaded,
//! told the DNS port, given each queue's socket, attached. Dropping the
//! [`Program`] detaches it; so does the process ending, since the attachment
//! is a BPF link held by this process.

use std::os::fd::RawFd;

use aya::maps::{Array, XskMap};
use aya::programs::{Xdp, XdpMode};
use aya::Ebpf;

use crate::error::NetError;

/// The object built from filter.bpf.c by scripts/build-xdp-filter.sh.
static OBJECT: &[u8] = aya::include_bytes_aligned!("filter.bpf.o");
const PROGRAM: &str = "bulwark_xdp";
const SOCKETS: &str = "BULWARK_XSKS";
const PORT: &str = "BULWARK_PORT";

/// Where the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver if it can, else generic.
    Auto,
    /// In the driver (native XDP): fails where the driver has none.
    Native,
    /// In the kernel's generic path: every driver, at a fraction of the speed.
    Generic,
}

/// The program, attached, and how.
#[derive(Debug)]
pub(crate) struct Program {
    ebpf: Ebpf,
    pub native: bool,
}

fn xdp_error(interface: &str, what: &'static str) -> impl FnOnce(String) -> NetError {
    let interface = interface.to_owned();
    move |cause| NetError::Xdp {
        interface,
        what,
        cause,
    }
}

impl Program {
    /// Loads the program and sets the port; not yet attached.
    pub(crate) fn load(interface: &str, port: u16) -> Result<Program, NetError> {
        let mut ebpf = Ebpf::load(OBJECT)
            .map_err(|e| xdp_error(interface, "loading the XDP program")(e.to_string()))?;
        {
            let map = ebpf
                .map_mut(PORT)
                .ok_or_else(|| xdp_error(interface, "finding the port map")("missing".into()))?;
            let mut ports: Array<_, u32> = Array::try_from(map)
                .map_err(|e| xdp_error(interface, "opening the port map")(e.to_string()))?;
            ports
                .set(0, u32::from(port), 0)
                .map_err(|e| xdp_error(interface, "setting the port")(e.to_string()))?;
        }
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| xdp_error(interface, "finding the XDP program")("missing".into()))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| {
                xdp_error(interface, "finding the XDP program")(e.to_string())
            })?;
        prog.load()
            .map_err(|e| xdp_error(interface, "verifying the XDP program")(verbose(&e)))?;
        Ok(Program {
            ebpf,
            native: false,
        })
    }

    /// Puts `socket` in the map for `queue`: from here its frames go to it.
    pub(crate) fn add_socket(
        &mut self,
        interface: &str,
        queue: u32,
        socket: RawFd,
    ) -> Result<(), NetError> {
        let map = self
            .ebpf
            .map_mut(SOCKETS)
            .ok_or_else(|| xdp_error(interface, "finding the socket map")("missing".into()))?;
        let mut sockets = XskMap::try_from(map)
            .map_err(|e| xdp_error(interface, "opening the socket map")(e.to_string()))?;
        sockets
            .set(queue, socket, 0)
            .map_err(|e| xdp_error(interface, "adding a socket to the map")(e.to_string()))
    }

    /// Attaches the program to `interface`.
    pub(crate) fn attach(&mut self, interface: &str, mode: AttachMode) -> Result<(), NetError> {
        let prog: &mut Xdp = self
            .ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| xdp_error(interface, "finding the XDP program")("missing".into()))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| {
                xdp_error(interface, "finding the XDP program")(e.to_string())
            })?;
        let attach = |prog: &mut Xdp, m| {
            prog.attach(interface, m)
                .map(|_| ())
                .map_err(|e| xdp_error(interface, "attaching the XDP program")(verbose(&e)))
        };
        match mode {
            AttachMode::Native => attach(prog, XdpMode::Driver)?,
            AttachMode::Generic => attach(prog, XdpMode::Skb)?,
            AttachMode::Auto => {
                if attach(prog, XdpMode::Driver).is_err() {
                    attach(prog, XdpMode::Skb)?;
                    self.native = false;
                    return Ok(());
                }
            }
        }
        self.native = mode != AttachMode::Generic;
        Ok(())
    }
}

/// An error with its causes, so a verifier's or netlink's reason shows.
fn verbose(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
