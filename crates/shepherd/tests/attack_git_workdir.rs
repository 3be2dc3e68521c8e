//! Attacks through git from a sheep's working directory: a non-isolated confined sheep cannot
//! write the project's `.git/hooks` or `.git/config` (it still edits its files), nor be started
//! inside the project's `.git` (its directory would be writable), and a `.git`
//! file written in a working directory (A15: `gitdir: /worktrees/x`, or one naming a linked
//! worktree of another repository of the user) neither widens the next confined sheep's
//! sandbox there nor lets an isolated spawn there isolate the wrong repository.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::attack_support::git::{GIT, project_with_branches, ran, run_attacker, users_next_steps};
use crate::attack_support::{define_attacker, proof};
use crate::herd_support::World;

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

#[test]
fn a_confined_sheep_is_not_started_inside_a_git_directory() {
    let world = World::new();
    project_with_branches(&world);
    define_attacker(
        &world,
        "inside",
        "sandbox: workspace\nnetwork: none",
        &format!("{GIT}\n{SHARED_GIT}"),
    );
    let hooks = world.project.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let (code, error, message) =
        world.error(&["spawn", "inside", "--cwd", hooks.to_str().unwrap()]);
    assert_eq!((code, error.as_str()), (2, "invalid_cwd"), "{message}");
    assert!(message.contains(".git"), "{message}");
    assert!(!hooks.join("pre-commit").exists());
}
