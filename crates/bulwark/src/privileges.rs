//! Started as root to bind port 53, the server drops to an unprivileged user
//! (`[server] user`, `group`) once every socket is bound, so that a flaw in the
//! query path can at worst act as that user.
//!
//! The user and group are looked up when the configuration is read, so a typo
//! is a configuration error with its `FILE:LINE:COL`, not a failure after the
//! sockets are already open.

use std::path::Path;

use nix::unistd::{Gid, Group, Uid, User};
use toml::Spanned;

use crate::defences::Locate;

/// The user and group to run as after binding, resolved to numeric ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub user: String,
    /// The group named in the configuration; `None` means the user's own group.
    pub group: Option<String>,
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// Looks up `user` (and `group`, else the user's primary group) in the
    /// system's user database. `None` when no user is configured or a name is
    /// unknown (then the problem is added, naming where it was written).
    pub fn resolve(
        user: Option<&Spanned<String>>,
        group: Option<&Spanned<String>>,
        loc: &dyn Locate,
        problems: &mut Vec<String>,
    ) -> Option<RunAs> {
        let Some(user) = user else {
            if let Some(g) = group {
                problems.push(loc.at(
                    g.span(),
                    "group: needs `user` too (the group is the one the user runs with)".to_string(),
                ));
            }
            return None;
        };
        let name = user.get_ref();
        let found = match User::from_name(name) {
            Ok(Some(u)) => Some(u),
            Ok(None) => {
                problems.push(loc.at(
                    user.span(),
                    format!("user: no user `{name}` on this system"),
                ));
                None
            }
            Err(e) => {
                problems.push(loc.at(user.span(), format!("user: cannot look up `{name}`: {e}")));
                None
            }
        };
        let gid = match group {
            None => found.as_ref().map(|u| u.gid),
            Some(g) => match Group::from_name(g.get_ref()) {
                Ok(Some(grp)) => Some(grp.gid),
                Ok(None) => {
                    problems.push(loc.at(
                        g.span(),
                        format!("group: no group `{}` on this system", g.get_ref()),
                    ));
                    None
                }
                Err(e) => {
                    problems.push(loc.at(
                        g.span(),
                        format!("group: cannot look up `{}`: {e}", g.get_ref()),
                    ));
                    None
                }
            },
        };
        let (found, gid) = (found?, gid?);
        Some(RunAs {
            user: name.clone(),
            group: group.map(|g| g.get_ref().clone()),
            uid: found.uid.as_raw(),
            gid: gid.as_raw(),
        })
    }
}

/// What dropping privileges means for a process running with effective uid `current`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Already the configured user.
    Stay,
    /// Root: switch to the configured user.
    Switch,
    /// Someone else: only root can switch users.
    Refuse,
}

fn step(current: Uid, target: Uid) -> Step {
    if current == target {
        Step::Stay
    } else if current.is_root() {
        Step::Switch
    } else {
        Step::Refuse
    }
}

/// Switches to `run_as` when running as root; a no-op when `run_as` is `None`
/// or names the user already running. Started as someone else, it is an error:
/// only root can switch users, and carrying on under the wrong identity would
/// hide a broken deployment.
///
/// `hand_over` are files the server created as root and must keep using as
/// the user (the control socket: `bulwark ctl` run as that user, or its group,
/// must be able to connect); they are given to the user and group first.
pub fn drop_privileges(run_as: Option<&RunAs>, hand_over: &[&Path]) -> anyhow::Result<()> {
    let Some(run_as) = run_as else {
        if Uid::effective().is_root() {
            tracing::warn!(
                "running as root: set [server] user to answer queries as an unprivileged user"
            );
        }
        return Ok(());
    };
    let (uid, gid) = (Uid::from_raw(run_as.uid), Gid::from_raw(run_as.gid));
    let current = Uid::effective();
    match step(current, uid) {
        Step::Stay => {
            tracing::debug!(user = %run_as.user, "already running as the configured user");
            return Ok(());
        }
        Step::Refuse => anyhow::bail!(
            "[server] user is `{}` (uid {}), but the server runs as uid {} and is not root, \
             so it cannot switch users: start it as root, or as `{}` (with CAP_NET_BIND_SERVICE \
             for port 53), or remove `user`",
            run_as.user,
            run_as.uid,
            current.as_raw(),
            run_as.user
        ),
        Step::Switch => {}
    }
    for path in hand_over {
        std::os::unix::fs::chown(path, Some(run_as.uid), Some(run_as.gid)).map_err(|e| {
            anyhow::anyhow!(
                "cannot give {} to user `{}`: {e}",
                path.display(),
                run_as.user
            )
        })?;
    }
    // Supplementary groups first, then the group, then the user: once the user
    // is no longer root it may not change its groups any more.
    nix::unistd::setgroups(&[gid])
        .map_err(|e| anyhow::anyhow!("cannot set supplementary groups to {gid}: {e}"))?;
    nix::unistd::setgid(gid).map_err(|e| anyhow::anyhow!("cannot switch to gid {gid}: {e}"))?;
    nix::unistd::setuid(uid)
        .map_err(|e| anyhow::anyhow!("cannot switch to user `{}` (uid {uid}): {e}", run_as.user))?;
    // setuid as root sets the real, effective and saved ids alike, so there is
    // no way back; make sure of it rather than trust it.
    if nix::unistd::setuid(Uid::from_raw(0)).is_ok() {
        anyhow::bail!("dropped to uid {uid} but could regain root: refusing to run");
    }
    if Uid::effective() != uid || Uid::current() != uid || Gid::effective() != gid {
        anyhow::bail!(
            "switching to uid {uid} gid {gid} did not take effect (now uid {} gid {})",
            Uid::effective(),
            Gid::effective()
        );
    }
    tracing::info!(
        user = %run_as.user,
        uid = run_as.uid,
        gid = run_as.gid,
        "dropped root privileges"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    struct At;
    impl Locate for At {
        fn at(&self, span: std::ops::Range<usize>, message: String) -> String {
            format!("f:{}: {message}", span.start)
        }
    }

    fn spanned(text: &str, at: usize) -> Spanned<String> {
        // A Spanned can only be made by deserializing; build one from TOML.
        #[derive(serde::Deserialize)]
        struct T {
            v: Spanned<String>,
        }
        let doc = format!("{}v = \"{text}\"", " ".repeat(at));
        toml::from_str::<T>(&doc).unwrap().v
    }

    #[test]
    fn root_resolves_to_uid_and_gid_zero() {
        let mut problems = Vec::new();
        let r = RunAs::resolve(Some(&spanned("root", 0)), None, &At, &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((r.uid, r.gid), (0, 0));
    }

    #[test]
    fn unknown_user_and_group_are_reported_where_written() {
        let mut problems = Vec::new();
        let r = RunAs::resolve(
            Some(&spanned("no-such-user-bulwark", 3)),
            Some(&spanned("no-such-group-bulwark", 5)),
            &At,
            &mut problems,
        );
        assert!(r.is_none());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("f:7: user: no user `no-such-user-bulwark`"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("f:9: group: no group"),
            "{problems:?}"
        );
    }

    #[test]
    fn group_without_user_is_an_error() {
        let mut problems = Vec::new();
        assert!(RunAs::resolve(None, Some(&spanned("root", 0)), &At, &mut problems).is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("group: needs `user`"), "{problems:?}");
    }

    #[test]
    fn nothing_configured_is_a_no_op() {
        assert!(drop_privileges(None, &[]).is_ok());
    }

    #[test]
    fn only_root_switches_and_the_current_user_stays() {
        let (root, nobody, other) = (Uid::from_raw(0), Uid::from_raw(65534), Uid::from_raw(1000));
        assert_eq!(step(root, nobody), Step::Switch);
        assert_eq!(step(nobody, nobody), Step::Stay);
        assert_eq!(step(root, root), Step::Stay);
        assert_eq!(step(other, nobody), Step::Refuse);
        assert_eq!(step(other, root), Step::Refuse);
    }
}
