//! Herd-mates: what one sheep may see of the others, so it can message the right one.
//!
//! A sheep sees who is in its herd — each sheep's id, display name, agent definition, what runs
//! it and its state, and which entry is itself — and nothing of the parent's business: no task
//! texts, questions, notes, directories, panes, output or costs. Those stay the parent's, as
//! the original kept them; a sheep that needs to know what a herd-mate is doing can ask it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Herd;
use super::model::Phase;
use crate::ids::AgentId;

/// One sheep as a herd-mate sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HerdMate {
    /// Its id: what `tell` and `shepherd_message` take (its display name works too).
    pub agent_id: AgentId,
    /// `<agent>: <label>` or `<agent>`.
    pub display_name: String,
    /// Its agent definition.
    pub agent: String,
    /// Its label.
    pub label: crate::label::Label,
    /// What runs it: `command`, `pi` or another coding agent's harness.
    pub runtime: crate::harness::Runtime,
    /// `starting`, `idle`, `working`, `done`, `blocked`, `failed`, `exited` or `closing`.
    pub state: String,
    /// When its current state began (ms).
    pub since: i64,
    /// Whether this entry is the sheep that asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_self: bool,
}

impl Herd {
    /// Every sheep that is not closed, in spawn order, as `me` may see them.
    pub fn mates_view(&self, me: &AgentId, now: i64) -> Vec<HerdMate> {
        self.sheep
            .values()
            .filter(|sheep| sheep.phase != Phase::Closed)
            .map(|sheep| {
                let status = self.status_of(sheep, now);
                HerdMate {
                    agent_id: sheep.id.clone(),
                    display_name: status.display_name,
                    agent: status.agent,
                    label: status.label,
                    runtime: status.runtime,
                    state: status.state,
                    since: status.since,
                    is_self: &sheep.id == me,
                }
            })
            .collect()
    }
}

impl Herd {
    /// The target a sheep's message names, as `send` takes it: `shepherd`, `parent` and agent
    /// ids as they are; a herd-mate's display name, or a label only one open sheep has, as
    /// that sheep's id. A sheep knows its herd-mates by name (`worker: review`); the id is
    /// what routes.
    pub fn mate_target(&self, text: &str) -> Result<String, super::HerdError> {
        let text = text.trim();
        if crate::ids::Participant::parse(text).is_some() {
            return Ok(text.to_owned());
        }
        let open = || self.sheep.values().filter(|s| s.phase != Phase::Closed);
        let named: Vec<&AgentId> = open()
            .filter(|s| s.display_name() == text)
            .map(|s| &s.id)
            .collect();
        let labelled: Vec<&AgentId> = open()
            .filter(|s| !s.label.as_str().is_empty() && s.label.as_str() == text)
            .map(|s| &s.id)
            .collect();
        match (named.as_slice(), labelled.as_slice()) {
            ([only], _) | ([], [only]) => Ok(only.to_string()),
            _ => Err(super::HerdError::new(
                crate::error_code::ErrorCode::InvalidTarget,
                format!(
                    "`{text}` is not `shepherd`, a herd-mate's agent id or the display name of \
                     one open herd-mate; `shepherd herd` (the shepherd_herd tool) lists them"
                ),
            )),
        }
    }
}
