//! Contract tests that run against the fake Herdr and, when a Herdr binary exists, a private
//! real server — the same requests, the same expectations — so the fake cannot drift from what
//! Herdr 0.8.0 does (`research/herdr-real-check.md` §6). Each expectation here is a measured
//! behaviour Shepherd depends on or had to work around.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herdr_support;

use std::time::{Duration, Instant};

use herdr_support::{RawEvents, Server, WAIT, against_both, event_name, script};
use serde_json::{Value, json};
use shepherd_testkit::fake_herdr::FakeOptions;
use shepherd_testkit::fake_herdr::real::RealOptions;

/// The fake with real processes, like a real server.
fn running() -> FakeOptions {
    FakeOptions {
        run_processes: true,
        ..FakeOptions::default()
    }
}

fn workspace(server: &Server) -> String {
    let made = server
        .raw("workspace.create", &json!({"cwd": "/tmp", "label": "user"}))
        .unwrap();
    made["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A tab running `argv`; returns its pane id.
fn program(server: &Server, workspace: &str, argv: &[&str]) -> String {
    let applied = server
        .raw(
            "layout.apply",
            &json!({"workspace_id": workspace, "root": {"type": "pane", "command": argv, "cwd": "/tmp"}}),
        )
        .unwrap();
    applied["layout"]["root"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn pane_ids(server: &Server) -> Vec<String> {
    server.raw("pane.list", &json!({})).unwrap()["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pane_id"].as_str().unwrap().to_owned())
        .collect()
}

fn wait_for(server: &Server, pane: &str, regex: &str) -> Value {
    let params = json!({"pane_id": pane, "source": "recent",
        "match": {"type": "regex", "value": regex}, "timeout_ms": WAIT.as_millis() as u64});
    server
        .raw("pane.wait_for_output", &params)
        .unwrap_or_else(|err| panic!("{}: no {regex} in {pane}: {err:?}", server.name()))
}

#[test]
fn a_fresh_server_has_no_workspace_and_numbers_like_herdr() {
    against_both(
        "contract_fresh_server_and_ids",
        FakeOptions::default(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let list = server.raw("workspace.list", &json!({})).unwrap();
            assert_eq!(list["workspaces"], json!([]), "{name}");
            let err = server
                .raw("tab.create", &json!({"cwd": "/tmp"}))
                .unwrap_err();
            assert_eq!(
                (err.1.as_str(), err.2.as_str()),
                ("workspace_not_found", "no active workspace"),
                "{name}"
            );
            let made = server
                .raw("workspace.create", &json!({"cwd": "/tmp"}))
                .unwrap();
            assert_eq!(made["root_pane"]["pane_id"], "w1:p1", "{name}");
            assert_eq!(
                made["tab"]["label"], "1",
                "{name}: a first tab is labelled 1"
            );
            let terminal = made["root_pane"]["terminal_id"].as_str().unwrap();
            assert!(terminal.starts_with("term_"), "{name}: {terminal}");
            for _ in 0..9 {
                server
                    .raw("tab.create", &json!({"workspace_id": "w1", "cwd": "/tmp"}))
                    .unwrap();
            }
            let ids = pane_ids(server);
            assert_eq!(
                ids.last().map(String::as_str),
                Some("w1:pA"),
                "{name}: {ids:?}"
            );
            let tabs = server.raw("tab.list", &json!({})).unwrap();
            assert_eq!(tabs["tabs"].as_array().unwrap().len(), 10, "{name}");
            let info = server
                .raw("pane.process_info", &json!({"pane_id": "w1:p1"}))
                .unwrap();
            assert!(info["process_info"].get("tty").is_none(), "{name}: {info}");
        },
    );
}

#[test]
fn a_program_pane_runs_its_argv_and_its_end_sends_only_pane_exited() {
    against_both(
        "contract_program_pane_exit",
        running(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let ws = workspace(server);
            let dir = tempfile::tempdir().unwrap();
            let gate = dir.path().join("gate");
            let quitter = script(
                dir.path(),
                "quitter",
                &format!(
                    "echo \"ready $PROBE $HERDR_PANE_ID\"\nwhile [ ! -e '{}' ]; do sleep 0.02; done\nexit 7",
                    gate.display()
                ),
            );
            let applied = server
                .raw(
                    "layout.apply",
                    &json!({"workspace_id": ws, "tab_label": "quits", "focus": false,
                        "root": {"type": "pane", "command": [quitter], "cwd": "/tmp",
                                 "env": {"PROBE": "it's set"}, "label": "quitter: one"}}),
                )
                .unwrap();
            let pane = applied["layout"]["root"]["pane_id"]
                .as_str()
                .unwrap()
                .to_owned();
            let info = server.raw("pane.get", &json!({"pane_id": pane})).unwrap();
            assert_eq!(info["pane"]["label"], "quitter: one", "{name}");
            assert_eq!(info["pane"]["focused"], false, "{name}");
            wait_for(server, &pane, &format!("^ready it's set {pane}$"));
            let root = server
                .raw("pane.process_info", &json!({"pane_id": pane}))
                .unwrap();
            let argv = &root["process_info"]["foreground_processes"][0]["argv"];
            assert!(
                argv.to_string().contains("quitter"),
                "{name}: the program is the pane's process: {root}"
            );
            // A bystander to close afterwards: its `pane_closed` marks the end of the events.
            let bystander = program(server, &ws, &["sleep", "60"]);
            let mut events = RawEvents::open(
                &server.socket(),
                &json!([{"type": "pane.exited", "pane_id": "w99:p99"}, {"type": "pane.closed"}, {"type": "tab.closed"}]),
            );
            std::fs::write(&gate, "").unwrap();
            events
                .until(|e| event_name(e) == "pane_exited" && e["data"]["pane_id"] == pane.as_str());
            server
                .raw("pane.close", &json!({"pane_id": bystander}))
                .unwrap();
            let rest = events.until(|e| e["data"]["pane_id"] == bystander.as_str());
            assert!(
                rest.iter().all(|e| e["data"]["pane_id"] != pane.as_str()
                    && event_name(e) != "tab_closed"),
                "{name}: an exit sends nothing but pane_exited, a close nothing but pane_closed: {rest:?}"
            );
            assert_eq!(event_name(rest.last().unwrap()), "pane_closed", "{name}");
            assert!(
                !pane_ids(server).contains(&pane),
                "{name}: the pane is gone"
            );
        },
    );
}

#[test]
fn a_new_subscription_replays_earlier_events_for_every_pane() {
    against_both(
        "contract_replay",
        running(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let ws = workspace(server);
            let first = program(server, &ws, &["sleep", "60"]);
            let second = program(server, &ws, &["sleep", "60"]);
            for pane in [&first, &second] {
                server.raw("pane.close", &json!({"pane_id": pane})).unwrap();
            }
            // Subscribed only now, and naming another pane: both old closes come anyway.
            let mut events = RawEvents::open(
                &server.socket(),
                &json!([{"type": "pane.closed", "pane_id": "w9:p9"}]),
            );
            let seen = events.until(|e| e["data"]["pane_id"] == second.as_str());
            assert_eq!(seen.len(), 2, "{name}: {seen:?}");
            assert_eq!(seen[0]["data"]["pane_id"], first.as_str(), "{name}");
            assert_eq!(seen[0]["data"]["type"], "pane_closed", "{name}");
        },
    );
}

#[test]
fn rename_answers_with_the_pane_and_reads_have_no_padding() {
    against_both(
        "contract_rename_and_reads",
        running(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let ws = workspace(server);
            let pane = program(
                server,
                &ws,
                &["sh", "-c", "echo one; echo two; echo three; exec sleep 60"],
            );
            let renamed = server
                .raw(
                    "pane.rename",
                    &json!({"pane_id": pane, "label": "probe: pane"}),
                )
                .unwrap();
            assert_eq!(renamed["type"], "pane_info", "{name}");
            assert_eq!(renamed["pane"]["label"], "probe: pane", "{name}");
            wait_for(server, &pane, "^three$");
            let read = |source: &str, lines: u32| {
                let params =
                    json!({"pane_id": pane, "source": source, "lines": lines, "strip_ansi": true});
                server.raw("pane.read", &params).unwrap()["read"].clone()
            };
            for source in ["recent", "visible", "detection"] {
                assert_eq!(
                    read(source, 80)["text"],
                    "one\ntwo\nthree\n",
                    "{name} {source}"
                );
            }
            assert_eq!(
                read("recent_unwrapped", 80)["text"],
                "one\ntwo\nthree",
                "{name}"
            );
            assert_eq!(read("detection", 2)["text"], "two\nthree\n", "{name}");
            let small = read("recent", 3);
            assert_eq!(
                (small["text"].as_str(), small["truncated"].as_bool()),
                (Some(""), Some(true)),
                "{name}"
            );
            let matched = wait_for(server, &pane, "^two$");
            assert_eq!(matched["matched_line"], "two", "{name}");
            assert!(matched.get("revision").is_some(), "{name}: {matched}");
            assert_eq!(matched["read"]["source"], "recent_unwrapped", "{name}");
        },
    );
}

#[test]
fn errors_carry_herdrs_codes_texts_and_ids() {
    against_both(
        "contract_errors",
        FakeOptions::default(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            workspace(server);
            let err = server
                .raw("pane.process_info", &json!({"pane_id": "w9:p9"}))
                .unwrap_err();
            assert_eq!(
                (err.1.as_str(), err.2.as_str()),
                ("pane_not_found", "pane not found"),
                "{name}"
            );
            let err = server
                .raw("pane.get", &json!({"pane_id": "w9:p9"}))
                .unwrap_err();
            assert_eq!(err.2, "pane w9:p9 not found", "{name}");
            let err = server
                .raw("agent.get", &json!({"target": "w1:p1"}))
                .unwrap_err();
            assert_eq!(
                (err.1.as_str(), err.2.as_str()),
                ("agent_not_found", "agent target w1:p1 not found"),
                "{name}"
            );
            let err = server.raw("pane.get", &json!({})).unwrap_err();
            assert_eq!(
                (err.0.as_str(), err.1.as_str()),
                ("", "invalid_request"),
                "{name}"
            );
            assert!(
                err.2
                    .starts_with("invalid request: missing field `pane_id` at line 1 column "),
                "{name}: {}",
                err.2
            );
            let err = server.raw("pane.frobnicate", &json!({})).unwrap_err();
            assert!(
                err.2
                    .contains("unknown variant `pane.frobnicate`, expected one of `ping`"),
                "{name}: {}",
                err.2
            );
            let err = server
                .raw("events.subscribe", &json!({"subscriptions": [{"type": "pane.agent_status_changed", "pane_id": "w9:p9"}]}))
                .unwrap_err();
            assert_eq!(
                err,
                (
                    "contract:sub:0:probe".into(),
                    "pane_not_found".into(),
                    "pane w9:p9 not found".into()
                ),
                "{name}"
            );
            let err = server
                .raw(
                    "layout.apply",
                    &json!({"workspace_id": "w9", "root": {"type": "pane", "command": ["true"]}}),
                )
                .unwrap_err();
            assert_eq!(
                (err.1.as_str(), err.2.as_str()),
                ("workspace_not_found", "workspace w9 not found"),
                "{name}"
            );
        },
    );
}

#[test]
fn a_moved_pane_keeps_its_terminal_and_changes_id_across_workspaces() {
    against_both(
        "contract_moves",
        running(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let ws = workspace(server);
            let pane = program(server, &ws, &["sleep", "60"]);
            let terminal =
                server.raw("pane.get", &json!({"pane_id": pane})).unwrap()["pane"]["terminal_id"]
                    .clone();
            let beside = server
                .raw("pane.move", &json!({"pane_id": pane, "destination": {"type": "tab", "tab_id": "w1:t1", "split": "right", "target_pane_id": "w1:p1"}}))
                .unwrap();
            let moved = &beside["move_result"]["pane"];
            assert_eq!(
                (moved["pane_id"].as_str(), moved["tab_id"].as_str()),
                (Some(pane.as_str()), Some("w1:t1")),
                "{name}: same workspace, same id"
            );
            let away = server
                .raw("pane.move", &json!({"pane_id": pane, "destination": {"type": "new_workspace", "label": "elsewhere"}}))
                .unwrap();
            let moved = &away["move_result"]["pane"];
            let new_id = moved["pane_id"].as_str().unwrap().to_owned();
            assert_eq!(new_id, "w2:p1", "{name}");
            assert_eq!(moved["terminal_id"], terminal, "{name}: the terminal stays");
            assert_eq!(moved["focused"], false, "{name}");
            let ids = pane_ids(server);
            assert!(
                ids.contains(&new_id) && !ids.contains(&pane),
                "{name}: {ids:?}"
            );
            let old = server.raw("pane.get", &json!({"pane_id": pane})).unwrap();
            assert_eq!(
                old["pane"]["pane_id"],
                new_id.as_str(),
                "{name}: the old id still resolves"
            );
        },
    );
}

#[test]
fn close_signals_the_whole_session_and_holds_other_requests_until_done() {
    against_both(
        "contract_close_blocks",
        running(),
        RealOptions::default(),
        |server| {
            let name = server.name();
            let ws = workspace(server);
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("signals");
            // Deaf to HUP and TERM, with a child in its own group: Herdr has to KILL.
            let deaf = script(
                dir.path(),
                "deaf",
                &format!(
                    "trap 'echo hup >> {log}' HUP\ntrap 'echo term >> {log}' TERM\necho deaf-ready\nwhile :; do sleep 0.05; done",
                    log = log.display()
                ),
            );
            let pane = program(server, &ws, &[deaf.to_str().unwrap()]);
            wait_for(server, &pane, "^deaf-ready$");
            let root = server
                .raw("pane.process_info", &json!({"pane_id": pane}))
                .unwrap()["process_info"]["shell_pid"]
                .as_u64()
                .unwrap();
            std::thread::scope(|scope| {
                let closing = scope.spawn(|| {
                    server.raw("pane.close", &json!({"pane_id": pane})).unwrap();
                });
                // Once the close has begun (the HUP was trapped), ask for the pane list: it is answered
                // only after Herdr moved on to TERM, 250 ms later (`ping` alone is not held).
                let until = Instant::now() + WAIT;
                while !std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("hup")
                {
                    assert!(Instant::now() < until, "{name}: no HUP reached the program");
                    std::thread::sleep(Duration::from_millis(5));
                }
                server.raw("pane.list", &json!({})).unwrap();
                let heard = std::fs::read_to_string(&log).unwrap();
                assert!(
                    heard.contains("term"),
                    "{name}: a pane.list was answered mid-close: {heard}"
                );
                closing.join().unwrap();
            });
            let heard = std::fs::read_to_string(&log).unwrap();
            assert!(
                heard.contains("hup") && heard.contains("term"),
                "{name}: {heard}"
            );
            assert!(
                !std::path::Path::new(&format!("/proc/{root}")).exists(),
                "{name}: the close answered before the program was gone"
            );
        },
    );
}

#[test]
fn a_shell_reports_owning_its_terminal_while_its_rc_file_still_reads_stdin() {
    let fake = FakeOptions {
        slow_shell_rc: Some(Duration::from_secs(3)),
        run_processes: true,
        ..FakeOptions::default()
    };
    let real = RealOptions {
        shell: "/bin/bash".into(),
        bashrc: Some("sleep 0.5\nread -t 3 line && echo \"rc-file read: [$line]\"\n".into()),
        ..RealOptions::default()
    };
    against_both("contract_slow_rc", fake, real, |server| {
        let name = server.name();
        let made = server
            .raw("workspace.create", &json!({"cwd": "/tmp"}))
            .unwrap();
        let pane = made["root_pane"]["pane_id"].as_str().unwrap().to_owned();
        let info = server
            .raw("pane.process_info", &json!({"pane_id": pane}))
            .unwrap()["process_info"]
            .clone();
        assert_eq!(
            info["shell_pid"], info["foreground_process_group_id"],
            "{name}: {info}"
        );
        server
            .raw(
                "pane.send_input",
                &json!({"pane_id": pane, "text": "echo typed-too-early", "keys": ["Enter"]}),
            )
            .unwrap();
        wait_for(server, &pane, r"^rc-file read: \[echo typed-too-early\]$");
    });
}
