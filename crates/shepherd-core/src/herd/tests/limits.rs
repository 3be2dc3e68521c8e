//! Provider limits: a limited task waits instead of failing, its key holds every sheep on it
//! until the reset (the release itself is tested in `release`), fallbacks, limits an agent rode
//! out itself, and the provider named in every mode.

use super::*;
use crate::herd::limits::LimitWaits;
use crate::limit::{ErrorClass, LimitSignal, ProviderKey};

mod release;

fn key(name: &str) -> ProviderKey {
    ProviderKey::new(name, Some("http://127.0.0.1:1"), Some(("KEY", name)))
}

fn spawn_on(h: &mut Harness, label: &str, key: &ProviderKey, cap: Option<u32>) -> AgentId {
    let id = AgentId::mint("1a2b3c4d", &h.unique());
    let new = NewSheep {
        id: id.clone(),
        agent: "worker".into(),
        label: crate::label::validate_label(label).unwrap(),
        role: None,
        backend: crate::backend::BackendKind::Headless,
        runtime: crate::harness::Runtime::Agent(crate::harness::Harness::ClaudeCode),
        model: None,
        cwd: "/p".into(),
        token_digest: "d".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep: None,
        budget: None,
        recipe: None,
        worktree: None,
        provider_key: Some(key.clone()),
        provider: None,
        turn_cap: cap,
    };
    h.run(|tx| admit(tx, new)).unwrap();
    h.run(|tx| ready(tx, &id));
    id
}

/// The sheep takes everything in its inbox (as its extension or driver does).
fn take(h: &mut Harness, id: &AgentId) -> Vec<crate::envelope::Envelope> {
    let who = sheep(id);
    let items = h.herd.pending_items(&who);
    if let Some(last) = items.last() {
        let seq = last.seq;
        h.run(|tx| {
            delivered(tx, &who, seq);
            crate::herd::limits::granted(tx, id);
            ack(tx, &who, seq);
        });
    }
    items
        .into_iter()
        .filter_map(|i| match i.payload {
            Payload::Envelope { envelope } => Some(envelope),
            _ => None,
        })
        .collect()
}

fn started(h: &mut Harness, id: &AgentId) {
    h.run(|tx| report(tx, id, RunReport::Started, 1));
}

fn limited_run(h: &mut Harness, id: &AgentId, class: ErrorClass, reset_at: Option<i64>) {
    let settled = RunReport::Settled {
        stop_reason: Some("error".into()),
        error: Some("429 rate_limit_error".into()),
        text: None,
        limit: Some(LimitSignal {
            class,
            reset_at,
            message: "429 rate_limit_error".into(),
        }),
    };
    let waits = LimitWaits {
        limit_ms: 10_000,
        ..LimitWaits::default()
    };
    h.run(|tx| report_with(tx, id, settled, 1, &waits));
}

fn notices(h: &Harness) -> Vec<Notice> {
    h.inbox(&Participant::Parent)
        .into_iter()
        .filter_map(|p| match p {
            Payload::Notice(n) if n.notice == NoticeKind::RateLimited => Some(n),
            _ => None,
        })
        .collect()
}

#[test]
fn a_limited_task_waits_and_its_sheep_is_told_to_continue_at_the_reset() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "write the thing");
    assert_eq!(take(&mut h, &a).len(), 1);
    started(&mut h, &a);
    let reset = h.now + 3_000;
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(reset));
    assert_eq!(
        h.state(&t),
        TaskState::Running,
        "a limit does not fail the task"
    );
    assert_eq!(notices(&h).len(), 1);
    let view = h.herd.status_of(&h.herd.sheep[&a], h.now);
    let limit = view.task.unwrap().rate_limit.unwrap();
    assert_eq!((limit.provider.as_str(), limit.until), ("anthropic", reset));
    assert_eq!(h.herd.next_deadline(&h.config), Some(reset));
    // A second limit reply in the same episode tells the parent nothing new.
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(reset));
    assert_eq!(notices(&h).len(), 1);
    h.message(Parent(), a.as_str(), "any news?", |_| {})
        .unwrap();
    assert!(
        take(&mut h, &a).is_empty(),
        "a held sheep is handed nothing"
    );
    h.tick(2_999);
    assert!(take(&mut h, &a).is_empty());
    h.tick(1);
    let handed = take(&mut h, &a);
    assert_eq!(handed.len(), 2, "{handed:?}");
    let resume = handed.last().unwrap();
    assert_eq!(resume.kind, crate::envelope::Kind::Reminder);
    assert!(resume.content.as_deref().unwrap().contains("Continue task"));
    let task = &h.herd.tasks[&t];
    assert!(task.limit.is_none());
    assert_eq!(task.limit_episodes.len(), 1);
    assert_eq!(task.limit_episodes[0].waited_ms, 3_000);
    assert_eq!(task.limit_episodes[0].replies, 2);
    h.done(&a, None, DoneStatus::Completed, "done").unwrap();
    assert_eq!(h.state(&t), TaskState::Completed);
    assert!(
        !h.herd.limiters.is_empty(),
        "the key opens once its sheep showed a response"
    );
    let settled = RunReport::Settled {
        stop_reason: Some("stop".into()),
        error: None,
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, &a, settled, 1));
    assert!(h.herd.limiters.is_empty(), "the key is open again");
}

#[test]
fn a_fatal_error_fails_at_once_and_a_timeout_says_it_was_rate_limited() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "one");
    take(&mut h, &a);
    let settled = RunReport::Settled {
        stop_reason: Some("error".into()),
        error: Some("401 invalid x-api-key".into()),
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, &a, settled, 1));
    assert_eq!(h.state(&t), TaskState::Failed);
    assert!(
        h.herd.tasks[&t]
            .result
            .as_ref()
            .unwrap()
            .error
            .as_deref()
            .unwrap()
            .contains("invalid x-api-key")
    );

    let b = spawn_on(&mut h, "b", &k, None);
    let t = h.delegate_with(&b, "two", |input| input.timeout_ms = 2_000);
    take(&mut h, &b);
    let at = h.now + 60_000;
    limited_run(&mut h, &b, ErrorClass::UsageLimit, Some(at));
    h.tick(2_000);
    assert_eq!(h.state(&t), TaskState::TimedOut);
    let error = h.herd.tasks[&t].result.clone().unwrap().error.unwrap();
    assert!(error.contains("while rate-limited"), "{error}");
    assert_eq!(h.herd.tasks[&t].limit_episodes[0].ended, "timed_out");
}

#[test]
fn server_errors_wait_for_the_sheep_alone_doubling_and_never_fail_the_task() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let b = spawn_on(&mut h, "b", &k, None);
    let t = h.delegate(&a, "one");
    take(&mut h, &a);
    let waits = LimitWaits {
        limit_ms: 10_000,
        ..LimitWaits::default()
    };
    for (n, wait) in [5_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000]
        .into_iter()
        .enumerate()
    {
        limited_run(&mut h, &a, ErrorClass::Transient, None);
        assert_eq!(h.state(&t), TaskState::Running, "try {n}");
        assert!(h.herd.limiters.is_empty(), "a server error holds no key");
        if n == 0 {
            h.delegate(&b, "meanwhile");
            assert_eq!(
                take(&mut h, &b).len(),
                1,
                "its herd-mate on the key is not held"
            );
        }
        assert_eq!(h.herd.tasks[&t].limit.as_ref().unwrap().until, h.now + wait);
        h.tick(wait - 1);
        assert!(take(&mut h, &a).is_empty(), "try {n} waits");
        h.tick(1);
        assert_eq!(take(&mut h, &a).len(), 1, "try {n}");
    }
    assert_eq!(waits.guess(waits.transient_ms, 3), 10_000);
    assert_eq!(h.herd.tasks[&t].limit_episodes.len(), 7);
}

#[test]
fn a_turn_cap_holds_the_sheep_past_it_until_a_turn_ends() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let ids: Vec<AgentId> = (0..3)
        .map(|n| spawn_on(&mut h, &format!("s{n}"), &k, Some(2)))
        .collect();
    for id in &ids {
        h.delegate(id, "work");
    }
    assert_eq!(take(&mut h, &ids[0]).len(), 1);
    assert_eq!(take(&mut h, &ids[1]).len(), 1);
    assert!(
        take(&mut h, &ids[2]).is_empty(),
        "two turns in flight already"
    );
    started(&mut h, &ids[0]);
    assert!(take(&mut h, &ids[2]).is_empty());
    h.done(&ids[0], None, DoneStatus::Completed, "ok").unwrap();
    let settled = RunReport::Settled {
        stop_reason: Some("stop".into()),
        error: None,
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, &ids[0], settled, 1));
    assert_eq!(take(&mut h, &ids[2]).len(), 1);
}

#[test]
fn a_limit_is_described_with_its_reset_in_local_time_and_its_provider() {
    use crate::herd::limits::{LimitView, local_clock};
    let limit = |class, queued| LimitView {
        class,
        provider: "anthropic".into(),
        since: 1_000,
        until: 61_000,
        queued,
        guessed: false,
    };
    assert_eq!(
        limit(ErrorClass::RateLimit, false).describe(),
        format!("rate-limited until {} (anthropic)", local_clock(61_000))
    );
    let guessed = LimitView {
        guessed: true,
        ..limit(ErrorClass::RateLimit, false)
    };
    assert_eq!(
        guessed.describe(),
        format!(
            "rate-limited, next try at {} (anthropic)",
            local_clock(61_000)
        )
    );
    assert_eq!(
        limit(ErrorClass::UsageLimit, true).describe(),
        "rate-limited, resuming in turn (anthropic)"
    );
    assert_eq!(
        limit(ErrorClass::Transient, false).describe(),
        format!(
            "server error, retrying at {} (anthropic)",
            local_clock(61_000)
        )
    );
}

#[test]
fn a_limited_run_reported_again_as_stopped_earns_no_reminder() {
    let mut h = Harness::new();
    let k = key("openai");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "write the thing");
    assert_eq!(take(&mut h, &a).len(), 1);
    started(&mut h, &a);
    let reset = h.now + 3_000;
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(reset));
    let again = RunReport::Settled {
        stop_reason: Some("stop".into()),
        error: None,
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, &a, again, 1));
    assert!(take(&mut h, &a).is_empty(), "no completion reminder");
    assert!(h.herd.tasks[&t].limit.is_some(), "the task still waits");
    assert!(!h.herd.limiters.is_empty(), "the key stays held");
}

#[test]
fn a_lasting_limit_hands_the_task_to_a_fresh_sheep_that_starts_it_again() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "write the thing");
    take(&mut h, &a);
    started(&mut h, &a);
    let reset = h.now + 3 * 60 * MIN;
    limited_run(&mut h, &a, ErrorClass::UsageLimit, Some(reset));
    assert_eq!(
        h.herd.fallback_due(&a, 15 * MIN, h.now),
        Some(fallback::FallbackDue::Now(t.clone())),
        "a usage limit three hours away is past fifteen minutes"
    );
    assert_eq!(
        h.herd.fallback_due(&a, 4 * 60 * MIN, h.now),
        Some(fallback::FallbackDue::At(t.clone(), h.now + 4 * 60 * MIN)),
        "a limit that resets in three hours falls back after four of waiting only"
    );
    let b = spawn_on(&mut h, "b", &key("openai"), None);
    // A sheep that already has a task cannot take one over.
    let busy = spawn_on(&mut h, "busy", &key("openai"), None);
    h.delegate(&busy, "other work");
    assert!(!h.run(|tx| fallback::fall_back(tx, &t, &a, &busy)));
    assert!(h.run(|tx| fallback::fall_back(tx, &t, &a, &b)));
    let task = &h.herd.tasks[&t];
    assert_eq!((&task.agent_id, task.state), (&b, TaskState::Created));
    assert!(task.limit.is_none() && task.limit_episodes.is_empty());
    let first = task
        .fell_back_from
        .as_ref()
        .expect("the first sheep is kept");
    assert_eq!((&first.agent_id, first.until), (&a, reset));
    assert_eq!(first.episodes.len(), 1);
    assert!(first.episodes[0].ended.starts_with("fell back to "));
    assert_eq!(h.herd.sheep[&a].active_task, None);
    assert_eq!(h.herd.sheep[&b].active_task, Some(t.clone()));
    assert!(
        h.herd.limiters[&k].held.is_empty(),
        "the first sheep no longer waits on its key for anything"
    );
    let fell_back: Vec<_> = h
        .inbox(&Participant::Parent)
        .into_iter()
        .filter_map(|p| match p {
            Payload::Notice(n) if n.notice == NoticeKind::FellBack => Some(n.text),
            _ => None,
        })
        .collect();
    assert_eq!(fell_back.len(), 1, "{fell_back:?}");
    assert!(fell_back[0].contains(t.as_str()), "{}", fell_back[0]);
    // Handing it over a second time changes nothing.
    assert!(!h.run(|tx| fallback::fall_back(tx, &t, &a, &b)));
    // The task starts on the new sheep and settles there.
    let message_id = MessageId::mint("1a2b3c4d", &h.unique());
    h.run(|tx| start_task(tx, &t, None, message_id, "write the thing".into()))
        .unwrap();
    assert_eq!(take(&mut h, &b).len(), 1);
    assert_eq!(h.state(&t), TaskState::Running);
}

#[test]
fn a_limit_the_agent_rode_out_is_an_episode_of_its_task_and_holds_nothing() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "one");
    take(&mut h, &a);
    started(&mut h, &a);
    let ridden = crate::herd::limits::RiddenOut {
        class: ErrorClass::RateLimit,
        since: h.now,
        waited_ms: 4_000,
        replies: 2,
    };
    h.run(|tx| crate::herd::limits::ridden_out(tx, &a, &ridden));
    let episodes = &h.herd.tasks[&t].limit_episodes;
    assert_eq!(episodes.len(), 1);
    assert_eq!(
        (
            episodes[0].ended.as_str(),
            episodes[0].replies,
            episodes[0].waited_ms
        ),
        (crate::herd::limits::RIDDEN_OUT, 2, 4_000)
    );
    assert_eq!(episodes[0].provider, "anthropic");
    assert!(h.herd.limiters.is_empty() && h.herd.tasks[&t].limit.is_none());
}

#[test]
fn the_provider_is_named_without_holding_keys() {
    let mut h = Harness::new();
    let id = AgentId::mint("1a2b3c4d", &h.unique());
    let new = NewSheep {
        id: id.clone(),
        agent: "worker".into(),
        label: crate::label::validate_label("alone").unwrap(),
        role: None,
        backend: crate::backend::BackendKind::Headless,
        runtime: crate::harness::Runtime::Agent(crate::harness::Harness::ClaudeCode),
        model: None,
        cwd: "/p".into(),
        token_digest: "d".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep: None,
        budget: None,
        recipe: None,
        worktree: None,
        // holdProviderKeys false: no key, but the provider is still known.
        provider_key: None,
        provider: Some("anthropic, account WORK_KEY".into()),
        turn_cap: None,
    };
    h.run(|tx| admit(tx, new)).unwrap();
    h.run(|tx| ready(tx, &id));
    let t = h.delegate(&id, "one");
    take(&mut h, &id);
    limited_run(&mut h, &id, ErrorClass::RateLimit, None);
    let view = h.herd.limit_view(&t).unwrap();
    assert_eq!(view.provider, "anthropic, account WORK_KEY");
    assert!(view.guessed);
    assert!(h.herd.limiters.is_empty(), "nothing held");
    assert!(
        notices(&h)[0]
            .text
            .contains("from anthropic, account WORK_KEY"),
        "{}",
        notices(&h)[0].text
    );
}

#[test]
fn a_limit_whose_reset_is_a_guess_falls_back_on_the_time_spent_waiting() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let t = h.delegate(&a, "write the thing");
    take(&mut h, &a);
    started(&mut h, &a);
    // Claude Code names no reset: each wait is a guess of seconds, never past the setting.
    limited_run(&mut h, &a, ErrorClass::RateLimit, None);
    let since = h.now;
    assert_eq!(
        h.herd.fallback_due(&a, MIN, h.now),
        Some(fallback::FallbackDue::At(t.clone(), since + MIN))
    );
    // Probed and refused again and again for a minute: the waiting counts.
    while h.now < since + MIN {
        let until = h.herd.limiters[&k].until;
        h.tick(until - h.now);
        take(&mut h, &a);
        limited_run(&mut h, &a, ErrorClass::RateLimit, None);
    }
    assert_eq!(
        h.herd.fallback_due(&a, MIN, h.now),
        Some(fallback::FallbackDue::Now(t.clone()))
    );
}
