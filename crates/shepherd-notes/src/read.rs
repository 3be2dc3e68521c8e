//! Reading sessions and notes without a lock, defensively.
//!
//! Writers replace files by atomic rename, so a reader always sees a whole file. What a file
//! claims is checked before it is believed: a session counts only if its directory is a real
//! directory named `NNNN-<slug>` directly in the sessions directory and its `session.json`
//! validates for exactly that directory and project (see `SessionMetadata::validate`); every
//! path in the record is then re-derived. Anything else is reported as invalid and left alone.

use std::io;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value;
use shepherd_core::fieldnotes::context::{SheepContext, render_context_block};
use shepherd_core::fieldnotes::frontmatter::parse_frontmatter;
use shepherd_core::fieldnotes::note::final_output;
use shepherd_core::fieldnotes::{
    ArtifactRecord, INDEX_FILE, Malformed, SESSION_METADATA_FILE, SESSIONS_DIR, SHEPHERD_DIR,
    SessionMetadata, is_note_file_name,
};

use crate::{SessionRef, Store, StoreError};

/// One entry of [`Store::list_sessions`].
#[derive(Debug, Clone)]
pub enum ListedSession {
    /// A session whose record validates.
    Valid {
        /// Its directory.
        session: SessionRef,
        /// Its record, paths re-derived.
        metadata: Box<SessionMetadata>,
    },
    /// A numbered directory whose record is missing or untrustworthy; it is left untouched.
    Invalid {
        /// Its directory.
        session: SessionRef,
        /// Why it is not used.
        reason: String,
    },
}

/// One note as [`Store::read_note`] sees it.
#[derive(Debug, Clone)]
pub struct NoteView {
    /// The note's record in `session.json` (the authority), paths re-derived.
    pub record: ArtifactRecord,
    /// Absolute path of the note file.
    pub path: PathBuf,
    /// The note file's text, if it exists and is UTF-8.
    pub text: Option<String>,
    /// Its frontmatter, if it has any.
    pub frontmatter: Option<IndexMap<String, Value>>,
    /// The final output in its orchestration section, if finalised with one.
    pub final_output: Option<String>,
}

/// The session and note a note path belongs to (see [`Store::locate_note`]).
#[derive(Debug, Clone)]
pub struct LocatedNote {
    /// The store of the note's project.
    pub store: Store,
    /// The note's session.
    pub session: SessionRef,
    /// The note's record.
    pub record: ArtifactRecord,
}

impl Store {
    /// Every numbered session directory, in ordinal order (valid or not).
    pub fn sessions(&self) -> Result<Vec<SessionRef>, StoreError> {
        let entries = match fs_err::read_dir(self.sessions_dir()) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err.into()),
        };
        let mut sessions = Vec::new();
        for entry in entries {
            let entry = entry?;
            if let Some(session) = entry.file_name().to_str().and_then(SessionRef::new) {
                sessions.push(session);
            }
        }
        sessions.sort();
        Ok(sessions)
    }

    /// Reads and validates the record of `session`, with every path re-derived.
    pub fn load(&self, session: &SessionRef) -> Result<SessionMetadata, StoreError> {
        let dir = self.checked_session_dir(session)?;
        self.hook(crate::CommitStage::Loaded(&dir));
        let malformed = |reason: String| StoreError::Malformed {
            path: dir.clone(),
            reason: Malformed(reason),
        };
        let text = match fs_err::read_to_string(dir.join(SESSION_METADATA_FILE)) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(malformed(format!("it has no {SESSION_METADATA_FILE}")));
            }
            Err(err) if err.kind() == io::ErrorKind::InvalidData => {
                return Err(malformed(format!("{SESSION_METADATA_FILE} is not UTF-8")));
            }
            Err(err) => return Err(err.into()),
        };
        let mut metadata = SessionMetadata::parse(&text, &session.directory_name, &self.root_text)
            .map_err(|reason| malformed(reason.0))?;
        metadata.rederive_paths(&self.root_text);
        Ok(metadata)
    }

    /// Every session with its record, or the reason it is not used.
    pub fn list_sessions(&self) -> Result<Vec<ListedSession>, StoreError> {
        Ok(self
            .sessions()?
            .into_iter()
            .map(|session| match self.load(&session) {
                Ok(metadata) => ListedSession::Valid {
                    session,
                    metadata: Box::new(metadata),
                },
                Err(err) => ListedSession::Invalid {
                    session,
                    reason: err.to_string(),
                },
            })
            .collect())
    }

    /// The first valid session (lowest ordinal) whose record satisfies `wanted`.
    pub(crate) fn find_valid(
        &self,
        wanted: impl Fn(&SessionMetadata) -> bool,
    ) -> Result<Option<(SessionRef, SessionMetadata)>, StoreError> {
        for session in self.sessions()? {
            match self.load(&session) {
                Ok(metadata) if wanted(&metadata) => return Ok(Some((session, metadata))),
                Ok(_) | Err(StoreError::Malformed { .. } | StoreError::UnsafePath { .. }) => {}
                Err(StoreError::SessionNotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(None)
    }

    /// Finds a session by directory name (`0003-fix-login`), ordinal (`3`) or exact session
    /// name.
    pub fn find_session(&self, selector: &str) -> Result<SessionRef, StoreError> {
        let sessions = self.sessions()?;
        if let Some(session) = sessions.iter().find(|s| s.directory_name == selector) {
            return Ok(session.clone());
        }
        if let Ok(ordinal) = selector.parse::<u32>()
            && let Some(session) = sessions.iter().find(|s| s.ordinal == ordinal)
        {
            return Ok(session.clone());
        }
        let by_name = crate::SessionKey::Name(selector.to_owned());
        if let Some((session, _)) = self.lookup(&by_name)? {
            return Ok(session);
        }
        if let Some((session, _)) = self.find_valid(|m| m.session_name == selector)? {
            return Ok(session);
        }
        Err(StoreError::SessionNotFound {
            selector: selector.to_owned(),
            sessions: self.sessions_dir(),
        })
    }

    /// A note of `session` with its file's current text.
    pub fn read_note(&self, session: &SessionRef, file_name: &str) -> Result<NoteView, StoreError> {
        let metadata = self.load(session)?;
        let record = metadata.artifact(file_name).cloned().ok_or_else(|| {
            shepherd_core::fieldnotes::OpError::UnknownNote {
                note: file_name.to_owned(),
            }
        })?;
        let path = self.session_dir(session).join(&record.file_name);
        let text = read_regular_file(&path)?;
        let frontmatter = text.as_deref().and_then(parse_frontmatter);
        let output = text
            .as_deref()
            .and_then(|text| final_output(text, record.error.as_deref()));
        Ok(NoteView {
            record,
            path,
            text,
            frontmatter,
            final_output: output,
        })
    }

    /// The project, session and note that a note's path belongs to. The path must name a note
    /// listed in a valid session at `<project>/.shepherd/sessions/NNNN-<slug>/`.
    pub fn locate_note(path: &Path) -> Result<LocatedNote, StoreError> {
        let refuse = |reason: &str| StoreError::NotANote {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let file_name = path
            .file_name()
            .and_then(|name| name.to_str())
            .filter(|name| is_note_file_name(name))
            .ok_or_else(|| refuse("its file name cannot be a note's"))?;
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let dir =
            fs_err::canonicalize(parent).map_err(|_| refuse("its directory does not exist"))?;
        let name_of = |path: Option<&Path>| {
            path.and_then(Path::file_name)
                .and_then(|name| name.to_str())
                .map(str::to_owned)
        };
        let sessions = dir.parent();
        let shepherd = sessions.and_then(Path::parent);
        let project = shepherd.and_then(Path::parent);
        let layout_ok = name_of(sessions).as_deref() == Some(SESSIONS_DIR)
            && name_of(shepherd).as_deref() == Some(SHEPHERD_DIR);
        let (Some(project), true) = (project, layout_ok) else {
            return Err(refuse(
                "it is not inside <project>/.shepherd/sessions/NNNN-<slug>/",
            ));
        };
        let session = name_of(Some(&dir))
            .as_deref()
            .and_then(SessionRef::new)
            .ok_or_else(|| refuse("its directory is not a numbered session directory"))?;
        let store = Store::open(project)?;
        let metadata = store.load(&session)?;
        let record = metadata
            .artifact(file_name)
            .cloned()
            .ok_or_else(|| refuse("its session does not list it"))?;
        Ok(LocatedNote {
            store,
            session,
            record,
        })
    }

    /// The context block for the sheep that writes `note` (see
    /// `shepherd_core::fieldnotes::context`). `metadata` is the session record the note was
    /// reserved in.
    pub fn context_block(&self, metadata: &SessionMetadata, note: &ArtifactRecord) -> String {
        let earlier = metadata
            .artifacts
            .iter()
            .take_while(|other| other.file_name != note.file_name)
            .count();
        let shepherds_note = metadata
            .shepherds_note
            .as_ref()
            .map(|note| format!("{}/{}", metadata.session_path, note.file_name));
        render_context_block(&SheepContext {
            session_name: &metadata.session_name,
            directory_name: &metadata.directory_name,
            session_dir: &metadata.session_path,
            session_dir_relative: &metadata.session_relative_path,
            index_path: &metadata.moc_path,
            shepherds_note_path: shepherds_note.as_deref(),
            note_path: &note.file_path,
            note_relative: &note.relative_path,
            earlier_notes: earlier,
            resumed: metadata.resumed,
        })
    }

    /// The text of `shepherd.md` of `session`, as on disk.
    pub fn read_index(&self, session: &SessionRef) -> Result<Option<String>, StoreError> {
        read_regular_file(&self.checked_session_dir(session)?.join(INDEX_FILE))
    }
}

/// The text of a regular file; `None` when it is missing, not a regular file (a symlink is not
/// followed) or not UTF-8.
pub(crate) fn read_regular_file(path: &Path) -> Result<Option<String>, StoreError> {
    match fs_err::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(None),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    }
    match fs_err::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::InvalidData
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}
