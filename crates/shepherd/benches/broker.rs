//! Broker benchmark (a bench binary, not a timed test): run with
//! `cargo build --release -p shepherd-testkit && cargo bench -p shepherd --bench broker`
//! (add `-- --quick` for a short run; the first command builds the test sheep it uses).
//!
//! Measures, against a real broker process:
//! 1. delivery latency parent → sheep and sheep → parent (p50/p99/max);
//! 2. `done` → the parent's completion push latency;
//! 3. a delegated task's whole note lifecycle (reserve, start, finish) with 16 concurrent
//!    clients delegating into one session: lifecycles per second;
//! 4. spawn → ready overhead per backend (headless, tmux when installed);
//! 5. 200 concurrent headless test sheep through spawn, delegate, done and close: wall time,
//!    broker peak RSS and CPU, idle CPU with all of them alive, and that nothing was lost;
//! 6. the same for 20 test sheep at once in tmux windows (when tmux is installed).
//!
//! `-- thousand` runs only the crowd of a thousand sheep (module `thousand`).
//!
//! `-- fieldnotes` runs only the fieldnotes scenarios instead (module `fieldnotes`: lifecycles
//! and plans by 16 clients into one session and into 16, `done` → completion, and the CLI
//! path), and `-- fieldnotes --base DIR [--reps N]` compares each with the `shepherd` binary
//! in `DIR`, an earlier commit's release build, in the same run.
//!
//! `-- sandbox` runs only spawn → ready without a sandbox and in each sandbox (`workspace`,
//! `strict`, with the real bubblewrap), headless and in tmux, then spawn → the sheep's program
//! running, in the project and isolated (module `sandbox_start`): what confining a sheep costs.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod fieldnotes;
mod sandbox_start;
mod thousand;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_client::wire::Client;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};

struct World {
    _dir: tempfile::TempDir,
    /// Where the `shepherd` binary this world runs lives (this build's, or a base build's).
    bins: PathBuf,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
    tmux: PathBuf,
}

fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shepherd")).with_file_name(name)
}

impl World {
    fn new() -> Self {
        Self::with_bins(bin("shepherd").parent().unwrap())
    }

    /// A world whose CLI and broker are the `shepherd` binary in `bins`.
    fn with_bins(bins: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        let tmux = dir.path().join("tmux");
        for d in [&home, &runtime, &project, &tmux] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = project.canonicalize().unwrap();
        Self {
            _dir: dir,
            bins: bins.to_owned(),
            home,
            runtime,
            project,
            tmux,
        }
    }

    fn define(&self, name: &str, argv: &[&str]) {
        let dir = self.home.join(".pi/agent/agents");
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: bench sheep\ncommand: {}\n---\nbench\n",
            serde_json::to_string(argv).unwrap()
        );
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
    }

    fn cli(&self, args: &[&str]) -> Value {
        let out = Command::new(self.bins.join("shepherd"))
            .args(args)
            .arg("--json")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("TMUX_TMPDIR", &self.tmux)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "shepherd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn socket(&self) -> PathBuf {
        PathBuf::from(self.cli(&["broker", "ensure"])["socket"].as_str().unwrap())
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = Command::new(self.bins.join("shepherd"))
            .args(["broker", "stop"])
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("TMUX_TMPDIR", &self.tmux)
            .output();
        let _killed = Command::new("tmux")
            .arg("kill-server")
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", &self.tmux)
            .output();
    }
}

async fn connect(socket: &Path, role: Role, agent: Option<&str>, token: Option<&str>) -> Client {
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role,
        agent_id: agent.map(str::to_owned),
        token: token.map(str::to_owned),
        client: Some("bench".into()),
        session_file: None,
        driver: None,
    };
    Client::open(socket, &hello).await.unwrap().0
}

/// A sheep the benchmark itself speaks for: its program only records its token and waits.
async fn puppet(world: &World, socket: &Path, parent: &mut Client, n: usize) -> (String, Client) {
    let token_file = world.project.join(format!("token-{n}"));
    let script = format!(
        "printf %s \"$SHEPHERD_TOKEN\" > {0}.tmp && mv {0}.tmp {0}; exec sleep 3600",
        token_file.display()
    );
    world.define(&format!("puppet{n}"), &["sh", "-c", &script]);
    let spawned = parent
        .call_value("spawn", json!({ "agent": format!("puppet{n}") }))
        .await
        .unwrap();
    let id = spawned["agentId"].as_str().unwrap().to_owned();
    // The program writes its token right after it starts; spawn returns once it runs.
    let deadline = Instant::now() + Duration::from_secs(30);
    let token = loop {
        if let Ok(token) = std::fs::read_to_string(&token_file) {
            break token;
        }
        assert!(Instant::now() < deadline, "puppet never wrote its token");
        // Setup only (not measured): the program writes its token just after spawn returns.
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let mut sheep = connect(socket, Role::Sheep, Some(&id), Some(&token)).await;
    sheep.call_value("subscribe", json!({})).await.unwrap();
    (id, sheep)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn summary(label: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{label}: n={} p50={:.3} ms p99={:.3} ms max={:.3} ms",
        ms.len(),
        percentile(&ms, 50.0),
        percentile(&ms, 99.0),
        ms.last().copied().unwrap_or(f64::NAN)
    );
}

async fn next_inbox(client: &mut Client) -> Vec<Value> {
    loop {
        let (event, data) = client.next_push().await.unwrap();
        if event == "inbox" {
            let items = data["items"].as_array().cloned().unwrap_or_default();
            if let Some(last) = items.last() {
                client
                    .call_value("ack", json!({ "seq": last["seq"] }))
                    .await
                    .unwrap();
            }
            return items;
        }
    }
}

async fn latency(world: &World, rounds: usize) {
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    let mut inbox = connect(&socket, Role::Parent, None, None).await;
    inbox.call_value("subscribe", json!({})).await.unwrap();
    let (id, mut sheep) = puppet(world, &socket, &mut parent, 0).await;
    let task = parent
        .call_value("delegate", json!({ "target": id, "task": "bench" }))
        .await
        .unwrap();
    next_inbox(&mut sheep).await;
    let mut down = Vec::new();
    let mut up = Vec::new();
    for i in 0..rounds {
        let started = Instant::now();
        parent
            .call_value(
                "message",
                json!({ "target": id, "message": format!("m{i}") }),
            )
            .await
            .unwrap();
        next_inbox(&mut sheep).await;
        down.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        sheep
            .call_value(
                "tell",
                json!({ "target": "shepherd", "message": format!("r{i}") }),
            )
            .await
            .unwrap();
        next_inbox(&mut inbox).await;
        up.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    summary("delivery parent -> sheep (send to push received)", down);
    summary("delivery sheep -> parent (send to push received)", up);

    // done -> the parent's completion push, one task at a time; and -> the herd view pushed to
    // an observer (the widget's feed).
    let mut observer = connect(&socket, Role::Observer, None, None).await;
    observer
        .call_value("herd.subscribe", json!({}))
        .await
        .unwrap();
    let mut done = Vec::new();
    let mut herd_view = Vec::new();
    let mut current = task["taskId"].as_str().unwrap().to_owned();
    for i in 0..rounds {
        parent
            .call_value("watch", json!({ "id": current }))
            .await
            .unwrap();
        // A quiet gap longer than the feed's 20 ms window, so each round starts with the feed
        // idle: it looks at the herd at most once per window by design, so a visible change
        // that follows an invisible commit within the window waits for the window's end.
        tokio::time::sleep(Duration::from_millis(25)).await;
        let started = Instant::now();
        sheep
            .call_value("done", json!({ "status": "completed", "summary": "ok" }))
            .await
            .unwrap();
        loop {
            let items = next_inbox(&mut inbox).await;
            if items.iter().any(|i| i["type"] == "completion") {
                break;
            }
        }
        done.push(started.elapsed().as_secs_f64() * 1000.0);
        loop {
            let (event, data) = observer.next_push().await.unwrap();
            if event == "herd" && data["sheep"][0]["task"].is_null() {
                break;
            }
        }
        herd_view.push(started.elapsed().as_secs_f64() * 1000.0);
        let next = parent
            .call_value(
                "delegate",
                json!({ "target": id, "task": format!("bench {i}") }),
            )
            .await
            .unwrap();
        current = next["taskId"].as_str().unwrap().to_owned();
        next_inbox(&mut sheep).await;
        // The feed pushes only what differs from its last push: let it show the new task
        // before the next `done`, or a whole cycle inside one burst window would push nothing.
        loop {
            let (event, data) = observer.next_push().await.unwrap();
            if event == "herd" && data["sheep"][0]["task"]["id"] == current.as_str() {
                break;
            }
        }
    }
    summary(
        "done -> parent completion push (note finalised first)",
        done,
    );
    summary("done -> herd view pushed to an observer", herd_view);
}

async fn lifecycles(world: &World, clients: usize, per_client: usize) {
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    let mut puppets = Vec::new();
    for n in 1..=clients {
        puppets.push(puppet(world, &socket, &mut parent, n).await);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (id, mut sheep) in puppets {
        let socket = socket.clone();
        tasks.spawn(async move {
            let mut parent = connect(&socket, Role::Parent, None, None).await;
            let mut lifecycle = Vec::new();
            for i in 0..per_client {
                let t0 = Instant::now();
                let task = parent
                    .call_value("delegate", json!({ "target": id, "task": format!("t{i}") }))
                    .await
                    .unwrap();
                next_inbox(&mut sheep).await;
                sheep
                    .call_value("done", json!({ "status": "completed", "summary": "ok" }))
                    .await
                    .unwrap();
                let waited = parent
                    .call_value("wait", json!({ "id": task["taskId"], "timeoutMs": 30000 }))
                    .await
                    .unwrap();
                assert_eq!(waited["settled"][0]["status"], "completed");
                lifecycle.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            lifecycle
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.unwrap());
    }
    let wall = started.elapsed().as_secs_f64();
    let total = clients * per_client;
    println!(
        "note lifecycles, {clients} clients into one session: {total} in {wall:.2} s = {:.0}/s",
        total as f64 / wall
    );
    summary(
        "  one lifecycle (delegate, deliver, done, settled with final note)",
        all,
    );
    let herd = world.cli(&["herd"]);
    let sessions = world.project.join(".shepherd/sessions");
    let index = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .find(|e| e.path().join("shepherd.md").exists())
        .map(|e| std::fs::read_to_string(e.path().join("shepherd.md")).unwrap())
        .unwrap();
    let listed = index.lines().filter(|l| l.contains("— completed")).count();
    println!(
        "  notes listed completed in shepherd.md: {listed} (expected {total}); sheep alive: {}",
        herd["sheep"].as_array().unwrap().len()
    );
    assert_eq!(
        listed, total,
        "every lifecycle has its note listed exactly once"
    );
}

async fn spawn_overhead(world: &World, backend: &str, sandbox: &str, rounds: usize) {
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    world.define("sleeper", &["sleep", "3600"]);
    let mut ms = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let spawned = parent
            .call_value(
                "spawn",
                json!({ "agent": "sleeper", "backend": backend, "sandbox": sandbox }),
            )
            .await
            .unwrap();
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
        parent
            .call_value("close", json!({ "id": spawned["agentId"] }))
            .await
            .unwrap();
    }
    summary(
        &format!(
            "spawn -> ready, {backend}, sandbox {sandbox} (program start included; a `sleep`)"
        ),
        ms,
    );
}

fn proc_stat(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap();
    (ticks, hwm.parse().unwrap())
}

async fn crowd(world: &World, backend: &str, sheep: usize) {
    world.define(
        "crowd",
        &[
            bin("shepherd-test-sheep").to_str().unwrap(),
            "--on-task",
            "done completed ok {id}",
        ],
    );
    let socket = world.socket();
    let pid = world.cli(&["broker", "status"])["status"]["pid"]
        .as_u64()
        .unwrap() as u32;
    let (cpu0, _) = proc_stat(pid);
    let started = Instant::now();
    let mut spawns = tokio::task::JoinSet::new();
    let mut ids = Vec::new();
    for i in 0..sheep {
        let backend = backend.to_owned();
        if spawns.len() >= 16 {
            // At most 16 spawns in flight, as a parent fanning out would.
            ids.push(spawns.join_next().await.unwrap().unwrap());
        }
        let socket = socket.clone();
        spawns.spawn(async move {
            let mut client = connect(&socket, Role::Parent, None, None).await;
            let spawned = client
                .call_value(
                    "spawn",
                    json!({ "agent": "crowd", "label": format!("c{i}"), "backend": backend }),
                )
                .await
                .unwrap();
            let id = spawned["agentId"].as_str().unwrap().to_owned();
            let task = client
                .call_value(
                    "delegate",
                    json!({ "target": id, "task": format!("crowd {i}") }),
                )
                .await
                .unwrap();
            (client, id, task["taskId"].as_str().unwrap().to_owned())
        });
    }
    while let Some(done) = spawns.join_next().await {
        ids.push(done.unwrap());
    }
    let spawned_at = started.elapsed().as_secs_f64();
    let mut settled = 0;
    for (client, _, task) in &mut ids {
        let waited = client
            .call_value("wait", json!({ "id": task, "timeoutMs": 60000 }))
            .await
            .unwrap();
        if waited["settled"][0]["status"] == "completed" {
            settled += 1;
        }
    }
    let settled_at = started.elapsed().as_secs_f64();
    let (cpu_busy, _) = proc_stat(pid);
    let idle_from = Instant::now();
    // Idle CPU is measured over a fixed window while every sheep is alive and idle.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (cpu_idle_end, _) = proc_stat(pid);
    let idle_secs = idle_from.elapsed().as_secs_f64();
    let closing = Instant::now();
    let mut closes = tokio::task::JoinSet::new();
    for (mut client, id, _) in ids {
        closes.spawn(async move {
            client
                .call_value("close", json!({ "id": id }))
                .await
                .unwrap()
        });
    }
    while closes.join_next().await.is_some() {}
    let closed_in = closing.elapsed().as_secs_f64();
    let (cpu_end, hwm_kb) = proc_stat(pid);
    let hz = 100.0;
    println!(
        "{sheep} {backend} test sheep: spawned+delegated in {spawned_at:.2} s, all settled at {settled_at:.2} s; after the idle window all closed in {closed_in:.2} s (processes confirmed gone); {settled}/{sheep} completed"
    );
    println!(
        "  broker CPU {:.2} s for the run, idle CPU {:.3}% over {idle_secs:.1} s with {sheep} sheep alive, peak RSS {:.1} MB",
        (cpu_end - cpu0) as f64 / hz,
        (cpu_idle_end - cpu_busy) as f64 / hz / idle_secs * 100.0,
        hwm_kb as f64 / 1024.0
    );
    assert_eq!(settled, sheep, "nothing lost");
}

fn main() {
    let test_sheep = bin("shepherd-test-sheep");
    assert!(
        test_sheep.exists(),
        "{} is missing: run `cargo build --release -p shepherd-testkit` first",
        test_sheep.display()
    );
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if args.iter().any(|a| a == "fieldnotes") {
        let value = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let base = value("--base").map(PathBuf::from);
        let reps = value("--reps").map_or(if base.is_some() { 3 } else { 1 }, |n| {
            n.parse().expect("--reps N")
        });
        runtime.block_on(fieldnotes::run(quick, base, reps));
        return;
    }
    let tmux_installed = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if args.iter().any(|a| a == "thousand") {
        for crowd in thousand::Crowd::from_args(&args, tmux_installed) {
            runtime.block_on(thousand::run(&World::new(), &crowd));
        }
        return;
    }
    if args.iter().any(|a| a == "sandbox") {
        // What confining a sheep adds to its spawn: the same spawns with and without bubblewrap.
        let rounds = if quick { 10 } else { 30 };
        runtime.block_on(async {
            let world = World::new();
            let backends: &[&str] = if tmux_installed {
                &["headless", "tmux"]
            } else {
                &["headless"]
            };
            for backend in backends {
                for sandbox in ["off", "workspace", "strict"] {
                    spawn_overhead(&world, backend, sandbox, rounds).await;
                }
            }
            drop(world);
            sandbox_start::run(&World::new(), rounds).await;
        });
        return;
    }
    runtime.block_on(async {
        let world = World::new();
        latency(&world, if quick { 50 } else { 500 }).await;
        drop(world);
        let world = World::new();
        lifecycles(&world, 16, if quick { 10 } else { 50 }).await;
        drop(world);
        let world = World::new();
        spawn_overhead(&world, "headless", "off", if quick { 10 } else { 30 }).await;
        if tmux_installed {
            spawn_overhead(&world, "tmux", "off", if quick { 10 } else { 30 }).await;
        }
        drop(world);
        let world = World::new();
        crowd(&world, "headless", if quick { 40 } else { 200 }).await;
        drop(world);
        if tmux_installed {
            let world = World::new();
            crowd(&world, "tmux", 20).await;
        }
    });
}
