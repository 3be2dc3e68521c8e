//! The tool catalogue: every parent and sheep tool's name, description and arguments, written
//! once for both front ends that offer them — this MCP server and the pi extension.
//!
//! The MCP tools take their descriptions from here (`#[tool(description = …)]`) and their input
//! schemas are built from these arguments ([`Tool::mcp_schema`]). The pi extension reads
//! the same entries from `integrations/pi/extensions/lib/tool-catalogue.ts`, which
//! [`pi_catalogue_text`] generates (`scripts/gen-protocol-types` writes it); a test fails when
//! that file is out of date, and the parity tests check that each front end offers exactly its
//! tools here, with these words. Where one front end's tool behaves differently (pi's
//! `shepherd_watch` returns at once and reports completions as messages, where the MCP one
//! waits), the entry keeps pi's own description beside the shared one, and an argument or tool
//! only one front end has says so in its [`Front`].

/// Which front ends offer a tool or an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The MCP server and the pi extension.
    Both,
    /// The MCP server only (its waiting tools and arguments: pi pushes instead).
    Mcp,
    /// The pi extension only.
    Pi,
}

impl Front {
    /// Whether `front` offers what this is attached to.
    pub fn offers(self, front: Front) -> bool {
        self == Front::Both || self == front
    }
}

/// An argument's type, as the flat schemas have it (see the crate's `schema` module).
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    String,
    /// A string of a fixed set of values.
    Choice(&'static [&'static str]),
    /// One of the coding agents ([`HARNESSES`]): a choice whose description goes on to list
    /// them, so that neither the values nor the words need a line when a harness is added.
    Harness,
    Number,
    /// A number above 0. pi's schema says so; the MCP schema leaves the bound to the call's
    /// check, since hosts differ in the bounds they pass on.
    Positive,
    /// A number of at least 0 (bounded as [`Kind::Positive`] is).
    NonNegative,
    /// A whole number, at least `minimum`.
    Integer {
        minimum: i64,
    },
    Boolean,
    /// A list of strings.
    Strings,
    /// One string or a non-empty list of them. pi's schema says so; the MCP schema offers the
    /// list only (hosts refuse `anyOf`), and the call reads a lone string as a list of one.
    IdOrIds,
    /// A list of flat objects with these fields.
    Objects(&'static [Arg]),
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    pub fronts: Front,
    pub description: &'static str,
}

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub name: &'static str,
    pub fronts: Front,
    /// What the model reads.
    pub description: &'static str,
    /// pi's own description, where pi's tool behaves differently from the MCP one.
    pub pi_description: Option<&'static str>,
    pub args: &'static [Arg],
}

impl Arg {
    /// The description the model reads: a [`Kind::Harness`] argument's goes on to list the
    /// harnesses (`…: pi | claude-code | …`).
    pub fn described(&self) -> std::borrow::Cow<'static, str> {
        match self.kind {
            Kind::Harness => format!("{}: {}", self.description, HARNESSES.join(" | ")).into(),
            _ => self.description.into(),
        }
    }
}

impl Tool {
    /// The description `front` shows.
    pub fn description_for(&self, front: Front) -> &'static str {
        match (front, self.pi_description) {
            (Front::Pi, Some(pi)) => pi,
            _ => self.description,
        }
    }
}

/// Where a sheep can be placed.
pub const PLACEMENTS: &[&str] = &["tab", "pane_right", "pane_down", "workspace"];
/// The coding agents a sheep can run on: every harness, in its wire spelling.
pub const HARNESSES: &[&str] = &shepherd_core::harness::Harness::NAMES;
/// How a sheep may be confined.
pub const SANDBOXES: &[&str] = &["off", "workspace", "strict"];
/// What `shepherd_read` can read.
pub const SOURCES: &[&str] = &["visible", "recent", "recent-unwrapped", "detection"];
/// How a message is delivered.
pub const DELIVERIES: &[&str] = &["followUp", "steer"];
/// The `shepherd` tool's actions (the words of [`ControlAction`]).
pub const ACTIONS: &[&str] = &["herd", "agents", "prune"];

/// What the `shepherd` tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlAction {
    /// Lists the herd.
    Herd,
    /// Lists the agent definitions.
    Agents,
    /// Forgets stale sheep records.
    Prune,
}

impl ControlAction {
    /// Every action, in the order [`ACTIONS`] lists them.
    pub const ALL: [Self; 3] = [Self::Herd, Self::Agents, Self::Prune];

    /// The word the tool takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Herd => "herd",
            Self::Agents => "agents",
            Self::Prune => "prune",
        }
    }
}

impl std::str::FromStr for ControlAction {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|action| action.as_str() == text)
            .ok_or_else(|| format!("action `{text}` is not one of {}", ACTIONS.join(", ")))
    }
}
/// Which agent definitions are listed.
pub const SCOPES: &[&str] = &["user", "project", "both"];
/// How a sheep can finish its task.
pub const DONE_STATUSES: &[&str] = &["completed", "blocked", "failed"];

/// Detail keys a parent tool's result never shows: the call and the return value have their
/// own sections, and lists the service line already spells out.
pub const HIDDEN_DETAILS: &[&str] = &[
    "call",
    "agent",
    "label",
    "model",
    "status",
    "artifactSession",
    "returnValue",
    "result",
    "agents",
    "sheep",
    "completed",
];

const fn arg(name: &'static str, kind: Kind, description: &'static str) -> Arg {
    Arg {
        name,
        kind,
        required: false,
        fronts: Front::Both,
        description,
    }
}

const fn required(name: &'static str, kind: Kind, description: &'static str) -> Arg {
    Arg {
        required: true,
        ..arg(name, kind, description)
    }
}

const fn mcp_only(arg: Arg) -> Arg {
    Arg {
        fronts: Front::Mcp,
        ..arg
    }
}

const AGENT_ID: Arg = required("id", Kind::String, "The sheep's agent id");
const HARNESS: Arg = arg(
    "harness",
    Kind::Harness,
    "Run the definition on this coding agent instead of its own",
);
const HOST: Arg = arg(
    "host",
    Kind::String,
    "A host to run it on: one the user defined under `hosts` in their Shepherd settings (default: this machine)",
);
const SANDBOX: Arg = arg(
    "sandbox",
    Kind::Choice(SANDBOXES),
    "Confine the sheep at least this much: off | workspace (only its working directory writable, the rest of the home directory hidden) | strict (the project outside its working directory hidden too); it only tightens its definition's sandbox and the user's sandbox setting, never loosens them",
);
const PROJECT_CWD: Arg = arg(
    "cwd",
    Kind::String,
    "Working directory (default: the project directory)",
);
const MAX_TURNS: Arg = arg(
    "maxTurns",
    Kind::Integer { minimum: 1 },
    "Budget: most model turns the task may take",
);
const MAX_TOOL_CALLS: Arg = arg(
    "maxToolCalls",
    Kind::Integer { minimum: 1 },
    "Budget: most tool calls the task may make",
);
const MAX_TOKENS: Arg = arg(
    "maxTokens",
    Kind::Integer { minimum: 1 },
    "Budget: most tokens (input, output, cache) the task may use",
);
const MAX_COST: Arg = arg(
    "maxCost",
    Kind::Positive,
    "Budget: most cost the task may run up (the model's pricing). Reaching any budget stops the sheep and settles the task blocked, naming the limit",
);
const INBOX_WAIT: Arg = arg(
    "wait",
    Kind::Number,
    "Seconds to wait for something to arrive when nothing has (default 0; maximum: the server's bound, 25 s unless set with --max-wait)",
);
const MESSAGE_TEXT: Arg = required("message", Kind::String, "The message text");
const MESSAGE_TASK: Arg = arg(
    "taskId",
    Kind::String,
    "The task it concerns (the asker's task when answering)",
);
const MESSAGE_THREAD: Arg = arg(
    "threadId",
    Kind::String,
    "A conversation thread id of your choice",
);
const REPLY_TO: Arg = arg("replyTo", Kind::String, "The message id you are answering");
const EXPECTS_REPLY: Arg = arg(
    "expectsReply",
    Kind::Boolean,
    "Whether you wait for an answer",
);
const DELIVERY: Arg = arg(
    "delivery",
    Kind::Choice(DELIVERIES),
    "followUp (default: next turn) | steer (this turn)",
);

mod parent;
mod render;
mod sheep;

pub use parent::{
    CLOSE, CONTROL, DELEGATE, INBOX, MERGE, MESSAGE, PROMPT, READ, RESUME, RUN, SPAWN, STATUS,
    WATCH,
};
pub use render::pi_catalogue_text;
pub use sheep::{SHEEP_DONE, SHEEP_HERD, SHEEP_INBOX, SHEEP_MESSAGE, SHEEP_STATUS};

/// The parent's tools.
pub const PARENT: &[Tool] = &[
    CONTROL, SPAWN, DELEGATE, MESSAGE, PROMPT, WATCH, STATUS, CLOSE, RESUME, READ, RUN, MERGE,
    INBOX,
];

/// A sheep's own tools.
pub const SHEEP: &[Tool] = &[
    SHEEP_DONE,
    SHEEP_MESSAGE,
    SHEEP_HERD,
    SHEEP_STATUS,
    SHEEP_INBOX,
];

/// Where the pi extension's copy of the catalogue is checked in.
pub const PI_CATALOGUE_PATH: &str = "integrations/pi/extensions/lib/tool-catalogue.ts";

/// The tools of `tools` that `front` offers.
pub fn offered(tools: &[Tool], front: Front) -> impl Iterator<Item = &Tool> {
    tools.iter().filter(move |tool| tool.fronts.offers(front))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The choices the tools offer are the core's closed sets, in their wire spelling.
    #[test]
    fn the_control_actions_are_the_words_the_schema_offers() {
        let words: Vec<&str> = ControlAction::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(words, ACTIONS);
        for action in ControlAction::ALL {
            assert_eq!(action.as_str().parse::<ControlAction>(), Ok(action));
        }
        assert!("fly".parse::<ControlAction>().is_err());
    }

    #[test]
    fn choices_are_the_cores_closed_sets() {
        use shepherd_core::backend::{Placement, ReadSource};
        use shepherd_core::harness::Harness;
        let names = |all: &[&'static str]| all.iter().copied().collect::<BTreeSet<_>>();
        assert_eq!(
            names(PLACEMENTS),
            Placement::ALL.iter().map(|p| p.as_str()).collect()
        );
        assert_eq!(
            names(HARNESSES),
            Harness::ALL.iter().map(|h| h.as_str()).collect()
        );
        assert_eq!(
            names(SOURCES),
            ReadSource::ALL.iter().map(|s| s.as_str()).collect()
        );
        let delivery = |text: &str| {
            let delivery = shepherd_core::envelope::Delivery::parse(text).expect(text);
            serde_json::to_value(delivery).unwrap()
        };
        for text in DELIVERIES {
            assert_eq!(delivery(text), *text);
        }
        // Two deliveries: followUp and steer, each its own.
        assert_ne!(delivery(DELIVERIES[0]), delivery(DELIVERIES[1]));
        let statuses: BTreeSet<_> = DONE_STATUSES
            .iter()
            .map(|text| shepherd_core::task::DoneStatus::parse(text).expect(text))
            .map(|status| serde_json::to_value(status).unwrap().to_string())
            .collect();
        assert_eq!(statuses.len(), DONE_STATUSES.len());
    }

    #[test]
    fn names_are_unique_within_each_side() {
        for tools in [PARENT, SHEEP] {
            let names: BTreeSet<&str> = tools.iter().map(|t| t.name).collect();
            assert_eq!(names.len(), tools.len());
            for tool in tools {
                let args: BTreeSet<&str> = tool.args.iter().map(|a| a.name).collect();
                assert_eq!(args.len(), tool.args.len(), "{}", tool.name);
            }
        }
    }

    #[test]
    fn a_pi_description_is_kept_only_where_it_differs() {
        for tool in PARENT.iter().chain(SHEEP) {
            assert_ne!(tool.pi_description, Some(tool.description), "{}", tool.name);
            if tool.pi_description.is_some() {
                assert_eq!(tool.fronts, Front::Both, "{}", tool.name);
            }
        }
    }

    #[test]
    fn the_pi_catalogue_is_up_to_date() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let checked_in = fs_err::read_to_string(root.join(PI_CATALOGUE_PATH)).unwrap_or_default();
        assert!(
            checked_in == pi_catalogue_text(),
            "{PI_CATALOGUE_PATH} is out of date: run scripts/gen-protocol-types"
        );
    }
}
