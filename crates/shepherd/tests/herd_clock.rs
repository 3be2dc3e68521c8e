//! Time-driven rules with the broker's clock under the test's control: task deadlines time out
//! (rc 124), unanswered questions block (rc 2), a long wait earns exactly one stale-wait
//! reminder per episode, and the opt-in stall watchdog nudges a silent sheep and then blocks
//! its task (and, off, leaves the same task open) — all by moving the clock, never by waiting
//! out real minutes.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::sync::Arc;
use std::time::Duration;

use herd_support::World;
use serde_json::{Value, json};
use shepherd_broker::BrokerConfig;
use shepherd_broker::clock::ManualClock;
use shepherd_broker::serve::{RunningBroker, start};
use shepherd_client::paths::{BrokerAddress, BrokerPaths};
use shepherd_client::wire::Client;
use shepherd_core::dirs::UserDirs;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};

const MINUTE: i64 = 60_000;

struct Clocked {
    world: World,
    clock: ManualClock,
    running: Option<RunningBroker>,
    client: Client,
}

async fn clocked() -> Clocked {
    let world = World::new();
    let home = world.home.clone();
    let runtime = world.runtime.clone();
    let dirs = UserDirs::resolve(
        |name| match name {
            "HOME" => Some(home.clone().into_os_string()),
            "XDG_RUNTIME_DIR" => Some(runtime.clone().into_os_string()),
            _ => None,
        },
        rustix::process::getuid().as_raw(),
        &std::env::temp_dir(),
    )
    .unwrap();
    let address = BrokerAddress::new("clock-test-parent", &world.project);
    let paths = BrokerPaths::new(&dirs, &address);
    let config = BrokerConfig {
        address,
        paths,
        dirs,
        shepherd_exe: herd_support::shepherd_bin(),
        depth: 0,
        startup_limit: Duration::from_secs(30),
        adoption_grace: Duration::from_secs(10),
        orphan_grace: Duration::from_secs(60),
        pi_command: None,
        hello_deadline: Duration::from_secs(10),
    };
    let clock = ManualClock::new(1_800_000_000_000);
    let running = start(config, Arc::new(clock.clone()), Vec::new())
        .await
        .unwrap();
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role: Role::Parent,
        agent_id: None,
        token: None,
        client: None,
        session_file: None,
        driver: None,
    };
    let (client, _) = Client::open(running.socket(), &hello).await.unwrap();
    Clocked {
        world,
        clock,
        running: Some(running),
        client,
    }
}

impl Clocked {
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.client
            .call_value(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    async fn spawn_and_delegate(
        &mut self,
        agent: &str,
        on_task: &str,
        timeout_minutes: f64,
    ) -> (String, String) {
        self.world.define_test_sheep(agent, on_task, None);
        let spawned = self.call("spawn", json!({ "agent": agent })).await;
        let id = spawned["agentId"].as_str().unwrap().to_owned();
        let delegated = self
            .call(
                "delegate",
                json!({ "target": id, "task": "work", "timeout": timeout_minutes }),
            )
            .await;
        (id, delegated["taskId"].as_str().unwrap().to_owned())
    }

    async fn settled(&mut self, task: &str) -> Value {
        let waited = self
            .call("wait", json!({ "id": task, "timeoutMs": 30_000 }))
            .await;
        waited["settled"][0].clone()
    }

    /// Parent inbox items, waiting up to `ms` real milliseconds for the first.
    async fn inbox(&mut self, ms: u64) -> Vec<Value> {
        let got = self.call("inbox", json!({ "waitMs": ms })).await;
        let items = got["items"].as_array().cloned().unwrap_or_default();
        if let Some(last) = items.last() {
            self.call("ack", json!({ "seq": last["seq"] })).await;
        }
        items
    }

    async fn task_state(&mut self, agent: &str) -> Value {
        self.call("status", json!({ "id": agent })).await["task"]["state"].clone()
    }

    async fn stop(mut self) {
        self.call("broker.stop", json!({})).await;
        self.running.take().unwrap().wait().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_deadline_times_out_with_124() {
    let mut t = clocked().await;
    let (agent, task) = t.spawn_and_delegate("sleeper", "idle", 1.5).await;
    t.clock.advance(MINUTE);
    assert_eq!(t.task_state(&agent).await, "running");
    t.clock.advance(MINUTE / 2);
    let settled = t.settled(&task).await;
    assert_eq!(settled["status"], "timed_out");
    assert_eq!(settled["returnCode"], 124);
    let note = std::fs::read_to_string(settled["note"].as_str().unwrap()).unwrap();
    assert!(note.contains("status: timed-out"), "{note}");
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_question_blocks_the_task_at_the_reply_deadline() {
    let mut t = clocked().await;
    t.world.settings(r#"{"timeout": 3}"#);
    let (agent, task) = t
        .spawn_and_delegate(
            "asker",
            "ask shepherd may I?; done completed went ahead",
            60.0,
        )
        .await;
    let question = t.inbox(30_000).await;
    assert_eq!(question[0]["type"], "envelope");
    assert_eq!(t.task_state(&agent).await, "waiting");
    t.clock.advance(3 * MINUTE);
    let settled = t.settled(&task).await;
    assert_eq!(settled["status"], "blocked");
    assert_eq!(settled["returnCode"], 2);
    assert!(
        settled["error"]
            .as_str()
            .unwrap()
            .contains("never answered"),
        "{settled}"
    );
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_wait_gets_one_stale_reminder_per_episode_and_never_settles() {
    let mut t = clocked().await;
    let (agent, _task) = t
        .spawn_and_delegate(
            "asker",
            "ask shepherd which file?; ask shepherd and then?; idle",
            60.0,
        )
        .await;
    let first = t.inbox(30_000).await;
    let question = first
        .iter()
        .find(|i| i["envelope"]["expectsReply"] == true)
        .unwrap()["envelope"]
        .clone();
    t.clock.advance(5 * MINUTE);
    let stale = t.inbox(30_000).await;
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0]["type"], "stale_wait");
    assert_eq!(stale[0]["question"], "which file?");
    t.clock.advance(5 * MINUTE);
    assert!(
        t.inbox(200).await.is_empty(),
        "one reminder per waiting episode"
    );
    let status = t.call("status", json!({ "id": agent })).await;
    assert_eq!(status["task"]["state"], "waiting");
    assert_eq!(status["task"]["stale"], true);
    // Answering ends the episode; the next question starts a new one with its own reminder.
    t.call(
        "message",
        json!({ "target": agent, "message": "main.rs", "replyTo": question["messageId"] }),
    )
    .await;
    let second = t.inbox(30_000).await;
    assert!(
        second
            .iter()
            .any(|i| i["envelope"]["content"] == "and then?"),
        "{second:?}"
    );
    t.clock.advance(5 * MINUTE);
    let stale = t.inbox(30_000).await;
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0]["question"], "and then?");
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_keep_open_and_stay_open_off_a_settled_sheep_is_closed_ten_seconds_later() {
    let mut t = clocked().await;
    t.world
        .settings(r#"{"keepOpen": false, "stayOpen": false}"#);
    let (agent, task) = t
        .spawn_and_delegate("quick", "done completed ok", 60.0)
        .await;
    let pid = t.call("status", json!({ "id": agent })).await["pid"]
        .as_u64()
        .unwrap() as u32;
    assert_eq!(t.settled(&task).await["status"], "completed");
    t.clock.advance(9_000);
    assert_eq!(
        t.call("status", json!({ "id": agent })).await["state"],
        "done"
    );
    t.clock.advance(1_000);
    let notices = t.inbox(30_000).await;
    assert_eq!(notices[0]["notice"], "auto_closed", "{notices:?}");
    assert!(
        herd_support::wait_gone(pid, Duration::from_millis(1)),
        "the sheep's process is gone"
    );
    assert_eq!(
        t.call("status", json!({ "id": agent })).await["state"],
        "closed"
    );
    t.stop().await;
}

/// The parent's notices of one kind, waiting up to `ms` real milliseconds for the first item.
async fn notices(t: &mut Clocked, kind: &str, ms: u64) -> Vec<Value> {
    t.inbox(ms)
        .await
        .into_iter()
        .filter(|i| i["type"] == "notice" && i["notice"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_stall_watchdog_on_a_silent_sheep_is_nudged_then_its_task_blocks() {
    let mut t = clocked().await;
    t.world.settings(r#"{"stallWatchdog": 1}"#);
    // The sheep reads its task and says so (its last activity), then goes silent.
    let (agent, task) = t
        .spawn_and_delegate("quiet", "tell shepherd started; idle", 60.0)
        .await;
    assert_eq!(t.inbox(30_000).await[0]["envelope"]["content"], "started");
    t.clock.advance(MINUTE - 1);
    assert!(notices(&mut t, "stall_nudged", 200).await.is_empty());
    t.clock.advance(1);
    let nudged = notices(&mut t, "stall_nudged", 30_000).await;
    assert_eq!(nudged.len(), 1, "{nudged:?}");
    assert_eq!(nudged[0]["taskId"], json!(task));
    let status = t.call("status", json!({ "id": agent })).await;
    assert_eq!(status["task"]["state"], "running", "{status}");
    assert_eq!(status["task"]["stall"]["nudged"], true, "{status}");
    t.clock.advance(MINUTE);
    let settled = t.settled(&task).await;
    assert_eq!(settled["status"], "blocked");
    assert_eq!(settled["returnCode"], 2);
    let error = settled["error"].as_str().unwrap();
    assert!(
        error.starts_with("Stall watchdog: quiet showed no activity for 1 min, was nudged"),
        "{error}"
    );
    let note = std::fs::read_to_string(settled["note"].as_str().unwrap()).unwrap();
    assert!(note.contains("Stall watchdog"), "{note}");
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_stall_watchdog_off_the_same_silent_task_stays_open() {
    let mut t = clocked().await;
    let (agent, _task) = t
        .spawn_and_delegate("quiet", "tell shepherd started; idle", 60.0)
        .await;
    assert_eq!(t.inbox(30_000).await[0]["envelope"]["content"], "started");
    t.clock.advance(10 * MINUTE);
    assert!(notices(&mut t, "stall_nudged", 200).await.is_empty());
    let status = t.call("status", json!({ "id": agent })).await;
    assert_eq!(status["task"]["state"], "running", "{status}");
    assert!(status["task"].get("stall").is_none(), "{status}");
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_turns_the_watchdog_on_or_off_for_its_own_task() {
    let mut t = clocked().await;
    t.world.settings(r#"{"stallWatchdog": 1}"#);
    t.world
        .define_test_sheep("quiet", "tell shepherd started; idle", None);
    let spawned = t
        .call("spawn", json!({ "agent": "quiet", "label": "off" }))
        .await;
    let off = spawned["agentId"].as_str().unwrap().to_owned();
    t.call(
        "delegate",
        json!({ "target": off, "task": "work", "timeout": 60, "stall": 0 }),
    )
    .await;
    let spawned = t
        .call("spawn", json!({ "agent": "quiet", "label": "on" }))
        .await;
    let on = spawned["agentId"].as_str().unwrap().to_owned();
    let delegated = t
        .call(
            "delegate",
            json!({ "target": on, "task": "work", "timeout": 60, "stall": 2 }),
        )
        .await;
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    // Both sheep have read their tasks before the clock moves.
    let mut started = 0;
    while started < 2 {
        started += t
            .inbox(30_000)
            .await
            .iter()
            .filter(|i| i["envelope"]["content"] == "started")
            .count();
    }
    t.clock.advance(2 * MINUTE);
    let nudged = notices(&mut t, "stall_nudged", 30_000).await;
    assert_eq!(
        nudged.len(),
        1,
        "only the task with the watchdog: {nudged:?}"
    );
    assert_eq!(nudged[0]["agentId"], json!(on));
    t.clock.advance(2 * MINUTE);
    assert_eq!(t.settled(&task).await["status"], "blocked");
    let status = t.call("status", json!({ "id": off })).await;
    assert_eq!(status["task"]["state"], "running", "{status}");

    // A bad period is refused, naming it, and changes nothing.
    let refused = t
        .client
        .call_value(
            "delegate",
            json!({ "target": off, "task": "more", "stall": -1 }),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("stall `-1`"), "{refused}");
    t.stop().await;
}
