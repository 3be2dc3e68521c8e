//! The isolation layout: an isolated sheep (and a merge queue's resolver) works in a
//! repository of its own, never in the project's.
//!
//! The worktree directory is a repository (`git init`) whose `objects/info/alternates` names
//! the project's object directory, so its checkout costs no copy of the history, with a single
//! ref: its branch (`shepherd/<name>`) at the base commit, checked out; a merge worktree's
//! `HEAD` is detached at the target instead. Its sandbox binds that directory writable and the
//! project's objects read-only, and nothing else of the project's `.git`: the sheep commits
//! into its own repository and sees its own branch only; it can plant hooks and configuration
//! there, which no git of Shepherd's (nor the user's) runs.
//!
//! When the sheep is done, [`check_git_dir`] and [`sanitise`] make its `.git` what Shepherd
//! made again before any git of Shepherd's reads it: `config` rewritten to a known template,
//! `hooks/` emptied, `info/` removed, the alternates rewritten to the project's objects, and
//! anything that would make it borrow another repository removed. Its branch is then fetched
//! into the project with the hardened runner ([`fetch`]); objects and refs are written
//! in the project's repository by Shepherd's git, never through a directory the sheep held.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{Git, GitError};

/// Where a new repository's `HEAD` goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Head<'a> {
    /// On branch `name` (without `refs/heads/`), made at `at`.
    Branch {
        /// The branch.
        name: &'a str,
        /// The commit it starts at.
        at: &'a str,
    },
    /// Detached at a commit.
    Detached(&'a str),
}

/// What a project's repository gives a repository of a sheep's: its object directories (its
/// own first, then those it borrows itself) and its object format (`sha1`, `sha256`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Borrowed {
    /// The object directories the sheep's repository reads, in order.
    pub(crate) objects: Vec<PathBuf>,
    /// The object format both repositories use.
    pub(crate) format: String,
}

impl Borrowed {
    /// What the repository whose shared git directory is `common_dir` lends.
    pub(crate) fn from(common_dir: &Path) -> Result<Self, GitError> {
        let objects = object_dirs(common_dir)?;
        let format = object_format(common_dir);
        Ok(Self { objects, format })
    }
}

/// The object format of the repository whose shared git directory is `common_dir`, asked of
/// git once per repository (a repository's object format never changes).
fn object_format(common_dir: &Path) -> String {
    static KNOWN: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let known = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(known, _)| known == common_dir)
        .map(|(_, format)| format.clone());
    if let Some(format) = known {
        return format;
    }
    let asked = Git::at(common_dir)
        .env("GIT_DIR", common_dir.display().to_string())
        .run(&["rev-parse", "--show-object-format"]);
    match asked {
        Ok(format) => {
            KNOWN
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((common_dir.to_path_buf(), format.clone()));
            format
        }
        Err(_) => "sha1".to_owned(),
    }
}

/// The object directories a repository's git reads: `<common_dir>/objects`, then those it
/// borrows itself (a clone made with `--reference`), canonical.
pub(crate) fn object_dirs(common_dir: &Path) -> Result<Vec<PathBuf>, GitError> {
    let objects = fs_err::canonicalize(common_dir.join("objects"))
        .map_err(|err| GitError::layout(common_dir, format!("has no objects ({err})")))?;
    let mut all = vec![objects.clone()];
    if let Ok(text) = fs_err::read_to_string(objects.join("info/alternates")) {
        all.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(|line| objects.join(line))
                .filter_map(|path| fs_err::canonicalize(path).ok()),
        );
    }
    Ok(all)
}

/// Makes `path` a repository of its own that borrows `borrowed`'s objects, with `HEAD` as
/// `head` says, and checks it out.
pub(crate) fn make(path: &Path, borrowed: &Borrowed, head: Head<'_>) -> Result<(), GitError> {
    fs_err::create_dir_all(path)
        .map_err(|err| GitError::layout(path, format!("cannot be made ({err})")))?;
    let shown = path.display().to_string();
    // No template (so none of the user's template hooks), the project's object format, the
    // files ref store whatever the user's defaults say: the repository `sanitise` expects.
    let format = format!("--object-format={}", borrowed.format);
    let mut init = vec!["init", "--quiet", "--template="];
    if borrowed.format != "sha1" {
        init.push(&format);
    }
    if let Head::Branch { name, .. } = head {
        init.extend(["--initial-branch", name]);
    }
    init.push(&shown);
    Git::at(path)
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "init.defaultRefFormat")
        .env("GIT_CONFIG_VALUE_0", "files")
        .run(&init)?;
    write_alternates(&path.join(".git"), &borrowed.objects)?;
    let own = Git::own(path);
    match head {
        Head::Branch { name, at } => {
            own.run(&["update-ref", &format!("refs/heads/{name}"), at])?;
        }
        Head::Detached(at) => {
            own.run(&["update-ref", "--no-deref", "HEAD", at])?;
        }
    }
    own.run(&["read-tree", "--reset", "-u", "HEAD"])?;
    Ok(())
}

/// `<path>/.git`, when it is a real directory (not a symbolic link, not a file): the only kind
/// of `.git` a repository of this layout has.
pub(crate) fn check_git_dir(path: &Path) -> Result<PathBuf, GitError> {
    let dot_git = path.join(".git");
    match fs_err::symlink_metadata(&dot_git) {
        Ok(meta) if meta.file_type().is_dir() => Ok(dot_git),
        Ok(meta) if meta.file_type().is_symlink() => Err(GitError::layout(
            &dot_git,
            "is a symbolic link, not the repository Shepherd made",
        )),
        Ok(_) => Err(GitError::layout(
            &dot_git,
            "is not a directory, not the repository Shepherd made",
        )),
        Err(err) => Err(GitError::layout(
            &dot_git,
            format!("cannot be read ({err})"),
        )),
    }
}

/// Puts the `.git` of the repository at `path` back to what Shepherd made, before any git of
/// Shepherd's runs in it: its configuration is the template (the object format `borrowed`
/// has), its hooks directory empty, its `info/` gone, its alternates `borrowed`'s objects, and
/// nothing makes it another repository's worktree or rewrites its history's shape. Refuses (keeping it as it is) when its
/// objects, refs, `HEAD` or index are not plain files and directories of its own.
pub(crate) fn sanitise(path: &Path, borrowed: &Borrowed) -> Result<(), GitError> {
    let dot_git = check_git_dir(path)?;
    for (part, directory) in [
        ("objects", true),
        ("refs", true),
        ("HEAD", false),
        ("packed-refs", false),
        ("index", false),
        ("objects/info", true),
        ("objects/pack", true),
    ] {
        let at = dot_git.join(part);
        match fs_err::symlink_metadata(&at) {
            Ok(meta) if directory && meta.file_type().is_dir() => {}
            Ok(meta) if !directory && meta.file_type().is_file() => {}
            Ok(_) => {
                return Err(GitError::layout(
                    &at,
                    format!(
                        "is not a plain {} of the repository's own",
                        if directory { "directory" } else { "file" }
                    ),
                ));
            }
            Err(_) => {}
        }
    }
    // What would run a program, borrow another repository, or make its history read other
    // than as its objects say (grafts, a shallow list, commit graphs).
    for gone in [
        "info",
        "hooks",
        "commondir",
        "gitdir",
        "config.worktree",
        "shallow",
        "objects/info/http-alternates",
        "objects/info/grafts",
        "objects/info/commit-graph",
        "objects/info/commit-graphs",
    ] {
        remove(&dot_git.join(gone))?;
    }
    fs_err::create_dir(dot_git.join("hooks"))
        .map_err(|err| GitError::layout(&dot_git, format!("cannot be tidied ({err})")))?;
    let config = dot_git.join("config");
    remove(&config)?;
    write_new(&config, &template(&borrowed.format))?;
    write_alternates(&dot_git, &borrowed.objects)
}

/// The configuration a sheep's repository is put back to: only what git needs to read it.
fn template(format: &str) -> String {
    if format == "sha1" {
        "[core]\n\trepositoryformatversion = 0\n".to_owned()
    } else {
        format!("[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = {format}\n")
    }
}

/// Writes `objects/info/alternates` of `dot_git` afresh: the object directories it borrows.
fn write_alternates(dot_git: &Path, objects: &[PathBuf]) -> Result<(), GitError> {
    let info = dot_git.join("objects/info");
    fs_err::create_dir_all(&info)
        .map_err(|err| GitError::layout(&info, format!("cannot be made ({err})")))?;
    let alternates = info.join("alternates");
    remove(&alternates)?;
    let text: String = objects
        .iter()
        .map(|dir| format!("{}\n", dir.display()))
        .collect();
    write_new(&alternates, &text)
}

/// Removes whatever is at `path` (a file, a link, a directory with what it holds) without
/// following a symbolic link; nothing there is fine.
fn remove(path: &Path) -> Result<(), GitError> {
    let removed = match fs_err::symlink_metadata(path) {
        Err(_) => return Ok(()),
        Ok(meta) if meta.file_type().is_dir() => fs_err::remove_dir_all(path),
        Ok(_) => fs_err::remove_file(path),
    };
    removed.map_err(|err| GitError::layout(path, format!("cannot be removed ({err})")))
}

/// Writes a file that must not exist yet (so a link planted in its place is never followed).
fn write_new(path: &Path, text: &str) -> Result<(), GitError> {
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|err| GitError::layout(path, format!("cannot be written ({err})")))?;
    file.write_all(text.as_bytes())
        .map_err(|err| GitError::layout(path, format!("cannot be written ({err})")))
}

/// Fetches `refspec` (`+<theirs>:<ours>`) from the repository at `from` (sanitised first, when
/// a sheep held it) into the repository at `into`: objects come in through git's own
/// transport, written by the receiving side.
pub(crate) fn fetch(into: &Path, from: &Path, refspec: &str) -> Result<(), GitError> {
    Git::at(into)
        .run(&[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            // The project's housekeeping is its own git's to run, not every fetch of ours.
            "--no-auto-maintenance",
            &from.display().to_string(),
            refspec,
        ])
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    #[test]
    fn a_sheeps_repository_has_one_branch_borrows_the_objects_and_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        fs_err::create_dir_all(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        fs_err::write(project.join("a.txt"), "a\n").unwrap();
        git(&project, &["add", "a.txt"]);
        git(&project, &["commit", "-q", "-m", "first"]);
        git(&project, &["branch", "other"]);
        let base = git(&project, &["rev-parse", "HEAD"]);
        let borrowed = Borrowed::from(&project.join(".git")).unwrap();
        let own = dir.path().join("own");
        make(
            &own,
            &borrowed,
            Head::Branch {
                name: "shepherd/x",
                at: &base,
            },
        )
        .unwrap();
        assert_eq!(fs_err::read_to_string(own.join("a.txt")).unwrap(), "a\n");
        assert_eq!(
            git(&own, &["for-each-ref", "--format=%(refname)"]),
            "refs/heads/shepherd/x"
        );
        assert_eq!(git(&own, &["status", "--porcelain"]), "");

        // The sheep plants; sanitising puts it back; its commit comes home.
        git(&own, &["config", "core.fsmonitor", "echo planted"]);
        fs_err::create_dir_all(own.join(".git/hooks")).unwrap();
        fs_err::write(own.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        fs_err::create_dir_all(own.join(".git/info")).unwrap();
        fs_err::write(own.join(".git/info/attributes"), "* filter=x\n").unwrap();
        fs_err::write(own.join("b.txt"), "b\n").unwrap();
        git(&own, &["add", "b.txt"]);
        git(
            &own,
            &[
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "-m",
                "second",
            ],
        );
        fs_err::write(own.join(".git/commondir"), "../../project/.git").unwrap();
        fs_err::write(own.join(".git/objects/info/alternates"), "/elsewhere\n").unwrap();
        sanitise(&own, &borrowed).unwrap();
        assert_eq!(
            fs_err::read_to_string(own.join(".git/config")).unwrap(),
            "[core]\n\trepositoryformatversion = 0\n"
        );
        assert!(
            fs_err::read_dir(own.join(".git/hooks"))
                .unwrap()
                .next()
                .is_none()
        );
        assert!(!own.join(".git/info").exists() && !own.join(".git/commondir").exists());
        assert_eq!(
            fs_err::read_to_string(own.join(".git/objects/info/alternates")).unwrap(),
            format!("{}\n", borrowed.objects[0].display())
        );
        fetch(
            &project,
            &own,
            "+refs/heads/shepherd/x:refs/heads/shepherd/x",
        )
        .unwrap();
        assert_eq!(
            git(&project, &["log", "-1", "--format=%s", "shepherd/x"]),
            "second"
        );
        assert_eq!(git(&project, &["rev-parse", "main"]), base);
    }

    #[test]
    fn a_git_directory_that_is_a_link_or_borrows_through_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("own");
        fs_err::create_dir_all(&own).unwrap();
        fs_err::write(own.join(".git"), "gitdir: /elsewhere").unwrap();
        assert!(check_git_dir(&own).is_err());
        fs_err::remove_file(own.join(".git")).unwrap();
        fs_err::create_dir_all(own.join(".git")).unwrap();
        fs_err::os::unix::fs::symlink("/", own.join(".git/objects")).unwrap();
        let borrowed = Borrowed {
            objects: Vec::new(),
            format: "sha1".to_owned(),
        };
        let err = sanitise(&own, &borrowed).unwrap_err();
        assert!(err.to_string().contains("objects"), "{err}");
        // A planted link where the config goes is replaced, never written through.
        fs_err::remove_file(own.join(".git/objects")).unwrap();
        let target = dir.path().join("target");
        fs_err::write(&target, "untouched").unwrap();
        fs_err::os::unix::fs::symlink(&target, own.join(".git/config")).unwrap();
        sanitise(&own, &borrowed).unwrap();
        assert_eq!(fs_err::read_to_string(&target).unwrap(), "untouched");
    }
}
