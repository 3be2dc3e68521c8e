//! Remote sheep benchmark (a bench binary, not a timed test): what running a sheep on another
//! machine costs over running it here, with real OpenSSH servers on 127.0.0.1 standing in for
//! the hosts. Run with `cargo bench -p shepherd --bench remote` (add `-- --quick` for fewer
//! rounds). Needs `/usr/sbin/sshd` (scripts/setup installs it).
//!
//! Measures, with the real `shepherd` binary and shell sheep that loop on
//! `shepherd inbox --wait` / `shepherd done` as the README shows:
//! 1. spawn → ready (the spawn command's wall time) here, on a host over a link already up,
//!    and the first spawn on a host (which opens the link);
//! 2. `done` → parent notified: from the moment the sheep runs `shepherd done` until the
//!    parent's `shepherd watch` returns with the settlement, here and on a host;
//! 3. delegate + watch: from the `delegate` command's start until the parent's `watch`
//!    returns the completed task (the sheep answers at once), here and on a host; with
//!    `SHEPHERD_BENCH_BEFORE=<another shepherd binary>` the same rounds run interleaved with that
//!    build too, each build in a world (and a link) of its own, so two builds compare in one run;
//! 4. 50 sheep across two hosts: spawned together, then one task each, all completed.

// Benches set up files and run processes directly; clippy.toml's rules are for the code.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_testkit::sshd::{self, LoopbackHost};

/// Waits at `$GATE/<task>` when `$GATE` is set, stamps the time into `$GATE/<task>.done`, then
/// finishes the task.
const LOOP: &str = r#"while :; do t=$(shepherd inbox --wait 60) || continue; [ -n "$t" ] || continue; if [ -n "$GATE" ]; then while [ ! -e "$GATE/$t" ]; do sleep 0.01; done; date +%s%N > "$GATE/$t.done"; fi; shepherd done --status completed --summary ok >/dev/null; done"#;

struct World {
    bin: PathBuf,
    dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
}

impl World {
    fn new(hosts: &[&LoopbackHost], bin: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        let gate = dir.path().join("gate");
        for d in [&home, &runtime, &project, &gate] {
            std::fs::create_dir_all(d).unwrap();
        }
        let agents = home.join(".pi/agent/agents");
        std::fs::create_dir_all(&agents).unwrap();
        let script = format!("GATE={}; {LOOP}", gate.display());
        std::fs::write(
            agents.join("echo.md"),
            format!(
                "---\nname: echo\ndescription: bench sheep\ncommand: {}\n---\nbench\n",
                serde_json::to_string(&["sh", "-c", &script]).unwrap()
            ),
        )
        .unwrap();
        let mut settings = json!({ "hosts": {} });
        for host in hosts {
            settings["hosts"][&host.alias] = json!({
                "destination": host.alias,
                "projectPath": host.project,
                "shepherd": bin,
                "sshArgs": ["-F", host.ssh_config().unwrap()],
            });
        }
        let config = home.join(".pi/agent/pi-shepherd");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.json"), settings.to_string()).unwrap();
        let project = project.canonicalize().unwrap();
        Self {
            bin: bin.to_owned(),
            dir,
            home,
            runtime,
            project,
        }
    }

    fn gate(&self) -> PathBuf {
        self.dir.path().join("gate")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .arg("--json")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime);
        command
    }

    fn json(&self, args: &[&str]) -> Value {
        let output = self.command(args).output().unwrap();
        let doc = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        assert!(
            output.status.success(),
            "shepherd {args:?}: {doc} {}",
            String::from_utf8_lossy(&output.stderr)
        );
        doc
    }

    fn spawn(&self, label: &str, host: Option<&str>) -> String {
        let mut args = vec!["spawn", "echo", "--label", label];
        if let Some(host) = host {
            args.extend(["--host", host]);
        }
        self.json(&args)["agentId"].as_str().unwrap().to_owned()
    }
}

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: n = {}, p50 {:.1} ms, max {:.1} ms",
        samples.len(),
        ms(samples[samples.len() / 2]),
        ms(*samples.last().unwrap())
    );
}

/// `done` → the parent's watch returns, for one task named `word` of `agent`.
fn done_to_notified(world: &World, agent: &str, word: &str) -> Duration {
    let task = world.json(&["delegate", agent, word])["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watch: Child = world
        .command(&["watch", &task, "--wait", "60"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The watch connects before the sheep is let go (its settlement must not be there yet).
    std::thread::sleep(Duration::from_millis(150));
    std::fs::write(world.gate().join(word), "").unwrap();
    let output = watch.wait_with_output().unwrap();
    let seen = epoch_ns();
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["settled"][0]["status"], "completed", "{doc}");
    let stamp = read_stamp(&world.gate().join(format!("{word}.done")));
    Duration::from_nanos(u64::try_from(seen.saturating_sub(stamp)).unwrap_or(0))
}

/// From `delegate` to the parent's `watch` returning the completed task, for one task named
/// `word` of `agent` (its gate opened first: the sheep answers at once).
fn delegate_and_watch(world: &World, agent: &str, word: &str) -> Duration {
    std::fs::write(world.gate().join(word), "").unwrap();
    let start = Instant::now();
    let task = world.json(&["delegate", agent, word])["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let doc = world.json(&["watch", &task, "--wait", "60"]);
    let took = start.elapsed();
    assert_eq!(doc["settled"][0]["status"], "completed", "{doc}");
    took
}

/// Row 3: delegate + watch in each build's world, rounds interleaved across the builds.
fn delegate_rows(builds: &[(&str, &World)], rounds: usize) {
    let sheep: Vec<(String, String)> = builds
        .iter()
        .map(|(_, world)| {
            (
                world.spawn("dw-here", None),
                world.spawn("dw-there", Some("devbox")),
            )
        })
        .collect();
    let mut samples = vec![(Vec::new(), Vec::new()); builds.len()];
    for round in 0..rounds {
        for (at, (_, world)) in builds.iter().enumerate() {
            let (here, there) = &sheep[at];
            samples[at]
                .0
                .push(delegate_and_watch(world, here, &format!("dh{round}")));
            samples[at]
                .1
                .push(delegate_and_watch(world, there, &format!("dt{round}")));
        }
    }
    for ((name, world), ((here, there), (local, remote))) in
        builds.iter().zip(samples.into_iter().zip(&sheep))
    {
        summary(&format!("delegate + watch, here ({name})"), here);
        summary(&format!("delegate + watch, on a host ({name})"), there);
        world.json(&["close", local]);
        world.json(&["close", remote]);
    }
}

fn epoch_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn read_stamp(path: &Path) -> u128 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn main() {
    if !sshd::available() {
        eprintln!("no sshd at {}: nothing to measure", sshd::SSHD);
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 10 };
    let devbox = LoopbackHost::start("devbox").unwrap();
    let container = LoopbackHost::start("container").unwrap();
    let this_build = PathBuf::from(env!("CARGO_BIN_EXE_shepherd"));
    let world = World::new(&[&devbox, &container], &this_build);

    let start = Instant::now();
    let first = world.spawn("first", Some("devbox"));
    summary(
        "first spawn on a host (opens the link) → ready",
        vec![start.elapsed()],
    );
    let mut here = Vec::new();
    let mut there = Vec::new();
    let mut local_sheep = Vec::new();
    let mut remote_sheep = vec![first];
    for round in 0..rounds {
        let start = Instant::now();
        local_sheep.push(world.spawn(&format!("l{round}"), None));
        here.push(start.elapsed());
        let start = Instant::now();
        remote_sheep.push(world.spawn(&format!("r{round}"), Some("devbox")));
        there.push(start.elapsed());
    }
    summary("spawn → ready, here", here);
    summary("spawn → ready, on a host (link up)", there);

    let mut here = Vec::new();
    let mut there = Vec::new();
    for round in 0..rounds {
        here.push(done_to_notified(
            &world,
            &local_sheep[round],
            &format!("l{round}"),
        ));
        there.push(done_to_notified(
            &world,
            &remote_sheep[round],
            &format!("r{round}"),
        ));
    }
    summary("done → parent notified, here", here);
    summary("done → parent notified, on a host", there);
    for agent in local_sheep.iter().chain(&remote_sheep) {
        world.json(&["close", agent]);
    }

    let before = std::env::var_os("SHEPHERD_BENCH_BEFORE").map(PathBuf::from);
    let before_world = before
        .as_deref()
        .map(|bin| World::new(&[&devbox, &container], bin));
    let mut builds = vec![("this build", &world)];
    if let Some(before_world) = &before_world {
        builds.insert(0, ("SHEPHERD_BENCH_BEFORE", before_world));
    }
    delegate_rows(&builds, rounds);
    if let Some(before_world) = &before_world {
        before_world.json(&["broker", "stop"]);
    }

    // Fifty sheep across two hosts, spawned together, then one task each.
    let count = if quick { 10 } else { 50 };
    let start = Instant::now();
    let spawned: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count)
            .map(|i| {
                let world = &world;
                scope.spawn(move || {
                    let host = if i % 2 == 0 { "devbox" } else { "container" };
                    world.spawn(&format!("m{i}"), Some(host))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let spawn_all = start.elapsed();
    let start = Instant::now();
    let tasks: Vec<String> = spawned
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let word = format!("m{i}");
            std::fs::write(world.gate().join(&word), "").unwrap();
            world.json(&["delegate", agent, &word])["taskId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut args = vec!["watch"];
    args.extend(tasks.iter().map(String::as_str));
    args.extend(["--wait", "120"]);
    let watched = world.json(&args);
    let completed = watched["settled"].as_array().map_or(0, |s| {
        s.iter().filter(|t| t["status"] == "completed").count()
    });
    let tasks_all = start.elapsed();
    assert_eq!(completed, count, "{watched}");
    println!(
        "{count} sheep across two hosts: all spawned in {:.2} s, one task each all completed in {:.2} s",
        spawn_all.as_secs_f64(),
        tasks_all.as_secs_f64()
    );
    world.json(&["broker", "stop"]);
}
