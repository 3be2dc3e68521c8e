//! Finding the session a delegation belongs to, or creating it.
//!
//! Three ways in. A parent-bound session (seed 001) belongs to one parent identity in one
//! canonical project root; only a version 2 record with exactly that binding is reused, never a
//! legacy, named or other parent's session. A named session (seed 000) is continued by exact
//! `sessionName`. A session for a task without a name is always new.
//!
//! Lookups first scan without a lock (records are replaced atomically and a binding or name
//! never changes once written, so a match found unlocked stays a match); only when nothing
//! matches is the root lock taken, the scan repeated, and a session created. Creation claims the
//! next ordinal — one above every `NNNN-` directory and every `.alloc/NNNN` token — with an
//! exclusive `mkdir` of its token, builds the directory under a temp name and renames it into
//! place whole.

use std::collections::HashSet;
use std::io;

use jiff::Timestamp;
use shepherd_core::fieldnotes::index::render_index;
use shepherd_core::fieldnotes::metadata::is_valid_identity;
use shepherd_core::fieldnotes::naming::unique_session_slug;
use shepherd_core::fieldnotes::{
    ALLOC_DIR, Binding, INDEX_FILE, ParentBinding, SESSION_METADATA_FILE, SessionMetadata,
    directory_name, parse_directory_name, parse_ordinal_token,
};
use shepherd_core::slug::{MAX_SESSION_SLUG, hash8, session_name_from_task, slugify};
use shepherd_core::time::iso;

use crate::atomic::{self, Batch, TEMP_PREFIX};
use crate::lock::{self, Scope};
use crate::{CommitStage, MAX_IDENTITY, SessionRef, Store, StoreError};

/// A session found or made for a delegation.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Its directory.
    pub session: SessionRef,
    /// Its record as written, paths re-derived.
    pub metadata: SessionMetadata,
    /// Whether an existing session was continued (`false`: created now).
    pub resumed: bool,
}

impl Store {
    /// The one session of parent `identity` in this project, created on first use. Reuse marks
    /// the session `resumed`, records `session_file` and sets a finished session running again.
    pub fn resolve_or_create_parent_session(
        &self,
        identity: &str,
        session_file: Option<&str>,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        if !is_valid_identity(identity) || identity.chars().count() > MAX_IDENTITY {
            return Err(StoreError::InvalidIdentity {
                identity: identity.to_owned(),
            });
        }
        let owned = |m: &SessionMetadata| matches!(m.binding(), Binding::Parent { identity: i } if i == identity);
        if let Some((session, _)) = self.find_valid(owned)? {
            return self.resume(&session, session_file, now);
        }
        let root = self.ensure_sessions_dir()?;
        let _lock = lock::acquire(&root, Scope::Root, self.options.lock_timeout)?;
        self.hook(CommitStage::RootLocked(&root));
        if let Some((session, _)) = self.find_valid(owned)? {
            return self.resume(&session, session_file, now);
        }
        let name = format!("orchestrator-{}", hash8(identity));
        let binding = ParentBinding {
            identity: identity.to_owned(),
            project_root: self.root_text.clone(),
            bound_at: iso(now),
            session_file: session_file.map(str::to_owned),
        };
        self.create_locked(&name, Some(binding), now)
    }

    /// The session named exactly `name` (surrounding whitespace trimmed), continued, or a new
    /// one. A bad name is refused before anything is written.
    pub fn create_or_continue_named(
        &self,
        name: &str,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        let name = shepherd_core::slug::validate_session_name(name)?;
        let named = |m: &SessionMetadata| m.continues_name(name);
        if let Some((session, _)) = self.find_valid(named)? {
            return self.resume(&session, None, now);
        }
        let root = self.ensure_sessions_dir()?;
        let _lock = lock::acquire(&root, Scope::Root, self.options.lock_timeout)?;
        self.hook(CommitStage::RootLocked(&root));
        if let Some((session, _)) = self.find_valid(named)? {
            return self.resume(&session, None, now);
        }
        self.create_locked(name, None, now)
    }

    /// A new session for a delegation without a name, named after the first words of its first
    /// task (or `delegation`). When another session already has that name, the new one is
    /// named after its own directory slug, so every name still selects exactly one session.
    pub fn create_for_task(
        &self,
        first_task: Option<&str>,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        let root = self.ensure_sessions_dir()?;
        let _lock = lock::acquire(&root, Scope::Root, self.options.lock_timeout)?;
        self.hook(CommitStage::RootLocked(&root));
        let name = session_name_from_task(first_task);
        let name = match self.find_valid(|m| m.session_name == name)? {
            Some(_) => unique_session_slug(&name, &name, &self.taken_slugs()?),
            None => name,
        };
        self.create_locked(&name, None, now)
    }

    /// Marks an existing session continued, under its lock and on a fresh read; writes only if
    /// something changed.
    fn resume(
        &self,
        session: &SessionRef,
        session_file: Option<&str>,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        let dir = self.checked_session_dir(session)?;
        // Most continuations change nothing (already resumed, still running): answer from a
        // lock-free read, so continuing a busy session does not queue behind its writers.
        let mut unchanged = self.load(session)?;
        if !unchanged.resume(session_file) {
            return Ok(Resolved {
                session: session.clone(),
                metadata: unchanged,
                resumed: true,
            });
        }
        let _lock = lock::acquire(&dir, Scope::Session, self.options.lock_timeout)?;
        self.hook(CommitStage::SessionLocked(&dir));
        let mut metadata = self.load(session)?;
        if metadata.resume(session_file) {
            atomic::sweep(&dir)?;
            metadata.updated_at = iso(now);
            let mut batch = Batch::new(&dir);
            batch.stage(SESSION_METADATA_FILE, metadata.to_json().as_bytes(), false)?;
            batch.stage(INDEX_FILE, render_index(&metadata).as_bytes(), false)?;
            batch.sync()?;
            self.hook(CommitStage::Staged(&dir));
            batch.persist()?;
            atomic::sync_dir(&dir)?;
        }
        Ok(Resolved {
            session: session.clone(),
            metadata,
            resumed: true,
        })
    }

    /// Slugs of every numbered session directory.
    fn taken_slugs(&self) -> Result<HashSet<String>, StoreError> {
        Ok(self
            .sessions()?
            .iter()
            .filter_map(|s| {
                parse_directory_name(s.directory_name()).map(|(_, slug)| slug.to_owned())
            })
            .collect())
    }

    /// Creates a session; the caller holds the root lock.
    fn create_locked(
        &self,
        name: &str,
        binding: Option<ParentBinding>,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        let root = self.sessions_dir();
        atomic::sweep(&root)?;
        let ordinal = self.claim_ordinal()?;
        let slug =
            unique_session_slug(&slugify(name, MAX_SESSION_SLUG), name, &self.taken_slugs()?);
        let session = SessionRef::new(&directory_name(ordinal, &slug)).ok_or_else(|| {
            StoreError::UnsafePath {
                path: root.join(directory_name(ordinal, &slug)),
                reason: "not a session directory name".to_owned(),
            }
        })?;
        let mut metadata = SessionMetadata::new(name, &slug, ordinal, binding, &iso(now));
        metadata.rederive_paths(&self.root_text);

        let staging = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .tempdir_in(&root)
            .map_err(|err| atomic::with_path(&err, "create a staging directory in", &root))?;
        let mut batch = Batch::new(staging.path());
        batch.stage(SESSION_METADATA_FILE, metadata.to_json().as_bytes(), true)?;
        batch.stage(INDEX_FILE, render_index(&metadata).as_bytes(), true)?;
        batch.sync()?;
        batch.persist()?;
        atomic::sync_dir(staging.path())?;
        self.hook(CommitStage::Staged(staging.path()));
        let target = self.session_dir(&session);
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            staging.path(),
            rustix::fs::CWD,
            &target,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|err| atomic::with_path(&io::Error::from(err), "create", &target))?;
        let mut staging = staging;
        staging.disable_cleanup(true);
        atomic::sync_dir(&root)?;
        tracing::debug!(session = %session, "created fieldnotes session");
        Ok(Resolved {
            session,
            metadata,
            resumed: false,
        })
    }

    /// Claims the next session number: one above every numbered directory and every
    /// reservation token, by creating its token exclusively.
    fn claim_ordinal(&self) -> Result<u32, StoreError> {
        let root = self.sessions_dir();
        let alloc = root.join(ALLOC_DIR);
        fs_err::create_dir_all(&alloc)?;
        let mut highest = 0;
        for dir in [&root, &alloc] {
            for entry in fs_err::read_dir(dir)? {
                let name = entry?.file_name();
                let name = name.to_string_lossy();
                let ordinal = match name.split_once('-') {
                    Some((digits, _)) => parse_ordinal_token(digits),
                    None => parse_ordinal_token(&name),
                };
                highest = highest.max(ordinal.unwrap_or(0));
            }
        }
        let mut candidate = highest + 1;
        loop {
            match fs_err::create_dir(alloc.join(format!("{candidate:04}"))) {
                Ok(()) => return Ok(candidate),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => candidate += 1,
                Err(err) => return Err(err.into()),
            }
        }
    }
}
