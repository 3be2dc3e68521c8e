//! Finding the user's own runtime directory when `XDG_RUNTIME_DIR` is not set.
//!
//! Herds keep their brokers' sockets under `$XDG_RUNTIME_DIR/shepherd`, which a login session
//! sets for every program the user runs. An MCP host may start `shepherd mcp` without it (Codex
//! passes MCP servers a bare environment), and a server that fell back to
//! `<temp>/shepherd-<uid>` would put its herd's sockets where the user's own `shepherd` never
//! looks. So the server finds the directory the user's CLI uses: the `XDG_RUNTIME_DIR` its host
//! started with (the nearest ancestor process of this user's that has one), else
//! `/run/user/<uid>` when that is the user's private directory, as a login session makes it.
//! Only this location is read from another process: never a key (a host that keeps a key from
//! its servers means it).

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// How far up the process tree the host is looked for (the host may start the server through
/// a wrapper or two).
const ANCESTORS: usize = 8;

/// Where a runtime directory that was not in the environment was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// In the environment an ancestor process (the MCP host) started with.
    Host {
        /// That process.
        pid: u32,
    },
    /// `/run/user/<uid>`, the login session's.
    Login,
}

/// The user's runtime directory (`XDG_RUNTIME_DIR`'s value, not Shepherd's folder in it) for a
/// process whose environment has none, and where it was found.
pub fn find_user_runtime(uid: u32) -> Option<(PathBuf, Found)> {
    let ancestors = shepherd_term::process::ancestry(std::process::id(), ANCESTORS);
    for pid in ancestors.into_iter().skip(1) {
        let Some(value) = shepherd_term::process::environ_var(pid, "XDG_RUNTIME_DIR") else {
            continue;
        };
        let dir = PathBuf::from(value);
        if dir.is_absolute() && owned_dir(&dir, uid) {
            return Some((dir, Found::Host { pid }));
        }
    }
    login_runtime_dir(Path::new("/run/user"), uid).map(|dir| (dir, Found::Login))
}

/// `<base>/<uid>` when it is a directory of `uid`'s that nobody else may enter.
pub fn login_runtime_dir(base: &Path, uid: u32) -> Option<PathBuf> {
    let dir = base.join(uid.to_string());
    let meta = fs_err::metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0).then_some(dir)
}

fn owned_dir(dir: &Path, uid: u32) -> bool {
    fs_err::metadata(dir).is_ok_and(|meta| meta.is_dir() && meta.uid() == uid)
}

/// The variable a broker started for this command is given, when the command found its runtime
/// directory outside its environment.
pub fn broker_var(found: &Path) -> (String, String) {
    (
        "XDG_RUNTIME_DIR".to_owned(),
        found.to_string_lossy().into_owned(),
    )
}

/// `XDG_RUNTIME_DIR` from this process's environment, when set and not empty.
pub fn from_env() -> Option<OsString> {
    std::env::var_os("XDG_RUNTIME_DIR").filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn a_login_runtime_directory_is_the_users_own_and_private() {
        let base = tempfile::tempdir().unwrap();
        let uid = rustix::process::getuid().as_raw();
        assert_eq!(login_runtime_dir(base.path(), uid), None);
        let dir = base.path().join(uid.to_string());
        fs_err::create_dir(&dir).unwrap();
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            login_runtime_dir(base.path(), uid),
            None,
            "others may enter"
        );
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(login_runtime_dir(base.path(), uid), Some(dir));
        assert_eq!(login_runtime_dir(base.path(), uid + 1), None);
    }
}
