//! `shepherd settings …`: show, read and change settings.
//!
//! Showing settings says which file decides each value, because with a project file in play
//! the answer is not obvious: an active project file stands alone, a dormant one does nothing,
//! and some keys only ever come from the user file.

use shepherd_core::error_code::ErrorCode;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;
use shepherd_config::settings::ProjectFileState;
use shepherd_config::{LoadedSettings, SetOutcome, load_settings, set_setting};
use shepherd_core::settings::{
    Layer, PROJECT_SCOPE_KEY, SettingKey, SettingSource, UnknownSettingKey,
};

use super::agents::project_root;
use crate::Printer;
use crate::ProjectArg;
use shepherd_client::CliError;
use shepherd_client::Context;

/// The arguments of `shepherd settings`; its one-line help is in `cli.rs`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Settings live in <pi agent dir>/pi-shepherd/config.json and, for one project, in \
                  <project>/.shepherd/config.json. The project file applies only while it \
                  contains \"projectScope\": true, and then it stands alone: keys it does not \
                  set take their defaults, not the user file's values. confirmProjectAgents, \
                  subagentCompatibility and maxDepth always come from the user file."
)]
pub struct SettingsArgs {
    #[command(subcommand)]
    command: Option<SettingsCommand>,

    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Subcommand)]
enum SettingsCommand {
    /// Show every setting, its value and where it comes from (the default).
    Show {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Print one setting's effective value.
    Get {
        /// The setting, as written in the files (e.g. `timeout`).
        key: String,

        #[command(flatten)]
        project: ProjectArg,
    },
    /// Change one setting in the user file, or with --project in the project file (which that
    /// activates). `projectScope true|false --project` switches the project file on or off.
    Set {
        /// The setting, as written in the files (e.g. `timeout`).
        key: String,

        /// The new value; an invalid value changes nothing.
        value: String,

        /// Write the project file of DIR (default: the current directory) instead of the user
        /// file.
        #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
        project: Option<PathBuf>,
    },
}

pub fn run(args: SettingsArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    match args.command {
        None => show(&args.project, ctx, *printer),
        Some(SettingsCommand::Show { project }) => show(&project, ctx, *printer),
        Some(SettingsCommand::Get { key, project }) => get(&key, &project, ctx, *printer),
        Some(SettingsCommand::Set {
            key,
            value,
            project,
        }) => set(&key, &value, project.as_deref(), ctx, *printer),
    }?;
    Ok(ExitCode::SUCCESS)
}

fn show(project: &ProjectArg, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let root = project_root(ctx, project.project.as_deref())?;
    let loaded = load_settings(&ctx.dirs, &root);
    printer.emit(&loaded, || {
        let mut out = String::new();
        let (active_file, note) = match loaded.active_layer {
            Layer::User => (&loaded.user_file, ""),
            Layer::Project => (
                &loaded.project_file,
                "; user-only keys come from the user file",
            ),
        };
        let _ = writeln!(
            out,
            "Active layer: {} ({}){note}",
            loaded.active_layer,
            active_file.display()
        );
        let _ = writeln!(
            out,
            "Project file: {} ({})\n",
            loaded.project_file.display(),
            project_state_text(loaded.project_file_state)
        );
        let rows: Vec<(&str, String, String)> = SettingKey::ALL
            .into_iter()
            .map(|key| {
                let mut source = loaded.source(key).to_string();
                if key.is_user_only() {
                    source.push_str(", user only");
                }
                (key.name(), plain(&loaded.settings.get(key)), source)
            })
            .collect();
        let key_width = rows.iter().map(|row| row.0.len()).max().unwrap_or(0);
        let value_width = rows.iter().map(|row| row.1.len()).max().unwrap_or(0);
        for (key, value, source) in rows {
            let _ = writeln!(out, "{key:<key_width$}  {value:<value_width$}  {source}");
        }
        append_warnings(&mut out, &loaded);
        out
    });
    Ok(())
}

fn project_state_text(state: ProjectFileState) -> &'static str {
    match state {
        ProjectFileState::Absent => "none",
        ProjectFileState::Dormant => {
            "dormant: `shepherd settings set projectScope true --project` activates it"
        }
        ProjectFileState::Active => "active",
        ProjectFileState::Unreadable => "unreadable, ignored",
    }
}

fn append_warnings(out: &mut String, loaded: &LoadedSettings) {
    if !loaded.warnings.is_empty() {
        let _ = writeln!(out);
    }
    for warning in &loaded.warnings {
        let _ = writeln!(
            out,
            "warning: {}: {}",
            warning.file.display(),
            warning.message
        );
    }
}

#[derive(Serialize)]
struct GotSetting {
    key: String,
    value: Value,
    source: SettingSource,
}

fn get(key: &str, project: &ProjectArg, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let root = project_root(ctx, project.project.as_deref())?;
    let loaded = load_settings(&ctx.dirs, &root);
    let got = if key == PROJECT_SCOPE_KEY {
        GotSetting {
            key: key.to_owned(),
            value: Value::Bool(loaded.active_layer == Layer::Project),
            source: match loaded.project_file_state {
                ProjectFileState::Absent | ProjectFileState::Unreadable => SettingSource::Default,
                ProjectFileState::Dormant | ProjectFileState::Active => SettingSource::Project,
            },
        }
    } else {
        let setting = SettingKey::parse_name(key).map_err(|err| unknown_setting(&err))?;
        GotSetting {
            key: setting.name().to_owned(),
            value: loaded.settings.get(setting),
            source: loaded.source(setting),
        }
    };
    printer.emit(&got, || plain(&got.value));
    Ok(())
}

fn set(
    key: &str,
    value: &str,
    project: Option<&Path>,
    ctx: &Context,
    printer: Printer,
) -> Result<(), CliError> {
    let layer = if project.is_some() {
        Layer::Project
    } else {
        Layer::User
    };
    let root = project_root(ctx, project)?;
    let outcome = set_setting(&ctx.dirs, &root, key, value, layer)
        .map_err(|err| CliError::new(err.code(), err.to_string()))?;
    printer.emit(&outcome, || set_text(&outcome));
    Ok(())
}

fn set_text(outcome: &SetOutcome) -> String {
    let file = outcome.file.display();
    if outcome.key == PROJECT_SCOPE_KEY {
        return if outcome.value == Value::Bool(true) {
            format!("Activated the project file {file}; its values now apply in this project.")
        } else {
            format!(
                "Deactivated the project file {file}; the user file applies. Its values are kept."
            )
        };
    }
    let created = if outcome.created { " (created)" } else { "" };
    let mut text = format!(
        "Set {} to {} in {file}{created}.",
        outcome.key,
        plain(&outcome.value)
    );
    if outcome.overridden_by_project {
        let _ = write!(
            text,
            " The project file is active here and decides {}; add --project to change it there.",
            outcome.key
        );
    }
    text
}

fn unknown_setting(err: &UnknownSettingKey) -> CliError {
    CliError::new(ErrorCode::UnknownSetting, err.to_string())
}

/// A JSON value as a person types it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
