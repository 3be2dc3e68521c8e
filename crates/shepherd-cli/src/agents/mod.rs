//! `shepherd agents …`: list, inspect and approve agent definitions.
//!
//! The listing is the same one the parent agent gets (`name (source): description`), so a
//! person sees exactly the names a spawn accepts. `show` prints a definition the way a spawn
//! will resolve it, `prompt` the whole system prompt a pi sheep of it gets, and `approve` records the user's consent to run a repository-controlled
//! definition as it is now.

use shepherd_core::error_code::ErrorCode;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use shepherd_config::discovery::Discovery;
use shepherd_config::{
    ApprovalState, ApproveOutcome, ConfigError, LoadedSettings, approval_state, approve_agent,
    discover_agents, load_settings,
};
use shepherd_core::agent_def::{AgentDef, AgentScope, AgentSource};
use shepherd_core::time::Timestamp;

use crate::Printer;
use crate::ProjectArg;
use shepherd_client::CliError;
use shepherd_client::Context;

mod prompt;

/// The arguments of `shepherd agents`; its one-line help is in `cli.rs`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Definitions are searched in this order, the first of a name winning: \
                  <pi agent dir>/agents and ~/.agents/agents (user), the nearest .pi/agents and \
                  .agents/agents above the project directory (project), then the bundled ones. \
                  Project agents come from the repository and run only once approved."
)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: Option<AgentsCommand>,

    #[command(flatten)]
    list: ListArgs,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// List the agent definitions (the default).
    List(ListArgs),
    /// Show one definition as a spawn resolves it: model, thinking, tools, command, file, hash
    /// and approval.
    Show(ShowArgs),
    /// Print the whole system prompt a pi sheep of this definition gets: pi's own prompt with
    /// the definition's body and flags applied, built by the pi sheep run, without calling a model.
    Prompt(prompt::PromptArgs),
    /// Approve a project agent's current contents so that it may run. Approval is bound to the
    /// file's path and contents: after an edit it must be approved again.
    Approve(ApproveArgs),
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    search: SearchArgs,

    /// Also show shadowed definitions, problems with definition files, and the project
    /// directories searched.
    #[arg(long, short)]
    verbose: bool,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// The agent's name (case-sensitive).
    name: String,

    #[command(flatten)]
    search: SearchArgs,
}

#[derive(Debug, Args)]
struct ApproveArgs {
    /// The project agent's name (case-sensitive).
    name: String,

    /// Where to look for it.
    #[arg(long, value_enum, default_value = "project")]
    scope: ScopeChoice,

    /// Approve only if the file's sha256 is still this one (the hash that `agents show`
    /// printed when it was reviewed), so an edit in between is never approved unseen.
    #[arg(long, value_name = "SHA256")]
    hash: Option<String>,

    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// Which definitions to search [default: the agentScope setting].
    #[arg(long, value_enum)]
    scope: Option<ScopeChoice>,

    #[command(flatten)]
    project: ProjectArg,
}

/// The `--scope` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ScopeChoice {
    /// `<pi agent dir>/agents`, `~/.agents/agents` and the bundled agents.
    User,
    /// The project's `.pi/agents` and `.agents/agents`, and the bundled agents.
    Project,
    /// All of them; user definitions win a name collision.
    Both,
}

impl From<ScopeChoice> for AgentScope {
    fn from(choice: ScopeChoice) -> Self {
        match choice {
            ScopeChoice::User => Self::User,
            ScopeChoice::Project => Self::Project,
            ScopeChoice::Both => Self::Both,
        }
    }
}

pub fn run(args: AgentsArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    match args.command.unwrap_or(AgentsCommand::List(args.list)) {
        AgentsCommand::List(list_args) => list(&list_args, ctx, *printer),
        AgentsCommand::Show(show_args) => show(&show_args, ctx, *printer),
        AgentsCommand::Approve(approve_args) => approve(&approve_args, ctx, *printer),
        AgentsCommand::Prompt(prompt_args) => return prompt::run(&prompt_args, ctx, *printer),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// The project root, settings and definitions one command works with.
struct Search {
    settings: LoadedSettings,
    project_root: PathBuf,
    discovery: Discovery,
}

impl Search {
    fn run(
        ctx: &Context,
        project: &ProjectArg,
        scope: Option<ScopeChoice>,
    ) -> Result<Self, CliError> {
        let project_root = project_root(ctx, project.project.as_deref())?;
        let settings = load_settings(&ctx.dirs, &project_root);
        let scope = scope.map_or(settings.settings.agent_scope, AgentScope::from);
        let discovery = discover_agents(
            &ctx.dirs,
            &project_root,
            scope,
            settings.settings.include_bundled_agents,
        );
        Ok(Self {
            settings,
            project_root,
            discovery,
        })
    }

    /// The named definition, or an error that lists the names and, when the name exists in
    /// another scope, says which `--scope` finds it.
    fn get(&self, ctx: &Context, name: &str) -> Result<&AgentDef, CliError> {
        self.discovery.get(name).map_err(|err| {
            let mut message = err.to_string();
            if self.discovery.scope != AgentScope::Both {
                let everywhere = discover_agents(
                    &ctx.dirs,
                    &self.project_root,
                    AgentScope::Both,
                    self.settings.settings.include_bundled_agents,
                );
                if let Some(def) = everywhere.find(name) {
                    let _ = write!(
                        message,
                        " {name:?} is a {} agent; add --scope {} or --scope both.",
                        def.source, def.source
                    );
                }
            }
            CliError::new(err.code(), message)
        })
    }
}

fn list(args: &ListArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let search = Search::run(ctx, &args.search.project, args.search.scope)?;
    let discovery = &search.discovery;
    printer.emit(discovery, || {
        let mut out = String::new();
        if discovery.agents.is_empty() {
            let _ = writeln!(
                out,
                "No agent definitions found in {} scope. Add a definition, or choose another \
                 scope with --scope.",
                discovery.scope
            );
        }
        for def in &discovery.agents {
            let _ = writeln!(out, "{}", summary_line(def));
        }
        if args.verbose {
            verbose_details(&mut out, discovery);
        } else if !discovery.warnings.is_empty() {
            let _ = writeln!(out, "\n{}", problems_hint(discovery));
        }
        out
    });
    Ok(())
}

fn summary_line(def: &AgentDef) -> String {
    format!("{} ({}): {}", def.name, def.source, def.description)
}

fn verbose_details(out: &mut String, discovery: &Discovery) {
    if !discovery.shadowed.is_empty() {
        let _ = writeln!(out, "\nShadowed (not used):");
        for shadowed in &discovery.shadowed {
            let _ = writeln!(
                out,
                "  {} [{}; shadowed by {}]",
                summary_line(&shadowed.def),
                shadowed.def.file_display(),
                shadowed.shadowed_by.display()
            );
        }
    }
    if !discovery.warnings.is_empty() {
        let _ = writeln!(out, "\nProblems:");
        for warning in &discovery.warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    if discovery.scope.includes_project() {
        let dirs: Vec<String> = discovery
            .project_dirs
            .iter()
            .map(|dir| dir.display().to_string())
            .collect();
        let found = if dirs.is_empty() {
            "none found".to_owned()
        } else {
            dirs.join(", ")
        };
        let _ = writeln!(out, "\nProject agent directories: {found}");
    }
}

fn problems_hint(discovery: &Discovery) -> String {
    let skipped = discovery.warnings.iter().filter(|w| w.skipped).count();
    let ignored = discovery.warnings.len() - skipped;
    let mut parts = Vec::new();
    if skipped > 0 {
        parts.push(format!("skipped {}", plural(skipped, "definition file")));
    }
    if ignored > 0 {
        parts.push(format!("ignored {}", plural(ignored, "frontmatter value")));
    }
    let mut text = parts.join(" and ");
    if let Some(first) = text.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    format!("{text}; run `shepherd agents --verbose` to see why.")
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[derive(Serialize)]
struct ShownAgent<'a> {
    #[serde(flatten)]
    def: &'a AgentDef,
    approval: ApprovalState,
    /// The sandbox a spawn of it runs in (unless the person's own `--sandbox` says otherwise),
    /// with the user's setting as its floor.
    runs_in: shepherd_core::sandbox::Sandbox,
}

fn show(args: &ShowArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let search = Search::run(ctx, &args.search.project, args.search.scope)?;
    let def = search.get(ctx, &args.name)?;
    let confirm = search.settings.settings.confirm_project_agents;
    let approval = approval_state(&ctx.dirs, def, confirm).map_err(|err| config_error(&err))?;
    let setting = search.settings.settings.sandbox;
    let runs_in = shepherd_core::sandbox::SandboxChoices {
        setting,
        definition: def.sandbox,
        definition_from_project: def.source == AgentSource::Project,
        ..shepherd_core::sandbox::SandboxChoices::default()
    }
    .decide();
    let sandbox = sandbox_text(def, setting, runs_in);
    printer.emit(
        &ShownAgent {
            def,
            approval,
            runs_in,
        },
        || {
            let tools = def
                .tools
                .as_ref()
                .map_or_else(|| "pi's defaults".to_owned(), |tools| tools.join(", "));
            let command = def.command.as_ref().map_or_else(
                || "pi".to_owned(),
                |argv| {
                    argv.iter()
                        .map(|arg| shell_word(arg))
                        .collect::<Vec<_>>()
                        .join(" ")
                },
            );
            let mut rows = vec![
                ("source", def.source.to_string()),
                ("file", def.file_display()),
                ("hash", def.content_hash.clone()),
                ("model", def.model.to_string()),
                ("thinking", def.thinking.to_string()),
                ("tools", tools),
                ("command", command),
                ("sandbox", sandbox),
                ("network", def.network.to_string()),
                ("omit-system-prompt", def.omit_system_prompt.to_string()),
                (
                    "omit-pi-documentation",
                    def.omit_pi_documentation.to_string(),
                ),
                ("omit-context-files", def.omit_context_files.to_string()),
                ("user-invocable", def.user_invocable.to_string()),
                ("approval", approval_text(def, approval, confirm)),
            ];
            if let Some(host) = &def.host {
                // Where its sheep run, as spawn, status and the notes say it.
                rows.insert(
                    rows.iter()
                        .position(|(key, _)| *key == "sandbox")
                        .unwrap_or(0),
                    ("host", format!("{host} (its sheep run there)")),
                );
            }
            if !def.needs_env.is_empty() {
                rows.push(("needs-env", def.needs_env.join(", ")));
            }
            rows.extend(
                def.extra
                    .iter()
                    .map(|(key, value)| (key.as_str(), value.to_string())),
            );
            let width = rows.iter().map(|(key, _)| key.len()).max().unwrap_or(0) + 1;
            let mut out = format!("{}\n", summary_line(def));
            for (key, value) in rows {
                let _ = writeln!(out, "  {:<width$} {value}", format!("{key}:"));
            }
            let _ = write!(out, "\n{}\n", def.system_prompt);
            out
        },
    );
    Ok(())
}

/// What the definition asks for and what a spawn of it gets: a project's definition never
/// confines less than the user's setting.
fn sandbox_text(
    def: &AgentDef,
    setting: shepherd_core::sandbox::Sandbox,
    runs_in: shepherd_core::sandbox::Sandbox,
) -> String {
    match def.sandbox {
        None => format!("{runs_in} (the sandbox setting)"),
        Some(asked) if asked == runs_in => asked.to_string(),
        Some(asked) => format!(
            "{runs_in} (it asks for {asked}; a project definition cannot go below the sandbox \
             setting, {setting})"
        ),
    }
}

fn approval_text(def: &AgentDef, approval: ApprovalState, confirm: bool) -> String {
    let approve = format!("`shepherd agents approve {}`", def.name);
    match approval {
        ApprovalState::NotRequired if def.source == AgentSource::Project && !confirm => {
            "not required (confirmProjectAgents is off)".to_owned()
        }
        ApprovalState::NotRequired => format!("not required ({} definition)", def.source),
        ApprovalState::Approved => "approved".to_owned(),
        ApprovalState::Required => format!("required: review the file, then run {approve}"),
        ApprovalState::Changed => {
            format!("changed since it was approved: review the file, then run {approve}")
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Approved<'a> {
    name: &'a str,
    source: AgentSource,
    file: String,
    content_hash: &'a str,
    outcome: ApproveOutcome,
}

fn approve(args: &ApproveArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let search = Search::run(ctx, &args.project, Some(args.scope))?;
    let def = search.get(ctx, &args.name)?;
    if let Some(reviewed) = &args.hash
        && !reviewed.eq_ignore_ascii_case(&def.content_hash)
    {
        return Err(CliError::new(
            ErrorCode::DefinitionChanged,
            format!(
                "{:?} ({}) is not the file that was reviewed: its sha256 is {}, not {reviewed:?}; \
                 review it again (`shepherd agents show {}`) and approve that",
                def.name,
                def.file_display(),
                def.content_hash,
                def.name
            ),
        ));
    }
    let outcome =
        approve_agent(&ctx.dirs, def, Timestamp::now()).map_err(|err| config_error(&err))?;
    let report = Approved {
        name: &def.name,
        source: def.source,
        file: def.file_display(),
        content_hash: &def.content_hash,
        outcome,
    };
    printer.emit(&report, || {
        let short_hash = def.content_hash.get(..12).unwrap_or_default();
        let mut text = match outcome {
            ApproveOutcome::Approved => format!(
                "Approved project agent {:?} ({}, sha256 {short_hash}…).",
                def.name, report.file
            ),
            ApproveOutcome::AlreadyApproved => format!(
                "Project agent {:?} is already approved as it is ({}).",
                def.name, report.file
            ),
            ApproveOutcome::NotNeeded => format!(
                "{:?} is a {} agent; only project agents need approval.",
                def.name, def.source
            ),
        };
        if outcome != ApproveOutcome::NotNeeded && !search.settings.settings.confirm_project_agents
        {
            text.push_str(" (confirmProjectAgents is off, so project agents run without it.)");
        }
        text
    });
    Ok(())
}

/// `--project DIR`, or the current directory, made canonical (`..` and symlinks resolved) so
/// that paths shown and approvals recorded are the same whichever way the project was named.
pub(crate) fn project_root(ctx: &Context, project: Option<&Path>) -> Result<PathBuf, CliError> {
    let root = ctx.project_root(project);
    if root.is_dir() {
        Ok(fs_err::canonicalize(&root).unwrap_or(root))
    } else {
        Err(CliError::new(
            ErrorCode::InvalidArgument,
            format!(
                "The project directory {} does not exist; pass an existing directory to --project.",
                root.display()
            ),
        ))
    }
}

pub(crate) fn config_error(err: &ConfigError) -> CliError {
    CliError::new(err.code(), err.to_string())
}

/// `arg` as a POSIX shell would need it written.
fn shell_word(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}
