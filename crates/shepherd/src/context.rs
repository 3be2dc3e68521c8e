//! What every command needs from the outside world, resolved once: the user's directories and
//! the current directory. Libraries receive these values; they never read the environment.

use std::path::{Path, PathBuf};

use shepherd_core::dirs::UserDirs;

use crate::error::CliError;

/// The resolved environment of one command.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub(crate) dirs: UserDirs,
    pub(crate) cwd: PathBuf,
}

impl Context {
    /// Reads `HOME`, `PI_CODING_AGENT_DIR`, `XDG_RUNTIME_DIR`, `XDG_STATE_HOME` and the
    /// current directory.
    pub(crate) fn from_env() -> Result<Self, CliError> {
        let uid = rustix::process::getuid().as_raw();
        let dirs = UserDirs::resolve(|name| std::env::var_os(name), uid, &std::env::temp_dir())?;
        let cwd = std::env::current_dir().map_err(|err| {
            CliError::new(
                "environment",
                format!("cannot read the current directory: {err}"),
            )
        })?;
        Ok(Self { dirs, cwd })
    }

    /// `--project DIR` made absolute against the current directory, or the current directory.
    pub(crate) fn project_root(&self, project: Option<&Path>) -> PathBuf {
        match project {
            Some(dir) => self.cwd.join(dir),
            None => self.cwd.clone(),
        }
    }
}
