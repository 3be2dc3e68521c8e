//! Attacks through git (the report's A12–A15 and C4): a confined sheep plants what git runs or
//! moves what git keeps, and the test looks outside for what would prove it worked — a line in
//! a proof file the sandbox cannot see, written by a program git ran as the user (at
//! `shepherd close` or at the user's next `git status` or commit), or a project ref moved.
//!
//! - A13: an isolated `strict` sheep sets `core.fsmonitor`; it runs neither at close nor at the
//!   user's next `git status` or commit.
//! - A12: the same sheep plants hooks (`reference-transaction`, `pre-commit`, `post-checkout`,
//!   …) and `core.hooksPath`; none runs at close nor at the user's next commit or checkout.
//! - A14: it moves `main` to its own commit and deletes another branch; the project's refs
//!   stay where they were.
//! - C4: `git branch -a` and `git log --all` show only its own branch.
//! - A planted clean filter and textconv (`.gitattributes` and its repository's config) do not
//!   run at close.
//! - A non-isolated confined sheep cannot write the project's `.git/hooks` or `.git/config`.
//! - A15: a `.git` file written in a sheep's working directory (`gitdir: /worktrees/x`, or one
//!   naming a linked worktree of another repository of the user) neither widens the next
//!   confined sheep's sandbox there nor lets an isolated spawn there isolate the wrong
//!   repository.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::attack_support::{define_attacker, proof};
use crate::herd_support::World;

/// Git as the attacker runs it, with an identity so its commits work in the sandbox.
const GIT: &str = r##"
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
fn project_with_branches(world: &World) -> (String, String) {
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
fn run_attacker(world: &World, name: &str, task: &str, args: &[&str]) -> (Value, Value) {
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
fn ran(proof: &Path) -> String {
    std::fs::read_to_string(proof).unwrap_or_default()
}

/// The user's next steps in the project: `git status`, a commit, a checkout and back.
fn users_next_steps(world: &World) {
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

const FSMONITOR: &str = r##"
t = task()
f = {}
f["config"] = git("config", "core.fsmonitor", "echo fsmonitor >> %s; false" % t)[0] == 0
f["shared"] = write(os.path.join(common_dir(), "config"),
                    "[core]\n\tfsmonitor = echo shared >> %s; false\n" % t, "a")
write("committed.txt", "work\n")
git("add", "committed.txt")
f["commit"] = git("commit", "-q", "-m", "work")[0] == 0
write("uncommitted.txt", "more work\n")
write("README.md", "# changed\n")
done(f)
"##;

#[test]
fn a13_a_planted_fsmonitor_runs_neither_at_close_nor_at_the_users_next_status() {
    let world = World::new();
    project_with_branches(&world);
    define_attacker(
        &world,
        "fsmon",
        "sandbox: strict\nnetwork: none",
        &format!("{GIT}\n{FSMONITOR}"),
    );
    let proof = proof(&world, "fsmonitor");
    let (found, worktree) = run_attacker(
        &world,
        "fsmon",
        &proof.display().to_string(),
        &["--isolate"],
    );
    assert_eq!(
        found["config"], true,
        "the sheep set it in its repository: {found}"
    );
    assert_eq!(found["commit"], true, "{found}");
    assert_eq!(
        ran(&proof),
        "",
        "fsmonitor ran at close: {found} {worktree}"
    );
    assert!(
        worktree["preserved"].is_string(),
        "its work came home all the same: {worktree}"
    );
    users_next_steps(&world);
    assert_eq!(
        ran(&proof),
        "",
        "fsmonitor ran at the user's next steps: {found}"
    );
}

const HOOKS: &str = r##"
t = task()
f = {}
names = ["reference-transaction", "pre-commit", "post-commit", "post-checkout", "post-merge",
         "post-index-change", "pre-auto-gc"]
for where, hooks in [("own", git("rev-parse", "--path-format=absolute", "--git-path", "hooks")[1]),
                     ("shared", os.path.join(common_dir(), "hooks")),
                     ("alt", os.path.abspath("alt-hooks"))]:
    for name in names:
        f[where + ":" + name] = hook(os.path.join(hooks, name), t, name)
f["hooksPath"] = git("config", "core.hooksPath", os.path.abspath("alt-hooks"))[0] == 0
write("work.txt", "work\n")
git("add", "work.txt")
f["commit"] = git("commit", "-q", "-m", "work")[0]
write("loose.txt", "uncommitted\n")
done(f)
"##;

#[test]
fn a12_planted_hooks_run_neither_at_close_nor_at_the_users_next_commit() {
    let world = World::new();
    project_with_branches(&world);
    define_attacker(
        &world,
        "hooker",
        "sandbox: strict\nnetwork: none",
        &format!("{GIT}\n{HOOKS}"),
    );
    let proof = proof(&world, "hooks");
    let (found, worktree) = run_attacker(
        &world,
        "hooker",
        &proof.display().to_string(),
        &["--isolate"],
    );
    assert_eq!(found["own:pre-commit"], "written", "{found}");
    assert_eq!(ran(&proof), "", "a hook ran at close: {found} {worktree}");
    let branch = worktree["branch"].as_str().unwrap();
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", branch]),
        "work",
        "its commit came home on its branch: {worktree}"
    );
    users_next_steps(&world);
    assert_eq!(
        ran(&proof),
        "",
        "a hook ran at the user's next steps: {found}"
    );
}

const REFS: &str = r##"
t = task()
f = {}
f["commit"] = git("commit", "-q", "--allow-empty", "-m", "SBX-evil")[0] == 0
head = git("rev-parse", "HEAD")[1]
f["move main"] = git("update-ref", "refs/heads/main", "HEAD")[1]
f["delete branch"] = git("update-ref", "-d", "refs/heads/secret-branch")[1]
f["branch -D"] = git("branch", "-D", "secret-branch")[1]
common = common_dir()
f["write ref file"] = write(os.path.join(common, "refs", "heads", "main"), head + "\n")
f["packed-refs"] = write(os.path.join(common, "packed-refs"), head + " refs/heads/main\n")
project = os.environ.get("SHEPHERD_PROJECT", "")
f["project ref file"] = write(os.path.join(project, ".git", "refs", "heads", "main"), head + "\n")
done(f)
"##;

#[test]
fn a14_an_isolated_strict_sheep_cannot_move_or_delete_the_projects_branches() {
    let world = World::new();
    let (main, secret) = project_with_branches(&world);
    define_attacker(
        &world,
        "mover",
        "sandbox: strict\nnetwork: none",
        &format!("{GIT}\n{REFS}"),
    );
    let (found, worktree) = run_attacker(&world, "mover", "go", &["--isolate"]);
    assert_eq!(found["commit"], true, "{found}");
    assert_eq!(
        git(&world.project, &["rev-parse", "main"]),
        main,
        "main moved: {found}"
    );
    assert_eq!(
        git(&world.project, &["rev-parse", "refs/heads/secret-branch"]),
        secret,
        "secret-branch moved or went: {found}"
    );
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", "main"]),
        "start"
    );
    // Its own commit comes home on its own branch, and only there.
    let branch = worktree["branch"].as_str().unwrap();
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", branch]),
        "SBX-evil",
        "{worktree}"
    );
}

const LOOK: &str = r##"
t = task()
f = {
    "branches": git("branch", "-a", "--format=%(refname)")[1],
    "refs": git("for-each-ref", "--format=%(refname)")[1],
    "log": git("log", "--all", "--format=%s")[1],
    "stash": git("stash", "list")[1],
}
done(f)
"##;

#[test]
fn c4_an_isolated_strict_sheep_sees_only_its_own_branch() {
    let world = World::new();
    project_with_branches(&world);
    git(
        &world.project,
        &[
            "update-ref",
            "refs/shepherd/preserved/other-sheep",
            "secret-branch",
        ],
    );
    define_attacker(
        &world,
        "looker",
        "sandbox: strict\nnetwork: none",
        &format!("{GIT}\n{LOOK}"),
    );
    let (found, worktree) = run_attacker(&world, "looker", "go", &["--isolate"]);
    let branch = worktree["branch"].as_str().unwrap();
    assert_eq!(
        found["branches"].as_str().unwrap(),
        format!("refs/heads/{branch}"),
        "{found}"
    );
    assert_eq!(
        found["refs"].as_str().unwrap(),
        format!("refs/heads/{branch}"),
        "{found}"
    );
    assert_eq!(found["log"], "start", "{found}");
    assert_eq!(found["stash"], "", "{found}");
}

const FILTERS: &str = r##"
t = task()
f = {}
f["clean"] = git("config", "filter.x.clean", "echo clean >> %s; cat" % t)[0] == 0
f["smudge"] = git("config", "filter.x.smudge", "echo smudge >> %s; cat" % t)[0] == 0
f["process"] = git("config", "filter.y.process", "echo process >> %s; false" % t)[0] == 0
f["textconv"] = git("config", "diff.x.textconv", "echo textconv >> %s; cat" % t)[0] == 0
f["external"] = git("config", "diff.external", "echo external >> %s; true" % t)[0] == 0
write(".gitattributes", "* filter=x diff=x\n*.y filter=y\n")
write("sub/file.txt", "changed by the sheep\n")
git("add", ".gitattributes", "sub/file.txt")
f["commit"] = git("commit", "-q", "-m", "attributes")[0] == 0
write("sub/file.txt", "changed again\n")
write("README.md", "# changed\n")
write("new.y", "new\n")
done(f)
"##;

#[test]
fn a_planted_clean_filter_and_textconv_do_not_run_at_close() {
    let world = World::new();
    project_with_branches(&world);
    define_attacker(
        &world,
        "filterer",
        "sandbox: strict\nnetwork: none",
        &format!("{GIT}\n{FILTERS}"),
    );
    let proof = proof(&world, "filters");
    let (found, worktree) = run_attacker(
        &world,
        "filterer",
        &proof.display().to_string(),
        &["--isolate"],
    );
    assert_eq!(found["clean"], true, "{found}");
    assert_eq!(found["commit"], true, "{found}");
    assert_eq!(ran(&proof), "", "a filter ran at close: {found} {worktree}");
    // Its changes came home unfiltered.
    let preserved = worktree["preserved"]
        .as_str()
        .unwrap_or_else(|| panic!("{worktree}"));
    assert_eq!(
        git(
            &world.project,
            &["show", &format!("{preserved}:sub/file.txt")]
        ),
        "changed again"
    );
    assert!(
        worktree["files"]
            .as_array()
            .is_some_and(|files| files.iter().any(|f| f == "README.md")),
        "{worktree}"
    );
    users_next_steps(&world);
    git(&world.project, &["diff", "HEAD~1"]);
    assert_eq!(ran(&proof), "", "a filter ran at the user's next steps");
}

const SHARED_GIT: &str = r##"
t = task()
f = {}
f["hook"] = hook(os.path.join(".git", "hooks", "pre-commit"), t, "pre-commit")
f["config"] = write(os.path.join(".git", "config"), "[core]\n\tfsmonitor = echo x >> %s\n" % t, "a")
f["git config"] = git("config", "core.fsmonitor", "echo y >> %s" % t)[0] == 0
write("work.txt", "work\n")
git("add", "work.txt")
f["commit"] = git("commit", "-q", "-m", "sheep commit")[0] == 0
f["edit"] = write("README.md", "# edited by the sheep\n")
done(f)
"##;

#[test]
fn a_non_isolated_confined_sheep_cannot_write_the_projects_git_directory() {
    for sandbox in ["workspace", "strict"] {
        let world = World::new();
        let (main, _) = project_with_branches(&world);
        let config = std::fs::read(world.project.join(".git/config")).unwrap();
        define_attacker(
            &world,
            "writer",
            &format!("sandbox: {sandbox}\nnetwork: none"),
            &format!("{GIT}\n{SHARED_GIT}"),
        );
        let proof = proof(&world, "shared-git");
        let (found, _) = run_attacker(&world, "writer", &proof.display().to_string(), &[]);
        assert_eq!(
            found["edit"], "written",
            "{sandbox}: it still edits its working directory: {found}"
        );
        assert!(
            found["hook"].as_str().unwrap().starts_with("refused"),
            "{sandbox}: {found}"
        );
        assert!(
            found["config"].as_str().unwrap().starts_with("refused"),
            "{sandbox}: {found}"
        );
        assert_eq!(found["commit"], false, "{sandbox}: {found}");
        assert!(!world.project.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read(world.project.join(".git/config")).unwrap(),
            config,
            "{sandbox}: the project's config changed"
        );
        assert_eq!(git(&world.project, &["rev-parse", "main"]), main);
        users_next_steps(&world);
        assert_eq!(ran(&proof), "", "{sandbox}: something planted ran");
    }
}

/// A15's planter: writes the `.git` file its task names in its working directory.
const PLANT_GIT_FILE: &str = r##"
t = task()
done({"planted": write(".git", t + "\n")})
"##;

/// A15's second sheep, started where the file was planted: its task is three paths, the user's
/// key, another repository's config and a file to write outside.
const REACH: &str = r##"
key, other, outside = task().split("\n")[:3]
def read(path):
    def go():
        with open(path) as f:
            return f.read().strip()
    return try_(go)
done({"key": read(key), "other": read(other), "outside": write(outside, "escaped\n")})
"##;

#[test]
fn a15_a_git_file_planted_in_a_working_directory_widens_nothing() {
    let world = World::new();
    project_with_branches(&world);
    let sub = world.project.join("sub");
    let ssh = world.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "USER-PRIVATE-KEY\n").unwrap();
    // Another repository of the user's, with a linked worktree a `.git` file could name.
    let other = world.home.join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    std::fs::write(other.join("other.txt"), "OTHER-REPOSITORY\n").unwrap();
    git(&other, &["add", "other.txt"]);
    git(&other, &["commit", "-q", "-m", "other"]);
    let feature = world.home.join("other-feature");
    git(
        &other,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            feature.to_str().unwrap(),
        ],
    );
    let linked = other.join(".git/worktrees/other-feature");
    assert!(linked.is_dir());

    define_attacker(
        &world,
        "planter",
        "sandbox: workspace\nnetwork: none",
        &format!("{GIT}\n{PLANT_GIT_FILE}"),
    );
    for (mode, i) in [("workspace", 0), ("strict", 1)] {
        define_attacker(
            &world,
            &format!("reacher{i}"),
            &format!("sandbox: {mode}\nnetwork: none"),
            &format!("{GIT}\n{REACH}"),
        );
    }
    let sub_arg = sub.display().to_string();
    for pointer in [
        "gitdir: /worktrees/x".to_owned(),
        format!("gitdir: {}", linked.display()),
    ] {
        let (planted, _) = run_attacker(&world, "planter", &pointer, &["--cwd", &sub_arg]);
        assert_eq!(planted["planted"], "written", "{planted}");
        for i in 0..2 {
            let outside = world.home.join(format!("outside-{i}"));
            let task = format!(
                "{}\n{}\n{}",
                ssh.join("id_rsa").display(),
                other.join(".git/config").display(),
                outside.display()
            );
            let (found, _) =
                run_attacker(&world, &format!("reacher{i}"), &task, &["--cwd", &sub_arg]);
            assert!(
                found["key"].as_str().unwrap().starts_with("refused"),
                "{pointer}: the key was read: {found}"
            );
            assert!(
                found["other"].as_str().unwrap().starts_with("refused"),
                "{pointer}: another repository was read: {found}"
            );
            assert!(
                !outside.exists(),
                "{pointer}: a file outside was written: {found}"
            );
        }
        // An isolated spawn there does not take the planted file's word for its repository.
        let spawned = world.run(&[
            "spawn",
            "reacher0",
            "--isolate",
            "--cwd",
            &sub_arg,
            "--json",
        ]);
        let stdout = String::from_utf8_lossy(&spawned.stdout);
        if spawned.status.success() {
            let doc: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
            let path = Path::new(doc["worktree"]["path"].as_str().unwrap());
            assert!(
                path.join("sub/file.txt").is_file() && !path.join("other.txt").exists(),
                "{pointer}: it isolated another repository: {doc}"
            );
        } else {
            let stderr = String::from_utf8_lossy(&spawned.stderr);
            let mut lines = stderr.lines();
            let said = lines.next().unwrap_or_default();
            assert!(
                said.contains(&sub.join(".git").display().to_string()),
                "{pointer}: the refusal names the file: {stderr}"
            );
            assert!(
                lines.all(|line| line.starts_with("hint: ")),
                "one line, and at most a hint: {stderr}"
            );
        }
        assert_eq!(
            git(&other, &["rev-parse", "--abbrev-ref", "HEAD"]),
            "main",
            "the other repository is untouched"
        );
        std::fs::remove_file(sub.join(".git")).unwrap();
    }
}
