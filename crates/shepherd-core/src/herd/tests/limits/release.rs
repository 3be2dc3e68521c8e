//! The release of a held key, tested through the herd: the key's sheep wait together, one
//! probes at the reset, nobody else goes while it is refused, and the rest come back in rounds
//! that double while they answer and halve on a refusal, never past the turn cap.

use super::*;

#[test]
fn the_herd_on_one_key_waits_together_and_the_probe_goes_alone() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let other = key("openai");
    let a = spawn_on(&mut h, "a", &k, None);
    let b = spawn_on(&mut h, "b", &k, None);
    let c = spawn_on(&mut h, "c", &k, None);
    let o = spawn_on(&mut h, "o", &other, None);
    let ta = h.delegate(&a, "one");
    take(&mut h, &a);
    started(&mut h, &a);
    let tb = h.delegate(&b, "two");
    take(&mut h, &b);
    started(&mut h, &b);
    let reset = h.now + 5_000;
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(reset));
    limited_run(&mut h, &b, ErrorClass::RateLimit, Some(reset));
    // A new task for a sheep on the closed key is held; one on another key is not.
    let tc = h.delegate(&c, "three");
    assert!(take(&mut h, &c).is_empty());
    h.delegate(&o, "four");
    assert_eq!(take(&mut h, &o).len(), 1);
    h.tick(5_000);
    // The first limited sheep probes, alone.
    assert_eq!(take(&mut h, &a).len(), 1);
    assert!(take(&mut h, &b).is_empty());
    assert!(take(&mut h, &c).is_empty());
    started(&mut h, &a);
    // Its model answered: the next round, two, goes at once.
    h.run(|tx| usage(tx, &a, crate::budget::Usage::default()));
    assert_eq!(take(&mut h, &b).len(), 1);
    assert_eq!(take(&mut h, &c).len(), 1);
    for (id, t) in [(&a, &ta), (&b, &tb), (&c, &tc)] {
        assert_eq!(h.state(t), TaskState::Running);
        h.done(id, None, DoneStatus::Completed, "ok").unwrap();
    }
    // Nobody of the round answers: after the grace the key opens, there being nobody left.
    h.tick(crate::herd::limits::PROBE_GRACE_MS);
    assert!(h.herd.limiters.is_empty());
}

#[test]
fn a_probe_refused_again_lets_nobody_else_go_and_a_hidden_reset_doubles() {
    let mut h = Harness::new();
    let k = key("openai");
    let ids: Vec<AgentId> = (0..4)
        .map(|n| spawn_on(&mut h, &format!("s{n}"), &k, None))
        .collect();
    for id in &ids {
        h.delegate(id, "work");
        take(&mut h, id);
        started(&mut h, id);
    }
    // Codex names no reset: the first wait is a guess of two seconds.
    for id in &ids {
        limited_run(&mut h, id, ErrorClass::RateLimit, None);
    }
    assert_eq!(h.herd.limiters[&k].until, h.now + 2_000);
    let mut refusals = 0;
    for guess in [2_000, 4_000, 8_000, 10_000, 10_000] {
        h.tick(guess - 1);
        assert!(ids.iter().all(|id| take(&mut h, id).is_empty()), "closed");
        h.tick(1);
        // One probe per reset, and only one: the one that has waited longest.
        let handed: Vec<&AgentId> = ids
            .iter()
            .filter(|id| !take(&mut h, id).is_empty())
            .collect();
        assert_eq!(
            handed.len(),
            1,
            "the probe alone after {guess} ms: {handed:?}"
        );
        let probe = handed[0].clone();
        started(&mut h, &probe);
        limited_run(&mut h, &probe, ErrorClass::RateLimit, None);
        refusals += 1;
    }
    assert_eq!(refusals, 5, "one refusal per reset");
    // The guess doubled up to rateLimitWaitSeconds (10 s here).
    assert_eq!(h.herd.limiters[&k].until, h.now + 10_000);
    // A reset the provider names is taken as it is.
    h.tick(10_000);
    let probe = ids
        .iter()
        .find(|id| !take(&mut h, id).is_empty())
        .unwrap()
        .clone();
    let at = h.now + 1_500;
    limited_run(&mut h, &probe, ErrorClass::RateLimit, Some(at));
    assert_eq!(h.herd.limiters[&k].until, h.now + 1_500);
    assert_eq!(h.herd.limiters[&k].guesses, 0);
}

#[test]
fn a_held_herd_comes_back_in_rounds_that_double_and_halve_on_a_refusal() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let ids: Vec<AgentId> = (0..12)
        .map(|n| spawn_on(&mut h, &format!("s{n}"), &k, None))
        .collect();
    for id in &ids {
        h.delegate(id, "work");
        take(&mut h, id);
        started(&mut h, id);
        let at = h.now + 1_000;
        limited_run(&mut h, id, ErrorClass::RateLimit, Some(at));
    }
    h.tick(1_000);
    // Each round is let go once every sheep of the last one answered.
    let round = |h: &mut Harness, from: usize| -> Vec<usize> {
        (from..ids.len())
            .filter(|n| !take(h, &ids[*n]).is_empty())
            .collect()
    };
    assert_eq!(round(&mut h, 0), [0], "the probe");
    h.run(|tx| usage(tx, &ids[0], crate::budget::Usage::default()));
    assert_eq!(round(&mut h, 1), [1, 2], "then two");
    h.run(|tx| usage(tx, &ids[1], crate::budget::Usage::default()));
    assert!(
        round(&mut h, 3).is_empty(),
        "not before the whole round answered"
    );
    h.run(|tx| usage(tx, &ids[2], crate::budget::Usage::default()));
    assert_eq!(round(&mut h, 3), [3, 4, 5, 6], "then four");
    // One of the four is refused: the key closes, and the rounds after the next probe halve.
    h.run(|tx| usage(tx, &ids[3], crate::budget::Usage::default()));
    let at = h.now + 1_000;
    limited_run(&mut h, &ids[4], ErrorClass::RateLimit, Some(at));
    assert_eq!(h.herd.limiters[&k].batch, 2, "half of the round refused");
    h.run(|tx| usage(tx, &ids[5], crate::budget::Usage::default()));
    assert!(round(&mut h, 7).is_empty(), "closed again");
    h.tick(1_000);
    assert_eq!(
        round(&mut h, 4),
        [7],
        "the longest waiting probes; the refused one waits last"
    );
    h.run(|tx| usage(tx, &ids[7], crate::budget::Usage::default()));
    assert_eq!(
        round(&mut h, 4),
        [8, 9],
        "a round of two, half of the four refused"
    );
}

#[test]
fn a_round_never_goes_past_the_turn_cap() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let ids: Vec<AgentId> = (0..6)
        .map(|n| spawn_on(&mut h, &format!("s{n}"), &k, Some(2)))
        .collect();
    for id in &ids[..2] {
        h.delegate(id, "work");
        take(&mut h, id);
        started(&mut h, id);
        let at = h.now + 1_000;
        limited_run(&mut h, id, ErrorClass::RateLimit, Some(at));
    }
    for id in &ids[2..] {
        h.delegate(id, "queued");
    }
    h.tick(1_000);
    assert_eq!(take(&mut h, &ids[0]).len(), 1);
    h.run(|tx| usage(tx, &ids[0], crate::budget::Usage::default()));
    let round = h.herd.limiters[&k].answering.clone();
    assert_eq!(round.len(), 2, "a round of two, within the cap: {round:?}");
    // The cap still holds the sheep let go until a turn ends.
    let handed: usize = ids[1..]
        .iter()
        .map(|id| usize::from(!take(&mut h, id).is_empty()))
        .sum();
    assert_eq!(handed, 1, "one turn was in flight, so one more may start");
}

#[test]
fn a_limit_met_again_after_the_reset_closes_the_key_until_the_new_one() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let a = spawn_on(&mut h, "a", &k, None);
    let b = spawn_on(&mut h, "b", &k, None);
    let t = h.delegate(&a, "one");
    take(&mut h, &a);
    h.delegate(&b, "two");
    take(&mut h, &b);
    let at = h.now + 1_000;
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(at));
    let at = h.now + 1_000;
    limited_run(&mut h, &b, ErrorClass::RateLimit, Some(at));
    h.tick(1_000);
    assert_eq!(take(&mut h, &a).len(), 1);
    let at = h.now + 4_000;
    limited_run(&mut h, &a, ErrorClass::RateLimit, Some(at));
    assert!(take(&mut h, &b).is_empty(), "the key closed again");
    h.tick(3_999);
    assert!(take(&mut h, &a).is_empty() && take(&mut h, &b).is_empty());
    h.tick(1);
    // The sheep that has waited longest goes first; the one limited again, after it.
    assert_eq!(take(&mut h, &b).len(), 1);
    assert!(take(&mut h, &a).is_empty());
    h.run(|tx| usage(tx, &b, crate::budget::Usage::default()));
    assert_eq!(take(&mut h, &a).len(), 1);
    assert_eq!(h.herd.tasks[&t].limit_episodes.len(), 2);
    assert_eq!(notices(&h).len(), 3, "one notice per episode per task");
}

/// `id`'s run ends without an error (its last answer given).
fn ended_run(h: &mut Harness, id: &AgentId) {
    let settled = RunReport::Settled {
        stop_reason: Some("end_turn".into()),
        error: None,
        text: None,
        limit: None,
    };
    h.run(|tx| report(tx, id, settled, 1));
}

/// `count` sheep on `key` whose runs the provider took, then `held` more that it refused with a
/// reset at `reset`.
fn served_and_held(
    h: &mut Harness,
    k: &ProviderKey,
    count: usize,
    held: usize,
    reset: i64,
) -> (Vec<AgentId>, Vec<AgentId>) {
    let served: Vec<AgentId> = (0..count)
        .map(|n| spawn_on(h, &format!("w{n}"), k, None))
        .collect();
    let waiting: Vec<AgentId> = (0..held)
        .map(|n| spawn_on(h, &format!("h{n}"), k, None))
        .collect();
    for id in served.iter().chain(&waiting) {
        h.delegate(id, "work");
        assert_eq!(take(h, id).len(), 1);
        started(h, id);
    }
    for id in &waiting {
        limited_run(h, id, ErrorClass::RateLimit, Some(reset));
    }
    (served, waiting)
}

/// Which of `ids` were handed something since they last looked, by index.
fn handed(h: &mut Harness, ids: &[AgentId]) -> Vec<usize> {
    (0..ids.len())
        .filter(|n| !take(h, &ids[*n]).is_empty())
        .collect()
}

#[test]
fn sheep_still_working_at_the_reset_fill_the_room_and_hand_their_slots_on() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let reset = h.now + 2_000;
    let (served, held) = served_and_held(&mut h, &k, 3, 5, reset);
    h.tick(2_000);
    assert_eq!(h.herd.limiters[&k].room, 3, "three were being served");
    assert!(
        handed(&mut h, &held).is_empty(),
        "no probe while the working sheep fill the key's room"
    );
    // Each clean end of a served run hands its slot to the next held sheep, at once.
    ended_run(&mut h, &served[0]);
    assert_eq!(handed(&mut h, &held), [0], "the first slot");
    started(&mut h, &held[0]);
    ended_run(&mut h, &served[1]);
    assert_eq!(handed(&mut h, &held), [1], "the second slot");
    started(&mut h, &held[1]);
    h.run(|tx| usage(tx, &held[0], crate::budget::Usage::default()));
    h.run(|tx| usage(tx, &held[1], crate::budget::Usage::default()));
    assert!(
        handed(&mut h, &held).is_empty(),
        "the room is full: the answers let nobody more go"
    );
    ended_run(&mut h, &served[2]);
    assert_eq!(handed(&mut h, &held), [2], "the third slot");
    started(&mut h, &held[2]);
    h.run(|tx| usage(tx, &held[2], crate::budget::Usage::default()));
    assert!(handed(&mut h, &held).is_empty(), "still full");
    // A sheep let go that ends cleanly hands its slot on too.
    h.done(&held[0], None, DoneStatus::Completed, "ok").unwrap();
    ended_run(&mut h, &held[0]);
    assert_eq!(handed(&mut h, &held), [3]);
    started(&mut h, &held[3]);
    // A refusal closes the key again, as ever.
    let again = h.now + 2_000;
    limited_run(&mut h, &held[3], ErrorClass::RateLimit, Some(again));
    assert!(!h.herd.limiters[&k].releasing, "closed again");
    ended_run(&mut h, &held[1]);
    assert!(handed(&mut h, &held).is_empty(), "nobody goes while closed");
}

#[test]
fn a_refusal_beside_working_sheep_shrinks_the_room_and_the_round_after_the_probe_fills_it() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let reset = h.now + 2_000;
    let (served, held) = served_and_held(&mut h, &k, 5, 6, reset);
    h.tick(2_000);
    assert!(handed(&mut h, &held).is_empty(), "no probe");
    ended_run(&mut h, &served[0]);
    assert_eq!(handed(&mut h, &held), [0]);
    started(&mut h, &held[0]);
    // Refused while four others were served: the key serves at most four.
    let again = h.now + 2_000;
    limited_run(&mut h, &held[0], ErrorClass::RateLimit, Some(again));
    assert_eq!(h.herd.limiters[&k].room, 4);
    for id in &served[1..] {
        ended_run(&mut h, id);
    }
    assert!(handed(&mut h, &held).is_empty(), "closed");
    h.tick(2_000);
    // Nobody works at this reset: the probe goes alone, the longest waiting first.
    assert_eq!(handed(&mut h, &held), [1], "the probe");
    started(&mut h, &held[1]);
    h.run(|tx| usage(tx, &held[1], crate::budget::Usage::default()));
    // The round after it fills the known room (four, the probe one of them), not two.
    assert_eq!(handed(&mut h, &held), [2, 3, 4]);
}

#[test]
fn runs_that_hold_the_room_past_the_grace_let_a_probe_go_and_its_answer_grows_the_room() {
    let mut h = Harness::new();
    let k = key("anthropic");
    let reset = h.now + 2_000;
    let (_served, held) = served_and_held(&mut h, &k, 2, 3, reset);
    h.tick(2_000);
    assert!(handed(&mut h, &held).is_empty(), "no probe");
    h.tick(crate::herd::limits::PROBE_GRACE_MS - 1);
    assert!(handed(&mut h, &held).is_empty(), "not before the grace");
    h.tick(1);
    // Long runs hold the room: after the grace the probe goes anyway.
    assert_eq!(handed(&mut h, &held), [0], "the probe, after the grace");
    started(&mut h, &held[0]);
    h.run(|tx| usage(tx, &held[0], crate::budget::Usage::default()));
    // Served beside the two: the key has room for three.
    assert_eq!(h.herd.limiters[&k].room, 3);
    assert!(handed(&mut h, &held).is_empty(), "the room is full again");
}
