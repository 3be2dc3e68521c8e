//! The attack suite's tools: attacker sheep written in Python (what the report's own attacker
//! was written in), each a real program run by the real supervisor in the real bubblewrap,
//! that tries one escape and reports what it saw as JSON in its `done` summary. The test then
//! looks outside the sandbox for what would prove the escape (a file written, a connection
//! made, a process left) and reads the attacker's own account.
//!
//! The suite runs as root and, in CI, again as an unprivileged user (`scripts/test-all`), so
//! every attack is tried both ways; [`is_root`] says which this is, for the few attacks that
//! only root's capabilities make possible.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::herd_support::World;

pub mod git;

/// What every attacker starts with: its task, its report, and raw requests on the broker
/// socket (`request`), as the report's attacker spoke to it.
const PRELUDE: &str = r#"
import json, os, socket, subprocess, sys
SOCKET = os.environ["SHEPHERD_SOCKET"]
PROTOCOL = __PROTOCOL__

def task():
    out = subprocess.run(["shepherd", "inbox", "--wait", "60"], capture_output=True, text=True)
    return out.stdout.strip()

def done(findings, status="completed"):
    subprocess.run(["shepherd", "done", "--status", status, "--summary",
                    json.dumps(findings, sort_keys=True)], check=True)

def request(conn, method, params, id=1):
    conn.sendall((json.dumps({"id": id, "method": method, "params": params}) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    return json.loads(buf.splitlines()[0]) if buf else {"error": {"code": "closed"}}

def outcome(answer):
    return answer.get("error", {}).get("code") or "granted"

def herd_key():
    try:
        with open(SOCKET[:-len(".sock")] + ".key") as f:
            return f.read().strip()
    except OSError:
        return None

def try_(f):
    try:
        return f()
    except Exception as e:
        return "refused: " + type(e).__name__
"#;

/// Whether this test process runs as root.
pub fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// Writes the attacker `name` (the prelude, then `body`) and a definition that runs it with
/// `frontmatter` (`sandbox:`, `network:`…). Returns the script's path.
pub fn define_attacker(world: &World, name: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = world.dir.path().join("attackers");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join(format!("{name}.py"));
    let prelude = PRELUDE.replace(
        "__PROTOCOL__",
        &shepherd_core::protocol::PROTOCOL_VERSION.to_string(),
    );
    std::fs::write(&script, format!("{prelude}\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command =
        serde_json::to_string(&["/usr/bin/python3", &script.display().to_string()]).unwrap();
    world.define_file(
        name,
        &format!(
            "---\nname: {name}\ndescription: An attacker sheep.\ncommand: {command}\n{frontmatter}\n---\nAn attacker.\n"
        ),
    );
    script
}

/// Runs the attacker `name` on `task` (`shepherd run`, extra `args`) and returns its findings:
/// the JSON its summary holds.
pub fn attack(world: &World, name: &str, task: &str, args: &[&str]) -> Value {
    let mut argv = vec!["run", name, task, "--json"];
    argv.extend_from_slice(args);
    let out = world.run(&argv);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "shepherd run {name}: {err}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary = report["results"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} left no summary: {report}"));
    serde_json::from_str(summary).unwrap_or_else(|err| panic!("{name}: {err}: {summary}"))
}

/// A path outside every sandbox that an escape would write: it must not exist afterwards.
pub fn proof(world: &World, name: &str) -> PathBuf {
    world.home.join(format!("proof-{name}"))
}

/// Waits until `path` exists, woken by its directory's changes, within `limit`; false when it
/// never appeared.
pub fn appears(path: &Path, limit: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let deadline = Instant::now() + limit;
    let watch = shepherd_term::platform::dir_watch(path.parent().unwrap()).unwrap();
    loop {
        if path.exists() {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = rustix::event::Timespec::try_from(left).unwrap();
        let mut fds = [PollFd::new(&watch, PollFlags::IN)];
        let _woken = poll(&mut fds, Some(&timeout));
        // Drain the events: only the file's existence matters.
        let mut buf = [0u8; 4096];
        let _drained = rustix::io::read(&watch, &mut buf);
    }
}
