//! Attacks through git by an isolated sheep (the report's A12–A14 and C4): a confined sheep
//! plants what git runs or moves what git keeps, and the test looks outside for what would
//! prove it worked — a line in a proof file the sandbox cannot see, written by a program git
//! ran as the user (at `shepherd close` or at the user's next `git status`, commit or
//! checkout), or a project ref that moved. `attack_git_workdir` holds the attacks from a
//! sheep's working directory (A15), `attack_git_land` those of a resolver and on a host.
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

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use shepherd_testkit::git::git;

use crate::attack_support::git::{GIT, project_with_branches, ran, run_attacker, users_next_steps};
use crate::attack_support::{define_attacker, proof};
use crate::herd_support::World;

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
