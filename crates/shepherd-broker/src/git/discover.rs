//! Which repository a directory belongs to, decided without taking a planted file's word.
//!
//! git finds a directory's repository by walking up to the first `.git`: a directory, or a
//! file saying `gitdir: <somewhere>`. A sheep can write either in any directory it may change,
//! and the next sheep started there (or an isolated spawn there, which copies that repository
//! into a worktree the sheep then reads) would follow it to another of the user's repositories.
//! So before Shepherd asks git about a directory it walks up the same way and trusts:
//!
//! - a `.git` file only when it names `<common>/worktrees/<name>` whose own `gitdir`
//!   back-pointer names this very file, canonicalised both ways, as `git worktree add` writes
//!   them (a pointer a sheep wrote names nothing that points back at it);
//! - a `.git` directory only when it keeps its refs and objects itself: no `commondir` file
//!   borrowing another repository's, no `objects` or `refs` that is a symbolic link.
//!
//! A symbolic link named `.git` is trusted never. Anything else is refused with one line
//! naming the file.

use std::path::{Path, PathBuf};

/// Why a directory's `.git` is not trusted: one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}` {why}")]
pub(crate) struct Untrusted {
    /// The `.git` (or the file in it) that is refused.
    pub(crate) path: PathBuf,
    /// What is wrong, and what would be accepted.
    pub(crate) why: String,
}

fn untrusted(path: &Path, why: impl Into<String>) -> Untrusted {
    Untrusted {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// The `.git` a directory's repository is found through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A repository's own `.git` directory.
    Directory(PathBuf),
    /// A linked worktree's `.git` file, and the git directory it names.
    Linked {
        /// The `.git` file.
        file: PathBuf,
        /// `<common>/worktrees/<name>`, canonical.
        git_dir: PathBuf,
    },
}

/// Walks up from `dir` (absolute) to the first `.git` and checks it: `Ok(None)` when there is
/// none.
pub(crate) fn find(dir: &Path) -> Result<Option<Found>, Untrusted> {
    for at in dir.ancestors() {
        let dot_git = at.join(".git");
        let meta = match fs_err::symlink_metadata(&dot_git) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(untrusted(&dot_git, format!("cannot be read ({err})"))),
        };
        let kind = meta.file_type();
        return if kind.is_symlink() {
            Err(untrusted(
                &dot_git,
                "is a symbolic link; a repository is trusted through a `.git` directory or the \
                 `.git` file `git worktree add` writes",
            ))
        } else if kind.is_dir() {
            own_directory(&dot_git).map(|()| Some(Found::Directory(dot_git)))
        } else if kind.is_file() {
            linked(&dot_git).map(|git_dir| {
                Some(Found::Linked {
                    file: dot_git,
                    git_dir,
                })
            })
        } else {
            Err(untrusted(&dot_git, "is neither a file nor a directory"))
        };
    }
    Ok(None)
}

/// A `.git` directory that keeps its own refs and objects.
fn own_directory(dot_git: &Path) -> Result<(), Untrusted> {
    let commondir = dot_git.join("commondir");
    if fs_err::symlink_metadata(&commondir).is_ok() {
        return Err(untrusted(
            &commondir,
            "makes this `.git` borrow another repository's refs and objects; only a worktree's \
             own directory under `<repository>/.git/worktrees/` may have one",
        ));
    }
    for part in ["objects", "refs"] {
        let path = dot_git.join(part);
        if fs_err::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(untrusted(
                &path,
                "is a symbolic link; a repository's objects and refs are trusted only in its own \
                 `.git` directory",
            ));
        }
    }
    Ok(())
}

/// The git directory a `.git` file names, when it is a linked worktree's that names this file
/// back.
fn linked(file: &Path) -> Result<PathBuf, Untrusted> {
    let refuse = |why: String| {
        untrusted(
            file,
            format!(
                "{why}; a `.git` file is trusted only when it names `<repository>/.git/worktrees/\
                 <name>` whose `gitdir` file names it back, as `git worktree add` writes them"
            ),
        )
    };
    let text =
        fs_err::read_to_string(file).map_err(|err| refuse(format!("cannot be read ({err})")))?;
    let named = text
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|named| !named.is_empty())
        .ok_or_else(|| refuse("does not say `gitdir: <path>`".to_owned()))?;
    let base = file.parent().unwrap_or(Path::new("/"));
    let git_dir = fs_err::canonicalize(base.join(named))
        .map_err(|_| refuse(format!("names {named}, which does not exist")))?;
    let in_worktrees = git_dir
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|name| name == "worktrees");
    if !in_worktrees {
        return Err(refuse(format!(
            "names {}, which is not in a repository's worktrees directory",
            git_dir.display()
        )));
    }
    let back_file = git_dir.join("gitdir");
    let back = fs_err::read_to_string(&back_file).map_err(|_| {
        refuse(format!(
            "names {}, which has no gitdir file",
            git_dir.display()
        ))
    })?;
    let back = git_dir.join(back.trim());
    let this = fs_err::canonicalize(file).map_err(|err| refuse(err.to_string()))?;
    if fs_err::canonicalize(&back).ok().as_deref() != Some(this.as_path()) {
        return Err(refuse(format!(
            "names {}, whose gitdir file names {} instead",
            git_dir.display(),
            back.display()
        )));
    }
    Ok(git_dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn a_repository_and_its_real_linked_worktree_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs_err::canonicalize(dir.path()).unwrap();
        let repo = root.join("repo");
        fs_err::create_dir_all(repo.join("sub")).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
        assert_eq!(
            find(&repo.join("sub")).unwrap(),
            Some(Found::Directory(repo.join(".git")))
        );
        git(&repo, &["worktree", "add", "-q", "../linked"]);
        let found = find(&root.join("linked")).unwrap();
        assert_eq!(
            found,
            Some(Found::Linked {
                file: root.join("linked/.git"),
                git_dir: repo.join(".git/worktrees/linked"),
            })
        );
        assert_eq!(find(Path::new("/proc/self")).unwrap(), None);
    }

    #[test]
    fn planted_pointers_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs_err::canonicalize(dir.path()).unwrap();
        let other = root.join("other");
        fs_err::create_dir_all(&other).unwrap();
        git(&other, &["init", "-q"]);
        git(&other, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(&other, &["worktree", "add", "-q", "../feature"]);
        let planted = root.join("planted");
        fs_err::create_dir_all(&planted).unwrap();
        let dot_git = planted.join(".git");
        for pointer in [
            "gitdir: /worktrees/x".to_owned(),
            format!("gitdir: {}", other.join(".git").display()),
            format!("gitdir: {}", other.join(".git/worktrees/feature").display()),
            "nonsense".to_owned(),
        ] {
            fs_err::write(&dot_git, &pointer).unwrap();
            let err = find(&planted).unwrap_err();
            assert_eq!(err.path, dot_git, "{pointer}: {err}");
            assert_eq!(err.to_string().lines().count(), 1, "{err}");
        }
        fs_err::remove_file(&dot_git).unwrap();
        fs_err::os::unix::fs::symlink(other.join(".git"), &dot_git).unwrap();
        assert!(find(&planted).unwrap_err().why.contains("symbolic link"));
        fs_err::remove_file(&dot_git).unwrap();
        fs_err::create_dir_all(&dot_git).unwrap();
        fs_err::write(
            dot_git.join("commondir"),
            other.join(".git").display().to_string(),
        )
        .unwrap();
        assert_eq!(find(&planted).unwrap_err().path, dot_git.join("commondir"));
        fs_err::remove_file(dot_git.join("commondir")).unwrap();
        fs_err::os::unix::fs::symlink(other.join(".git/objects"), dot_git.join("objects")).unwrap();
        assert_eq!(find(&planted).unwrap_err().path, dot_git.join("objects"));
    }
}
