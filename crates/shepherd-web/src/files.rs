//! Which file a URL path names, and only ever one inside the project: a path with `..`, an
//! absolute path, or one that a symlink leads out of the project names nothing (the server
//! answers 404, the same as for a file that is not there, so nothing outside can be probed).

use std::path::{Component, Path, PathBuf};

/// How a file is sent: rendered, or as it is with a type that cannot run anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Markdown, rendered (sanitised) as a page.
    Markdown,
    /// An image a note may show.
    Image(&'static str),
    /// Anything else, as plain text.
    Text,
}

impl Kind {
    /// How the file at `path` is sent, by its extension.
    pub(crate) fn of(path: &Path) -> Self {
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("md" | "markdown") => Self::Markdown,
            Some("png") => Self::Image("image/png"),
            Some("jpg" | "jpeg") => Self::Image("image/jpeg"),
            Some("gif") => Self::Image("image/gif"),
            Some("webp") => Self::Image("image/webp"),
            _ => Self::Text,
        }
    }
}

/// The file `relative` (a URL path, already decoded) names inside `root` (canonical), or `None`
/// when it names nothing there.
pub(crate) fn resolve(root: &Path, relative: &str) -> Option<PathBuf> {
    let relative = Path::new(relative);
    if relative.as_os_str().is_empty()
        || relative
            .components()
            .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    // Canonical: every symlink on the way followed, so where it really is can be checked.
    let path = root.join(relative).canonicalize().ok()?;
    (path.starts_with(root) && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("notes/a.md"), "# A").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn a_file_inside_is_found() {
        let (_dir, root) = project();
        assert_eq!(resolve(&root, "notes/a.md"), Some(root.join("notes/a.md")));
        assert_eq!(
            resolve(&root, "./notes/a.md"),
            Some(root.join("notes/a.md"))
        );
    }

    #[test]
    fn parent_steps_absolute_paths_and_folders_name_nothing() {
        let (_dir, root) = project();
        for path in [
            "../secret.txt",
            "notes/../../secret.txt",
            "notes/../notes/a.md",
            "/etc/passwd",
            "notes",
            "",
        ] {
            assert_eq!(resolve(&root, path), None, "{path}");
        }
    }

    #[test]
    fn a_symlink_out_of_the_project_names_nothing() {
        let (dir, root) = project();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("leak.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        std::os::unix::fs::symlink(root.join("notes/a.md"), root.join("inside.md")).unwrap();
        assert_eq!(resolve(&root, "leak.txt"), None);
        assert_eq!(resolve(&root, "up/secret.txt"), None);
        assert_eq!(resolve(&root, "inside.md"), Some(root.join("notes/a.md")));
    }

    #[test]
    fn kinds_follow_the_extension() {
        assert_eq!(Kind::of(Path::new("a.MD")), Kind::Markdown);
        assert_eq!(Kind::of(Path::new("a.png")), Kind::Image("image/png"));
        assert_eq!(Kind::of(Path::new("a.html")), Kind::Text);
        assert_eq!(Kind::of(Path::new("a.svg")), Kind::Text);
    }
}
