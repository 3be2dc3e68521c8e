//! A temporary machine for one test: a home directory, a pi agent directory outside it (as with
//! `PI_CODING_AGENT_DIR`), and a project with a nested working directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use shepherd_core::dirs::UserDirs;

pub(crate) struct Fixture {
    _root: tempfile::TempDir,
    pub(crate) dirs: UserDirs,
    /// The project root.
    pub(crate) project: PathBuf,
    /// A directory two levels below the project root, where commands run.
    pub(crate) nested: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = fs_err::canonicalize(root.path()).unwrap();
        let home = base.join("home");
        let project = base.join("work").join("project");
        let nested = project.join("src").join("deep");
        fs_err::create_dir_all(&home).unwrap();
        fs_err::create_dir_all(&nested).unwrap();
        let dirs = UserDirs {
            home: home.clone(),
            pi_agent_dir: base.join("pi-agent"),
            runtime_dir: base.join("run"),
            state_dir: base.join("state"),
        };
        Self {
            _root: root,
            dirs,
            project,
            nested,
        }
    }

    /// Writes `contents` to `path`, creating its directory.
    pub(crate) fn write(&self, path: &Path, contents: &str) -> PathBuf {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, contents).unwrap();
        path.to_path_buf()
    }

    pub(crate) fn user_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.dirs.pi_user_agents_dir().join(file), contents)
    }

    pub(crate) fn shared_user_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.dirs.shared_user_agents_dir().join(file), contents)
    }

    pub(crate) fn project_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.project.join(".pi/agents").join(file), contents)
    }

    pub(crate) fn shared_project_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.project.join(".agents/agents").join(file), contents)
    }
}

/// A valid definition file.
pub(crate) fn agent(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nYou are {name}.\n")
}

/// A definition file with extra frontmatter lines.
pub(crate) fn agent_with(name: &str, frontmatter: &str) -> String {
    format!("---\nname: {name}\ndescription: {name} agent\n{frontmatter}\n---\nBody of {name}.\n")
}
