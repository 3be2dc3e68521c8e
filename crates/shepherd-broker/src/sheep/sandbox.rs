//! What a confined sheep may see and reach, as its supervisor's `--sandbox…` options.
//!
//! The sandbox is decided here, where the definition, the spawn and the settings meet (the
//! user's `sandbox` setting is a floor: a project's definition, a plan and an agent's tool
//! argument only tighten it; the user's own definitions and the person's own `--sandbox` may
//! lower it), and checked before anything starts: a sandbox that cannot be made on this machine
//! refuses the spawn, it never runs the sheep unconfined. The supervisor makes it
//! (`shepherd_sheep::supervise`); this module only says what goes in: the project read-only
//! (`workspace`) or hidden (`strict`), the session notes, the sheep's own directory (its agent's
//! composed home: never the user's own agent configuration), and for `network: model` the
//! model provider's hosts.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::harness::{Harness, Runtime};
use shepherd_core::ids::AgentId;
use shepherd_core::sandbox::{Network, Sandbox, SandboxChoices};
use shepherd_core::settings::EffectiveSettings;
use shepherd_core::spawn::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::worktree::GitBinds;
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// The sandbox a spawn runs its sheep in: the user's setting is a floor that only the user's
/// own definitions and flag may lower ([`SandboxChoices`]).
pub(crate) fn chosen(
    params: &SpawnParams,
    def: &AgentDef,
    settings: &EffectiveSettings,
) -> Sandbox {
    SandboxChoices {
        setting: settings.sandbox,
        definition: def.sandbox,
        definition_from_project: def.source == shepherd_core::agent_def::AgentSource::Project,
        person: params.user_sandbox,
        requested: params.sandbox,
    }
    .decide()
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

/// What a confined sheep may read but never change where its working directory is writable:
/// Shepherd's own directory in a project (its settings; the sessions inside stay writable), and
/// what coding agents and editors load from a project by themselves at their next start,
/// outside any sandbox (agent definitions, hooks, MCP servers, tasks, environment). Anthropic's
/// sandbox runtime keeps the same kind of list out of an agent's reach. (The repository's
/// `.git` is the isolation layout's to guard.)
const GUARDED: [&str; 11] = [
    ".shepherd",
    ".pi",
    ".agents",
    ".claude",
    ".mcp.json",
    ".codex",
    ".gemini",
    ".opencode",
    "opencode.json",
    ".vscode",
    ".envrc",
];

/// The supervisor's options that confine the sheep `id`, working in `cwd`; none when it is not
/// confined. `program` is another coding agent's binary, which the sheep's driver starts inside;
/// `git` is what of git its sandbox holds (`sheep::worktree::sandbox_binds`).
pub(crate) fn supervisor_args(
    broker: &Broker,
    id: &AgentId,
    (sandbox, def, runtime): (Sandbox, &AgentDef, Runtime),
    (cwd, program, git): (&Path, Option<&Path>, &GitBinds),
    remote: bool,
) -> BrokerResult<Vec<String>> {
    if !sandbox.is_on() {
        return Ok(Vec::new());
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
        // A sheep writes its own notes; they live in the project's sessions directory, a real
        // one (a link there, planted by an earlier sheep, would bind its target writable).
        let sessions = project.join(shepherd_core::fieldnotes::SESSIONS_RELATIVE);
        real_directory(project, &sessions)?;
        add("--sandbox-write", &sessions);
        // In a repository of its own (isolated) a sheep's changes land only through the merge
        // queue, reviewed: there it may change them too.
        let isolated = cwd.starts_with(broker.config.dirs.state_dir.join("worktrees"));
        if !isolated {
            for guarded in guarded_in(cwd) {
                add("--sandbox-read", &guarded);
            }
        }
        let (read, write) = state_dirs(&broker.config, id, runtime);
        for path in read {
            add("--sandbox-read", &path);
        }
        for dir in write {
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
    Ok(args)
}

/// The guarded names that are real files or directories in `dir` (a link is left alone: it
/// shows nothing the sandbox does not).
fn guarded_in(dir: &Path) -> Vec<PathBuf> {
    GUARDED
        .iter()
        .map(|name| dir.join(name))
        .filter(|path| {
            fs_err::symlink_metadata(path).is_ok_and(|meta| meta.is_dir() || meta.is_file())
        })
        .collect()
}

/// Makes `dir` (inside `root`) exist as real directories all the way down from `root`,
/// refusing a symlink on the way.
fn real_directory(root: &Path, dir: &Path) -> BrokerResult<()> {
    let relative = dir.strip_prefix(root).unwrap_or(dir);
    let mut at = root.to_path_buf();
    for part in relative.components() {
        at.push(part);
        match fs_err::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(BrokerError::new(
                    ErrorCode::SandboxUnavailable,
                    format!(
                        "`{}` is not a directory but a link or a file (a sheep may have left \
                         it there); remove it, and Shepherd makes the directory again",
                        at.display()
                    ),
                ));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                fs_err::create_dir(&at).map_err(|err| {
                    BrokerError::new(ErrorCode::Io, format!("making {}: {err}", at.display()))
                })?;
            }
            Err(err) => {
                return Err(BrokerError::new(
                    ErrorCode::Io,
                    format!("reading {}: {err}", at.display()),
                ));
            }
        }
    }
    Ok(())
}

/// What the sheep's program keeps its own state in, `(read-only, writable)`: its own directory
/// (its agent's composed configuration home, its session and launch files) and nothing of the
/// user's own agent configuration but, for pi, what its agent directory links to read-only.
fn state_dirs(
    config: &BrokerConfig,
    id: &AgentId,
    runtime: Runtime,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let own = config.paths.sheep_dir(id.as_str());
    match runtime {
        Runtime::Command => (Vec::new(), Vec::new()),
        Runtime::Agent(Harness::Pi) => {
            let mut read = crate::sheep::pi_home::shared(&config.dirs.pi_agent_dir);
            // The shipped sheep extension: read, never changed.
            read.push(config.paths.state_dir.join("pi-extension"));
            (read, vec![own])
        }
        Runtime::Agent(_) => (Vec::new(), vec![own]),
    }
}

/// Where a sheep with `network: model` may connect: its provider's own hosts, any endpoint a
/// base-URL variable names, and, for pi, every provider `models.json` configures.
fn model_endpoints(broker: &Broker, runtime: Runtime) -> Vec<String> {
    // A `command` sheep has no provider of its own: only what its environment names.
    let profile = runtime.harness().map(shepherd_harness::profile);
    let mut endpoints: Vec<String> = profile
        .map_or(&[][..], |profile| profile.provider.hosts)
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
    // Some agents (Codex, opencode) name a custom provider's endpoint in their configuration
    // file.
    let user = BrokerEnv(&broker.config.dirs.home);
    let config = profile
        .and_then(|profile| profile.provider_config)
        .and_then(|config| config(&user));
    if let Some(text) = config.and_then(|file| fs_err::read_to_string(file).ok()) {
        endpoints.extend(shepherd_core::sandbox::config_endpoints(&text));
    }
    endpoints.sort();
    endpoints.dedup();
    endpoints
}

/// The broker's own environment, with the home directory its configuration resolved.
struct BrokerEnv<'a>(&'a Path);

impl shepherd_harness::UserEnv for BrokerEnv<'_> {
    fn var(&self, name: &str) -> Option<std::ffi::OsString> {
        std::env::var_os(name)
    }

    fn home(&self) -> Option<PathBuf> {
        Some(self.0.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sessions_directory_is_made_real_and_a_link_on_the_way_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        let sessions = project.join(".shepherd/sessions");
        real_directory(&project, &sessions).unwrap();
        assert!(sessions.is_dir());
        std::fs::remove_dir_all(project.join(".shepherd")).unwrap();
        std::fs::create_dir_all(project.join(".shepherd")).unwrap();
        std::os::unix::fs::symlink(root.path(), &sessions).unwrap();
        let refused = real_directory(&project, &sessions).unwrap_err();
        assert!(
            refused.message.contains("not a directory but a link"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn only_real_guarded_entries_are_bound_read_only() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".claude")).unwrap();
        std::fs::write(root.path().join(".mcp.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/etc", root.path().join(".vscode")).unwrap();
        assert_eq!(
            guarded_in(root.path()),
            [root.path().join(".claude"), root.path().join(".mcp.json")]
        );
    }
}
