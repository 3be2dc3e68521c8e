//! The files Shepherd keeps on a host (a session's copies, a pi sheep's prompt and session),
//! written and read without following any link a sheep made.
//!
//! Those files live where a sheep can write: the host's project (`.shepherd/sessions/…`) and
//! the link's state directory. A sheep, confined or not, can replace any of them, or a
//! directory holding them, with a symbolic link. The `files` step runs as the host user and
//! unconfined, so following such a link would read a file the sheep may not (into the parent's
//! note, and back to the sheep with its next task) or write one it may not. So below the
//! request's `within` directory every directory is opened with `O_NOFOLLOW`, a file is read
//! only when it is a regular file reached the same way, and a write makes a new file beside
//! the old one and renames it over it, which replaces a link and never writes through it.
//! The copies are working copies (the notes' durable record stays on the parent's machine),
//! so a write is atomic but not synced.

use std::ffi::OsStr;
use std::io::{self, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags};

/// Opens the directory holding `path`, walking from `within` without following a link;
/// `create` makes missing directories. Returns it and the file's name. `None`: a directory on
/// the way does not exist (and `create` is off).
fn parent_of<'p>(
    within: &Path,
    path: &'p Path,
    create: bool,
) -> io::Result<Option<(OwnedFd, &'p OsStr)>> {
    let outside = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a plain path inside {}",
                path.display(),
                within.display()
            ),
        )
    };
    if !within.is_absolute() {
        return Err(outside());
    }
    let relative = path.strip_prefix(within).map_err(|_| outside())?;
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name),
            _ => return Err(outside()),
        }
    }
    let Some((file, dirs)) = names.split_last() else {
        return Err(outside());
    };
    let directory = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(within, directory, Mode::empty())?;
    for name in dirs {
        let next = rustix::fs::openat(&dir, *name, directory | OFlags::NOFOLLOW, Mode::empty());
        dir = match next {
            Ok(next) => next,
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(err) => return Err(err.into()),
                }
                rustix::fs::openat(&dir, *name, directory | OFlags::NOFOLLOW, Mode::empty())?
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(err) => return Err(link_refused(path, err)),
        };
    }
    Ok(Some((dir, file)))
}

fn link_refused(path: &Path, err: rustix::io::Errno) -> io::Error {
    if err == rustix::io::Errno::LOOP || err == rustix::io::Errno::NOTDIR {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} passes through a symbolic link or a non-directory; not followed",
                path.display()
            ),
        )
    } else {
        err.into()
    }
}

/// Whether `path` exists (as anything, a link included).
pub(super) fn exists(within: &Path, path: &Path) -> io::Result<bool> {
    let Some((dir, name)) = parent_of(within, path, false)? else {
        return Ok(false);
    };
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Replaces `path` with `content`: a new file beside it, renamed over whatever is there.
pub(super) fn write(within: &Path, path: &Path, content: &[u8]) -> io::Result<()> {
    let (dir, name) = parent_of(within, path, true)?.expect("created on the way");
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let number = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = format!(".shepherd-copy-{}-{number}", std::process::id());
    let fd = rustix::fs::openat(
        &dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    let written = std::fs::File::from(fd)
        .write_all(content)
        .and_then(|()| rustix::fs::renameat(&dir, temp.as_str(), &dir, name).map_err(Into::into));
    if written.is_err() {
        let _gone = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
    }
    written
}

/// `path`'s modification time (ns since the epoch) and, unless it is still `since`, its text.
/// `None`: no such file. A link or anything but a regular file is refused.
pub(super) fn read(
    within: &Path,
    path: &Path,
    since: Option<i128>,
) -> io::Result<Option<(i128, Option<String>)>> {
    let Some((dir, name)) = parent_of(within, path, false)? else {
        return Ok(None);
    };
    let fd = match rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(err) => return Err(link_refused(path, err)),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a regular file; not read", path.display()),
        ));
    }
    let modified = i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec);
    if since == Some(modified) {
        return Ok(Some((modified, None)));
    }
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text)?;
    Ok(Some((modified, Some(text))))
}

#[cfg(test)]
mod tests {
    use super::{exists, read, write};

    #[test]
    fn links_on_the_way_or_at_the_end_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let within = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(within.join("sessions/one")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "kept out").unwrap();
        // The last name is a link: read refuses it, write replaces the link.
        let note = within.join("sessions/one/note.md");
        std::os::unix::fs::symlink(outside.join("secret"), &note).unwrap();
        assert!(exists(&within, &note).unwrap());
        let err = read(&within, &note, None).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        write(&within, &note, b"copy").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "kept out"
        );
        assert_eq!(std::fs::read_to_string(&note).unwrap(), "copy");
        let (_, text) = read(&within, &note, None).unwrap().unwrap();
        assert_eq!(text.as_deref(), Some("copy"));
        // A directory on the way is a link: neither read nor written through.
        std::os::unix::fs::symlink(&outside, within.join("sessions/two")).unwrap();
        let through = within.join("sessions/two/secret");
        assert!(read(&within, &through, None).is_err());
        assert!(write(&within, &through, b"overwritten").is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "kept out"
        );
        // Outside `within`, or climbing out of it: refused.
        assert!(read(&within, &outside.join("secret"), None).is_err());
        assert!(write(&within, &within.join("sessions/../../outside/secret"), b"x").is_err());
        // Missing directories are made for a write, and a missing file reads as none.
        write(&within, &within.join("sessions/three/new.md"), b"new").unwrap();
        assert!(
            read(&within, &within.join("sessions/four/x.md"), None)
                .unwrap()
                .is_none()
        );
    }
}
