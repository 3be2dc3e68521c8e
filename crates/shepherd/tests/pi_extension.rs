//! The parent extension's own behaviour in the real pi: what it registers (inside a sheep, see
//! `pi_sheep_side`), how its tools fail, the `/shepherd` command, project-agent confirmation through
//! pi's dialog, the deprecated one-turn prompt, that `subagent` is opt-in, and a resumed pi
//! session getting its herd (and a completion it missed) back. Headless sheep; both pi versions.
//! What it offers beyond its tools (the `subagent` run, review events, spawn progress) is in
//! `pi_reach`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;
use shepherd_testkit::procs;

use pi_support::{
    Backend, Options, PARENT_MODEL, PARENT_TOOLS, Shepherd, TURN, commands, offered_tools,
    offers_the_catalogue, result_text, tool_end,
};
use serde_json::{Value, json};
use shepherd_mcp::catalogue;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// The ten tools with flat object schemas (the catalogue's, in its words), the command, and no
/// `subagent` unless opted in.
fn registers_the_parent_surface(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    assert!(commands(&mut s).contains(&"shepherd".to_owned()));
    s.parent_turn("hello", vec![Step::text("hi")]);
    let request = s.requests(PARENT_MODEL).pop().unwrap();
    let names = request.tool_names();
    for tool in PARENT_TOOLS {
        assert!(
            names.contains(&tool.to_owned()),
            "{tool} missing: {names:?}"
        );
    }
    assert!(!names.contains(&"subagent".to_owned()), "{names:?}");
    for tool in request.body["tools"].as_array().unwrap() {
        let parameters = &tool["function"]["parameters"];
        assert_eq!(parameters["type"], "object", "{tool}");
        assert!(parameters.get("anyOf").is_none(), "flat root: {tool}");
    }
    offers_the_catalogue(&request, catalogue::PARENT);
}

/// The `shepherd` control tool through pi: `agents` lists the definitions a spawn accepts, in
/// the original's words; `prune` forgets a sheep whose pi is gone, and says how many it kept.
fn control_tool_lists_agents_and_prunes(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let records = s.parent_turn(
        "list the agents",
        vec![
            Step::tool_call("shepherd", json!({"action": "agents"})),
            Step::text("Listed."),
        ],
    );
    let end = tool_end(&records, "shepherd").expect("the tool ran");
    let text = result_text(&end["result"]);
    assert!(
        text.starts_with(
            "Available agent names (copy the name exactly; names are case-sensitive):\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nworker (user): Test worker on a scripted model."),
        "{text}"
    );
    let details = &end["result"]["details"];
    assert_eq!(details["scope"], "user", "{details}");
    let names: Vec<&str> = details["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(names.contains(&"worker"), "{names:?}");
    assert!(names.contains(&"scout"), "bundled agents too: {names:?}");

    let kept = s.spawn("worker", "kept");
    let doomed = s.spawn("worker", "doomed");
    let nothing = s.call_tool("shepherd", json!({"action": "prune"}));
    assert_eq!(
        (nothing["pruned"].as_u64(), nothing["remaining"].as_u64()),
        (Some(0), Some(2)),
        "{nothing}"
    );
    // The doomed sheep's pi dies (its supervisor, whose command line names the sheep, reaps it
    // and ends): its sheep is exited, then pruned; the other is kept.
    let supervisors = procs::mentioning(&doomed);
    let pis: Vec<u32> = supervisors
        .iter()
        .flat_map(|pid| procs::children_of(*pid))
        .collect();
    assert!(
        !pis.is_empty(),
        "the doomed sheep's pi runs under {supervisors:?}"
    );
    for pid in &pis {
        let _killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    s.herd_until("the doomed sheep exited", |view| {
        view["sheep"].as_array().is_some_and(|sheep| {
            sheep
                .iter()
                .any(|one| one["agentId"] == doomed.as_str() && one["state"] == "exited")
        })
    });
    for pid in supervisors.into_iter().chain(pis) {
        shepherd_term::process::wait_gone(pid, std::time::Instant::now() + TURN);
    }
    let records = s.parent_turn(
        "prune",
        vec![
            Step::tool_call("shepherd", json!({"action": "prune"})),
            Step::text("Pruned."),
        ],
    );
    let end = tool_end(&records, "shepherd").expect("the tool ran");
    let text = result_text(&end["result"]);
    assert!(
        text.starts_with("Removed 1 stale sheep record; 1 remain."),
        "{text}"
    );
    let herd = s.shepherd(&["herd"]);
    let left: Vec<&str> = herd["sheep"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|one| one["agentId"].as_str())
        .collect();
    assert_eq!(left, [kept.as_str()], "{herd}");
}

/// Without the binary every tool fails, saying how to install it.
fn missing_binary(pi: &PiBinary) {
    let options = Options {
        env: vec![("SHEPHERD_BIN".into(), "/nonexistent/shepherd".into())],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let error = s.call_tool_failing("shepherd", json!({"action": "herd"}));
    assert!(
        error.contains("cargo install --locked --path crates/shepherd"),
        "{error}"
    );
    assert!(error.contains("SHEPHERD_BIN"), "{error}");
}

/// A failure is thrown (pi marks it an error) with the protocol block and the broker's code.
fn failures_are_errors_with_the_protocol_block(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let error = s.call_tool_failing(
        "shepherd_delegate",
        json!({"target": "shepherd-agent-nope", "task": "x"}),
    );
    assert!(
        error.starts_with("Herd delegate failed (return code 1): "),
        "{error}"
    );
    assert!(
        error.contains("\ncall:\n    shepherd_delegate {"),
        "{error}"
    );
    assert!(error.contains("\nreturn:\n"), "{error}");
    assert!(error.contains("    code: "), "{error}");
    let unknown = s.call_tool_failing("shepherd_spawn", json!({"agent": "Worker", "label": "x"}));
    assert!(unknown.contains("Did you mean \"worker\"?"), "{unknown}");
    assert!(unknown.contains("action \"agents\""), "{unknown}");

    // Success has the same block; legacy argument shapes are normalised first.
    let worker = s.spawn("worker", "shape");
    let records = s.parent_turn(
        "status",
        vec![
            Step::tool_call("shepherd_status", json!({"handle": {"id": worker}})),
            Step::text("ok"),
        ],
    );
    let end = tool_end(&records, "shepherd_status").unwrap();
    let text = result_text(&end["result"]);
    assert!(text.starts_with("worker: shape idle."), "{text}");
    assert!(
        text.contains(&format!(
            "call:\n    shepherd_status {{\"id\":\"{worker}\"}}"
        )),
        "{text}"
    );
    assert!(text.contains("return code: 0"), "{text}");
}

/// `/shepherd` for people: agents, spawn, herd, status, read, settings, prune, usage errors.
fn shepherd_command(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let notify = |s: &mut Shepherd, command: &str, needle: &str| -> Value {
        let start = s.parent().records().len();
        let response = s
            .parent()
            .call(json!({"type": "prompt", "message": command}), TURN)
            .expect("the command runs");
        assert_eq!(response["success"], true, "{response}");
        let shown = s.wait_ui_since(start, "notify", |_| true);
        let message = shown["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(needle),
            "{command}: expected {needle:?} in {shown}"
        );
        shown
    };
    notify(&mut s, "/shepherd agents", "worker (user): Test worker");
    let spawned = notify(
        &mut s,
        "/shepherd spawn worker --label \"by hand\"",
        "Spawned worker: by hand",
    );
    assert_eq!(spawned["notifyType"], "info", "{spawned}");
    notify(&mut s, "/shepherd herd", "• worker: by hand [idle]");
    notify(&mut s, "/shepherd status worker", "worker: by hand idle.");
    notify(&mut s, "/shepherd read \"worker: by hand\" --lines 5", "");
    notify(&mut s, "/shepherd settings timeout 7", "Set timeout to 7");
    notify(&mut s, "/shepherd settings show", "timeout: 7 (user)");
    notify(&mut s, "/shepherd prune", "No stale sheep records found");
    let usage = notify(&mut s, "/shepherd spawn", "spawn requires an agent name.");
    assert_eq!(usage["notifyType"], "warning", "{usage}");
    let bad = notify(
        &mut s,
        "/shepherd read worker --source nowhere",
        "Invalid value",
    );
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("Usage: /shepherd"),
        "{bad}"
    );
    // The model saw none of it.
    assert!(s.requests(PARENT_MODEL).is_empty());
    let herd = s.shepherd(&["herd"]);
    assert_eq!(herd["sheep"][0]["displayName"], "worker: by hand", "{herd}");
}

/// `/shepherd` over RPC (no terminal to draw the inline list in) opens the settings menu in pi's
/// select dialog, with a row for every setting: a yes/no row flips, a row with choices offers them, switching the scope to project creates the project file, a user-only
/// row still saves to the user file, and dismissing the menu ends it.
fn settings_menu(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let start = s.parent().records().len();
    s.parent()
        .send(&json!({"type": "prompt", "message": "/shepherd"}))
        .expect("the command is sent");
    let is_menu = |r: &Value| {
        r["title"]
            .as_str()
            .is_some_and(|t| t.starts_with("Shepherd settings"))
    };
    let mut menu = s.wait_ui_since(start, "select", is_menu);
    // Picks `option` in the open dialog; returns the next dialog and what was notified meanwhile.
    let pick = |s: &mut Shepherd,
                dialog: &Value,
                option: &str,
                next_is_menu: bool|
     -> (Value, Vec<String>) {
        let options: Vec<&str> = dialog["options"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            options.contains(&option),
            "{option:?} is not offered in {dialog}"
        );
        let from = s.parent().records().len();
        s.parent()
            .send(&json!({"type": "extension_ui_response", "id": dialog["id"], "value": option}))
            .unwrap();
        let next = s.wait_ui_since(from, "select", |r| is_menu(r) == next_is_menu);
        let said = s.parent().records()[from..]
            .iter()
            .filter(|r| r["type"] == "extension_ui_request" && r["method"] == "notify")
            .filter_map(|r| r["message"].as_str().map(str::to_owned))
            .collect();
        (next, said)
    };

    assert_eq!(
        menu["title"], "Shepherd settings (saving to the user file)",
        "{menu}"
    );
    // A row for every setting `shepherd settings` lists, and one for the scope.
    let listed = s.shepherd_project(&["settings"]);
    let settings = listed["settings"].as_object().unwrap().len();
    assert_eq!(
        menu["options"].as_array().unwrap().len(),
        settings + 1,
        "{menu}"
    );
    assert!(
        menu["options"]
            .to_string()
            .contains("Remote host unreachable for: 10 min"),
        "{menu}"
    );
    let (next, said) = pick(&mut s, &menu, "Keep tab open after done: on", true);
    assert_eq!(said, ["Saved Keep tab open after done: off (user file)."]);
    menu = next;
    let (choices, _) = pick(&mut s, &menu, "Default run timeout: 20 min", false);
    assert_eq!(
        choices["title"], "Default run timeout (now 20 min)",
        "{choices}"
    );
    (menu, _) = pick(&mut s, &choices, "5 min", true);
    let (choices, _) = pick(&mut s, &menu, "Settings scope: user", false);
    let (next, said) = pick(&mut s, &choices, "project", true);
    assert_eq!(
        said,
        [
            "Config created at .shepherd/config.json; project settings are active for this workspace."
        ]
    );
    menu = next;
    assert_eq!(
        menu["title"], "Shepherd settings (saving to the project file .shepherd/config.json)",
        "{menu}"
    );
    let (choices, _) = pick(&mut s, &menu, "Stale wait reminder: 5 min", false);
    (menu, _) = pick(&mut s, &choices, "off", true);
    let (choices, _) = pick(&mut s, &menu, "Deepest nested herd: 2 (user file)", false);
    let (next, said) = pick(&mut s, &choices, "3", true);
    assert_eq!(said, ["Saved Deepest nested herd: 3 (user file)."]);
    let options = next["options"].to_string();
    assert!(options.contains("Settings scope: project"), "{options}");
    assert!(options.contains("Stale wait reminder: off"), "{options}");
    s.parent()
        .send(&json!({"type": "extension_ui_response", "id": next["id"], "cancelled": true}))
        .unwrap();

    let doc = s.shepherd_project(&["settings"]);
    assert_eq!(doc["activeLayer"], "project", "{doc}");
    assert_eq!(doc["settings"]["staleWaitThreshold"], 0, "{doc}");
    assert_eq!(doc["sources"]["staleWaitThreshold"], "project", "{doc}");
    assert_eq!(doc["settings"]["maxDepth"], 3, "{doc}");
    assert_eq!(doc["sources"]["maxDepth"], "user", "{doc}");
    let user: Value = serde_json::from_str(&pi_support::read(std::path::Path::new(
        doc["userFile"].as_str().unwrap(),
    )))
    .unwrap();
    assert_eq!(user["keepOpen"], false, "{user}");
    assert_eq!(user["timeout"], 5, "{user}");
    // The menu is closed: the next command is answered.
    let from = s.parent().records().len();
    s.parent()
        .send(&json!({"type": "prompt", "message": "/shepherd settings show"}))
        .unwrap();
    let shown = s.wait_ui_since(from, "notify", |_| true);
    assert!(
        shown["message"]
            .as_str()
            .unwrap()
            .contains("Active layer: project"),
        "{shown}"
    );
}

/// A project agent is confirmed in pi's dialog; yes approves it (stored) and spawns it, no
/// refuses.
fn project_agent_confirmation(pi: &PiBinary) {
    let options = Options {
        settings: json!({"agentScope": "both"}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let agents = s.project().join(".pi/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let file = agents.join("local.md");
    std::fs::write(
        &file,
        "---\nname: local\ndescription: A project agent.\nmodel: fake/worker-model\n---\nYou are local.\n",
    )
    .unwrap();

    let answer = |s: &mut Shepherd,
                  confirmed: bool,
                  label: &str,
                  edit: Option<&str>|
     -> Vec<Value> {
        s.parent_says([
            Step::tool_call("shepherd_spawn", json!({"agent": "local", "label": label})),
            Step::text("done"),
        ]);
        let parent = s.parent();
        parent.prompt("spawn local", TURN).expect("prompt");
        let dialog = parent
            .wait_for("the confirmation dialog", TURN, |r| {
                r["type"] == "extension_ui_request" && r["method"] == "confirm"
            })
            .expect("pi asks");
        assert_eq!(dialog["title"], "Run project-local agent?", "{dialog}");
        let message = dialog["message"].as_str().unwrap();
        assert!(message.contains("Agent: local"), "{message}");
        assert!(message.contains(&file.display().to_string()), "{message}");
        if let Some(text) = edit {
            std::fs::write(&file, text).unwrap();
        }
        parent
            .send(&json!({"type": "extension_ui_response", "id": dialog["id"], "confirmed": confirmed}))
            .unwrap();
        parent.wait_run_finished(TURN).expect("the run ends")
    };

    let declined = answer(&mut s, false, "no", None);
    let end = tool_end(&declined, "shepherd_spawn").unwrap();
    assert_eq!(end["isError"], true, "{end}");
    assert!(result_text(&end["result"]).contains("was not approved"));

    // Edited while the dialog was open: what was confirmed is not what would run.
    let edited = "---\nname: local\ndescription: A project agent.\nmodel: fake/worker-model\n---\nYou are local, and edited.\n";
    let raced = answer(&mut s, true, "raced", Some(edited));
    let end = tool_end(&raced, "shepherd_spawn").unwrap();
    assert_eq!(end["isError"], true, "{end}");
    assert!(
        result_text(&end["result"]).contains("is not the file that was reviewed"),
        "{end}"
    );
    let shown = s.shepherd_project(&["agents", "show", "local", "--scope", "project"]);
    assert_eq!(shown["approval"], "required", "{shown}");

    let accepted = answer(&mut s, true, "yes", None);
    let end = tool_end(&accepted, "shepherd_spawn").unwrap();
    assert_eq!(end["isError"], false, "{end}");
    let shown = s.shepherd_project(&["agents", "show", "local", "--scope", "project"]);
    assert_eq!(shown["approval"], "approved", "{shown}");
}

/// The deprecated `shepherd_prompt`: a one-turn task that completes with the sheep's final text; its
/// prompt id is that task's id; and the parent's pi session file is recorded in its fieldnotes session.
fn deprecated_prompt(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "oneshot");
    s.fake.append(
        "worker-model",
        [Step::text("The answer is 42.").held_until("hold")],
    );
    let prompted = s.call_tool(
        "shepherd_prompt",
        json!({"id": worker, "message": "What is the answer?"}),
    );
    let task = prompted["taskId"].as_str().unwrap().to_owned();
    // Its own prompt id, as the concept dictionary has it: the id of the one-turn task.
    assert_eq!(prompted["promptId"], prompted["taskId"], "{prompted}");
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("hold");
    let wake = s.wait_parent_input("worker: oneshot completed");
    assert!(wake.contains("The answer is 42."), "{wake}");
    // The parent's pi session file is recorded in its fieldnotes session (diagnostics).
    let state = s
        .parent()
        .call(json!({"type": "get_state"}), TURN)
        .expect("get_state");
    let file = state["data"]["sessionFile"]
        .as_str()
        .expect("a session file");
    let sessions = s.project().join(".shepherd/sessions");
    let session = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.join("session.json").is_file())
        .expect("the parent-bound session");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("session.json")).unwrap())
            .unwrap();
    assert_eq!(record["parentSessionFile"], file, "{record}");
    assert_eq!(record["parentPiSession"]["sessionFile"], file, "{record}");
}

/// With `subagentCompatibility` on, the `subagent` tool is offered too.
fn subagent_is_opt_in(pi: &PiBinary) {
    let options = Options {
        settings: json!({"subagentCompatibility": true}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let names = offered_tools(&mut s);
    assert!(names.contains(&"subagent".to_owned()), "{names:?}");
}

/// Quitting pi leaves the herd running; resuming the session reconnects, lists the same sheep,
/// and delivers the completion that settled while pi was away.
fn resumed_session_gets_its_herd_back(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "survivor");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "finished while you were away"}),
            )
            .held_until("hold"),
            Step::text("Bye."),
        ],
    );
    let task = s.delegate(&worker, "Finish later.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&task]);
    s.restart_parent();
    // The new pi is idle when the completion lands: it wakes the model, which lists the herd.
    s.parent_says([
        Step::tool_call("shepherd", json!({"action": "herd"}))
            .expecting("finished while you were away"),
        Step::text("Back."),
    ]);
    s.fake.release("hold");
    let woken = s.parent_woken();
    let end = tool_end(&woken, "shepherd").expect("herd listed");
    let text = result_text(&end["result"]);
    assert!(text.contains("• worker: survivor [done]"), "{text}");
    assert!(text.contains(&worker), "{text}");
    s.assert_no_mismatches();
}

/// The broker is killed while pi sits idle: the extension starts a new one (its connection does
/// at once; the herd widget's next refresh would too; the test itself runs no `shepherd`
/// command until the end), the new broker replays its journal and re-adopts the sheep, the
/// sheep's `shepherd_done` — possibly in flight at the moment of the kill — reaches it, and the
/// completion still wakes the parent.
fn broker_killed_while_pi_is_idle(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "steady");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "done after the crash"}),
            )
            .held_until("hold"),
            Step::text("Bye."),
        ],
    );
    let task = s.delegate(&worker, "Finish after the crash.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&task]);
    let broker = s.shepherd(&["broker", "status"])["status"]["pid"]
        .as_u64()
        .expect("the broker runs");
    let killed = std::process::Command::new("kill")
        .args(["-9", &broker.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    s.parent_says([Step::text("Noted the completion.").expecting("done after the crash")]);
    s.fake.release("hold");
    let text = s.wait_parent_input("worker: steady completed");
    assert!(text.contains(&task), "{text}");
    let status = s.shepherd(&["broker", "status"]);
    assert_ne!(status["status"]["pid"].as_u64(), Some(broker), "{status}");
    s.assert_no_mismatches();
}

shepherd_testkit::pi_tests!(
    registers_the_parent_surface,
    control_tool_lists_agents_and_prunes,
    missing_binary,
    failures_are_errors_with_the_protocol_block,
    shepherd_command,
    settings_menu,
    project_agent_confirmation,
    deprecated_prompt,
    subagent_is_opt_in,
    resumed_session_gets_its_herd_back,
    broker_killed_while_pi_is_idle,
);
