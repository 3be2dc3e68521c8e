//! A throwaway machine for CLI tests of `shepherd agents` and `shepherd settings`: the built
//! binary runs with `HOME`, `PI_CODING_AGENT_DIR` and the XDG directories inside one temporary
//! directory, in a project with a nested working directory, and its output is normalised so
//! snapshots hold on any machine.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Machine {
    _root: tempfile::TempDir,
    /// The temporary directory everything lives in, canonical.
    pub(crate) base: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) pi_dir: PathBuf,
    pub(crate) project: PathBuf,
    /// `<project>/src/deep`: where commands run unless told otherwise.
    pub(crate) nested: PathBuf,
}

/// What one run printed.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Machine {
    pub(crate) fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = fs_err::canonicalize(root.path()).unwrap();
        let project = base.join("project");
        let nested = project.join("src").join("deep");
        let home = base.join("home");
        fs_err::create_dir_all(&nested).unwrap();
        fs_err::create_dir_all(&home).unwrap();
        Self {
            _root: root,
            pi_dir: base.join("pi-agent"),
            home,
            project,
            nested,
            base,
        }
    }

    /// Runs `shepherd ARGS` in the nested project directory.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_in(&self.nested, args)
    }

    /// Runs `shepherd ARGS` in `dir`.
    pub(crate) fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_shepherd"))
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("HOME", &self.home)
            .env("PI_CODING_AGENT_DIR", &self.pi_dir)
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .output()
            .unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: self.normalise(&String::from_utf8(output.stdout).unwrap()),
            stderr: self.normalise(&String::from_utf8(output.stderr).unwrap()),
        }
    }

    /// Writes `contents` to `path`, creating its directory.
    pub(crate) fn write(&self, path: &Path, contents: &str) -> PathBuf {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, contents).unwrap();
        path.to_path_buf()
    }

    pub(crate) fn user_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.pi_dir.join("agents").join(file), contents)
    }

    pub(crate) fn project_agent(&self, file: &str, contents: &str) -> PathBuf {
        self.write(&self.project.join(".pi/agents").join(file), contents)
    }

    pub(crate) fn user_config(&self) -> PathBuf {
        self.pi_dir.join("pi-shepherd").join("config.json")
    }

    fn normalise(&self, text: &str) -> String {
        text.replace(&self.base.display().to_string(), "[TMP]")
    }
}

impl Run {
    /// Exit status, stdout and stderr, for a snapshot.
    pub(crate) fn transcript(&self) -> String {
        let mut text = format!("exit: {}\n", self.code);
        if !self.stdout.is_empty() {
            text.push_str(&format!("--- stdout\n{}", self.stdout));
        }
        if !self.stderr.is_empty() {
            text.push_str(&format!("--- stderr\n{}", self.stderr));
        }
        text
    }

    /// Asserts success and returns stdout.
    pub(crate) fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        &self.stdout
    }

    /// Asserts a `--json` run printed exactly one JSON line, and parses it.
    pub(crate) fn json(&self) -> serde_json::Value {
        assert_eq!(
            self.stdout.lines().count(),
            1,
            "not one line: {}",
            self.stdout
        );
        serde_json::from_str(&self.stdout).unwrap()
    }
}

/// A valid definition file.
pub(crate) fn agent(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nYou are {name}.\n")
}

/// Snapshot settings: content hashes change whenever a bundled agent's wording does.
pub(crate) fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    settings.add_filter(r"\b[0-9a-f]{12}…", "[SHA256]…");
    settings
}
