//! Sheep in real tmux panes: placement without stealing focus, reading the screen, closing,
//! pruning panes closed by hand, and the broker's lifecycle in panes. Each test runs its own
//! tmux server (a private `TMUX_TMPDIR`).

use crate::herd_support;

use std::time::Duration;

use herd_support::{World, wait_gone};

fn tmux_world() -> World {
    World::new().with_private_tmux()
}

#[test]
fn outside_tmux_a_sheep_gets_a_background_window_named_after_it() {
    let world = tmux_world();
    world.define_test_sheep("echo", "print echoing {task}; done completed echoed", None);
    let spawned = world.json(&[
        "spawn",
        "echo",
        "--label",
        "code review",
        "--backend",
        "tmux",
    ]);
    assert_eq!(spawned["backend"], "tmux");
    let agent = spawned["agentId"].as_str().unwrap();
    let windows = world.tmux(&[
        "list-windows",
        "-t",
        "=shepherd",
        "-F",
        "#{window_name}|#{window_active}",
    ]);
    let sheep_window = windows
        .lines()
        .find(|l| l.starts_with("echo: code review|"))
        .unwrap_or_else(|| panic!("{windows}"));
    assert!(
        sheep_window.ends_with("|0"),
        "the sheep's window must not become active: {windows}"
    );

    let task = world.delegate(agent, "the screen")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &task, "--wait", "30"]);
    let screen = world.json(&["read", agent, "--source", "visible"]);
    assert!(
        screen["text"]
            .as_str()
            .unwrap()
            .contains("echoing the screen"),
        "{screen}"
    );
    let registry = world.home.join(".pi/agent/pi-shepherd/created-panes.json");
    assert!(herd_support::read(&registry).contains("echo: code review"));

    world.json(&["close", agent]);
    let windows = world.tmux(&["list-windows", "-a", "-F", "#{window_name}"]);
    assert!(!windows.contains("echo: code review"), "{windows}");
    assert!(!herd_support::read(&registry).contains("echo: code review"));
}

#[test]
fn a_shell_script_sheep_in_a_pane_reaches_shepherd_through_its_path() {
    // tmux gives a new pane its launching client's PATH, so this fails unless the supervisor
    // itself puts `shepherd` on the sheep's PATH.
    let world = tmux_world();
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*) shepherd done --status completed --summary "done from $(command -v shepherd)" ;; esac
done"#;
    world.define("scripted", &["sh".into(), "-c".into(), script.into()]);
    let spawned = world.json(&["spawn", "scripted", "--backend", "tmux"]);
    let agent = spawned["agentId"].as_str().unwrap();
    let task = world.delegate(agent, "hello")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let summary = watched["settled"][0]["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        format!("done from {}", herd_support::shepherd_bin().display())
    );
    world.json(&["close", agent]);
}

#[test]
fn read_finds_a_sheep_by_display_name_or_pane_even_after_the_name_was_reused() {
    let world = tmux_world();
    world.define_test_sheep("echo", "print echoing {task}; done completed echoed", None);
    let spawn = || {
        world.json(&[
            "spawn",
            "echo",
            "--label",
            "code review",
            "--backend",
            "tmux",
        ])["agentId"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = spawn();
    world.json(&["close", &first]);
    let second = spawn();
    let task = world.delegate(&second, "the second one")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &task, "--wait", "30"]);
    let by_name = world.json(&["read", "echo: code review", "--source", "visible"]);
    assert_eq!(by_name["target"], second.as_str(), "{by_name}");
    assert!(
        by_name["text"]
            .as_str()
            .unwrap()
            .contains("echoing the second one")
    );
    let pane = world
        .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"])
        .lines()
        .find_map(|l| l.strip_suffix(" echo: code review").map(str::to_owned))
        .expect("the sheep's pane");
    let by_pane = world.json(&["read", &pane, "--source", "visible"]);
    assert_eq!(by_pane["target"], second.as_str(), "{by_pane}");
    let (code, _, stderr) = world.error(&["read", "echo: nobody"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("`echo: nobody`"), "{stderr}");
}

#[test]
fn prune_drops_a_window_killed_by_hand() {
    let world = tmux_world();
    world.settings(r#"{"backend": "tmux"}"#);
    world.define_test_sheep("echo", "idle", None);
    let agent = world.spawn("echo", "gone soon");
    let sheep_pid = world.json(&["status", &agent])["pid"].as_u64();
    world.json(&["status", &agent]);
    world.tmux(&["kill-window", "-t", "=shepherd:echo: gone soon"]);
    if let Some(pid) = sheep_pid {
        assert!(wait_gone(pid as u32, Duration::from_secs(15)));
    }
    // The broker tells the parent when a sheep without a task ends: wait for that notice.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "the broker never noticed the window was killed"
        );
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["notice"] == "sheep_exited")
        {
            break;
        }
    }
    assert_eq!(world.json(&["status", &agent])["state"], "exited");
    let pruned = world.json(&["prune"]);
    assert_eq!(pruned["pruned"], 1, "{pruned}");
    assert_eq!(world.json(&["herd"])["sheep"].as_array().unwrap().len(), 0);
    let registry = world.home.join(".pi/agent/pi-shepherd/created-panes.json");
    assert!(!herd_support::read(&registry).contains("gone soon"));
}

#[test]
fn the_lifecycle_runs_in_panes_peers_crashes_and_closes() {
    let world = tmux_world();
    world.settings(r#"{"backend": "tmux"}"#);
    world.define_test_sheep("planner", "answer pong; done completed answered", None);
    world.define_test_sheep(
        "worker",
        "ask {task} Reply with pong; done completed got {reply}",
        None,
    );
    world.define_test_sheep("crasher", "print about to crash in a pane; crash 3", None);
    world.define_test_sheep("sleeper", "idle", None);
    let planner = world.spawn("planner", "");
    let worker = world.spawn("worker", "");
    let crasher = world.spawn("crasher", "");
    let sleeper = world.spawn("sleeper", "");
    assert_eq!(world.json(&["status", &planner])["backend"], "tmux");
    let tp = world.delegate(&planner, "answer")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let tw = world.delegate(&worker, &planner)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let tc = world.delegate(&crasher, "crash")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let ts = world.delegate(&sleeper, "sleep")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, watched) = world.json_status(&["watch", &tw, &tp, &tc, "--wait", "30"]);
    let settled = watched["settled"].as_array().unwrap();
    assert_eq!(settled[0]["summary"], "got pong");
    assert_eq!(settled[1]["summary"], "answered");
    assert_eq!(settled[2]["status"], "failed");
    let error = settled[2]["error"].as_str().unwrap();
    assert!(
        error.contains("exited with status 3") && error.contains("about to crash in a pane"),
        "{error}"
    );
    world.json(&["close", &sleeper]);
    let (code, closed) = world.json_status(&["watch", &ts]);
    assert_eq!(code, 130, "{closed}");
}

#[test]
fn inside_tmux_sheep_join_the_callers_server_in_a_split_or_a_background_window() {
    let mut world = tmux_world();
    world.tmux(&["new-session", "-d", "-s", "user", "-x", "200", "-y", "50"]);
    let socket = world
        .tmux(&["display", "-p", "-t", "=user", "#{socket_path}"])
        .trim()
        .to_owned();
    let caller_pane = world
        .tmux(&["list-panes", "-t", "=user", "-F", "#{pane_id}"])
        .trim()
        .to_owned();
    assert!(caller_pane.starts_with('%'), "{caller_pane}");
    world
        .extra_env
        .push(("TMUX".into(), format!("{socket},1,0")));
    world
        .extra_env
        .push(("TMUX_PANE".into(), caller_pane.clone()));
    world.define_test_sheep("helper", "idle", None);
    let right = world.json(&[
        "spawn",
        "helper",
        "--label",
        "right",
        "--placement",
        "pane_right",
    ]);
    assert_eq!(right["backend"], "tmux", "auto picks tmux inside tmux");
    let panes = world.tmux(&[
        "list-panes",
        "-t",
        "=user",
        "-F",
        "#{pane_id} #{pane_active} #{pane_title}",
    ]);
    assert_eq!(panes.lines().count(), 2, "{panes}");
    assert!(
        panes
            .lines()
            .any(|l| l.starts_with(&format!("{caller_pane} 1"))),
        "focus stays with the caller: {panes}"
    );
    assert!(panes.contains("helper: right"), "{panes}");
    world.json(&["close", right["agentId"].as_str().unwrap()]);
    let panes = world.tmux(&["list-panes", "-t", "=user", "-F", "#{pane_id}"]);
    assert_eq!(panes.trim(), caller_pane);

    // The default placement: a background window in the caller's own session.
    let tab = world.json(&["spawn", "helper", "--label", "tab"]);
    assert_eq!(tab["backend"], "tmux", "{tab}");
    let windows = world.tmux(&[
        "list-windows",
        "-t",
        "=user",
        "-F",
        "#{window_active} #{window_name}",
    ]);
    assert_eq!(windows.lines().count(), 2, "{windows}");
    assert!(
        windows.lines().any(|l| l == "0 helper: tab"),
        "a background window named after the sheep: {windows}"
    );
    world.json(&["close", tab["agentId"].as_str().unwrap()]);
    let windows = world.tmux(&["list-windows", "-t", "=user", "-F", "#{window_name}"]);
    assert_eq!(windows.lines().count(), 1, "{windows}");
}

#[test]
fn pane_placement_without_a_caller_pane_is_a_clear_error() {
    let world = tmux_world();
    world.define_test_sheep("helper", "idle", None);
    let (_, code, message) = world.error(&[
        "spawn",
        "helper",
        "--backend",
        "tmux",
        "--placement",
        "pane_down",
    ]);
    assert_eq!(code, "spawn_failed", "{message}");
    assert!(message.contains("not in a tmux pane"), "{message}");
    // Tab placement still works.
    world.spawn("helper", "tab ok");
}
