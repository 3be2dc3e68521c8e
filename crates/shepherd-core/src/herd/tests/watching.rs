//! What keeps a parent informed without polling: watchers, stale-wait reminders, forgotten-done
//! nudges, failed runs, and closes and exits settling their tasks.

use super::*;
use crate::task::{DoneStatus, TaskState};

#[test]
fn watchers_report_once_in_input_order_coalesced() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let b = h.spawn("worker", "b");
    let c = h.spawn("worker", "c");
    let ta = h.delegate(&a, "x");
    let tb = h.delegate(&b, "y");
    let tc = h.delegate(&c, "z");
    h.done(&c, None, DoneStatus::Completed, "c done").unwrap();
    let w = WatcherId::mint("1a2b3c4d", "00000001");
    let ids = vec![tb.to_string(), ta.to_string(), tc.to_string()];
    let out = h.run(|tx| watch(tx, w.clone(), &ids)).unwrap();
    assert_eq!(out.completed.len(), 1);
    assert_eq!(out.completed[0].task_id, tc);
    assert_eq!(out.pending, vec![tb.clone(), ta.clone()]);
    // Both settle in one change (a deadline): one notification, in the caller's order.
    h.tick(20 * MIN);
    let completions: Vec<_> = h
        .inbox(&Parent())
        .into_iter()
        .filter_map(|p| match p {
            Payload::Completion { completions, .. } => Some(completions),
            _ => None,
        })
        .collect();
    assert_eq!(completions.len(), 1);
    let order: Vec<_> = completions[0].iter().map(|r| r.task_id.clone()).collect();
    assert_eq!(order, vec![tb, ta]);
    assert!(
        h.herd.watchers.is_empty(),
        "a fully delivered watcher is removed"
    );
    assert_eq!(
        h.run(|tx| watch(
            tx,
            WatcherId::mint("1a2b3c4d", "00000002"),
            &["worker".to_owned()]
        ))
        .unwrap_err()
        .code,
        "unknown_task"
    );
}

#[test]
fn watchers_wait_for_the_note_to_be_final() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = TaskId::mint("1a2b3c4d", "0badf00d");
    let note = NoteLink {
        session: "0001-s".into(),
        session_name: "s".into(),
        session_path: "/p/.shepherd/sessions/0001-s".into(),
        session_relative: ".shepherd/sessions/0001-s".into(),
        note: "/p/.shepherd/sessions/0001-s/worker-01.md".into(),
        note_relative: ".shepherd/sessions/0001-s/worker-01.md".into(),
        resumed: false,
    };
    let input = DelegateInput {
        task_id: t.clone(),
        target: a.to_string(),
        description: "x".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    h.run(|tx| {
        delegate(tx, input).unwrap();
        start_task(
            tx,
            &t,
            Some(note),
            MessageId::mint("1a2b3c4d", "0badf00e"),
            "x".into(),
        )
        .unwrap();
    });
    let w = WatcherId::mint("1a2b3c4d", "0badf00f");
    h.run(|tx| watch(tx, w, &[t.to_string()])).unwrap();
    h.done(&a, None, DoneStatus::Completed, "ok").unwrap();
    assert!(
        !h.inbox(&Parent())
            .iter()
            .any(|p| matches!(p, Payload::Completion { .. }))
    );
    h.run(|tx| finalized(tx, &t));
    let reports: Vec<_> = h
        .inbox(&Parent())
        .into_iter()
        .filter(|p| matches!(p, Payload::Completion { .. }))
        .collect();
    assert_eq!(reports.len(), 1);
}

#[test]
fn stale_reminder_once_per_episode_and_never_settles() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    let q = h
        .message(sheep(&a), "shepherd", "which file?", |m| {
            m.expects_reply = true;
        })
        .unwrap();
    h.tick(5 * MIN);
    h.tick(MIN);
    let stale = |h: &Harness| {
        h.inbox(&Parent())
            .iter()
            .filter(|p| matches!(p, Payload::StaleWait(_)))
            .count()
    };
    assert_eq!(stale(&h), 1);
    assert_eq!(h.state(&t), TaskState::Waiting);
    assert!(
        h.herd
            .status_of(&h.herd.sheep[&a], h.now)
            .task
            .unwrap()
            .stale
    );
    // Answering ends the episode; a new wait can remind again.
    h.message(Parent(), a.as_str(), "main.rs", |m| {
        m.reply_to = Some(q.message_id.to_string());
    })
    .unwrap();
    assert_eq!(h.state(&t), TaskState::Running);
    h.message(sheep(&a), "shepherd", "and then?", |m| {
        m.expects_reply = true;
    })
    .unwrap();
    h.tick(5 * MIN);
    assert_eq!(stale(&h), 2);
    // Disabled threshold: no reminders.
    h.config.stale_after_ms = None;
    let request_deadline = h.herd.requests.values().next().unwrap().deadline_at;
    let task_deadline = h.herd.tasks[&t].deadline_at;
    assert_eq!(
        h.herd.next_deadline(&h.config),
        Some(request_deadline.min(task_deadline))
    );
}

#[test]
fn forgotten_done_is_nudged_then_escalated_once() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    let settled = RunReport::Settled {
        stop_reason: Some("stop".into()),
        error: None,
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, &a, settled.clone(), 1));
    let reminders = |h: &Harness| {
        h.envelopes(&sheep(&a))
            .iter()
            .filter(|e| e.kind == crate::envelope::Kind::Reminder)
            .count()
    };
    assert_eq!(reminders(&h), 1);
    h.run(|tx| report(tx, &a, settled.clone(), 1));
    h.run(|tx| report(tx, &a, settled.clone(), 1));
    assert_eq!(reminders(&h), 1);
    let stalls = h
        .inbox(&Parent())
        .iter()
        .filter(|p| matches!(p, Payload::Notice(n) if n.notice == NoticeKind::CompletionStalled))
        .count();
    assert_eq!(stalls, 1);
    assert_eq!(h.state(&t), TaskState::Running, "a nudge never settles");
    h.done(&a, None, DoneStatus::Completed, "ok").unwrap();
    assert_eq!(h.state(&t), TaskState::Completed);
}

#[test]
fn error_run_fails_the_task_at_once() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    h.run(|tx| {
        report(
            tx,
            &a,
            RunReport::Settled {
                stop_reason: Some("error".into()),
                error: Some("401 invalid api key".into()),
                text: None,
                limit: None,
            },
            1,
        );
    });
    assert_eq!(h.state(&t), TaskState::Failed);
    assert!(
        h.herd.tasks[&t]
            .result
            .as_ref()
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .contains("401 invalid api key")
    );
}

#[test]
fn close_cancels_with_130_and_exit_fails_with_tail() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let b = h.spawn("worker", "b");
    let ta = h.delegate(&a, "x");
    let tb = h.delegate(&b, "y");
    assert!(h.run(|tx| begin_close(tx, &a)));
    h.run(|tx| closed(tx, &a));
    assert_eq!(h.state(&ta), TaskState::Cancelled);
    assert_eq!(h.herd.tasks[&ta].result.as_ref().unwrap().return_code, 130);
    assert_eq!(h.herd.status_of(&h.herd.sheep[&a], h.now).state, "closed");
    let exit = ExitInfo {
        code: Some(3),
        signal: None,
        reason: None,
        tail: "boom\n".into(),
    };
    h.run(|tx| exited(tx, &b, exit));
    assert_eq!(h.state(&tb), TaskState::Failed);
    let error = h.herd.tasks[&tb]
        .result
        .as_ref()
        .unwrap()
        .error
        .clone()
        .unwrap();
    assert!(
        error.contains("exited with status 3") && error.contains("boom"),
        "{error}"
    );
    let late = h.message(Parent(), b.as_str(), "hello?", |_| {});
    assert_eq!(late.unwrap_err().code, "closed_handle");
}
