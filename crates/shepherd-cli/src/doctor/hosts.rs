//! The MCP hosts' side of `shepherd doctor`: whether Claude Code, Codex, Gemini CLI and
//! opencode have Shepherd registered, can call its tools without a person approving each call,
//! and hand `shepherd mcp` the variables the sheep take from the user's environment.
//!
//! Each host's own configuration is read where the host keeps it (and where `docs/mcp.md`'s
//! setup writes it), never changed. What each host passes an MCP server differs (measured on the
//! pinned versions): Claude Code and opencode their whole environment; Gemini CLI all but the
//! variables whose names look secret, unless the server's `env` names them; Codex only a few
//! basics plus its `env_vars` and `env`. A variable the sheep use (`shepherd_client::needs::
//! used_vars`) that the host would not pass is a miss, with the line that passes it.

use std::path::{Path, PathBuf};

use serde_json::Value;
use shepherd_client::needs::{Used, used_vars, which};
use shepherd_core::agent_def::AgentDef;
use shepherd_harness::UserEnv;

use super::Finding;

/// What Codex passes every MCP server without being told (its `DEFAULT_ENV_VARS` on Unix).
const CODEX_PASSES: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// The parts of a name that make Gemini CLI hide a variable from its MCP servers.
/// The line that registers Shepherd in Gemini CLI, as the README and docs/mcp.md give it.
const GEMINI_ADD: &str = "gemini mcp add --scope user --trust -e 'ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY' -e 'OPENAI_API_KEY=$OPENAI_API_KEY' -e 'GEMINI_API_KEY=$GEMINI_API_KEY' shepherd shepherd mcp";

const GEMINI_HIDES: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "CERT",
];

/// Every host's findings.
pub(super) fn all(project: &Path, defs: &[AgentDef], env: &dyn UserEnv) -> Vec<Finding> {
    let used = used_vars(defs, env);
    let mut findings = claude(project, env);
    findings.extend(codex(env, &used));
    findings.extend(gemini(project, env, &used));
    findings.extend(opencode(project, env));
    findings
}

fn read_json(path: &Path) -> Option<Value> {
    let text = fs_err::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn home(env: &dyn UserEnv) -> PathBuf {
    env.home().unwrap_or_default()
}

/// `~/…` for a path under the home directory, for messages.
fn tilde(path: &Path, env: &dyn UserEnv) -> String {
    match path.strip_prefix(home(env)) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    }
}

/// What is wrong with a registered server's command, if anything.
fn command_finding(
    host: &str,
    command: Option<&str>,
    file: &str,
    env: &dyn UserEnv,
) -> Option<Finding> {
    let Some(command) = command.filter(|c| !c.is_empty()) else {
        return Some(Finding::miss(
            host,
            format!("the shepherd entry in {file} names no command"),
            "give it the command `shepherd` with the argument `mcp` (docs/mcp.md)",
        ));
    };
    which(command, env).is_none().then(|| {
        Finding::miss(
            host,
            format!("its shepherd entry runs `{command}`, which is not found"),
            format!(
                "install shepherd (cargo install --locked --path crates/shepherd), or give the entry in {file} its full path"
            ),
        )
    })
}

/// An absent host: not installed, or installed without Shepherd.
fn unregistered(host: &str, program: &str, env: &dyn UserEnv, add: &str) -> Finding {
    if which(program, env).is_none() {
        Finding::absent(host, "not installed")
    } else {
        Finding::absent(host, "Shepherd is not registered").with_fix(add)
    }
}

fn claude(project: &Path, env: &dyn UserEnv) -> Vec<Finding> {
    const HOST: &str = "claude-code";
    let config_dir = env
        .var("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let state_file = config_dir.as_ref().map_or_else(
        || home(env).join(".claude.json"),
        |d| d.join(".claude.json"),
    );
    let settings_dir = config_dir.unwrap_or_else(|| home(env).join(".claude"));
    let state = read_json(&state_file).unwrap_or(Value::Null);
    let project_key = project.display().to_string();
    let project_file = project.join(".mcp.json");
    let registered = [
        (
            &state["mcpServers"]["shepherd"],
            "user",
            tilde(&state_file, env),
        ),
        (
            &state["projects"][&project_key]["mcpServers"]["shepherd"],
            "local",
            tilde(&state_file, env),
        ),
    ]
    .into_iter()
    .find(|(entry, _, _)| entry.is_object())
    .map(|(entry, scope, file)| (entry.clone(), scope, file))
    .or_else(|| {
        let shared = read_json(&project_file)?;
        let entry = shared["mcpServers"]["shepherd"].clone();
        entry
            .is_object()
            .then(|| (entry, "project", project_file.display().to_string()))
    });
    let Some((entry, scope, file)) = registered else {
        return vec![unregistered(
            HOST,
            "claude",
            env,
            "claude mcp add --scope user shepherd -- shepherd mcp, then allow its tools (docs/mcp.md#claude-code)",
        )];
    };
    let mut findings = Vec::new();
    findings.extend(command_finding(HOST, entry["command"].as_str(), &file, env));
    let settings_files = [
        settings_dir.join("settings.json"),
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ];
    let allowed = settings_files.iter().find(|file| {
        read_json(file).is_some_and(|settings| {
            let allow = settings["permissions"]["allow"].as_array().cloned();
            allow
                .unwrap_or_default()
                .iter()
                .any(|rule| matches!(rule.as_str(), Some("mcp__shepherd" | "mcp__shepherd__*")))
        })
    });
    match allowed {
        Some(file) => {
            if findings.is_empty() {
                findings.push(Finding::ok(
                    HOST,
                    format!(
                        "Shepherd registered ({scope} scope), its tools allowed in {}",
                        tilde(file, env)
                    ),
                ));
            }
        }
        None => findings.push(Finding::miss(
            HOST,
            format!(
                "Shepherd registered ({scope} scope), but its tools are not allowed: `claude -p` refuses them (and exits 0), the TUI asks before each call"
            ),
            format!(
                "add {{\"permissions\": {{\"allow\": [\"mcp__shepherd\"]}}}} to {}, or pass --allowedTools mcp__shepherd after the prompt of each `claude -p`",
                tilde(&settings_dir.join("settings.json"), env)
            ),
        )),
    }
    findings
}

fn codex(env: &dyn UserEnv, used: &[Used]) -> Vec<Finding> {
    const HOST: &str = "codex";
    let codex_home = env
        .var("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home(env).join(".codex"), PathBuf::from);
    let file = codex_home.join("config.toml");
    let shown = tilde(&file, env);
    let config: Option<toml::Table> = fs_err::read_to_string(&file)
        .ok()
        .and_then(|text| text.parse().ok());
    let entry = config
        .as_ref()
        .and_then(|c| c.get("mcp_servers"))
        .and_then(|s| s.get("shepherd"))
        .and_then(toml::Value::as_table)
        .cloned();
    let Some(entry) = entry else {
        return vec![unregistered(
            HOST,
            "codex",
            env,
            &format!("the [mcp_servers.shepherd] block of docs/mcp.md#codex-cli in {shown}"),
        )];
    };
    let mut findings = Vec::new();
    if entry.get("enabled").and_then(toml::Value::as_bool) == Some(false) {
        findings.push(Finding::miss(
            HOST,
            format!("Shepherd is registered but disabled (enabled = false in {shown})"),
            format!("remove `enabled = false` under [mcp_servers.shepherd] in {shown}"),
        ));
    }
    findings.extend(command_finding(
        HOST,
        entry.get("command").and_then(toml::Value::as_str),
        &shown,
        env,
    ));
    if entry
        .get("default_tools_approval_mode")
        .and_then(toml::Value::as_str)
        != Some("approve")
    {
        findings.push(Finding::miss(
            HOST,
            "Shepherd registered, but its tool calls need approval: `codex exec` refuses them (and exits 0), the TUI asks before each call",
            format!(
                "add default_tools_approval_mode = \"approve\" under [mcp_servers.shepherd] in {shown}"
            ),
        ));
    }
    let mut passed: Vec<String> = CODEX_PASSES.iter().map(|v| (*v).to_owned()).collect();
    if let Some(names) = entry.get("env_vars").and_then(toml::Value::as_array) {
        passed.extend(names.iter().filter_map(|name| {
            match name {
                toml::Value::String(name) => Some(name.clone()),
                toml::Value::Table(table) => table
                    .get("name")
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned),
                _ => None,
            }
        }));
    }
    if let Some(set) = entry.get("env").and_then(toml::Value::as_table) {
        passed.extend(set.keys().cloned());
    }
    let kept: Vec<&Used> = used.iter().filter(|u| !passed.contains(&u.name)).collect();
    if !kept.is_empty() {
        findings.push(Finding::miss(
            HOST,
            format!(
                "Codex starts Shepherd with a bare environment and does not pass {}",
                needed_by(&kept)
            ),
            format!(
                "add env_vars = [{}] under [mcp_servers.shepherd] in {shown}",
                kept.iter()
                    .map(|u| format!("\"{}\"", u.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if findings.is_empty() {
        findings.push(Finding::ok(
            HOST,
            format!("Shepherd registered in {shown}, approved, and given what the sheep need"),
        ));
    }
    findings
}

/// `A (needed by x), B (needed by y, z)`.
fn needed_by(used: &[&Used]) -> String {
    used.iter()
        .map(|u| format!("{} (needed by {})", u.name, u.agents.join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn gemini(project: &Path, env: &dyn UserEnv, used: &[Used]) -> Vec<Finding> {
    const HOST: &str = "gemini";
    let gemini_home = env
        .var("GEMINI_CLI_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home(env), PathBuf::from);
    let user_file = gemini_home.join(".gemini/settings.json");
    let project_file = project.join(".gemini/settings.json");
    let user = read_json(&user_file).unwrap_or(Value::Null);
    let found = [(&user_file, &user)]
        .into_iter()
        .map(|(file, settings)| (file.clone(), settings.clone()))
        .chain(read_json(&project_file).map(|s| (project_file.clone(), s)))
        .find(|(_, settings)| settings["mcpServers"]["shepherd"].is_object());
    let Some((file, settings)) = found else {
        return vec![unregistered(
            HOST,
            "gemini",
            env,
            &format!("{GEMINI_ADD} (docs/mcp.md#gemini-cli)"),
        )];
    };
    let shown = tilde(&file, env);
    let entry = &settings["mcpServers"]["shepherd"];
    let mut findings = Vec::new();
    findings.extend(command_finding(
        HOST,
        entry["command"].as_str(),
        &shown,
        env,
    ));
    if entry["trust"] != Value::Bool(true) {
        findings.push(Finding::miss(
            HOST,
            "Shepherd registered, but not trusted: `gemini -p` does not offer its tools, the TUI asks before each call",
            format!("add \"trust\": true to the shepherd entry of mcpServers in {shown} (gemini mcp add … --trust)"),
        ));
    }
    let allowed: Vec<String> = [&user, &settings]
        .iter()
        .flat_map(|s| {
            s["security"]["environmentVariableRedaction"]["allowed"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_str().map(str::to_uppercase))
        .collect();
    let kept: Vec<&Used> = used
        .iter()
        .filter(|u| {
            let upper = u.name.to_uppercase();
            GEMINI_HIDES.iter().any(|part| upper.contains(part))
                && !upper.starts_with("GEMINI_CLI_")
                && !allowed.contains(&upper)
                && entry["env"].get(&u.name).is_none()
        })
        .collect();
    if !kept.is_empty() {
        findings.push(Finding::miss(
            HOST,
            format!(
                "Gemini CLI hides variables named like keys from MCP servers, so Shepherd would not get {}",
                needed_by(&kept)
            ),
            format!(
                "add \"env\": {{{}}} to the shepherd entry of mcpServers in {shown} (gemini mcp add … {})",
                kept.iter()
                    .map(|u| format!("\"{0}\": \"${0}\"", u.name))
                    .collect::<Vec<_>>()
                    .join(", "),
                kept.iter()
                    .map(|u| format!("-e '{0}=${0}'", u.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ));
    }
    if findings.is_empty() {
        findings.push(Finding::ok(
            HOST,
            format!("Shepherd registered in {shown}, trusted, and given what the sheep need"),
        ));
    }
    findings
}

fn opencode(project: &Path, env: &dyn UserEnv) -> Vec<Finding> {
    const HOST: &str = "opencode";
    let config_home = env
        .var("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home(env).join(".config"), PathBuf::from);
    let files = [
        config_home.join("opencode/opencode.json"),
        project.join("opencode.json"),
    ];
    let found = files.iter().find_map(|file| {
        let config = read_json(file)?;
        config["mcp"]["shepherd"]
            .is_object()
            .then(|| (file.clone(), config["mcp"]["shepherd"].clone()))
    });
    let Some((file, entry)) = found else {
        return vec![unregistered(
            HOST,
            "opencode",
            env,
            &format!(
                "{{\"mcp\": {{\"shepherd\": {{\"type\": \"local\", \"command\": [\"shepherd\", \"mcp\"]}}}}}} in {}",
                tilde(&files[0], env)
            ),
        )];
    };
    let shown = tilde(&file, env);
    let mut findings = Vec::new();
    if entry["enabled"] == Value::Bool(false) {
        findings.push(Finding::miss(
            HOST,
            format!("Shepherd is registered but disabled (\"enabled\": false in {shown})"),
            format!("remove \"enabled\": false from mcp.shepherd in {shown}"),
        ));
    }
    findings.extend(command_finding(
        HOST,
        entry["command"][0].as_str(),
        &shown,
        env,
    ));
    if findings.is_empty() {
        findings.push(Finding::ok(
            HOST,
            format!("Shepherd registered in {shown} (opencode passes its environment on)"),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::disallowed_methods,
        reason = "the test reads the repository's docs"
    )]

    use super::GEMINI_ADD;

    /// The `to add:` line for Gemini CLI is the one the README and docs/mcp.md give, word for
    /// word, so a user sees one line wherever they look.
    #[test]
    fn the_gemini_line_is_the_readmes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for doc in ["README.md", "docs/mcp.md"] {
            let text = fs_err::read_to_string(root.join(doc)).unwrap();
            assert!(
                text.lines().any(|line| line == GEMINI_ADD),
                "{doc} has no line `{GEMINI_ADD}`"
            );
        }
    }
}
