//! The fake's `events.subscribe`: which events a subscriber asked for (validated the way
//! Herdr 0.8.0 does — `pane.exited` and `pane.agent_status_changed` need a `pane_id`) and how
//! each event is spelled on the wire, in Herdr's mixed style or all dotted or all underscored.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::net::UnixStream;

use serde_json::{Map, Value, json};

/// How event names are spelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventStyle {
    /// As Herdr 0.8.0 sent them: `pane_closed`, `pane_exited`, `pane.agent_status_changed`.
    #[default]
    Observed,
    /// All dotted: `pane.closed`, `pane.exited`, `pane.agent_status_changed`.
    Dotted,
    /// All underscored: `pane_closed`, `pane_exited`, `pane_agent_status_changed`.
    Underscore,
}

/// The events the fake emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Closed,
    Exited,
    AgentStatus,
}

impl EventKind {
    fn name(self, style: EventStyle) -> &'static str {
        match (self, style) {
            (Self::Closed, EventStyle::Dotted) => "pane.closed",
            (Self::Closed, _) => "pane_closed",
            (Self::Exited, EventStyle::Dotted) => "pane.exited",
            (Self::Exited, _) => "pane_exited",
            (Self::AgentStatus, EventStyle::Underscore) => "pane_agent_status_changed",
            (Self::AgentStatus, _) => "pane.agent_status_changed",
        }
    }
}

/// Subscription types that need no parameters.
const PLAIN: [&str; 20] = [
    "workspace.created",
    "workspace.updated",
    "workspace.renamed",
    "workspace.moved",
    "workspace.closed",
    "workspace.focused",
    "tab.created",
    "tab.closed",
    "tab.focused",
    "tab.renamed",
    "tab.moved",
    "pane.created",
    "pane.closed",
    "pane.focused",
    "pane.moved",
    "pane.agent_detected",
    "layout.updated",
    "worktree.created",
    "worktree.opened",
    "worktree.removed",
];

/// One subscribed connection.
#[derive(Debug)]
pub(crate) struct Subscriber {
    /// Tells subscribers apart, to forget one when its client hangs up.
    pub(crate) number: u64,
    pub(crate) stream: Option<UnixStream>,
    closed: bool,
    exited: HashSet<String>,
    status: HashSet<String>,
}

impl Subscriber {
    /// Reads `{"subscriptions":[{"type":..}, ..]}`; `pane_exists` checks pane ids.
    pub(crate) fn parse(
        params: &Value,
        pane_exists: impl Fn(&str) -> bool,
    ) -> Result<Self, (String, String)> {
        let invalid = |message: String| ("invalid_request".to_owned(), message);
        let list = params
            .get("subscriptions")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("missing field `subscriptions`".into()))?;
        let mut subscriber = Self {
            number: 0,
            stream: None,
            closed: false,
            exited: HashSet::new(),
            status: HashSet::new(),
        };
        for item in list {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
            let pane = item.get("pane_id").and_then(Value::as_str);
            match (kind, pane) {
                ("pane.closed", _) => subscriber.closed = true,
                (plain, _) if PLAIN.contains(&plain) => {}
                ("pane.exited" | "pane.agent_status_changed", None) => {
                    return Err(invalid("missing field `pane_id`".into()));
                }
                ("pane.exited" | "pane.agent_status_changed", Some(pane)) if !pane_exists(pane) => {
                    return Err(("pane_not_found".into(), format!("pane {pane} not found")));
                }
                ("pane.exited", Some(pane)) => {
                    subscriber.exited.insert(pane.to_owned());
                }
                ("pane.agent_status_changed", Some(pane)) => {
                    subscriber.status.insert(pane.to_owned());
                }
                (other, _) => return Err(invalid(format!("unknown variant `{other}`"))),
            }
        }
        Ok(subscriber)
    }

    /// Sends the event if this subscriber asked for it. Returns false when the subscriber's
    /// connection is gone.
    pub(crate) fn deliver(
        &mut self,
        style: EventStyle,
        kind: EventKind,
        pane_id: &str,
        workspace_id: &str,
        extra: &Map<String, Value>,
    ) -> bool {
        let wanted = match kind {
            EventKind::Closed => self.closed,
            EventKind::Exited => self.exited.contains(pane_id),
            EventKind::AgentStatus => self.status.contains(pane_id),
        };
        if !wanted {
            return true;
        }
        let mut data =
            json!({"pane_id": pane_id, "workspace_id": workspace_id, "x_fake_field": "ignored"});
        if kind != EventKind::AgentStatus {
            data["type"] = json!(EventKind::name(kind, EventStyle::Underscore));
        }
        for (key, value) in extra {
            data[key] = value.clone();
        }
        let line = json!({"event": kind.name(style), "data": data});
        self.send(&line)
    }

    /// Writes one line; false when the connection is gone.
    pub(crate) fn send(&mut self, line: &Value) -> bool {
        let Some(stream) = &mut self.stream else {
            return false;
        };
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        stream.write_all(&bytes).is_ok()
    }

    /// Whether it asked for every pane's closing.
    pub(crate) fn wants_closed(&self) -> bool {
        self.closed
    }
}
