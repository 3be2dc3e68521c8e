//! Who may do what: forged ids, foreign tasks, wrong or missing tokens, oversized messages,
//! malformed requests, unknown methods and a sheep posing as its parent. Every refusal has a
//! stable code and leaves the herd exactly as it was.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use herd_support::World;
use serde_json::{Value, json};

/// A raw protocol connection, to send anything at all.
struct Raw {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    socket: String,
}

impl Raw {
    fn open(world: &World) -> Self {
        let socket = world.json(&["broker", "ensure"])["socket"]
            .as_str()
            .unwrap()
            .to_owned();
        let stream = UnixStream::connect(&socket).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Self {
            stream,
            reader,
            socket,
        }
    }

    /// The herd's key, from beside the socket, as the CLI reads it.
    fn key(&self) -> String {
        let file = self.socket.replace(".sock", ".key");
        std::fs::read_to_string(file).unwrap().trim().to_owned()
    }

    fn send_line(&mut self, line: &str) -> Value {
        self.stream.write_all(line.as_bytes()).unwrap();
        self.stream.write_all(b"\n").unwrap();
        let mut answer = String::new();
        self.reader.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let mut request = json!({ "id": 1, "method": method });
        request["params"] = params;
        self.send_line(&request.to_string())
    }

    /// A hello; a parent's or observer's without a token presents the herd's key.
    fn hello(&mut self, role: &str, agent: Option<&str>, token: Option<&str>) -> Value {
        let key = (matches!(role, "parent" | "observer") && token.is_none()).then(|| self.key());
        let token = token.or(key.as_deref());
        self.call(
            "hello",
            json!({ "protocol": shepherd_core::protocol::PROTOCOL_VERSION, "role": role, "agentId": agent, "token": token }),
        )
    }
}

fn error_code(answer: &Value) -> &str {
    answer["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error, got {answer}"))
}

/// A snapshot of everything the herd shows, to prove a refusal changed nothing.
fn snapshot(world: &World) -> Value {
    let mut herd = world.json(&["herd"]);
    // The broker's clock when the view was taken moves on by itself, and what a sheep last
    // printed is its output, not herd state.
    herd.as_object_mut().unwrap().remove("now");
    for sheep in herd["sheep"].as_array_mut().unwrap() {
        sheep.as_object_mut().unwrap().remove("createdAt");
        sheep.as_object_mut().unwrap().remove("lastLine");
    }
    herd
}

/// Waits (on the parent's inbox, up to 30 s) for a sheep to say `text`.
fn wait_for_word(world: &World, text: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "no sheep said `{text}`");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["content"] == text)
        {
            return;
        }
    }
}

/// Spawns a sheep whose program writes its capability to a file, says so, then idles.
fn capable_sheep(world: &World, name: &str) -> (String, String) {
    let out = world.dir.path().join(format!("{name}.cap"));
    let script = format!(
        "printf '%s' \"$SHEPHERD_TOKEN\" > {}; shepherd tell shepherd {name}-ready; sleep 60",
        out.display()
    );
    world.define(name, &["sh".into(), "-c".into(), script]);
    let agent = world.spawn(name, "");
    wait_for_word(world, &format!("{name}-ready"));
    (agent, std::fs::read_to_string(out).unwrap())
}

#[test]
fn tokens_bind_a_connection_to_its_own_sheep() {
    let world = World::new();
    let (a, token_a) = capable_sheep(&world, "alpha");
    let (b, _) = capable_sheep(&world, "beta");
    let before = snapshot(&world);
    for (agent, token) in [
        (a.as_str(), "wrong"),
        (b.as_str(), token_a.as_str()),
        ("shepherd-agent-00000000-0000", token_a.as_str()),
    ] {
        let mut raw = Raw::open(&world);
        assert_eq!(
            error_code(&raw.hello("sheep", Some(agent), Some(token))),
            "unauthenticated"
        );
    }
    let mut raw = Raw::open(&world);
    assert_eq!(
        error_code(&raw.hello("sheep", Some(&a), None)),
        "unauthenticated"
    );
    let mut raw = Raw::open(&world);
    assert!(raw.hello("sheep", Some(&a), Some(&token_a))["result"].is_object());
    assert_eq!(snapshot(&world), before);
}

#[test]
fn a_sheep_can_only_speak_for_itself() {
    let world = World::new();
    let (a, token_a) = capable_sheep(&world, "alpha");
    let (b, _) = capable_sheep(&world, "beta");
    let task_b = world.delegate(&b, "beta's work")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = snapshot(&world);
    let mut raw = Raw::open(&world);
    raw.hello("sheep", Some(&a), Some(&token_a));
    for (method, params) in [
        ("spawn", json!({ "agent": "alpha" })),
        ("delegate", json!({ "target": b, "task": "x" })),
        ("close", json!({ "id": b })),
        ("message", json!({ "target": b, "message": "x" })),
        ("watch", json!({ "id": task_b })),
        ("broker.stop", json!({})),
    ] {
        let answer = raw.call(method, params);
        assert_eq!(error_code(&answer), "forbidden", "{method}: {answer}");
    }
    assert_eq!(
        error_code(&raw.call("status", json!({ "id": b }))),
        "forbidden"
    );
    // Completing someone else's task: alpha has no task, so the done is dropped, and beta's
    // task stays open.
    let answer = raw.call("done", json!({ "status": "completed", "taskId": task_b }));
    assert_eq!(error_code(&answer), "no_delegated_task");
    assert_eq!(snapshot(&world), before);
    assert_eq!(world.json(&["status", &b])["task"]["state"], "running");
}

#[test]
fn malformed_and_oversized_requests_are_refused_cleanly() {
    let world = World::new();
    let (a, _) = capable_sheep(&world, "alpha");
    let before = snapshot(&world);
    let mut raw = Raw::open(&world);
    assert_eq!(error_code(&raw.call("herd", json!({}))), "hello_required");
    assert_eq!(error_code(&raw.send_line("{not json")), "invalid_request");
    let hello = raw.hello("parent", None, None);
    assert!(hello["result"].is_object(), "{hello}");
    assert_eq!(
        error_code(&raw.call("teleport", json!({}))),
        "unknown_method"
    );
    assert_eq!(
        error_code(&raw.call("delegate", json!({ "target": 7 }))),
        "invalid_request"
    );
    // A closed set's value outside the set names the value and every accepted one.
    for (method, params, value) in [
        (
            "spawn",
            json!({ "agent": "alpha", "backend": "screen" }),
            "screen",
        ),
        (
            "spawn",
            json!({ "agent": "alpha", "placement": "left" }),
            "left",
        ),
        ("read", json!({ "target": a, "source": "all" }), "all"),
        // (A delegation's `mode` was such a set until it left the wire: only the broker's
        // runs set it. A spawn's coding agent is one still.)
        (
            "spawn",
            json!({ "agent": "alpha", "harness": "nosuch" }),
            "nosuch",
        ),
    ] {
        let answer = raw.call(method, params);
        assert_eq!(error_code(&answer), "invalid_request", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("`{value}`")) && message.contains("expected one of"),
            "{message}"
        );
    }
    let big = "x".repeat(64 * 1024 + 1);
    assert_eq!(
        error_code(&raw.call("message", json!({ "target": a, "message": big }))),
        "too_large"
    );
    assert_eq!(
        error_code(&raw.call("message", json!({ "target": "alpha", "message": "hi" }))),
        "invalid_target"
    );
    assert_eq!(
        error_code(&raw.call("message", json!({ "target": a, "message": "  " }))),
        "invalid_task"
    );
    let (_, code, message) = world.error(&["spawn", "alpha", "--label", "a:b"]);
    assert_eq!(code, "invalid_label");
    assert!(message.contains("a:b"), "{message}");
    let (_, code, _) = world.error(&["delegate", &a, "x", "--timeout=-1"]);
    assert_eq!(code, "invalid_timeout");
    assert_eq!(snapshot(&world), before);
}

#[test]
fn a_sheep_cannot_act_as_its_own_parent() {
    let world = World::new();
    // Learn the CLI parent identity from the broker, then let a sheep (unconfined, so it can
    // read the herd's key too) try to use it: its ancestry refuses it.
    let identity = {
        let mut raw = Raw::open(&world);
        raw.hello("observer", None, None)["result"]["parentIdentity"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let out = world.dir.path().join("posing.json");
    let script = format!(
        "shepherd herd --parent-session '{identity}' --json > {} 2>/dev/null; shepherd tell shepherd tried; sleep 60",
        out.display()
    );
    world.define("poser", &["sh".into(), "-c".into(), script]);
    world.spawn("poser", "");
    wait_for_word(&world, "tried");
    let answer: Value = serde_json::from_str(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["error"]["code"], "forbidden", "{answer}");
}

#[test]
fn a_sheep_cannot_claim_to_be_its_own_supervisor() {
    let world = World::new();
    let (a, token_a) = capable_sheep(&world, "alpha");
    let before = snapshot(&world);
    let mut raw = Raw::open(&world);
    // The supervisor speaks with a credential of its own, never the sheep's token.
    assert_eq!(
        error_code(&raw.hello("supervisor", Some(&a), Some(&token_a))),
        "unauthenticated"
    );
    assert_eq!(snapshot(&world), before);
}

#[test]
fn a_process_that_strips_its_capability_and_leaves_the_session_is_still_inside_the_sheep() {
    let world = World::new();
    world.define_test_sheep("worker", "done completed ok", None);
    let out = world.dir.path().join("escape.json");
    let script = format!(
        "env -u SHEPHERD_AGENT_ID -u SHEPHERD_TOKEN -u SHEPHERD_SOCKET -u SHEPHERD_PROJECT -u SHEPHERD_DEPTH \
         setsid -f sh -c 'shepherd spawn worker --label escaped --json > {out}.part 2>/dev/null; mv {out}.part {out}'; \
         while [ ! -e {out} ]; do sleep 0.05; done; shepherd tell shepherd tried; sleep 60",
        out = out.display()
    );
    world.define("escaper", &["sh".into(), "-c".into(), script]);
    world.spawn("escaper", "");
    let before = snapshot(&world);
    wait_for_word(&world, "tried");
    let answer: Value =
        serde_json::from_str(std::fs::read_to_string(&out).unwrap().trim()).unwrap();
    assert_eq!(answer["error"]["code"], "forbidden", "{answer}");
    assert_eq!(snapshot(&world), before, "the parent's herd is unchanged");
}

#[test]
fn an_oversized_request_line_is_refused_and_the_broker_keeps_serving() {
    let world = World::new();
    let mut raw = Raw::open(&world);
    raw.hello("parent", None, None);
    // 2 MiB with no newline: refused once the limit is passed, and the connection closed.
    let line = "x".repeat(2 * 1024 * 1024);
    // The broker stops reading after the limit, so the rest of the write may fail.
    let _partly_written = raw.stream.write_all(line.as_bytes());
    let mut answer = String::new();
    raw.reader.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(error_code(&answer), "request_too_large", "{answer}");
    let mut rest = String::new();
    assert_eq!(
        raw.reader.read_line(&mut rest).unwrap(),
        0,
        "closed: {rest}"
    );
    assert_eq!(world.json(&["herd"])["sheep"], json!([]), "still serving");
}

#[test]
fn a_connection_that_never_says_hello_is_closed() {
    let mut world = World::new();
    world
        .extra_env
        .push(("SHEPHERD_HELLO_DEADLINE_MS".into(), "300".into()));
    let raw = Raw::open(&world);
    let mut reader = raw.reader;
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(error_code(&answer), "hello_timeout", "{answer}");
    line.clear();
    assert_eq!(reader.read_line(&mut line).unwrap(), 0, "closed");
}

#[test]
fn a_full_inbox_refuses_new_items_instead_of_dropping_any() {
    let world = World::new();
    world.define("deaf", &["sleep".into(), "120".into()]);
    let agent = world.spawn("deaf", "");
    let mut raw = Raw::open(&world);
    raw.hello("parent", None, None);
    for n in 0..1000 {
        let answer = raw.call(
            "message",
            json!({ "target": agent, "message": format!("m{n}") }),
        );
        assert!(answer["result"].is_object(), "message {n}: {answer}");
    }
    let before = snapshot(&world);
    let refused = raw.call(
        "message",
        json!({ "target": agent, "message": "one too many" }),
    );
    assert_eq!(error_code(&refused), "inbox_full", "{refused}");
    let (_, code, message) = world.error(&["delegate", &agent, "a task"]);
    assert_eq!(code, "inbox_full");
    assert!(message.contains("1000"), "{message}");
    assert_eq!(snapshot(&world), before, "nothing was dropped or added");
}

#[test]
fn the_parent_and_observer_roles_need_the_herds_key() {
    let world = World::new();
    world.define("idler", &["sleep".into(), "120".into()]);
    let agent = world.spawn("idler", "");
    for role in ["parent", "observer"] {
        let mut raw = Raw::open(&world);
        let bare = raw.call(
            "hello",
            json!({ "protocol": shepherd_core::protocol::PROTOCOL_VERSION, "role": role }),
        );
        assert_eq!(error_code(&bare), "unauthenticated", "{role}: {bare}");
        let message = bare["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&raw.socket.replace(".sock", ".key")),
            "{message}"
        );
        let mut raw = Raw::open(&world);
        let wrong = raw.hello(role, None, Some(&"0".repeat(64)));
        assert_eq!(error_code(&wrong), "unauthenticated", "{role}: {wrong}");
        let mut raw = Raw::open(&world);
        let right = raw.hello(role, None, None);
        assert_eq!(right["result"]["role"], role, "{right}");
        let herd = raw.call("herd", json!({}));
        assert_eq!(
            herd["result"]["sheep"][0]["agentId"],
            agent.as_str(),
            "{herd}"
        );
    }
    let key = std::path::PathBuf::from(Raw::open(&world).socket.replace(".sock", ".key"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only its user reads the herd's key");
}
