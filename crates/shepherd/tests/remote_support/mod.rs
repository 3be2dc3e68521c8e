//! A world with loopback hosts: a private `sshd` per host, defined in the world's user
//! settings as a user would define a dev box, and a shell sheep that works on its host.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use shepherd_testkit::procs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_testkit::sshd::{self, LoopbackHost};

use crate::herd_support::{World, shepherd_bin};

pub use sshd::required;

/// A host's definition as the user settings hold it.
pub fn host_def(host: &LoopbackHost) -> Value {
    json!({
        "destination": host.alias,
        "projectPath": host.project,
        "shepherd": shepherd_bin(),
        "sshArgs": ["-F", host.ssh_config().unwrap()],
    })
}

/// Writes the world's user settings: these hosts, and `extra` keys.
pub fn define_hosts(world: &World, hosts: &[&LoopbackHost], extra: Value) {
    let mut settings = json!({ "hosts": {} });
    for host in hosts {
        settings["hosts"][&host.alias] = host_def(host);
    }
    if let Value::Object(extra) = extra {
        for (key, value) in extra {
            settings[key] = value;
        }
    }
    world.settings(&settings.to_string());
}

/// A shell sheep: for each task it writes a line into its note (naming its `HOME`), waits
/// while `gate` (a file, when given) does not exist, writes a last line (`Finished: <task>`)
/// and finishes with its task and directory.
pub fn define_scribe(world: &World, name: &str, gate: Option<&Path>) {
    let wait = gate.map_or_else(String::new, |gate| {
        format!("while [ ! -e '{}' ]; do sleep 0.05; done; ", gate.display())
    });
    let script = format!(
        "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
         note=$(shepherd note); printf '\\nWritten in %s: %s\\n' \"$HOME\" \"$t\" >> \"$note\"; \
         {wait}printf 'Finished: %s\\n' \"$t\" >> \"$note\"; \
         shepherd done --status completed --summary \"did: $t in $PWD\"; done"
    );
    world.define(name, &["sh".into(), "-c".into(), script]);
}

/// Spawns `agent` on `host` and returns its agent id.
pub fn spawn_on(world: &World, agent: &str, host: &str) -> String {
    let spawned = world.json(&["spawn", agent, "--host", host]);
    spawned["agentId"].as_str().unwrap().to_owned()
}

/// Delegates and returns the task id.
pub fn delegate(world: &World, agent: &str, task: &str) -> String {
    world.json(&["delegate", agent, task])["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits for `task` to settle (`secs` at most) and returns what settled.
pub fn settled(world: &World, task: &str, secs: u32) -> Value {
    let watched = world.json(&["watch", task, "--wait", &secs.to_string()]);
    let settled = watched["settled"][0].clone();
    assert!(!settled.is_null(), "{task} did not settle: {watched}");
    settled
}

/// The running processes whose command line mentions `needle`, other than this test's own, as
/// `pid command line`.
pub fn processes_naming(needle: &str) -> Vec<String> {
    procs::all()
        .into_iter()
        .filter(|process| process.command_line_holds(needle))
        .map(|process| format!("{} {}", process.pid, process.command_line()))
        .collect()
}

/// Waits until no process mentions `needle` (`within` at most).
pub fn wait_no_process(needle: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let left = processes_naming(needle);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still running: {left:#?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The broker's SSH master connection to `host`, if it runs.
pub fn master_pid(world: &World, host: &str) -> Option<u32> {
    let needle = format!("{}/", world.runtime.display());
    processes_naming(&format!("/{host}."))
        .into_iter()
        .filter(|line| line.contains(" -M ") && line.contains(".ctl") && line.contains(&needle))
        .find_map(|line| line.split_whitespace().next()?.parse().ok())
}

/// Drops the host's link and keeps it down: its server stops (no new connection) and the
/// broker's master connection is killed; returns once the broker has noticed.
pub fn drop_link(world: &World, host: &mut LoopbackHost) {
    host.kill();
    let master = master_pid(world, &host.alias).expect("the broker holds a master connection");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(master).unwrap()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    wait_for(|| master_pid(world, &host.alias).is_none_or(|pid| pid != master));
}

/// Waits until `ok` (30 s at most).
pub fn wait_for(mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}
