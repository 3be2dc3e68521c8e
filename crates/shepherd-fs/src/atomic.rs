//! Atomic file replacement: write a temp file in the same directory, sync it, rename it over the
//! target, then sync the directory so the new name survives a crash. On any error the temp file
//! is removed; nothing half-written ever carries the target's name.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Replaces `path` with `contents`, creating the parent directory. `mode` sets the new file's
/// permissions (e.g. `0o600` for private files); otherwise the temp file's default (0600) is
/// widened to 0644.
pub fn write_atomic(path: &Path, contents: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let with_path =
        |err: io::Error| io::Error::new(err.kind(), format!("writing `{}`: {err}", path.display()));
    let mut temp = tempfile::Builder::new()
        .prefix(".shepherd-tmp-")
        .tempfile_in(dir)
        .map_err(with_path)?;
    temp.write_all(contents).map_err(with_path)?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o644)))
        .map_err(with_path)?;
    temp.as_file().sync_data().map_err(with_path)?;
    temp.persist(path).map_err(|err| with_path(err.error))?;
    sync_parent(path);
    Ok(())
}

/// Syncs the directory holding `path`, making a rename in it durable. Best effort: some
/// filesystems refuse to sync directories, and the data itself is already synced.
pub fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(dir) = std::fs::File::open(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
    {
        let _synced = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_files_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/file.json");
        write_atomic(&path, b"one", None).unwrap();
        write_atomic(&path, b"two", Some(0o600)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["file.json"]);
    }
}
