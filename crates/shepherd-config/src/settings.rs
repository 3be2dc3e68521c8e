//! The settings files: where they are, reading them leniently, and changing one key safely.
//!
//! The user file is `<pi agent dir>/pi-shepherd/config.json` and the project file
//! `<project>/.shepherd/config.json`, the original extension's paths, so its users keep their
//! settings. The original's earliest file name, `settings.json`, is renamed to `config.json` the
//! first time settings are read (when both exist, `config.json` wins and the old file is left
//! alone). Reading never fails: a missing, unreadable or malformed file counts as absent and is
//! reported in [`LoadedSettings::warnings`]. Writing checks the key and value first and touches
//! no file when either is wrong; it refuses to overwrite a file it cannot parse, and replaces
//! the file atomically.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use shepherd_core::dirs::UserDirs;
use shepherd_core::settings::{
    self, EffectiveSettings, InvalidSettingValue, Layer, LayerDoc, PROJECT_SCOPE_KEY, SettingKey,
    SettingSource, UnknownSettingKey, UserOnlyKey,
};

use crate::atomic::{lock_for_update, write_json_atomic};
use crate::error::ConfigError;

/// The settings file name, in both layers.
pub const SETTINGS_FILE: &str = "config.json";

/// The original's first user settings file name, migrated to [`SETTINGS_FILE`].
pub const LEGACY_SETTINGS_FILE: &str = "settings.json";

/// `<pi agent dir>/pi-shepherd/config.json`.
pub fn user_settings_file(dirs: &UserDirs) -> PathBuf {
    dirs.user_config_dir().join(SETTINGS_FILE)
}

/// `<project>/.shepherd/config.json`.
pub fn project_settings_file(project_root: &Path) -> PathBuf {
    project_root.join(".shepherd").join(SETTINGS_FILE)
}

/// The state of the project file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectFileState {
    /// There is no project file.
    Absent,
    /// It exists but does not say `"projectScope": true`; the user file applies.
    Dormant,
    /// It is the active layer.
    Active,
    /// It exists but could not be read or parsed; the user file applies.
    Unreadable,
}

/// A settings file problem found while reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingsFileWarning {
    /// The file.
    #[serde(serialize_with = "path_text")]
    pub file: PathBuf,
    /// What was wrong and what applies instead, in one line.
    pub message: String,
}

/// The effective settings of one project, with where they came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedSettings {
    /// Every setting's effective value: what the broker uses.
    pub settings: EffectiveSettings,
    /// Where each value came from.
    pub sources: IndexMap<SettingKey, SettingSource>,
    /// The layer that decides the non-user-only settings.
    pub active_layer: Layer,
    /// The user file's path (whether or not it exists).
    #[serde(serialize_with = "path_text")]
    pub user_file: PathBuf,
    /// The project file's path (whether or not it exists).
    #[serde(serialize_with = "path_text")]
    pub project_file: PathBuf,
    /// The project file's state.
    pub project_file_state: ProjectFileState,
    /// Files or values that were ignored.
    pub warnings: Vec<SettingsFileWarning>,
}

impl LoadedSettings {
    /// Where `key`'s value came from.
    pub fn source(&self, key: SettingKey) -> SettingSource {
        self.sources
            .get(&key)
            .copied()
            .unwrap_or(SettingSource::Default)
    }
}

/// Reads the settings that apply in `project_root`, migrating a legacy user file first.
pub fn load_settings(dirs: &UserDirs, project_root: &Path) -> LoadedSettings {
    let mut warnings = Vec::new();
    let user_file = user_settings_file(dirs);
    let user_source = migrate_legacy_user_file(&user_file, &mut warnings);
    let project_file = project_settings_file(project_root);

    let user = read_layer(&user_source, &mut warnings).ok().flatten();
    let project = read_layer(&project_file, &mut warnings);
    let resolved = settings::resolve(
        user.as_ref(),
        project.as_ref().ok().and_then(Option::as_ref),
    );
    let project_file_state = match &project {
        Err(()) => ProjectFileState::Unreadable,
        Ok(None) => ProjectFileState::Absent,
        Ok(Some(_)) if resolved.project_active => ProjectFileState::Active,
        Ok(Some(_)) => ProjectFileState::Dormant,
    };
    warnings.extend(resolved.warnings.into_iter().map(|warning| {
        let file = match warning.layer {
            Layer::User => user_source.clone(),
            Layer::Project => project_file.clone(),
        };
        SettingsFileWarning {
            file,
            message: warning.message,
        }
    }));
    LoadedSettings {
        settings: resolved.settings,
        sources: resolved.sources,
        active_layer: if resolved.project_active {
            Layer::Project
        } else {
            Layer::User
        },
        user_file,
        project_file,
        project_file_state,
        warnings,
    }
}

/// Renames a legacy `settings.json` to `config.json` when only the legacy file exists. Returns
/// the file to read the user layer from: the legacy file itself if the rename failed.
fn migrate_legacy_user_file(user_file: &Path, warnings: &mut Vec<SettingsFileWarning>) -> PathBuf {
    let legacy = user_file.with_file_name(LEGACY_SETTINGS_FILE);
    if user_file.exists() || !legacy.is_file() {
        return user_file.to_path_buf();
    }
    match fs_err::rename(&legacy, user_file) {
        Ok(()) => user_file.to_path_buf(),
        Err(err) => {
            warnings.push(SettingsFileWarning {
                file: legacy.clone(),
                message: format!("could not be renamed to {SETTINGS_FILE}; read in place ({err})"),
            });
            legacy
        }
    }
}

/// Reads one layer: `Ok(None)` when absent, `Err(())` (with a warning) when unusable.
fn read_layer(
    file: &Path,
    warnings: &mut Vec<SettingsFileWarning>,
) -> Result<Option<LayerDoc>, ()> {
    let text = match fs_err::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            warnings.push(SettingsFileWarning {
                file: file.to_path_buf(),
                message: format!("ignored: {err}"),
            });
            return Err(());
        }
    };
    settings::parse_layer(&text).map(Some).map_err(|err| {
        warnings.push(SettingsFileWarning {
            file: file.to_path_buf(),
            message: format!("ignored: the file is {err}"),
        });
    })
}

/// Why `set` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum SetSettingError {
    /// Not a setting.
    #[error(transparent)]
    UnknownKey(#[from] UnknownSettingKey),
    /// A value the key does not accept.
    #[error(transparent)]
    InvalidValue(#[from] InvalidSettingValue),
    /// A user-only key aimed at the project file.
    #[error(transparent)]
    UserOnly(#[from] UserOnlyKey),
    /// `projectScope` aimed at the user file.
    #[error(
        "projectScope switches the project file on or off, so it is only set there. Add --project."
    )]
    ProjectScopeNeedsProject,
    /// `projectScope` with a value other than true or false.
    #[error("Invalid value {0:?} for projectScope: expected true or false.")]
    InvalidProjectScope(String),
    /// The file to change, or its directory, could not be read or written.
    #[error(transparent)]
    File(#[from] ConfigError),
}

impl SetSettingError {
    /// The stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownKey(_) => ErrorCode::UnknownSetting,
            Self::InvalidValue(_) | Self::InvalidProjectScope(_) => ErrorCode::InvalidSetting,
            Self::UserOnly(_) | Self::ProjectScopeNeedsProject => ErrorCode::WrongSettingsLayer,
            Self::File(err) => err.code(),
        }
    }
}

/// What `set` wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetOutcome {
    /// The key, as in the file.
    pub key: String,
    /// The value written.
    pub value: Value,
    /// The layer written.
    pub layer: Layer,
    /// The file written.
    #[serde(serialize_with = "path_text")]
    pub file: PathBuf,
    /// Whether the file was created.
    pub created: bool,
    /// Whether the active project file decides this key, so the value written to the user
    /// file does not apply in this project.
    pub overridden_by_project: bool,
}

/// Checks `raw` for `key` and writes it to the user file, or with [`Layer::Project`] to the
/// project file of `project_root` (which that activates; `projectScope false` deactivates it).
pub fn set_setting(
    dirs: &UserDirs,
    project_root: &Path,
    key: &str,
    raw: &str,
    layer: Layer,
) -> Result<SetOutcome, SetSettingError> {
    if key == PROJECT_SCOPE_KEY {
        return set_project_scope(project_root, raw, layer);
    }
    let key = SettingKey::parse_name(key)?;
    let value = key.parse_input(raw)?;
    if layer == Layer::Project && key.is_user_only() {
        return Err(UserOnlyKey(key).into());
    }
    let file = match layer {
        Layer::User => user_settings_file(dirs),
        Layer::Project => project_settings_file(project_root),
    };
    let _guard = lock_for_update(&file)?;
    if layer == Layer::User {
        migrate_legacy_user_file(&file, &mut Vec::new());
    }
    let (mut doc, created) = read_for_update(&file)?;
    match layer {
        Layer::User => settings::set_in_user_layer(&mut doc, key, value.clone()),
        Layer::Project => settings::set_in_project_layer(&mut doc, key, value.clone())?,
    }
    write_json_atomic(&file, &doc)?;
    let overridden_by_project = layer == Layer::User
        && !key.is_user_only()
        && load_settings(dirs, project_root).active_layer == Layer::Project;
    Ok(SetOutcome {
        key: key.name().to_owned(),
        value,
        layer,
        file,
        created,
        overridden_by_project,
    })
}

fn set_project_scope(
    project_root: &Path,
    raw: &str,
    layer: Layer,
) -> Result<SetOutcome, SetSettingError> {
    let active = match raw.trim().to_lowercase().as_str() {
        "true" => true,
        "false" => false,
        _ => return Err(SetSettingError::InvalidProjectScope(raw.to_owned())),
    };
    if layer != Layer::Project {
        return Err(SetSettingError::ProjectScopeNeedsProject);
    }
    let file = project_settings_file(project_root);
    let _guard = lock_for_update(&file)?;
    let (mut doc, created) = read_for_update(&file)?;
    if active {
        settings::activate_project_layer(&mut doc);
    } else {
        settings::deactivate_project_layer(&mut doc);
    }
    write_json_atomic(&file, &doc)?;
    Ok(SetOutcome {
        key: PROJECT_SCOPE_KEY.to_owned(),
        value: Value::Bool(active),
        layer,
        file,
        created,
        overridden_by_project: false,
    })
}

/// Reads a file about to be changed. Unlike reading for use, a file that cannot be parsed is an
/// error: overwriting it would lose what is in it.
fn read_for_update(file: &Path) -> Result<(LayerDoc, bool), ConfigError> {
    match fs_err::read_to_string(file) {
        Ok(text) => settings::parse_layer(&text)
            .map(|doc| (doc, false))
            .map_err(|err| ConfigError::Malformed {
                path: file.to_path_buf(),
                reason: err.to_string(),
            }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok((LayerDoc::new(), true)),
        Err(err) => Err(ConfigError::io(file, err)),
    }
}

fn path_text<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

/// The hosts the user defined, read from the user settings file only (a project's file may not
/// define where Shepherd connects). A missing file is no hosts; an unreadable one is no hosts,
/// with the reason kept under the empty name.
pub fn load_hosts(dirs: &UserDirs) -> shepherd_core::hosts::Hosts {
    use shepherd_core::hosts::Hosts;
    let file = user_settings_file(dirs);
    let shown = file.display().to_string();
    let text = match fs_err::read_to_string(&file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Hosts::default(),
        Err(err) => return unusable(&shown, err.to_string()),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => Hosts::from_settings(&value, &shown),
        Err(err) => unusable(&shown, format!("the file is not valid JSON: {err}")),
    }
}

/// The user's sandbox options (`sandboxPaths`), read from the user settings file only (a
/// project's file may not widen what a confined sheep sees), with what was left out of them.
pub fn load_sandbox_options(
    dirs: &UserDirs,
) -> (
    shepherd_core::sandbox::SandboxOptions,
    Vec<shepherd_core::sandbox::SandboxOptionsWarning>,
) {
    use shepherd_core::sandbox::SandboxOptions;
    let file = user_settings_file(dirs);
    let shown = file.display().to_string();
    fs_err::read_to_string(&file)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|value| SandboxOptions::from_settings(&value, &shown))
        .unwrap_or_default()
}

/// The user's definition of host `name`, for a spawn or run in `project_root`. A host the
/// project's settings define but the user's do not is refused saying so, rather than as
/// unknown: the user then knows why the definition they see is not used.
pub fn host_def(
    dirs: &UserDirs,
    project_root: &Path,
    name: &str,
) -> Result<shepherd_core::hosts::HostDef, shepherd_core::hosts::HostError> {
    use shepherd_core::hosts::HostError;
    match load_hosts(dirs).get(name) {
        Ok(def) => Ok(def.clone()),
        Err(HostError::Unknown { .. }) if project_defines_host(project_root, name) => {
            Err(HostError::ProjectOnly {
                name: name.to_owned(),
                file: project_settings_file(project_root).display().to_string(),
            })
        }
        Err(err) => Err(err),
    }
}

/// Whether the project's settings file has an entry for host `name` (read only to say why it
/// is not used).
fn project_defines_host(project_root: &Path, name: &str) -> bool {
    fs_err::read_to_string(project_settings_file(project_root))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|settings| settings.get("hosts").and_then(|h| h.get(name)).is_some())
}

fn unusable(file: &str, why: String) -> shepherd_core::hosts::Hosts {
    let mut hosts = shepherd_core::hosts::Hosts::default();
    hosts.broken.insert(
        String::new(),
        shepherd_core::hosts::HostError::InvalidDefinition {
            name: String::new(),
            file: file.to_owned(),
            why,
        },
    );
    hosts
}
