//! Time-driven rules with the broker's clock under the test's control: task deadlines time out
//! (rc 124), unanswered questions block (rc 2), and a long wait earns exactly one stale-wait
//! reminder per episode — all by moving the clock, never by waiting out real minutes.

mod herd_support;

use std::sync::Arc;
use std::time::Duration;

use herd_support::World;
use serde_json::{Value, json};
use shepherd_broker::BrokerConfig;
use shepherd_broker::client::Client;
use shepherd_broker::clock::ManualClock;
use shepherd_broker::paths::{BrokerAddress, BrokerPaths};
use shepherd_broker::serve::{RunningBroker, start};
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
