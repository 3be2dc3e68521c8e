//! What every command needs from the outside world, resolved once: the user's directories and
//! the current directory. Libraries receive these values; they never read the environment.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use shepherd_core::dirs::UserDirs;

use crate::error::CliError;

/// The resolved environment of one command.
#[derive(Debug, Clone)]
pub struct Context {
    pub dirs: UserDirs,
    pub cwd: PathBuf,
    /// Inside a sheep, the project its parent's herd belongs to (`SHEPHERD_PROJECT`): a sheep
    /// working elsewhere (its own git worktree, a subdirectory) still belongs to that project,
    /// so its own herds and notes land in the same fieldnotes.
    pub sheep_project: Option<PathBuf>,
}

impl Context {
    /// Reads `HOME`, `PI_CODING_AGENT_DIR`, `XDG_RUNTIME_DIR`, `XDG_STATE_HOME` and the
    /// current directory.
    pub fn from_env() -> Result<Self, CliError> {
        let uid = rustix::process::getuid().as_raw();
        let dirs = UserDirs::resolve(|name| std::env::var_os(name), uid, &std::env::temp_dir())?;
        let cwd = std::env::current_dir().map_err(|err| {
            CliError::new(
                ErrorCode::Environment,
                format!("cannot read the current directory: {err}"),
            )
        })?;
        let inside_sheep = std::env::var_os("SHEPHERD_AGENT_ID").is_some_and(|id| !id.is_empty());
        let sheep_project = std::env::var_os("SHEPHERD_PROJECT")
            .filter(|dir| inside_sheep && !dir.is_empty())
            .map(PathBuf::from);
        Ok(Self {
            dirs,
            cwd,
            sheep_project,
        })
    }

    /// `--project DIR` made absolute against the current directory; else, inside a sheep, its
    /// herd's project; else the current directory.
    pub fn project_root(&self, project: Option<&Path>) -> PathBuf {
        match (project, &self.sheep_project) {
            (Some(dir), _) => self.cwd.join(dir),
            (None, Some(dir)) => dir.clone(),
            (None, None) => self.cwd.clone(),
        }
    }
}
