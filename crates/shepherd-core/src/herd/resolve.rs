//! Short names for sheep and tasks, for people at the command line.
//!
//! Every id in a herd starts with the same `shepherd-agent-<herd>-` (or `-task-`), so a person
//! typing one needs only a few characters of its random part, as with commits in git or jj; a
//! sheep may also be named by its display name (`worker: review`) or, when only one sheep has
//! it, its label. A name that fits several is refused with the candidates listed, never
//! guessed. The model-facing tools keep taking exact ids, as the original did: a model copies
//! ids, it does not abbreviate them.

use super::{Herd, HerdError};
use crate::ids::{AgentId, TaskId};

/// How many candidates an ambiguity error lists.
const LISTED: usize = 8;

/// What a short name resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved<T> {
    /// Exactly one match.
    One(T),
    /// Nothing in this herd is called that: the caller passes the text on unchanged, so the
    /// request fails with its own, more specific error.
    NoMatch,
}

/// The random part of an id: what follows `shepherd-<kind>-<namespace>-`.
fn random_part<'a>(id: &'a str, namespace: &str, kind: &str) -> &'a str {
    id.strip_prefix("shepherd-")
        .and_then(|rest| rest.strip_prefix(kind))
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix('-'))
        .unwrap_or(id)
}

/// Whether `text` abbreviates `id`: a prefix of the whole id or of its random part.
fn abbreviates(text: &str, id: &str, namespace: &str, kind: &str) -> bool {
    !text.is_empty() && (id.starts_with(text) || random_part(id, namespace, kind).starts_with(text))
}

fn ambiguous(text: &str, what: &str, candidates: &[String]) -> HerdError {
    let mut listed: Vec<&str> = candidates.iter().map(String::as_str).take(LISTED).collect();
    if candidates.len() > LISTED {
        listed.push("…");
    }
    HerdError::new(
        "ambiguous_id",
        format!(
            "`{text}` matches {} {what}: {}; give more of the id",
            candidates.len(),
            listed.join(", ")
        ),
    )
}

impl Herd {
    /// The sheep `text` names: its exact id, its display name, its label when only one sheep
    /// has it, or a unique prefix of its id or of the id's random part.
    pub fn resolve_sheep(&self, text: &str) -> Result<Resolved<AgentId>, HerdError> {
        let text = text.trim();
        if let Some((id, _)) = AgentId::parse(text).and_then(|id| self.sheep.get_key_value(&id)) {
            return Ok(Resolved::One(id.clone()));
        }
        // Names are reused once a sheep is closed: the one still running under a name is
        // meant, or, when none is, the latest that carried it.
        let named = self.by_name(|s| s.display_name() == text);
        if let [only] = named.as_slice() {
            return Ok(Resolved::One((*only).clone()));
        }
        let labelled = self.by_name(|s| !s.label.as_str().is_empty() && s.label.as_str() == text);
        if named.is_empty()
            && let [only] = labelled.as_slice()
        {
            return Ok(Resolved::One((*only).clone()));
        }
        let prefixed: Vec<&AgentId> = self
            .sheep
            .keys()
            .filter(|id| abbreviates(text, id.as_str(), &self.namespace, "agent"))
            .collect();
        match prefixed.as_slice() {
            [only] => Ok(Resolved::One((*only).clone())),
            [] if named.len() + labelled.len() > 1 => {
                let candidates: Vec<String> = named
                    .iter()
                    .chain(&labelled)
                    .map(|id| self.describe_sheep(id))
                    .collect();
                Err(ambiguous(text, "sheep", &candidates))
            }
            [] => Ok(Resolved::NoMatch),
            many => {
                let candidates: Vec<String> =
                    many.iter().map(|id| self.describe_sheep(id)).collect();
                Err(ambiguous(text, "sheep", &candidates))
            }
        }
    }

    /// The task `text` names: its exact id or a unique prefix of its id or of its random part.
    pub fn resolve_task(&self, text: &str) -> Result<Resolved<TaskId>, HerdError> {
        let text = text.trim();
        if let Some((id, _)) = TaskId::parse(text).and_then(|id| self.tasks.get_key_value(&id)) {
            return Ok(Resolved::One(id.clone()));
        }
        let prefixed: Vec<&TaskId> = self
            .tasks
            .keys()
            .filter(|id| abbreviates(text, id.as_str(), &self.namespace, "task"))
            .collect();
        match prefixed.as_slice() {
            [] => Ok(Resolved::NoMatch),
            [only] => Ok(Resolved::One((*only).clone())),
            many => {
                let candidates: Vec<String> = many
                    .iter()
                    .map(|id| {
                        let owner = self
                            .tasks
                            .get(*id)
                            .and_then(|t| self.sheep.get(&t.agent_id))
                            .map(super::Sheep::display_name)
                            .unwrap_or_default();
                        format!("{id} ({owner})")
                    })
                    .collect();
                Err(ambiguous(text, "tasks", &candidates))
            }
        }
    }

    /// The sheep a name fits: those still running with it, else the latest that had it.
    fn by_name(&self, fits: impl Fn(&super::Sheep) -> bool) -> Vec<&AgentId> {
        let fitting: Vec<&super::Sheep> = self.sheep.values().filter(|s| fits(s)).collect();
        let live: Vec<&AgentId> = fitting
            .iter()
            .filter(|s| s.holds_resources())
            .map(|s| &s.id)
            .collect();
        if live.is_empty() {
            fitting
                .iter()
                .max_by_key(|s| s.created_at)
                .map(|s| &s.id)
                .into_iter()
                .collect()
        } else {
            live
        }
    }

    fn describe_sheep(&self, id: &AgentId) -> String {
        let name = self
            .sheep
            .get(id)
            .map(super::Sheep::display_name)
            .unwrap_or_default();
        format!("{name} ({id})")
    }
}
