//! State-machine tests: every rule of the herd, driven with a fixed clock, and a replay check
//! after each test that rebuilding the herd from its events gives the same state.

use super::*;
use crate::envelope::Delivery;
use crate::task::{DoneStatus, TaskState};

pub(super) const MIN: i64 = 60_000;

pub(super) struct Harness {
    pub(super) herd: Herd,
    log: Vec<Event>,
    pub(super) now: i64,
    counter: u64,
    pub(super) config: HerdConfig,
}

impl Harness {
    pub(super) fn new() -> Self {
        let herd = Herd {
            namespace: "1a2b3c4d".into(),
            ..Herd::default()
        };
        Self {
            herd,
            log: Vec::new(),
            now: 1_000_000,
            counter: 0,
            config: HerdConfig::default(),
        }
    }

    pub(super) fn unique(&mut self) -> String {
        self.counter += 1;
        format!("{:012x}", self.counter)
    }

    pub(super) fn run<T>(&mut self, f: impl FnOnce(&mut Tx<'_>) -> T) -> T {
        let mut tx = Tx::new(&mut self.herd, self.now);
        let out = f(&mut tx);
        let events = tx.finish();
        self.log.extend(events);
        out
    }

    pub(super) fn spawn(&mut self, agent: &str, label: &str) -> AgentId {
        let id = AgentId::mint("1a2b3c4d", &self.unique());
        let new = NewSheep {
            id: id.clone(),
            agent: agent.into(),
            label: crate::label::validate_label(label).unwrap(),
            backend: crate::backend::BackendKind::Headless,
            runtime: crate::harness::Runtime::Command,
            model: None,
            cwd: "/p".into(),
            token_digest: "d".into(),
            supervisor_digest: None,
            request_id: None,
            max_sheep: None,
            budget: None,
            recipe: serde_json::Value::Null,
            worktree: serde_json::Value::Null,
        };
        self.run(|tx| admit(tx, new)).unwrap();
        self.run(|tx| ready(tx, &id));
        id
    }

    pub(super) fn delegate(&mut self, agent: &AgentId, text: &str) -> TaskId {
        self.delegate_with(agent, text, |_| {})
    }

    pub(super) fn delegate_with(
        &mut self,
        agent: &AgentId,
        text: &str,
        edit: impl FnOnce(&mut DelegateInput),
    ) -> TaskId {
        let task_id = TaskId::mint("1a2b3c4d", &self.unique());
        let message_id = MessageId::mint("1a2b3c4d", &self.unique());
        let mut input = DelegateInput {
            task_id: task_id.clone(),
            target: agent.to_string(),
            description: text.into(),
            timeout_ms: 20 * MIN,
            turn: false,
            request_id: None,
            handover: None,
            budget: None,
            stall_after_ms: None,
        };
        edit(&mut input);
        self.run(|tx| {
            delegate(tx, input)?;
            start_task(tx, &task_id, None, message_id, text.into())
        })
        .unwrap();
        task_id
    }

    pub(super) fn message(
        &mut self,
        sender: Participant,
        target: &str,
        text: &str,
        edit: impl FnOnce(&mut MessageInput),
    ) -> Result<MessageOutcome, HerdError> {
        let mut input = MessageInput {
            message_id: MessageId::mint("1a2b3c4d", &self.unique()),
            sender,
            target: target.into(),
            content: text.into(),
            task_id: None,
            thread_id: None,
            reply_to: None,
            expects_reply: false,
            delivery: Delivery::FollowUp,
            reply_timeout_ms: 20 * MIN,
        };
        edit(&mut input);
        self.run(|tx| send(tx, input))
    }

    pub(super) fn done(
        &mut self,
        sender: &AgentId,
        task: Option<&str>,
        status: DoneStatus,
        summary: &str,
    ) -> Result<DoneOutcome, HerdError> {
        let input = DoneInput {
            sender: sender.clone(),
            task_id: task.map(str::to_owned),
            status,
            summary: Some(summary.into()),
        };
        self.run(|tx| done(tx, input))
    }

    pub(super) fn state(&self, task: &TaskId) -> TaskState {
        self.herd.tasks[task].state
    }

    pub(super) fn inbox(&self, who: &Participant) -> Vec<Payload> {
        self.herd
            .pending_items(who)
            .into_iter()
            .map(|i| i.payload)
            .collect()
    }

    pub(super) fn envelopes(&self, who: &Participant) -> Vec<crate::envelope::Envelope> {
        self.inbox(who)
            .into_iter()
            .filter_map(|p| match p {
                Payload::Envelope { envelope } => Some(envelope),
                _ => None,
            })
            .collect()
    }

    pub(super) fn tick(&mut self, advance: i64) {
        self.now += advance;
        let config = self.config;
        self.run(|tx| tick(tx, &config));
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let mut replayed = Herd {
            namespace: self.herd.namespace.clone(),
            ..Herd::default()
        };
        for event in &self.log {
            let json = serde_json::to_string(event).unwrap();
            replayed.apply(&serde_json::from_str(&json).unwrap());
        }
        assert_eq!(
            replayed, self.herd,
            "replaying the journal must rebuild the same herd"
        );
    }
}

pub(super) fn sheep(id: &AgentId) -> Participant {
    Participant::Sheep(id.clone())
}

#[test]
fn delegate_then_done_completes_with_summary() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "list the files");
    assert_eq!(h.state(&t), TaskState::Running);
    let task_env = &h.envelopes(&sheep(&a))[0];
    assert_eq!(task_env.kind, crate::envelope::Kind::Task);
    assert_eq!(task_env.task_id.as_ref(), Some(&t));
    let out = h
        .done(&a, Some(t.as_str()), DoneStatus::Completed, "three files")
        .unwrap();
    assert_eq!(
        out,
        DoneOutcome::Settled {
            task_id: t.clone(),
            corrected_from: None
        }
    );
    let report = h.herd.task_report(&t).unwrap();
    assert_eq!(
        (report.status, report.return_code, report.ok),
        (TaskState::Completed, Some(0), true)
    );
    assert_eq!(report.text.as_deref(), Some("three files"));
    assert!(h.herd.sheep[&a].active_task.is_none());
}

#[test]
fn settlement_is_idempotent_first_wins() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    h.done(&a, None, DoneStatus::Blocked, "stuck").unwrap();
    assert_eq!(
        h.done(&a, Some(t.as_str()), DoneStatus::Completed, "late")
            .unwrap(),
        DoneOutcome::Duplicate { task_id: t.clone() }
    );
    h.tick(30 * MIN);
    assert_eq!(h.state(&t), TaskState::Blocked);
    assert_eq!(h.herd.tasks[&t].result.as_ref().unwrap().return_code, 2);
}

#[test]
fn one_active_task_per_sheep_and_text_limits() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    h.delegate(&a, "first");
    let input = DelegateInput {
        task_id: TaskId::mint("1a2b3c4d", "ff00ff00"),
        target: a.to_string(),
        description: "second".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    assert_eq!(
        h.run(|tx| delegate(tx, input)).unwrap_err().code,
        "active_task"
    );
    let b = h.spawn("worker", "b");
    let empty = DelegateInput {
        task_id: TaskId::mint("1a2b3c4d", "ff00ff01"),
        target: b.to_string(),
        description: "  ".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    assert_eq!(
        h.run(|tx| delegate(tx, empty)).unwrap_err().code,
        "invalid_task"
    );
    let big = DelegateInput {
        task_id: TaskId::mint("1a2b3c4d", "ff00ff02"),
        target: b.to_string(),
        description: "x".repeat(100_001),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    assert_eq!(h.run(|tx| delegate(tx, big)).unwrap_err().code, "too_large");
    let foreign = DelegateInput {
        task_id: TaskId::mint("1a2b3c4d", "ff00ff03"),
        target: "worker".into(),
        description: "y".into(),
        timeout_ms: MIN,
        turn: false,
        request_id: None,
        handover: None,
        budget: None,
        stall_after_ms: None,
    };
    assert_eq!(
        h.run(|tx| delegate(tx, foreign)).unwrap_err().code,
        "invalid_target"
    );
}

#[test]
fn task_deadline_times_out_with_124() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "slow");
    assert_eq!(h.herd.next_deadline(&h.config), Some(h.now + 20 * MIN));
    h.tick(20 * MIN - 1);
    assert_eq!(h.state(&t), TaskState::Running);
    h.tick(1);
    assert_eq!(h.state(&t), TaskState::TimedOut);
    assert_eq!(h.herd.tasks[&t].result.as_ref().unwrap().return_code, 124);
}

#[test]
fn parent_question_waits_and_reply_resumes() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    let q = h
        .message(Participant::Parent, a.as_str(), "status?", |m| {
            m.expects_reply = true;
            m.task_id = Some(t.to_string());
        })
        .unwrap();
    assert_eq!(q.task_state, Some(TaskState::Waiting));
    assert_eq!(q.request_id.as_ref(), Some(&q.message_id));
    let second = h.message(Participant::Parent, a.as_str(), "again?", |m| {
        m.expects_reply = true;
        m.task_id = Some(t.to_string());
    });
    assert_eq!(second.unwrap_err().code, "request_open");
    assert_eq!(
        h.done(&a, None, DoneStatus::Completed, "done")
            .unwrap_err()
            .code,
        "pending_request"
    );
    assert_eq!(h.state(&t), TaskState::Waiting);
    let r = h
        .message(sheep(&a), "shepherd", "fine", |m| {
            m.reply_to = Some(q.message_id.to_string());
        })
        .unwrap();
    assert_eq!(r.resolved.as_ref(), Some(&q.message_id));
    assert_eq!(r.task_id.as_ref(), Some(&t));
    assert_eq!(h.state(&t), TaskState::Running);
    assert!(h.herd.requests.is_empty());
}

#[test]
fn reply_deadline_blocks_with_2() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    h.message(sheep(&a), "shepherd", "may I?", |m| {
        m.expects_reply = true;
        m.reply_timeout_ms = 5 * MIN;
    })
    .unwrap();
    assert_eq!(h.state(&t), TaskState::Waiting);
    h.tick(5 * MIN);
    assert_eq!(h.state(&t), TaskState::Blocked);
    let error = h.herd.tasks[&t]
        .result
        .as_ref()
        .unwrap()
        .error
        .clone()
        .unwrap();
    assert!(
        error.contains("Timed out waiting for a reply from shepherd"),
        "{error}"
    );
}

#[test]
fn peer_reply_via_parent_is_relayed_with_origin() {
    let mut h = Harness::new();
    let planner = h.spawn("planner", "");
    let worker = h.spawn("worker", "");
    let tp = h.delegate(&planner, "answer one question");
    let tw = h.delegate(&worker, "ask the planner");
    let ask = h
        .message(
            sheep(&worker),
            planner.as_str(),
            "Reply with exactly pong",
            |m| m.expects_reply = true,
        )
        .unwrap();
    assert_eq!(h.state(&tw), TaskState::Waiting);
    assert_eq!(h.state(&tp), TaskState::Running);
    // The planner answers the parent instead of the worker: resolved, and relayed to the worker.
    h.message(sheep(&planner), "shepherd", "pong", |m| {
        m.reply_to = Some(ask.message_id.to_string());
    })
    .unwrap();
    assert_eq!(h.state(&tw), TaskState::Running);
    let relayed: Vec<_> = h
        .envelopes(&sheep(&worker))
        .into_iter()
        .filter(|e| e.kind == crate::envelope::Kind::Reply)
        .collect();
    assert_eq!(relayed.len(), 1);
    assert_eq!(relayed[0].origin_sender_id, Some(sheep(&planner)));
    assert_eq!(relayed[0].author(), &sheep(&planner));
    assert_eq!(h.envelopes(&Participant::Parent).len(), 1);
    // A direct peer reply goes only to the asker.
    let ask2 = h
        .message(sheep(&worker), planner.as_str(), "again", |m| {
            m.expects_reply = true;
        })
        .unwrap();
    h.message(sheep(&planner), worker.as_str(), "pong2", |m| {
        m.reply_to = Some(ask2.message_id.to_string());
    })
    .unwrap();
    assert_eq!(h.state(&tw), TaskState::Running);
    assert_eq!(h.envelopes(&Parent()).len(), 1);
}

#[allow(non_snake_case)]
fn Parent() -> Participant {
    Participant::Parent
}

#[test]
fn reply_task_mismatch_is_refused_and_changes_nothing() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let b = h.spawn("worker", "b");
    let ta = h.delegate(&a, "x");
    let tb = h.delegate(&b, "y");
    let q = h
        .message(Parent(), a.as_str(), "q", |m| {
            m.expects_reply = true;
            m.task_id = Some(ta.to_string());
        })
        .unwrap();
    let before = h.herd.clone();
    let err = h
        .message(sheep(&a), "shepherd", "a", |m| {
            m.reply_to = Some(q.message_id.to_string());
            m.task_id = Some(tb.to_string());
        })
        .unwrap_err();
    assert_eq!(err.code, "reply_task_mismatch");
    assert_eq!(h.herd, before);
}

#[test]
fn done_is_reanchored_or_dropped_observably() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    let out = h
        .done(
            &a,
            Some("shepherd-task-1a2b3c4d-deadbeef"),
            DoneStatus::Completed,
            "ok",
        )
        .unwrap();
    assert_eq!(
        out,
        DoneOutcome::Settled {
            task_id: t.clone(),
            corrected_from: Some("shepherd-task-1a2b3c4d-deadbeef".into())
        }
    );
    assert!(
        h.inbox(&Parent())
            .iter()
            .any(|p| matches!(p, Payload::Notice(n) if n.notice == NoticeKind::TaskDoneMismatch))
    );
    assert_eq!(
        h.done(&a, None, DoneStatus::Completed, "again").unwrap(),
        DoneOutcome::Dropped
    );
    assert!(
        h.inbox(&Parent())
            .iter()
            .any(|p| matches!(p, Payload::Notice(n) if n.notice == NoticeKind::TaskDoneDropped))
    );
}

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

#[test]
fn duplicate_display_names_refused_empty_labels_repeat() {
    let mut h = Harness::new();
    h.spawn("reviewer", "code review");
    h.spawn("reviewer", "");
    h.spawn("reviewer", "");
    h.spawn("scout", "code review");
    let dup = NewSheep {
        id: AgentId::mint("1a2b3c4d", "abcdef0123"),
        agent: "reviewer".into(),
        label: crate::label::validate_label("code review").unwrap(),
        backend: crate::backend::BackendKind::Headless,
        runtime: crate::harness::Runtime::Command,
        model: None,
        cwd: "/".into(),
        token_digest: "d".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep: None,
        budget: None,
        recipe: serde_json::Value::Null,
        worktree: serde_json::Value::Null,
    };
    let err = h.run(|tx| admit(tx, dup)).unwrap_err();
    assert_eq!(err.code, "duplicate_label");
    assert_eq!(
        err.message,
        "Duplicate agent label \"reviewer: code review\"."
    );
}

#[test]
fn late_messages_after_settlement_are_delivered_without_change() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = h.delegate(&a, "x");
    h.done(&a, None, DoneStatus::Completed, "ok").unwrap();
    let before = h.herd.tasks[&t].clone();
    let out = h
        .message(sheep(&a), "shepherd", "one more thing", |m| {
            m.task_id = Some(t.to_string());
        })
        .unwrap();
    assert_eq!(out.task_state, Some(TaskState::Completed));
    assert_eq!(h.herd.tasks[&t], before);
    assert_eq!(h.envelopes(&Parent()).len(), 1);
}

#[test]
fn acknowledged_items_leave_the_inbox() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    h.delegate(&a, "x");
    h.message(Parent(), a.as_str(), "m2", |_| {}).unwrap();
    let items = h.herd.pending_items(&sheep(&a));
    assert_eq!(items.len(), 2);
    let first = items[0].seq;
    h.run(|tx| ack(tx, &sheep(&a), first));
    assert_eq!(h.herd.pending_items(&sheep(&a)).len(), 1);
}

#[test]
fn a_one_turn_task_settles_with_the_runs_final_text() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "");
    let t = TaskId::mint("1a2b3c4d", "7e7e7e7e");
    let input = DelegateInput {
        task_id: t.clone(),
        target: a.to_string(),
        description: "one turn".into(),
        timeout_ms: MIN,
        turn: true,
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
            None,
            MessageId::mint("1a2b3c4d", "7e7e7e7f"),
            "one turn".into(),
        )
        .unwrap();
    });
    let settled = RunReport::Settled {
        stop_reason: Some("stop".into()),
        error: None,
        text: Some("the answer".into()),
    };
    h.run(|tx| report(tx, &a, settled, 1));
    assert_eq!(h.state(&t), TaskState::Completed);
    assert_eq!(
        h.herd.task_report(&t).unwrap().text.as_deref(),
        Some("the answer")
    );
    assert!(
        h.envelopes(&sheep(&a))
            .iter()
            .all(|e| e.kind != crate::envelope::Kind::Reminder),
        "no nudge for a turn task"
    );
}

#[test]
fn short_names_resolve_to_one_sheep_or_task_or_list_the_candidates() {
    let mut h = Harness::new();
    // Ids end in the counter: 000000000001, 000000000002, …
    let review = h.spawn("worker", "review");
    let docs = h.spawn("worker", "docs");
    let scout = h.spawn("scout", "review");
    let one = |r: Result<Resolved<AgentId>, HerdError>| match r {
        Ok(Resolved::One(id)) => id,
        other => panic!("expected one sheep, got {other:?}"),
    };
    assert_eq!(one(h.herd.resolve_sheep(review.as_str())), review);
    assert_eq!(one(h.herd.resolve_sheep("worker: docs")), docs);
    assert_eq!(one(h.herd.resolve_sheep("docs")), docs, "a unique label");
    assert_eq!(
        one(h.herd.resolve_sheep("000000000003")),
        scout,
        "the random part"
    );
    let whole_prefix = &scout.as_str()[..scout.as_str().len() - 1];
    assert_eq!(
        h.herd.resolve_sheep(whole_prefix).unwrap_err().code,
        "ambiguous_id",
        "a prefix of the whole id counts too"
    );
    let err = h.herd.resolve_sheep("review").unwrap_err();
    assert_eq!(err.code, "ambiguous_id");
    assert!(
        err.message.contains("worker: review") && err.message.contains("scout: review"),
        "{}",
        err.message
    );
    let err = h.herd.resolve_sheep("0000").unwrap_err();
    assert_eq!(err.code, "ambiguous_id");
    assert!(err.message.contains("3 sheep"), "{}", err.message);
    assert_eq!(h.herd.resolve_sheep("nobody").unwrap(), Resolved::NoMatch);
    assert_eq!(h.herd.resolve_sheep("").unwrap(), Resolved::NoMatch);

    let first = h.delegate(&review, "one");
    let second = h.delegate(&docs, "two");
    let unique = |id: &TaskId| id.as_str().rsplit('-').next().unwrap().to_owned();
    assert_eq!(
        h.herd.resolve_task(&unique(&first)).unwrap(),
        Resolved::One(first.clone())
    );
    assert_eq!(
        h.herd.resolve_task(second.as_str()).unwrap(),
        Resolved::One(second.clone())
    );
    let err = h.herd.resolve_task("0").unwrap_err();
    assert_eq!(err.code, "ambiguous_id");
    assert!(err.message.contains("(worker: review)"), "{}", err.message);
    assert_eq!(h.herd.resolve_task("ffff").unwrap(), Resolved::NoMatch);
}

mod view;
