//! Hosts as a user sees them: `shepherd hosts` lists the hosts defined in the user settings,
//! `shepherd hosts check` says in one screen what a host has and lacks, and a sheep can run in
//! a host's own tmux, visible to anyone who attaches there.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use herd_support::World;
use remote_support::*;
use shepherd_testkit::git::git;
use shepherd_testkit::sshd::LoopbackHost;

#[test]
fn hosts_are_listed_and_checked_in_one_screen() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    let mut settings = serde_json::json!({ "hosts": {
        "devbox": host_def(&devbox),
        "gone": {"destination": "gone", "projectPath": "/nowhere",
                 "sshArgs": ["-F", devbox.ssh_config().unwrap(), "-o", "HostName=127.0.0.2"]},
        "broken": {"destination": "x", "projectPath": "relative"}
    }});
    settings["hosts"]["missing-binary"] = host_def(&devbox);
    settings["hosts"]["missing-binary"]["shepherd"] = "/no/such/shepherd".into();
    world.settings(&settings.to_string());

    let listed = world.json(&["hosts"]);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["devbox", "gone", "missing-binary", "broken"],
        "{listed}"
    );
    assert!(listed[3]["error"].as_str().unwrap().contains("projectPath"));

    let ready = world.json(&["hosts", "check", "devbox"]);
    assert_eq!(ready["ready"], true, "{ready}");
    let found = |report: &serde_json::Value, what: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["what"] == what)
            .cloned()
            .unwrap_or_else(|| panic!("no {what} in {report}"))
    };
    assert_eq!(found(&ready, "project")["ok"], true);
    assert_eq!(found(&ready, "backend headless")["ok"], true);
    assert_eq!(found(&ready, "tmux")["ok"], true, "tmux is on this machine");
    assert_eq!(
        found(&ready, "bwrap")["ok"],
        true,
        "bubblewrap, which confines sandboxed sheep, is on this machine"
    );

    let human = world.run(&["hosts", "check", "devbox"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.starts_with("host devbox: ready for remote sheep"),
        "{text}"
    );
    assert!(text.lines().count() < 20, "one screen: {text}");

    let (code, missing) = world.json_status(&["hosts", "check", "missing-binary"]);
    assert_eq!(code, 69, "{missing}");
    assert_eq!(found(&missing, "reachable")["ok"], true, "{missing}");
    let shepherd = found(&missing, "shepherd");
    assert_eq!(shepherd["ok"], false);
    assert!(
        shepherd["detail"]
            .as_str()
            .unwrap()
            .contains("/no/such/shepherd"),
        "{shepherd}"
    );

    let (code, gone) = world.json_status(&["hosts", "check", "gone"]);
    assert_eq!(code, 69, "{gone}");
    assert_eq!(found(&gone, "reachable")["ok"], false, "{gone}");

    let (code, unknown, message) = world.error(&["hosts", "check", "nope"]);
    assert_eq!((code, unknown.as_str()), (2, "unknown_host"), "{message}");
}

#[test]
fn a_sheep_in_the_hosts_tmux_is_visible_there_and_gone_after_close() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let spawned = world.json(&[
        "spawn",
        "scribe",
        "--label",
        "shown",
        "--host",
        "devbox",
        "--backend",
        "tmux",
    ]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    assert_eq!(spawned["backend"], "tmux", "{spawned}");
    let host_tmux = |args: &[&str]| -> String {
        let out = std::process::Command::new("tmux")
            .args(args)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", &devbox.tmux)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let windows = host_tmux(&["list-windows", "-a", "-F", "#{window_name}"]);
    assert!(
        windows.lines().any(|name| name.contains("scribe: shown")),
        "the sheep has a window in the host's tmux: {windows:?}"
    );
    let task = delegate(&world, &agent, "look at me");
    let done = settled(&world, &task, 60);
    assert_eq!(
        done["summary"],
        format!("did: look at me in {}", devbox.project.display())
    );
    world.json(&["close", &agent]);
    wait_no_process(&agent, std::time::Duration::from_secs(10));
    let windows = host_tmux(&["list-windows", "-a", "-F", "#{window_name}"]);
    assert!(
        !windows.lines().any(|name| name.contains("scribe: shown")),
        "closed: {windows:?}"
    );
    // Shepherd started the host's tmux for this sheep: with its last sheep closed, the session
    // it made is gone, and the server with it.
    let sessions = host_tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert!(sessions.trim().is_empty(), "left on the host: {sessions:?}");
}

/// Makes the world's project a git repository with one commit, and gives the host its own
/// checkout of it.
fn checked_out_on(world: &World, host: &LoopbackHost) {
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README"), "hello\n").unwrap();
    git(&world.project, &["add", "README"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    git(
        host.project.parent().unwrap(),
        &["clone", "-q", world.project.to_str().unwrap(), "project"],
    );
}

#[test]
fn an_isolated_remote_sheeps_commits_come_home_as_a_branch() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    checked_out_on(&world, &devbox);
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let script = "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
                  echo \"$t\" > work.txt; git add work.txt; \
                  git -c user.name=Sheep -c user.email=sheep@example.com commit -q -m \"$t\"; \
                  shepherd done --status completed --summary \"committed in $PWD\"; done";
    world.define("coder", &["sh".into(), "-c".into(), script.into()]);
    let spawned = world.json(&["spawn", "coder", "--host", "devbox", "--isolate"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let worktree = &spawned["worktree"];
    assert_eq!(worktree["host"], "devbox", "{spawned}");
    let branch = worktree["branch"].as_str().unwrap().to_owned();
    let path = worktree["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with(&devbox.home.display().to_string())
            && !path.starts_with(&devbox.project.display().to_string()),
        "the host's worktree lives outside its checkout: {path}"
    );

    let task = delegate(&world, &agent, "add the work file");
    let done = settled(&world, &task, 60);
    assert_eq!(done["summary"], format!("committed in {path}"), "{done}");
    let closed = world.json(&["close", &agent]);
    let report = &closed["worktree"];
    assert_eq!(report["broughtHome"], true, "{closed}");
    assert_eq!(
        report["kept"], false,
        "a clean worktree leaves the host: {closed}"
    );
    assert!(
        report["integrate"].as_str().unwrap().contains(&branch),
        "{closed}"
    );
    // The commit is on the branch here, and the host's worktree is gone.
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", &branch]),
        "add the work file"
    );
    assert_eq!(
        git(&world.project, &["show", &format!("{branch}:work.txt")]),
        "add the work file"
    );
    assert!(!std::path::Path::new(&path).exists(), "{path} was removed");
    // The note of its task says where the work went.
    let note = std::fs::read_to_string(done["note"].as_str().unwrap()).unwrap();
    assert!(note.contains(&branch), "{note}");
    // And it lands like any branch Shepherd made.
    let (code, merged) = world.json_status(&["merge", &agent]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(merged["branches"][0]["state"], "merged", "{merged}");
    let target = merged["target"].as_str().unwrap().to_owned();
    assert_eq!(
        git(&world.project, &["show", &format!("{target}:work.txt")]),
        "add the work file"
    );
}

/// A sheep that committed and also left uncommitted work: its commits come home (and are
/// reported so), its worktree stays on the host with the rest, and the close's words say both.
#[test]
fn commits_come_home_even_when_uncommitted_work_stays_on_the_host() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    checked_out_on(&world, &devbox);
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let script = "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
                  echo \"$t\" > work.txt; git add work.txt; \
                  git -c user.name=Sheep -c user.email=sheep@example.com commit -q -m \"$t\"; \
                  echo draft > scratch.txt; \
                  shepherd done --status completed --summary committed; done";
    world.define("coder", &["sh".into(), "-c".into(), script.into()]);
    let spawned = world.json(&["spawn", "coder", "--host", "devbox", "--isolate"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let branch = spawned["worktree"]["branch"].as_str().unwrap().to_owned();
    let task = delegate(&world, &agent, "commit some");
    settled(&world, &task, 60);
    let closed = world.run(&["close", &agent]);
    assert!(closed.status.success(), "{closed:?}");
    let said = String::from_utf8(closed.stdout).unwrap();
    assert!(
        said.contains(&format!("1 commit brought home on branch {branch}"))
            && said.contains("worktree kept on host devbox")
            && !said.contains("clean, no new commits"),
        "{said}"
    );
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", &branch]),
        "commit some"
    );
    let herd = world.json(&["status", &agent]);
    assert_eq!(herd["state"], "closed", "{herd}");
}

#[test]
fn a_host_definition_corrected_after_a_failed_spawn_is_used_at_once() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    let mut wrong = host_def(&devbox);
    wrong["shepherd"] = "/no/such/shepherd".into();
    world.settings(&serde_json::json!({ "hosts": { "devbox": wrong } }).to_string());
    define_scribe(&world, "scribe", None);
    let (code, error, message) = world.error(&["spawn", "scribe", "--host", "devbox"]);
    assert_eq!(
        (code, error.as_str()),
        (69, "host_unreachable"),
        "{message}"
    );
    assert!(message.contains("/no/such/shepherd"), "{message}");
    // The same broker runs on; the user fixes the definition and spawns again.
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let agent = spawn_on(&world, "scribe", "devbox");
    let task = delegate(&world, &agent, "after the fix");
    assert_eq!(settled(&world, &task, 60)["status"], "completed");
}

#[test]
fn a_run_on_a_host_with_isolate_brings_each_tasks_commits_home() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    checked_out_on(&world, &devbox);
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let script = "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
                  echo \"$t\" > \"$t.txt\"; git add \"$t.txt\"; \
                  git -c user.name=Sheep -c user.email=sheep@example.com commit -q -m \"$t\"; \
                  shepherd done --status completed --summary \"committed $t\"; done";
    world.define("coder", &["sh".into(), "-c".into(), script.into()]);
    let (code, report) = world.json_status(&[
        "run",
        "--parallel",
        "coder=alpha",
        "coder=beta",
        "--host",
        "devbox",
        "--isolate",
    ]);
    assert_eq!(code, 0, "{report}");
    let results = report["results"].as_array().unwrap();
    for (result, word) in results.iter().zip(["alpha", "beta"]) {
        let worktree = &result["worktree"];
        assert_eq!(worktree["host"], "devbox", "{report}");
        assert_eq!(worktree["broughtHome"], true, "{report}");
        let branch = worktree["branch"].as_str().unwrap();
        assert_eq!(
            git(&world.project, &["show", &format!("{branch}:{word}.txt")]),
            word,
            "the task's commit is here on its branch"
        );
    }
    assert_eq!(
        report["worktrees"].as_array().map_or(0, Vec::len),
        2,
        "both branches are listed to integrate: {report}"
    );
}

#[test]
fn a_host_removed_from_the_settings_still_lets_its_sheep_be_read_and_closed() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let agent = spawn_on(&world, "scribe", "devbox");
    world.settings("{}");
    let (code, error, message) = world.error(&["spawn", "scribe", "--host", "devbox"]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    let task = delegate(&world, &agent, "still here");
    assert_eq!(settled(&world, &task, 60)["status"], "completed");
    world.json(&["close", &agent]);
    wait_no_process(&agent, std::time::Duration::from_secs(10));
}

/// Where a sheep runs is said in `run`'s progress lines, and `shepherd hosts` shows the link the
/// herd's broker keeps to each host: none before any sheep went there, up while one runs.
#[test]
fn run_progress_and_the_hosts_list_say_where_sheep_run() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    checked_out_on(&world, &devbox);
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let script = "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
                  shepherd done --status completed --summary \"did $t\"; done";
    world.define("doer", &["sh".into(), "-c".into(), script.into()]);

    let before = world.json(&["hosts"]);
    assert_eq!(before[0]["links"], serde_json::json!([]), "{before}");
    let text = String::from_utf8(world.run(&["hosts"]).stdout).unwrap();
    assert!(text.contains("no link"), "{text}");

    let ran = world.run(&[
        "run",
        "doer",
        "hello",
        "--host",
        "devbox",
        "--progress",
        "plain",
    ]);
    let progress = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{progress}");
    assert!(
        progress
            .lines()
            .any(|line| line.starts_with("[1/1] doer: running on host devbox")),
        "{progress}"
    );

    // A sheep on the host keeps the herd's link up.
    let spawned = world.json(&["spawn", "doer", "--host", "devbox"]);
    assert_eq!(spawned["host"], "devbox", "{spawned}");
    let after = world.json(&["hosts"]);
    let links = after[0]["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{after}");
    assert_eq!(links[0]["up"], true, "{after}");
    let text = String::from_utf8(world.run(&["hosts"]).stdout).unwrap();
    assert!(text.contains("link up (herd "), "{text}");
    world.run(&["broker", "stop"]);
}
