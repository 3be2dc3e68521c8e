//! The controls on the pure herd: `maxSheep`, budgets, the stall watchdog and reopening, each
//! with the replay check of the shared harness.

use super::tests::{Harness, MIN, sheep};
use super::*;
use crate::budget::{Budget, Usage};
use crate::task::{DoneStatus, TaskState};

fn new_sheep(h: &mut Harness, label: &str, max_sheep: Option<u32>) -> Result<(), HerdError> {
    admit_sheep(h, label, max_sheep, None).map(|_| ())
}

fn admit_sheep(
    h: &mut Harness,
    label: &str,
    max_sheep: Option<u32>,
    budget: Option<Budget>,
) -> Result<AgentId, HerdError> {
    let id = AgentId::mint("1a2b3c4d", &format!("{:012x}", 900 + h.herd.sheep.len()));
    let new = NewSheep {
        id: id.clone(),
        agent: "worker".into(),
        label: crate::label::validate_label(label).unwrap(),
        role: None,
        backend: crate::backend::BackendKind::Headless,
        runtime: crate::harness::Runtime::Agent(crate::harness::Harness::Pi),
        model: None,
        cwd: "/p".into(),
        token_digest: "d".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep,
        budget,
        recipe: None,
        worktree: None,
        provider_key: None,
        provider: None,
        turn_cap: None,
    };
    h.run(|tx| admit(tx, new))?;
    h.run(|tx| ready(tx, &id));
    Ok(id)
}

#[test]
fn max_sheep_refuses_one_more_and_a_closed_sheep_frees_its_place() {
    let mut h = Harness::new();
    let first = h.spawn("worker", "a");
    new_sheep(&mut h, "b", Some(2)).unwrap();
    let before = h.herd.clone();
    let err = new_sheep(&mut h, "c", Some(2)).unwrap_err();
    assert_eq!(err.code, "max_sheep");
    assert!(
        err.message
            .starts_with("this herd already runs 2 sheep and maxSheep is 2;"),
        "{}",
        err.message
    );
    assert_eq!(h.herd, before, "a refused spawn changes nothing");
    // Without a limit any number runs.
    new_sheep(&mut h, "d", None).unwrap();
    h.run(|tx| {
        begin_close(tx, &first);
        closed(tx, &first);
    });
    assert_eq!(h.herd.running_sheep(), 2);
    new_sheep(&mut h, "e", Some(3)).unwrap();
}

#[test]
fn a_turn_that_reaches_the_budget_blocks_the_task_and_names_it() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate_with(&a, "work", |d| {
        d.budget = Some(Budget {
            turns: Some(2),
            ..Budget::default()
        });
    });
    let turn = Usage {
        turns: 1,
        tool_calls: 1,
        tokens: 50,
        cost: 0.01,
    };
    assert_eq!(h.run(|tx| usage(tx, &a, turn)), None);
    assert_eq!(h.state(&t), TaskState::Running);
    let reached = h.run(|tx| usage(tx, &a, turn)).expect("the second turn");
    assert_eq!(reached.limit, crate::budget::Limit::Turns);
    assert_eq!(h.state(&t), TaskState::Blocked);
    let task = &h.herd.tasks[&t];
    assert_eq!(task.usage.turns, 2);
    let result = task.result.as_ref().unwrap();
    assert_eq!(result.return_code, 2);
    assert_eq!(
        result.error.as_deref(),
        Some("worker was stopped: budget reached: 2 of 2 turns used (budget turns = 2).")
    );
    // A turn after the task settled counts for nothing.
    assert_eq!(h.run(|tx| usage(tx, &a, turn)), None);
    assert_eq!(h.herd.tasks[&t].usage.turns, 2);
}

#[test]
fn a_delegated_budget_overrides_the_definitions_key_by_key_and_is_checked() {
    let mut h = Harness::new();
    let own = Budget {
        turns: Some(10),
        tokens: Some(100),
        ..Budget::default()
    };
    let a = admit_sheep(&mut h, "", None, Some(own)).unwrap();
    let t = h.delegate_with(&a, "work", |d| {
        d.budget = Some(Budget {
            turns: Some(3),
            ..Budget::default()
        });
    });
    let budget = h.herd.tasks[&t].budget.unwrap();
    assert_eq!((budget.turns, budget.tokens), (Some(3), Some(100)));
    h.done(&a, None, DoneStatus::Completed, "ok").unwrap();

    let input = DelegateInput {
        task_id: TaskId::mint("1a2b3c4d", "ffff00000001"),
        target: a.to_string(),
        description: "again".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: Some(Budget {
            cost: Some(-2.0),
            ..Budget::default()
        }),
        stall_after_ms: None,
    };
    let err = h.run(|tx| delegate(tx, input)).unwrap_err();
    assert_eq!(err.code, "invalid_budget");
}

#[test]
fn the_watchdog_nudges_a_silent_sheep_once_then_blocks_its_task() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "quiet");
    let t = h.delegate_with(&a, "work", |d| d.stall_after_ms = Some(MIN));
    assert_eq!(h.herd.next_deadline(&h.config), Some(h.now + MIN));
    h.tick(MIN - 1);
    assert!(h.herd.tasks[&t].stall.unwrap().nudged_at.is_none());
    h.tick(1);
    let reminder = h.envelopes(&sheep(&a)).pop().unwrap();
    assert_eq!(reminder.kind, crate::envelope::Kind::Reminder);
    assert!(
        reminder
            .content
            .as_deref()
            .unwrap()
            .starts_with("[Shepherd stall check]")
    );
    let notices: Vec<_> = h
        .inbox(&Participant::Parent)
        .into_iter()
        .filter(|p| matches!(p, Payload::Notice(n) if n.notice == NoticeKind::StallNudged))
        .collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(h.state(&t), TaskState::Running);
    h.tick(MIN);
    assert_eq!(h.state(&t), TaskState::Blocked);
    let error = h.herd.tasks[&t].result.as_ref().unwrap().error.clone();
    assert!(
        error
            .unwrap()
            .starts_with("Stall watchdog: worker: quiet showed no activity for 1 min, was nudged")
    );
}

/// The sheep's supervisor takes everything in its inbox, as it does on delivery.
fn take_all(h: &mut Harness, id: &AgentId) {
    let who = sheep(id);
    if let Some(seq) = h.herd.pending_items(&who).last().map(|i| i.seq) {
        h.run(|tx| ack(tx, &who, seq));
    }
}

#[test]
fn taking_the_stall_check_is_not_activity() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "quiet");
    let t = h.delegate_with(&a, "work", |d| d.stall_after_ms = Some(MIN));
    take_all(&mut h, &a);
    h.tick(MIN);
    assert!(h.herd.tasks[&t].stall.unwrap().nudged_at.is_some());
    // The stall check reaches the silent sheep a little later, and it says nothing.
    h.tick(MIN / 2);
    take_all(&mut h, &a);
    h.tick(MIN / 2);
    assert_eq!(h.state(&t), TaskState::Blocked);
}

#[test]
fn activity_defers_the_watchdog_and_without_it_a_quiet_task_stays_open() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "busy");
    let t = h.delegate_with(&a, "work", |d| d.stall_after_ms = Some(MIN));
    h.tick(MIN / 2);
    h.run(|tx| {
        report(tx, &a, RunReport::Started, 1);
    });
    h.tick(MIN / 2);
    assert!(
        h.herd.tasks[&t].stall.unwrap().nudged_at.is_none(),
        "active half a minute ago"
    );
    h.tick(MIN / 2);
    assert!(h.herd.tasks[&t].stall.unwrap().nudged_at.is_some());
    // Activity after the nudge puts the settlement off, but earns no second nudge.
    h.tick(MIN / 2);
    h.run(|tx| touch(tx, &a));
    h.tick(MIN / 2);
    assert_eq!(h.state(&t), TaskState::Running);
    h.tick(MIN / 2);
    assert_eq!(h.state(&t), TaskState::Blocked);

    let b = h.spawn("worker", "unwatched");
    let u = h.delegate(&b, "work");
    assert_eq!(h.herd.tasks[&u].stall, None);
    h.tick(19 * MIN);
    assert_eq!(
        h.state(&u),
        TaskState::Running,
        "no watchdog, no settlement"
    );
    assert!(
        !h.herd
            .tasks
            .values()
            .any(|t| t.id == u && t.result.is_some())
    );
}

#[test]
fn a_closed_sheep_reopens_under_its_name_and_its_next_task_continues_its_last_note() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "fix");
    let note = NoteLink {
        session: "0001-s".into(),
        session_name: "s".into(),
        session_path: "/p/.shepherd/sessions/0001-s".into(),
        session_relative: ".shepherd/sessions/0001-s".into(),
        note: "/p/.shepherd/sessions/0001-s/worker-01.md".into(),
        note_relative: ".shepherd/sessions/0001-s/worker-01.md".into(),
        resumed: false,
    };
    let t = TaskId::mint("1a2b3c4d", "ffff00000002");
    let input = DelegateInput {
        task_id: t.clone(),
        target: a.to_string(),
        description: "first".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    let with_note = Some(note.clone());
    h.run(|tx| {
        delegate(tx, input)?;
        let message = MessageId::mint("1a2b3c4d", "ffff00000003");
        start_task(tx, &t, with_note, message, "first".into())
    })
    .unwrap();
    h.done(&a, None, DoneStatus::Completed, "ok").unwrap();
    h.run(|tx| finalized(tx, &t));
    let reopen_input = |id: &AgentId| Reopen {
        agent_id: id.clone(),
        backend: crate::backend::BackendKind::Headless,
        token_digest: "d2".into(),
        supervisor_digest: None,
        request_id: Some("r1".into()),
        max_sheep: None,
    };
    let err = h.run(|tx| reopen(tx, reopen_input(&a))).unwrap_err();
    assert_eq!(err.code, "agent_running");
    h.run(|tx| {
        begin_close(tx, &a);
        closed(tx, &a);
    });
    // Another sheep took the display name meanwhile: the resume is refused.
    let other = h.spawn("worker", "fix");
    let err = h.run(|tx| reopen(tx, reopen_input(&a))).unwrap_err();
    assert_eq!(err.code, "duplicate_label");
    h.run(|tx| {
        begin_close(tx, &other);
        closed(tx, &other);
    });

    h.run(|tx| reopen(tx, reopen_input(&a))).unwrap();
    let reopened = &h.herd.sheep[&a];
    assert_eq!(reopened.phase, Phase::Starting);
    assert_eq!(reopened.resumes, 1);
    assert_eq!(reopened.token_digest, "d2");
    assert_eq!(h.herd.sheep_by_request("r1").unwrap().id, a);
    h.run(|tx| ready(tx, &a));
    let next = h.delegate(&a, "second");
    assert_eq!(h.herd.tasks[&next].continues.as_ref(), Some(&note));
    assert_eq!(h.herd.sheep[&a].continues, None, "only the first task");
}
