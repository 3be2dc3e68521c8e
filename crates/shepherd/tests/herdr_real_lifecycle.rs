//! The herd's lifecycle in a real Herdr (the suite `tmux_backend.rs` runs in real tmux): the
//! caller sits in a Herdr pane, and sheep are spawned in every placement, delegated to,
//! watched, messaged, read in every source, closed and pruned; sheep exit by themselves; ten
//! run at once. Each test runs its own private Herdr server (`HERDR_BIN`, else `herdr` on
//! `PATH`) and skips, saying so, when there is none — unless `SHEPHERD_REQUIRE_HERDR=1`.

use crate::herdr_real_support;

use herdr_real_support::{HerdrWorld, WAIT};

fn id_of(doc: &serde_json::Value, key: &str) -> String {
    doc[key].as_str().unwrap().to_owned()
}

#[test]
fn every_placement_runs_a_sheep_that_works_reads_and_closes() {
    let Some(hw) = HerdrWorld::start("lifecycle_every_placement") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("echo", "print echoing {task}; done completed echoed", None);
    for placement in ["tab", "pane_right", "pane_down", "workspace"] {
        let label = format!("at {placement}");
        let name = format!("echo: {label}");
        let spawned = world.json(&["spawn", "echo", "--label", &label, "--placement", placement]);
        assert_eq!(spawned["backend"], "herdr", "{placement}: {spawned}");
        let agent = id_of(&spawned, "agentId");
        let pane = hw
            .pane_labelled(&name)
            .unwrap_or_else(|| panic!("no pane named {name}"));
        assert_eq!(pane["focused"], false, "{placement}");
        assert!(hw.caller_focused(), "{placement}: focus moved");
        let in_callers_tab = pane["tab_id"] == "w1:t1";
        assert_eq!(
            in_callers_tab,
            placement.starts_with("pane_"),
            "{placement}: {pane}"
        );
        assert_eq!(
            pane["workspace_id"] == "w1",
            placement != "workspace",
            "{placement}: {pane}"
        );
        assert!(hw.registry().contains(&name), "{placement}");

        let task = id_of(&world.delegate(&agent, "the screen"), "taskId");
        let watched = world.json(&["watch", &task, "--wait", "30"]);
        assert_eq!(watched["settled"][0]["summary"], "echoed", "{placement}");
        for source in ["visible", "recent", "recent-unwrapped", "detection"] {
            let read = world.json(&["read", &agent, "--source", source]);
            let text = read["text"].as_str().unwrap();
            assert!(
                text.contains("echoing the screen"),
                "{placement} {source}: {text:?}"
            );
        }
        world.json(&["close", &agent]);
        assert!(
            hw.pane_labelled(&name).is_none(),
            "{placement}: the pane outlived close"
        );
        assert!(!hw.registry().contains(&name), "{placement}");
    }
    assert_eq!(hw.panes().len(), 1, "only the user's pane is left");
}

#[test]
fn peers_talk_a_crash_fails_its_task_and_close_cancels() {
    let Some(hw) = HerdrWorld::start("lifecycle_peers_crash_close") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("planner", "answer pong; done completed answered", None);
    world.define_test_sheep(
        "worker",
        "ask {task} Reply with pong; tell shepherd asked and answered; done completed got {reply}",
        None,
    );
    world.define_test_sheep("crasher", "print about to crash in herdr; crash 3", None);
    world.define_test_sheep("sleeper", "idle", None);
    let planner = world.spawn("planner", "");
    let worker = world.spawn("worker", "");
    let crasher = world.spawn("crasher", "");
    let sleeper = world.spawn("sleeper", "");
    assert_eq!(world.json(&["status", &planner])["backend"], "herdr");
    let tp = id_of(&world.delegate(&planner, "answer"), "taskId");
    let tw = id_of(&world.delegate(&worker, &planner), "taskId");
    let tc = id_of(&world.delegate(&crasher, "crash"), "taskId");
    let ts = id_of(&world.delegate(&sleeper, "sleep"), "taskId");
    world.json(&["message", &sleeper, "a note for the sleeper"]);
    let (_, watched) = world.json_status(&["watch", &tw, &tp, &tc, "--wait", "30"]);
    let settled = watched["settled"].as_array().unwrap();
    assert_eq!(settled[0]["summary"], "got pong");
    assert_eq!(settled[1]["summary"], "answered");
    assert_eq!(settled[2]["status"], "failed");
    let error = settled[2]["error"].as_str().unwrap();
    assert!(error.contains("exited with status 3"), "{error}");
    let (_, inbox) = world.json_status(&["inbox", "--wait", "5"]);
    assert!(inbox.to_string().contains("asked and answered"), "{inbox}");
    world.json(&["close", &sleeper]);
    let (code, closed) = world.json_status(&["watch", &ts]);
    assert_eq!(code, 130, "{closed}");
}

#[test]
fn prune_forgets_a_pane_closed_by_hand() {
    let Some(hw) = HerdrWorld::start("lifecycle_prune_closed_by_hand") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("echo", "idle", None);
    let agent = world.spawn("echo", "gone soon");
    let pane = hw.pane_labelled("echo: gone soon").unwrap();
    hw.herdr.call(
        "pane.close",
        &serde_json::json!({"pane_id": pane["pane_id"]}),
    );
    // The broker tells the parent when a sheep without a task ends: wait for that notice.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "the broker never noticed the pane was closed"
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
    assert!(!hw.registry().contains("gone soon"));
}

#[test]
fn a_sheep_that_exits_by_itself_closes_its_pane_unless_kept_open() {
    let Some(hw) = HerdrWorld::start("lifecycle_b8_exit_by_itself") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("crasher", "print leaving now; crash 3", None);
    world.settings(r#"{"keepOpen": false}"#);
    let quick = world.spawn("crasher", "not kept");
    let task = id_of(&world.delegate(&quick, "go"), "taskId");
    let (_, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "failed", "{watched}");
    hw.wait_unlabelled("crasher: not kept");
    let pruned = world.json(&["prune"]);
    assert_eq!(
        (pruned["pruned"].as_u64(), pruned["remaining"].as_u64()),
        (Some(1), Some(0)),
        "{pruned}"
    );
    assert!(!hw.registry().contains("not kept"));

    world.settings(r#"{"keepOpen": true}"#);
    let kept = world.spawn("crasher", "kept");
    let pane = hw.pane_labelled("crasher: kept").unwrap();
    let pane_id = pane["pane_id"].as_str().unwrap().to_owned();
    let task = id_of(&world.delegate(&kept, "go"), "taskId");
    world.json_status(&["watch", &task, "--wait", "30"]);
    hw.wait_for(&pane_id, "leaving now");
    let pruned = world.json(&["prune"]);
    assert_eq!(
        pruned["remaining"], 1,
        "a kept pane is still there: {pruned}"
    );
    let read = world.json(&["read", &kept, "--source", "recent"]);
    assert!(
        read["text"].as_str().unwrap().contains("leaving now"),
        "{read}"
    );
    world.json(&["close", &kept]);
    assert!(hw.pane_labelled("crasher: kept").is_none());
}

#[test]
fn ten_sheep_run_at_once() {
    let Some(hw) = HerdrWorld::start("lifecycle_ten_at_once") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("echo", "print echoing {task}; done completed {task}", None);
    // Ten first calls at once race to start the broker (not what this test is about).
    world.json(&["broker", "ensure"]);
    let agents: Vec<String> = std::thread::scope(|scope| {
        let spawns: Vec<_> = (0..10)
            .map(|n| scope.spawn(move || world.spawn("echo", &format!("n{n}"))))
            .collect();
        spawns.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let tasks: Vec<String> = agents
        .iter()
        .enumerate()
        .map(|(n, agent)| id_of(&world.delegate(agent, &format!("job {n}")), "taskId"))
        .collect();
    let mut args = vec!["watch"];
    args.extend(tasks.iter().map(String::as_str));
    args.extend(["--wait", "60"]);
    let watched = world.json(&args);
    let settled = watched["settled"].as_array().unwrap();
    assert_eq!(settled.len(), 10);
    for (n, item) in settled.iter().enumerate() {
        assert_eq!(item["summary"], format!("job {n}"));
    }
    assert_eq!(hw.panes().len(), 11);
    std::thread::scope(|scope| {
        for agent in &agents {
            scope.spawn(move || world.json(&["close", agent]));
        }
    });
    assert_eq!(hw.panes().len(), 1, "every sheep's pane is gone");
    assert_eq!(hw.registry().trim(), "[]");
}

#[test]
fn a_sheep_that_exits_with_status_3_fails_its_task_with_return_code_3() {
    let Some(hw) = HerdrWorld::start("lifecycle_exit_status") else {
        return;
    };
    let world = &hw.world;
    world.define_test_sheep("crasher", "crash 3", None);
    let agent = world.spawn("crasher", "");
    let task = id_of(&world.delegate(&agent, "go"), "taskId");
    let (code, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["returnCode"], 3, "{watched}");
    assert_eq!(code, 3);
}
