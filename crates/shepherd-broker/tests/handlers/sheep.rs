//! A sheep's own requests: done, tell, `herd.mates`, status on a message — and that a sheep
//! speaks only for itself.

use serde_json::json;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{Role, method};

use crate::support::Herd;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_without_an_open_task_is_refused_and_the_parent_told() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let (code, message) = sheep
        .refused(method::DONE, json!({ "status": "completed" }))
        .await;
    assert_eq!(code, ErrorCode::NoDelegatedTask, "{message}");
    let notice = herd.inbox_item("notice").await;
    assert_eq!(notice["notice"], "task_done_dropped", "{notice}");
    assert_eq!(notice["agentId"], sheep.id.as_str(), "{notice}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sheep_tells_its_parent_and_sees_its_mates() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let (_, mate) = herd.spawn("worker").await;
    let told = sheep
        .call(
            method::TELL,
            json!({ "target": "parent", "message": "halfway there" }),
        )
        .await;
    assert_eq!(told["targetId"], "shepherd", "{told}");
    let heard = herd.inbox_item("envelope").await["envelope"].clone();
    assert_eq!(heard["senderId"], sheep.id.as_str(), "{heard}");
    assert_eq!(heard["content"], "halfway there", "{heard}");

    let mates = sheep.call(method::HERD_MATES, json!({})).await;
    assert_eq!(mates["agentId"], sheep.id.as_str());
    let listed: Vec<_> = mates["mates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["agentId"].as_str().unwrap().to_owned(),
                m["isSelf"] == true,
            )
        })
        .collect();
    assert_eq!(
        listed,
        [(sheep.id.clone(), true), (mate.id.clone(), false)],
        "{mates}"
    );
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sheep_sees_the_receipts_of_its_own_messages_only() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let (_, mut other) = herd.spawn("worker").await;
    let sent = herd
        .call(
            method::MESSAGE,
            json!({ "target": sheep.id, "message": "for you" }),
        )
        .await;
    let id = sent["messageId"].as_str().unwrap().to_owned();
    let own = sheep.call(method::STATUS, json!({ "id": id })).await;
    assert_eq!(own["target"], sheep.id.as_str(), "{own}");
    assert_eq!(own["state"], "queued", "{own}");
    let (code, message) = other.refused(method::STATUS, json!({ "id": id })).await;
    assert_eq!(code, ErrorCode::UnknownMessage, "{message}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sheep_speaks_only_for_itself() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    for (name, params) in [
        (method::DELEGATE, json!({ "target": sheep.id, "task": "x" })),
        (method::CLOSE, json!({ "id": sheep.id })),
        (method::BROKER_STOP, json!({})),
    ] {
        let (code, message) = sheep.refused(name, params).await;
        assert_eq!(code, ErrorCode::Forbidden, "{name}: {message}");
    }
    let wrong = herd
        .connect(Role::Sheep, Some(&sheep.id), Some("not-its-token"))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), ErrorCode::Unauthenticated, "{wrong}");
    // A sheep's capability does not make it its own supervisor.
    let posing = herd
        .connect(Role::Supervisor, Some(&sheep.id), Some(&sheep.token))
        .await
        .unwrap_err();
    assert_eq!(posing.code(), ErrorCode::Unauthenticated, "{posing}");
    // Still the herd's sheep: the refusals changed nothing.
    let status = herd.call(method::STATUS, json!({ "id": sheep.id })).await;
    assert_eq!(status["state"], "idle", "{status}");
    herd.stop().await;
}
