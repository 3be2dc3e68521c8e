//! A sheep in a host's own Herdr: a loopback sshd host whose user runs a real Herdr server; a
//! spawn with `--host … --backend herdr` puts the sheep in a tab there (labelled with its
//! display name, for anyone looking at that Herdr), its task completes in the host's project,
//! and close removes the tab.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use herd_support::World;
use remote_support::*;
use serde_json::json;
use shepherd_testkit::fake_herdr::RealHerdr;
use shepherd_testkit::sshd::LoopbackHost;

#[test]
fn a_sheep_in_the_hosts_herdr_is_visible_there_and_gone_after_close() {
    if !required() {
        return;
    }
    let Some(herdr) = RealHerdr::start("herdr_real_remote::a_sheep_in_the_hosts_herdr") else {
        return;
    };
    herdr.call("workspace.create", &json!({"cwd": "/tmp", "label": "user"}));
    let bin = RealHerdr::binary().expect("the server started, so the binary is there");
    let devbox = LoopbackHost::start_with_env(
        "devbox",
        &[
            (
                "HERDR_SOCKET_PATH".to_owned(),
                herdr.socket().display().to_string(),
            ),
            ("HERDR_BIN_PATH".to_owned(), bin.display().to_string()),
        ],
    )
    .unwrap();
    let world = World::new();
    define_hosts(&world, &[&devbox], json!({}));
    define_scribe(&world, "scribe", None);
    let spawned = world.json(&[
        "spawn",
        "scribe",
        "--label",
        "shown",
        "--host",
        "devbox",
        "--backend",
        "herdr",
    ]);
    assert_eq!(spawned["backend"], "herdr", "{spawned}");
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let labelled = || {
        herdr.call("pane.list", &json!({}))["panes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|pane| pane["label"] == "scribe: shown")
    };
    assert!(
        labelled(),
        "the sheep has a labelled pane in the host's Herdr"
    );
    let task = delegate(&world, &agent, "in herdr");
    let done = settled(&world, &task, 60);
    assert_eq!(
        done["summary"],
        format!("did: in herdr in {}", devbox.project.display())
    );
    world.json(&["close", &agent]);
    wait_for(|| !labelled());
    wait_no_process(&agent, std::time::Duration::from_secs(10));
}
