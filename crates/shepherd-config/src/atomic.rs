//! Atomic file replacement: readers see the old file or the new one, never half of either.
//!
//! The new contents go to a temporary file in the same directory (same filesystem, so the rename
//! is atomic), are flushed to disk, take over the old file's permissions, and are renamed over
//! the target; then the directory is synced so the rename itself survives a crash. A target that
//! is a symlink (dotfiles kept in a repository) is written through: the link stays, its target
//! is replaced.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// Replaces `path` with `contents`, creating the parent directory if needed.
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ConfigError> {
    let target = resolve_symlink(path);
    let dir = target
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(|err| ConfigError::io(dir, err))?;

    let named = |err: io::Error| {
        ConfigError::io(
            &target,
            io::Error::new(
                err.kind(),
                format!("failed to write `{}`: {err}", target.display()),
            ),
        )
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".shepherd-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(named)?;
    temp.write_all(contents).map_err(named)?;
    if let Ok(existing) = fs_err::metadata(&target) {
        temp.as_file()
            .set_permissions(existing.permissions())
            .map_err(named)?;
    }
    temp.as_file().sync_all().map_err(named)?;
    temp.persist(&target).map_err(|err| named(err.error))?;
    // Make the rename durable. Some filesystems refuse to sync a directory; the file is already
    // in place then, so that is not worth failing the write over.
    if let Ok(handle) = fs_err::File::open(dir) {
        let _synced = handle.sync_all();
    }
    Ok(())
}

/// Serialises `value` as pretty JSON with a final newline and writes it atomically.
pub(crate) fn write_json_atomic(
    path: &Path,
    value: &impl serde::Serialize,
) -> Result<(), ConfigError> {
    let mut text = serde_json::to_string_pretty(value).expect("settings serialise to JSON");
    text.push('\n');
    write_atomic(path, text.as_bytes())
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

    #[test]
    fn creates_replaces_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("config.json");
        write_atomic(&path, b"one").unwrap();
        assert_eq!(fs_err::read_to_string(&path).unwrap(), "one");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs_err::read_to_string(&path).unwrap(), "two");
        let mode = fs_err::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs_err::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["config.json"]);
    }

    #[test]
    fn writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-config.json");
        fs_err::write(&real, "old").unwrap();
        let link = dir.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            fs_err::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs_err::read_to_string(&real).unwrap(), "new");
    }
}
