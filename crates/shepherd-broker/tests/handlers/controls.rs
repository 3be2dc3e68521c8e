//! The herd's controls and the dispatcher's checks: herd, status, `broker.status`,
//! `herd.subscribe`, exactly-once answers for a resent request, and what the dispatcher refuses
//! before any handler runs (unknown methods, bad parameters or request ids, a role's limits).

use serde_json::json;
use shepherd_client::wire::ClientError;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{Role, event, method};

use crate::support::{DEADLINE, Herd};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herd_and_status_show_each_sheep_and_its_open_task() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, sheep) = herd.spawn("worker").await;
    let listed = herd.call(method::HERD, json!({})).await;
    assert_eq!(listed["sheep"][0]["agentId"], sheep.id.as_str(), "{listed}");
    assert_eq!(listed["sheep"][0]["state"], "idle", "{listed}");
    assert_eq!(listed["sheep"][0]["runtime"], "command", "{listed}");

    let task = herd
        .call(
            method::DELEGATE,
            json!({ "target": sheep.id, "task": "tidy up" }),
        )
        .await["taskId"]
        .clone();
    let one = herd.call(method::STATUS, json!({ "id": sheep.id })).await;
    assert_eq!(one["state"], "working", "{one}");
    assert_eq!(one["task"]["id"], task, "{one}");
    assert_eq!(one["task"]["title"], "tidy up", "{one}");
    let all = herd.call(method::STATUS, json!({})).await;
    assert_eq!(all["sheep"].as_array().map(Vec::len), Some(1), "{all}");
    let (code, message) = herd
        .refused(method::STATUS, json!({ "id": "nobody" }))
        .await;
    assert_eq!(code, ErrorCode::InvalidTarget, "{message}");

    let broker = herd.call(method::BROKER_STATUS, json!({})).await;
    assert_eq!(broker["parentIdentity"], "handlers-test-parent", "{broker}");
    assert_eq!(
        broker["projectRoot"],
        herd.project.display().to_string(),
        "{broker}"
    );
    assert_eq!(broker["liveSheep"], 1, "{broker}");
    assert_eq!(broker["openTasks"], 1, "{broker}");
    assert_eq!(broker["pid"], std::process::id(), "{broker}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_is_pushed_the_herd_when_it_changes_and_may_not_change_it() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let mut observer = herd.connect(Role::Observer, None, None).await.unwrap();
    let now = observer
        .call_value(method::HERD_SUBSCRIBE, json!({}))
        .await
        .unwrap();
    assert_eq!(now["sheep"], json!([]), "{now}");
    let (_, sheep) = herd.spawn("worker").await;
    let shown = tokio::time::timeout(DEADLINE, async {
        loop {
            let (name, data) = observer.next_push().await.unwrap();
            if name == event::HERD && data["sheep"][0]["agentId"] == sheep.id.as_str() {
                return data;
            }
        }
    })
    .await
    .expect("the herd is pushed with the new sheep");
    assert_eq!(shown["sheep"][0]["displayName"], "worker", "{shown}");

    let refused = observer
        .call_value(method::DELEGATE, json!({ "target": sheep.id, "task": "x" }))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Forbidden, "{refused}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dispatcher_refuses_unknown_methods_bad_parameters_and_bad_request_ids() {
    let mut herd = Herd::start().await;
    let cases = [
        ("frobnicate", json!({}), ErrorCode::UnknownMethod),
        (
            method::DELEGATE,
            json!({ "task": "x" }),
            ErrorCode::InvalidRequest,
        ),
        (method::HELLO, json!({}), ErrorCode::InvalidRequest),
        (
            method::DONE,
            json!({ "status": "completed" }),
            ErrorCode::Forbidden,
        ),
    ];
    for (name, params, expected) in cases {
        let (code, message) = herd.refused(name, params).await;
        assert_eq!(code, expected, "{name}: {message}");
    }
    let bad_id = herd
        .parent
        .request(method::HERD, json!({}), Some("not\u{1}printable"))
        .await;
    match bad_id {
        Err(ClientError::Remote(err)) => {
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{}", err.message);
        }
        other => panic!("a bad request id was not refused: {other:?}"),
    }
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_request_is_answered_once() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let (_, mut sheep) = herd.spawn("worker").await;
    let params = json!({ "target": sheep.id, "message": "only once" });
    let first = herd
        .parent
        .request(method::MESSAGE, params.clone(), Some("resent-1"))
        .await
        .unwrap();
    let second = herd
        .parent
        .request(method::MESSAGE, params, Some("resent-1"))
        .await
        .unwrap();
    assert_eq!(first["messageId"], second["messageId"], "{first} {second}");
    let items = sheep.inbox().await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["envelope"]["messageId"], first["messageId"]);
    herd.stop().await;
}
