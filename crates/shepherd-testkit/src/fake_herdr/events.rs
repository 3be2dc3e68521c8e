//! The fake's events, as a real Herdr 0.8.0 delivers them.
//!
//! Every event goes into a ring of the last 512. A subscription is a list of entries; each
//! plain entry (`pane.closed`, `pane.exited`, `pane.moved`, `tab.closed`, …) starts at the
//! beginning of the ring — so a new subscriber first gets the old events again — and a
//! `pane.agent_status_changed` entry starts at the present. A poller delivers at most one
//! event per entry per poll (every 100 ms by default). `pane.exited` and the other plain
//! entries take no pane: any `pane_id` given is ignored and every pane's events come;
//! `pane.agent_status_changed` needs a `pane_id` of an existing pane, checked by a probe whose
//! error carries the id `<request id>:sub:<index>:probe`.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::net::UnixStream;

use serde_json::{Map, Value, json};

/// How many events the ring keeps.
pub(crate) const RING: usize = 512;

/// How event names are spelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventStyle {
    /// As Herdr 0.8.0 sends them: `pane_closed`, `pane_exited`, `pane.agent_status_changed`.
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
    PaneClosed,
    PaneExited,
    PaneMoved,
    TabClosed,
    AgentStatus,
}

impl EventKind {
    /// The subscription type that asks for it.
    fn subscription(self) -> &'static str {
        match self {
            Self::PaneClosed => "pane.closed",
            Self::PaneExited => "pane.exited",
            Self::PaneMoved => "pane.moved",
            Self::TabClosed => "tab.closed",
            Self::AgentStatus => "pane.agent_status_changed",
        }
    }

    fn name(self, style: EventStyle) -> String {
        let dotted = self.subscription();
        match (self, style) {
            (_, EventStyle::Dotted) | (Self::AgentStatus, EventStyle::Observed) => dotted.into(),
            _ => dotted.replace('.', "_"),
        }
    }
}

/// Subscription types that need no parameters (and ignore any `pane_id`).
const PLAIN: [&str; 23] = [
    "workspace.created",
    "workspace.updated",
    "workspace.metadata_updated",
    "workspace.renamed",
    "workspace.moved",
    "workspace.reordered",
    "workspace.closed",
    "workspace.focused",
    "worktree.created",
    "worktree.opened",
    "worktree.removed",
    "tab.created",
    "tab.closed",
    "tab.focused",
    "tab.renamed",
    "tab.moved",
    "pane.created",
    "pane.closed",
    "pane.updated",
    "pane.focused",
    "pane.moved",
    "pane.exited",
    "pane.agent_detected",
];

/// One event in the ring.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) sequence: u64,
    pub(crate) kind: EventKind,
    /// The pane (or tab, for `tab.closed`) it is about.
    pub(crate) subject: String,
    pub(crate) data: Map<String, Value>,
}

/// The ring.
#[derive(Debug, Default)]
pub(crate) struct Ring {
    events: VecDeque<Recorded>,
    next: u64,
}

impl Ring {
    pub(crate) fn push(&mut self, kind: EventKind, subject: &str, data: Map<String, Value>) {
        self.next += 1;
        self.events.push_back(Recorded {
            sequence: self.next,
            kind,
            subject: subject.to_owned(),
            data,
        });
        while self.events.len() > RING {
            self.events.pop_front();
        }
    }

    pub(crate) fn current(&self) -> u64 {
        self.next
    }

    fn after(&self, sequence: u64) -> impl Iterator<Item = &Recorded> {
        self.events.iter().filter(move |e| e.sequence > sequence)
    }
}

/// One entry of a subscription.
#[derive(Debug, Clone)]
struct Entry {
    /// The subscription type.
    kind: String,
    /// For `pane.agent_status_changed`: the pane.
    pane: Option<String>,
    /// The last ring sequence this entry looked at.
    seen: u64,
}

/// One subscribed connection.
#[derive(Debug)]
pub(crate) struct Subscriber {
    /// Tells subscribers apart, to forget one when its client hangs up.
    pub(crate) number: u64,
    pub(crate) stream: Option<UnixStream>,
    entries: Vec<Entry>,
}

impl Subscriber {
    /// Reads `{"subscriptions":[{"type":..}, ..]}`. `pane_exists` checks the panes that
    /// `pane.agent_status_changed` entries name; `now` is the ring's current sequence.
    /// Errors are `(code, message, probe index)`.
    pub(crate) fn parse(
        params: &Value,
        pane_exists: impl Fn(&str) -> bool,
        now: u64,
    ) -> Result<Self, (String, String, Option<usize>)> {
        let invalid = |message: String| ("invalid_request".to_owned(), message, None);
        let list = params
            .get("subscriptions")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("missing field `subscriptions`".into()))?;
        let mut entries = Vec::new();
        for (index, item) in list.iter().enumerate() {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
            let pane = item.get("pane_id").and_then(Value::as_str);
            let entry = match (kind, pane) {
                (plain, _) if PLAIN.contains(&plain) => Entry {
                    kind: plain.into(),
                    pane: None,
                    seen: 0,
                },
                ("pane.agent_status_changed", None) => {
                    return Err(invalid("missing field `pane_id`".into()));
                }
                ("pane.agent_status_changed", Some(pane)) if !pane_exists(pane) => {
                    return Err((
                        "pane_not_found".into(),
                        format!("pane {pane} not found"),
                        Some(index),
                    ));
                }
                ("pane.agent_status_changed", Some(pane)) => Entry {
                    kind: kind.into(),
                    pane: Some(pane.into()),
                    seen: now,
                },
                (other, _) => return Err(invalid(format!("unknown variant `{other}`"))),
            };
            entries.push(entry);
        }
        Ok(Self {
            number: 0,
            stream: None,
            entries,
        })
    }

    /// One poll: at most one event per entry, in entry order, as wire lines.
    pub(crate) fn poll(&mut self, ring: &Ring, style: EventStyle) -> Vec<Value> {
        let mut lines = Vec::new();
        for entry in &mut self.entries {
            let mut found = None;
            for event in ring.after(entry.seen) {
                entry.seen = event.sequence;
                let wanted = event.kind.subscription() == entry.kind
                    && entry
                        .pane
                        .as_ref()
                        .is_none_or(|pane| *pane == event.subject);
                if wanted {
                    found = Some(event);
                    break;
                }
            }
            if let Some(event) = found {
                lines.push(wire(event, style));
            }
        }
        lines
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
}

/// `{"event":"<name>","data":{...}}`; every kind but agent status also names its `type` in
/// the data, as observed.
fn wire(event: &Recorded, style: EventStyle) -> Value {
    let mut data = event.data.clone();
    if event.kind != EventKind::AgentStatus {
        data.insert(
            "type".into(),
            json!(event.kind.name(EventStyle::Underscore)),
        );
    }
    data.insert("x_fake_field".into(), json!("ignored"));
    json!({"event": event.kind.name(style), "data": data})
}
