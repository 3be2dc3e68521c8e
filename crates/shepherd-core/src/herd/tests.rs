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
        self.spawn_on(agent, label, crate::harness::Runtime::Command)
    }

    /// A sheep whose program is `runtime`.
    pub(super) fn spawn_on(
        &mut self,
        agent: &str,
        label: &str,
        runtime: crate::harness::Runtime,
    ) -> AgentId {
        let id = AgentId::mint("1a2b3c4d", &self.unique());
        let new = NewSheep {
            id: id.clone(),
            agent: agent.into(),
            label: crate::label::validate_label(label).unwrap(),
            role: None,
            backend: crate::backend::BackendKind::Headless,
            runtime,
            model: None,
            cwd: "/p".into(),
            token_digest: "d".into(),
            supervisor_digest: None,
            request_id: None,
            max_sheep: None,
            budget: None,
            recipe: None,
            worktree: None,
            provider_key: None,
            provider: None,
            turn_cap: None,
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

#[allow(non_snake_case)]
fn Parent() -> Participant {
    Participant::Parent
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
        role: None,
        backend: crate::backend::BackendKind::Headless,
        runtime: crate::harness::Runtime::Command,
        model: None,
        cwd: "/".into(),
        token_digest: "d".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep: None,
        budget: None,
        recipe: None,
        worktree: None,
        provider_key: None,
        provider: None,
        turn_cap: None,
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
        limit: None,
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

mod limits;
mod messages;
mod view;
mod watching;
