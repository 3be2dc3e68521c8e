//! How the fake renders its state in Herdr's reply shapes (`WorkspaceInfo`, `TabInfo`,
//! `PaneInfo`, process info, reads), each object carrying an unknown `x_fake_field` so clients
//! must ignore fields they do not know.
//!
//! Reads follow what Herdr 0.8.0 returned: only the rows that hold output (no padding to the
//! screen's height); `recent`, `visible` and `detection` end with a newline and
//! `recent_unwrapped` does not. For the recent sources `lines` counts the last rendered rows
//! of the screen, blank ones under the output included, so a small count on a screen that is
//! not full comes back empty with `truncated: true`; for `visible` and `detection` it keeps
//! the last lines of the output.

use serde_json::{Value, json};

use super::{DEFAULT_READ_LINES, FakeState, FakeWorkspace, VIEWPORT_ROWS};

impl FakeState {
    pub(super) fn workspace_json(&self, ws: &FakeWorkspace) -> Value {
        json!({
            "workspace_id": ws.id, "label": ws.label,
            "number": self.workspaces.iter().position(|w| w.id == ws.id).map_or(0, |at| at + 1),
            "focused": self.active_workspace.as_deref() == Some(&ws.id),
            "pane_count": self.panes.iter().filter(|p| !p.closed && p.workspace_id == ws.id).count(),
            "tab_count": self.tabs.iter().filter(|t| !t.closed && t.workspace_id == ws.id).count(),
            "active_tab_id": ws.active_tab, "agent_status": self.odd("unknown"),
            "x_fake_field": {"nested": true},
        })
    }

    pub(super) fn tab_json(&self, id: &str) -> Value {
        let tab = self.tabs.iter().find(|t| t.id == id).expect("known tab");
        let focused = self
            .active_workspace
            .as_deref()
            .is_some_and(|ws| ws == tab.workspace_id && self.workspace(ws).active_tab == tab.id);
        json!({
            "tab_id": tab.id, "workspace_id": tab.workspace_id, "label": tab.label,
            "focused": focused, "agent_status": self.odd("unknown"),
            "pane_count": self.panes.iter().filter(|p| !p.closed && p.tab_id == tab.id).count(),
            "x_fake_field": 1,
        })
    }

    pub(super) fn pane_json(&self, id: &str) -> Value {
        let pane = self.pane(id).expect("known pane");
        let focused = self.focused_pane() == Some(pane.id.as_str());
        let mut value = json!({
            "pane_id": pane.id, "terminal_id": pane.terminal_id, "workspace_id": pane.workspace_id,
            "tab_id": pane.tab_id, "focused": focused, "cwd": pane.cwd, "foreground_cwd": pane.cwd,
            "agent_status": self.odd(&pane.agent_status), "revision": pane.revision,
            "scroll": {"offset_from_bottom": 0, "max_offset_from_bottom": 0, "viewport_rows": VIEWPORT_ROWS},
            "x_fake_field": ["unknown", {"nested": true}],
        });
        if let Some(label) = &pane.label {
            value["label"] = json!(label);
        }
        value
    }

    /// `pane.process_info`: the pane's root process, and who holds its terminal. Like Herdr,
    /// no `tty` field, and a shell's argv is `["/bin/bash"]`.
    pub(super) fn process_info_json(&self, id: &str) -> Value {
        let pane = self.pane(id).expect("known pane");
        let root = pane.shell_pid;
        let root_argv = pane
            .command
            .clone()
            .unwrap_or_else(|| vec!["/bin/bash".to_owned()]);
        let (group, argv) = match (pane.running, pane.real_root) {
            (Some(pid), _) => (
                pid,
                vec![
                    "sh".into(),
                    "-c".into(),
                    pane.commands.last().cloned().unwrap_or_default(),
                ],
            ),
            (None, true) => super::super::session::foreground_of(root).unwrap_or((root, root_argv)),
            (None, false) => (root, root_argv),
        };
        let name = argv.first().cloned().unwrap_or_default();
        json!({
            "pane_id": pane.id, "shell_pid": root, "foreground_process_group_id": group,
            "foreground_processes": [{"pid": group, "name": name, "cmdline": argv.join(" "), "argv": argv, "cwd": pane.cwd, "x_fake_field": 0}],
            "x_fake_field": true,
        })
    }

    /// The text of a `pane.read` (and whether it is `truncated`), or `None` for an unknown
    /// source.
    pub(crate) fn read(
        &self,
        id: &str,
        source: &str,
        lines: Option<usize>,
    ) -> Option<(String, bool)> {
        let pane = self.pane(id)?;
        let output: Vec<&str> = pane.screen.lines().collect();
        let content = output
            .iter()
            .rposition(|row| !row.trim().is_empty())
            .map_or(0, |last| last + 1);
        let (rows, newline) = match source {
            "recent" | "recent_unwrapped" => {
                // Rendered rows: the output, then blank rows to the screen's height.
                let rendered = output.len().max(VIEWPORT_ROWS);
                let first = rendered.saturating_sub(lines.unwrap_or(DEFAULT_READ_LINES));
                if first >= content {
                    return Some((String::new(), true));
                }
                (&output[first..content], source == "recent")
            }
            "visible" | "detection" => {
                let screen_start = content.saturating_sub(VIEWPORT_ROWS);
                let first = content
                    .saturating_sub(lines.unwrap_or(VIEWPORT_ROWS))
                    .max(screen_start);
                (&output[first..content], true)
            }
            _ => return None,
        };
        let mut text = rows.join("\n");
        if newline && !text.is_empty() {
            text.push('\n');
        }
        Some((text, false))
    }

    pub(super) fn odd(&self, value: &str) -> String {
        if self.options.odd_values {
            "pondering".into()
        } else {
            value.to_owned()
        }
    }
}
