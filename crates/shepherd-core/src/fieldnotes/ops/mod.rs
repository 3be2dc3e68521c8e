//! The changes a session record goes through, as pure transitions on [`SessionMetadata`].
//!
//! The store calls these under the session lock on a record it has just re-read, then writes
//! the result. Each transition checks its input first and changes nothing when it refuses, so
//! one refused operation in a batch leaves the record exactly as the others left it. The rules:
//! a note is `pending` when reserved, `running` once started, and finalised once with a
//! terminal status (finalising it again with the result it holds changes nothing, so that a
//! finaliser that cannot know whether it got through, such as a restarted broker, may simply
//! repeat itself; another result is refused); metadata may change at any time (also after
//! finalisation, for figures that arrive after a run settles), but never the fields the store
//! owns.

use serde::{Deserialize, Serialize};

use super::error::{MAX_LABEL, OpError};
use super::metadata::{
    ArtifactRecord, LABEL_KEY, Metadata, RelatedLink, SessionMetadata, check_related_target,
};
use super::naming::plan_note;
use super::status::{Mode, NoteStatus, summarise};

/// Keys that belong to the store and may not be set as metadata.
pub const RESERVED_METADATA_KEYS: [&str; 23] = [
    "id",
    "artifactSessionVersion",
    "session",
    "sessionName",
    "parentPiSession",
    "agent",
    "agentSlug",
    "ordinal",
    "fileName",
    "filePath",
    "relativePath",
    "mode",
    "task",
    "status",
    "reservedAt",
    "startedAt",
    "completedAt",
    "started",
    "completed",
    "group",
    "error",
    "deletedAt",
    "feedback",
];

/// A note to reserve.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedNote {
    /// The agent that will write it (any name; it is slugged for the file name).
    pub agent: String,
    /// How the delegation runs.
    pub mode: Mode,
    /// The delegated task.
    pub task: Option<String>,
    /// The delegation the note belongs to: notes reserved with the same group form one line of
    /// the Flow (a chain or a parallel run). `None` makes the note a group of its own.
    pub group: Option<String>,
    /// Initial lifecycle metadata.
    pub metadata: Metadata,
    /// Reserve the note already `running` (its sheep starts at once), saving the separate
    /// start commit.
    #[serde(default)]
    pub start: bool,
}

impl PlannedNote {
    /// A single-mode note for `agent`.
    pub fn new(agent: impl Into<String>) -> Self {
        Self {
            agent: agent.into(),
            ..Self::default()
        }
    }
}

/// Checks metadata keys before anything is applied.
pub fn check_metadata(metadata: &Metadata) -> Result<(), OpError> {
    for key in metadata.keys() {
        let mut chars = key.chars();
        let plain = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            && key.len() <= MAX_LABEL;
        if !plain || RESERVED_METADATA_KEYS.contains(&key.as_str()) {
            return Err(OpError::InvalidMetadataKey { key: key.clone() });
        }
    }
    // The label names the sheep in every index and list: only a label a sheep could carry,
    // checked as a spawn checks it (a note reserved by hand included).
    if let Some(value) = metadata.get(LABEL_KEY) {
        let checked = match value.as_str() {
            Some(text) => crate::label::validate_label(text)
                .map_err(|err| err.to_string())
                .and_then(|label| {
                    if label.as_str().is_empty() {
                        Err("it is empty".to_owned())
                    } else {
                        Ok(())
                    }
                }),
            None => Err("a label is text".to_owned()),
        };
        if let Err(reason) = checked {
            return Err(OpError::InvalidSheepLabel {
                value: value.to_string(),
                reason,
            });
        }
    }
    Ok(())
}

pub(super) fn check_label(what: &str, value: &str) -> Result<(), OpError> {
    if value.trim().is_empty()
        || value.chars().count() > MAX_LABEL
        || value.chars().any(char::is_control)
    {
        return Err(OpError::InvalidLabel {
            what: what.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// Checks a planned note before anything is applied.
pub fn check_planned(planned: &PlannedNote) -> Result<(), OpError> {
    let refuse = |reason: &str| OpError::InvalidAgent {
        agent: planned.agent.clone(),
        reason: reason.to_owned(),
    };
    if planned.agent.trim().is_empty() {
        return Err(refuse("it is empty"));
    }
    if planned.agent.chars().any(char::is_control) {
        return Err(refuse("it contains a control character"));
    }
    if planned.agent.chars().count() > MAX_LABEL {
        return Err(refuse("it is too long"));
    }
    if let Some(group) = &planned.group {
        check_label("group", group)?;
    }
    check_metadata(&planned.metadata)
}

/// Whether final `note` already holds the result that finalising it with `status`, `error`
/// (as recorded: a blank error is none) and `metadata` would record: the same status and
/// error, and every key of `metadata` recorded with that value (a `null` as absent). The
/// result is what the record holds, so a return code or a summary counts through the metadata
/// key it is recorded under; keys the note holds besides (figures or links added later) do not
/// matter. The final output is not compared: it is not part of the record, and may be replaced
/// once the note is final.
pub fn holds_result(
    note: &ArtifactRecord,
    status: NoteStatus,
    error: Option<&str>,
    metadata: &Metadata,
) -> bool {
    note.status == status
        && note.error.as_deref() == error
        && metadata.iter().all(|(key, value)| match value {
            serde_json::Value::Null => !note.metadata.contains_key(key),
            value => note.metadata.get(key) == Some(value),
        })
}

/// Sets or (for `null`) removes each key, keeping the position of keys already present.
fn merge(into: &mut Metadata, metadata: Metadata) {
    for (key, value) in metadata {
        if value.is_null() {
            into.shift_remove(&key);
        } else {
            into.insert(key, value);
        }
    }
}

impl SessionMetadata {
    /// Reserves the next note for `planned`, as `pending`. `taken` answers whether a file name is
    /// already used in the session directory.
    pub fn reserve(
        &mut self,
        planned: PlannedNote,
        taken: &dyn Fn(&str) -> bool,
        now: &str,
    ) -> Result<&ArtifactRecord, OpError> {
        check_planned(&planned)?;
        let plan = plan_note(self, &planned.agent, taken);
        if !self.modes.contains(&planned.mode) {
            self.modes.push(planned.mode);
        }
        self.artifacts.push(ArtifactRecord {
            id: format!("{}/{}", self.directory_name, plan.file_name),
            agent: planned.agent,
            agent_slug: plan.agent_slug,
            ordinal: plan.ordinal,
            file_name: plan.file_name,
            file_path: String::new(),
            relative_path: String::new(),
            mode: planned.mode,
            task: planned.task,
            status: if planned.start {
                NoteStatus::Running
            } else {
                NoteStatus::Pending
            },
            reserved_at: now.to_owned(),
            started_at: planned.start.then(|| now.to_owned()),
            completed_at: None,
            group: planned.group,
            error: None,
            deleted_at: None,
            feedback: Vec::new(),
            metadata: planned.metadata,
        });
        Ok(self.artifacts.last().expect("just pushed"))
    }

    /// A note that is part of the session and not deleted, for changing it.
    pub(super) fn note_mut(&mut self, file_name: &str) -> Result<&mut ArtifactRecord, OpError> {
        let note = self
            .artifact_mut(file_name)
            .ok_or_else(|| OpError::UnknownNote {
                note: file_name.to_owned(),
            })?;
        if note.deleted_at.is_some() {
            return Err(OpError::Deleted {
                note: note.file_name.clone(),
            });
        }
        Ok(note)
    }

    /// Marks a note `running` (recording when it started, once) and merges `metadata`.
    pub fn start(&mut self, file_name: &str, metadata: Metadata, now: &str) -> Result<(), OpError> {
        check_metadata(&metadata)?;
        let note = self.note_mut(file_name)?;
        if note.status.is_terminal() {
            return Err(OpError::AlreadyFinal {
                note: note.file_name.clone(),
                status: note.status,
            });
        }
        note.status = NoteStatus::Running;
        note.started_at.get_or_insert_with(|| now.to_owned());
        merge(&mut note.metadata, metadata);
        Ok(())
    }

    /// Records the task text a note's sheep was finally given (a planned chain step's text with
    /// `{previous}` filled in), while the note is still open.
    pub fn record_task(&mut self, file_name: &str, task: String) -> Result<(), OpError> {
        let note = self.note_mut(file_name)?;
        if note.status.is_terminal() {
            return Err(OpError::AlreadyFinal {
                note: note.file_name.clone(),
                status: note.status,
            });
        }
        note.task = Some(task);
        Ok(())
    }

    /// Merges `metadata` into a note in any status.
    pub fn update(&mut self, file_name: &str, metadata: Metadata) -> Result<(), OpError> {
        check_metadata(&metadata)?;
        merge(&mut self.note_mut(file_name)?.metadata, metadata);
        Ok(())
    }

    /// Finalises a note with a terminal status, once. Returns whether it changed: finalising
    /// a final note again with the result it holds (see [`holds_result`]) changes nothing and
    /// returns `false`; with another result it is refused with [`OpError::AlreadyFinal`].
    pub fn finalize(
        &mut self,
        file_name: &str,
        status: NoteStatus,
        error: Option<String>,
        metadata: Metadata,
        now: &str,
    ) -> Result<bool, OpError> {
        if !status.is_terminal() {
            return Err(OpError::NotTerminal { status });
        }
        check_metadata(&metadata)?;
        let error = error.filter(|text| !text.trim().is_empty());
        let note = self.note_mut(file_name)?;
        if note.status.is_terminal() {
            if holds_result(note, status, error.as_deref(), &metadata) {
                return Ok(false);
            }
            return Err(OpError::AlreadyFinal {
                note: note.file_name.clone(),
                status: note.status,
            });
        }
        note.status = status;
        note.completed_at = Some(now.to_owned());
        note.error = error;
        merge(&mut note.metadata, metadata);
        Ok(true)
    }

    /// Accepts a late final output for an already final note (its status does not change).
    pub fn update_final_output(
        &mut self,
        file_name: &str,
        metadata: Metadata,
    ) -> Result<(), OpError> {
        check_metadata(&metadata)?;
        let note = self.note_mut(file_name)?;
        if !note.status.is_terminal() {
            return Err(OpError::NotFinal {
                note: note.file_name.clone(),
                status: note.status,
            });
        }
        merge(&mut note.metadata, metadata);
        Ok(())
    }

    /// Adds a related link, or retitles the link with the same target.
    pub fn link(&mut self, target: &str, title: Option<String>) -> Result<(), OpError> {
        check_related_target(target)?;
        if let Some(title) = &title {
            check_label("title", title)?;
        }
        match self.related.iter_mut().find(|link| link.target == target) {
            Some(link) => link.title = title,
            None => self.related.push(RelatedLink {
                target: target.to_owned(),
                title,
            }),
        }
        Ok(())
    }

    /// Sets the session status explicitly (it is summarised again at the next note change).
    pub fn set_status(&mut self, status: NoteStatus) -> Result<(), OpError> {
        if status == NoteStatus::Pending {
            return Err(OpError::InvalidSessionStatus { status });
        }
        self.status = status.as_str().to_owned();
        Ok(())
    }

    /// Sets the session status from its notes (see [`summarise`]). A note whose task fell back
    /// to another sheep is left out: its task's outcome is the note that continues it.
    pub fn summarise_status(&mut self) {
        let fell_back = |note: &&ArtifactRecord| {
            note.metadata
                .get("taskStatus")
                .and_then(|s| s.as_str())
                .is_some_and(|s| s == "fell_back")
        };
        self.status = summarise(
            self.artifacts
                .iter()
                .filter(|note| !fell_back(note))
                .map(|note| note.status),
        )
        .as_str()
        .to_owned();
    }

    /// Marks the session continued: `resumed`, the parent's session file refreshed, and a
    /// finished session running again. Returns whether anything changed.
    pub fn resume(&mut self, session_file: Option<&str>) -> bool {
        let before = (
            self.resumed,
            self.parent_session_file.clone(),
            self.status.clone(),
        );
        self.resumed = true;
        if let Some(file) = session_file {
            self.parent_session_file = Some(file.to_owned());
            if let Some(binding) = &mut self.parent_pi_session {
                binding.session_file = Some(file.to_owned());
            }
        }
        let finished = self
            .status
            .parse::<NoteStatus>()
            .is_ok_and(NoteStatus::is_terminal);
        if finished {
            self.status = NoteStatus::Running.as_str().to_owned();
        }
        before
            != (
                self.resumed,
                self.parent_session_file.clone(),
                self.status.clone(),
            )
    }
}

#[cfg(test)]
mod tests;
