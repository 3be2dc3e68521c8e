//! Launching pi sheep: the pi command line and environment for one sheep.
//!
//! A pi sheep is `pi --session <file> -e <our sheep extension>` with the definition's model,
//! thinking level and tools (always including `shepherd_message` and `shepherd_done`); headless,
//! it runs in RPC mode with its stdin held open by the supervisor. The sheep extension ships
//! inside this binary and is written next to the broker's state on first use, so the extension a
//! sheep loads always speaks this broker's protocol. Each sheep's files live in its own
//! directory, `<state>/agents/<id>/` (the one directory a confined sheep may write): its session
//! file, recorded in its notes, its system prompt, and `<id>.env.json` (readable by its user
//! alone), which keeps the sheep's Shepherd variables for the sheep extension to put back when
//! a wrapper between the supervisor and pi started pi with a clean environment
//! (`lib/sheep-launch.ts`). A confined pi sheep also gets an agent directory of its own
//! (`pi_home`). (What a pi sheep's run leaves behind is `pi`.)

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::Harness;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

/// The sheep extension, the protocol client it imports, the client's generated protocol types,
/// the receipt words it shares with the parent, the generated tool catalogue its tools are
/// written from and how it tells it runs as a sheep, as shipped in this binary.
const SHEEP_EXTENSION: &str =
    include_str!("../../../../integrations/pi/extensions/shepherd-sheep.ts");
const BROKER_CLIENT: &str = include_str!("../../../../integrations/pi/extensions/lib/broker.ts");
const PROTOCOL_TYPES: &str =
    include_str!("../../../../integrations/pi/extensions/lib/protocol-types.ts");
const RECEIPT_WORDS: &str = include_str!("../../../../integrations/pi/extensions/lib/receipts.ts");
const TOOL_CATALOGUE: &str =
    include_str!("../../../../integrations/pi/extensions/lib/tool-catalogue.ts");
const SHEEP_LAUNCH: &str =
    include_str!("../../../../integrations/pi/extensions/lib/sheep-launch.ts");

/// The tools every pi sheep needs on top of its definition's allowlist.
const SHEEP_TOOLS: [&str; 4] = [
    "shepherd_message",
    "shepherd_done",
    "shepherd_herd",
    "shepherd_status",
];

/// The command and environment that start one pi sheep.
#[derive(Debug, Clone)]
pub struct PiLaunch {
    /// The arguments (the whole command line in `launch`, only the flags in
    /// [`definition_args`]).
    pub argv: Vec<String>,
    /// Environment variables pi needs on top of the sheep's own.
    pub env: Vec<(String, String)>,
}

/// Where a sheep's pi session lives: in its own directory (a sheep started by an earlier
/// version keeps the one it has beside the output logs).
pub(crate) fn session_file(broker: &Broker, id: &AgentId) -> PathBuf {
    let earlier = broker.config.paths.sheep_logs.join(format!("{id}.jsonl"));
    if fs_err::symlink_metadata(&earlier).is_ok_and(|meta| meta.is_file()) {
        return earlier;
    }
    own_file(broker, id, "jsonl")
}

/// The sheep's own file `<id>.<extension>` in its directory.
fn own_file(broker: &Broker, id: &AgentId, extension: &str) -> PathBuf {
    broker
        .config
        .paths
        .sheep_dir(id.as_str())
        .join(format!("{id}.{extension}"))
}

/// Makes the sheep's own directory ready for a launch: private, and with no symlink a sheep
/// left in it (Shepherd writes there again, outside any sandbox).
fn prepare_own_dir(broker: &Broker, id: &AgentId) -> std::io::Result<PathBuf> {
    let dir = broker.config.paths.sheep_dir(id.as_str());
    crate::paths::ensure_private_dir(&dir)?;
    shepherd_fs::remove_symlinks_under(&dir)?;
    Ok(dir)
}

/// Keeps a local pi sheep's Shepherd variables (its capability among them) beside its session
/// file, for the sheep extension to put back should a wrapper start pi with a clean
/// environment; only its user may read them, as only its user may read the broker's state.
pub(crate) fn write_launch_env(
    broker: &Broker,
    id: &AgentId,
    env: &[(String, String)],
) -> BrokerResult<()> {
    let vars: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .filter(|(name, _)| name.starts_with("SHEPHERD_"))
        .map(|(name, value)| (name.clone(), serde_json::Value::String(value.clone())))
        .collect();
    let text = serde_json::Value::Object(vars).to_string();
    let file = own_file(broker, id, "env.json");
    shepherd_fs::write_atomic(&file, text.as_bytes(), Some(0o600)).map_err(|err| {
        BrokerError::new(
            ErrorCode::Io,
            format!("writing the sheep's launch variables: {err}"),
        )
    })
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

/// The shipped sheep extension's files, relative to its directory (the entry point first).
pub(crate) fn extension_files() -> [(&'static str, &'static str); 6] {
    [
        ("shepherd-sheep.ts", SHEEP_EXTENSION),
        ("lib/broker.ts", BROKER_CLIENT),
        ("lib/protocol-types.ts", PROTOCOL_TYPES),
        ("lib/receipts.ts", RECEIPT_WORDS),
        ("lib/tool-catalogue.ts", TOOL_CATALOGUE),
        ("lib/sheep-launch.ts", SHEEP_LAUNCH),
    ]
}

/// The directory name of this build's extension: a digest of its content, so a sheep never
/// loads another build's extension.
pub(crate) fn extension_digest() -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (_, content) in extension_files() {
        hasher.update(content);
    }
    hex::encode(hasher.finalize())[..12].to_owned()
}

/// Writes the shipped sheep extension under `state_dir` (once per content) and returns the path
/// pi loads with `-e`.
pub fn install_sheep_extension(state_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = state_dir.join("pi-extension").join(extension_digest());
    let entry = dir.join("shepherd-sheep.ts");
    if !entry.exists() {
        // The entry point last: once it exists, the whole extension does.
        for (relative, content) in extension_files().iter().rev() {
            shepherd_fs::write_atomic(&dir.join(relative), content.as_bytes(), None)?;
        }
    }
    Ok(entry)
}

/// The pi command line for a sheep of `def`; a `confined` one gets an agent directory of its
/// own (`PI_CODING_AGENT_DIR`).
pub(crate) fn launch(
    broker: &Broker,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    (headless, confined): (bool, bool),
) -> BrokerResult<PiLaunch> {
    let io =
        |what: &str, err: std::io::Error| BrokerError::new(ErrorCode::Io, format!("{what}: {err}"));
    let own =
        prepare_own_dir(broker, id).map_err(|err| io("preparing the sheep's directory", err))?;
    let session = session_file(broker, id);
    let prompt = own_file(broker, id, "prompt.md");
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
    let (model, thinking) = choices(def, params);
    let definition = definition_args(def, model, thinking, &prompt);
    argv.extend(definition.argv);
    let mut env = definition.env;
    // Another account of its provider, when a fallback named one.
    env.extend(crate::sheep::credential::credential_env(
        shepherd_core::harness::Runtime::Agent(Harness::Pi),
        def,
        params,
    )?);
    if confined {
        let agent = crate::sheep::pi_home::compose(&broker.config.dirs.pi_agent_dir, &own)
            .map_err(|err| io("making the sheep's pi agent directory", err))?;
        env.push(("PI_CODING_AGENT_DIR".into(), path(&agent)));
    }
    Ok(PiLaunch { argv, env })
}

/// The model and thinking level a pi sheep of `def` runs at, by the rule every harness follows
/// ([`AgentDef::model_for`], [`AgentDef::thinking_for`]): the spawn's model, else the
/// definition's for pi (`models: {pi: …}`, or `model` when pi is its own harness), else the
/// parent's; the definition's thinking level, else the parent's.
pub(crate) fn choices(def: &AgentDef, params: &SpawnParams) -> (Option<String>, Option<String>) {
    (
        def.model_for(
            Harness::Pi,
            params.model.as_deref(),
            params.parent_model.as_deref(),
        ),
        def.thinking_for(Harness::Pi, params.parent_thinking.as_deref()),
    )
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

#[cfg(test)]
mod tests {
    use super::extension_files;

    /// Every relative module a shipped file imports is shipped too: a sheep's pi loads the
    /// extension from the broker's state directory, where nothing else is.
    #[test]
    fn the_shipped_extension_holds_every_file_it_imports() {
        let files = extension_files();
        let shipped: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
        for (path, content) in files {
            let dir = std::path::Path::new(path)
                .parent()
                .unwrap_or(std::path::Path::new(""));
            // `from "./…"` wherever it stands, so an import spread over lines counts too.
            for spec in content
                .split("from \"")
                .skip(1)
                .filter_map(|rest| rest.split('"').next())
            {
                if !spec.starts_with("./") {
                    continue;
                }
                let joined = dir.join(spec.trim_start_matches("./"));
                let wanted = joined.to_string_lossy();
                assert!(
                    shipped.contains(&wanted.as_ref()),
                    "{path} imports {spec}, which the shipped extension lacks"
                );
            }
        }
    }
}
