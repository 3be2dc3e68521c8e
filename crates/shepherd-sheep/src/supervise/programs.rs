//! What a confined program needs to read to start at all: its installation.
//!
//! The sandbox hides `$HOME`, `/tmp` and the runtime directory, and agents are often installed
//! there: an npm prefix in `~/.local`, a version manager's shims (asdf, mise, volta, pyenv,
//! nvm), a checkout's own tool directory under `/tmp`. Binding only the program's own file is
//! not enough when that file is a wrapper script that `exec`s a program in a sibling directory
//! (`tools=$(dirname "$0")/..; exec "$tools/lib/agent"`): inside, the wrapper runs and the
//! program it names is missing, and the sheep exits 127. So the supervisor follows what a
//! program is, on the machine the sheep runs on:
//!
//! - a file inside a `node_modules` tree: the whole tree's package (the outermost
//!   `node_modules`' parent), since a Node program loads its dependencies from there;
//! - any other file: its directory, or the file alone when that directory is one that must
//!   stay hidden (`$HOME` itself, say);
//! - a script (`#!`): its interpreter (through `env` too), every absolute or `$HOME`-relative
//!   path its text names, and its install root — the parent of the `bin` or `shims` directory
//!   it sits in (`.tools/bin/claude` → `.tools`, `~/.asdf/shims/node` → `~/.asdf`);
//! - a version manager's `shims` directory, script or not: its parent.
//!
//! A directory that holds the user's secrets or state is never bound whole this way (`$HOME`
//! and its ancestors, `~/.config`, `~/.local`, `~/.ssh` and the like): a program found there
//! binds only itself. What this cannot find, the user declares (`sandboxPaths`), and the broker
//! passes it as `--sandbox-read`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How many scripts deep a wrapper is followed (a shim that runs a manager that runs a
/// wrapper that runs the program is three).
const MAX_DEPTH: usize = 4;
/// How much of a script is read for the paths it names.
const SCRIPT_HEAD: usize = 64 * 1024;
/// How many slashes of one script's text are looked at for paths it names.
const MAX_NAMED: usize = 512;

/// Directories under `$HOME` that hold a person's secrets or state: never bound whole, even as
/// the install root of a script found inside them.
const PRIVATE_UNDER_HOME: &[&str] = &[
    ".local",
    ".local/share",
    ".local/state",
    ".local/lib",
    ".config",
    ".cache",
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".cargo",
    ".npm",
    ".pi",
    ".pi/agent",
    ".claude",
    ".codex",
    ".gemini",
    ".password-store",
    ".mozilla",
];

/// What the program needs on the machine it runs on.
pub(super) struct Installs<'a> {
    /// What the sandbox hides (`$HOME`, the runtime directory, `/tmp`, a `strict` project):
    /// only what lies under one of these needs binding.
    pub(super) hidden: &'a [&'a Path],
    /// `$HOME`, whose private directories are never bound whole.
    pub(super) home: Option<&'a Path>,
    /// `PATH`, where bare names are found.
    pub(super) path: Option<std::ffi::OsString>,
}

impl Installs<'_> {
    /// The directories and files to bind read-only so that `program` (its words) and each of
    /// `programs` (programs it runs that its words do not name: another agent's binary, which
    /// its driver starts) can start inside the sandbox.
    pub(super) fn dirs(&self, program: &[String], programs: &[PathBuf]) -> Vec<PathBuf> {
        let mut walk = Walk {
            installs: self,
            seen: BTreeSet::new(),
            bound: BTreeSet::new(),
        };
        let first = program.first().and_then(|name| self.on_path(name));
        let words = program
            .iter()
            .map(PathBuf::from)
            .filter(|path| path.is_absolute());
        for path in words.chain(first).chain(programs.iter().cloned()) {
            walk.visit(&path, 0);
        }
        walk.bound.into_iter().collect()
    }

    /// Where a bare program name is found on `PATH`.
    fn on_path(&self, name: &str) -> Option<PathBuf> {
        if name.is_empty() || name.contains('/') {
            return None;
        }
        std::env::split_paths(self.path.as_ref()?)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    }

    fn is_hidden(&self, path: &Path) -> bool {
        self.hidden.iter().any(|dir| path.starts_with(dir))
    }

    /// Whether `dir` must never be bound whole: the root, a hidden root or what holds one,
    /// `$HOME` and what holds it, and the private directories under `$HOME`.
    fn is_private(&self, dir: &Path) -> bool {
        if dir == Path::new("/") || self.hidden.iter().any(|hidden| hidden.starts_with(dir)) {
            return true;
        }
        let Some(home) = self.home else { return false };
        home.starts_with(dir)
            || PRIVATE_UNDER_HOME
                .iter()
                .any(|private| dir == home.join(private))
    }
}

struct Walk<'a> {
    installs: &'a Installs<'a>,
    seen: BTreeSet<PathBuf>,
    bound: BTreeSet<PathBuf>,
}

impl Walk<'_> {
    fn visit(&mut self, path: &Path, depth: usize) {
        if depth > MAX_DEPTH || !self.seen.insert(path.to_owned()) || !path.exists() {
            return;
        }
        let real = fs_err::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        for form in [path, real.as_path()] {
            self.bind_install(form);
            if let Some(root) = shims_root(form) {
                self.bind_dir(root);
            }
        }
        // A script inside a `node_modules` tree brings its whole package already; its text
        // (minified JavaScript, full of slashes) names nothing more worth following.
        if outermost_node_modules(&real).is_some() {
            return;
        }
        let Some(text) = script_head(&real) else {
            return;
        };
        let mut roots = Vec::new();
        for dir in [path, real.as_path()].into_iter().filter_map(Path::parent) {
            roots.push(dir.to_owned());
            if let Some(root) = install_root(dir) {
                self.bind_dir(root);
                roots.push(root.to_owned());
            }
        }
        let named: Vec<PathBuf> = interpreter(&text)
            .into_iter()
            .flat_map(|word| self.resolve(&word))
            .chain(named_paths(&text, self.installs.home, &roots))
            .collect();
        for next in named {
            self.visit(&next, depth + 1);
        }
    }

    /// A program's own installation: its package in a `node_modules` tree, else its directory
    /// (or itself, where its directory is private).
    fn bind_install(&mut self, path: &Path) {
        if !self.installs.is_hidden(path) {
            return;
        }
        if let Some(package) = outermost_node_modules(path).and_then(Path::parent) {
            self.bind_dir(package);
            return;
        }
        match path.parent() {
            Some(dir) if path.is_file() && !self.installs.is_private(dir) => self.bind(dir),
            _ => self.bind(path),
        }
    }

    /// Binds `dir` unless it is private.
    fn bind_dir(&mut self, dir: &Path) {
        if !self.installs.is_private(dir) {
            self.bind(dir);
        }
    }

    fn bind(&mut self, path: &Path) {
        if self.installs.is_hidden(path) && !self.installs.is_private(path) {
            self.bound.insert(path.to_owned());
        }
    }

    /// An interpreter word: an absolute path as it is, a bare name through `PATH`.
    fn resolve(&self, word: &str) -> Option<PathBuf> {
        if word.starts_with('/') {
            Some(PathBuf::from(word))
        } else {
            self.installs.on_path(word)
        }
    }
}

/// The first bytes of `path` when it is a script (starts with `#!`).
fn script_head(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = fs_err::File::open(path).ok()?;
    let mut head = Vec::with_capacity(1024);
    file.take(SCRIPT_HEAD as u64).read_to_end(&mut head).ok()?;
    head.starts_with(b"#!")
        .then(|| String::from_utf8_lossy(&head).into_owned())
}

/// The interpreter a script's `#!` line names: through `env` (with or without `-S`), the
/// program `env` runs.
fn interpreter(text: &str) -> Vec<String> {
    let line = text.lines().next().unwrap_or_default();
    let mut words = line.trim_start_matches("#!").split_whitespace();
    let Some(first) = words.next() else {
        return Vec::new();
    };
    if Path::new(first)
        .file_name()
        .is_some_and(|name| name == "env")
    {
        let program = words.find(|word| !word.starts_with('-') && !word.contains('='));
        return [first.to_owned()]
            .into_iter()
            .chain(program.map(str::to_owned))
            .collect();
    }
    vec![first.to_owned()]
}

/// The files a script's text names, that exist: absolute paths, paths under `$HOME`
/// (`$HOME/…`, `${HOME}/…`, `~/…`), and paths it builds from its own location
/// (`"$tools/lib/agent"` after `tools=$(dirname "$0")/..`, `"$(dirname "$0")/../lib/agent"`),
/// tried against each of `roots` (the script's directory and its install root).
fn named_paths(text: &str, home: Option<&Path>, roots: &[PathBuf]) -> Vec<PathBuf> {
    let stop = |c: char| c.is_whitespace() || "\"'`;|&()<>=:,$".contains(c);
    let mut found: Vec<PathBuf> = Vec::new();
    let mut keep = |path: PathBuf| {
        let path = normalise(&path);
        if path != Path::new("/") && path.exists() && !found.contains(&path) {
            found.push(path);
        }
    };
    // A wrapper names a handful of paths near its top: only the first slashes are looked at.
    for (start, _) in text.match_indices('/').take(MAX_NAMED) {
        let before = &text[..start];
        let rest: String = text[start + 1..]
            .chars()
            .take_while(|c| !stop(*c))
            .collect();
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() || rest.chars().all(|c| c == '.' || c == '/') {
            continue;
        }
        let previous = before.chars().next_back();
        if ["$HOME", "${HOME}", "~"]
            .iter()
            .any(|prefix| before.ends_with(prefix))
        {
            if let Some(home) = home {
                keep(home.join(rest));
            }
        } else if previous.is_none_or(|c| c.is_whitespace() || "\"'`;|&(<>=:,".contains(c)) {
            keep(Path::new("/").join(rest));
        } else if previous.is_some_and(|c| c == ')' || c == '}' || c.is_alphanumeric() || c == '_')
        {
            // The end of `$(dirname "$0")`, `${dir}` or `$tools`: a path from somewhere the
            // script found at run time, most often beside itself.
            if before.contains('$') {
                for root in roots {
                    keep(root.join(rest));
                }
            }
        }
    }
    found
}

/// `path` with its `.` and `..` components worked out by name (no symlink is followed).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The parent of the outermost `node_modules` directory holding `path`.
fn outermost_node_modules(path: &Path) -> Option<&Path> {
    path.ancestors()
        .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
        .last()
}

/// A version manager's root: the parent of the `shims` directory `path` sits in.
fn shims_root(path: &Path) -> Option<&Path> {
    let dir = path.parent()?;
    (dir.file_name()? == "shims").then(|| dir.parent())?
}

/// A script's install root: the parent of the `bin`, `.bin` or `shims` directory it sits in.
fn install_root(dir: &Path) -> Option<&Path> {
    let name = dir.file_name()?;
    (name == "bin" || name == ".bin" || name == "shims").then(|| dir.parent())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn dirs(root: &Path, home: &Path, program: &[&str]) -> Vec<PathBuf> {
        let hidden = [root];
        Installs {
            hidden: &hidden,
            home: Some(home),
            path: std::env::var_os("PATH"),
        }
        .dirs(
            &program.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>(),
            &[],
        )
    }

    #[test]
    fn a_wrapper_in_a_bin_directory_brings_its_install_root() {
        let root = tempfile::tempdir().unwrap();
        let tools = root.path().join("checkout/.tools");
        script(
            &tools.join("bin/agent"),
            "#!/bin/sh\ntools=$(cd \"$(dirname \"$0\")/..\" && pwd)\nexec \"$tools/agent/run\" \"$@\"\n",
        );
        script(&tools.join("agent/run"), "#!/bin/sh\necho hi\n");
        let home = root.path().join("home");
        let bound = dirs(
            root.path(),
            &home,
            &[tools.join("bin/agent").to_str().unwrap()],
        );
        assert!(bound.contains(&tools), "{bound:?}");
    }

    #[test]
    fn a_script_brings_what_it_names_under_home_and_absolutely() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        script(
            &home.join(".asdf/shims/agent"),
            &format!(
                "#!/bin/sh\nexec {}/.asdf/bin/asdf exec agent \"$@\"\n",
                home.display()
            ),
        );
        script(
            &home.join(".asdf/bin/asdf"),
            "#!/bin/sh\nexec \"$HOME/.asdf/installs/agent/1.0/bin/agent\"\n",
        );
        script(
            &home.join(".asdf/installs/agent/1.0/bin/agent"),
            "#!/bin/sh\n",
        );
        let bound = dirs(
            root.path(),
            &home,
            &[home.join(".asdf/shims/agent").to_str().unwrap()],
        );
        assert!(bound.contains(&home.join(".asdf")), "{bound:?}");
        assert!(!bound.contains(&home), "{bound:?}");
    }

    #[test]
    fn home_and_its_private_directories_are_never_bound_whole() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        script(&home.join("agent"), "#!/bin/sh\necho hi\n");
        script(&home.join(".local/bin/other"), "#!/bin/sh\necho hi\n");
        script(&home.join(".cargo/bin/tool"), "#!/bin/sh\necho hi\n");
        let bound = dirs(
            root.path(),
            &home,
            &[
                home.join("agent").to_str().unwrap(),
                home.join(".local/bin/other").to_str().unwrap(),
                home.join(".cargo/bin/tool").to_str().unwrap(),
            ],
        );
        assert!(bound.contains(&home.join("agent")), "{bound:?}");
        assert!(bound.contains(&home.join(".local/bin")), "{bound:?}");
        for private in [
            home.clone(),
            home.join(".local"),
            home.join(".cargo"),
            root.path().to_owned(),
        ] {
            assert!(!bound.contains(&private), "{private:?} in {bound:?}");
        }
    }

    #[test]
    fn a_node_program_brings_its_whole_package_tree() {
        let root = tempfile::tempdir().unwrap();
        let prefix = root.path().join("home/.npm-global");
        let cli = prefix.join("lib/node_modules/@scope/agent/bin/cli.js");
        script(&cli, "#!/usr/bin/env node\n");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::os::unix::fs::symlink(&cli, prefix.join("bin/agent")).unwrap();
        let bound = dirs(
            root.path(),
            &root.path().join("home"),
            &[prefix.join("bin/agent").to_str().unwrap()],
        );
        assert!(bound.contains(&prefix.join("lib")), "{bound:?}");
    }

    #[test]
    fn what_is_not_hidden_is_not_bound() {
        let root = tempfile::tempdir().unwrap();
        let bound = dirs(root.path(), &root.path().join("home"), &["sh", "/bin/true"]);
        assert!(bound.is_empty(), "{bound:?}");
    }

    #[test]
    fn an_env_shebang_names_the_program_env_runs() {
        assert_eq!(
            interpreter("#!/usr/bin/env -S node --flag\n"),
            ["/usr/bin/env", "node"]
        );
        assert_eq!(interpreter("#!/bin/bash -e\n"), ["/bin/bash"]);
    }
}
