//! The broker wire protocol: JSON lines over a Unix socket.
//!
//! A client sends `{"id", "method", "params"}` and gets `{"id", "result"}` or
//! `{"id", "error": {"code", "message"}}`; the broker may also push `{"event", "data"}` lines
//! (inbox items, supervisor commands) on a connection that subscribed. The first request on
//! every connection is `hello`, which fixes the caller's role: the **parent** controls its herd,
//! a **sheep** (with its capability token) may only talk for itself, an **observer** only reads,
//! and a **supervisor** reports one sheep's process. Every front end — the CLI, the pi extension,
//! later MCP — speaks exactly this, so they all behave alike.
//!
//! A request's `params`, a reply's `result` and an event's `data` are open JSON in the line
//! format itself: each end reads them as the method table's types for that method
//! (`methods`), so nothing past the envelope is untyped.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod methods;
mod notes;
mod parent;
mod run;
pub mod schema;
mod sheep;

pub use crate::land::preview::MergePreview;
pub use crate::land::{MergeIdParams, MergeParams, MergeView};
pub use methods::{Call, Handlers, Method, NoParams, calls, handle, method};
pub use notes::*;
pub use parent::*;
pub use run::*;
pub use sheep::*;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 2;

/// Longest client request id accepted, in bytes.
pub const MAX_REQUEST_ID: usize = 128;

/// Push event names.
pub mod event {
    /// Inbox items for the subscribed participant (`data: {items}`).
    pub const INBOX: &str = "inbox";
    /// The herd changed (`data`: the same document as a `herd` result).
    pub const HERD: &str = "herd";
    /// Broker → supervisor: end the sheep (`data: {graceMs}`).
    pub const TERMINATE: &str = "terminate";
    /// Broker → client: the broker is shutting down.
    pub const SHUTDOWN: &str = "shutdown";
    /// A run followed on this connection changed (`data`: the run's view).
    pub const RUN: &str = "run";
    /// A merge followed on this connection changed (`data`: the merge's view).
    pub const MERGE: &str = "merge";
}

/// One request line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Echoed in the response.
    pub id: u64,
    /// The method name.
    pub method: String,
    /// Method parameters (an object; absent means `{}`).
    #[serde(default)]
    pub params: Value,
    /// A client-chosen id for a request that changes state. A request resent with the same id
    /// (after a lost answer or a broker restart) is applied once and answered as the first time.
    #[serde(default, rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

pub use crate::error_code::WireError;

/// Whether `id` is usable as a client request id: 1 to [`MAX_REQUEST_ID`] printable ASCII
/// characters.
pub fn valid_request_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID && id.bytes().all(|b| b.is_ascii_graphic())
}

/// One line from the broker: a response (has `id`) or a push (has `event`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ServerLine {
    /// The answer to a request.
    Response {
        /// The request's id.
        id: u64,
        /// Success value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<WireError>,
    },
    /// Something the broker pushes unasked.
    Push {
        /// The event name.
        event: String,
        /// Its data.
        #[serde(default)]
        data: Value,
    },
}

/// Who a connection speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The herd's owner.
    Parent,
    /// One sheep, proven by its token.
    Sheep,
    /// Read-only.
    Observer,
    /// The process supervising one sheep, proven by the sheep's token.
    Supervisor,
}

/// `hello` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// The caller's protocol version.
    pub protocol: u32,
    /// The role asked for.
    pub role: Role,
    /// For sheep and supervisors: the sheep's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// For sheep and supervisors: the capability token. For the parent and observers: the
    /// herd's key, read from the file beside the socket (`b-<key>.key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Free-form client name (`cli`, `pi`, …), for diagnostics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// For the parent: its own agent session file (pi's `getSessionFile()`), recorded in the
    /// parent-bound fieldnotes session for diagnostics; never part of the herd's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// For the parent: the program it speaks for when that is not the connecting process
    /// itself (an MCP host, by the name it gave in the MCP handshake, and its process), so
    /// `shepherd herds` can say who drives a herd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<Driver>,
}

/// The program a parent connection speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    /// Its name (an MCP host's `clientInfo.name`: `claude-code`, `codex-mcp-client`, …).
    pub name: String,
    /// Its process, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `hello` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloResult {
    /// The broker's protocol version.
    pub protocol: u32,
    /// The broker's id (stable for its parent and project).
    pub broker_id: String,
    /// The parent identity the broker serves.
    pub parent_identity: String,
    /// The canonical project root.
    pub project_root: String,
    /// The role granted.
    pub role: Role,
}
