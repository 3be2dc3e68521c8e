//! Receipts and herd-mates on the pure herd, each with the replay check of the shared harness:
//! a message is queued, delivered when handed out, read when acknowledged, and the marks come
//! back from the journal.

use super::tests::Harness;
use super::*;

fn last_seq(h: &Harness, who: &Participant) -> u64 {
    h.herd.pending_items(who).last().expect("an item").seq
}

#[test]
fn a_message_is_queued_then_delivered_then_read() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let to_a = Participant::Sheep(a.clone());
    let sent = h
        .message(
            Participant::Parent,
            a.as_str(),
            "first line\nsecond",
            |_| {},
        )
        .unwrap();
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.state, ReceiptState::Queued);
    assert_eq!(receipt.preview, "first line");
    assert_eq!(receipt.sent_at, h.now);

    h.now += 5;
    let seq = last_seq(&h, &to_a);
    h.run(|tx| delivered(tx, &to_a, seq));
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.state, ReceiptState::Delivered);
    assert_eq!(receipt.delivered_at, Some(h.now));

    // Handing the same items out again keeps the first time and records nothing.
    h.now += 5;
    let changed = h.run(|tx| {
        delivered(tx, &to_a, seq);
        tx.changed()
    });
    assert!(!changed, "a re-fetch is not a new delivery");

    h.now += 5;
    h.run(|tx| ack(tx, &to_a, seq));
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.state, ReceiptState::Read);
    assert_eq!(receipt.read_at, Some(h.now));
    assert_eq!(receipt.delivered_at, Some(h.now - 10));
    assert_eq!(h.herd.receipts_to(&to_a), vec![receipt]);
}

#[test]
fn a_sheep_message_to_a_herd_mate_by_name_gets_a_receipt_and_tasks_get_none() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let b = h.spawn("scout", "b");
    h.delegate(&b, "look around");
    let target = h.herd.mate_target("worker: a").unwrap();
    assert_eq!(target, a.as_str());
    assert_eq!(
        h.herd.mate_target("a").unwrap(),
        a.as_str(),
        "a unique label"
    );
    let err = h.herd.mate_target("nobody").unwrap_err();
    assert_eq!(err.code, crate::error_code::ErrorCode::InvalidTarget);
    assert!(err.to_string().contains("`nobody`"), "{err}");
    let sent = h
        .message(Participant::Sheep(b.clone()), &target, "hello a", |_| {})
        .unwrap();
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.sender_name, "scout: b");
    assert_eq!(receipt.target_name, "worker: a");
    // The task hand-over to b is not a message: b's status lists no receipt for it.
    assert!(
        h.herd
            .receipts_to(&Participant::Sheep(b.clone()))
            .is_empty()
    );
}

#[test]
fn a_message_to_a_sheep_closed_before_reading_it_is_discarded_even_after_a_resume() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let sent = h
        .message(Participant::Parent, a.as_str(), "never read", |_| {})
        .unwrap();
    assert!(h.run(|tx| begin_close(tx, &a)));
    h.run(|tx| closed(tx, &a));
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.state, ReceiptState::Discarded);
    // Resumed, the sheep starts with an empty inbox: the message stays discarded.
    let input = Reopen {
        agent_id: a.clone(),
        backend: crate::backend::BackendKind::Headless,
        token_digest: "d2".into(),
        supervisor_digest: None,
        request_id: None,
        max_sheep: None,
    };
    h.run(|tx| reopen(tx, input)).unwrap();
    let receipt = h.herd.message_receipt(&sent.message_id).unwrap();
    assert_eq!(receipt.state, ReceiptState::Discarded);
}

#[test]
fn herd_mates_show_names_and_states_and_which_is_self_but_no_task_text() {
    let mut h = Harness::new();
    let a = h.spawn("worker", "a");
    let b = h.spawn("scout", "b");
    h.delegate(&b, "secret task text");
    let mates = h.herd.mates_view(&a, h.now);
    let names: Vec<(&str, bool)> = mates
        .iter()
        .map(|m| (m.display_name.as_str(), m.is_self))
        .collect();
    assert_eq!(names, vec![("worker: a", true), ("scout: b", false)]);
    let json = serde_json::to_string(&mates).unwrap();
    assert!(!json.contains("secret task text"), "{json}");
    assert_eq!(mates[1].state, "working");
}
