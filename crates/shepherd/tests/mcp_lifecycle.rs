//! How `shepherd mcp` ends: hosts stop their MCP servers by SIGINT (Claude Code), SIGTERM
//! (Codex, Gemini CLI) or by closing stdin (opencode), and each is a normal end — exit status
//! 0, and the herd that was the server's own closed with it (no sheep, supervisor or broker
//! left). The server is driven here with raw JSON-RPC lines, as a host sends them.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;
use shepherd_testkit::procs;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_support::herd_support::wait_gone;
use mcp_support::{World, sheep};
use serde_json::{Value, json};

/// Reads lines until the response to request `id` (notifications are skipped).
fn response(lines: &mut std::io::Lines<BufReader<ChildStdout>>, id: u64) -> Value {
    for line in lines.by_ref() {
        let value: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if value["id"] == json!(id) {
            return value;
        }
    }
    panic!("the server closed stdout before answering request {id}");
}

fn send(child: &mut Child, message: &Value) {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

/// Waits (up to `within`) for the child to exit; its exit status.
fn exited(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let pid = child.id();
    assert!(
        wait_gone(pid, within),
        "the server did not end within {within:?}"
    );
    child.wait().unwrap()
}

#[test]
fn sigint_sigterm_and_stdin_eof_are_each_a_normal_end() {
    for end in ["INT", "TERM", "EOF"] {
        let world = World::new();
        sheep(&world, "idle", "idle");
        let mut child = world
            .command(&["mcp", "--project", "."])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-host", "version": "1"}}});
        send(&mut child, &hello);
        assert_eq!(
            response(&mut lines, 1)["result"]["protocolVersion"],
            "2025-06-18"
        );
        send(
            &mut child,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        let spawn = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "shepherd_spawn", "arguments": {"agent": "idle", "label": end}}});
        send(&mut child, &spawn);
        let spawned = response(&mut lines, 2);
        assert_ne!(spawned["result"]["isError"], json!(true), "{spawned}");
        assert!(
            !procs::with_home(&world.home).is_empty(),
            "no sheep running"
        );

        let started = Instant::now();
        if end == "EOF" {
            drop(child.stdin.take());
        } else {
            let sent = Command::new("kill")
                .args([format!("-{end}"), child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let status = exited(&mut child, Duration::from_secs(30));
        assert!(status.success(), "{end}: the server exited with {status}");
        let left = procs::with_home(&world.home);
        assert!(
            left.iter()
                .all(|pid| wait_gone(*pid, Duration::from_secs(10))),
            "{end}: left running after {:?}: {left:?}",
            started.elapsed()
        );
    }
}
