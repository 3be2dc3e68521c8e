//! Atomic file replacement: write a temp file in the same directory, sync it, rename it over the
//! target, then sync the directory so the new name survives a crash. On any error the temp file
//! is removed; nothing half-written ever carries the target's name. A target that is a symlink
//! (dotfiles kept in a repository) is written through: the link stays, its target is replaced.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Replaces `path` with `contents`, creating the parent directory. `mode` sets the new file's
/// permissions (e.g. `0o600` for private files); without it an existing file keeps its own and
/// a new one gets 0644.
pub fn write_atomic(path: &Path, contents: &[u8], mode: Option<u32>) -> io::Result<()> {
    let target = resolve_symlink(path);
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let with_path = |err: io::Error| {
        io::Error::new(err.kind(), format!("writing `{}`: {err}", target.display()))
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".shepherd-tmp-")
        .tempfile_in(dir)
        .map_err(with_path)?;
    temp.write_all(contents).map_err(with_path)?;
    let permissions = match (mode, fs_err::metadata(&target)) {
        (Some(mode), _) => std::fs::Permissions::from_mode(mode),
        (None, Ok(existing)) => existing.permissions(),
        (None, Err(_)) => std::fs::Permissions::from_mode(0o644),
    };
    temp.as_file()
        .set_permissions(permissions)
        .map_err(with_path)?;
    temp.as_file().sync_data().map_err(with_path)?;
    temp.persist(&target).map_err(|err| with_path(err.error))?;
    sync_parent(&target);
    Ok(())
}

/// Syncs the directory holding `path`, making a rename in it durable. Best effort: some
/// filesystems refuse to sync directories, and the data itself is already synced.
pub fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(dir) = fs_err::File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
    {
        let _synced = dir.sync_all();
    }
}

fn resolve_symlink(path: &Path) -> PathBuf {
    let is_link = fs_err::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    if is_link && let Ok(real) = fs_err::canonicalize(path) {
        return real;
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    }

    #[test]
    fn replaces_whole_files_keeps_or_sets_permissions_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/file.json");
        write_atomic(&path, b"one", None).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o644);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"two", None).unwrap();
        assert_eq!(mode(&path), 0o640, "an existing file keeps its permissions");
        write_atomic(&path, b"three", Some(0o600)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"three");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(names(path.parent().unwrap()), ["file.json"]);
    }

    #[test]
    fn writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-config.json");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new", None).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }
}
