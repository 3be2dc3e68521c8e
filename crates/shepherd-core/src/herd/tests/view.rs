//! The herd view a dashboard draws: since when each state holds, the task's title and
//! question, what runs the sheep and what its runs cost, its last line, and the settled tasks.

use super::*;

#[test]
fn the_view_tells_since_when_each_state_holds() {
    let mut h = Harness::new();
    let start = h.now;
    let a = h.spawn("worker", "a");
    let view = |h: &Harness| h.herd.status_of(&h.herd.sheep[&a], h.now);
    assert_eq!((view(&h).state.as_str(), view(&h).since), ("idle", start));

    h.now += MIN;
    let t = h.delegate(&a, "fix the login bug\n\nDetails follow.");
    assert_eq!(view(&h).state, "working");
    assert_eq!(view(&h).since, start + MIN);

    h.now += MIN;
    let question = h
        .message(sheep(&a), "shepherd", "which branch?\nmain or dev", |m| {
            m.expects_reply = true;
        })
        .unwrap();
    h.now += 30_000;
    let waiting = view(&h);
    assert_eq!(waiting.since, start + 2 * MIN, "waiting since the question");
    let task = waiting.task.unwrap();
    assert_eq!(task.title, "fix the login bug");
    assert_eq!(task.question.as_deref(), Some("which branch?"));
    assert_eq!(task.started_at, Some(start + MIN));

    h.message(Parent(), a.as_str(), "main", |m| {
        m.reply_to = Some(question.message_id.to_string());
    })
    .unwrap();
    assert_eq!(
        (view(&h).state.as_str(), view(&h).since),
        ("working", start + MIN),
        "working again, since the task started"
    );
    h.now += MIN;
    h.done(&a, Some(t.as_str()), DoneStatus::Completed, "fixed")
        .unwrap();
    assert_eq!(
        (view(&h).state.as_str(), view(&h).since),
        ("done", h.now),
        "done since it settled"
    );

    h.now += MIN;
    let closing_at = h.now;
    h.run(|tx| begin_close(tx, &a));
    h.now += 5000;
    assert_eq!(
        (view(&h).state.as_str(), view(&h).since),
        ("closing", closing_at)
    );
}

#[test]
fn an_exited_sheep_keeps_the_time_it_ended_and_its_last_line() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    h.now += MIN;
    let ended = h.now;
    h.run(|tx| {
        exited(
            tx,
            &a,
            ExitInfo {
                code: Some(3),
                tail: "compiling\ncrashing with status 3\n\n".into(),
                ..ExitInfo::default()
            },
        );
    });
    h.now += MIN;
    let view = h.herd.status_of(&h.herd.sheep[&a], h.now);
    assert_eq!(view.state, "exited");
    assert_eq!(view.since, ended);
    assert_eq!(view.last_line.as_deref(), Some("crashing with status 3"));
    assert_eq!(view.runtime, crate::harness::Runtime::Command);
}

#[test]
fn usage_and_model_come_from_what_the_runs_reported() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    h.herd.sheep.get_mut(&a).unwrap().model = Some("fake/started-with".into());
    let before = h.herd.status_of(&h.herd.sheep[&a], h.now);
    assert_eq!(before.model.as_deref(), Some("fake/started-with"));
    assert_eq!(before.usage, None, "nothing reported, nothing known");

    for (text, tokens_in) in [("first run\ndone one", 1000), ("second", 500)] {
        let t = h.delegate(&a, "t");
        h.done(&a, Some(t.as_str()), DoneStatus::Completed, "ok")
            .unwrap();
        let telemetry = serde_json::json!({
            "model": "fake/m1", "tokensIn": tokens_in, "tokensOut": 20,
            "tokensCacheRead": 5, "cost": 0.25,
        });
        h.run(|tx| {
            output(
                tx,
                &t,
                TaskOutput {
                    text: text.into(),
                    telemetry,
                },
            );
        });
    }
    let view = h.herd.status_of(&h.herd.sheep[&a], h.now);
    assert_eq!(view.model.as_deref(), Some("fake/m1"));
    assert_eq!(
        view.usage,
        Some(Usage {
            tokens_in: 1510,
            tokens_out: 40,
            tokens: 0,
            cost: 0.5
        })
    );
    assert_eq!(view.last_line.as_deref(), Some("second"));
    // The model set by the test is not replayed; put it back as the journal had none.
    h.herd.sheep.get_mut(&a).unwrap().model = None;
}

#[test]
fn settled_tasks_are_listed_newest_first_with_their_outcome() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let b = h.spawn("scout", "b");
    let first = h.delegate(&a, "first task");
    h.now += MIN;
    h.done(
        &a,
        Some(first.as_str()),
        DoneStatus::Completed,
        "all good\nmore",
    )
    .unwrap();
    let second = h.delegate(&b, "second task");
    h.now += 2 * MIN;
    h.done(
        &b,
        Some(second.as_str()),
        DoneStatus::Blocked,
        "need credentials",
    )
    .unwrap();
    let open = h.delegate(&a, "still open");
    let settled = h.herd.settled_view();
    assert_eq!(settled.len(), 2, "the open task is not listed: {settled:?}");
    assert_eq!(settled[0].task_id, second);
    assert_eq!(settled[0].display_name, "scout: b");
    assert_eq!(
        (settled[0].status, settled[0].return_code),
        (TaskState::Blocked, 2)
    );
    assert_eq!(settled[0].outcome.as_deref(), Some("need credentials"));
    assert_eq!(settled[0].completed_at - settled[0].started_at, 2 * MIN);
    assert_eq!(settled[1].task_id, first);
    assert_eq!(settled[1].outcome.as_deref(), Some("all good"));
    assert_eq!(h.herd.latest_session(), None, "no notes, no session");
    assert!(h.herd.tasks.contains_key(&open));
}

#[test]
fn lines_are_taken_trimmed_and_cut() {
    assert_eq!(first_line("\n  first \nsecond"), "first");
    assert_eq!(first_line(""), "");
    assert_eq!(last_line("a\nb  \n\n"), Some("b".into()));
    assert_eq!(last_line(" \n "), None);
    let long = "x".repeat(300);
    assert_eq!(first_line(&long).chars().count(), 241);
    assert!(first_line(&long).ends_with('…'));
}
