//! What the user's settings file says about every sandbox, beyond which one: the directories a
//! confined sheep may read that Shepherd cannot find itself (`sandboxPaths`: an agent installed
//! behind a launcher the sandbox cannot follow).
//!
//! It also holds the user's resource limits for every sheep, confined or not (`limits`): the
//! defaults a definition starts from.
//!
//! These keys live in the user file only, like `hosts`: a project's file may not widen what a
//! confined sheep sees, nor lift the limits the user set. Reading is lenient, as for every setting: a malformed entry is left out
//! and reported, the rest applies.

use std::path::PathBuf;

use serde_json::Value;

/// The user's sandbox options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Directories (or files) every confined sheep on this machine may read.
    pub paths: Vec<PathBuf>,
    /// The limits every sheep starts from (`limits`), over the built-in defaults.
    pub limits: crate::resources::LimitsLayer,
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
/// The key of the resource limits in the user settings file.
const LIMITS_KEY: &str = "limits";

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
        options.limits = limits(settings.get(LIMITS_KEY), &mut warn);
        (options, warnings)
    }
}

/// Reads `limits` key by key: a bad key is left out and reported, the others apply.
fn limits(value: Option<&Value>, warn: &mut impl FnMut(String)) -> crate::resources::LimitsLayer {
    use crate::resources::LimitsLayer;
    let mut layer = LimitsLayer::default();
    let entries = match value {
        None | Some(Value::Null) => return layer,
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            if let Err(err) = LimitsLayer::from_json(Some(other)) {
                warn(format!("{err}; left out"));
            }
            return layer;
        }
    };
    for (key, value) in entries {
        let one = serde_json::json!({ key: value });
        match LimitsLayer::from_json(Some(&one)) {
            Ok(read) => {
                layer.pids = read.pids.or(layer.pids);
                layer.memory = read.memory.or(layer.memory);
                layer.cpus = read.cpus.or(layer.cpus);
                layer.disk = read.disk.or(layer.disk);
            }
            Err(err) => warn(format!("{err}; left out")),
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_read_key_by_key_and_a_bad_one_is_left_out_and_reported() {
        use crate::resources::{Bytes, Cap};
        let settings = serde_json::json!({"limits": {"memory": "2G", "pids": "many"}});
        let (options, warnings) = SandboxOptions::from_settings(&settings, "config.json");
        assert_eq!(options.limits.memory, Some(Cap::At(Bytes(2 << 30))));
        assert_eq!(options.limits.pids, None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0]
                .to_string()
                .starts_with("config.json: invalid limits.pids \"many\": expected a whole number"),
            "{warnings:?}"
        );
        let (none, warnings) =
            SandboxOptions::from_settings(&serde_json::json!({"limits": 3}), "f");
        assert!(none.limits.is_empty());
        assert_eq!(warnings.len(), 1);
    }

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
