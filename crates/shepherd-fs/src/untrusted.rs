//! Files in directories a sheep can write: read and cleaned without following its symlinks.
//!
//! A confined sheep controls what is in its own directory (its agent's configuration home, its
//! session file, its worktree). Shepherd reads some of those files outside the sandbox, as the
//! user (a session to resume, what a turn cost), and writes some there again at the next
//! launch. A sheep that replaced one of them with a symlink to `~/.ssh/id_rsa` must get nothing
//! out of that: a read here opens the file itself with `O_NOFOLLOW` and takes only a regular
//! file, and [`remove_symlinks_under`] clears every symlink out of a directory before Shepherd
//! writes into it again.

use fs_err::os::unix::fs::OpenOptionsExt;
use std::io::{self, Read};
use std::path::Path;

/// Opens `path` for reading when it is a regular file, never through a symlink at its last
/// component (the directories above it are Shepherd's own).
pub fn open_nofollow(path: &Path) -> io::Result<fs_err::File> {
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a regular file", path.display()),
        ))
    }
}

/// Reads `path` as text, as [`open_nofollow`] opens it.
pub fn read_to_string_nofollow(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    open_nofollow(path)?.read_to_string(&mut text)?;
    Ok(text)
}

/// Removes every symlink found under `dir`, at any depth, without following any; `dir` itself
/// must be a real directory (a symlink there is an error). Returns how many went.
pub fn remove_symlinks_under(dir: &Path) -> io::Result<usize> {
    let meta = fs_err::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a directory", dir.display()),
        ));
    }
    let mut removed = 0;
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            fs_err::remove_file(entry.path())?;
            removed += 1;
        } else if kind.is_dir() {
            removed += remove_symlinks_under(&entry.path())?;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_is_neither_read_through_nor_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "key").unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("deep")).unwrap();
        std::fs::write(home.join("plain"), "mine").unwrap();
        std::os::unix::fs::symlink(&secret, home.join("link")).unwrap();
        std::os::unix::fs::symlink(&secret, home.join("deep/link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), home.join("dirlink")).unwrap();

        assert_eq!(
            read_to_string_nofollow(&home.join("plain")).unwrap(),
            "mine"
        );
        assert!(read_to_string_nofollow(&home.join("link")).is_err());
        assert!(read_to_string_nofollow(&home.join("deep")).is_err());

        assert_eq!(remove_symlinks_under(&home).unwrap(), 3);
        assert!(!home.join("link").exists() && !home.join("deep/link").exists());
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            "key",
            "targets untouched"
        );
        assert!(home.join("plain").exists());
        assert!(remove_symlinks_under(&home.join("plain")).is_err());
    }
}
