//! Where each parent's and each name's session is, found without scanning.
//!
//! Resolving a parent-bound or named session used to read every `session.json` in the project,
//! so its cost grew with every session and note ever written. The store now keeps an index:
//! one small file per key in `.shepherd/sessions/.bindings/`, named after a hash of the key
//! (`parent-<hash>` for a parent identity, `name-<hash>` for a session name), holding the key
//! and the session's directory name. A lookup reads one such file.
//!
//! The index is a hint, never trusted blindly: a hit counts only once the session's own record,
//! read afterwards (by the lookup, or inside the commit that uses it, under the session lock),
//! still carries that binding or name; a miss or a wrong entry sends the caller to the full
//! scan under the sessions lock, which also writes the entries it finds. So the index is
//! rebuilt whenever it is missing or stale, and stays right when the original extension, which
//! knows nothing of it, creates sessions in the same project: a session only the original made
//! is found by the scan the first time and indexed from then on. Entries are written by
//! rename, without a disk flush: losing one costs one scan, never a wrong answer.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use shepherd_core::fieldnotes::{Binding, SessionMetadata};

use crate::atomic::TEMP_PREFIX;
use crate::{SessionRef, Store};

/// The index directory inside the sessions directory.
pub(crate) const BINDINGS_DIR: &str = ".bindings";

/// What a session is looked up by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionKey {
    /// The one session of this parent identity in this project.
    Parent(String),
    /// The session bound to no parent with exactly this name.
    Name(String),
}

impl SessionKey {
    /// Whether `metadata` is the session this key selects.
    pub fn matches(&self, metadata: &SessionMetadata) -> bool {
        match self {
            Self::Parent(identity) => {
                matches!(metadata.binding(), Binding::Parent { identity: i } if i == identity)
            }
            Self::Name(name) => metadata.continues_name(name),
        }
    }

    fn file_name(&self) -> String {
        let (kind, key) = match self {
            Self::Parent(identity) => ("parent", identity),
            Self::Name(name) => ("name", name),
        };
        let hash = hex::encode(Sha256::digest(key.as_bytes()));
        format!("{kind}-{}", &hash[..32])
    }
}

/// One index file.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: SessionKey,
    directory: String,
}

impl Store {
    fn bindings_dir(&self) -> PathBuf {
        self.sessions_dir().join(BINDINGS_DIR)
    }

    /// The session the index names for `key`, unverified; `None` when it names none.
    pub(crate) fn indexed(&self, key: &SessionKey) -> Option<SessionRef> {
        let path = self.bindings_dir().join(key.file_name());
        let bytes = fs_err::read(path).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        (entry.key == *key)
            .then(|| SessionRef::new(&entry.directory))
            .flatten()
    }

    /// Records that `key` selects `session`. Best effort: a failure only costs a later scan.
    pub(crate) fn index(&self, key: &SessionKey, session: &SessionRef) {
        if self.indexed(key).as_ref() == Some(session) {
            return;
        }
        if let Err(err) = self.write_entry(key, session) {
            tracing::debug!(%err, "could not update the fieldnotes binding index");
        }
    }

    /// Records every key `metadata` answers to (its parent, or its name).
    pub(crate) fn index_session(&self, session: &SessionRef, metadata: &SessionMetadata) {
        match metadata.binding() {
            Binding::Parent { identity } => {
                self.index(&SessionKey::Parent(identity.to_owned()), session);
            }
            Binding::Named => self.index(&SessionKey::Name(metadata.session_name.clone()), session),
            Binding::Legacy => {}
        }
    }

    fn write_entry(&self, key: &SessionKey, session: &SessionRef) -> io::Result<()> {
        let dir = self.bindings_dir();
        fs_err::create_dir_all(&dir)?;
        let entry = Entry {
            key: key.clone(),
            directory: session.directory_name().to_owned(),
        };
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&dir)?;
        temp.write_all(&serde_json::to_vec(&entry).expect("entries serialise"))?;
        temp.persist(dir.join(key.file_name()))
            .map_err(|err| err.error)?;
        Ok(())
    }
}
