//! What every command needs from the outside world, resolved once: the user's directories and
//! the current directory. Libraries receive these values; they never read the environment.
//! A process an MCP host started may have to find its runtime directory outside its
//! environment ([`crate::runtime`]); the context remembers it for the broker it starts.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use shepherd_core::dirs::UserDirs;

use crate::error::CliError;
use crate::runtime::Found;

/// The resolved environment of one command.
#[derive(Debug, Clone)]
pub struct Context {
    pub dirs: UserDirs,
    pub cwd: PathBuf,
    /// Inside a sheep, the project its parent's herd belongs to (`SHEPHERD_PROJECT`): a sheep
    /// working elsewhere (its own git worktree, a subdirectory) still belongs to that project,
    /// so its own herds and notes land in the same fieldnotes.
    pub sheep_project: Option<PathBuf>,
    /// The user's runtime directory when this command found it outside its environment
    /// ([`Context::from_env_finding_runtime`]): a broker it starts is given it as
    /// `XDG_RUNTIME_DIR`, so the herd and its sheep live where the user's CLI looks.
    pub runtime_found: Option<(PathBuf, Found)>,
}

impl Context {
    /// Reads `HOME`, `PI_CODING_AGENT_DIR`, `XDG_RUNTIME_DIR`, `XDG_STATE_HOME` and the
    /// current directory.
    pub fn from_env() -> Result<Self, CliError> {
        Self::resolve(None)
    }

    /// Like [`from_env`](Self::from_env) for a process an MCP host started: without
    /// `XDG_RUNTIME_DIR` it finds the user's own runtime directory (the host's, else the login
    /// session's; see [`crate::runtime`]) instead of a second place for sockets.
    pub fn from_env_finding_runtime() -> Result<Self, CliError> {
        let uid = rustix::process::getuid().as_raw();
        let found = match crate::runtime::from_env() {
            Some(_) => None,
            None => crate::runtime::find_user_runtime(uid),
        };
        Self::resolve(found)
    }

    fn resolve(runtime_found: Option<(PathBuf, Found)>) -> Result<Self, CliError> {
        let uid = rustix::process::getuid().as_raw();
        let var = |name: &str| match (&runtime_found, name) {
            (Some((dir, _)), "XDG_RUNTIME_DIR") => Some(dir.clone().into_os_string()),
            _ => std::env::var_os(name),
        };
        let dirs = UserDirs::resolve(var, uid, &std::env::temp_dir())?;
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
            runtime_found,
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
