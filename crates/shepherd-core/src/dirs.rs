//! Where Shepherd keeps things on a user's machine, resolved from environment values.
//!
//! Resolution is pure: the binary hands in a lookup function over its environment, so tests and
//! users isolate Shepherd with `HOME`, `PI_CODING_AGENT_DIR`, `XDG_RUNTIME_DIR` and
//! `XDG_STATE_HOME` alone. The layout keeps the original extension's user files where its users
//! already have them (`<pi agent dir>/pi-shepherd/config.json`), runtime sockets in a private
//! per-user runtime directory, and the broker's journal under the user's state directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The directories Shepherd uses for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDirs {
    /// The user's home directory (`$HOME`).
    pub home: PathBuf,
    /// pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub pi_agent_dir: PathBuf,
    /// Private runtime directory for broker sockets: `$XDG_RUNTIME_DIR/shepherd`, else
    /// `<temp>/shepherd-<uid>`.
    pub runtime_dir: PathBuf,
    /// Durable per-user state (broker journals, sheep logs): `$XDG_STATE_HOME/shepherd`, else
    /// `~/.local/state/shepherd`.
    pub state_dir: PathBuf,
}

/// Why the directories could not be resolved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DirsError {
    /// `HOME` is unset or empty.
    #[error("HOME is not set; Shepherd needs a home directory (set HOME to an absolute path)")]
    NoHome,
    /// A variable holds a relative path.
    #[error("{name} must be an absolute path, got `{value}`")]
    NotAbsolute {
        /// The environment variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
}

impl UserDirs {
    /// Resolves the directories from environment values.
    ///
    /// `var` looks up an environment variable, `uid` is the real user id (for the runtime
    /// fallback) and `temp_dir` is the system temporary directory.
    pub fn resolve(
        var: impl Fn(&str) -> Option<OsString>,
        uid: u32,
        temp_dir: &Path,
    ) -> Result<Self, DirsError> {
        let non_empty = |name: &str| var(name).filter(|value| !value.is_empty());
        let home = PathBuf::from(non_empty("HOME").ok_or(DirsError::NoHome)?);
        absolute("HOME", &home)?;
        let pi_agent_dir = match non_empty("PI_CODING_AGENT_DIR") {
            Some(value) => {
                let path = expand_tilde(&PathBuf::from(value), &home);
                absolute("PI_CODING_AGENT_DIR", &path)?;
                path
            }
            None => home.join(".pi").join("agent"),
        };
        let runtime_dir = match non_empty("XDG_RUNTIME_DIR") {
            Some(value) => {
                let path = PathBuf::from(value);
                absolute("XDG_RUNTIME_DIR", &path)?;
                path.join("shepherd")
            }
            None => temp_dir.join(format!("shepherd-{uid}")),
        };
        let state_dir = match non_empty("XDG_STATE_HOME") {
            Some(value) => {
                let path = PathBuf::from(value);
                absolute("XDG_STATE_HOME", &path)?;
                path.join("shepherd")
            }
            None => home.join(".local").join("state").join("shepherd"),
        };
        Ok(Self {
            home,
            pi_agent_dir,
            runtime_dir,
            state_dir,
        })
    }

    /// `<pi agent dir>/pi-shepherd`: the user's Shepherd files (settings, approvals, pane
    /// registry), shared with the original extension.
    pub fn user_config_dir(&self) -> PathBuf {
        self.pi_agent_dir.join("pi-shepherd")
    }

    /// `<pi agent dir>/agents`: the user's own agent definitions.
    pub fn pi_user_agents_dir(&self) -> PathBuf {
        self.pi_agent_dir.join("agents")
    }

    /// `~/.agents/agents`: agent definitions shared between harnesses.
    pub fn shared_user_agents_dir(&self) -> PathBuf {
        self.home.join(".agents").join("agents")
    }
}

fn absolute(name: &'static str, path: &Path) -> Result<(), DirsError> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(DirsError::NotAbsolute {
            name,
            value: path.display().to_string(),
        })
    }
}

fn expand_tilde(path: &Path, home: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(vars: &[(&str, &str)]) -> Result<UserDirs, DirsError> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        UserDirs::resolve(|name| map.get(name).cloned(), 1000, Path::new("/tmp"))
    }

    #[test]
    fn defaults_follow_home() {
        let dirs = resolve(&[("HOME", "/home/u")]).unwrap();
        assert_eq!(dirs.pi_agent_dir, PathBuf::from("/home/u/.pi/agent"));
        assert_eq!(dirs.runtime_dir, PathBuf::from("/tmp/shepherd-1000"));
        assert_eq!(
            dirs.state_dir,
            PathBuf::from("/home/u/.local/state/shepherd")
        );
        assert_eq!(
            dirs.user_config_dir(),
            PathBuf::from("/home/u/.pi/agent/pi-shepherd")
        );
    }

    #[test]
    fn overrides_are_honoured() {
        let dirs = resolve(&[
            ("HOME", "/home/u"),
            ("PI_CODING_AGENT_DIR", "~/agent"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("XDG_STATE_HOME", "/state"),
        ])
        .unwrap();
        assert_eq!(dirs.pi_agent_dir, PathBuf::from("/home/u/agent"));
        assert_eq!(dirs.runtime_dir, PathBuf::from("/run/user/1000/shepherd"));
        assert_eq!(dirs.state_dir, PathBuf::from("/state/shepherd"));
    }

    #[test]
    fn missing_home_and_relative_paths_are_errors() {
        assert_eq!(resolve(&[]), Err(DirsError::NoHome));
        assert!(matches!(
            resolve(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "run")]),
            Err(DirsError::NotAbsolute {
                name: "XDG_RUNTIME_DIR",
                ..
            })
        ));
    }
}
