//! The created-pane registry: which terminal panes Shepherd created, and for which parent.
//!
//! Shepherd only ever closes panes it created. The registry records each one with its owner
//! (parent identity and project root), so a restarted broker still knows its panes and one
//! parent never touches another's. It lives where the original extension kept it
//! (`<pi agent dir>/pi-shepherd/created-panes.json`, the same array of `{paneId, tabId, name,
//! cwd, createdAt, dir?, ownerSession?}` plus our own fields), but every change is a locked
//! read-modify-write with an atomic replace, so concurrent parents never lose each other's
//! entries.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{BackendKind, Presence};

/// How long a registry change waits for another writer.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// One created pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaneEntry {
    /// The pane: tmux `%4`; Herdr `w1:p3@term_661905df528db37`, the pane id it was created
    /// with and its terminal id, which is what identifies it (see
    /// [`crate::herdr::identity`]). The original's Herdr entries hold a bare pane id.
    pub pane_id: String,
    /// Its window or tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_id: Option<String>,
    /// The display name it was created with.
    pub name: String,
    /// Its working directory.
    pub cwd: String,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// A launch directory to remove once the pane is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The parent identity that owns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_session: Option<String>,
    /// The project root of the owning broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_project: Option<String>,
    /// Which backend made it (absent in the original's entries, which are Herdr panes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendKind>,
    /// The tmux or Herdr server it lives on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The sheep in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

impl PaneEntry {
    /// The backend this entry belongs to (entries written by the original are Herdr's).
    pub fn backend(&self) -> BackendKind {
        self.backend.unwrap_or(BackendKind::Herdr)
    }

    /// Whether `identity` working in `project` owns this pane.
    pub fn owned_by(&self, identity: &str, project: &str) -> bool {
        self.owner_session.as_deref() == Some(identity)
            && self.owner_project.as_deref().is_none_or(|p| p == project)
    }
}

/// A registry failure.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The file or its lock could not be used.
    #[error("pane registry {}: {message}", path.display())]
    Io {
        /// The registry file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The file holds something other than a list of panes; it is left untouched.
    #[error("pane registry {} is not a list of panes ({message}); fix or remove it", path.display())]
    Malformed {
        /// The registry file.
        path: PathBuf,
        /// The parse error.
        message: String,
    },
}

/// The registry file.
#[derive(Debug, Clone)]
pub struct Registry {
    path: PathBuf,
}

impl Registry {
    /// The registry in `user_config_dir` (`<pi agent dir>/pi-shepherd`).
    pub fn in_dir(user_config_dir: &Path) -> Self {
        Self {
            path: user_config_dir.join("created-panes.json"),
        }
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, message: impl std::fmt::Display) -> RegistryError {
        RegistryError::Io {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    /// Every entry (no lock: the file is only ever replaced whole).
    pub fn entries(&self) -> Result<Vec<PaneEntry>, RegistryError> {
        match fs_err::read(&self.path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Vec::new()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| RegistryError::Malformed {
                path: self.path.clone(),
                message: err.to_string(),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(self.io(err)),
        }
    }

    /// The entry for `pane` on `backend`, if Shepherd created it.
    pub fn find(
        &self,
        backend: BackendKind,
        pane: &str,
    ) -> Result<Option<PaneEntry>, RegistryError> {
        Ok(self
            .entries()?
            .into_iter()
            .find(|e| e.backend() == backend && e.pane_id == pane))
    }

    /// Changes the entries under the lock, re-reading them first.
    fn update<T>(&self, change: impl FnOnce(&mut Vec<PaneEntry>) -> T) -> Result<T, RegistryError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs_err::create_dir_all(dir).map_err(|err| self.io(err))?;
        let _lock = shepherd_fs::lock(&self.path.with_extension("json.lock"), LOCK_TIMEOUT)
            .map_err(|err| self.io(err))?;
        let mut entries = self.entries()?;
        let out = change(&mut entries);
        let mut bytes = serde_json::to_vec_pretty(&entries).map_err(|err| self.io(err))?;
        bytes.push(b'\n');
        shepherd_fs::write_atomic(&self.path, &bytes, Some(0o600)).map_err(|err| self.io(err))?;
        Ok(out)
    }

    /// Records a created pane (replacing an older entry for the same pane).
    pub fn register(&self, entry: PaneEntry) -> Result<(), RegistryError> {
        self.update(|entries| {
            entries.retain(|e| !(e.backend() == entry.backend() && e.pane_id == entry.pane_id));
            entries.push(entry);
        })
    }

    /// Forgets a pane; returns whether it was registered.
    pub fn unregister(&self, backend: BackendKind, pane: &str) -> Result<bool, RegistryError> {
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|e| !(e.backend() == backend && e.pane_id == pane));
            entries.len() != before
        })
    }

    /// Drops the entries `selected` picks whose panes `presence` confirms gone (an unknown
    /// presence keeps the entry). Returns the dropped entries and how many entries remain.
    pub fn prune(
        &self,
        selected: impl Fn(&PaneEntry) -> bool,
        presence: impl Fn(&PaneEntry) -> Presence,
    ) -> Result<(Vec<PaneEntry>, usize), RegistryError> {
        // Presence checks run commands; decide outside the lock, then remove under it.
        let gone: Vec<PaneEntry> = self
            .entries()?
            .into_iter()
            .filter(|e| selected(e) && presence(e) == Presence::Gone)
            .collect();
        self.update(|entries| {
            entries.retain(|e| !gone.contains(e));
            (gone.clone(), entries.len())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pane: &str, owner: &str) -> PaneEntry {
        PaneEntry {
            pane_id: pane.into(),
            tab_id: Some("@1".into()),
            name: "worker: review".into(),
            cwd: "/p".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            dir: None,
            owner_session: Some(owner.into()),
            owner_project: Some("/p".into()),
            backend: Some(BackendKind::Tmux),
            server: None,
            agent_id: None,
        }
    }

    #[test]
    fn register_find_prune_and_unregister() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::in_dir(dir.path());
        registry.register(entry("%1", "me")).unwrap();
        registry.register(entry("%2", "me")).unwrap();
        registry.register(entry("%3", "someone else")).unwrap();
        assert!(
            registry
                .find(BackendKind::Tmux, "%1")
                .unwrap()
                .unwrap()
                .owned_by("me", "/p")
        );
        assert!(registry.find(BackendKind::Herdr, "%1").unwrap().is_none());
        let (pruned, remaining) = registry
            .prune(
                |e| e.owned_by("me", "/p"),
                |e| {
                    if e.pane_id == "%1" {
                        Presence::Gone
                    } else {
                        Presence::Unknown
                    }
                },
            )
            .unwrap();
        assert_eq!(pruned.len(), 1);
        assert_eq!(remaining, 2);
        assert!(registry.unregister(BackendKind::Tmux, "%2").unwrap());
        assert!(!registry.unregister(BackendKind::Tmux, "%2").unwrap());
        assert_eq!(registry.entries().unwrap().len(), 1);
    }

    #[test]
    fn the_originals_entries_read_as_herdr_panes_and_a_broken_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::in_dir(dir.path());
        std::fs::write(registry.path(), r#"[{"paneId":"w1:p3","tabId":"w1:t2","name":"worker","cwd":"/p","createdAt":"x","ownerSession":"s"}]"#).unwrap();
        let entries = registry.entries().unwrap();
        assert_eq!(entries[0].backend(), BackendKind::Herdr);
        std::fs::write(registry.path(), "{not a list").unwrap();
        assert!(matches!(
            registry.register(entry("%9", "me")),
            Err(RegistryError::Malformed { .. })
        ));
        assert_eq!(
            std::fs::read_to_string(registry.path()).unwrap(),
            "{not a list"
        );
    }

    #[test]
    fn concurrent_registrations_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::in_dir(dir.path());
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let registry = registry.clone();
                std::thread::spawn(move || {
                    for j in 0..10 {
                        registry
                            .register(entry(&format!("%{i}-{j}"), "me"))
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(registry.entries().unwrap().len(), 80);
    }
}
