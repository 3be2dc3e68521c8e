//! Attacks on what Shepherd keeps on a host: a confined sheep on a real OpenSSH server on
//! 127.0.0.1 turns the files the broker's unconfined steps read and write there into links.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use herd_support::World;
use remote_support::*;
use shepherd_testkit::sshd::LoopbackHost;

/// A confined sheep on a host turns the copies Shepherd keeps there into links: its note to a
/// host file it cannot read, and the session's `shepherd.md` to a host file it cannot write.
/// The broker's own steps on the host run unconfined, so they must follow no link a sheep made:
/// the secret never reaches the note, and the planted file is never written.
#[test]
fn a_confined_sheep_on_a_host_cannot_turn_the_note_copies_into_links() {
    if !required() {
        return;
    }
    let devbox = LoopbackHost::start("devbox").unwrap();
    std::fs::write(devbox.home.join("secret.txt"), "the host's own\n").unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], serde_json::json!({}));
    let planted = devbox.home.join("planted.txt");
    let script = format!(
        "while :; do t=$(shepherd inbox --wait 60) || continue; [ -n \"$t\" ] || continue; \
         note=$(shepherd note); session=$(dirname \"$note\"); \
         if [ \"$t\" = first ]; then \
           rm -f \"$session/shepherd.md\"; ln -s '{planted}' \"$session/shepherd.md\"; \
           rm -f \"$note\"; ln -s \"$HOME/secret.txt\" \"$note\"; \
         fi; \
         shepherd done --status completed --summary \"did $t\"; done",
        planted = planted.display()
    );
    world.define("linker", &["sh".into(), "-c".into(), script]);
    let spawned = world.json(&[
        "spawn",
        "linker",
        "--host",
        "devbox",
        "--sandbox",
        "workspace",
    ]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let first = settled(&world, &delegate(&world, &agent, "first"), 60);
    assert_eq!(first["status"], "completed", "{first}");
    let note = std::fs::read_to_string(first["note"].as_str().unwrap()).unwrap();
    assert!(
        !note.contains("the host's own"),
        "a host file the sheep cannot read reached its note:\n{note}"
    );
    let second = settled(&world, &delegate(&world, &agent, "second"), 60);
    assert_eq!(second["status"], "completed", "{second}");
    assert!(
        !planted.exists(),
        "the session's copy was written through the sheep's link into {}: {:?}",
        planted.display(),
        std::fs::read_to_string(&planted)
    );
    world.json(&["close", &agent]);
}
