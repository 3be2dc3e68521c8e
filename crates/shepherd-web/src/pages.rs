//! The HTML around what each page shows: the shell every page shares (its stylesheet and
//! script come from the binary, never a CDN), the sessions list, a sheep's page. Pure: values
//! in, HTML out; every text from the herd or the disk goes through [`esc`].

use std::fmt::Write as _;
use std::path::Path;

use shepherd_core::herd::{MessageReceipt, SheepStatus};
use shepherd_core::protocol::HerdResult;

use crate::board::{Column, age};
use crate::html::{esc, path_url};

/// The board's event stream.
pub(crate) const BOARD_EVENTS: &str = "/events/board";

/// Which part of the site a page belongs to, for the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Board,
    Notes,
}

/// A whole page: `live` (when given) is the event stream whose HTML replaces `body`'s live part.
/// The board's own page carries the filter box, outside the part that is replaced.
pub(crate) fn shell(
    title: &str,
    section: Section,
    csrf: &str,
    live: Option<&str>,
    body: &str,
) -> String {
    let tools = if live == Some(BOARD_EVENTS) {
        r#"<p class="tools"><input id="filter" type="search" placeholder="Filter: a name, an agent, a task's words" aria-label="Filter the sheep" autocomplete="off"></p>"#
    } else {
        ""
    };
    let current = |s: Section| {
        if s == section {
            r#" aria-current="page""#
        } else {
            ""
        }
    };
    let live = live.map_or_else(String::new, |url| format!(r#" data-live="{}""#, esc(url)));
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="{csrf}"><title>{title} · shepherd</title>
<link rel="stylesheet" href="/assets/style.css"><link rel="manifest" href="/manifest.webmanifest" crossorigin="use-credentials"><link rel="icon" href="/assets/icon-192.png"><link rel="apple-touch-icon" href="/assets/icon-192.png"><meta name="theme-color" content="{theme}"><script src="/assets/app.js" defer></script></head>
<body><nav><a href="/"{board}>Board</a> <a href="/notes"{notes}>Fieldnotes</a> <span id="link" role="status"></span> <button id="notify" type="button" hidden>Notify me</button> <output id="said" role="status"></output></nav>
{tools}<main id="live"{live}>{body}</main></body></html>
"#,
        csrf = esc(csrf),
        title = esc(title),
        board = current(Section::Board),
        notes = current(Section::Notes),
        theme = "#1d1d1b",
    )
}

/// One fieldnotes session as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionEntry {
    /// Its folder's name.
    pub(crate) name: String,
    /// Its status as `shepherd.md` records it.
    pub(crate) status: String,
    /// How many task notes it holds.
    pub(crate) notes: usize,
}

/// The sessions under `root`'s `.shepherd/sessions`, newest name last.
pub(crate) fn sessions(root: &Path) -> Vec<SessionEntry> {
    let Ok(entries) = fs_err::read_dir(root.join(".shepherd/sessions")) else {
        return Vec::new();
    };
    let mut sessions: Vec<SessionEntry> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if name.starts_with('.') {
                return None;
            }
            let index = fs_err::read_to_string(entry.path().join("shepherd.md")).ok()?;
            let status = index
                .lines()
                .find_map(|line| line.strip_prefix("- **Status:** "))
                .unwrap_or("unknown")
                .trim()
                .to_owned();
            let notes = fs_err::read_dir(entry.path()).map_or(0, |files| {
                files
                    .flatten()
                    .filter(|f| {
                        let name = f.file_name();
                        let name = name.to_string_lossy();
                        name.ends_with(".md")
                            && name != "shepherd.md"
                            && name != "shepherds-note.md"
                    })
                    .count()
            });
            Some(SessionEntry {
                name,
                status,
                notes,
            })
        })
        .collect();
    sessions.sort_by(|a, b| a.name.cmp(&b.name));
    sessions
}

/// The sessions list's body.
pub(crate) fn sessions_body(sessions: &[SessionEntry]) -> String {
    let mut html = String::from("<h1>Fieldnotes</h1>");
    if sessions.is_empty() {
        html.push_str("<p>No fieldnotes sessions in this project yet.</p>");
        return html;
    }
    html.push_str(r#"<table class="sessions"><thead><tr><th>Session</th><th>Status</th><th>Notes</th></tr></thead><tbody>"#);
    for session in sessions {
        let _ = write!(
            html,
            r#"<tr><td><a href="/files/.shepherd/sessions/{url}/shepherd.md">{name}</a></td><td>{status}</td><td>{notes}</td></tr>"#,
            url = path_url(&session.name),
            name = esc(&session.name),
            status = esc(&session.status),
            notes = session.notes,
        );
    }
    html.push_str("</tbody></table>");
    html
}

/// A sheep's page body: its card's facts, its tasks, messages with receipts, its last output,
/// and the actions on it. `None` when the herd has no such sheep.
pub(crate) fn sheep_body(
    root: &Path,
    view: &HerdResult,
    agent_id: &str,
    receipts: &[MessageReceipt],
    output: &str,
    csrf: &str,
) -> Option<String> {
    let sheep = view
        .sheep
        .iter()
        .find(|s| s.agent_id.to_string() == agent_id)?;
    let now = view.now.unwrap_or_default();
    let mut html = format!(
        r#"<div data-now="{now}"></div><h1>{}</h1>{}"#,
        esc(&sheep.display_name),
        crate::board::card(sheep, crate::board::last_settled(view, sheep), csrf, root)
    );
    html.push_str("<h2>Tasks</h2><ul class=\"tasks\">");
    if let Some(task) = &sheep.task {
        let _ = write!(
            html,
            "<li>{} · {} · open {}</li>",
            esc(&task.title),
            task.state.as_str(),
            age(task.created_at)
        );
    }
    for task in view.settled.iter().filter(|t| t.agent_id == sheep.agent_id) {
        let _ = write!(
            html,
            "<li>{} {}</li>",
            esc(&task.title),
            crate::board::settled_line(task, root)
        );
    }
    html.push_str("</ul>");
    messages(&mut html, receipts);
    let _ = write!(
        html,
        r#"<h2>Last output</h2><pre class="output">{}</pre>"#,
        esc(output)
    );
    actions(&mut html, sheep, csrf);
    Some(crate::board::fill_ages(&html, now))
}

fn messages(html: &mut String, receipts: &[MessageReceipt]) {
    html.push_str("<h2>Messages</h2>");
    if receipts.is_empty() {
        html.push_str("<p>None yet.</p>");
        return;
    }
    html.push_str(r#"<table class="messages"><thead><tr><th>From</th><th>To</th><th>Message</th><th>Receipt</th></tr></thead><tbody>"#);
    for message in receipts {
        let receipt = serde_json::to_value(message.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&message.sender_name),
            esc(&message.target_name),
            esc(&message.preview),
            esc(&receipt)
        );
    }
    html.push_str("</tbody></table>");
}

fn actions(html: &mut String, sheep: &SheepStatus, csrf: &str) {
    let id = esc(&sheep.agent_id.to_string());
    let csrf = esc(csrf);
    let _ = write!(
        html,
        r#"<h2>Act</h2><form class="act" method="post" action="/act"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="kind" value="message"><input type="hidden" name="agent" value="{id}"><input name="text" aria-label="Message" placeholder="Message" required autocomplete="off"><button>Send</button></form>"#
    );
    if Column::of(sheep) != Column::Settled || sheep.state != "closing" {
        let _ = write!(
            html,
            r#"<form class="act close" method="post" action="/act"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="kind" value="close"><input type="hidden" name="agent" value="{id}"><label><input type="checkbox" name="confirm" value="yes" required> close this sheep (cancels its open task)</label><button>Close</button></form>"#
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_with_their_status_and_note_count() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join(".shepherd/sessions/0001-fix");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::create_dir_all(dir.path().join(".shepherd/sessions/.trash")).unwrap();
        std::fs::write(
            session.join("shepherd.md"),
            "# S\n\n- **Status:** running\n",
        )
        .unwrap();
        for note in ["shepherds-note.md", "scout-01.md", "worker-01.md"] {
            std::fs::write(session.join(note), "# n").unwrap();
        }
        let listed = sessions(dir.path());
        assert_eq!(
            listed,
            [SessionEntry {
                name: "0001-fix".into(),
                status: "running".into(),
                notes: 2,
            }]
        );
        let html = sessions_body(&listed);
        assert!(
            html.contains(
                r#"<a href="/files/.shepherd/sessions/0001-fix/shepherd.md">0001-fix</a>"#
            ),
            "{html}"
        );
    }
}
