//! The herd an MCP host's server started can be found from the project without reading any
//! host's logs: `shepherd herds` lists it by its driver (the host's name from the MCP handshake
//! and its process), and `shepherd broker status` in the project shows its broker beside the
//! CLI's own (which does not run here).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use mcp_support::{HostOptions, Mcp, World, sheep};
use std::time::Duration;

use serde_json::json;

#[tokio::test]
async fn an_mcp_hosts_herd_is_listed_by_its_driver_and_in_broker_status() {
    let world = World::new();
    sheep(&world, "idle", "idle");
    // Nothing runs yet: no herd is listed.
    assert_eq!(world.json(&["herds"])["herds"], json!([]));

    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let spawned = mcp
        .call("shepherd_spawn", json!({"agent": "idle", "label": "found"}))
        .await;
    assert!(!spawned.is_error, "{}", spawned.text);

    let listed = world.json(&["herds"]);
    let herds = listed["herds"].as_array().unwrap();
    assert_eq!(herds.len(), 1, "{listed}");
    let herd = &herds[0];
    assert_eq!(herd["kind"], "mcp-host", "{herd}");
    assert!(
        herd["identity"].as_str().unwrap().starts_with("mcp-"),
        "{herd}"
    );
    assert_eq!(herd["sheep"], 1, "{herd}");
    let driver = herd["parents"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|parent| parent.get("driver"))
        .unwrap_or_else(|| panic!("no driver: {herd}"));
    // The server's parent is this test, the host; its name is the one it gave.
    assert_eq!(driver["name"], "mcp-test-host", "{herd}");
    assert_eq!(driver["pid"], std::process::id(), "{herd}");

    // The host holds more than one connection to its herd (calls, and the watch feeding its
    // inbox): one driver, listed once.
    let _inbox = mcp.call("shepherd_inbox", json!({"wait": 0})).await;
    let listed = world.json(&["herds"]);
    let herd = &listed["herds"][0];
    assert_eq!(herd["parents"].as_array().unwrap().len(), 1, "{herd}");
    let text = String::from_utf8(world.run(&["herds"]).stdout).unwrap();
    let driver_line = format!("MCP host mcp-test-host (pid {})", std::process::id());
    assert!(
        text.contains(herd["identity"].as_str().unwrap())
            && text.matches(&driver_line).count() == 1,
        "{text}"
    );
    let all = world.json(&["herds", "--all"]);
    assert_eq!(all["herds"], listed["herds"], "{all}");

    // The CLI's own herd has no broker, but the project's herd runs: status leads with it,
    // says the CLI's own is not running, and succeeds (a broker of this project answers).
    let (code, status) = world.json_status(&["broker", "status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["running"], false, "{status}");
    assert_eq!(status["herds"][0]["identity"], herd["identity"], "{status}");
    assert_eq!(
        status["herds"][0]["parents"].as_array().unwrap().len(),
        1,
        "{status}"
    );
    let said = String::from_utf8(world.run(&["broker", "status"]).stdout).unwrap();
    let first = said.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("1 herd of this project runs") && said.contains("MCP host"),
        "{said}"
    );
    assert!(said.matches(&driver_line).count() == 1, "{said}");
    assert!(
        said.contains("this CLI's own herd is not running"),
        "{said}"
    );
    // Asked for a herd by its parent, a herd that is not running is still exit 3.
    let (code, _) = world.json_status(&["broker", "status", "--parent-session", "no-such-parent"]);
    assert_eq!(code, 3);

    // The host's herd is its own: it ends with the server (its broker's process gone), and the
    // list is empty again.
    let broker_pid = u32::try_from(herd["brokerPid"].as_u64().unwrap()).unwrap();
    mcp.close().await;
    assert!(
        mcp_support::herd_support::wait_gone(broker_pid, Duration::from_secs(10)),
        "the herd's broker outlived its server"
    );
    let gone = world.json(&["herds"]);
    assert_eq!(gone["herds"], json!([]), "{gone}");
}
