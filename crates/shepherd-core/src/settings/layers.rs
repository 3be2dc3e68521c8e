//! Layering: how the user file and the project file combine, and how each is edited.
//!
//! A project file is *dormant* unless it says `"projectScope": true` (or, as the intermediate
//! original format did, `"settingsScope": "project"`). An active project file is self-contained:
//! every key it does not set takes its built-in default, never the user's value, so a project
//! behaves the same for everyone who clones it. User-only keys always come from the user file.
//! Edits change one key and keep everything else in the file, unknown keys included.
//!
//! A settings file is kept as its parsed JSON object, unknown keys included, so an edit
//! writes back everything it did not change.

use std::fmt;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use super::{EffectiveSettings, SettingKey};

/// A settings file's top-level JSON object, keys in file order.
pub type LayerDoc = serde_json::Map<String, Value>;

/// The project file's activation flag.
pub const PROJECT_SCOPE_KEY: &str = "projectScope";

/// The intermediate original format's activation marker (`"settingsScope": "project"`), read
/// for compatibility and replaced by [`PROJECT_SCOPE_KEY`] whenever Shepherd writes the file.
const LEGACY_SCOPE_KEY: &str = "settingsScope";

/// Which settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// `<pi agent dir>/pi-shepherd/config.json`.
    User,
    /// `<project>/.shepherd/config.json`.
    Project,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::User => "user",
            Self::Project => "project",
        })
    }
}

/// Where an effective value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SettingSource {
    /// The built-in default.
    Default,
    /// The user file.
    User,
    /// The active project file.
    Project,
}

impl fmt::Display for SettingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::User => "user",
            Self::Project => "project",
        })
    }
}

/// A stored value that was not used, and why. The setting falls back to its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingsWarning {
    /// The file it was found in.
    pub layer: Layer,
    /// One line naming the key, the value and what applies instead.
    pub message: String,
}

/// Why a settings file's text is not a settings object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerParseError {
    /// Not JSON.
    #[error("not valid JSON ({0})")]
    Json(String),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
}

/// Parses a settings file's text. A blank file is an empty object.
pub fn parse_layer(text: &str) -> Result<LayerDoc, LayerParseError> {
    if text.trim().is_empty() {
        return Ok(LayerDoc::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(doc)) => Ok(doc),
        Ok(_) => Err(LayerParseError::NotAnObject),
        Err(err) => Err(LayerParseError::Json(err.to_string())),
    }
}

/// Whether a project file is active.
pub fn is_project_layer_active(doc: &LayerDoc) -> bool {
    match doc.get(PROJECT_SCOPE_KEY) {
        Some(Value::Bool(active)) => *active,
        _ => doc.get(LEGACY_SCOPE_KEY).and_then(Value::as_str) == Some("project"),
    }
}

/// The effective settings, where each value came from, and what was ignored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedSettings {
    /// Every setting's effective value.
    pub settings: EffectiveSettings,
    /// Where each value came from, keys in [`SettingKey::ALL`] order.
    pub sources: IndexMap<SettingKey, SettingSource>,
    /// Whether the project file is the active layer.
    pub project_active: bool,
    /// Stored values that were not valid and fell back to their defaults.
    pub warnings: Vec<SettingsWarning>,
}

impl ResolvedSettings {
    /// Where `key`'s effective value came from.
    pub fn source(&self, key: SettingKey) -> SettingSource {
        self.sources
            .get(&key)
            .copied()
            .unwrap_or(SettingSource::Default)
    }
}

/// Combines the two files (`None` when a file is absent or unreadable).
pub fn resolve(user: Option<&LayerDoc>, project: Option<&LayerDoc>) -> ResolvedSettings {
    let project = project.filter(|doc| is_project_layer_active(doc));
    let empty = LayerDoc::new();
    let mut resolved = ResolvedSettings {
        settings: EffectiveSettings::default(),
        sources: SettingKey::ALL
            .into_iter()
            .map(|key| (key, SettingSource::Default))
            .collect(),
        project_active: project.is_some(),
        warnings: Vec::new(),
    };
    for key in SettingKey::ALL {
        let (layer, doc) = match project {
            Some(doc) if !key.is_user_only() => (Layer::Project, doc),
            _ => (Layer::User, user.unwrap_or(&empty)),
        };
        let Some(stored) = doc.get(key.name()) else {
            continue;
        };
        match key.read_stored(stored) {
            Some(value) => {
                resolved.settings.set_checked(key, &value);
                let source = match layer {
                    Layer::User => SettingSource::User,
                    Layer::Project => SettingSource::Project,
                };
                resolved.sources.insert(key, source);
            }
            None => resolved.warnings.push(SettingsWarning {
                layer,
                message: format!(
                    "{key}: {stored} is not valid (expected {accepted}); using the default {default}",
                    accepted = key.accepted(),
                    default = EffectiveSettings::default().get(key),
                ),
            }),
        }
    }
    if let Some(doc) = project {
        for key in SettingKey::ALL.into_iter().filter(|key| key.is_user_only()) {
            if doc.contains_key(key.name()) {
                resolved.warnings.push(SettingsWarning {
                    layer: Layer::Project,
                    message: format!(
                        "{key} is ignored here: only the user file may set it, so a repository \
                         cannot change it"
                    ),
                });
            }
        }
    }
    resolved
}

/// A user-only key given for the project file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0} can only be set in the user file: a project file must not change it. Run the command \
     without --project."
)]
pub struct UserOnlyKey(pub SettingKey);

/// Sets `key` in the user file. The project activation keys never belong there and are dropped.
pub fn set_in_user_layer(doc: &mut LayerDoc, key: SettingKey, value: Value) {
    doc.insert(key.name().to_owned(), value);
    doc.shift_remove(PROJECT_SCOPE_KEY);
    doc.shift_remove(LEGACY_SCOPE_KEY);
}

/// Sets `key` in the project file and activates it (see [`activate_project_layer`]).
pub fn set_in_project_layer(
    doc: &mut LayerDoc,
    key: SettingKey,
    value: Value,
) -> Result<(), UserOnlyKey> {
    if key.is_user_only() {
        return Err(UserOnlyKey(key));
    }
    activate_project_layer(doc);
    doc.insert(key.name().to_owned(), value);
    Ok(())
}

/// Activates a project file. Because an active project file stands alone, every project key it
/// does not set yet is written with its default, so the file shows everything it decides.
pub fn activate_project_layer(doc: &mut LayerDoc) {
    let defaults = EffectiveSettings::default();
    for key in SettingKey::ALL
        .into_iter()
        .filter(|key| !key.is_user_only())
    {
        if !doc.contains_key(key.name()) {
            doc.insert(key.name().to_owned(), defaults.get(key));
        }
    }
    doc.insert(PROJECT_SCOPE_KEY.to_owned(), Value::Bool(true));
    doc.shift_remove(LEGACY_SCOPE_KEY);
}

/// Makes a project file dormant without losing its values.
pub fn deactivate_project_layer(doc: &mut LayerDoc) {
    doc.insert(PROJECT_SCOPE_KEY.to_owned(), Value::Bool(false));
    doc.shift_remove(LEGACY_SCOPE_KEY);
}
