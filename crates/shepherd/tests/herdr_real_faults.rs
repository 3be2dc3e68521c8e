//! The faults found when Shepherd first met a real Herdr (`research/herdr-real-check.md` §5),
//! each reproduced through the real `shepherd` binary against a private real server, with the
//! behaviour that fixes it: a pane id reused after a restart (B1), a server that is gone (B2),
//! a moved pane (B3), an rc file that reads stdin (B4), `auto` after Herdr died (B5), a close
//! that would hold the whole server (B6), the caller's pane found through its ancestry when a
//! wrapper stripped the environment, and the shutdown of a whole herd.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::herdr_real_support;
use shepherd_testkit::procs;

use serde_json::json;
use shepherd_testkit::fake_herdr::real::RealOptions;

use herdr_real_support::HerdrWorld;

/// A process that leaves the sheep's process group (so ending the sheep does not reach it),
/// prints `leftover-started`, lives a second and notes in `log` any hang-up it hears, then
/// `done`.
fn leftover(log: &std::path::Path) -> String {
    r#"perl -e '$| = 1; setpgrp(0, 0); sub note { open(my $f, ">>", $ARGV[0]); print $f "$_[0]\n" } $SIG{HUP} = sub { note("hup") }; print "leftover-started\n"; select(undef, undef, undef, 1); note("done")' 'LOG' &"#
        .replace("LOG", &log.display().to_string())
}

#[test]
fn closing_an_old_sheep_after_a_restart_spares_the_users_pane_with_its_id() {
    let Some(mut hw) = HerdrWorld::start("faults_b1_restart_reused_id") else {
        return;
    };
    hw.world.define_test_sheep("sleeper", "idle", None);
    let old = hw.world.spawn("sleeper", "old");
    let old_pane = hw.pane_labelled("sleeper: old").unwrap()["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A fresh session, in which the user has made panes by the time Shepherd looks again:
    // one of them has the old sheep's pane id, and runs something of the user's.
    hw.herdr.restart_fresh_then(|herdr| {
        let made = herdr.call("workspace.create", &json!({"cwd": "/tmp", "label": "user"}));
        assert_eq!(made["root_pane"]["pane_id"], "w1:p1");
        let mut mine = String::new();
        while mine != old_pane {
            let applied = herdr.call(
                "layout.apply",
                &json!({"workspace_id": "w1", "root": {"type": "pane", "command": ["sleep", "777"], "cwd": "/tmp"}}),
            );
            mine = applied["layout"]["root"]["pane_id"].as_str().unwrap().to_owned();
            assert!(mine.len() < 6, "ids did not start again");
        }
    });
    hw.world.json(&["close", &old]);
    let info = hw
        .herdr
        .call("pane.process_info", &json!({"pane_id": old_pane}));
    assert_eq!(
        info["process_info"]["foreground_processes"][0]["argv"],
        json!(["sleep", "777"]),
        "the user's pane {old_pane} was closed"
    );
    hw.world.json(&["prune"]);
    assert!(!hw.registry().contains("sleeper: old"));
}

#[test]
fn once_the_server_is_gone_prune_forgets_and_close_succeeds() {
    let Some(mut hw) = HerdrWorld::start("faults_b2_server_gone") else {
        return;
    };
    hw.world.define_test_sheep("sleeper", "idle", None);
    let first = hw.world.spawn("sleeper", "one");
    let second = hw.world.spawn("sleeper", "two");
    hw.herdr.kill9();
    hw.world.json(&["close", &first]);
    // The other one ended with the server: prune forgets it (once the broker saw it end).
    let deadline = std::time::Instant::now() + herdr_real_support::WAIT;
    loop {
        let pruned = hw.world.json(&["prune"]);
        if pruned["remaining"] == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "prune kept {pruned}");
        hw.world.json_status(&["inbox", "--wait", "1"]);
    }
    assert_eq!(hw.world.json(&["status", &second])["state"], "closed");
    assert_eq!(hw.registry().trim(), "[]");
}

#[test]
fn a_moved_pane_stays_known_and_is_closed() {
    let Some(hw) = HerdrWorld::start("faults_b3_moved_pane") else {
        return;
    };
    hw.world.define_test_sheep("sleeper", "idle", None);
    let agent = hw.world.spawn("sleeper", "mover");
    let pane = hw.pane_labelled("sleeper: mover").unwrap();
    let moved = hw.herdr.call(
        "pane.move",
        &json!({"pane_id": pane["pane_id"], "destination": {"type": "new_workspace"}}),
    );
    let now = moved["move_result"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(pane["pane_id"].as_str(), Some(now.as_str()));
    let pruned = hw.world.json(&["prune"]);
    assert_eq!(pruned["remaining"], 1, "{pruned}");
    assert!(
        hw.registry().contains("sleeper: mover"),
        "prune forgot a pane that is there"
    );
    hw.world.json(&["close", &agent]);
    assert!(
        hw.pane_labelled("sleeper: mover").is_none(),
        "the moved pane outlived close"
    );
    assert_eq!(hw.world.json(&["status", &agent])["state"], "closed");
}

#[test]
fn a_sheep_starts_whatever_the_users_rc_file_does() {
    let options = RealOptions {
        shell: "/bin/bash".into(),
        bashrc: Some("sleep 0.3\nread -t 3 line && echo \"rc-file read: [$line]\"\n".into()),
        ..RealOptions::default()
    };
    let Some(hw) = HerdrWorld::start_with("faults_b4_rc_reads_stdin", options) else {
        return;
    };
    hw.world
        .define_test_sheep("echo", "print echoing {task}; done completed echoed", None);
    let agent = hw.world.spawn("echo", "rc");
    let task = hw.world.delegate(&agent, "past the rc file")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = hw.world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let read = hw.world.json(&["read", &agent, "--source", "recent"]);
    let text = read["text"].as_str().unwrap();
    assert!(!text.contains("rc-file read"), "{text}");
    assert!(
        !text.contains("supervise"),
        "a command line was shown: {text}"
    );
}

#[test]
fn auto_falls_back_to_headless_once_herdr_is_gone() {
    let Some(mut hw) = HerdrWorld::start("faults_b5_auto_fallback") else {
        return;
    };
    hw.world.define_test_sheep("sleeper", "idle", None);
    let first = hw.world.json(&["spawn", "sleeper", "--label", "before"]);
    assert_eq!(first["backend"], "herdr");
    hw.herdr.kill9();
    let second = hw.world.json(&["spawn", "sleeper", "--label", "after"]);
    assert_eq!(second["backend"], "headless", "{second}");
}

#[test]
fn a_sheeps_leftover_ends_before_herdr_is_asked_to_close_its_pane() {
    let Some(hw) = HerdrWorld::start("faults_b6_leftovers_first") else {
        return;
    };
    let log = hw.world.dir.path().join("leftover.log");
    // The sheep leaves a process in a group of its own (so ending the sheep's group does not
    // reach it) that outlives it briefly and notes any hang-up it hears.
    let script = format!(
        "{leftover} while :; do item=$(shepherd inbox --wait 30) || continue; \
         shepherd done --status completed --summary left; done",
        leftover = leftover(&log),
    );
    hw.world
        .define("leaver", &["sh".into(), "-c".into(), script]);
    let agent = hw.world.spawn("leaver", "");
    let pane = hw.pane_labelled("leaver").unwrap();
    hw.wait_for(pane["pane_id"].as_str().unwrap(), "leftover-started");
    let leftovers = procs::mentioning(&log.display().to_string());
    assert!(!leftovers.is_empty(), "the leftover runs");
    hw.world.json(&["close", &agent]);
    // The supervisor ended the leftover itself, before Herdr was asked to close the pane:
    // Herdr never had to hang up on it, and nothing of the sheep is left.
    let heard = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !heard.contains("hup"),
        "Herdr's close hung up on the leftover: {heard}"
    );
    for pid in leftovers {
        assert!(!procs::running(pid), "leftover {pid} outlived the close");
    }
    assert!(hw.pane_labelled("leaver").is_none());
}

#[test]
fn a_caller_whose_environment_was_stripped_splits_its_own_pane() {
    let options = RealOptions {
        default_socket: true,
        ..RealOptions::default()
    };
    let Some(hw) = HerdrWorld::start_with("faults_stripped_caller", options) else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("helper", "idle", None);
    let out = world.dir.path().join("spawned.json");
    // A pane of the user's, whose program runs `shepherd spawn` with no Herdr variable left.
    let command = format!(
        "cd '{project}' && env -i HOME='{home}' PATH='{path}' XDG_RUNTIME_DIR='{runtime}' \
         XDG_CONFIG_HOME='{config}' '{shepherd}' spawn helper --backend herdr --placement pane_right \
         --json > '{out}' 2>&1; echo spawn-finished; exec sleep 600",
        project = world.project.display(),
        home = world.home.display(),
        path = std::env::var("PATH").unwrap(),
        runtime = world.runtime.display(),
        config = hw.herdr.config_home().display(),
        shepherd = herd_support::shepherd_bin().display(),
        out = out.display(),
    );
    let applied = hw.herdr.call(
        "layout.apply",
        &json!({"workspace_id": "w1", "root": {"type": "pane", "command": ["sh", "-c", command], "cwd": "/tmp", "label": "caller"}}),
    );
    let caller = applied["layout"]["root"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let caller_tab = applied["layout"]["tab_id"].as_str().unwrap().to_owned();
    hw.wait_for(&caller, "^spawn-finished$");
    let spawned = std::fs::read_to_string(&out).unwrap();
    assert!(spawned.contains("\"backend\":\"herdr\""), "{spawned}");
    let sheep = hw.pane_labelled("helper").expect("the sheep's pane");
    assert_eq!(
        sheep["tab_id"],
        caller_tab.as_str(),
        "not beside its caller: {sheep}"
    );
    let agent: serde_json::Value = serde_json::from_str(spawned.trim()).unwrap();
    world.json(&["close", agent["agentId"].as_str().unwrap()]);
    assert!(hw.pane_labelled("helper").is_none());
}

#[test]
fn stopping_the_broker_closes_a_whole_herd_in_herdr() {
    let Some(hw) = HerdrWorld::start("faults_herd_shutdown") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("sleeper", "idle", None);
    world.json(&["broker", "ensure"]);
    std::thread::scope(|scope| {
        for n in 0..12 {
            scope.spawn(move || world.spawn("sleeper", &format!("s{n}")));
        }
    });
    assert_eq!(hw.panes().len(), 13);
    let stopped = world.json(&["broker", "stop"]);
    assert_eq!(stopped["closed"], 12, "{stopped}");
    assert_eq!(stopped["failed"], json!([]), "{stopped}");
    assert_eq!(hw.panes().len(), 1, "every sheep's pane is gone");
}
