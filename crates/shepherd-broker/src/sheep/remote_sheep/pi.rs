//! pi sheep on a host: the same pi command line as here, with the host's paths.
//!
//! The sheep extension and the sheep's system prompt are copied to the host's state directory
//! for this link (the extension once per build, under its content digest), pi is the host's own
//! (the host's `pi` setting, `pi` from its PATH by default) and its session file is written
//! there. The session comes back to this machine whenever the broker reads it — when a task is
//! handed over (where its turns begin) and when the run settles (its final words and
//! telemetry) — so a remote pi sheep's note has the same model, turns, tool calls, tokens and
//! cost as a local one's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::agent_def::AgentDef;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::remote::ops::{FileContent, FileProbe, FilesRequest, op};
use crate::sheep::pi_launch::PiLaunch;
use crate::state::broker::Broker;

/// How long copying the extension and prompt, or the session back, may take.
const STEP_DEADLINE: Duration = Duration::from_secs(30);

/// The host's session file of sheep `id`.
fn host_session(state_dir: &Path, id: &AgentId) -> PathBuf {
    state_dir.join("sheep").join(format!("{id}.jsonl"))
}

/// The pi command line for a sheep of `def` on `host` (its link is up: the spawn checked).
pub(crate) async fn launch(
    broker: &Arc<Broker>,
    host: &str,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    headless: bool,
) -> BrokerResult<PiLaunch> {
    let link = super::link(broker, host)?;
    let unreachable = |why: String| {
        BrokerError::new(
            ErrorCode::HostUnreachable,
            format!("pi cannot be started on host {host}: {why}"),
        )
    };
    let hello = link
        .hello()
        .ok_or_else(|| unreachable("no SSH connection".to_owned()))?;
    let extension = hello
        .state_dir
        .join("pi-extension")
        .join(crate::sheep::pi_launch::extension_digest());
    let prompt = hello
        .state_dir
        .join("sheep")
        .join(format!("{id}.prompt.md"));
    let mut write: Vec<FileContent> = crate::sheep::pi_launch::extension_files()
        .iter()
        .map(|(relative, content)| FileContent {
            path: extension.join(relative),
            content: (*content).to_owned(),
            keep_existing: false,
        })
        .collect();
    write.push(FileContent {
        path: prompt.clone(),
        content: def.system_prompt.clone(),
        keep_existing: false,
    });
    let copying = link.clone();
    let within = hello.state_dir.clone();
    tokio::task::spawn_blocking(move || {
        copying.call::<op::Files>(
            &FilesRequest {
                within,
                write,
                read: Vec::new(),
            },
            Instant::now() + STEP_DEADLINE,
        )
    })
    .await
    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
    .map_err(unreachable)?;
    let mut argv = link.def.pi.clone();
    argv.extend([
        "--session".into(),
        host_session(&hello.state_dir, id).display().to_string(),
        "-e".into(),
        extension.join("shepherd-sheep.ts").display().to_string(),
    ]);
    if headless {
        argv.extend(["--mode".into(), "rpc".into()]);
    }
    let (model, thinking) = crate::sheep::pi_launch::choices(def, params);
    let definition = crate::sheep::pi_launch::definition_args(def, model, thinking, &prompt);
    argv.extend(definition.argv);
    Ok(PiLaunch {
        argv,
        env: definition.env,
    })
}

/// Brings a remote pi sheep's session file home (whole: it is pi's own record), so what the
/// broker reads of it here is what the host has. Not a remote pi sheep, or an unreachable
/// host: nothing changes.
pub(crate) async fn pull_session(broker: &Arc<Broker>, id: &AgentId) {
    let remote_pi = broker.store.read(|herd| {
        herd.sheep
            .get(id)
            .filter(|s| s.runtime.is_pi())
            .and_then(|s| s.host().map(str::to_owned))
    });
    let Some(host) = remote_pi else { return };
    let Ok(link) = super::link(broker, &host) else {
        return;
    };
    let Some(hello) = link.hello() else { return };
    let local = crate::sheep::pi_launch::session_file(broker, id);
    let request = FilesRequest {
        within: hello.state_dir.clone(),
        write: Vec::new(),
        read: vec![FileProbe {
            path: host_session(&hello.state_dir, id),
            since: None,
        }],
    };
    let read = tokio::task::spawn_blocking(move || {
        link.call::<op::Files>(&request, Instant::now() + STEP_DEADLINE)
    })
    .await;
    let content = match read {
        Ok(Ok(reply)) => reply.read.into_iter().next().and_then(|file| file.content),
        Ok(Err(err)) => {
            tracing::warn!("reading the pi session of {id} on host {host}: {err}");
            None
        }
        Err(err) => {
            tracing::warn!("reading the pi session of {id} on host {host}: {err}");
            None
        }
    };
    if let Some(content) = content
        && let Err(err) = shepherd_fs::write_atomic(&local, content.as_bytes(), Some(0o600))
    {
        tracing::warn!("keeping the pi session of {id}: {err}");
    }
}
