//! `session.json`: the durable record of one fieldnotes session, and the checks that decide
//! whether a record read from disk may be trusted at all.
//!
//! The fields and their order are the original extension's version 2 format (for sessions of a
//! parent; sessions bound to none are written without a version, the original's name-based
//! form, since the original refuses a version 2 record without a parent); ours adds
//! `related` (the Related files of `shepherd.md`), `shepherdsNote` (the shepherd's own note)
//! and, per note, `group` (its place in the Flow) and `error`. Keys this code does not know are kept in a flattened map and written
//! back, so a newer or foreign writer's data survives our rewrites.
//!
//! Stored absolute paths are never believed: [`SessionMetadata::validate`] accepts a record only
//! for the directory it was read from, and [`SessionMetadata::rederive_paths`] recomputes every
//! path from the project root and the directory name before a record is used or written.
//!
//! Note metadata is an open JSON map on purpose: the fieldnotes format (shared with the
//! original) lets writers add keys, and a reader must keep the ones it does not know.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::OpError;
use super::status::{Mode, NoteStatus};
use super::{
    INDEX_FILE, SESSION_METADATA_FILE, SESSION_VERSION, SESSIONS_RELATIVE, is_note_file_name,
    parse_directory_name,
};
use crate::slug::{agent_slug, is_safe_slug};

/// Lifecycle metadata attached to a note (`taskId`, `agentId`, `pane`, usage figures …), in
/// insertion order.
pub type Metadata = IndexMap<String, Value>;

/// The whole `session.json` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMetadata {
    /// `2` for the current format; absent for the original's legacy sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_session_version: Option<u32>,
    /// The parent agent session this session belongs to (parent-bound sessions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pi_session: Option<ParentBinding>,
    /// Alias of `parentPiSession.identity`, kept for the original's first draft.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pi_session_id: Option<String>,
    /// Alias of `parentPiSession.sessionFile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_file: Option<String>,
    /// The human name; named sessions are continued by exact match on it.
    pub session_name: String,
    /// The slug part of the directory name.
    pub slug: String,
    /// The number part of the directory name.
    pub ordinal: u32,
    /// `NNNN-<slug>`; must equal the directory the record was read from.
    pub directory_name: String,
    /// Canonical project root (re-derived on every write).
    #[serde(default)]
    pub project_root: String,
    /// Absolute session directory (re-derived).
    #[serde(default)]
    pub session_path: String,
    /// Session directory relative to the project root (re-derived).
    #[serde(default)]
    pub session_relative_path: String,
    /// Absolute path of `shepherd.md` (re-derived).
    #[serde(default)]
    pub moc_path: String,
    /// Absolute path of `session.json` (re-derived).
    #[serde(default)]
    pub session_metadata_path: String,
    /// Whether the session was continued after it was created.
    #[serde(default)]
    pub resumed: bool,
    /// When the session was created (ISO 8601).
    pub started_at: String,
    /// When the session last changed (ISO 8601).
    pub updated_at: String,
    /// The session status (see [`super::status::summarise`]); kept as text so a foreign
    /// writer's value is not lost.
    pub status: String,
    /// Delegation modes used so far, in order of first use.
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// Every note ever reserved, in reservation order.
    pub artifacts: Vec<ArtifactRecord>,
    /// Files and URLs attached to the session (the Related files of `shepherd.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<RelatedLink>,
    /// The shepherd's own note, once Shepherd has created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shepherds_note: Option<ShepherdsNote>,
    /// The branches its isolated sheep left, and what became of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<super::branches::BranchRecord>,
    /// Keys this code does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: IndexMap<String, Value>,
}

/// The binding of a session to one parent agent session in one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentBinding {
    /// Opaque identity of the parent session (e.g. pi's session id).
    pub identity: String,
    /// Canonical project root the binding was made in.
    pub project_root: String,
    /// When the binding was made (ISO 8601).
    pub bound_at: String,
    /// The parent's session file, for diagnostics only; never part of the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
}

/// One reserved note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRecord {
    /// `<directoryName>/<fileName>` (re-derived).
    #[serde(default)]
    pub id: String,
    /// The agent name as given.
    pub agent: String,
    /// The file-name component derived from the agent name.
    #[serde(default)]
    pub agent_slug: String,
    /// Per-agent number within the session, from 1, never reused.
    pub ordinal: u32,
    /// The note's file name in the session directory.
    pub file_name: String,
    /// Absolute path (re-derived).
    #[serde(default)]
    pub file_path: String,
    /// Path relative to the project root (re-derived).
    #[serde(default)]
    pub relative_path: String,
    /// How the delegation that owns the note runs.
    pub mode: Mode,
    /// The delegated task text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Where the note is in its life.
    pub status: NoteStatus,
    /// When the note was reserved.
    pub reserved_at: String,
    /// When its sheep started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it was finalised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// The reservation group (one delegation) the note belongs to, for the Flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The error recorded at finalisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the note was deleted. The record stays, so its ordinal and file name are never
    /// used again and the index still shows that it existed; the file is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
    /// Feedback attached to the note, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<Feedback>,
    /// Lifecycle metadata and unknown keys.
    #[serde(flatten)]
    pub metadata: Metadata,
}

/// One piece of feedback attached to a note: from the shepherd or another sheep, for the
/// note's owner and everyone who reads the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// Who gave it (`shepherd`, a sheep's display name, a person).
    pub from: String,
    /// When it was attached (ISO 8601).
    pub at: String,
    /// The feedback itself.
    pub text: String,
}

impl ArtifactRecord {
    /// The label of the sheep that owns the note (recorded as the `label` metadata key), if it
    /// has one.
    pub fn label(&self) -> Option<&str> {
        self.metadata
            .get(LABEL_KEY)
            .and_then(Value::as_str)
            .filter(|label| !label.trim().is_empty())
    }
}

/// The note metadata key holding the label of the sheep that owns the note.
pub const LABEL_KEY: &str = "label";

/// A file or URL attached to a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedLink {
    /// A URL, or a path relative to the project root with `/` separators.
    pub target: String,
    /// The link text; the target when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What a related link points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// An absolute URL (`scheme://…`).
    Url,
    /// A path relative to the project root.
    ProjectPath,
}

/// Classifies a stored related-link target: a URL, or a project-relative path with `/`
/// separators and no `.`, `..` or empty components.
pub fn check_related_target(target: &str) -> Result<TargetKind, OpError> {
    let refuse = |reason: &str| OpError::InvalidLink {
        target: target.to_owned(),
        reason: reason.to_owned(),
    };
    if target.is_empty()
        || target
            .chars()
            .any(|c| c.is_control() || c == '<' || c == '>')
    {
        return Err(refuse(
            "it is empty or holds control characters or angle brackets",
        ));
    }
    if is_url(target) {
        return Ok(TargetKind::Url);
    }
    if target.starts_with('/') || target.contains('\\') {
        return Err(refuse("a stored path must be relative to the project root"));
    }
    if target
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(refuse(
            "a stored path must not hold empty, `.` or `..` components",
        ));
    }
    Ok(TargetKind::ProjectPath)
}

/// Whether `text` is an absolute URL: `scheme://rest` with no whitespace.
pub fn is_url(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
        && !rest.is_empty()
        && !text.chars().any(char::is_whitespace)
}

/// The shepherd's note's file name in a session directory.
pub const SHEPHERDS_NOTE_FILE: &str = "shepherds-note.md";

/// The shepherd's note as `session.json` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShepherdsNote {
    /// Its file name in the session directory (always [`SHEPHERDS_NOTE_FILE`]).
    pub file_name: String,
    /// Its path relative to the project root (re-derived).
    #[serde(default)]
    pub relative_path: String,
    /// When Shepherd created it (ISO 8601).
    pub created_at: String,
}

impl ShepherdsNote {
    /// The record of a note created at `now`.
    pub fn new(now: &str) -> Self {
        Self {
            file_name: SHEPHERDS_NOTE_FILE.to_owned(),
            relative_path: String::new(),
            created_at: now.to_owned(),
        }
    }
}

/// What a session is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding<'a> {
    /// A version 2 session owned by one parent session.
    Parent {
        /// The parent's opaque identity.
        identity: &'a str,
    },
    /// A session bound to no parent, found by its name: the original's name-based form (no
    /// version), or a version 2 record without a parent that an earlier Shepherd wrote.
    Named,
    /// An unversioned record that names a parent anyway: neither a parent nor a name may claim
    /// it.
    Legacy,
}

/// Why a stored record is not trusted. Such a session is treated as absent: never selected,
/// never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

impl SessionMetadata {
    /// A fresh record for a session just allocated.
    pub fn new(
        session_name: &str,
        slug: &str,
        ordinal: u32,
        parent: Option<ParentBinding>,
        now: &str,
    ) -> Self {
        let parent_pi_session_id = parent.as_ref().map(|p| p.identity.clone());
        let parent_session_file = parent.as_ref().and_then(|p| p.session_file.clone());
        Self {
            // A session without a parent is written in the original's name-based form (no
            // version), the only one the original finds by name: it refuses a version 2 record
            // that names no parent.
            artifact_session_version: parent.is_some().then_some(SESSION_VERSION),
            parent_pi_session: parent,
            parent_pi_session_id,
            parent_session_file,
            session_name: session_name.to_owned(),
            slug: slug.to_owned(),
            ordinal,
            directory_name: super::directory_name(ordinal, slug),
            project_root: String::new(),
            session_path: String::new(),
            session_relative_path: String::new(),
            moc_path: String::new(),
            session_metadata_path: String::new(),
            resumed: false,
            started_at: now.to_owned(),
            updated_at: now.to_owned(),
            status: NoteStatus::Running.as_str().to_owned(),
            modes: Vec::new(),
            artifacts: Vec::new(),
            related: Vec::new(),
            shepherds_note: None,
            branches: Vec::new(),
            extra: IndexMap::new(),
        }
    }

    /// Parses and validates a record read from `<project_root>/.shepherd/sessions/<directory>`.
    pub fn parse(json: &str, directory: &str, project_root: &str) -> Result<Self, Malformed> {
        let record: Self = serde_json::from_str(json)
            .map_err(|err| Malformed(format!("session.json is not a valid record: {err}")))?;
        record.validate(directory, project_root)?;
        Ok(record)
    }

    /// Checks everything a stored record claims that could mislead a reader or a writer.
    pub fn validate(&self, directory: &str, project_root: &str) -> Result<(), Malformed> {
        let bad = |reason: String| Err(Malformed(reason));
        if let Some(version) = self.artifact_session_version
            && version != SESSION_VERSION
        {
            return bad(format!("unsupported artifactSessionVersion {version}"));
        }
        if self.directory_name != directory {
            return bad(format!(
                "directoryName `{}` does not match the directory `{directory}`",
                self.directory_name
            ));
        }
        match parse_directory_name(directory) {
            Some((ordinal, _)) if ordinal == self.ordinal => {}
            _ => {
                return bad(format!(
                    "ordinal {} does not match `{directory}`",
                    self.ordinal
                ));
            }
        }
        if self.session_name.trim().is_empty() || self.session_name.chars().any(char::is_control) {
            return bad(format!("unusable sessionName {:?}", self.session_name));
        }
        self.validate_binding(project_root)?;
        let mut seen = std::collections::HashSet::new();
        for artifact in &self.artifacts {
            if !is_note_file_name(&artifact.file_name) {
                return bad(format!("unsafe note file name {:?}", artifact.file_name));
            }
            if !seen.insert(artifact.file_name.as_str()) {
                return bad(format!("note `{}` is listed twice", artifact.file_name));
            }
            if artifact.agent.is_empty() || artifact.ordinal == 0 {
                return bad(format!(
                    "note `{}` has no agent or ordinal",
                    artifact.file_name
                ));
            }
        }
        for link in &self.related {
            check_related_target(&link.target)
                .map_err(|err| Malformed(format!("related link: {err}")))?;
        }
        if let Some(note) = &self.shepherds_note
            && note.file_name != SHEPHERDS_NOTE_FILE
        {
            return bad(format!("unexpected shepherd's note {:?}", note.file_name));
        }
        Ok(())
    }

    fn validate_binding(&self, project_root: &str) -> Result<(), Malformed> {
        if self.artifact_session_version.is_none() {
            return Ok(());
        }
        let alias = self.parent_pi_session_id.as_deref();
        let identity = match (&self.parent_pi_session, alias) {
            (None, None) => return Ok(()),
            (Some(binding), Some(alias)) if binding.identity != alias => {
                return Err(Malformed(
                    "parentPiSession.identity and parentPiSessionId differ".to_owned(),
                ));
            }
            (Some(binding), _) => binding.identity.as_str(),
            (None, Some(alias)) => alias,
        };
        if !is_valid_identity(identity) {
            return Err(Malformed(format!("unusable parent identity {identity:?}")));
        }
        if let Some(binding) = &self.parent_pi_session
            && binding.project_root != project_root
        {
            return Err(Malformed(format!(
                "bound to project `{}`, not `{project_root}`",
                binding.project_root
            )));
        }
        Ok(())
    }

    /// What the session is bound to. Only meaningful on a validated record.
    pub fn binding(&self) -> Binding<'_> {
        let identity = self
            .parent_pi_session
            .as_ref()
            .map(|binding| binding.identity.as_str())
            .or(self.parent_pi_session_id.as_deref());
        match (self.artifact_session_version, identity) {
            (Some(_), Some(identity)) => Binding::Parent { identity },
            (Some(_), None) | (None, None) => Binding::Named,
            (None, Some(_)) => Binding::Legacy,
        }
    }

    /// Whether a name-based lookup may continue this session: it is bound to no parent and its
    /// name matches exactly.
    pub fn continues_name(&self, name: &str) -> bool {
        self.binding() == Binding::Named && self.session_name == name
    }

    /// Recomputes every stored path from the canonical project root and the directory name,
    /// and puts a session bound to no parent in the original's name-based form: a version 2
    /// record without a parent (what earlier Shepherd versions wrote for named sessions) loses
    /// its version, so the original, which refuses such a record, finds it again.
    pub fn rederive_paths(&mut self, project_root: &str) {
        if self.binding() == Binding::Named {
            self.artifact_session_version = None;
        }
        let root = project_root.trim_end_matches('/');
        let relative = format!("{SESSIONS_RELATIVE}/{}", self.directory_name);
        let absolute = format!("{root}/{relative}");
        self.project_root = if root.is_empty() { "/" } else { root }.to_owned();
        self.moc_path = format!("{absolute}/{INDEX_FILE}");
        self.session_metadata_path = format!("{absolute}/{SESSION_METADATA_FILE}");
        for artifact in &mut self.artifacts {
            artifact.id = format!("{}/{}", self.directory_name, artifact.file_name);
            artifact.file_path = format!("{absolute}/{}", artifact.file_name);
            artifact.relative_path = format!("{relative}/{}", artifact.file_name);
            if !is_safe_slug(&artifact.agent_slug) {
                artifact.agent_slug = agent_slug(&artifact.agent);
            }
        }
        if let Some(note) = &mut self.shepherds_note {
            note.relative_path = format!("{relative}/{}", note.file_name);
        }
        self.session_path = absolute;
        self.session_relative_path = relative;
    }

    /// The record as written: pretty JSON with two-space indents and a final newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).expect("session records serialise");
        json.push('\n');
        json
    }

    /// The note stored under `file_name`.
    pub fn artifact(&self, file_name: &str) -> Option<&ArtifactRecord> {
        self.artifacts.iter().find(|a| a.file_name == file_name)
    }

    /// The note stored under `file_name`, for changing it.
    pub fn artifact_mut(&mut self, file_name: &str) -> Option<&mut ArtifactRecord> {
        self.artifacts.iter_mut().find(|a| a.file_name == file_name)
    }
}

/// Whether `identity` may bind a session: non-empty and free of control characters.
pub fn is_valid_identity(identity: &str) -> bool {
    !identity.is_empty() && !identity.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SessionMetadata {
        let mut record = SessionMetadata::new("fix", "fix", 1, None, "2025-08-14T09:30:00.000Z");
        record.rederive_paths("/repo");
        record
    }

    #[test]
    fn unknown_keys_survive_a_round_trip() {
        let mut json: Value = serde_json::from_str(&record().to_json()).unwrap();
        json["futureKey"] = serde_json::json!({"kept": true});
        let text = serde_json::to_string(&json).unwrap();
        let parsed = SessionMetadata::parse(&text, "0001-fix", "/repo").unwrap();
        assert!(
            parsed
                .to_json()
                .contains("\"futureKey\": {\n    \"kept\": true\n  }")
        );
    }

    #[test]
    fn paths_are_rederived_not_trusted() {
        let mut record = record();
        record.session_path = "/elsewhere".to_owned();
        record.rederive_paths("/moved/");
        assert_eq!(record.session_path, "/moved/.shepherd/sessions/0001-fix");
        assert_eq!(record.session_relative_path, ".shepherd/sessions/0001-fix");
        assert_eq!(
            record.moc_path,
            "/moved/.shepherd/sessions/0001-fix/shepherd.md"
        );
    }

    #[test]
    fn records_for_another_directory_or_binding_are_malformed() {
        let json = record().to_json();
        assert!(SessionMetadata::parse(&json, "0002-fix", "/repo").is_err());
        assert!(SessionMetadata::parse("{", "0001-fix", "/repo").is_err());
        let mut bound = record();
        bound.artifact_session_version = Some(SESSION_VERSION);
        bound.parent_pi_session = Some(ParentBinding {
            identity: "p\u{7}".to_owned(),
            project_root: "/repo".to_owned(),
            bound_at: bound.started_at.clone(),
            session_file: None,
        });
        assert!(bound.validate("0001-fix", "/repo").is_err());
        bound.parent_pi_session.as_mut().unwrap().identity = "p1".to_owned();
        assert!(bound.validate("0001-fix", "/repo").is_ok());
        assert!(bound.validate("0001-fix", "/other").is_err());
        assert_eq!(bound.binding(), Binding::Parent { identity: "p1" });
        assert!(!bound.continues_name("fix"));
    }
}
