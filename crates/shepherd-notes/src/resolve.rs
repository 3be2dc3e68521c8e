//! Finding the session a delegation belongs to, or creating it.
//!
//! Three ways in. A parent-bound session (seed 001) belongs to one parent identity in one
//! canonical project root; only a version 2 record with exactly that binding is reused, never a
//! legacy, named or other parent's session. A named session (seed 000) is continued by exact
//! `sessionName`. A session for a task without a name is always new.
//!
//! Lookups first ask the binding index (see `bindings`) and believe its answer only once the
//! session's own record confirms it (records are replaced atomically and a binding or name
//! never changes once written, so a match read unlocked stays a match); when it has no answer,
//! or a wrong one, the root lock is taken and every session read — indexing what is found —
//! and only if nothing matches is a session created. [`Store::reserve_in`] goes further and
//! confirms the index's answer inside the commit that uses it. Creation claims the
//! next ordinal — one above every `NNNN-` directory and every `.alloc/NNNN` token — with an
//! exclusive `mkdir` of its token, builds the directory under a temp name and renames it into
//! place whole.

use std::collections::HashSet;
use std::io;

use jiff::Timestamp;
use shepherd_core::fieldnotes::index::render_index;
use shepherd_core::fieldnotes::metadata::is_valid_identity;
use shepherd_core::fieldnotes::naming::unique_session_slug;
use shepherd_core::fieldnotes::ops::check_planned;
use shepherd_core::fieldnotes::shepherds_note::render_new as render_new_note;
use shepherd_core::fieldnotes::{
    ALLOC_DIR, ArtifactRecord, INDEX_FILE, OpError, ParentBinding, PlannedNote,
    SESSION_METADATA_FILE, SHEPHERDS_NOTE_FILE, SessionMetadata, directory_name,
    parse_directory_name, parse_ordinal_token,
};
use shepherd_core::slug::{MAX_SESSION_SLUG, hash8, session_name_from_task, slugify};
use shepherd_core::time::iso;

use crate::atomic::{self, Batch, TEMP_PREFIX};
use crate::lock::{self, Scope};
use crate::{
    Applied, CommitStage, ListedSession, MAX_IDENTITY, NoteOp, NoteOpOutcome, SessionKey,
    SessionMiss, SessionRef, Store, StoreError,
};

/// What [`Store::reserve_in`] did.
#[derive(Debug, Clone)]
pub struct ReservedIn {
    /// The session the notes are in.
    pub session: SessionRef,
    /// Its name.
    pub session_name: String,
    /// Whether an existing session was continued (`false`: created now).
    pub resumed: bool,
    /// The notes, as committed, in input order.
    pub notes: Vec<ArtifactRecord>,
}

/// What [`Store::apply_in`] did.
#[derive(Debug, Clone)]
pub struct AppliedIn {
    /// The session the operations went to.
    pub session: SessionRef,
    /// Its name.
    pub session_name: String,
    /// Whether an existing session was continued (`false`: created now).
    pub resumed: bool,
    /// One result per operation, in order.
    pub outcomes: Vec<Result<NoteOpOutcome, OpError>>,
}

/// A parent identity checked and made a key.
fn parent_key(identity: &str) -> Result<SessionKey, StoreError> {
    if !is_valid_identity(identity) || identity.chars().count() > MAX_IDENTITY {
        return Err(StoreError::InvalidIdentity {
            identity: identity.to_owned(),
        });
    }
    Ok(SessionKey::Parent(identity.to_owned()))
}

/// `key` with its identity or name checked (a name trimmed).
fn checked_key(key: &SessionKey) -> Result<SessionKey, StoreError> {
    Ok(match key {
        SessionKey::Parent(identity) => parent_key(identity)?,
        SessionKey::Name(name) => {
            SessionKey::Name(shepherd_core::slug::validate_session_name(name)?.to_owned())
        }
    })
}

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
        let key = parent_key(identity)?;
        if let Some(found) = self.lookup(&key)? {
            return self.resume(found, session_file, now);
        }
        let root = self.ensure_sessions_dir()?;
        let _lock = lock::acquire(&root, Scope::Root, self.options.lock_timeout)?;
        self.hook(CommitStage::RootLocked(&root));
        if let Some(found) = self.scan_for(&key)? {
            return self.resume(found, session_file, now);
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
        let key = SessionKey::Name(name.to_owned());
        if let Some(found) = self.lookup(&key)? {
            return self.resume(found, None, now);
        }
        let root = self.ensure_sessions_dir()?;
        let _lock = lock::acquire(&root, Scope::Root, self.options.lock_timeout)?;
        self.hook(CommitStage::RootLocked(&root));
        if let Some(found) = self.scan_for(&key)? {
            return self.resume(found, None, now);
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

    /// Reserves `planned` notes in the session `key` selects, creating it on first use, as one
    /// commit whenever the binding index knows the session (see [`Store::apply_in`]).
    pub fn reserve_in(
        &self,
        key: &SessionKey,
        session_file: Option<&str>,
        planned: Vec<PlannedNote>,
        now: Timestamp,
    ) -> Result<ReservedIn, StoreError> {
        for note in &planned {
            check_planned(note)?;
        }
        let ops = planned.into_iter().map(NoteOp::Reserve).collect();
        let applied = self.apply_in(key, session_file, ops, now, |session, ops| {
            self.apply(session, ops, now)
        })?;
        let mut notes = Vec::with_capacity(applied.outcomes.len());
        for outcome in applied.outcomes {
            match outcome? {
                NoteOpOutcome::Note(record) => notes.push(*record),
                other => unreachable!("a reservation yields a note, not {other:?}"),
            }
        }
        Ok(ReservedIn {
            session: applied.session,
            session_name: applied.session_name,
            resumed: applied.resumed,
            notes,
        })
    }

    /// Applies `ops` in the session `key` selects, creating it on first use, committing with
    /// `commit` (this store's [`Store::apply`], or a broker's lane that ends in it). Whenever
    /// the binding index knows the session this is one commit: the commit itself checks, under
    /// the session lock, that the session is still the one `key` selects, continues it and
    /// applies `ops` ([`NoteOp::Continue`]), so finding the session costs one small read.
    /// Otherwise (first use, or a stale index) the session is resolved the long way first.
    pub fn apply_in<E: From<StoreError> + SessionMiss>(
        &self,
        key: &SessionKey,
        session_file: Option<&str>,
        ops: Vec<NoteOp>,
        now: Timestamp,
        mut commit: impl FnMut(&SessionRef, Vec<NoteOp>) -> Result<Applied, E>,
    ) -> Result<AppliedIn, E> {
        let key = checked_key(key)?;
        if let Some(session) = self.indexed(&key) {
            let mut continued = vec![NoteOp::Continue {
                key: key.clone(),
                session_file: session_file.map(str::to_owned),
                guards: Some(ops.len()),
            }];
            continued.extend(ops.iter().cloned());
            match commit(&session, continued) {
                Ok(applied) => {
                    let mut outcomes = applied.outcomes.into_iter();
                    match outcomes.next() {
                        Some(Ok(NoteOpOutcome::Continued { session_name })) => {
                            return Ok(AppliedIn {
                                session,
                                session_name,
                                resumed: true,
                                outcomes: outcomes.collect(),
                            });
                        }
                        Some(Err(OpError::OtherSession { .. })) => {}
                        Some(Err(err)) => return Err(StoreError::from(err).into()),
                        Some(Ok(other)) => {
                            unreachable!("continuing yields Continued, not {other:?}")
                        }
                        None => unreachable!("one outcome per operation"),
                    }
                }
                Err(err) if err.session_missing() => {}
                Err(err) => return Err(err),
            }
        }
        let resolved = match &key {
            SessionKey::Parent(identity) => {
                self.resolve_or_create_parent_session(identity, session_file, now)?
            }
            SessionKey::Name(name) => self.create_or_continue_named(name, now)?,
        };
        let applied = commit(&resolved.session, ops)?;
        Ok(AppliedIn {
            session: resolved.session,
            session_name: resolved.metadata.session_name,
            resumed: resolved.resumed,
            outcomes: applied.outcomes,
        })
    }

    /// The session `key` selects, when one exists: nothing is created, continued or locked.
    /// A session directory appears with the first note reserved in it, so this is what a spawn
    /// reports before its herd has delegated anything.
    pub fn existing_session(&self, key: &SessionKey) -> Result<Option<SessionRef>, StoreError> {
        let key = checked_key(key)?;
        if let Some((session, _)) = self.lookup(&key)? {
            return Ok(Some(session));
        }
        Ok(self.scan_for(&key)?.map(|(session, _)| session))
    }

    /// The session the index names for `key`, if its record (read now) confirms it.
    pub(crate) fn lookup(
        &self,
        key: &SessionKey,
    ) -> Result<Option<(SessionRef, SessionMetadata)>, StoreError> {
        let Some(session) = self.indexed(key) else {
            return Ok(None);
        };
        match self.load(&session) {
            Ok(metadata) if key.matches(&metadata) => Ok(Some((session, metadata))),
            Ok(_)
            | Err(
                StoreError::Malformed { .. }
                | StoreError::UnsafePath { .. }
                | StoreError::SessionNotFound { .. },
            ) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The first valid session (lowest ordinal) `key` selects, by reading every session; every
    /// valid session met on the way is (re)indexed. A caller that creates the session on a
    /// miss holds the root lock; a reader need not, since the index is only a hint.
    fn scan_for(
        &self,
        key: &SessionKey,
    ) -> Result<Option<(SessionRef, SessionMetadata)>, StoreError> {
        let mut found = None;
        for listed in self.list_sessions()? {
            let ListedSession::Valid { session, metadata } = listed else {
                continue;
            };
            if found.is_none() && key.matches(&metadata) {
                self.index(key, &session);
                found = Some((session, *metadata));
            } else {
                self.index_session(&session, &metadata);
            }
        }
        Ok(found)
    }

    /// Marks an existing session continued, under its lock and on a fresh read; writes only if
    /// something changed. `found` is the session and its record as just read.
    fn resume(
        &self,
        found: (SessionRef, SessionMetadata),
        session_file: Option<&str>,
        now: Timestamp,
    ) -> Result<Resolved, StoreError> {
        let (session, mut unchanged) = found;
        let dir = self.checked_session_dir(&session)?;
        // Most continuations change nothing (already resumed, still running): answer from the
        // lock-free read, so continuing a busy session does not queue behind its writers.
        if !unchanged.resume(session_file) {
            return Ok(Resolved {
                session,
                metadata: unchanged,
                resumed: true,
            });
        }
        let _lock = lock::acquire(&dir, Scope::Session, self.options.lock_timeout)?;
        self.hook(CommitStage::SessionLocked(&dir));
        let mut metadata = self.load(&session)?;
        if metadata.resume(session_file) {
            atomic::sweep(&dir)?;
            metadata.updated_at = iso(now);
            crate::shepherds_note::adopt(&mut metadata, &iso(now));
            metadata.rederive_paths(&self.root_text);
            let mut batch = Batch::new(&dir);
            batch.stage(SESSION_METADATA_FILE, metadata.to_json().as_bytes(), false)?;
            let seen = crate::shepherds_note::stage(&mut batch, &metadata)?;
            batch.sync()?;
            self.hook(CommitStage::Staged(&dir));
            crate::shepherds_note::keep_late_writes(&mut batch, &metadata, seen)?;
            batch.persist()?;
            atomic::sync_dir(&dir)?;
        }
        Ok(Resolved {
            session,
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
        crate::shepherds_note::adopt(&mut metadata, &iso(now));
        metadata.rederive_paths(&self.root_text);

        let staging = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .tempdir_in(&root)
            .map_err(|err| atomic::with_path(&err, "create a staging directory in", &root))?;
        let mut batch = Batch::new(staging.path());
        batch.stage(SESSION_METADATA_FILE, metadata.to_json().as_bytes(), true)?;
        batch.stage(
            SHEPHERDS_NOTE_FILE,
            render_new_note(&metadata).as_bytes(),
            true,
        )?;
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
        self.index_session(&session, &metadata);
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
