//! Started as root to bind port 53, the server drops to an unprivileged user
//! (`[server] user`, `group`) once every socket is bound, so that a flaw in the
//! query path can at worst act as that user.
//!
//! The user and group are looked up when the configuration is read
//! (`config::server`), so a typo is a configuration error with its
//! `FILE:LINE:COL`, not a failure after the sockets are already open.

use std::path::Path;

use nix::unistd::{Gid, Uid};

use crate::settings::RunAs;

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
    use super::*;

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
