//! The shapes Herdr sends, read leniently: every field defaults when absent, unknown fields are
//! ignored and unknown enum values fall back to a catch-all, because newer Herdr releases add
//! fields and values (third-party clients already target protocol 22). Field names keep the
//! API's own spelling. Only what Shepherd uses is modelled.

use serde::{Deserialize, Serialize};

use crate::ReadSource;

/// `ping`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Pong {
    /// Herdr's version, such as `0.8.0`.
    pub version: String,
    /// The socket protocol number.
    pub protocol: u32,
}

/// An agent's state as Herdr sees it. `unknown` (and any value this Shepherd does not know)
/// never means "done".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Waiting for input.
    Idle,
    /// Busy.
    Working,
    /// Waiting for the user (a permission prompt, a question).
    Blocked,
    /// Idle, not yet seen in a focused UI.
    Done,
    /// No agent, an unclassified one, or a value newer than this Shepherd.
    #[default]
    #[serde(other)]
    Unknown,
}

/// A workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WorkspaceInfo {
    /// Such as `w1`.
    pub workspace_id: String,
    /// Its label.
    pub label: Option<String>,
    /// Whether it is the active (focused) workspace.
    pub focused: bool,
    /// Its active tab.
    pub active_tab_id: Option<String>,
}

/// A tab.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct TabInfo {
    /// Such as `w1:t2`.
    pub tab_id: String,
    /// The workspace holding it.
    pub workspace_id: String,
    /// Its label.
    pub label: Option<String>,
}

/// A pane (`PaneInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PaneInfo {
    /// Such as `w1:p3`.
    pub pane_id: String,
    /// The terminal behind it.
    pub terminal_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Its tab.
    pub tab_id: String,
    /// Whether it has focus.
    pub focused: bool,
    /// The pane's working directory.
    pub cwd: Option<String>,
    /// The foreground process's working directory.
    pub foreground_cwd: Option<String>,
    /// Its label, when renamed.
    pub label: Option<String>,
    /// The recognised agent in it.
    pub agent: Option<String>,
    /// That agent's state.
    pub agent_status: AgentStatus,
}

/// One foreground process of a pane.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ForegroundProcess {
    /// Its pid.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// Its arguments.
    pub argv: Vec<String>,
    /// Its command line.
    pub cmdline: String,
}

/// `pane.process_info`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ProcessInfo {
    /// The pane.
    pub pane_id: String,
    /// The pane's shell.
    pub shell_pid: Option<u32>,
    /// Who owns the terminal's foreground: the shell itself when it waits for input.
    pub foreground_process_group_id: Option<u32>,
    /// The processes in that foreground group.
    pub foreground_processes: Vec<ForegroundProcess>,
}

impl ProcessInfo {
    /// Whether the shell owns the terminal (nothing else runs in the foreground). `None` when
    /// Herdr cannot tell.
    pub fn shell_in_foreground(&self) -> Option<bool> {
        match (self.shell_pid, self.foreground_process_group_id) {
            (Some(shell), Some(group)) => Some(shell == group),
            _ => None,
        }
    }

    /// Whether only the shell runs in the pane: it owns the terminal, or (when Herdr cannot
    /// tell) no foreground process is a Shepherd supervisor.
    pub fn only_shell_runs(&self) -> bool {
        match self.shell_in_foreground() {
            Some(in_foreground) => in_foreground,
            None => !self
                .foreground_processes
                .iter()
                .any(|process| process.argv.iter().any(|arg| arg == "supervise")),
        }
    }
}

/// `pane.read`'s `read` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PaneRead {
    /// The pane.
    pub pane_id: String,
    /// The text (ANSI stripped unless asked otherwise).
    pub text: String,
    /// Whether Herdr cut the text short.
    pub truncated: bool,
}

/// Results that carry a workspace, tab and pane (`workspace.create`, `tab.create`,
/// `pane.split`, `pane.get`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Created {
    pub(crate) workspace: Option<WorkspaceInfo>,
    pub(crate) tab: Option<TabInfo>,
    pub(crate) root_pane: Option<PaneInfo>,
    pub(crate) pane: Option<PaneInfo>,
}

impl Created {
    /// The pane the result is about: `pane` (split, get) or `root_pane` (creates).
    pub(crate) fn into_pane(self) -> Option<PaneInfo> {
        self.pane
            .or(self.root_pane)
            .filter(|pane| !pane.pane_id.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TabList {
    pub(crate) tabs: Vec<TabInfo>,
}

/// `layout.apply`'s answer (`{"type":"layout_apply","layout":{..}}`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LayoutApplied {
    pub(crate) layout: AppliedLayout,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppliedLayout {
    pub(crate) workspace_id: String,
    pub(crate) tab_id: String,
    pub(crate) root: LayoutLeaf,
}

/// The root of an applied layout; for a one-pane layout, that pane.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LayoutLeaf {
    pub(crate) pane_id: Option<String>,
}

/// `pane.move`'s answer (`{"type":"pane_move","move_result":{"pane":{..},..}}`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MoveReply {
    pub(crate) move_result: MoveResult,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MoveResult {
    pub(crate) pane: PaneInfo,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WorkspaceList {
    pub(crate) workspaces: Vec<WorkspaceInfo>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PaneList {
    pub(crate) panes: Vec<PaneInfo>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ProcessInfoResult {
    pub(crate) process_info: ProcessInfo,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReadResult {
    pub(crate) read: PaneRead,
}

/// The API's spelling of a read source (`recent_unwrapped`, not the CLI's
/// `recent-unwrapped`).
pub fn api_source(source: ReadSource) -> &'static str {
    match source {
        ReadSource::Visible => "visible",
        ReadSource::Recent => "recent",
        ReadSource::RecentUnwrapped => "recent_unwrapped",
        ReadSource::Detection => "detection",
    }
}

/// One pushed event line: `{"event":"<name>","data":{...}}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventLine {
    pub(crate) event: String,
    pub(crate) data: EventData,
}

/// The union of the event data fields Shepherd reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EventData {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) pane_id: String,
    pub(crate) workspace_id: String,
    pub(crate) agent: Option<String>,
    pub(crate) agent_status: AgentStatus,
}

/// Herdr spells most event names with underscores (`pane_closed`) and some with dots
/// (`pane.agent_status_changed`); both forms map to the underscore one.
pub(crate) fn normalize_event_name(name: &str) -> String {
    name.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_observed_shapes_with_unknown_fields() {
        let pane: PaneInfo = serde_json::from_str(
            r#"{"pane_id":"w1:p3","terminal_id":"term_1","workspace_id":"w1","tab_id":"w1:t1",
                "focused":false,"cwd":"/var","agent_status":"thinking","revision":0,
                "scroll":{"offset_from_bottom":0},"brand_new":[1,2]}"#,
        )
        .unwrap();
        assert_eq!(pane.pane_id, "w1:p3");
        assert_eq!(pane.agent_status, AgentStatus::Unknown);
        let info: ProcessInfoResult = serde_json::from_str(
            r#"{"type":"pane_process_info","process_info":{"pane_id":"w1:p1","shell_pid":3859,
                "foreground_process_group_id":3859,"foreground_processes":[{"pid":3859,"name":"bash",
                "argv":["bash"],"cmdline":"bash","cwd":"/tmp","extra":true}]}}"#,
        )
        .unwrap();
        assert_eq!(info.process_info.shell_in_foreground(), Some(true));
        let created: Created = serde_json::from_str(
            r#"{"type":"tab_created","tab":{"tab_id":"w1:t2","workspace_id":"w1"},
                "root_pane":{"pane_id":"w1:p4","workspace_id":"w1","tab_id":"w1:t2"}}"#,
        )
        .unwrap();
        assert_eq!(created.into_pane().unwrap().pane_id, "w1:p4");
    }

    #[test]
    fn both_event_spellings_normalise_alike() {
        assert_eq!(normalize_event_name("pane.exited"), "pane_exited");
        assert_eq!(normalize_event_name("pane_exited"), "pane_exited");
        assert_eq!(
            normalize_event_name("pane.agent_status_changed"),
            "pane_agent_status_changed"
        );
    }
}
