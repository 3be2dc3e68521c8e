//! Launching pi sheep: the pi command line and environment for one sheep.
//!
//! A pi sheep is `pi --session <file> -e <our sheep extension>` with the definition's model,
//! thinking level and tools (always including `shepherd_message` and `shepherd_done`); headless,
//! it runs in RPC mode with its stdin held open by the supervisor. The sheep extension ships
//! inside this binary (`shepherd_client::pi_sheep`, which also gives the definition's flags) and
//! is written next to the broker's state on first use, so the extension a sheep loads always
//! speaks this broker's protocol. Each sheep's files live in its own
//! directory, `<state>/agents/<id>/` (the one directory a confined sheep may write): its session
//! file, recorded in its notes, its system prompt, and `<id>.env.json` (readable by its user
//! alone), which keeps the sheep's Shepherd variables for the sheep extension to put back when
//! a wrapper between the supervisor and pi started pi with a clean environment
//! (`lib/sheep-launch.ts`). A confined pi sheep also gets an agent directory of its own
//! (`pi_home`). (What a pi sheep's run leaves behind is `pi`.)

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use shepherd_core::agent_def::{AgentDef, ThinkingLevel};
use shepherd_core::harness::Harness;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

pub(crate) use shepherd_client::pi_sheep::{
    PiLaunch, definition_args, extension_digest, extension_files, install_sheep_extension,
};

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
fn prepare_own_dir(config: &BrokerConfig, id: &AgentId) -> std::io::Result<PathBuf> {
    let dir = config.paths.sheep_dir(id.as_str());
    shepherd_client::paths::ensure_private_dir(&dir)?;
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
fn sheep_extension(config: &BrokerConfig) -> BrokerResult<PathBuf> {
    install_sheep_extension(&config.paths.state_dir).map_err(|err| {
        BrokerError::new(
            ErrorCode::Io,
            format!("writing the pi sheep extension: {err}"),
        )
    })
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
    let own = prepare_own_dir(&broker.config, id)
        .map_err(|err| io("preparing the sheep's directory", err))?;
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
        path(&sheep_extension(&broker.config)?),
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
pub(crate) fn choices(
    def: &AgentDef,
    params: &SpawnParams,
) -> (Option<String>, Option<ThinkingLevel>) {
    (
        def.model_for(
            Harness::Pi,
            params.model.as_deref(),
            params.parent_model.as_deref(),
        ),
        def.thinking_for(Harness::Pi, params.parent_thinking),
    )
}

fn path(path: &Path) -> String {
    path.display().to_string()
}
