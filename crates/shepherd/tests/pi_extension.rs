//! The parent extension's own behaviour in the real pi: what it registers (and does not, inside
//! a sheep), how its tools fail, the `/shepherd` command, project-agent confirmation through
//! pi's dialog, the deprecated one-turn prompt, that `subagent` is opt-in, and a resumed pi
//! session getting its herd (and a completion it missed) back. Headless sheep; both pi versions.
//! What it offers beyond its tools (the `subagent` run, review events, spawn progress) is in
//! `pi_reach`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod pi_support;

use pi_support::{Backend, Options, PARENT_MODEL, Shepherd, TURN, result_text, tool_end};
use serde_json::{Value, json};
use shepherd_mcp::catalogue::{self, Front, Tool};
use shepherd_testkit::fake_llm::{RecordedRequest, Step};
use shepherd_testkit::pi::PiBinary;

const PARENT_TOOLS: [&str; 9] = [
    "shepherd",
    "shepherd_spawn",
    "shepherd_delegate",
    "shepherd_message",
    "shepherd_prompt",
    "shepherd_watch",
    "shepherd_status",
    "shepherd_close",
    "shepherd_read",
];

fn commands(s: &mut Shepherd) -> Vec<String> {
    let response = s
        .parent()
        .call(json!({"type": "get_commands"}), TURN)
        .expect("get_commands");
    response["data"]["commands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// The tools the parent's model is offered.
fn offered_tools(s: &mut Shepherd) -> Vec<String> {
    s.parent_turn("hello", vec![Step::text("hi")]);
    let requests = s.requests(PARENT_MODEL);
    requests.last().expect("one request").tool_names()
}

/// Checks that the Shepherd tools `request` offers are exactly the catalogue's pi `tools`, each
/// with the catalogue's description and parameters' schema.
fn offers_the_catalogue(request: &RecordedRequest, tools: &[Tool]) {
    let offered: Vec<_> = request
        .offered_tools()
        .into_iter()
        .filter(|tool| tool.name.starts_with("shepherd"))
        .collect();
    let mut names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    let mut written: Vec<&str> = catalogue::offered(tools, Front::Pi)
        .map(|t| t.name)
        .collect();
    written.sort_unstable();
    assert_eq!(names, written);
    for tool in &offered {
        let entry = tools.iter().find(|t| t.name == tool.name).unwrap();
        assert_eq!(
            tool.description,
            entry.description_for(Front::Pi),
            "{}",
            tool.name
        );
        assert_eq!(tool.schema, entry.pi_schema(), "{}", tool.name);
    }
}

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

/// A pi sheep's model is offered the catalogue's sheep tools.
fn registers_the_sheep_tools(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "tools");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "looked at my tools"}),
            ),
            Step::text("Looked at my tools."),
        ],
    );
    s.delegate(&worker, "Look at your tools.", None);
    let request = s.wait_requests("worker-model", 1).remove(0);
    offers_the_catalogue(&request, catalogue::SHEEP);
}

/// Inside a sheep (SHEPHERD_AGENT_ID set) the extension registers nothing.
fn silent_inside_a_sheep(pi: &PiBinary) {
    let options = Options {
        env: vec![("SHEPHERD_AGENT_ID".into(), "shepherd-agent-test".into())],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    assert!(!commands(&mut s).contains(&"shepherd".to_owned()));
    let names = offered_tools(&mut s);
    assert!(
        names.iter().all(|n| !n.starts_with("shepherd")),
        "{names:?}"
    );
}

/// A sheep whose environment a wrapper stripped (a launcher that starts pi clean but for what pi
/// itself needs) still knows it is a sheep: the parent extension, loaded into it as into every pi
/// of the user's, registers nothing, and the sheep extension gets its variables back from
/// beside its session, so its tools reach the broker and its task ends.
fn silent_inside_a_sheep_whose_environment_was_stripped(pi: &PiBinary) {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("clean-pi");
    let kept: Vec<String> = [
        "PATH",
        "HOME",
        "TMPDIR",
        "PI_CODING_AGENT_DIR",
        "PI_OFFLINE",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "NO_COLOR",
    ]
    .iter()
    .map(|name| format!("{name}=\"${name}\""))
    .collect();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec env -i {} '{}' -e '{}' \"$@\"\n",
            kept.join(" "),
            pi.path.display(),
            pi_support::extension_path().display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    let options = Options {
        env: vec![("SHEPHERD_PI".into(), wrapper.display().to_string())],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let worker = s.spawn("worker", "stripped");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "done without its environment"}),
            )
            .held_until("hold"),
            Step::text("Done."),
        ],
    );
    let task = s.delegate(&worker, "Look at your tools.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Exactly the sheep's tools, in the sheep's words: none of the parent's.
    let request = s.wait_requests("worker-model", 1).remove(0);
    offers_the_catalogue(&request, catalogue::SHEEP);
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("hold");
    let wake = s.wait_parent_input("worker: stripped completed");
    assert!(wake.contains("done without its environment"), "{wake}");
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
        error.contains("cargo install --path crates/shepherd"),
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

/// `/shepherd` opens the settings menu in pi's select dialog: a yes/no row flips, a row with
/// choices offers them, switching the scope to project creates the project file, a user-only
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
    registers_the_sheep_tools,
    silent_inside_a_sheep,
    silent_inside_a_sheep_whose_environment_was_stripped,
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
