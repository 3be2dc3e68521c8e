//! Approval of project agents, bound to a file's path and exact contents.
//!
//! A project definition comes from the repository, so anyone who can push to it decides what a
//! sheep started from it does with the user's permissions. Running one therefore needs the
//! user's approval, recorded per user in `<user config dir>/approvals.json` as the definition's
//! absolute path plus the sha256 of its bytes. Any edit changes the hash and asks again; moving
//! the file asks again. User and bundled definitions need no approval, and with
//! `confirmProjectAgents` off nothing does (the setting lives in the user file only, so a
//! repository cannot switch it off).

use shepherd_core::error_code::ErrorCode;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shepherd_core::agent_def::{AgentDef, AgentSource};
use shepherd_core::dirs::UserDirs;
use shepherd_core::time::{self, Timestamp};

use crate::atomic::write_json_atomic;
use crate::error::ConfigError;

/// The approvals file name inside the user config directory.
pub const APPROVALS_FILE: &str = "approvals.json";

const FORMAT_VERSION: u32 = 1;

/// Whether a definition may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// A user or bundled definition, or confirmation is off.
    NotRequired,
    /// Approved with exactly these contents at this path.
    Approved,
    /// A project definition that was never approved (at this path).
    Required,
    /// Approved once, but the file has changed since.
    Changed,
}

impl ApprovalState {
    /// Whether the definition may run.
    pub fn may_run(self) -> bool {
        matches!(self, Self::NotRequired | Self::Approved)
    }
}

impl fmt::Display for ApprovalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotRequired => "not required",
            Self::Approved => "approved",
            Self::Required => "required",
            Self::Changed => "changed since approval",
        })
    }
}

/// A project definition that may not run yet; the message says how to approve it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ApprovalRequired {
    /// The agent's name.
    pub name: String,
    /// Its file.
    pub file: PathBuf,
    /// Whether it was approved before and has changed since.
    pub changed: bool,
}

impl ApprovalRequired {
    /// The stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::ApprovalRequired
    }
}

impl fmt::Display for ApprovalRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            name,
            file,
            changed,
        } = self;
        let file = file.display();
        if *changed {
            write!(
                f,
                "Project agent {name:?} ({file}) has changed since it was approved. Review it, \
                 then run `shepherd agents approve {name}` to approve it again."
            )
        } else {
            write!(
                f,
                "Project agent {name:?} ({file}) comes from the repository and is not approved. \
                 Review it, then run `shepherd agents approve {name}`."
            )
        }
    }
}

/// One recorded approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The definition file's absolute path.
    pub path: PathBuf,
    /// sha256 of its bytes when approved.
    pub content_hash: String,
    /// The agent's name when approved (for people reading the file).
    pub name: String,
    /// When it was approved (ISO 8601, UTC).
    pub approved_at: String,
}

/// What `approve` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproveOutcome {
    /// Recorded now.
    Approved,
    /// Already approved with these contents; nothing changed.
    AlreadyApproved,
    /// Not a project definition; nothing to approve.
    NotNeeded,
}

#[derive(Debug, Serialize, Deserialize)]
struct ApprovalsFile {
    version: u32,
    approvals: Vec<Approval>,
}

/// The user's approvals, as loaded from (and saved to) the approvals file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approvals {
    file: PathBuf,
    entries: Vec<Approval>,
}

impl Approvals {
    /// The approvals file of `dirs`.
    pub fn file_path(dirs: &UserDirs) -> PathBuf {
        dirs.user_config_dir().join(APPROVALS_FILE)
    }

    /// Loads the user's approvals; none when the file does not exist yet.
    pub fn load(dirs: &UserDirs) -> Result<Self, ConfigError> {
        Self::load_from(Self::file_path(dirs))
    }

    fn load_from(file: PathBuf) -> Result<Self, ConfigError> {
        let text = match fs_err::read_to_string(&file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    file,
                    entries: Vec::new(),
                });
            }
            Err(err) => return Err(ConfigError::io(&file, err)),
        };
        let parsed: ApprovalsFile =
            serde_json::from_str(&text).map_err(|err| ConfigError::Malformed {
                path: file.clone(),
                reason: format!("not a valid approvals file ({err})"),
            })?;
        Ok(Self {
            file,
            entries: parsed.approvals,
        })
    }

    /// The recorded approvals.
    pub fn entries(&self) -> &[Approval] {
        &self.entries
    }

    /// Whether `def` may run. `confirm_project_agents` is the user's `confirmProjectAgents`.
    pub fn state(&self, def: &AgentDef, confirm_project_agents: bool) -> ApprovalState {
        if def.source != AgentSource::Project || !confirm_project_agents {
            return ApprovalState::NotRequired;
        }
        match self.entry_for(&def.file_path) {
            Some(entry) if entry.content_hash == def.content_hash => ApprovalState::Approved,
            Some(_) => ApprovalState::Changed,
            None => ApprovalState::Required,
        }
    }

    /// The check a spawn makes: `Ok` with the state when `def` may run, otherwise the error
    /// that tells the caller how to approve it.
    pub fn require(
        &self,
        def: &AgentDef,
        confirm_project_agents: bool,
    ) -> Result<ApprovalState, ApprovalRequired> {
        let state = self.state(def, confirm_project_agents);
        if state.may_run() {
            return Ok(state);
        }
        Err(ApprovalRequired {
            name: def.name.clone(),
            file: def.file_path.clone(),
            changed: state == ApprovalState::Changed,
        })
    }

    /// Records approval of `def`'s current contents, replacing an older approval of its file.
    /// Call [`Approvals::save`] to keep it.
    pub fn approve(&mut self, def: &AgentDef, now: Timestamp) -> ApproveOutcome {
        if def.source != AgentSource::Project {
            return ApproveOutcome::NotNeeded;
        }
        if self.state(def, true) == ApprovalState::Approved {
            return ApproveOutcome::AlreadyApproved;
        }
        self.entries.retain(|entry| entry.path != def.file_path);
        self.entries.push(Approval {
            path: def.file_path.clone(),
            content_hash: def.content_hash.clone(),
            name: def.name.clone(),
            approved_at: time::iso(now),
        });
        ApproveOutcome::Approved
    }

    /// Writes the approvals file atomically.
    pub fn save(&self) -> Result<(), ConfigError> {
        write_json_atomic(
            &self.file,
            &ApprovalsFile {
                version: FORMAT_VERSION,
                approvals: self.entries.clone(),
            },
        )
    }

    fn entry_for(&self, path: &Path) -> Option<&Approval> {
        self.entries.iter().find(|entry| entry.path == path)
    }
}

/// Loads the approvals and says whether `def` may run (see [`Approvals::state`]).
pub fn approval_state(
    dirs: &UserDirs,
    def: &AgentDef,
    confirm_project_agents: bool,
) -> Result<ApprovalState, ConfigError> {
    if def.source != AgentSource::Project || !confirm_project_agents {
        return Ok(ApprovalState::NotRequired);
    }
    Ok(Approvals::load(dirs)?.state(def, confirm_project_agents))
}

/// Approves `def`'s current contents and saves the approvals file (when anything changed).
pub fn approve_agent(
    dirs: &UserDirs,
    def: &AgentDef,
    now: Timestamp,
) -> Result<ApproveOutcome, ConfigError> {
    if def.source != AgentSource::Project {
        return Ok(ApproveOutcome::NotNeeded);
    }
    let _guard = crate::atomic::lock_for_update(&Approvals::file_path(dirs))?;
    let mut approvals = Approvals::load(dirs)?;
    let outcome = approvals.approve(def, now);
    if outcome == ApproveOutcome::Approved {
        approvals.save()?;
    }
    Ok(outcome)
}
