//! Sheep on other machines: real OpenSSH servers on 127.0.0.1 stand in for a dev box and a
//! container. A sheep spawned with `--host` runs there under the host's own supervisor, reads
//! its task and writes its note on the host, and what it writes reaches the parent's note; it is
//! read and closed from here, and leaves no process behind.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use herd_support::World;
use remote_support::*;
use shepherd_testkit::sshd::LoopbackHost;

#[test]
fn a_remote_sheep_works_on_its_host_and_its_note_comes_home() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let spawned = world.json(&["spawn", "scribe", "--host", "devbox"]);
    assert_eq!(spawned["host"], "devbox", "spawn says where: {spawned}");
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    // Every view of the sheep says where it runs.
    let herd = world.json(&["herd"]);
    assert_eq!(herd["sheep"][0]["host"], "devbox", "{herd}");
    let status = String::from_utf8(world.run(&["status", &agent]).stdout).unwrap();
    assert!(status.contains("on host devbox"), "{status}");

    let task = delegate(&world, &agent, "map the cache");
    let done = settled(&world, &task, 60);
    assert_eq!(done["status"], "completed", "{done}");
    let summary = done["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        format!("did: map the cache in {}", devbox.project.display()),
        "the sheep ran in the host's project"
    );
    let note = done["note"].as_str().expect("a note");
    assert!(
        note.starts_with(&world.project.display().to_string()),
        "the note is on the parent's machine: {note}"
    );
    let text = std::fs::read_to_string(note).unwrap();
    assert!(
        text.contains(&format!(
            "Written in {}: map the cache",
            devbox.home.display()
        )),
        "the host's writing reached the note:\n{text}"
    );
    assert!(
        text.contains("<!-- Shepherd orchestration -->") && text.contains("status: completed"),
        "the broker's own sections are kept:\n{text}"
    );
    assert!(
        text.contains("host: devbox"),
        "the note says where:\n{text}"
    );

    let read = world.json(&["read", &agent]);
    assert!(
        read["output"].as_str().unwrap_or_default().len() < 100_000,
        "{read}"
    );
    world.json(&["close", &agent]);
    wait_no_process(&agent, std::time::Duration::from_secs(10));
}

#[test]
fn a_chain_runs_its_first_step_here_and_its_second_on_a_host_with_both_notes_here() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    world.define_test_sheep("scout", "done completed found the cache in {task}", None);
    // The definition itself names the host: a project may name a host the user defined.
    define_scribe(&world, "scribe-local", None);
    let local = std::fs::read_to_string(world.home.join(".pi/agent/agents/scribe-local.md"))
        .unwrap()
        .replacen("name: scribe-local", "name: scribe\nhost: devbox", 1);
    world.define_file("scribe", &local);

    let (code, report) = world.json_status(&[
        "run",
        "--chain",
        "scout=src/cache.rs",
        "scribe=write up: {previous}",
    ]);
    assert_eq!(code, 0, "{report}");
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{report}");
    assert_eq!(
        results[0].get("host"),
        None,
        "the first step ran here: {report}"
    );
    assert_eq!(results[1]["host"], "devbox", "{report}");
    assert_eq!(
        results[1]["text"],
        format!(
            "did: write up: found the cache in src/cache.rs in {}",
            devbox.project.display()
        ),
        "the second step ran on the host with the first step's result"
    );
    for result in results {
        let note = result["note"].as_str().expect("each step has a note");
        assert!(
            std::path::Path::new(note).starts_with(&world.project),
            "{note} is on the parent's machine"
        );
    }
    let remote_note = std::fs::read_to_string(results[1]["note"].as_str().unwrap()).unwrap();
    assert!(
        remote_note.contains(&format!(
            "Written in {}: write up: found the cache",
            devbox.home.display()
        )),
        "the remote step's writing is in its note:\n{remote_note}"
    );
}

#[test]
fn a_link_killed_mid_task_loses_nothing_the_task_completes_once_it_returns() {
    if !required() {
        return;
    }
    let mut devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let gate = world.dir.path().join("gate");
    define_scribe(&world, "scribe", Some(&gate));
    let agent = spawn_on(&world, "scribe", "devbox");
    let task = delegate(&world, &agent, "survive the drop");
    // The sheep has its task once its note has its line (it then waits at the gate).
    let note = world.json(&["status", &agent])["task"]["note"]
        .as_str()
        .map(str::to_owned);
    let note = note.expect("the task has a note");
    wait_for(|| std::fs::read_to_string(&note).is_ok_and(|text| text.contains("Written in")));

    // The connection dies and the host stays unreachable for a moment.
    drop_link(&world, &mut devbox);
    let status = world.json(&["status", &agent]);
    assert_eq!(status["task"]["state"], "running", "{status}");
    let pid = status["pid"].clone();
    // While the host is unreachable its sheep is not shown as working, and reading it says
    // why.
    wait_for(|| world.json(&["status", &agent])["linkDownSince"].is_i64());
    let said = String::from_utf8(world.run(&["status", &agent]).stdout).unwrap();
    assert!(said.contains("on host devbox [link down since "), "{said}");
    let read = world.run(&["read", &agent, "--json"]);
    assert!(!read.status.success());
    let read =
        String::from_utf8_lossy(&read.stdout).into_owned() + &String::from_utf8_lossy(&read.stderr);
    assert!(
        read.contains("host_unreachable") || read.contains("is unreachable"),
        "{read}"
    );
    assert!(!read.contains("another backend"), "{read}");
    // The sheep finishes while the link is down; its `done` waits for the link.
    std::fs::write(&gate, "").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    devbox.restart().unwrap();

    let done = settled(&world, &task, 60);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["summary"],
        format!("did: survive the drop in {}", devbox.project.display())
    );
    let herd = world.json(&["status", &agent]);
    assert_eq!(herd["pid"], pid, "the same sheep lives on: {herd}");
    assert_ne!(herd["state"], "exited", "{herd}");
    // Delivered exactly once: the next task works as the first did.
    let again = delegate(&world, &agent, "and again");
    let done = settled(&world, &again, 60);
    assert_eq!(done["status"], "completed", "{done}");
    world.json(&["close", &agent]);
    wait_no_process(&agent, std::time::Duration::from_secs(10));
}

#[test]
fn a_host_that_never_returns_fails_its_sheeps_task_with_a_clear_error() {
    if !required() {
        return;
    }
    let mut devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    // Three seconds instead of ten minutes.
    define_hosts(
        &world,
        &[&devbox],
        serde_json::json!({ "remoteLinkTimeoutMinutes": 0.05 }),
    );
    let gate = world.dir.path().join("never");
    define_scribe(&world, "scribe", Some(&gate));
    let agent = spawn_on(&world, "scribe", "devbox");
    let task = delegate(&world, &agent, "wait forever");
    drop_link(&world, &mut devbox);
    let (_, watched) = world.json_status(&["watch", &task, "--wait", "60"]);
    let done = watched["settled"][0].clone();
    assert_eq!(done["status"], "failed", "{watched}");
    let error = done["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("host devbox was unreachable"),
        "the error says why: {done}"
    );
    // The host's supervisor ends its sheep once no broker came back in that time.
    wait_no_process(&agent, std::time::Duration::from_secs(30));
}

#[test]
fn two_hosts_run_sheep_at_once() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let container = LoopbackHost::start("container").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox, &container], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let on_devbox = world.json(&["spawn", "scribe", "--label", "one", "--host", "devbox"]);
    let on_container = world.json(&["spawn", "scribe", "--label", "two", "--host", "container"]);
    let tasks: Vec<(String, &LoopbackHost)> = [(&on_devbox, &devbox), (&on_container, &container)]
        .into_iter()
        .map(|(spawned, host)| {
            let id = spawned["agentId"].as_str().unwrap();
            (delegate(&world, id, "count"), host)
        })
        .collect();
    for (task, host) in tasks {
        let done = settled(&world, &task, 60);
        assert_eq!(
            done["summary"],
            format!("did: count in {}", host.project.display()),
            "{done}"
        );
    }
}

#[test]
fn the_forwarded_socket_refuses_anyone_but_a_remote_sheep_with_its_token() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let agent = spawn_on(&world, "scribe", "devbox");
    let links = devbox.runtime.join("shepherd/links");
    let socket = std::fs::read_dir(&links)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "sock"))
        .expect("the broker's socket is forwarded into the host's runtime directory");
    let hello = |params: serde_json::Value| -> serde_json::Value {
        use std::io::{BufRead, Write};
        let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        let line = serde_json::json!({"id": 1, "method": "hello", "params": params});
        writeln!(stream, "{line}").unwrap();
        let mut answer = String::new();
        std::io::BufReader::new(stream)
            .read_line(&mut answer)
            .unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    let protocol = shepherd_core::protocol::PROTOCOL_VERSION;
    let parent = hello(serde_json::json!({"protocol": protocol, "role": "parent"}));
    assert_eq!(parent["error"]["code"], "forbidden", "{parent}");
    let observer = hello(serde_json::json!({"protocol": protocol, "role": "observer"}));
    assert_eq!(observer["error"]["code"], "forbidden", "{observer}");
    let no_token =
        hello(serde_json::json!({"protocol": protocol, "role": "sheep", "agentId": agent}));
    assert_eq!(no_token["error"]["code"], "unauthenticated", "{no_token}");
    let wrong = hello(serde_json::json!({
        "protocol": protocol, "role": "supervisor", "agentId": agent, "token": "guess"
    }));
    assert_eq!(wrong["error"]["code"], "unauthenticated", "{wrong}");
    // The herd is untouched and its sheep still works.
    let task = delegate(&world, &agent, "still fine");
    assert_eq!(settled(&world, &task, 60)["status"], "completed");
}

#[test]
fn bad_hosts_are_refused_before_anything_starts() {
    let world = World::new();
    world.settings(
        r#"{"hosts": {"devbox": {"destination": "devbox", "projectPath": "relative/path"}}}"#,
    );
    define_scribe(&world, "scribe", None);
    let (code, error, message) = world.error(&["spawn", "scribe", "--host", "elsewhere"]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    assert!(message.contains("no host `elsewhere`"), "{message}");
    let (code, error, message) = world.error(&["spawn", "scribe", "--host", "devbox"]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    assert!(message.contains("projectPath `relative/path`"), "{message}");
    let herd = world.json(&["herd"]);
    assert_eq!(herd["sheep"].as_array().map_or(0, Vec::len), 0, "{herd}");

    // A run naming an unknown host in its second step fails before its first step runs.
    world.define_test_sheep("scout", "done completed scouted", None);
    let (code, error, message) = world.error(&[
        "run",
        "--chain",
        "scout=look",
        "scribe=write it up",
        "--host",
        "elsewhere",
    ]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    assert!(
        message.contains("task 1 (scout)") || message.contains("task 2"),
        "{message}"
    );
    // Likewise a plan whose second step alone names one: its first step never runs.
    let plan = world.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "chain:\n  - agent: scout\n    task: look\n  - agent: scribe\n    task: write it up\n    host: elsewhere\n",
    )
    .unwrap();
    let (code, error, message) = world.error(&["run", "--plan", plan.to_str().unwrap()]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    assert!(message.contains("task 2 (scribe)"), "{message}");
    let sessions = world.project.join(".shepherd/sessions");
    assert!(
        !sessions.exists()
            || std::fs::read_dir(&sessions)
                .unwrap()
                .flatten()
                .all(|e| { !e.path().join("scout-01.md").exists() }),
        "no step ran"
    );

    // A host only the project defines is not used, and the refusal says why.
    let settings = world.project.join(".shepherd/config.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"hosts": {"evil": {"destination": "evil.example", "projectPath": "/srv/p"}}}"#,
    )
    .unwrap();
    let (code, error, message) = world.error(&["spawn", "scribe", "--host", "evil"]);
    assert_eq!((code, error.as_str()), (2, "unknown_host"), "{message}");
    assert!(
        message.contains("defined only in the project's settings")
            && message.contains("only your user settings may define hosts"),
        "{message}"
    );
}

#[test]
fn a_broker_killed_while_a_remote_sheep_works_comes_back_and_the_task_completes() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let gate = world.dir.path().join("gate");
    define_scribe(&world, "scribe", Some(&gate));
    let agent = spawn_on(&world, "scribe", "devbox");
    let task = delegate(&world, &agent, "outlive the broker");
    let status = world.json(&["status", &agent]);
    let note = status["task"]["note"].as_str().unwrap().to_owned();
    wait_for(|| std::fs::read_to_string(&note).is_ok_and(|text| text.contains("Written in")));
    let broker = world.broker_pid().expect("a broker runs");
    herd_support::kill9(broker);
    assert!(herd_support::wait_gone(
        broker,
        std::time::Duration::from_secs(10)
    ));
    // The broker's connection to the host went with it.
    wait_for(|| master_pid(&world, "devbox").is_none());
    // The sheep writes more and finishes while no broker runs.
    std::fs::write(&gate, "").unwrap();
    // The parent's next command starts the broker, which links the host again; the host's
    // supervisor reconnects and the sheep's `done` gets through.
    let done = settled(&world, &task, 60);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(world.json(&["status", &agent])["pid"], status["pid"]);
    let text = std::fs::read_to_string(&note).unwrap();
    assert!(
        text.contains("Finished: outlive the broker")
            && text.contains("<!-- Shepherd orchestration -->"),
        "what the sheep wrote while no broker ran reached the note:\n{text}"
    );
}

#[test]
fn a_message_sent_while_the_link_is_down_arrives_once_when_it_returns() {
    if !required() {
        return;
    }
    let mut devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    // The sheep writes every item it is handed into a file on the host.
    let script = "while :; do m=$(shepherd inbox --wait 60) || continue; \
                  [ -n \"$m\" ] && printf '%s\\n' \"$m\" >> \"$HOME/got.txt\"; done";
    world.define("listener", &["sh".into(), "-c".into(), script.into()]);
    let agent = spawn_on(&world, "listener", "devbox");
    let got = devbox.home.join("got.txt");
    world.json(&["message", &agent, "before the drop"]);
    wait_for(|| std::fs::read_to_string(&got).is_ok_and(|t| t.contains("before the drop")));

    drop_link(&world, &mut devbox);
    world.json(&["message", &agent, "during the drop"]);
    devbox.restart().unwrap();
    wait_for(|| std::fs::read_to_string(&got).is_ok_and(|t| t.contains("during the drop")));
    world.json(&["message", &agent, "after the drop"]);
    wait_for(|| std::fs::read_to_string(&got).is_ok_and(|t| t.contains("after the drop")));
    let lines: Vec<String> = std::fs::read_to_string(&got)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines,
        ["before the drop", "during the drop", "after the drop"],
        "each message arrived exactly once, in order"
    );
}

#[test]
fn a_new_task_on_the_same_host_never_writes_over_another_sheeps_open_note() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let gate = world.dir.path().join("gate");
    define_scribe(&world, "slow", Some(&gate));
    define_scribe(&world, "quick", None);
    let slow = spawn_on(&world, "slow", "devbox");
    let quick = spawn_on(&world, "quick", "devbox");
    let first = delegate(&world, &slow, "first part");
    let local = world.json(&["status", &slow])["task"]["note"]
        .as_str()
        .unwrap()
        .to_owned();
    let on_host = devbox.project.join(
        std::path::Path::new(&local)
            .strip_prefix(&world.project)
            .unwrap(),
    );
    // The slow sheep has written on the host; this machine may not have read it yet.
    wait_for(|| std::fs::read_to_string(&on_host).is_ok_and(|t| t.contains("first part")));
    // Another task in the same session copies the session to the host.
    let second = delegate(&world, &quick, "second sheep");
    assert_eq!(settled(&world, &second, 60)["status"], "completed");
    std::fs::write(&gate, "").unwrap();
    let done = settled(&world, &first, 60);
    let text = std::fs::read_to_string(done["note"].as_str().unwrap()).unwrap();
    assert!(
        text.contains("Written in") && text.contains("Finished: first part"),
        "the slow sheep's writing before the other task's copy survived:\n{text}"
    );
}

#[test]
fn each_task_on_a_host_sheep_opens_at_most_one_ssh_session() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    define_scribe(&world, "scribe", None);
    let agent = spawn_on(&world, "scribe", "devbox");
    // Each step over the link used to be a session of its own (a login shell and a
    // `shepherd` start on the host): the session's copy, its read-back, the last read.
    for word in ["map the cache", "list the keys", "count the rows"] {
        let before = devbox.command_sessions();
        let task = delegate(&world, &agent, word);
        let done = settled(&world, &task, 60);
        assert_eq!(done["status"], "completed", "{done}");
        let note = std::fs::read_to_string(done["note"].as_str().unwrap()).unwrap();
        assert!(note.contains(&format!("Finished: {word}")), "{note}");
        let opened = devbox.command_sessions() - before;
        assert!(
            opened <= 1,
            "delegating `{word}` and watching it opened {opened} SSH sessions on the host:\n{}",
            devbox.log()
        );
    }
    world.json(&["close", &agent]);
}
