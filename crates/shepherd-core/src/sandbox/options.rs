//! What the user's settings file says about every sandbox, beyond which one: the directories a
//! confined sheep may read that Shepherd cannot find itself (`sandboxPaths`: an agent installed
//! behind a launcher the sandbox cannot follow).
//!
//! These keys live in the user file only, like `hosts`: a project's file may not widen what a
//! confined sheep sees. Reading is lenient, as for every setting: a malformed entry is left out
//! and reported, the rest applies.

use std::path::PathBuf;

use serde_json::Value;

/// The user's sandbox options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Directories (or files) every confined sheep on this machine may read.
    pub paths: Vec<PathBuf>,
}

/// An entry of the user's sandbox options that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {why}")]
pub struct SandboxOptionsWarning {
    /// The settings file.
    pub file: String,
    /// What was wrong and what would be accepted.
    pub why: String,
}

/// The key of the declared paths in the user settings file.
const SANDBOX_PATHS_KEY: &str = "sandboxPaths";

impl SandboxOptions {
    /// Reads the options of a parsed user settings file (`file` names it in warnings).
    pub fn from_settings(settings: &Value, file: &str) -> (Self, Vec<SandboxOptionsWarning>) {
        let mut options = Self::default();
        let mut warnings = Vec::new();
        let mut warn = |why: String| {
            warnings.push(SandboxOptionsWarning {
                file: file.to_owned(),
                why,
            });
        };
        match settings.get(SANDBOX_PATHS_KEY) {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => {
                for entry in entries {
                    match entry.as_str().map(PathBuf::from) {
                        Some(path) if path.is_absolute() => options.paths.push(path),
                        _ => warn(format!(
                            "{SANDBOX_PATHS_KEY} entry {entry} is left out: expected an \
                             absolute path"
                        )),
                    }
                }
            }
            Some(other) => warn(format!(
                "{SANDBOX_PATHS_KEY} {other} is left out: expected a list of absolute paths"
            )),
        }
        (options, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_are_kept_and_anything_else_is_reported() {
        let settings = serde_json::json!({"sandboxPaths": ["/opt/agents", "relative", 3]});
        let (options, warnings) = SandboxOptions::from_settings(&settings, "config.json");
        assert_eq!(options.paths, [PathBuf::from("/opt/agents")]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0]
                .to_string()
                .contains("\"relative\" is left out: expected an absolute path"),
            "{warnings:?}"
        );
        let (none, warnings) =
            SandboxOptions::from_settings(&serde_json::json!({"sandboxPaths": "/x"}), "f");
        assert!(none.paths.is_empty());
        assert!(
            warnings[0]
                .why
                .contains("expected a list of absolute paths")
        );
    }
}
