//! The parent's requests: delegate, message, wait, watch, status on a message (receipts),
//! close — and what each refuses.

use serde_json::json;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{Role, method};

use crate::support::{Herd, only_envelope};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_task_reaches_the_sheep_and_its_done_settles_the_parents_wait() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (spawned, mut sheep) = herd.spawn("worker").await;
    assert_eq!(spawned["agent"], "worker");
    assert_eq!(spawned["backend"], "headless");

    let delegated = herd
        .call(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "count the files" }),
        )
        .await;
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    assert_eq!(delegated["agentId"], sheep.id.as_str());
    assert_eq!(delegated["state"], "running");
    // Its note is reserved in the parent's fieldnotes session before the task is handed over.
    let note = delegated["note"].as_str().unwrap();
    assert!(std::path::Path::new(note).is_file(), "{delegated}");

    let envelope = only_envelope(&sheep.inbox().await);
    assert_eq!(envelope["kind"], "task", "{envelope}");
    assert_eq!(envelope["taskId"], task.as_str(), "{envelope}");
    assert_eq!(envelope["note"], delegated["note"], "{envelope}");
    assert!(
        envelope["content"]
            .as_str()
            .unwrap()
            .contains("count the files"),
        "{envelope}"
    );

    let done = sheep
        .call(
            method::DONE,
            json!({ "status": "completed", "summary": "12 files" }),
        )
        .await;
    assert_eq!(done["taskId"], task.as_str());
    assert_eq!(done["status"], "completed");

    let waited = herd
        .call(method::WAIT, json!({ "id": task, "timeoutMs": 30_000 }))
        .await;
    let settled = &waited["settled"][0];
    assert_eq!(settled["taskId"], task.as_str(), "{waited}");
    assert_eq!(settled["status"], "completed", "{waited}");
    assert_eq!(settled["returnCode"], 0, "{waited}");
    assert_eq!(waited["pending"], json!([]), "{waited}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sheeps_question_holds_its_task_until_the_parent_replies() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let task = herd
        .call(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "pick a file" }),
        )
        .await["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let asked = sheep
        .call(
            method::TELL,
            json!({ "target": "parent", "message": "which one?", "expectsReply": true }),
        )
        .await;
    assert_eq!(asked["taskId"], task.as_str(), "{asked}");
    assert_eq!(asked["targetTaskState"], "waiting", "{asked}");
    let question = asked["messageId"].as_str().unwrap().to_owned();
    let (code, _) = sheep
        .refused(
            method::TELL,
            json!({ "target": "parent", "message": "and?", "expectsReply": true }),
        )
        .await;
    assert_eq!(code, ErrorCode::RequestOpen);
    let (code, message) = sheep
        .refused(method::DONE, json!({ "status": "completed" }))
        .await;
    assert_eq!(code, ErrorCode::PendingRequest, "{message}");

    let seen = herd.inbox_item("envelope").await["envelope"].clone();
    assert_eq!(seen["messageId"], question.as_str(), "{seen}");
    assert_eq!(seen["expectsReply"], true, "{seen}");
    assert_eq!(seen["content"], "which one?", "{seen}");

    let replied = herd
        .call(
            method::MESSAGE,
            json!({ "target": sheep.id, "message": "the first", "replyTo": question }),
        )
        .await;
    assert_eq!(replied["targetTaskState"], "running", "{replied}");
    let items = sheep.inbox().await;
    let reply = items
        .iter()
        .find(|i| i["envelope"]["kind"] == "reply")
        .unwrap_or_else(|| panic!("no reply among {items:?}"));
    assert_eq!(reply["envelope"]["replyTo"], question.as_str());
    assert_eq!(reply["envelope"]["content"], "the first");
    let done = sheep
        .call(method::DONE, json!({ "status": "completed" }))
        .await;
    assert_eq!(done["status"], "completed");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_receipt_goes_from_queued_to_delivered_to_read() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let sent = herd
        .call(
            method::MESSAGE,
            json!({ "target": sheep.id, "message": "hi" }),
        )
        .await;
    assert_eq!(sent["targetId"], sheep.id.as_str());
    let id = sent["messageId"].as_str().unwrap().to_owned();
    assert_eq!(receipt(&mut herd, &id).await["state"], "queued");

    let wait_ms = 30_000;
    let fetched = sheep
        .call(method::INBOX, json!({ "waitMs": wait_ms }))
        .await;
    assert_eq!(fetched["items"][0]["envelope"]["messageId"], id.as_str());
    assert_eq!(receipt(&mut herd, &id).await["state"], "delivered");

    sheep
        .call(method::ACK, json!({ "seq": fetched["items"][0]["seq"] }))
        .await;
    let read = receipt(&mut herd, &id).await;
    assert_eq!(read["state"], "read", "{read}");
    assert_eq!(read["preview"], "hi", "{read}");
    herd.stop().await;
}

/// What `status` says of a message.
async fn receipt(herd: &mut Herd, message_id: &str) -> serde_json::Value {
    herd.call(method::STATUS, json!({ "id": message_id })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_herd_cannot_do_is_refused_with_its_code() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let cases = [
        (
            method::DELEGATE,
            json!({ "target": "nobody", "task": "x" }),
            ErrorCode::InvalidTarget,
        ),
        (
            method::MESSAGE,
            json!({ "target": "nobody", "message": "x" }),
            ErrorCode::InvalidTarget,
        ),
        (
            method::WAIT,
            json!({ "id": "shepherd-task-nope", "timeoutMs": 0 }),
            ErrorCode::UnknownTask,
        ),
        (
            method::SPAWN,
            json!({ "agent": "nobody" }),
            ErrorCode::UnknownAgent,
        ),
        (
            method::SPAWN,
            json!({ "agent": "worker", "label": "a:b" }),
            ErrorCode::InvalidLabel,
        ),
    ];
    for (name, params, expected) in cases {
        let (code, message) = herd.refused(name, params.clone()).await;
        assert_eq!(code, expected, "{name} {params}: {message}");
    }
    let (_, sheep) = herd.spawn("worker").await;
    herd.call(
        method::DELEGATE,
        json!({ "target": sheep.id, "task": "one" }),
    )
    .await;
    let (code, message) = herd
        .refused(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "two" }),
        )
        .await;
    assert_eq!(code, ErrorCode::ActiveTask, "{message}");
    let labelled = json!({ "agent": "worker", "label": "twin", "backend": "headless" });
    herd.call(method::SPAWN, labelled.clone()).await;
    let (code, message) = herd.refused(method::SPAWN, labelled).await;
    assert_eq!(code, ErrorCode::DuplicateLabel, "{message}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_task_that_settles_tells_the_parent_through_its_inbox() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let task = herd
        .call(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "watch me" }),
        )
        .await["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = herd.call(method::WATCH, json!({ "id": task })).await;
    let watcher = watched["watcherId"].as_str().unwrap().to_owned();
    assert_eq!(watched["pending"], json!([task]), "{watched}");
    sheep
        .call(
            method::DONE,
            json!({ "status": "failed", "summary": "no disk" }),
        )
        .await;
    let completion = herd.inbox_item("completion").await;
    assert_eq!(completion["watcherId"], watcher.as_str());
    let report = &completion["completions"][0];
    assert_eq!(report["taskId"], task.as_str(), "{report}");
    assert_eq!(report["status"], "failed", "{report}");
    assert_eq!(report["ok"], false, "{report}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_sheep_cancels_its_task_with_130_and_ends_its_capability() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, sheep) = herd.spawn("worker").await;
    let task = herd
        .call(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "long work" }),
        )
        .await["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The close goes through the sheep's supervisor (`terminate`, then its exit report).
    let closed = herd.call(method::CLOSE, json!({ "id": sheep.id })).await;
    assert_eq!(closed["agentId"], sheep.id.as_str());
    let cancelled = &closed["cancelled"];
    assert_eq!(cancelled["taskId"], task.as_str(), "{closed}");
    assert_eq!(cancelled["status"], "cancelled", "{closed}");
    assert_eq!(cancelled["returnCode"], 130, "{closed}");

    let again = herd.call(method::CLOSE, json!({ "id": sheep.id })).await;
    assert!(again.get("cancelled").is_none(), "{again}");
    let listed = herd.call(method::HERD, json!({})).await;
    assert_eq!(listed["sheep"], json!([]), "{listed}");
    let refused = herd
        .connect(Role::Sheep, Some(&sheep.id), Some(&sheep.token))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::ClosedHandle, "{refused}");
    herd.stop().await;
}
