//! The needs read off a herd: each moment once, under a key that stays the same while it lasts
//! and is new for the next episode.

use super::*;
use crate::herd::tests::{Harness, MIN, sheep};
use crate::task::DoneStatus;

fn kinds(h: &Harness) -> Vec<(NeedKind, String)> {
    needs(&h.herd, h.now)
        .into_iter()
        .map(|n| (n.kind, n.key))
        .collect()
}

#[test]
fn a_question_to_the_parent_needs_the_person_until_it_is_answered() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "api");
    let t = h.delegate(&a, "build it");
    assert!(
        needs(&h.herd, h.now).is_empty(),
        "a working sheep needs nobody"
    );
    let asked = h
        .message(sheep(&a), "shepherd", "Which database?", |m| {
            m.expects_reply = true;
        })
        .unwrap();
    let found = needs(&h.herd, h.now);
    assert_eq!(found.len(), 1, "{found:?}");
    let need = &found[0];
    assert_eq!(need.kind, NeedKind::Question);
    assert_eq!(need.key, format!("question:{}", asked.message_id));
    assert_eq!(need.subject, "worker: api");
    assert_eq!(need.headline, "worker: api asks you a question");
    assert_eq!(need.words.as_deref(), Some("Which database?"));
    assert_eq!(need.page, format!("/sheep/{a}"));
    assert_eq!(
        needs(&h.herd, h.now + MIN),
        found,
        "the same episode, the same key"
    );

    h.message(Participant::Parent, a.as_str(), "Postgres.", |m| {
        m.reply_to = Some(asked.message_id.to_string());
        m.task_id = Some(t.to_string());
    })
    .unwrap();
    assert!(needs(&h.herd, h.now).is_empty(), "answered");
}

#[test]
fn a_question_to_a_herd_mate_is_not_the_persons() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "one");
    let b = h.spawn("planner", "two");
    h.delegate(&a, "x");
    h.delegate(&b, "y");
    h.message(sheep(&a), b.as_str(), "pong?", |m| m.expects_reply = true)
        .unwrap();
    assert!(needs(&h.herd, h.now).is_empty());
}

#[test]
fn blocked_and_failed_tasks_need_the_person_and_a_completed_one_does_not() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let b = h.spawn("worker", "b");
    let c = h.spawn("worker", "c");
    let ta = h.delegate(&a, "x");
    let tb = h.delegate(&b, "y");
    h.delegate(&c, "z");
    h.done(&a, None, DoneStatus::Blocked, "no credentials")
        .unwrap();
    h.done(&b, None, DoneStatus::Failed, "tests fail").unwrap();
    h.done(&c, None, DoneStatus::Completed, "ok").unwrap();
    let found = needs(&h.herd, h.now);
    assert_eq!(
        found
            .iter()
            .map(|n| (n.kind, n.key.clone(), n.headline.clone()))
            .collect::<Vec<_>>(),
        vec![
            (
                NeedKind::Blocked,
                format!("settled:{ta}"),
                "worker: a is blocked".to_owned()
            ),
            (
                NeedKind::Failed,
                format!("settled:{tb}"),
                "worker: b failed its task".to_owned()
            ),
        ]
    );
}

#[test]
fn a_stall_is_one_episode_per_nudge() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "quiet");
    let t = h.delegate_with(&a, "work", |d| d.stall_after_ms = Some(MIN));
    h.tick(MIN - 1);
    assert!(kinds(&h).is_empty());
    h.tick(1);
    let nudged = h.herd.tasks[&t].stall.unwrap().nudged_at.unwrap();
    assert_eq!(
        kinds(&h),
        vec![(NeedKind::Stalled, format!("stall:{t}:{nudged}"))]
    );
    h.tick(MIN);
    assert_eq!(
        kinds(&h),
        vec![(NeedKind::Blocked, format!("settled:{t}"))],
        "the stall became a blocked task: a new episode"
    );
}

#[test]
fn minutes_round_up_and_hours_read_as_hours() {
    assert_eq!(minutes(1), "1 min");
    assert_eq!(minutes(5 * MIN), "5 min");
    assert_eq!(minutes(125 * MIN), "2 h 5 min");
}
