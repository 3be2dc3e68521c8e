//! Starting a broker that is not running, the same way whoever starts it.
//!
//! A herd's broker may be started by the parent's first command, by a later command after a
//! crash, or by one of the herd's own supervisors when the broker died while no parent was
//! attached. Whichever it is, the broker must be the same: it runs with the environment
//! recorded when the herd was created (`env.json` in the broker's state directory: the tmux
//! and Herdr sockets, PATH, HOME, XDG directories, the pi agent directory), not the starter's.
//! What to start is recorded beside it (`start.json`), so a supervisor that knows only the
//! broker's state directory can bring it back.
//!
//! The broker detaches itself (`--detach`: it is re-executed by a short-lived intermediate that
//! exits at once), so it never stays a child of whoever started it.

// This module owns the broker's process: it starts it.
#![allow(clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::UnixStream;

use super::ClientError;

/// Variables never recorded for a herd: they are the capability of whoever started the broker
/// (a sheep starting a herd of its own), not part of the herd's world.
const NOT_RECORDED: &[&str] = &[
    "SHEPHERD_AGENT_ID",
    "SHEPHERD_TOKEN",
    "SHEPHERD_SOCKET",
    "SHEPHERD_SUPERVISOR_TOKEN",
    "SHEPHERD_BROKER_STATE",
];

/// How to start a broker that is not running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartSpec {
    /// The `shepherd` executable.
    pub exe: PathBuf,
    /// The parent identity.
    pub identity: String,
    /// The canonical project root.
    pub project_root: PathBuf,
    /// How deep in nested herds this parent is (0 for a person or a top-level agent).
    pub depth: u32,
    /// The broker's durable directory (where the recorded environment lives).
    pub state_dir: PathBuf,
    /// Environment overrides for the broker process, on top of the recorded environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
}

/// Where the environment recorded for a herd is kept.
pub fn env_file(state_dir: &Path) -> PathBuf {
    state_dir.join("env.json")
}

/// Where a broker records how to start it again.
pub fn spec_file(state_dir: &Path) -> PathBuf {
    state_dir.join("start.json")
}

/// The environment recorded for the herd whose broker keeps its state in `state_dir`.
pub fn recorded_env(state_dir: &Path) -> Option<BTreeMap<String, String>> {
    let bytes = fs_err::read(env_file(state_dir)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Records `vars` as the herd's environment unless one is recorded already (a restarted
/// broker keeps the herd's first one). Capabilities are left out.
pub fn record_env(
    state_dir: &Path,
    vars: impl IntoIterator<Item = (String, String)>,
) -> std::io::Result<()> {
    let file = env_file(state_dir);
    if file.exists() {
        return Ok(());
    }
    let vars: BTreeMap<String, String> = vars
        .into_iter()
        .filter(|(name, _)| !NOT_RECORDED.contains(&name.as_str()))
        .collect();
    let bytes = serde_json::to_vec_pretty(&vars).map_err(std::io::Error::other)?;
    shepherd_fs::write_atomic(&file, &bytes, Some(0o600))
}

/// Forgets the recorded environment: the herd ended, and the next broker starts a new one.
pub fn forget_env(state_dir: &Path) {
    let _gone = fs_err::remove_file(env_file(state_dir));
}

/// The start spec a broker recorded in `state_dir`.
pub fn recorded_spec(state_dir: &Path) -> Result<StartSpec, ClientError> {
    let file = spec_file(state_dir);
    let bytes = fs_err::read(&file).map_err(|err| ClientError::Start(err.to_string()))?;
    serde_json::from_slice(&bytes)
        .map_err(|err| ClientError::Start(format!("{}: {err}", file.display())))
}

/// Makes sure a broker answers on `socket`, starting one with `spec` if none does, and waits
/// (up to `timeout`) for it to say it is ready. Two starters racing is fine: the broker's lock
/// lets one run, and the other says `ready` for it.
pub async fn ensure_broker(
    socket: &Path,
    spec: &StartSpec,
    timeout: Duration,
) -> Result<(), ClientError> {
    if UnixStream::connect(socket).await.is_ok() {
        return Ok(());
    }
    let mut command = tokio::process::Command::new(&spec.exe);
    command
        .arg("broker")
        .arg("serve")
        .arg("--parent-session")
        .arg(&spec.identity)
        .arg("--project")
        .arg(&spec.project_root)
        .arg("--depth")
        .arg(spec.depth.to_string())
        .arg("--notify-ready")
        .arg("--detach");
    if let Some(recorded) = recorded_env(&spec.state_dir) {
        command.env_clear().envs(recorded);
    }
    command
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().map_err(|err| {
        ClientError::Start(format!(
            "cannot start the broker `{}`: {err}",
            spec.exe.display()
        ))
    })?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(timeout, lines.next_line()).await;
    // The intermediate exits as soon as the broker runs; never leave it a zombie.
    let _reaped = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    let line = match first {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None) | Err(_)) => {
            return Err(ClientError::Start(
                "the broker exited before it was ready; see its log under the Shepherd state directory"
                    .to_owned(),
            ));
        }
        Err(_) => {
            return Err(ClientError::Start(format!(
                "the broker did not become ready within {} ms",
                timeout.as_millis()
            )));
        }
    };
    match line.strip_prefix("error: ") {
        Some(message) => Err(ClientError::StartRefused(message.to_owned())),
        None => Ok(()),
    }
}
