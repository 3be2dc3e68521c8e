//! What the user configured: agent definitions, approvals and settings files.
//!
//! This is the filesystem side of what `shepherd-core` models purely. It finds agent definition
//! files in precedence order and embeds the bundled ones ([`discovery`], [`bundled`]), records
//! which repository-controlled definitions the user approved ([`approvals`]), answers a spawn's
//! "may I run this agent?" in one call ([`resolve_agent`]), and reads and writes the settings
//! files with the original extension's paths and rules ([`settings`]).
//! Everything takes its directories from [`shepherd_core::dirs::UserDirs`] and a project root,
//! never from the environment, so tests run against temporary trees. Nothing here prints:
//! problems with individual files come back as warnings in the results.

// Unit tests set up files and processes directly; the code they test keeps clippy.toml's rules.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod approvals;
mod atomic;
pub mod bundled;
pub mod discovery;
mod error;
mod resolve;
pub mod settings;

pub use approvals::{
    ApprovalRequired, ApprovalState, Approvals, ApproveOutcome, approval_state, approve_agent,
};
pub use discovery::{Discovery, DiscoveryWarning, ShadowedAgent, UnknownAgent, discover_agents};
pub use error::ConfigError;
pub use resolve::{ResolveAgentError, resolve_agent};
pub use settings::{
    LoadedSettings, SetOutcome, SetSettingError, host_def, load_hosts, load_sandbox_options,
    load_settings, set_setting,
};
