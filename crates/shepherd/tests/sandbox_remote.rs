//! A confined sheep on a host: a real OpenSSH server on 127.0.0.1 stands in for a dev box. A
//! `command` sheep spawned there with `--sandbox workspace` runs under the host's supervisor in
//! the real bubblewrap, cannot read the host user's files, still writes its note (which comes
//! home) and completes, and leaves no process behind when closed.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use herd_support::World;
use remote_support::*;
use shepherd_testkit::sshd::LoopbackHost;

#[test]
fn a_confined_sheep_on_a_host_cannot_read_the_hosts_home_and_completes() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    std::fs::write(devbox.home.join("secret.txt"), "the host's own\n").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let script = "t=$(shepherd inbox --wait 60); note=$(shepherd note); \
                  if cat \"$HOME/secret.txt\" >/dev/null 2>&1; then r=read-secret; else r=no-secret; fi; \
                  printf '\\nConfined: %s\\n' \"$r\" >> \"$note\"; \
                  shepherd done --status completed --summary \"$r in $PWD\"; sleep 60";
    world.define("guarded", &["sh".into(), "-c".into(), script.into()]);
    let spawned = world.json(&[
        "spawn",
        "guarded",
        "--host",
        "devbox",
        "--sandbox",
        "workspace",
    ]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let status = world.json(&["status", &agent]);
    assert_eq!(status["sandbox"], "workspace", "{status}");
    assert_eq!(status["host"], "devbox", "{status}");

    let done = settled(&world, &delegate(&world, &agent, "look around"), 60);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["summary"],
        format!("no-secret in {}", devbox.project.display()),
        "{done}"
    );
    let note = std::fs::read_to_string(done["note"].as_str().unwrap()).unwrap();
    assert!(note.contains("Confined: no-secret"), "{note}");
    world.json(&["close", &agent]);
    wait_no_process(&agent, std::time::Duration::from_secs(10));
}
