//! The agent lookup a spawn makes: the named definition, in the scope the settings choose,
//! cleared to run.
//!
//! A spawn may not pick its own scope or skip approval (the original dropped such arguments),
//! so both come from the settings: `agentScope`, `includeBundledAgents` and the user's
//! `confirmProjectAgents`. Callers with a person at hand can catch
//! [`ResolveAgentError::NotApproved`], ask, record the approval with
//! [`crate::approvals::approve_agent`] and try again; callers without one pass the error on,
//! and its message says how to approve.

use shepherd_core::error_code::ErrorCode;
use std::path::Path;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::dirs::UserDirs;
use shepherd_core::settings::EffectiveSettings;

use crate::approvals::{ApprovalRequired, Approvals};
use crate::discovery::{UnknownAgent, discover_agents};
use crate::error::ConfigError;

/// Why a spawn cannot use the agent it asked for.
#[derive(Debug, thiserror::Error)]
pub enum ResolveAgentError {
    /// No definition of that name in the configured scope.
    #[error(transparent)]
    Unknown(#[from] UnknownAgent),
    /// A project definition that is not approved as it is now.
    #[error(transparent)]
    NotApproved(#[from] ApprovalRequired),
    /// The approvals file could not be read.
    #[error(transparent)]
    Approvals(#[from] ConfigError),
}

impl ResolveAgentError {
    /// The stable machine-readable code (`unknown_agent`, `approval_required`, …).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unknown(err) => err.code(),
            Self::NotApproved(err) => err.code(),
            Self::Approvals(err) => err.code(),
        }
    }
}

/// Finds `name` in the scope `settings` choose, and checks that it may run.
pub fn resolve_agent(
    dirs: &UserDirs,
    project_root: &Path,
    settings: &EffectiveSettings,
    name: &str,
) -> Result<AgentDef, ResolveAgentError> {
    let discovery = discover_agents(
        dirs,
        project_root,
        settings.agent_scope,
        settings.include_bundled_agents,
    );
    let def = discovery.get(name)?;
    if def.is_repository_controlled() && settings.confirm_project_agents {
        Approvals::load(dirs)?.require(def, true)?;
    }
    Ok(def.clone())
}
