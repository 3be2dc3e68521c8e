//! `shepherd run` with sheep in real tmux panes (a private tmux server per test): the sheep's
//! process always ends with the run, and its pane stays for inspection only while the
//! `keepOpen` setting is on.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use herd_support::World;

fn window_names(world: &World) -> String {
    world.tmux(&["list-windows", "-a", "-F", "#{window_name}"])
}

#[test]
fn with_keep_open_the_pane_stays_but_the_sheep_ends() {
    let world = World::new().with_private_tmux();
    world.define_test_sheep("echo", "print echoing {task}; done completed echoed", None);
    let (code, doc) = world.json_status(&[
        "run",
        "echo",
        "the screen",
        "--backend",
        "tmux",
        "--label",
        "kept",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["results"][0]["text"], "echoed");
    let agent = doc["results"][0]["agentId"].as_str().unwrap();
    assert_eq!(procs::mentioning(agent), Vec::<u32>::new());
    assert!(
        window_names(&world).contains("echo: kept"),
        "{}",
        window_names(&world)
    );
}

#[test]
fn without_keep_open_the_pane_goes_too() {
    let world = World::new().with_private_tmux();
    world.settings(r#"{"keepOpen": false}"#);
    world.define_test_sheep("echo", "done completed echoed", None);
    let (code, doc) = world.json_status(&[
        "run",
        "echo",
        "the screen",
        "--backend",
        "tmux",
        "--label",
        "gone",
    ]);
    assert_eq!(code, 0, "{doc}");
    let agent = doc["results"][0]["agentId"].as_str().unwrap();
    assert_eq!(procs::mentioning(agent), Vec::<u32>::new());
    // Closing the last window may end the private tmux server, so an error listing counts as
    // no windows.
    let listed = std::process::Command::new("tmux")
        .args(["list-windows", "-a", "-F", "#{window_name}"])
        .env_remove("TMUX")
        .env("TMUX_TMPDIR", world.tmux_dir.as_ref().unwrap())
        .output()
        .unwrap();
    let windows = String::from_utf8_lossy(&listed.stdout);
    assert!(!windows.contains("echo: gone"), "{windows}");
}
