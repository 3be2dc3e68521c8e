//! The top of the command tree. Each command group's arguments live beside its code in
//! `commands/<group>.rs`; their doc comments are the help text.

use clap::{Parser, Subcommand};

use shepherd_cli as commands;

/// Shepherd: spawn, task, message, watch and close coding agents, with a durable note for every
/// delegated task.
#[derive(Debug, Parser)]
#[command(name = "shepherd", version = env!("SHEPHERD_VERSION"), max_term_width = 100)]
pub(crate) struct Cli {
    /// Print exactly one compact JSON document on one line instead of human text.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `shepherd supervise` alone: the supervisor's lean entry (see `main`).
#[derive(Debug, Parser)]
#[command(name = "supervise")]
pub(crate) struct SuperviseOnly {
    #[command(flatten)]
    pub(crate) args: shepherd_sheep::supervise::SuperviseArgs,
}

/// `shepherd sandbox-enter`'s arguments alone, for the same lean start inside every sandbox.
#[derive(Debug, clap::Parser)]
#[command(name = "shepherd sandbox-enter")]
pub(crate) struct EnterOnly {
    #[command(flatten)]
    pub(crate) args: shepherd_sheep::supervise::EnterArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Delegate in one call: spawn, hand over, wait, collect the result, close (single, parallel
    /// or chain).
    Run(Box<commands::run::RunArgs>),
    /// Start an idle sheep from an agent definition.
    Spawn(commands::parent::SpawnArgs),
    /// Hand a sheep a tracked task (returns at once with its task id).
    Delegate(commands::parent::DelegateArgs),
    /// Message a sheep.
    Message(commands::parent::MessageArgs),
    /// Wait for tasks to settle and print what settled.
    Watch(commands::parent::WatchArgs),
    /// Show a sheep's state and task, or every sheep's (inside a sheep: its own).
    Status(commands::status::StatusArgs),
    /// Close a sheep (its open task is cancelled).
    Close(commands::parent::CloseArgs),
    /// Reopen a closed or exited sheep on its own session, under the same name (pi).
    Resume(commands::controls::ResumeArgs),
    /// Show a sheep's recent output.
    Read(commands::parent::ReadArgs),
    /// List the herd (`--tui`: the live dashboard).
    Herd(commands::status::HerdListArgs),
    /// List the herds of this project (or every herd, `--all`): who drives each, its broker,
    /// its sheep.
    Herds(commands::herds::HerdsArgs),
    /// The live herd dashboard in the terminal (the same as `herd --tui`).
    Dash(shepherd_dash::DashArgs),
    /// Serve the herd and its fieldnotes to a browser on this machine: a live board, the notes
    /// as linked pages, and replies, messages and closes (prints a URL with a token).
    Web(shepherd_web::WebArgs),
    /// Land branches isolated sheep and tasks left into a target branch, one by one, with a
    /// check and conflict hand-off (a merge queue).
    Merge(commands::merge::MergeArgs),
    /// Forget sheep whose processes are gone.
    Prune(commands::parent::PruneArgs),
    /// Print and acknowledge what was delivered: inside a sheep its own inbox, else the parent's.
    Inbox(commands::sheep::InboxArgs),
    /// Inside a sheep: message the parent or a herd-mate.
    Tell(commands::sheep::TellArgs),
    /// Inside a sheep: finish its task (completed, blocked or failed).
    Done(commands::sheep::DoneArgs),
    /// Inside a sheep: print the path of its task's note.
    Note(commands::sheep::NoteArgs),
    /// Inside a sheep: report its run's lifecycle (for integrations).
    #[command(hide = true)]
    Report(commands::sheep::ReportArgs),
    /// List, inspect and approve agent definitions.
    Agents(commands::agents::AgentsArgs),
    /// Show and change settings.
    Settings(commands::settings::SettingsArgs),
    /// List the hosts remote sheep can run on, or check one (`hosts check NAME`).
    Hosts(commands::hosts::HostsArgs),
    /// Say what this machine and project have and lack for sheep: backends, agents, keys, and
    /// Shepherd in each MCP host (exit 69 when something is missing).
    Doctor(commands::doctor::DoctorArgs),
    /// Read and write fieldnotes sessions offline (scripts and other programs).
    #[command(subcommand)]
    Notes(commands::notes::NotesCommand),
    /// The herd's broker: status, stop, ensure.
    #[command(subcommand)]
    Broker(commands::broker::BrokerCommand),
    /// Serve Shepherd's tools to an MCP host (Claude Code, Codex, Gemini CLI, opencode) over
    /// stdio: the parent's tools, or with --sheep a sheep's own.
    Mcp(shepherd_mcp::McpArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(crate::shell::CompletionsArgs),
    /// Print the manual page, or write one per command into a directory.
    Man(crate::shell::ManArgs),
    /// A remote host's side of a remote sheep (run by the broker over SSH).
    #[command(hide = true)]
    Remote(crate::remote_host::RemoteArgs),
    /// Run one sheep under supervision (started by Shepherd itself).
    #[command(hide = true)]
    Supervise(shepherd_sheep::supervise::SuperviseArgs),
    /// Lock a confined sheep's terminal and scope, then run it (started inside its sandbox).
    #[command(hide = true)]
    SandboxEnter(shepherd_sheep::supervise::EnterArgs),
    /// Throw away the terminal's pending input (a keep-open pane, before its shell starts).
    #[command(hide = true)]
    FlushInput,
    /// Run one sheep on a coding agent other than pi (started by Shepherd itself).
    #[command(hide = true)]
    Harness(shepherd_sheep::driver::HarnessArgs),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The supervisor's lean entry reads its arguments exactly as the full command tree does.
    #[test]
    fn the_lean_supervise_entry_parses_as_the_full_tree() {
        let argv = [
            "shepherd",
            "supervise",
            "--headless",
            "--grace-ms",
            "1500",
            "--log",
            "/tmp/sheep.log",
            "--credential-file",
            "/tmp/cred",
            "--broker-state",
            "/tmp/state",
            "--keep-stdin",
            "--",
            "pi",
            "--mode",
            "rpc",
        ];
        let Command::Supervise(full) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not the supervise command");
        };
        let lean = SuperviseOnly::try_parse_from(&argv[1..]).unwrap().args;
        assert_eq!(format!("{full:?}"), format!("{lean:?}"));
        assert!(format!("{lean:?}").contains("1500"));
        assert!(SuperviseOnly::try_parse_from(["supervise", "--grace-ms", "soon"]).is_err());
    }
}
