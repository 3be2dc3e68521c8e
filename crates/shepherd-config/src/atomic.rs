//! Atomic writes of the user's settings and approvals files, through the shared primitive, as
//! configuration errors that name the file.

use std::path::Path;

use crate::error::ConfigError;

/// Replaces `path` with `contents` (see `shepherd_fs::write_atomic`: same directory, synced,
/// renamed; symlinks written through; the old file's permissions kept).
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ConfigError> {
    shepherd_fs::write_atomic(path, contents, None).map_err(|err| ConfigError::io(path, err))
}

/// How long a change waits for another process changing the same file.
const UPDATE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Takes the cross-process lock that guards a read-modify-write of `path` (an OS advisory lock
/// on a hidden sibling `.<name>.lock`, so a process that dies holding it blocks no one). Two
/// `shepherd settings set` or `agents approve` at once then both land.
pub(crate) fn lock_for_update(path: &Path) -> Result<shepherd_fs::FileLock, ConfigError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock = path.with_file_name(format!(".{name}.lock"));
    if let Some(dir) = lock.parent() {
        fs_err::create_dir_all(dir).map_err(|err| ConfigError::io(dir, err))?;
    }
    shepherd_fs::lock(&lock, UPDATE_WAIT)
        .map_err(|err| ConfigError::io(&lock, std::io::Error::other(err.to_string())))
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
