//! Deadlines, questions and replies between sheep and parent, relayed peer replies, and
//! `done` re-anchored to the right task.

use super::*;
use crate::task::{DoneStatus, TaskState};

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
fn a_steer_steers_a_pi_sheep_and_reaches_any_other_as_a_follow_up_saying_so() {
    use crate::envelope::Delivery;
    use crate::harness::{Harness as Agent, Runtime};
    let mut h = Harness::new();
    let pi = h.spawn_on("worker", "pi", Runtime::Agent(Agent::Pi));
    let codex = h.spawn_on("worker", "codex", Runtime::Agent(Agent::Codex));
    let shell = h.spawn_on("worker", "shell", Runtime::Command);
    let steer = |h: &mut Harness, to: &AgentId| {
        h.message(Participant::Parent, to.as_str(), "look here", |m| {
            m.delivery = Delivery::Steer;
        })
        .unwrap()
    };
    let steered = steer(&mut h, &pi);
    assert_eq!(steered.delivery, Delivery::Steer);
    assert_eq!(steered.delivery_changed, None);
    assert_eq!(h.envelopes(&sheep(&pi))[0].delivery, Delivery::Steer);

    let followed = steer(&mut h, &codex);
    assert_eq!(followed.delivery, Delivery::FollowUp);
    assert_eq!(
        followed.delivery_changed.as_deref(),
        Some(
            "worker: codex runs Codex, which cannot be steered mid-turn: the message is \
             delivered as a follow-up, once its current turn ends."
        )
    );
    assert_eq!(h.envelopes(&sheep(&codex))[0].delivery, Delivery::FollowUp);
    let waits = steer(&mut h, &shell);
    assert_eq!(waits.delivery, Delivery::FollowUp);
    assert!(
        waits.delivery_changed.as_deref().is_some_and(
            |why| why.starts_with("worker: shell is a command sheep, which cannot be steered")
        ),
        "{waits:?}"
    );
    // A follow-up asked for is one, and says nothing.
    let plain = h
        .message(Participant::Parent, shell.as_str(), "later", |_| {})
        .unwrap();
    assert_eq!(
        (plain.delivery, plain.delivery_changed),
        (Delivery::FollowUp, None)
    );
}
