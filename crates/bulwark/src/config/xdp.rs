//! `[[xdp]]`: DNS over UDP on an interface through AF_XDP, past the kernel's
//! socket layer (bulwark_net::xdp), as written and validated.

use serde::Deserialize;
use toml::Spanned;

use bulwark_net::xdp::{AttachMode, CopyMode};
use bulwark_net::XdpConfig;

use super::source::Source;

/// The XDP program's socket map has 256 entries, one per queue.
const MAX_QUEUE: u32 = 255;
/// IFNAMSIZ less the terminating NUL.
const MAX_INTERFACE_NAME: usize = 15;

/// `[[xdp]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XdpSection {
    pub interface: Spanned<String>,
    /// Default: every receive queue the interface has.
    pub queues: Option<Spanned<Vec<u32>>>,
    /// Default 53.
    pub port: Option<Spanned<u16>>,
    /// `auto` (default), `native` or `generic`.
    pub mode: Option<Spanned<String>>,
    /// `auto` (default), `on` or `off`.
    pub zero_copy: Option<Spanned<String>>,
}

/// Validates each `[[xdp]]` table.
pub fn build_xdp(sections: &[XdpSection], src: &Source<'_>, p: &mut Vec<String>) -> Vec<XdpConfig> {
    let mut out: Vec<XdpConfig> = Vec::with_capacity(sections.len());
    for s in sections {
        let name = s.interface.get_ref();
        let valid_name = !name.is_empty()
            && name.len() <= MAX_INTERFACE_NAME
            && !name.contains(['/', '\0'])
            && !name.chars().any(char::is_whitespace);
        if !valid_name {
            p.push(src.at(
                s.interface.span(),
                format!("[[xdp]] interface: `{name}` is not an interface name (1 to {MAX_INTERFACE_NAME} characters, no `/` or spaces)"),
            ));
            continue;
        }
        if out.iter().any(|x| x.interface == *name) {
            p.push(src.at(
                s.interface.span(),
                format!("[[xdp]] interface: `{name}` is given twice"),
            ));
            continue;
        }
        let queues = s.queues.as_ref().and_then(|q| {
            let list = q.get_ref();
            let problem = if list.is_empty() {
                Some("the list is empty; leave it out for every queue".to_string())
            } else if let Some(big) = list.iter().find(|&&n| n > MAX_QUEUE) {
                Some(format!("queue {big} is above {MAX_QUEUE}"))
            } else {
                list.iter()
                    .enumerate()
                    .find(|(i, n)| list.iter().take(*i).any(|m| m == *n))
                    .map(|(_, n)| format!("queue {n} is given twice"))
            };
            match problem {
                Some(why) => {
                    p.push(src.at(q.span(), format!("[[xdp]] queues: {why}")));
                    None
                }
                None => Some(list.clone()),
            }
        });
        let port = match &s.port {
            Some(port) if *port.get_ref() == 0 => {
                p.push(src.at(port.span(), "[[xdp]] port: must not be 0"));
                53
            }
            Some(port) => *port.get_ref(),
            None => 53,
        };
        let attach = match s.mode.as_ref().map(|m| (m.get_ref().as_str(), m.span())) {
            None | Some(("auto", _)) => AttachMode::Auto,
            Some(("native", _)) => AttachMode::Native,
            Some(("generic", _)) => AttachMode::Generic,
            Some((other, span)) => {
                p.push(src.at(
                    span,
                    format!(
                        "[[xdp]] mode: `{other}`: expected \"auto\", \"native\" or \"generic\""
                    ),
                ));
                AttachMode::Auto
            }
        };
        let copy = match s
            .zero_copy
            .as_ref()
            .map(|m| (m.get_ref().as_str(), m.span()))
        {
            None | Some(("auto", _)) => CopyMode::Auto,
            Some(("on", _)) => CopyMode::ZeroCopy,
            Some(("off", _)) => CopyMode::Copy,
            Some((other, span)) => {
                p.push(src.at(
                    span,
                    format!("[[xdp]] zero_copy: `{other}`: expected \"auto\", \"on\" or \"off\""),
                ));
                CopyMode::Auto
            }
        };
        out.push(XdpConfig {
            interface: name.clone(),
            queues,
            port,
            attach,
            copy,
        });
    }
    out
}
