//! Attacks through git where Shepherd brings work home: a confined resolver of the merge
//! queue plants what git runs in the merge worktree it resolves in, and none of it runs at the
//! queue's own git, at the check or at the user's next steps, and only the target moves; an
//! isolated `strict` sheep on a host commits into its own repository there (the host
//! checkout's objects read-only) and plants a fsmonitor and a hook, its commit comes home at
//! close, and nothing it planted runs on the host.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::attack_support::git::{GIT, project_with_branches, ran, users_next_steps};
use crate::attack_support::{define_attacker, proof};
use crate::herd_support::World;

/// The resolver: resolves the conflict as asked, and plants on the way. `PROOF` is prepended.
const RESOLVER: &str = r##"
task()
f = {}
f["fsmonitor"] = git("config", "core.fsmonitor", "echo fsmonitor >> %s; false" % PROOF)[0] == 0
f["filter"] = git("config", "filter.x.clean", "echo clean >> %s; cat" % PROOF)[0] == 0
write(".gitattributes", "* filter=x\n")
for name in ["reference-transaction", "pre-commit", "post-commit", "post-merge",
             "post-checkout", "post-index-change"]:
    f["hook:" + name] = hook(os.path.join(common_dir(), "hooks", name), PROOF, name)
f["move main"] = git("update-ref", "refs/heads/main", "HEAD")[1]
f["delete branch"] = git("update-ref", "-d", "refs/heads/secret-branch")[1]
write("same", "same one\nsame two\n")
git("add", "same")
f["commit"] = git("commit", "-q", "--no-edit")[0]
done(f)
"##;

/// The merge queue's writer: writes its task's first line into `same`, uncommitted.
const SAME_WRITER: &str = r##"
t = task().split("\n")[0]
write("same", t + "\n")
done({"wrote": t})
"##;

#[test]
fn a_confined_resolver_runs_nothing_outside_and_moves_only_the_target() {
    let world = World::new();
    let (_, secret) = project_with_branches(&world);
    std::fs::write(world.project.join("same"), "base\n").unwrap();
    git(&world.project, &["add", "same"]);
    git(&world.project, &["commit", "-q", "-m", "same"]);
    define_attacker(
        &world,
        "writer",
        "sandbox: off",
        &format!("{GIT}\n{SAME_WRITER}"),
    );
    let proof = proof(&world, "resolver");
    define_attacker(
        &world,
        "resolver",
        "sandbox: strict\nnetwork: none",
        &format!(
            "PROOF = {:?}\n{GIT}\n{RESOLVER}",
            proof.display().to_string()
        ),
    );
    let (code, doc) = world.json_status(&[
        "run",
        "--parallel",
        "writer=same one",
        "writer=same two",
        "--isolate",
    ]);
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    let (code, merge) = world.json_status(&[
        "merge",
        &run_id,
        "--resolve",
        "resolver",
        "--check",
        "git status --porcelain > /dev/null && git diff HEAD~1 > /dev/null",
    ]);
    assert_eq!(code, 0, "{merge}");
    assert_eq!(merge["branches"][1]["state"], "merged", "{merge}");
    let planted: Value = serde_json::from_str(
        merge["branches"][1]["resolver"]["summary"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(planted["fsmonitor"], true, "{planted}");
    assert_eq!(
        planted["hook:reference-transaction"], "written",
        "{planted}"
    );
    assert_eq!(planted["commit"], 0, "it made the merge commit: {planted}");
    assert_eq!(
        ran(&proof),
        "",
        "something the resolver planted ran: {merge}"
    );
    assert_eq!(
        git(&world.project, &["show", "main:same"]),
        "same one\nsame two"
    );
    assert_eq!(
        git(&world.project, &["rev-parse", "refs/heads/secret-branch"]),
        secret
    );
    assert!(
        git(&world.project, &["for-each-ref", "refs/shepherd/landing"]).is_empty(),
        "the merge's own ref is gone"
    );
    users_next_steps(&world);
    assert_eq!(ran(&proof), "", "something the resolver planted ran later");
}

#[test]
fn an_isolated_sheep_on_a_host_commits_home_and_what_it_plants_runs_nowhere() {
    if !crate::remote_support::required() {
        return;
    }
    let devbox = shepherd_testkit::sshd::LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    project_with_branches(&world);
    git(
        devbox.project.parent().unwrap(),
        &["clone", "-q", world.project.to_str().unwrap(), "project"],
    );
    crate::remote_support::define_hosts(&world, &[&devbox], serde_json::json!({}));
    let proof = devbox.home.join("proof-remote");
    let shown = proof.display();
    let script = format!(
        "t=$(shepherd inbox --wait 60); \
         git config core.fsmonitor 'echo fsmonitor >> {shown}; false'; \
         h=$(git rev-parse --path-format=absolute --git-common-dir)/hooks; mkdir -p \"$h\"; \
         printf '#!/bin/sh\\necho hook >> {shown}\\n' > \"$h/reference-transaction\"; \
         chmod +x \"$h/reference-transaction\"; \
         echo work > work.txt; git add work.txt; \
         if git -c user.name=S -c user.email=s@example.invalid commit -q -m work; \
         then c=committed; else c=not-committed; fi; \
         shepherd done --status completed --summary \"$c $(git branch -a --format='%(refname)' | wc -l)\"; \
         sleep 60"
    );
    world.define_file(
        "remote-planter",
        &format!(
            "---\nname: remote-planter\ndescription: An attacker sheep.\ncommand: {}\nsandbox: strict\nnetwork: none\n---\nAn attacker.\n",
            serde_json::to_string(&["sh", "-c", &script]).unwrap()
        ),
    );
    let spawned = world.json(&["spawn", "remote-planter", "--host", "devbox", "--isolate"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let branch = spawned["worktree"]["branch"].as_str().unwrap().to_owned();
    let task = crate::remote_support::delegate(&world, &agent, "go");
    let done = crate::remote_support::settled(&world, &task, 60);
    assert_eq!(done["summary"], "committed 1", "{done}");
    let closed = world.json(&["close", &agent]);
    assert_eq!(closed["worktree"]["broughtHome"], true, "{closed}");
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", &branch]),
        "work"
    );
    assert_eq!(
        ran(&proof),
        "",
        "something it planted ran on the host: {closed}"
    );
    git(&devbox.project, &["status", "--porcelain"]);
    git(
        &devbox.project,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "the host user's next commit",
        ],
    );
    assert_eq!(
        ran(&proof),
        "",
        "something it planted ran at the host user's next steps"
    );
}
