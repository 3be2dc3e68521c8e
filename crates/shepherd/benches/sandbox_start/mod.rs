//! Spawn → the sheep's program running, without a sandbox and in each (`workspace`, `strict`),
//! in the project and in a worktree of its own (`--isolate`): what confining a sheep costs
//! before its program does anything (`cargo bench -p shepherd --bench broker -- sandbox`).
//!
//! Spawn → ready is not it: a sheep is ready once its supervisor has started bubblewrap, and the
//! namespaces, mounts, the terminal guard and the Landlock scope come after. Here the sheep's
//! program itself says it runs: its first act is to create a file named after it in the
//! session directory (the one place every sheep, confined or not, isolated or not, may write),
//! which an inotify watch started before the spawn sees.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use shepherd_core::protocol::Role;

use super::{World, connect, summary};

/// Every file created in `dir` from now on, with when it was seen, on `files`.
fn watch(dir: &Path) -> mpsc::Receiver<(String, Instant)> {
    let (send, files) = mpsc::channel();
    let fd = shepherd_term::platform::dir_watch(dir).unwrap();
    // Waits on its own thread (the watch does not block): the event's arrival is the time.
    std::thread::spawn(move || {
        use rustix::event::{PollFd, PollFlags, poll};
        let mut buf = [0u8; 4096];
        loop {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            if poll(&mut fds, None).is_err() {
                return;
            }
            let seen = Instant::now();
            let n = match rustix::io::read(&fd, &mut buf) {
                Ok(n) => n,
                Err(rustix::io::Errno::AGAIN) => continue,
                Err(_) => return,
            };
            let mut at = 0;
            while at + 16 <= n {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let name = String::from_utf8_lossy(&buf[at + 16..at + 16 + len])
                    .trim_end_matches('\0')
                    .to_owned();
                if send.send((name, seen)).is_err() {
                    return;
                }
                at += 16 + len;
            }
        }
    });
    files
}

/// Measures `rounds` spawns of each sandbox, in the project and isolated.
pub(crate) async fn run(world: &World, rounds: usize) {
    let git = shepherd_testkit::git::git;
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "bench\n").unwrap();
    git(&world.project, &["add", "README.md"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    let sessions = world.project.join(".shepherd/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    world.define(
        "starter",
        &[
            "sh",
            "-c",
            "touch \"$SHEPHERD_PROJECT/.shepherd/sessions/ran-$SHEPHERD_AGENT_ID\"; exec sleep 3600",
        ],
    );
    let files = watch(&sessions);
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    for isolate in [false, true] {
        for sandbox in ["off", "workspace", "strict"] {
            let mut ms = Vec::new();
            for _ in 0..rounds {
                let started = Instant::now();
                let spawned = parent
                    .call_value(
                        "spawn",
                        json!({ "agent": "starter", "sandbox": sandbox, "isolate": isolate }),
                    )
                    .await
                    .unwrap();
                let id = spawned["agentId"].as_str().unwrap().to_owned();
                let wanted = format!("ran-{id}");
                let seen = loop {
                    let (name, seen) = files
                        .recv_timeout(Duration::from_secs(30))
                        .expect("the sheep's program never ran");
                    if name == wanted {
                        break seen;
                    }
                };
                ms.push(seen.duration_since(started).as_secs_f64() * 1000.0);
                parent
                    .call_value("close", json!({ "id": id }))
                    .await
                    .unwrap();
            }
            let place = if isolate {
                "isolated"
            } else {
                "in the project"
            };
            summary(
                &format!("spawn -> program running, {place}, sandbox {sandbox}"),
                ms,
            );
        }
    }
}
