//! The pi sheep extension as shipped in this binary, and the flags that give pi a sheep's
//! definition.
//!
//! A pi sheep is pi with Shepherd's sheep extension loaded (`-e`), which is a client of the
//! broker like every front end; it ships inside this binary and is written to disk on first
//! use, under a directory named by a digest of its content, so the extension a sheep loads
//! always speaks this build's protocol. The broker starts pi sheep with it, and
//! `shepherd agents prompt` starts pi the same way to show the system prompt a sheep would get,
//! so both take the files and the definition's flags from here.

use std::path::{Path, PathBuf};

use shepherd_core::agent_def::AgentDef;

/// The sheep extension, the protocol client it imports, the client's generated protocol types,
/// the receipt words it shares with the parent, the generated tool catalogue its tools are
/// written from and how it tells it runs as a sheep, as shipped in this binary.
const SHEEP_EXTENSION: &str = include_str!("../../../integrations/pi/extensions/shepherd-sheep.ts");
const BROKER_CLIENT: &str = include_str!("../../../integrations/pi/extensions/lib/broker.ts");
const PROTOCOL_TYPES: &str =
    include_str!("../../../integrations/pi/extensions/lib/protocol-types.ts");
const RECEIPT_WORDS: &str = include_str!("../../../integrations/pi/extensions/lib/receipts.ts");
const TOOL_CATALOGUE: &str =
    include_str!("../../../integrations/pi/extensions/lib/tool-catalogue.ts");
const SHEEP_LAUNCH: &str = include_str!("../../../integrations/pi/extensions/lib/sheep-launch.ts");

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
    /// The arguments (the whole command line when the broker launches a sheep, only
    /// the flags in [`definition_args`]).
    pub argv: Vec<String>,
    /// Environment variables pi needs on top of the sheep's own.
    pub env: Vec<(String, String)>,
}

/// The shipped sheep extension's files, relative to its directory (the entry point first).
pub fn extension_files() -> [(&'static str, &'static str); 6] {
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
pub fn extension_digest() -> String {
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

/// The flags and environment that give pi a sheep's definition: its model and thinking level,
/// its tools (with the two every sheep needs), context files, and its system prompt, whose body
/// is at `prompt` (replacing pi's prompt, or pi's identity sentence in the sheep extension).
pub fn definition_args(
    def: &AgentDef,
    model: Option<String>,
    thinking: Option<shepherd_core::agent_def::ThinkingLevel>,
    prompt: &Path,
) -> PiLaunch {
    let mut argv: Vec<String> = Vec::new();
    if let Some(model) = model {
        argv.extend(["--model".into(), model]);
    }
    if let Some(thinking) = thinking {
        argv.extend(["--thinking".into(), thinking.as_str().to_owned()]);
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
