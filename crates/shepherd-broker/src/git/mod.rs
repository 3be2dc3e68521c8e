//! The one way Shepherd runs git: on a sheep's worktree, in the merge queue and on a host's
//! side. A sheep can write files git reads as instructions — its repository's config (a
//! `core.fsmonitor`, a filter, a textconv), its hooks, its `.gitattributes` — and git runs what
//! they name as whoever runs git. Shepherd's git runs as the user, outside every sandbox, so
//! every command goes through [`Git`], which:
//!
//! - gives git a deadline (a git that hangs on a lock or a prompt is killed, not waited on);
//! - turns hooks and the fsmonitor hook off and refuses the `ext::` transport on its command
//!   line (`-c core.hooksPath=/dev/null -c core.fsmonitor=false -c protocol.ext.allow=never`),
//!   where they beat every configuration file;
//! - asks `diff`, `log` and `show` for `--no-ext-diff --no-textconv`;
//! - never prompts or pages (`GIT_TERMINAL_PROMPT=0`, `GIT_PAGER=cat`, `GIT_EDITOR=:`);
//! - starts git with none of the broker's own `GIT_*` variables (a `GIT_DIR`, `GIT_CONFIG_*`
//!   or `GIT_SSH_COMMAND` it inherited would decide which repository and which programs):
//!   only those its caller sets.
//!
//! What the command line cannot switch off (a filter a sheep's config defines, say) is kept
//! out another way: a repository a sheep could write is either put back to what Shepherd made
//! before any git runs in it ([`own_repo::sanitise`]), or checked first and refused
//! ([`program_keys::refuse`]). [`discover`] decides which repository a directory belongs to
//! without taking a planted `.git` file's word for it.

// This module owns the git processes Shepherd runs.
#![allow(clippy::disallowed_types)]

pub(crate) mod discover;
pub(crate) mod own_repo;
pub(crate) mod program_keys;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long one git command may take unless its caller says otherwise.
pub(crate) const DEADLINE: Duration = Duration::from_secs(120);

/// Settings on every git command line, where they beat every configuration file: no hook (of
/// the hooks directory or `core.hooksPath`), no fsmonitor hook, no `ext::` transport (which
/// runs a command named in a URL).
const HARDENING: [&str; 6] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "protocol.ext.allow=never",
];

/// Subcommands that can hand a diff to a program (`diff.external`, a textconv).
const DIFFING: [&str; 3] = ["diff", "log", "show"];

/// The environment every git command gets: it never waits for a person.
const QUIET: [(&str, &str); 5] = [
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", ":"),
    ("GIT_SEQUENCE_EDITOR", ":"),
    ("GIT_ASKPASS", ""),
];

/// Why git did not do its work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GitError {
    /// git could not be started, or was stopped at its deadline.
    #[error("git {args} could not run: {message}")]
    Start {
        /// The arguments, as typed.
        args: String,
        /// Why.
        message: String,
    },
    /// git ran and refused; its first line of complaint.
    #[error("git {args} failed: {message}")]
    Failed {
        /// The arguments, as typed.
        args: String,
        /// The first line git printed on stderr.
        message: String,
    },
    /// A repository's own configuration names a program git would run.
    #[error(
        "{key} = {value} in {file} would run a program; Shepherd runs no git in a repository a \
         sheep could configure so"
    )]
    ProgramKey {
        /// The key, as git lists it.
        key: String,
        /// Its value.
        value: String,
        /// The file that sets it.
        file: String,
    },
    /// A file or directory of a repository is not what git or Shepherd made.
    #[error("{path} {why}")]
    Layout {
        /// The path.
        path: String,
        /// What is wrong with it.
        why: String,
    },
}

impl GitError {
    pub(crate) fn layout(path: &Path, why: impl Into<String>) -> Self {
        Self::Layout {
            path: path.display().to_string(),
            why: why.into(),
        }
    }
}

/// What a finished git command printed, and whether it succeeded.
#[derive(Debug, Clone)]
pub(crate) struct Ran {
    pub(crate) success: bool,
    /// Its exit status, when it exited (`diff --quiet` says "differs" with 1).
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Ran {
    /// Its first line of complaint (standard error, else standard output).
    pub(crate) fn complaint(&self) -> String {
        first_line(&format!("{}\n{}", self.stderr, self.stdout))
    }
}

/// One git command's setting: where it runs, which variables it is given, within what time.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    dir: std::path::PathBuf,
    env: Vec<(String, String)>,
    deadline: Duration,
}

impl Git {
    /// git in `dir` (`git -C dir`), finding its repository from there.
    pub(crate) fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            env: Vec::new(),
            deadline: DEADLINE,
        }
    }

    /// git in a repository Shepherd made for a sheep (`<path>/.git`, work tree `<path>`),
    /// named outright so nothing found on the way decides, and with replace refs ignored so a
    /// ref the sheep made cannot stand one object in for another.
    pub(crate) fn own(path: &Path) -> Self {
        Self::at(path)
            .env("GIT_DIR", path.join(".git").display().to_string())
            .env("GIT_WORK_TREE", path.display().to_string())
            .env("GIT_NO_REPLACE_OBJECTS", "1")
    }

    /// The directory it runs in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same, with `key=value` in git's environment.
    pub(crate) fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// The same, with these variables.
    pub(crate) fn envs<'a>(
        mut self,
        vars: impl IntoIterator<Item = &'a (&'a str, &'a str)>,
    ) -> Self {
        for (key, value) in vars {
            self.env.push(((*key).to_owned(), (*value).to_owned()));
        }
        self
    }

    /// The same, within `deadline`.
    pub(crate) fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs `git <args>`: its standard output (trailing whitespace trimmed), or why not.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let ran = self.output(args)?;
        if ran.success {
            Ok(ran.stdout.trim_end().to_owned())
        } else {
            Err(GitError::Failed {
                args: args.join(" "),
                message: first_line(&ran.stderr),
            })
        }
    }

    /// Runs `git <args>` and returns what it printed, whether it succeeded or not.
    pub(crate) fn output(&self, args: &[&str]) -> Result<Ran, GitError> {
        let mut command = self.command(args);
        let out =
            shepherd_term::process::run_with_deadline(&mut command, Instant::now() + self.deadline)
                .map_err(|err| GitError::Start {
                    args: args.join(" "),
                    message: err.to_string(),
                })?;
        Ok(Ran {
            success: out.success,
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command.args(HARDENING).arg("-C").arg(&self.dir);
        if let Some((subcommand, rest)) = args.split_first() {
            command.arg(subcommand);
            if DIFFING.contains(subcommand) {
                command.args(["--no-ext-diff", "--no-textconv"]);
            }
            command.args(rest);
        }
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                command.env_remove(key);
            }
        }
        command.envs(QUIET);
        command.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        command
    }
}

/// `git <args>` in `dir`: its output, or its first line of complaint.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    Git::at(dir).run(args)
}

/// The first line of `text` that says something.
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_carries_the_hardening_and_diffs_run_no_driver() {
        let git = Git::at(Path::new("/r")).env("GIT_INDEX_FILE", "/tmp/i");
        let command = git.command(&["diff", "--name-only", "HEAD"]);
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "protocol.ext.allow=never",
                "-C",
                "/r",
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--name-only",
                "HEAD"
            ]
        );
        let env: Vec<(String, Option<String>)> = command
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        assert!(env.contains(&("GIT_TERMINAL_PROMPT".into(), Some("0".into()))));
        assert!(env.contains(&("GIT_INDEX_FILE".into(), Some("/tmp/i".into()))));
        let status = Git::at(Path::new("/r")).command(&["status"]);
        assert!(
            !status.get_args().any(|a| a == "--no-textconv"),
            "only diffing commands get the diff switches"
        );
    }

    #[test]
    fn a_git_that_hangs_is_stopped_at_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        // Reading a fifo nobody writes blocks git until the deadline.
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = Instant::now();
        let err = Git::at(dir.path())
            .deadline(Duration::from_millis(300))
            .run(&["hash-object", "fifo"])
            .unwrap_err();
        assert!(
            matches!(&err, GitError::Start { message, .. } if message.contains("in time")),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
