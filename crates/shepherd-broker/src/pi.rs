//! Running pi sheep: how a pi sheep is launched, and what its run leaves behind.
//!
//! A pi sheep is `pi --session <file> -e <our sheep extension>` with the definition's model,
//! thinking level and tools (always including `shepherd_message` and `shepherd_done`); headless,
//! it runs in RPC mode with its stdin held open by the supervisor. The sheep extension ships
//! inside this binary and is written next to the broker's state on first use, so the extension a
//! sheep loads always speaks this broker's protocol. One session file per sheep is kept with the
//! broker's state and recorded in its notes.
//!
//! When a sheep's run settles after its task settled, its last assistant text and the run's
//! telemetry complete the task's note (and are what `run` reports as the task's result).

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shepherd_core::agent_def::{AgentDef, ModelChoice, ThinkingChoice};
use shepherd_core::herd::TaskOutput;
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_core::protocol::SpawnParams;

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};
use crate::telemetry::{Telemetry, session_size};

/// The sheep extension, the protocol client it imports, the client's generated protocol types
/// and the receipt words it shares with the parent, as shipped in this binary.
const SHEEP_EXTENSION: &str = include_str!("../../../integrations/pi/extensions/shepherd-sheep.ts");
const BROKER_CLIENT: &str = include_str!("../../../integrations/pi/extensions/lib/broker.ts");
const PROTOCOL_TYPES: &str =
    include_str!("../../../integrations/pi/extensions/lib/protocol-types.ts");
const RECEIPT_WORDS: &str = include_str!("../../../integrations/pi/extensions/lib/receipts.ts");

/// The tools every pi sheep needs on top of its definition's allowlist.
const SHEEP_TOOLS: [&str; 4] = [
    "shepherd_message",
    "shepherd_done",
    "shepherd_herd",
    "shepherd_status",
];

/// How long close and `run` wait for a pi sheep's run to settle after its task did.
pub(crate) const OUTPUT_GRACE: Duration = Duration::from_secs(10);

/// The command and environment that start one pi sheep.
#[derive(Debug, Clone)]
pub struct PiLaunch {
    /// The arguments (the whole command line in `launch`, only the flags in
    /// [`definition_args`]).
    pub argv: Vec<String>,
    /// Environment variables pi needs on top of the sheep's own.
    pub env: Vec<(String, String)>,
}

/// Where a sheep's pi session lives.
pub(crate) fn session_file(broker: &Broker, id: &AgentId) -> PathBuf {
    broker.config.paths.sheep_logs.join(format!("{id}.jsonl"))
}

/// Writes the shipped sheep extension under the broker's state directory (once per content) and
/// returns the path pi loads.
fn sheep_extension(broker: &Broker) -> BrokerResult<PathBuf> {
    install_sheep_extension(&broker.config.paths.state_dir).map_err(|err| {
        BrokerError::new(
            ErrorCode::Io,
            format!("writing the pi sheep extension: {err}"),
        )
    })
}

/// Writes the shipped sheep extension under `state_dir` (once per content) and returns the path
/// pi loads with `-e`.
pub fn install_sheep_extension(state_dir: &Path) -> std::io::Result<PathBuf> {
    let digest = {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(SHEEP_EXTENSION);
        hasher.update(BROKER_CLIENT);
        hasher.update(PROTOCOL_TYPES);
        hasher.update(RECEIPT_WORDS);
        hex::encode(hasher.finalize())[..12].to_owned()
    };
    let dir = state_dir.join("pi-extension").join(digest);
    let entry = dir.join("shepherd-sheep.ts");
    if !entry.exists() {
        shepherd_fs::write_atomic(
            &dir.join("lib").join("protocol-types.ts"),
            PROTOCOL_TYPES.as_bytes(),
            None,
        )?;
        shepherd_fs::write_atomic(
            &dir.join("lib").join("broker.ts"),
            BROKER_CLIENT.as_bytes(),
            None,
        )?;
        shepherd_fs::write_atomic(
            &dir.join("lib").join("receipts.ts"),
            RECEIPT_WORDS.as_bytes(),
            None,
        )?;
        shepherd_fs::write_atomic(&entry, SHEEP_EXTENSION.as_bytes(), None)?;
    }
    Ok(entry)
}

/// The pi command line for a sheep of `def`.
pub(crate) fn launch(
    broker: &Broker,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    headless: bool,
) -> BrokerResult<PiLaunch> {
    let session = session_file(broker, id);
    let prompt = broker
        .config
        .paths
        .sheep_logs
        .join(format!("{id}.prompt.md"));
    shepherd_fs::write_atomic(&prompt, def.system_prompt.as_bytes(), Some(0o600)).map_err(
        |err| {
            BrokerError::new(
                ErrorCode::Io,
                format!("writing the sheep's system prompt: {err}"),
            )
        },
    )?;
    // The user's pinned pi, else the parent's own (so a user of npx or a second install gets
    // the same pi for sheep), else `pi` from PATH.
    let mut argv = broker
        .config
        .pi_command
        .clone()
        .or_else(|| params.pi_command.clone().filter(|c| !c.is_empty()))
        .unwrap_or_else(|| vec!["pi".to_owned()]);
    argv.extend([
        "--session".into(),
        path(&session),
        "-e".into(),
        path(&sheep_extension(broker)?),
    ]);
    if headless {
        argv.extend(["--mode".into(), "rpc".into()]);
    }
    let model = chosen_model(def, params);
    let thinking = match def.thinking {
        ThinkingChoice::Level(level) => Some(level.as_str().to_owned()),
        ThinkingChoice::Inherit => params.parent_thinking.clone(),
    };
    let definition = definition_args(def, model, thinking, &prompt);
    argv.extend(definition.argv);
    Ok(PiLaunch {
        argv,
        env: definition.env,
    })
}

/// The model a pi sheep runs: the spawn's override, else its definition's, else its parent's.
pub(crate) fn chosen_model(def: &AgentDef, params: &SpawnParams) -> Option<String> {
    params.model.clone().or_else(|| match &def.model {
        ModelChoice::Explicit(model) => Some(model.clone()),
        ModelChoice::Inherit => params.parent_model.clone(),
    })
}

/// The flags and environment that give pi a sheep's definition: its model and thinking level,
/// its tools (with the two every sheep needs), context files, and its system prompt, whose body
/// is at `prompt` (replacing pi's prompt, or pi's identity sentence in the sheep extension).
pub fn definition_args(
    def: &AgentDef,
    model: Option<String>,
    thinking: Option<String>,
    prompt: &Path,
) -> PiLaunch {
    let mut argv: Vec<String> = Vec::new();
    if let Some(model) = model {
        argv.extend(["--model".into(), model]);
    }
    if let Some(thinking) = thinking {
        argv.extend(["--thinking".into(), thinking]);
    }
    if let Some(tools) = &def.tools {
        let mut all: Vec<String> = tools.clone();
        for tool in SHEEP_TOOLS {
            if !all.iter().any(|t| t == tool) {
                all.push(tool.to_owned());
            }
        }
        argv.extend(["--tools".into(), all.join(",")]);
    }
    if def.omit_context_files {
        argv.push("--no-context-files".into());
    }
    let mut env = Vec::new();
    if def.omit_system_prompt {
        argv.extend(["--system-prompt".into(), path(prompt)]);
    } else {
        env.push(("SHEPHERD_AGENT_PROMPT_FILE".into(), path(prompt)));
    }
    if def.omit_pi_documentation {
        env.push(("SHEPHERD_OMIT_PI_DOCUMENTATION".into(), "1".into()));
    }
    PiLaunch { argv, env }
}

fn path(path: &Path) -> String {
    path.display().to_string()
}

/// Where a pi sheep's session file stands now (`None` for other sheep): taken before a task is
/// handed over, so the task's telemetry counts only its own turns.
pub(crate) fn session_cursor(broker: &Broker, id: &AgentId) -> Option<u64> {
    let is_pi = broker.read(|herd| herd.sheep.get(id).is_some_and(|s| s.runtime.is_pi()));
    is_pi.then(|| session_size(&session_file(broker, id)))
}

/// Waits (up to `grace`) for a settled task's final words, when its sheep is a coding agent
/// whose run has not settled yet.
pub(crate) async fn await_output(broker: &Arc<Broker>, task_id: &TaskId, grace: Duration) {
    let mut generation = broker.generation.subscribe();
    let deadline = tokio::time::Instant::now() + grace;
    loop {
        generation.borrow_and_update();
        let waiting = broker.read(|herd| {
            let Some(task) = herd.tasks.get(task_id) else {
                return false;
            };
            let sheep = herd.sheep.get(&task.agent_id);
            let running = sheep.is_some_and(|s| s.runtime.reports_runs() && s.is_live());
            task.result.is_some() && task.output.is_none() && running
        });
        if !waiting {
            return;
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// A sheep's run settled: its last words and telemetry go to the task they belong to (its open
/// task, or the one it just finished), and into that task's note.
pub(crate) async fn record_output(
    broker: &Arc<Broker>,
    id: &AgentId,
    text: Option<String>,
    reported: Option<Value>,
) -> BrokerResult<()> {
    // A run that ends while the task is still open is a turn without `shepherd_done` (the
    // herd nudges); only a run that settles after the task did carries its final words.
    let target = broker.read(|herd| {
        let sheep = herd.sheep.get(id)?;
        if sheep.active_task.is_some() {
            return None;
        }
        let task = herd.tasks.values().rev().find(|t| &t.agent_id == id)?;
        (task.result.is_some() && task.output.is_none()).then(|| {
            (
                task.id.clone(),
                task.session_cursor.unwrap_or(0),
                sheep.runtime.is_pi(),
            )
        })
    });
    let Some((task_id, cursor, is_pi)) = target else {
        return Ok(());
    };
    let read = if is_pi {
        let session = session_file(broker, id);
        tokio::task::spawn_blocking(move || Telemetry::from_session(&session, cursor).ok())
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    // A pi sheep's final words are those of the task's own turns, read from its session: the
    // run may have gone on answering a message that arrived after the task settled.
    let text = read
        .as_ref()
        .and_then(|t| t.final_text().map(str::to_owned))
        .or(text)
        .unwrap_or_default();
    // Another agent's driver reads its agent's own output and reports the task's figures.
    let telemetry = read.map_or_else(|| reported.unwrap_or(Value::Null), |t| t.to_metadata());
    let output = TaskOutput { text, telemetry };
    let committed = broker.commit(|tx| shepherd_core::herd::output(tx, &task_id, output));
    broker.durable(committed.pos).await?;
    crate::notes::complete_output(broker, &task_id).await;
    Ok(())
}
