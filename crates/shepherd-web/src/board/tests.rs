use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_800_000_000_000;

fn sheep(name: &str, state: &str, task: Option<Value>) -> Value {
    let mut value = json!({
        "agentId": format!("shepherd-agent-1a2b3c4d-{:0>8}", name.len()),
        "agent": "worker",
        "label": "",
        "displayName": name,
        "backend": "headless",
        "state": state,
        "cwd": "/p",
        "createdAt": NOW - 600_000,
        "runtime": "command",
        "since": NOW - 65_000,
    });
    if let Some(task) = task {
        value["task"] = task;
    }
    value
}

fn task(state: &str, extra: &Value) -> Value {
    let mut value = json!({
        "id": "shepherd-task-1a2b3c4d-00000001",
        "state": state,
        "title": "Fix the <login> page",
        "createdAt": NOW - 70_000,
    });
    for (key, v) in extra.as_object().unwrap() {
        value[key] = v.clone();
    }
    value
}

fn status(value: Value) -> SheepStatus {
    serde_json::from_value(value).unwrap()
}

#[test]
fn columns_follow_the_facts() {
    let asks = json!({"waitingOn": "shepherd", "pendingRequest": "m-1", "question": "Which file?"});
    let cases = [
        (
            sheep("a", "working", Some(task("waiting", &asks))),
            Column::NeedsYou,
        ),
        (
            sheep(
                "b",
                "working",
                Some(task("waiting", &json!({"waitingOn": "mate"}))),
            ),
            Column::Working,
        ),
        (
            sheep("c", "working", Some(task("running", &json!({})))),
            Column::Working,
        ),
        (
            sheep(
                "d",
                "working",
                Some(task(
                    "running",
                    &json!({"stall": {"afterMs": 1, "quietMs": 5, "nudged": true}}),
                )),
            ),
            Column::NeedsYou,
        ),
        (sheep("e", "blocked", None), Column::NeedsYou),
        (sheep("f", "failed", None), Column::NeedsYou),
        (sheep("g", "idle", None), Column::Idle),
        (sheep("h", "done", None), Column::Settled),
        (
            sheep("i", "idle", Some(task("running", &json!({})))),
            Column::Working,
        ),
    ];
    for (value, column) in cases {
        let name = value["displayName"].clone();
        assert_eq!(Column::of(&status(value)), column, "{name}");
    }
}

#[test]
fn a_question_card_escapes_and_offers_a_reply() {
    let asks =
        json!({"waitingOn": "shepherd", "pendingRequest": "m-1", "question": "<b>Which</b> file?"});
    let html = card(
        &status(sheep("asker", "working", Some(task("waiting", &asks)))),
        None,
        "tok",
        Path::new("/p"),
    );
    assert!(html.contains("&lt;b&gt;Which&lt;/b&gt; file?"), "{html}");
    assert!(html.contains("Fix the &lt;login&gt; page"), "{html}");
    assert!(html.contains(r#"name="reply_to" value="m-1""#), "{html}");
    // Its age is the page's to write and keep ticking, from when its state began.
    assert!(
        html.contains(&format!(r#"<time data-since="{}"></time>"#, NOW - 65_000)),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="state state-waiting">waiting</span>"#),
        "{html}"
    );
    assert!(!html.contains("<b>"), "{html}");
}

#[test]
fn the_board_counts_each_column_and_outcome() {
    let view: HerdResult = serde_json::from_value(json!({
        "now": NOW,
        "sheep": [sheep("a", "working", None), sheep("bb", "idle", None), sheep("ccc", "done", None)],
        "settled": [{
            "taskId": "shepherd-task-1a2b3c4d-00000002", "agentId": "shepherd-agent-1a2b3c4d-00000003",
            "displayName": "ccc", "title": "t", "status": "completed", "returnCode": 0,
            "startedAt": NOW - 10, "completedAt": NOW
        }],
    }))
    .unwrap();
    let html = board(&view, "tok", Path::new("/p"));
    assert!(
        html.contains("3 sheep: 1 done, 1 idle, 1 working · tasks: 1 completed · 0 tokens · $0.00"),
        "{html}"
    );
    let settled = html.find(r#"id="settled""#).unwrap();
    assert!(html[settled..].contains(">ccc</a>"), "{html}");
}

#[test]
fn a_settled_card_says_how_its_task_ended_and_a_closed_sheeps_task_stays_listed() {
    let settled = |agent: &str, name: &str, status: &str, outcome: &str| {
        json!({
            "taskId": "shepherd-task-1a2b3c4d-00000002", "agentId": agent,
            "displayName": name, "title": "Fix <it>", "status": status, "returnCode": 0,
            "outcome": outcome, "startedAt": NOW - 10, "completedAt": NOW,
            "note": "/p/.shepherd/sessions/0001-s/worker-01.md"
        })
    };
    let view: HerdResult = serde_json::from_value(json!({
        "now": NOW,
        "sheep": [sheep("ccc", "done", None)],
        "settled": [
            settled("shepherd-agent-1a2b3c4d-00000003", "ccc", "completed", "edited <main>.rs"),
            settled("shepherd-agent-1a2b3c4d-00000009", "gone", "failed", "the build broke"),
        ],
    }))
    .unwrap();
    let html = board(&view, "tok", Path::new("/p"));
    let card = &html[html.find(r#"id="settled""#).unwrap()..html.find(r#"id="closed""#).unwrap()];
    assert!(
        card.contains(r#"<p class="outcome outcome-completed"><span class="state state-completed">completed</span> edited &lt;main&gt;.rs · <a href="/files/.shepherd/sessions/0001-s/worker-01.md">note</a></p>"#),
        "{card}"
    );
    let closed = &html[html.find(r#"id="closed""#).unwrap()..];
    assert!(
        closed.contains("<strong>gone</strong> · Fix &lt;it&gt;"),
        "{closed}"
    );
    assert!(closed.contains("failed</span> the build broke"), "{closed}");
    assert!(
        !closed.contains("<strong>ccc</strong>"),
        "a sheep still here is on its card: {closed}"
    );
}

#[test]
fn a_runs_card_lists_its_steps_each_where_it_is_or_how_it_ended() {
    let view: HerdResult = serde_json::from_value(json!({
        "now": NOW,
        "sheep": [sheep("a", "working", None)],
        "runs": [{
            "runId": "run-1", "mode": "chain",
            "steps": [
                {"agent": "scout", "phase": "done", "status": "completed", "agentId": "shepherd-agent-1a2b3c4d-00000009"},
                {"agent": "<w>", "phase": "running", "agentId": sheep("a", "working", None)["agentId"]},
                {"agent": "reviewer", "phase": "queued"}
            ]
        }],
    }))
    .unwrap();
    let html = board(&view, "tok", Path::new("/p"));
    assert!(
        html.contains(r#"<article class="run" data-run="run-1" data-state="running"><header><strong>run-1</strong> · chain · 1 of 3 done</header>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<li>scout <span class="state state-completed">completed</span></li>"#),
        "a step whose sheep left the herd is named, not linked: {html}"
    );
    assert!(
        html.contains(r#">&lt;w&gt;</a> <span class="state state-running">running</span></li>"#),
        "a running step links its sheep's page: {html}"
    );
    assert!(
        html.contains(r#"<li>reviewer <span class="state state-queued">queued</span></li>"#),
        "{html}"
    );
}

#[test]
fn elapsed_reads_in_one_or_two_units() {
    assert_eq!(elapsed(-5), "0 s");
    assert_eq!(elapsed(59_999), "59 s");
    assert_eq!(elapsed(60_000), "1 min");
    assert_eq!(elapsed(3_600_000 + 5 * 60_000), "1 h 5 min");
}

#[test]
fn ages_are_written_into_what_is_sent_and_nothing_else_changes() {
    let html = format!(
        r#"<p>{} and {}</p><time data-since="x"></time>"#,
        age(NOW - 65_000),
        age(NOW - 2_000)
    );
    assert_eq!(
        fill_ages(&html, NOW),
        format!(
            r#"<p><time data-since="{}">1 min</time> and <time data-since="{}">2 s</time></p><time data-since="x"></time>"#,
            NOW - 65_000,
            NOW - 2_000
        )
    );
    assert_eq!(fill_ages("no ages", NOW), "no ages");
}
