//! Which file a URL path names, and only ever one inside the project that is safe to show: a
//! path with `..`, an absolute path, one that a symlink leads out of the project, a file that
//! holds secrets by convention, and a file with more than one hard link name nothing (the
//! server answers 404, the same as for a file that is not there, so nothing can be probed).
//!
//! A hard link is refused because nothing tells where its other names are: a sheep can link a
//! file from anywhere on the same filesystem into the project (`~/.ssh/id_rsa` as `notes.txt`),
//! and no path check sees it. Package managers that link from a store (pnpm's
//! `node_modules/.pnpm`) make such files too; they are not served, which costs a reader of
//! notes nothing.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

/// Folders whose files are never served, at any depth: a repository's internals (its config
/// can hold credentials, its hooks run), and the places tools keep keys and tokens.
const SECRET_FOLDERS: &[&str] = &[
    ".git",
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
];

/// Files never served by name.
const SECRET_FILES: &[&str] = &[
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials.json",
];

/// Extensions of key and keystore files, never served.
const SECRET_EXTENSIONS: &[&str] = &["pem", "key", "p12", "pfx", "jks", "keystore", "kdbx", "ppk"];

/// Whether a path component names something that holds secrets by convention: a secret
/// folder, a secret file, any `.env*` file (`.env`, `.env.local`, `.envrc`), or a key file.
fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let extension = Path::new(&name).extension().and_then(|e| e.to_str());
    name.starts_with(".env")
        || SECRET_FOLDERS.contains(&name.as_str())
        || SECRET_FILES
            .iter()
            .any(|secret| name == *secret || name.strip_prefix(secret) == Some(".pub"))
        || extension.is_some_and(|e| SECRET_EXTENSIONS.contains(&e))
}

/// Whether any component of `path` is secret.
fn has_secret_part(path: &Path) -> bool {
    path.components().any(|part| match part {
        Component::Normal(name) => is_secret(&name.to_string_lossy()),
        _ => false,
    })
}

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
            // Sent as an image (for `<img>`); opened on its own, its policy runs nothing.
            Some("svg") => Self::Image("image/svg+xml"),
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
    let inside = path.strip_prefix(root).ok()?;
    if has_secret_part(relative) || has_secret_part(inside) {
        return None;
    }
    let meta = fs_err::metadata(&path).ok()?;
    (meta.is_file() && meta.nlink() == 1).then_some(path)
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
    fn files_that_hold_secrets_by_convention_name_nothing() {
        let (_dir, root) = project();
        for path in [
            ".env",
            ".env.local",
            "app/.envrc",
            ".git/config",
            "sub/.git/config",
            ".ssh/id_rsa",
            "keys/id_ed25519",
            "keys/id_ed25519.pub",
            "tls/server.pem",
            "tls/SERVER.KEY",
            ".netrc",
            ".aws/credentials",
        ] {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "secret").unwrap();
            assert_eq!(resolve(&root, path), None, "{path}");
        }
        // A link with an innocent name to a secret inside the project is refused by where it
        // leads.
        std::os::unix::fs::symlink(root.join(".env"), root.join("env.txt")).unwrap();
        assert_eq!(resolve(&root, "env.txt"), None);
        for fine in ["environment.md", "id_generator.rs", "keys.md", "notes/a.md"] {
            let file = root.join(fine);
            std::fs::write(&file, "fine").unwrap();
            assert_eq!(resolve(&root, fine), Some(file), "{fine}");
        }
    }

    #[test]
    fn a_file_with_another_hard_link_names_nothing() {
        let (dir, root) = project();
        let outside = dir.path().join("id_rsa");
        std::fs::write(&outside, "PRIVATE KEY").unwrap();
        std::fs::hard_link(&outside, root.join("notes.txt")).unwrap();
        assert_eq!(resolve(&root, "notes.txt"), None);
        std::fs::remove_file(&outside).unwrap();
        assert_eq!(
            resolve(&root, "notes.txt"),
            Some(root.join("notes.txt")),
            "with its only name in the project it is an ordinary file"
        );
    }

    #[test]
    fn kinds_follow_the_extension() {
        assert_eq!(Kind::of(Path::new("a.MD")), Kind::Markdown);
        assert_eq!(Kind::of(Path::new("a.png")), Kind::Image("image/png"));
        assert_eq!(Kind::of(Path::new("a.html")), Kind::Text);
        assert_eq!(Kind::of(Path::new("a.svg")), Kind::Image("image/svg+xml"));
    }
}
