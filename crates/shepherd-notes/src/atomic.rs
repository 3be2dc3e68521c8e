//! Atomic file replacement: a reader sees the old file or the new one, never a mix, and a
//! crash leaves no half-written file under a real name.
//!
//! Every file is written to a temp file in its own directory (named `.shepherd-tmp-…`), synced,
//! then renamed over its target; the directory is synced after the renames so the new names
//! are durable. One commit stages all its files first and syncs them together, so a commit that
//! writes a note, `session.json` and `shepherd.md` waits for the disk once, not three times.
//! Temp files are removed on every error path by `tempfile`; a process killed between writing
//! and renaming leaves its temp file behind, and the next writer (holding the same lock, so no
//! one else can be writing one) sweeps it away before it starts.

use std::collections::HashSet;
use std::fs::Permissions;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::thread;

use tempfile::NamedTempFile;

use crate::error::StoreError;

/// Prefix of every temp file and staging directory the store creates.
pub(crate) const TEMP_PREFIX: &str = ".shepherd-tmp-";

/// Files a commit writes, staged but not yet visible.
#[derive(Debug)]
pub(crate) struct Batch {
    dir: PathBuf,
    staged: Vec<Staged>,
}

#[derive(Debug)]
struct Staged {
    temp: NamedTempFile,
    target: PathBuf,
    must_be_new: bool,
}

impl Batch {
    /// An empty batch of files in `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            staged: Vec::new(),
        }
    }

    /// Writes `contents` to a temp file that will become `dir/name`. A `must_be_new` file never
    /// replaces one that appeared meanwhile.
    pub(crate) fn stage(
        &mut self,
        name: &str,
        contents: &[u8],
        must_be_new: bool,
    ) -> Result<(), StoreError> {
        let mut temp = temp_file(&self.dir)?;
        temp.write_all(contents)
            .map_err(|err| with_path(&err, "write", temp.path()))?;
        self.staged.push(Staged {
            temp,
            target: self.dir.join(name),
            must_be_new,
        });
        Ok(())
    }

    /// The directory the batch writes in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Replaces the staged contents of `name` with `contents`, synced at once (used after
    /// [`Batch::sync`], when a file changed under us).
    pub(crate) fn restage(&mut self, name: &str, contents: &[u8]) -> Result<(), StoreError> {
        let target = self.dir.join(name);
        let mut temp = temp_file(&self.dir)?;
        temp.write_all(contents)
            .and_then(|()| temp.as_file().sync_data())
            .map_err(|err| with_path(&err, "write", temp.path()))?;
        match self
            .staged
            .iter_mut()
            .find(|staged| staged.target == target)
        {
            Some(staged) => staged.temp = temp,
            None => self.staged.push(Staged {
                temp,
                target,
                must_be_new: false,
            }),
        }
        Ok(())
    }

    /// Flushes every staged file to disk, all at once.
    pub(crate) fn sync(&self) -> Result<(), StoreError> {
        let sync = |staged: &Staged| {
            staged
                .temp
                .as_file()
                .sync_data()
                .map_err(|err| with_path(&err, "sync", staged.temp.path()))
        };
        let Some((first, rest)) = self.staged.split_first() else {
            return Ok(());
        };
        thread::scope(|scope| {
            let others: Vec<_> = rest.iter().map(|s| scope.spawn(move || sync(s))).collect();
            let mut result = sync(first);
            for other in others {
                let synced = other
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("a file sync thread panicked")));
                result = result.and(synced);
            }
            result.map_err(StoreError::from)
        })
    }

    /// Renames every staged file over its target, in staging order.
    pub(crate) fn persist(self) -> Result<(), StoreError> {
        for staged in self.staged {
            let persisted = if staged.must_be_new {
                staged.temp.persist_noclobber(&staged.target)
            } else {
                staged.temp.persist(&staged.target)
            };
            persisted.map_err(|err| with_path(&err.error, "rename into", &staged.target))?;
        }
        Ok(())
    }
}

/// A temp file in `dir`, readable like any other note (0644 before the umask).
pub(crate) fn temp_file(dir: &Path) -> Result<NamedTempFile, StoreError> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|err| with_path(&err, "create a temp file in", dir).into())
}

/// Makes the renames in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fs_err::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Removes temp files and staging directories left in `dir` by a writer that died, and returns
/// the names of the other entries. Call only while holding the lock that guards `dir`.
pub(crate) fn sweep(dir: &Path) -> Result<HashSet<String>, StoreError> {
    let mut names = HashSet::new();
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(TEMP_PREFIX) {
            names.insert(name);
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type()?.is_dir() {
            fs_err::remove_dir_all(&path)
        } else {
            fs_err::remove_file(&path)
        };
        match removed {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err.into()),
            _ => tracing::debug!(path = %path.display(), "removed a dead writer's temp file"),
        }
    }
    Ok(names)
}

/// An error that names the path it happened on.
pub(crate) fn with_path(err: &io::Error, action: &str, path: &Path) -> io::Error {
    io::Error::new(
        err.kind(),
        format!("failed to {action} `{}`: {err}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_replaces_files_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("a"), "old").unwrap();
        let mut batch = Batch::new(dir.path());
        batch.stage("a", b"new a", false).unwrap();
        batch.stage("b", b"new b", true).unwrap();
        batch.sync().unwrap();
        batch.persist().unwrap();
        sync_dir(dir.path()).unwrap();
        assert_eq!(
            fs_err::read_to_string(dir.path().join("a")).unwrap(),
            "new a"
        );
        assert_eq!(
            fs_err::read_to_string(dir.path().join("b")).unwrap(),
            "new b"
        );
        let names = sweep(dir.path()).unwrap();
        assert_eq!(names, HashSet::from(["a".to_owned(), "b".to_owned()]));
    }

    #[test]
    fn a_dropped_batch_leaves_nothing_and_new_files_never_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let mut batch = Batch::new(dir.path());
        batch.stage("a", b"never", false).unwrap();
        drop(batch);
        assert!(sweep(dir.path()).unwrap().is_empty());
        fs_err::write(dir.path().join("b"), "theirs").unwrap();
        let mut batch = Batch::new(dir.path());
        batch.stage("b", b"ours", true).unwrap();
        assert!(batch.persist().is_err());
        assert_eq!(
            fs_err::read_to_string(dir.path().join("b")).unwrap(),
            "theirs"
        );
        assert_eq!(sweep(dir.path()).unwrap(), HashSet::from(["b".to_owned()]));
    }

    #[test]
    fn sweep_removes_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let kept = temp_file(dir.path()).unwrap();
        kept.keep().unwrap();
        fs_err::create_dir(dir.path().join(format!("{TEMP_PREFIX}dir"))).unwrap();
        assert!(sweep(dir.path()).unwrap().is_empty());
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    }
}
