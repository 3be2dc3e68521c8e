//! The git attacks' tools: Python helpers the attackers share (git with an identity, writing a
//! file or a hook and saying whether it landed), a project with a branch the sheep must not
//! see, a run of an attacker with its findings and its worktree's report, and the user's next
//! steps in the project (status, commit, checkout), after which nothing planted may have run.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::herd_support::World;

/// Git as the attacker runs it, with an identity so its commits work in the sandbox.
pub const GIT: &str = r##"
def git(*args):
    r = subprocess.run(["git", "-c", "user.name=S", "-c", "user.email=s@example.invalid", *args],
                       capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()

def write(path, text, mode="w"):
    def go():
        with open(path, mode) as f:
            f.write(text)
        return "written"
    return try_(go)

def hook(path, proof, name):
    def go():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho %s >> %s\nexit 0\n" % (name, proof))
        os.chmod(path, 0o755)
        return "written"
    return try_(go)

def common_dir():
    return git("rev-parse", "--path-format=absolute", "--git-common-dir")[1]
"##;

/// A project with a first commit on `main`, and `secret-branch` holding a commit the sheep
/// must not see.
pub fn project_with_branches(world: &World) -> (String, String) {
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "# project\n").unwrap();
    std::fs::create_dir_all(world.project.join("sub")).unwrap();
    std::fs::write(world.project.join("sub/file.txt"), "project file\n").unwrap();
    git(&world.project, &["add", "README.md", "sub/file.txt"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    git(&world.project, &["branch", "secret-branch"]);
    git(&world.project, &["checkout", "-q", "secret-branch"]);
    git(
        &world.project,
        &["commit", "-q", "--allow-empty", "-m", "SECRET-SUBJECT"],
    );
    git(&world.project, &["checkout", "-q", "main"]);
    (
        git(&world.project, &["rev-parse", "main"]),
        git(&world.project, &["rev-parse", "secret-branch"]),
    )
}

/// Runs the attacker through `shepherd run … --json` and returns its findings and the run's
/// report of its worktree.
pub fn run_attacker(world: &World, name: &str, task: &str, args: &[&str]) -> (Value, Value) {
    let mut argv = vec!["run", name, task, "--json"];
    argv.extend_from_slice(args);
    let out = world.run(&argv);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "shepherd run {name}: {err}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary = report["results"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} left no summary: {report}"));
    let found = serde_json::from_str(summary)
        .unwrap_or_else(|err| panic!("{name}: {err}: {summary}\n{report}"));
    (found, report["results"][0]["worktree"].clone())
}

/// What the proof file says, empty when nothing ran outside.
pub fn ran(proof: &Path) -> String {
    std::fs::read_to_string(proof).unwrap_or_default()
}

/// The user's next steps in the project: `git status`, a commit, a checkout and back.
pub fn users_next_steps(world: &World) {
    git(&world.project, &["status", "--porcelain"]);
    git(
        &world.project,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "the user's next commit",
        ],
    );
    git(&world.project, &["checkout", "-q", "-b", "users-next"]);
    git(&world.project, &["checkout", "-q", "main"]);
}
