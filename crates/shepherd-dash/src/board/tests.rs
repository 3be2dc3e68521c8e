use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_800_000_000_000;

fn sheep(name: &str, extra: &Value) -> Value {
    let (agent, label) = name.split_once(": ").unwrap_or((name, ""));
    let mut value = json!({
        "agentId": format!("shepherd-agent-1a2b3c4d-{:0>8}", name.len()),
        "agent": agent,
        "label": label,
        "displayName": name,
        "backend": "headless",
        "state": "idle",
        "cwd": "/p",
        "createdAt": NOW - 600_000,
        "runtime": "command",
        "since": NOW - 600_000,
    });
    for (key, v) in extra.as_object().unwrap() {
        value[key] = v.clone();
    }
    value
}

fn herd(sheep: &[Value], settled: &Value) -> HerdResult {
    serde_json::from_value(json!({ "sheep": sheep, "now": NOW, "settled": settled })).unwrap()
}

fn task(title: &str, started_ago: i64, extra: &Value) -> Value {
    let mut value = json!({
        "id": "shepherd-task-1a2b3c4d-00000001",
        "state": "running",
        "title": title,
        "createdAt": NOW - started_ago - 5,
        "startedAt": NOW - started_ago,
    });
    for (key, v) in extra.as_object().unwrap() {
        value[key] = v.clone();
    }
    value
}

#[test]
fn durations_use_two_units_at_most() {
    assert_eq!(duration(0), "0s");
    assert_eq!(duration(-5), "0s");
    assert_eq!(duration(59_999), "59s");
    assert_eq!(duration(65_000), "1m05s");
    assert_eq!(duration(3_600_000 + 5 * 60_000 + 59_000), "1h05m");
    assert_eq!(duration(3 * 86_400_000 + 4 * 3_600_000), "3d04h");
}

#[test]
fn token_counts_read_like_people_say_them() {
    assert_eq!(tokens(950), "950");
    assert_eq!(tokens(12_345), "12.3k");
    assert_eq!(tokens(999_949), "999.9k");
    assert_eq!(tokens(4_100_000), "4.1M");
}

#[test]
fn a_working_sheep_shows_its_task_its_age_and_what_it_printed() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({
                "state": "working",
                "since": NOW - 125_000,
                "model": "anthropic/claude-sonnet-4",
                "task": task("fix the login bug", 70_000, &json!({})),
                "usage": { "tokensIn": 12_000, "tokensOut": 345, "cost": 0.042 },
                "lastLine": "running cargo test",
            }),
        )],
        &json!([]),
    );
    let rows = rows(&view, NOW, "", Sort::Spawned);
    let row = &rows[0];
    assert_eq!(row.state, State::Working);
    assert_eq!(row.age, "2m05s");
    assert_eq!(row.task, "fix the login bug");
    assert_eq!(row.elapsed, "1m10s");
    assert_eq!(row.harness, "command");
    assert_eq!(row.model, "anthropic/claude-sonnet-4");
    assert_eq!(row.usage, "12.3k tok $0.04");
    assert_eq!(row.last, "running cargo test");
    assert_eq!(row.place, "headless");
    assert!(row.waits.is_empty());
    assert_eq!(row.pending_request, None);
}

#[test]
fn a_sheep_waiting_on_the_shepherd_says_who_and_what_and_can_be_answered() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({
                "state": "working",
                "since": NOW - 30_000,
                "task": task("fix it", 60_000, &json!({
                    "state": "waiting",
                    "waitingOn": "shepherd",
                    "question": "which branch?",
                    "pendingRequest": "shepherd-message-1a2b3c4d-00000009",
                })),
            }),
        )],
        &json!([]),
    );
    let row = &rows(&view, NOW, "", Sort::Spawned)[0];
    assert_eq!(row.state, State::Waiting);
    assert_eq!(row.waits, "shepherd: which branch?");
    assert_eq!(
        row.pending_request.as_deref(),
        Some("shepherd-message-1a2b3c4d-00000009")
    );
}

#[test]
fn waiting_on_a_herd_mate_is_not_an_answer_the_shepherd_gives() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({
                "task": task("fix it", 60_000, &json!({
                    "state": "waiting",
                    "waitingOn": "scout: b",
                    "pendingRequest": "shepherd-message-1a2b3c4d-00000009",
                })),
            }),
        )],
        &json!([]),
    );
    let row = &rows(&view, NOW, "", Sort::Spawned)[0];
    assert_eq!(row.waits, "scout: b");
    assert_eq!(row.pending_request, None);
}

#[test]
fn a_sheep_without_an_open_task_names_the_task_it_settled_last() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({ "state": "done", "since": NOW - 4000 }),
        )],
        &json!([{
            "taskId": "shepherd-task-1a2b3c4d-00000002",
            "agentId": "shepherd-agent-1a2b3c4d-00000009",
            "displayName": "worker: a",
            "title": "write the docs",
            "status": "completed",
            "returnCode": 0,
            "startedAt": NOW - 64_000,
            "completedAt": NOW - 4000,
            "note": "/p/.shepherd/sessions/0001-x/worker-01.md",
        }]),
    );
    let row = &rows(&view, NOW, "", Sort::Spawned)[0];
    assert_eq!(row.state, State::Done);
    assert_eq!(row.task, "write the docs");
    assert!(row.elapsed.is_empty(), "a settled task's clock stops");
    assert_eq!(
        row.note.as_deref(),
        Some("/p/.shepherd/sessions/0001-x/worker-01.md")
    );
    let settled = settled(&view, NOW, "");
    assert_eq!(settled[0].outcome, "completed");
    assert_eq!(settled[0].took, "1m00s");
    assert_eq!(settled[0].ago, "4s ago");
}

#[test]
fn settled_outcomes_name_the_return_code_unless_completed_or_cancelled() {
    let entry = |status: &str, rc: i32| {
        json!({
            "taskId": "shepherd-task-1a2b3c4d-00000002",
            "agentId": "shepherd-agent-1a2b3c4d-00000009",
            "displayName": "w",
            "title": "t",
            "status": status,
            "returnCode": rc,
            "outcome": "need credentials",
            "startedAt": NOW - 1000,
            "completedAt": NOW,
        })
    };
    let view = herd(
        &[],
        &json!([
            entry("blocked", 2),
            entry("failed", 3),
            entry("cancelled", 130),
            entry("timed_out", 124)
        ]),
    );
    let outcomes: Vec<String> = settled(&view, NOW, "")
        .into_iter()
        .map(|t| t.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            "blocked rc 2",
            "failed rc 3",
            "cancelled",
            "timed_out rc 124"
        ]
    );
    assert_eq!(settled(&view, NOW, "")[0].detail, "need credentials");
}

#[test]
fn an_exited_sheep_shows_why_when_it_printed_nothing() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({ "state": "exited", "error": "exited with status 3" }),
        )],
        &json!([]),
    );
    let row = &rows(&view, NOW, "", Sort::Spawned)[0];
    assert_eq!(row.state, State::Exited);
    assert_eq!(row.last, "exited with status 3");
}

#[test]
fn visible_sheep_show_their_pane() {
    let view = herd(
        &[sheep("w", &json!({ "backend": "tmux", "pane": "%3" }))],
        &json!([]),
    );
    assert_eq!(rows(&view, NOW, "", Sort::Spawned)[0].place, "tmux %3");
}

#[test]
fn the_filter_matches_name_state_task_harness_and_model_case_blind() {
    let view = herd(
        &[
            sheep(
                "worker: a",
                &json!({ "state": "working", "task": task("Fix Login", 0, &json!({})) }),
            ),
            sheep(
                "scout: b",
                &json!({ "runtime": "pi", "model": "openai/gpt-5" }),
            ),
            sheep("reviewer", &json!({ "state": "blocked" })),
        ],
        &json!([]),
    );
    let names = |filter: &str| -> Vec<String> {
        rows(&view, NOW, filter, Sort::Spawned)
            .into_iter()
            .map(|r| r.name)
            .collect()
    };
    assert_eq!(names("login"), ["worker: a"]);
    assert_eq!(names("GPT"), ["scout: b"]);
    assert_eq!(names("pi"), ["scout: b"]);
    assert_eq!(names("blocked"), ["reviewer"]);
    assert_eq!(names("  "), ["worker: a", "scout: b", "reviewer"]);
    assert!(names("nothing like it").is_empty());
}

#[test]
fn sorting_by_state_puts_what_needs_a_person_first() {
    let view = herd(
        &[
            sheep("a", &json!({ "state": "done", "since": NOW - 1000 })),
            sheep("bb", &json!({ "state": "working", "since": NOW - 9000 })),
            sheep("ccc", &json!({ "state": "blocked", "since": NOW - 5000 })),
            sheep(
                "dddd",
                &json!({ "task": task("t", 0, &json!({ "state": "waiting" })) }),
            ),
        ],
        &json!([]),
    );
    let names = |sort| -> Vec<String> {
        rows(&view, NOW, "", sort)
            .into_iter()
            .map(|r| r.name)
            .collect()
    };
    assert_eq!(names(Sort::Spawned), ["a", "bb", "ccc", "dddd"]);
    assert_eq!(names(Sort::State), ["dddd", "ccc", "bb", "a"]);
    assert_eq!(names(Sort::Name), ["a", "bb", "ccc", "dddd"]);
    assert_eq!(names(Sort::Age), ["dddd", "bb", "ccc", "a"]);
    assert_eq!(Sort::Age.next(), Sort::Spawned);
}

#[test]
fn totals_count_states_usage_and_outcomes() {
    let view = herd(
        &[
            sheep(
                "a",
                &json!({ "state": "working", "usage": { "tokensIn": 1000, "tokensOut": 500, "cost": 0.5 } }),
            ),
            sheep(
                "bb",
                &json!({ "state": "working", "usage": { "tokensIn": 500, "tokensOut": 0, "cost": 0.25 } }),
            ),
            sheep("ccc", &json!({ "state": "blocked" })),
        ],
        &json!([{
            "taskId": "shepherd-task-1a2b3c4d-00000002",
            "agentId": "shepherd-agent-1a2b3c4d-00000009",
            "displayName": "x",
            "title": "t",
            "status": "completed",
            "returnCode": 0,
            "startedAt": NOW,
            "completedAt": NOW,
        }]),
    );
    assert_eq!(
        totals(&view),
        "3 sheep: 1 blocked · 2 working  ·  2.0k tok $0.75  ·  1 settled: 1 completed"
    );
    assert_eq!(totals(&HerdResult::default()), "no sheep");
}

#[test]
fn the_filter_applies_to_settled_tasks_too() {
    let entry = |name: &str, title: &str| {
        json!({
            "taskId": "shepherd-task-1a2b3c4d-00000002",
            "agentId": "shepherd-agent-1a2b3c4d-00000009",
            "displayName": name,
            "title": title,
            "status": "completed",
            "returnCode": 0,
            "startedAt": NOW,
            "completedAt": NOW,
        })
    };
    let view = herd(
        &[],
        &json!([
            entry("worker: a", "fix login"),
            entry("scout: b", "map auth")
        ]),
    );
    let names = |filter: &str| -> Vec<String> {
        settled(&view, NOW, filter)
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(names(""), ["worker: a", "scout: b"]);
    assert_eq!(names("AUTH"), ["scout: b"]);
    assert_eq!(names("completed").len(), 2);
}

#[test]
fn where_a_sheep_runs_names_its_pane_and_marks_a_worktree() {
    let view = herd(
        &[
            sheep("worker: a", &json!({ "backend": "tmux", "pane": "%3" })),
            sheep(
                "worker: b",
                &json!({ "worktree": { "path": "/p-wt/worker-b", "branch": "shepherd/worker-b" } }),
            ),
        ],
        &json!([]),
    );
    let places: Vec<String> = rows(&view, NOW, "", Sort::Spawned)
        .into_iter()
        .map(|r| r.place)
        .collect();
    assert_eq!(places, ["tmux %3", "headless ⎇"]);
}

#[test]
fn an_open_tasks_live_tokens_count_with_the_settled_runs() {
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({ "usage": { "tokensIn": 1000, "tokensOut": 200, "tokens": 300, "cost": 0.5 } }),
        )],
        &json!([]),
    );
    assert_eq!(
        rows(&view, NOW, "", Sort::Spawned)[0].usage,
        "1.5k tok $0.50"
    );
}

#[test]
fn a_rate_limited_task_says_until_when_and_which_provider() {
    let until = NOW + 90_000;
    let view = herd(
        &[sheep(
            "worker: a",
            &json!({
                "state": "working",
                "task": task("fix it", 60_000, &json!({
                    "rateLimit": {
                        "class": "rate_limit",
                        "provider": "anthropic",
                        "since": NOW - 1_000,
                        "until": until,
                        "queued": false,
                    },
                })),
            }),
        )],
        &json!([]),
    );
    let row = &rows(&view, NOW, "", Sort::Spawned)[0];
    assert_eq!(row.state, State::Limited);
    assert_eq!(
        row.waits,
        format!(
            "rate-limited until {} (anthropic)",
            shepherd_core::herd::limits::local_clock(until)
        )
    );
}
