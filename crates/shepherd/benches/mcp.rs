//! MCP benchmark (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench mcp` (add `-- --quick` for a short run).
//!
//! Measures `shepherd mcp` (release build) driven by rmcp's client over stdio, against a real
//! broker:
//! 1. what a tool call costs over the broker request it makes: `shepherd_status` against
//!    `status`, and `shepherd {action: "herd"}` against `herd`, each as p50/p99, the broker
//!    requests made on a direct connection to the same broker;
//! 2. start-up: from starting `shepherd mcp` to its answer to `initialize`, then to its first
//!    `tools/list`; and the first tool call of a session (the herd opened, the broker reached).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use shepherd_client::wire::Client;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};

const HERD: &str = "bench";

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
}

fn shepherd() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shepherd"))
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        for d in [&home, &runtime, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let agents = home.join(".pi/agent/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("idle.md"),
            "---\nname: idle\ndescription: bench sheep\ncommand: [\"sleep\", \"3600\"]\n---\nbench\n",
        )
        .unwrap();
        let project = project.canonicalize().unwrap();
        Self {
            _dir: dir,
            home,
            runtime,
            project,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(shepherd());
        command
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime);
        command
    }

    fn socket(&self) -> PathBuf {
        let out = self
            .command(&["broker", "ensure", "--parent-session", HERD, "--json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        PathBuf::from(doc["socket"].as_str().unwrap())
    }

    async fn mcp(&self) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        let command = tokio::process::Command::from(self.command(&["mcp", "--herd", HERD]));
        ().serve(TokioChildProcess::new(command).unwrap())
            .await
            .unwrap()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = self
            .command(&["broker", "stop", "--parent-session", HERD])
            .output();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Prints the summary and returns (p50, p99).
fn summary(label: &str, mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&ms, 50.0), percentile(&ms, 99.0));
    println!(
        "{label}: n={} p50={p50:.3} ms p99={p99:.3} ms max={:.3} ms",
        ms.len(),
        ms.last().copied().unwrap_or(f64::NAN)
    );
    (p50, p99)
}

fn call(tool: &str, args: &Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

async fn overhead(world: &World, rounds: usize) {
    let mcp = world.mcp().await;
    let spawned = mcp
        .call_tool(call(
            "shepherd_spawn",
            &json!({"agent": "idle", "label": "bench"}),
        ))
        .await
        .unwrap();
    let text = spawned.content[0].as_text().unwrap().text.clone();
    let at = text.find("shepherd-agent-").expect("an agent id");
    let id: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role: Role::Parent,
        agent_id: None,
        token: None,
        client: Some("bench".into()),
        session_file: None,
        driver: None,
    };
    let (mut direct, _) = Client::open(&world.socket(), &hello).await.unwrap();
    for (label, tool, args, method, params) in [
        (
            "status",
            "shepherd_status",
            json!({"id": id}),
            "status",
            json!({"id": id}),
        ),
        (
            "herd",
            "shepherd",
            json!({"action": "herd"}),
            "herd",
            json!({}),
        ),
    ] {
        let (mut broker, mut over_mcp) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let started = Instant::now();
            direct.call_value(method, params.clone()).await.unwrap();
            broker.push(ms(started));
            let started = Instant::now();
            let result = mcp.call_tool(call(tool, &args)).await.unwrap();
            over_mcp.push(ms(started));
            assert_ne!(result.is_error, Some(true));
        }
        let (b50, b99) = summary(&format!("broker `{method}` request (direct)"), broker);
        let (m50, m99) = summary(&format!("MCP `{tool}` {label} call"), over_mcp);
        println!(
            "  overhead of the MCP call over the broker request: p50 +{:.3} ms, p99 +{:.3} ms",
            m50 - b50,
            m99 - b99
        );
    }
    let _closed = mcp.cancel().await;
}

async fn startup(world: &World, rounds: usize) {
    // The broker runs (a named herd), as it does for a host that restarts its server.
    world.socket();
    let (mut init, mut listed, mut first) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let mcp = world.mcp().await;
        init.push(ms(started));
        mcp.list_all_tools().await.unwrap();
        listed.push(ms(started));
        let called = Instant::now();
        mcp.call_tool(call("shepherd", &json!({"action": "herd"})))
            .await
            .unwrap();
        first.push(ms(called));
        let _closed = mcp.cancel().await;
    }
    summary("`shepherd mcp` start to `initialize` answered", init);
    summary(
        "`shepherd mcp` start to first `tools/list` answered",
        listed,
    );
    summary(
        "first tool call of a session (herd opened, broker reached)",
        first,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, starts) = if quick { (50, 5) } else { (500, 30) };
    println!(
        "shepherd mcp benchmark ({}), release build",
        if quick { "quick" } else { "full" }
    );
    let world = World::new();
    overhead(&world, rounds).await;
    startup(&world, starts).await;
}
