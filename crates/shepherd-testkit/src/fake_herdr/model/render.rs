//! How the fake renders its state in Herdr's reply shapes (`WorkspaceInfo`, `TabInfo`,
//! `PaneInfo`, process info, reads), each object carrying an unknown `x_fake_field` so clients
//! must ignore fields they do not know.

use serde_json::{Value, json};

use super::{DEFAULT_READ_LINES, FakeState, FakeWorkspace, VIEWPORT_ROWS};

impl FakeState {
    pub(super) fn workspace_json(&self, ws: &FakeWorkspace) -> Value {
        let open = |id: &str| !self.panes.iter().any(|p| p.id == id && p.closed);
        json!({
            "workspace_id": ws.id, "label": ws.label, "number": ws.id.trim_start_matches('w').parse::<u32>().unwrap_or(0),
            "focused": self.active_workspace.as_deref() == Some(&ws.id),
            "pane_count": self.panes.iter().filter(|p| !p.closed && p.workspace_id == ws.id).count(),
            "tab_count": self.tabs.iter().filter(|t| !t.closed && t.workspace_id == ws.id).count(),
            "active_tab_id": ws.active_tab, "agent_status": self.odd("unknown"),
            "x_fake_field": {"focused_pane_open": open(&ws.focused_pane)},
        })
    }

    pub(super) fn tab_json(&self, id: &str) -> Value {
        let tab = self.tabs.iter().find(|t| t.id == id).expect("known tab");
        json!({"tab_id": tab.id, "workspace_id": tab.workspace_id, "label": tab.label, "focused": false, "x_fake_field": 1})
    }

    pub(super) fn pane_json(&self, id: &str) -> Value {
        let pane = self.pane(id).expect("known pane");
        let focused = self.focused_pane() == Some(id);
        let mut value = json!({
            "pane_id": pane.id, "terminal_id": format!("term_fake{}", pane.revision), "workspace_id": pane.workspace_id,
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

    pub(super) fn process_info_json(&self, id: &str) -> Value {
        let pane = self.pane(id).expect("known pane");
        let shell = pane.shell_pid;
        let (group, argv) = match (&pane.startup, pane.running) {
            (Some((pid, _)), _) => (*pid, vec!["cat".to_owned()]),
            (None, Some(pid)) => (
                pid,
                vec![
                    "sh".into(),
                    "-c".into(),
                    pane.commands.last().cloned().unwrap_or_default(),
                ],
            ),
            (None, None) => (shell, vec!["fake-shell".to_owned()]),
        };
        json!({
            "pane_id": id, "shell_pid": shell, "foreground_process_group_id": group, "tty": "/dev/pts/fake",
            "foreground_processes": [{"pid": group, "name": argv[0], "argv": argv, "cmdline": argv.join(" "), "cwd": pane.cwd, "x_fake_field": 0}],
            "x_fake_field": true,
        })
    }

    /// The pane's rendered rows: the output, padded with blank rows to fill the screen.
    pub(super) fn read(
        &self,
        id: &str,
        source: &str,
        lines: Option<usize>,
    ) -> Option<(String, bool)> {
        let pane = self.pane(id)?;
        let mut rows: Vec<&str> = pane.screen.lines().collect();
        if rows.len() < VIEWPORT_ROWS {
            rows.resize(VIEWPORT_ROWS, "");
        }
        let picked = match source {
            "recent" | "recent_unwrapped" => last(&rows, lines.unwrap_or(DEFAULT_READ_LINES)),
            "visible" | "detection" => {
                let screen = last(&rows, VIEWPORT_ROWS);
                last(&screen, lines.unwrap_or(VIEWPORT_ROWS))
            }
            _ => return None,
        };
        // As observed: a tail made only of blank rows comes back empty and `truncated`.
        if picked.iter().all(|row| row.trim().is_empty()) {
            return Some((String::new(), true));
        }
        Some((picked.join("\n"), false))
    }

    pub(super) fn odd(&self, value: &str) -> String {
        if self.options.odd_values {
            "pondering".into()
        } else {
            value.to_owned()
        }
    }
}

/// The last `n` rows.
fn last<'a>(rows: &[&'a str], n: usize) -> Vec<&'a str> {
    rows[rows.len().saturating_sub(n)..].to_vec()
}
