//! What a confined sheep may see and reach, as its supervisor's `--sandbox…` options.
//!
//! The sandbox is decided here, where the definition, the spawn and the settings meet (a
//! spawn's `--sandbox` wins over the definition's `sandbox:`, which wins over the `sandbox`
//! setting), and checked before anything starts: a sandbox that cannot be made on this machine
//! refuses the spawn, it never runs the sheep unconfined. The supervisor makes it
//! (`shepherd_sheep::supervise`); this module only says what goes in: the project read-only
//! (`workspace`) or hidden (`strict`), the session notes, the agent's own state directory, and
//! for `network: model` the model provider's hosts.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::harness::{Harness, Runtime};
use shepherd_core::ids::AgentId;
use shepherd_core::sandbox::{Network, Sandbox};
use shepherd_core::settings::EffectiveSettings;
use shepherd_core::spawn::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::worktree::GitBinds;
use crate::state::broker::Broker;

/// The sandbox a spawn runs its sheep in.
pub(crate) fn chosen(
    params: &SpawnParams,
    def: &AgentDef,
    settings: &EffectiveSettings,
) -> Sandbox {
    params.sandbox.or(def.sandbox).unwrap_or(settings.sandbox)
}

/// Refuses a confined spawn on this machine when bubblewrap cannot make the sandbox here. The
/// answer is probed once per broker: installing bubblewrap means restarting the broker.
pub(crate) fn check_here(sandbox: Sandbox, def: &AgentDef) -> BrokerResult<()> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    if !sandbox.is_on() {
        return Ok(());
    }
    match MISSING.get_or_init(shepherd_term::sandbox_probe::unavailable) {
        None => Ok(()),
        Some(missing) => Err(BrokerError::new(
            ErrorCode::SandboxUnavailable,
            format!(
                "agent \"{}\" runs in sandbox {sandbox}, which cannot be made here: {missing}",
                def.name
            ),
        )),
    }
}

/// The supervisor's options that confine the sheep `id`; none when it is not confined.
/// `program` is another coding agent's binary, which the sheep's driver starts inside; `git`
/// is what of git its sandbox holds (`sheep::worktree::sandbox_binds`).
pub(crate) fn supervisor_args(
    broker: &Broker,
    id: &AgentId,
    (sandbox, def, runtime): (Sandbox, &AgentDef, Runtime),
    (program, git): (Option<&Path>, &GitBinds),
    remote: bool,
) -> Vec<String> {
    if !sandbox.is_on() {
        return Vec::new();
    }
    let mut args = vec![
        "--sandbox".to_owned(),
        sandbox.as_str().to_owned(),
        "--sandbox-network".to_owned(),
        def.network.as_str().to_owned(),
    ];
    let mut add = |flag: &str, path: &Path| {
        args.extend([flag.to_owned(), path.display().to_string()]);
    };
    // A host has its own paths: there the supervisor binds what it knows itself (the working
    // directory, the socket) and hides the rest of the home directory.
    if !remote {
        let project = &broker.config.address.project_root;
        match sandbox {
            Sandbox::Strict => add("--sandbox-hide", project),
            Sandbox::Workspace | Sandbox::Off => add("--sandbox-read", project),
        }
        // A sheep writes its own notes; they live in the project's sessions directory.
        add(
            "--sandbox-write",
            &project.join(shepherd_core::fieldnotes::SESSIONS_RELATIVE),
        );
        for dir in state_dirs(broker, id, runtime) {
            add("--sandbox-write", &dir);
        }
        // What the user declared an agent needs (an install the supervisor cannot follow).
        for path in shepherd_config::load_sandbox_options(&broker.config.dirs)
            .0
            .paths
        {
            add("--sandbox-read", &path);
        }
        if let Some(program) = program {
            add("--sandbox-program", program);
        }
    }
    // Git is bound as the broker says, never as a `.git` in the working directory says: the
    // sheep's own worktree and the project's objects (read-only) when it is isolated, else its
    // `.git` read-only (a later, deeper bind wins over the writable working directory).
    for path in &git.write {
        add("--sandbox-write", path);
    }
    for path in &git.read {
        add("--sandbox-read", path);
    }
    if def.network == Network::Model {
        for endpoint in model_endpoints(broker, runtime) {
            args.extend(["--sandbox-allow".to_owned(), endpoint]);
        }
    }
    args
}

/// The directories the sheep's program keeps its own state in: its configuration, sessions
/// and logs. Shepherd's own per-sheep files are among them.
fn state_dirs(broker: &Broker, id: &AgentId, runtime: Runtime) -> Vec<PathBuf> {
    let home = &broker.config.dirs.home;
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let under_home = |relative: &str| home.join(relative);
    match runtime {
        Runtime::Command => Vec::new(),
        Runtime::Agent(Harness::Pi) => vec![
            broker.config.dirs.pi_agent_dir.clone(),
            // The sheep's session file, system prompt and launch variables.
            broker.config.paths.sheep_logs.clone(),
            broker.config.paths.state_dir.join("pi-extension"),
        ],
        Runtime::Agent(harness) => {
            let mut dirs = vec![crate::sheep::harness::sheep_dir(broker, id)];
            match harness {
                Harness::ClaudeCode => {
                    dirs.push(
                        var("CLAUDE_CONFIG_DIR")
                            .map_or_else(|| under_home(".claude"), PathBuf::from),
                    );
                    dirs.push(under_home(".claude.json"));
                }
                Harness::Codex => {
                    dirs.push(
                        var("CODEX_HOME").map_or_else(|| under_home(".codex"), PathBuf::from),
                    );
                }
                Harness::Gemini => dirs.push(
                    var("GEMINI_CLI_HOME")
                        .map_or_else(|| home.clone(), PathBuf::from)
                        .join(".gemini"),
                ),
                Harness::Opencode => {
                    let xdg = |name: &str, fallback: &str| {
                        var(name)
                            .map_or_else(|| under_home(fallback), PathBuf::from)
                            .join("opencode")
                    };
                    dirs.extend([
                        xdg("XDG_DATA_HOME", ".local/share"),
                        xdg("XDG_CONFIG_HOME", ".config"),
                        xdg("XDG_CACHE_HOME", ".cache"),
                        xdg("XDG_STATE_HOME", ".local/state"),
                    ]);
                    dirs.extend(var("OPENCODE_CONFIG").map(PathBuf::from));
                }
                Harness::Pi => {}
            }
            dirs
        }
    }
}

/// Where a sheep with `network: model` may connect: its provider's own hosts, any endpoint a
/// base-URL variable names, and, for pi, every provider `models.json` configures.
fn model_endpoints(broker: &Broker, runtime: Runtime) -> Vec<String> {
    let mut endpoints: Vec<String> = shepherd_core::sandbox::provider_hosts(runtime.harness())
        .iter()
        .map(|host| (*host).to_owned())
        .collect();
    endpoints.extend(
        shepherd_core::sandbox::BASE_URL_VARIABLES
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .filter_map(|url| shepherd_core::sandbox::url_endpoint(&url)),
    );
    if runtime.harness() == Some(Harness::Pi) {
        let models = broker.config.dirs.pi_agent_dir.join("models.json");
        if let Ok(text) = fs_err::read_to_string(models) {
            endpoints.extend(shepherd_core::sandbox::pi_model_endpoints(&text));
        }
    }
    // Codex and opencode name a custom provider's endpoint in their configuration file.
    let home = &broker.config.dirs.home;
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let config = match runtime.harness() {
        Some(Harness::Codex) => Some(
            var("CODEX_HOME")
                .map_or_else(|| home.join(".codex"), PathBuf::from)
                .join("config.toml"),
        ),
        Some(Harness::Opencode) => Some(var("OPENCODE_CONFIG").map_or_else(
            || home.join(".config/opencode/opencode.json"),
            PathBuf::from,
        )),
        _ => None,
    };
    if let Some(text) = config.and_then(|file| fs_err::read_to_string(file).ok()) {
        endpoints.extend(shepherd_core::sandbox::config_endpoints(&text));
    }
    endpoints.sort();
    endpoints.dedup();
    endpoints
}
